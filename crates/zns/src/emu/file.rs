//! File-backed storage: one image file holds a header, a zone table and the zones' bytes.
//!
//! Layout (all integers little endian):
//! - block 0, the header: magic `ZKVZNSIM`, format version, geometry, table and data
//!   offsets, CRC32C of everything before it;
//! - the zone table, one 16-byte entry per zone: written bytes (u64), state code (u8),
//!   3 reserved bytes, CRC32C of the first 12 bytes;
//! - the zones, zone `z` at `data_offset + z × zone_size`. The file is sparse, and a reset
//!   punches the zone's bytes out of it.
//!
//! Each write stores its bytes first and its table entry second, so a process killed in
//! between leaves the entry describing the older, shorter zone: the write never happened.
//! A reset goes the other way: the entry (empty) first, the punch second, so a process
//! killed in between leaves an empty zone whose old bytes lie behind the write pointer,
//! never read again. No order of steps leaves an entry that claims bytes the file lost.
//! The image is locked while open, so a second process cannot use it at the same time.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{Storage, ZoneRec};
use crate::error::{Result, ZnsError};
use crate::types::{Geometry, ZoneState};

const MAGIC: &[u8; 8] = b"ZKVZNSIM";
/// The image format this build writes, and the only one it reads.
pub const IMAGE_FORMAT_VERSION: u32 = 1;
const HEADER_LEN: u64 = 4096;
const ENTRY_LEN: u64 = 16;
/// Bytes of the header covered by its checksum.
const HEADER_BODY: usize = 64;

#[derive(Debug)]
pub struct FileStorage {
    path: PathBuf,
    file: File,
    writable: bool,
    geo: Geometry,
    data_offset: u64,
}

