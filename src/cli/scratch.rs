//! A copy-on-write view of a device, for commands that must not write it.
//!
//! Opening a database writes even when the caller only reads: recovery replays the WAL
//! into a new L0 table, records a version edit in the manifest, starts a new WAL and
//! deletes the replayed ones, and the read-write mount under it may roll the metadata log
//! or reset zones. A read-only mount refuses all of that, so the database cannot open on
//! one. `zkv get` and `zkv scan` therefore open it on a scratch device: an emulated
//! device with the real one's geometry and zone states, which reads the real device's
//! bytes until a zone is first written or reset, and from then on keeps that zone in
//! memory. The real device is only ever read; whatever the open writes is dropped with
//! the command.

use std::sync::{Arc, RwLock};

use zns::emu::{Emulated, Storage, ZoneRec};
use zns::{Geometry, IoCategory, ZonedDevice};

use super::error::CliResult;

/// Builds a scratch device over `base`, which stays untouched.
pub fn scratch_device(base: Arc<dyn ZonedDevice>) -> CliResult<Arc<dyn ZonedDevice>> {
    let geo = base.geometry();
    // `used` is the write pointer's offset, except that a full zone counts its whole
    // capacity: reads beyond what it really holds go to the base, which returns zeros.
    let zones = base
        .report_zones(0, geo.zones)?
        .iter()
        .map(|info| ZoneRec::new(info.state, info.used()))
        .collect();
    let storage = CowStorage {
        zones: (0..geo.zones).map(|_| RwLock::new(None)).collect(),
        base,
        geo,
    };
    Ok(Arc::new(Emulated::with_zones(geo, storage, zones)?))
}

/// Bytes of a zone: `None` while the zone is as on the base device, its own copy once it
/// was written or reset.
struct CowStorage {
    base: Arc<dyn ZonedDevice>,
    geo: Geometry,
    zones: Vec<RwLock<Option<Vec<u8>>>>,
}

impl CowStorage {
    /// The zone's first `len` bytes, read from the base device.
    fn copy_of_base(&self, zone: u32, len: u64) -> zns::Result<Vec<u8>> {
        let mut bytes = vec![0; len as usize];
        self.base
            .read(self.geo.zone_start(zone), &mut bytes, IoCategory::User)?;
        Ok(bytes)
    }

    fn slot(&self, zone: u32) -> std::sync::RwLockWriteGuard<'_, Option<Vec<u8>>> {
        // A panic while holding the lock cannot leave the buffer half-updated in a way a
        // later reader could misuse: each update is one resize or extend.
        self.zones[zone as usize]
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Storage for CowStorage {
    fn describe(&self) -> String {
        format!("scratch view of {}", self.base.describe())
    }

    fn write(&self, zone: u32, off: u64, data: &[u8]) -> zns::Result<()> {
        let mut slot = self.slot(zone);
        let bytes = match slot.take() {
            Some(bytes) => bytes,
            // The state machine writes at the write pointer, so the base holds [0, off).
            None => self.copy_of_base(zone, off)?,
        };
        let bytes = slot.insert(bytes);
        bytes.resize(off as usize, 0);
        bytes.extend_from_slice(data);
        Ok(())
    }

    fn read(&self, zone: u32, off: u64, buf: &mut [u8]) -> zns::Result<()> {
        let slot = self.zones[zone as usize]
            .read()
            .unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            None => self
                .base
                .read(self.geo.zone_start(zone) + off, buf, IoCategory::User),
            Some(bytes) => {
                let off = (off as usize).min(bytes.len());
                let have = (bytes.len() - off).min(buf.len());
                buf[..have].copy_from_slice(&bytes[off..off + have]);
                buf[have..].fill(0);
                Ok(())
            }
        }
    }

    fn truncate(&self, zone: u32, len: u64) -> zns::Result<()> {
        let mut slot = self.slot(zone);
        match slot.as_mut() {
            Some(bytes) => bytes.truncate(len as usize),
            None => *slot = Some(self.copy_of_base(zone, len)?),
        }
        Ok(())
    }

    fn persist(&self, _zone: u32, _state: zns::ZoneState, _written: u64) -> zns::Result<()> {
        Ok(())
    }

    fn sync(&self) -> zns::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zns::{MemDevice, ZoneState};

    fn read(dev: &dyn ZonedDevice, addr: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0; len];
        dev.read(addr, &mut buf, IoCategory::User).unwrap();
        buf
    }

    #[test]
    fn writes_and_resets_stay_in_the_view() {
        let geo = Geometry::new(4, 64 * 1024);
        let base: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(geo).unwrap());
        let zone1 = geo.zone_start(1);
        base.write(zone1, &[1; 4096], IoCategory::User).unwrap();
        base.write(geo.zone_start(2), &[2; 4096], IoCategory::User)
            .unwrap();
        let view = scratch_device(Arc::clone(&base)).unwrap();

        // The view starts as the base and keeps its own copy of a zone once written.
        assert_eq!(view.zone_info(1).unwrap().written(), 4096);
        view.write(zone1 + 4096, &[3; 4096], IoCategory::User)
            .unwrap();
        view.reset_zone(2).unwrap();
        let mut want = vec![1; 4096];
        want.extend([3; 4096]);
        assert_eq!(read(view.as_ref(), zone1, 8192), want);
        assert_eq!(view.zone_info(2).unwrap().state, ZoneState::Empty);

        // The base never saw any of it.
        assert_eq!(base.zone_info(1).unwrap().written(), 4096);
        assert_eq!(read(base.as_ref(), zone1, 8192)[4096..], [0; 4096]);
        assert_eq!(read(base.as_ref(), geo.zone_start(2), 4096), vec![2; 4096]);
    }
}
