//! A copy-on-write view of a device, so that a file system can be mounted for inspection
//! without changing anything on the device.
//!
//! Mounting writes: the metadata log may roll (after a torn last write or when its zone is
//! full), stale metadata zones are reset, and the file layer resets zones holding no live
//! data, clears stale zone classes and finishes active zones beyond its budget; every mount
//! also flushes the device. [`Shadow::over`] wraps a device (an image opened read-only, or
//! a zoned block device) in an emulated device whose bytes come from the real one until
//! something is written: writes, resets and finishes then land in memory, zone by zone, and
//! the real device is only ever read. The emulator's state machine enforces the usual zone
//! rules on the shadow, so the mount behaves exactly as on the real device.
//!
//! Memory: a zone costs nothing until it is written; a write to a zone that already holds
//! data keeps only the new bytes (the older ones are still read from the real device).

use std::sync::{Arc, Mutex};

use zns::emu::{Emulated, Storage, ZoneRec};
use zns::{Geometry, IoCategory, Result, ZoneInfo, ZoneState, ZonedDevice};

/// The bytes of one zone: the first `base_len` come from the real device, then `tail`.
#[derive(Debug, Default)]
struct Layer {
    base_len: u64,
    tail: Vec<u8>,
}

/// The storage of a shadow device: reads fall through to the real device, writes stay here.
pub struct Shadow {
    base: Arc<dyn ZonedDevice>,
    geo: Geometry,
    zones: Vec<Mutex<Layer>>,
}

/// A shadow device over a real one.
pub type ShadowDevice = Emulated<Shadow>;

impl Shadow {
    /// A shadow of `base` with the zone states `base` reports now. A full zone counts its
    /// whole capacity as written (its write pointer is reported at the zone end).
    pub fn over(base: Arc<dyn ZonedDevice>) -> Result<(ShadowDevice, Vec<ZoneInfo>)> {
        let geo = base.geometry();
        let report = base.report_zones(0, geo.zones)?;
        let recs: Vec<ZoneRec> = report
            .iter()
            .map(|z| ZoneRec::new(z.state, written(&geo, z)))
            .collect();
        let zones = recs
            .iter()
            .map(|r| {
                Mutex::new(Layer {
                    base_len: r.written,
                    tail: Vec::new(),
                })
            })
            .collect();
        let shadow = Shadow { base, geo, zones };
        Ok((Emulated::with_zones(geo, shadow, recs)?, report))
    }

    fn layer(&self, zone: u32) -> std::sync::MutexGuard<'_, Layer> {
        // Every change to a layer is a single assignment or Vec call: a panic cannot leave
        // one half-updated, so a poisoned lock still holds consistent data.
        self.zones[zone as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Bytes a zone holds as the file layer counts them: the write pointer, or the capacity of
/// a full zone.
pub fn written(geo: &Geometry, z: &ZoneInfo) -> u64 {
    match z.state {
        ZoneState::Full => geo.zone_capacity,
        _ => z.written().min(geo.zone_capacity),
    }
}

impl Storage for Shadow {
    fn describe(&self) -> String {
        self.base.describe()
    }

    fn write(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        let mut l = self.layer(zone);
        if off < l.base_len {
            // Never happens (the state machine writes at the write pointer), but stays
            // correct: the real bytes past `off` are no longer part of the zone.
            l.base_len = off;
            l.tail.clear();
        }
        let at = (off - l.base_len) as usize;
        l.tail.resize(at, 0);
        l.tail.extend_from_slice(data);
        Ok(())
    }

    fn read(&self, zone: u32, off: u64, buf: &mut [u8]) -> Result<()> {
        let l = self.layer(zone);
        let from_base = l.base_len.saturating_sub(off).min(buf.len() as u64) as usize;
        let (head, rest) = buf.split_at_mut(from_base);
        if !head.is_empty() {
            self.base
                .read(self.geo.zone_start(zone) + off, head, IoCategory::Metadata)?;
        }
        // Where `rest` starts in the tail (0 when the read ends inside the real bytes).
        let tail_off = (off + from_base as u64).saturating_sub(l.base_len) as usize;
        let have = l.tail.len().saturating_sub(tail_off).min(rest.len());
        rest[..have].copy_from_slice(&l.tail[tail_off..tail_off + have]);
        rest[have..].fill(0);
        Ok(())
    }

    fn truncate(&self, zone: u32, len: u64) -> Result<()> {
        let mut l = self.layer(zone);
        if len <= l.base_len {
            l.base_len = len;
            l.tail = Vec::new();
        } else {
            let keep = (len - l.base_len) as usize;
            l.tail.truncate(keep);
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

#[cfg(test)]
mod tests {
    use super::*;
    use zns::MemDevice;

    fn base() -> Arc<dyn ZonedDevice> {
        let geo = Geometry::new(4, 64 << 10).with_capacity(32 << 10);
        let dev = MemDevice::new(geo).unwrap();
        dev.write(0, &[1u8; 8192], IoCategory::User).unwrap();
        dev.write(64 << 10, &[2u8; 32 << 10], IoCategory::User)
            .unwrap();
        Arc::new(dev)
    }

    #[test]
    fn writes_and_resets_stay_in_the_shadow() {
        let real = base();
        let (shadow, report) = Shadow::over(Arc::clone(&real)).unwrap();
        assert_eq!(report[1].state, ZoneState::Full);
        shadow.write(8192, &[3u8; 4096], IoCategory::User).unwrap();
        let mut buf = vec![0u8; 16384];
        shadow.read(0, &mut buf, IoCategory::User).unwrap();
        assert!(buf[..8192].iter().all(|b| *b == 1));
        assert!(buf[8192..12288].iter().all(|b| *b == 3));
        assert!(buf[12288..].iter().all(|b| *b == 0));
        shadow.reset_zone(1).unwrap();
        shadow
            .write(64 << 10, &[4u8; 4096], IoCategory::User)
            .unwrap();
        shadow.read(64 << 10, &mut buf, IoCategory::User).unwrap();
        assert!(buf[..4096].iter().all(|b| *b == 4));
        assert!(buf[4096..].iter().all(|b| *b == 0));
        shadow.finish_zone(0).unwrap();
        shadow.sync().unwrap();

        // The real device is untouched.
        let now = real.report_zones(0, 4).unwrap();
        assert_eq!(now, report);
        real.read(0, &mut buf, IoCategory::User).unwrap();
        assert!(buf[..8192].iter().all(|b| *b == 1));
        assert!(buf[8192..].iter().all(|b| *b == 0));
        real.read(64 << 10, &mut buf, IoCategory::User).unwrap();
        assert!(buf.iter().all(|b| *b == 2));
        assert_eq!(real.stats().total_written(), 8192 + (32 << 10));
    }
}