fn bad(path: &Path, reason: impl Into<String>) -> ZnsError {
    ZnsError::BadImage {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn lock(path: &Path, file: &File, exclusive: bool) -> Result<()> {
    let locked = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match locked {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(ZnsError::InUse {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(ZnsError::io(format!("{}: lock", path.display()), e)),
    }
}

fn data_offset(zones: u32) -> u64 {
    (HEADER_LEN + u64::from(zones) * ENTRY_LEN).next_multiple_of(HEADER_LEN)
}

fn encode_header(geo: &Geometry) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN as usize);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&IMAGE_FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&geo.zones.to_le_bytes());
    h.extend_from_slice(&geo.block_size.to_le_bytes());
    h.extend_from_slice(&geo.max_open.to_le_bytes());
    h.extend_from_slice(&geo.max_active.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&geo.zone_size.to_le_bytes());
    h.extend_from_slice(&geo.zone_capacity.to_le_bytes());
    h.extend_from_slice(&HEADER_LEN.to_le_bytes());
    h.extend_from_slice(&data_offset(geo.zones).to_le_bytes());
    debug_assert_eq!(h.len(), HEADER_BODY);
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h.resize(HEADER_LEN as usize, 0);
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn decode_header(path: &Path, h: &[u8]) -> Result<Geometry> {
    if &h[0..8] != MAGIC {
        return Err(bad(path, "not a zkv zone image (bad magic)"));
    }
    let version = u32_at(h, 8);
    if version != IMAGE_FORMAT_VERSION {
        return Err(bad(
            path,
            format!("image format version {version} is not supported (this build reads {IMAGE_FORMAT_VERSION})"),
        ));
    }
    if crc32c::crc32c(&h[..HEADER_BODY]) != u32_at(h, HEADER_BODY) {
        return Err(bad(path, "header checksum mismatch (the image is corrupt)"));
    }
    let geo = Geometry {
        zones: u32_at(h, 12),
        block_size: u32_at(h, 16),
        max_open: u32_at(h, 20),
        max_active: u32_at(h, 24),
        zone_size: u64_at(h, 32),
        zone_capacity: u64_at(h, 40),
    };
    geo.validate()
        .map_err(|e| bad(path, format!("header holds an invalid geometry: {e}")))?;
    if u64_at(h, 48) != HEADER_LEN || u64_at(h, 56) != data_offset(geo.zones) {
        return Err(bad(path, "header table/data offsets are inconsistent"));
    }
    Ok(geo)
}

fn encode_entry(state: ZoneState, written: u64) -> [u8; ENTRY_LEN as usize] {
    let mut e = [0u8; ENTRY_LEN as usize];
    e[0..8].copy_from_slice(&written.to_le_bytes());
    e[8] = state.code();
    let crc = crc32c::crc32c(&e[..12]);
    e[12..16].copy_from_slice(&crc.to_le_bytes());
    e
}

fn decode_entry(path: &Path, geo: &Geometry, zone: u32, e: &[u8]) -> Result<ZoneRec> {
    if crc32c::crc32c(&e[..12]) != u32_at(e, 12) {
        return Err(bad(
            path,
            format!("zone {zone}: zone table entry checksum mismatch"),
        ));
    }
    let written = u64_at(e, 0);
    let state = ZoneState::from_code(e[8]).ok_or_else(|| {
        bad(
            path,
            format!("zone {zone}: unknown zone state code {}", e[8]),
        )
    })?;
    if written > geo.zone_capacity || !written.is_multiple_of(u64::from(geo.block_size)) {
        return Err(bad(
            path,
            format!("zone {zone}: write pointer {written} is impossible for this geometry"),
        ));
    }
    if state == ZoneState::Empty && written != 0 {
        return Err(bad(path, format!("zone {zone}: empty zone with data")));
    }
    Ok(ZoneRec::new(state, written))
}

impl FileStorage {
    /// Creates a new image. Refuses an existing path, so nothing is ever overwritten; if
    /// creating fails half-way the new file is removed again.
    pub fn create(path: &Path, geo: Geometry) -> Result<FileStorage> {
        geo.validate()?;
        let created = Self::create_new(path, geo);
        if let Err(e) = &created {
            if !matches!(e, ZnsError::BadImage { .. }) {
                // Only a file this call created can get here (an existing path is BadImage).
                let _ = std::fs::remove_file(path);
            }
        }
        created
    }

    fn create_new(path: &Path, geo: Geometry) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    bad(path, "already exists (refusing to overwrite it)")
                }
                _ => ZnsError::io(format!("{}: create image", path.display()), e),
            })?;
        lock(path, &file, true)?;
        let io = |what: &str, e| ZnsError::io(format!("{}: {what}", path.display()), e);
        let data_offset = data_offset(geo.zones);
        let mut table = Vec::with_capacity((u64::from(geo.zones) * ENTRY_LEN) as usize);
        for _ in 0..geo.zones {
            table.extend_from_slice(&encode_entry(ZoneState::Empty, 0));
        }
        file.set_len(data_offset + geo.device_size())
            .map_err(|e| io("size image", e))?;
        file.write_all_at(&table, HEADER_LEN)
            .map_err(|e| io("write zone table", e))?;
        // The header goes last: an image without a valid header is never mistaken for one.
        file.write_all_at(&encode_header(&geo), 0)
            .map_err(|e| io("write header", e))?;
        file.sync_all().map_err(|e| io("sync", e))?;
        Ok(FileStorage {
            path: path.to_path_buf(),
            file,
            writable: true,
            geo,
            data_offset,
        })
    }

    /// Opens an image and recovers its geometry and zone conditions from the file. A
    /// writable open takes an exclusive lock, a read-only one a shared lock.
    pub fn open(path: &Path, writable: bool) -> Result<(FileStorage, Geometry, Vec<ZoneRec>)> {
        let file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|e| ZnsError::io(format!("{}: open image", path.display()), e))?;
        lock(path, &file, writable)?;
        let io = |what: &str, e| ZnsError::io(format!("{}: {what}", path.display()), e);
        let len = file.metadata().map_err(|e| io("stat", e))?.len();
        if len < HEADER_LEN {
            // A short file that does not even start like an image is some other file
            // (`--device file:/etc/passwd`), not a damaged image.
            let mut start = vec![0u8; len.min(MAGIC.len() as u64) as usize];
            file.read_exact_at(&mut start, 0)
                .map_err(|e| io("read header", e))?;
            if !MAGIC.starts_with(&start) {
                return Err(bad(path, "not a zkv zone image (bad magic)"));
            }
            return Err(bad(
                path,
                format!("truncated image: {len} bytes, the header alone needs {HEADER_LEN}"),
            ));
        }
        let mut h = vec![0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| io("read header", e))?;
        let geo = decode_header(path, &h)?;
        let data_offset = data_offset(geo.zones);
        let expect = data_offset + geo.device_size();
        if len < expect {
            return Err(bad(
                path,
                format!("truncated image: {len} bytes, this geometry needs {expect}"),
            ));
        }
        let mut table = vec![0u8; (u64::from(geo.zones) * ENTRY_LEN) as usize];
        file.read_exact_at(&mut table, HEADER_LEN)
            .map_err(|e| io("read zone table", e))?;
        let zones = table
            .chunks_exact(ENTRY_LEN as usize)
            .enumerate()
            .map(|(z, e)| decode_entry(path, &geo, z as u32, e))
            .collect::<Result<Vec<_>>>()?;
        let storage = FileStorage {
            path: path.to_path_buf(),
            file,
            writable,
            geo,
            data_offset,
        };
        Ok((storage, geo, zones))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn zone_addr(&self, zone: u32, off: u64) -> u64 {
        self.data_offset + self.geo.zone_start(zone) + off
    }

    fn io_err(&self, what: &str, e: std::io::Error) -> ZnsError {
        ZnsError::io(format!("{}: {what}", self.path.display()), e)
    }
}

impl Storage for FileStorage {
    fn describe(&self) -> String {
        format!("file:{}", self.path.display())
    }

    fn write(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, self.zone_addr(zone, off))
            .map_err(|e| self.io_err(&format!("write zone {zone}"), e))
    }

    fn overwrite(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        self.write(zone, off, data)
    }

    fn read(&self, zone: u32, off: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(buf, self.zone_addr(zone, off))
            .map_err(|e| self.io_err(&format!("read zone {zone}"), e))
    }

    fn truncate(&self, zone: u32, len: u64) -> Result<()> {
        if len != 0 {
            // Bytes past the write pointer are never read, so they need not be erased.
            return Ok(());
        }
        let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        // Punching the hole only gives disk space back; where the file system cannot, the
        // stale bytes stay unreadable behind the write pointer, so the error is not fatal.
        let _ = rustix::fs::fallocate(
            &self.file,
            flags,
            self.zone_addr(zone, 0),
            self.geo.zone_size,
        );
        Ok(())
    }

    fn persist(&self, zone: u32, state: ZoneState, written: u64) -> Result<()> {
        let at = HEADER_LEN + u64::from(zone) * ENTRY_LEN;
        self.file
            .write_all_at(&encode_entry(state, written), at)
            .map_err(|e| self.io_err(&format!("write zone table entry {zone}"), e))
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.io_err("sync", e))
    }

    fn writable(&self) -> bool {
        self.writable
    }
}
