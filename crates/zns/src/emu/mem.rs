//! In-memory storage: one growable buffer per zone, so memory follows the bytes written
//! and a reset gives it back.

use std::sync::RwLock;

use super::Storage;
use crate::error::{zone_entry, Result};
use crate::types::ZoneState;

/// The storage of a [`crate::MemDevice`]: the zones' bytes in memory, gone with it.
#[derive(Debug)]
pub struct MemStorage {
    zones: Vec<RwLock<Vec<u8>>>,
}

impl MemStorage {
    /// Storage for `zones` empty zones.
    pub fn new(zones: u32) -> MemStorage {
        MemStorage {
            zones: (0..zones).map(|_| RwLock::new(Vec::new())).collect(),
        }
    }
}

impl Storage for MemStorage {
    fn describe(&self) -> String {
        "mem".into()
    }

    fn write(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        let mut buf = zone_entry(&self.zones, zone)?
            .write()
            .unwrap_or_else(|e| e.into_inner());
        // The state machine only writes at the write pointer, which is the buffer length;
        // resize keeps that true even if an earlier truncate raced with a reader.
        buf.resize(off as usize, 0);
        buf.extend_from_slice(data);
        Ok(())
    }

    fn read(&self, zone: u32, off: u64, out: &mut [u8]) -> Result<()> {
        let buf = zone_entry(&self.zones, zone)?
            .read()
            .unwrap_or_else(|e| e.into_inner());
        // A concurrent reset may have shortened the buffer: whatever is gone reads as zeros.
        // One bulk copy: the cleaner and compactions read megabytes through here, and a
        // byte-by-byte loop made them slow enough to lose the race with writers.
        let stored = buf.get(off as usize..).unwrap_or_default();
        let have = stored.len().min(out.len());
        let (head, tail) = out.split_at_mut(have);
        if let Some(src) = stored.get(..have) {
            head.copy_from_slice(src);
        }
        tail.fill(0);
        Ok(())
    }

    fn overwrite(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        let mut buf = zone_entry(&self.zones, zone)?
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let off = off as usize;
        if let Some(dst) = buf.get_mut(off..off + data.len()) {
            dst.copy_from_slice(data);
        }
        Ok(())
    }

    fn truncate(&self, zone: u32, len: u64) -> Result<()> {
        let mut buf = zone_entry(&self.zones, zone)?
            .write()
            .unwrap_or_else(|e| e.into_inner());
        buf.truncate(len as usize);
        if len == 0 {
            buf.shrink_to_fit();
        }
        Ok(())
    }

    fn persist(&self, _zone: u32, _state: ZoneState, _written: u64) -> Result<()> {
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }
}
