//! Emulated zoned devices. One state machine ([`Emulated`]) enforces the NVMe ZNS rules for
//! every emulated backend; a [`Storage`] only keeps bytes (and, when persistent, zone
//! conditions). Both backends therefore obey exactly the same rules.
//!
//! The rules follow NVMe ZNS as QEMU's emulated controller implements it (our real-kernel
//! test target), see `docs/DEVICE.md`:
//! - a write must start at the write pointer, be block aligned and stay within capacity;
//!   position and boundary errors are reported before resource errors;
//! - writing to (or explicitly opening) an EMPTY zone needs an active resource, then an open
//!   resource; a CLOSED zone needs an open resource; when every open resource is taken, the
//!   oldest implicitly opened zone is closed to make room, otherwise the command fails;
//! - a failed command changes nothing.

mod crash;
mod file;
mod mem;

use std::sync::Mutex;

use rand::{Rng, SeedableRng};

pub use crash::CrashPoint;
pub use file::{image_format_version, FileStorage, IMAGE_FORMAT_VERSION};
pub use mem::MemStorage;

use crate::device::{Counters, DeviceStats, ZonedDevice};
use crate::error::{zone_entry, zone_entry_mut, Result, ZnsError};
use crate::fault::{FaultControl, FaultOp, TearMode};
use crate::timing::{IoEvent, IoKind, TimingModel, TimingReport};
use crate::types::{split_at_wp, Geometry, IoCategory, ZoneInfo, ZoneOp, ZoneState};

/// Where an emulated device keeps its bytes. Offsets are relative to the zone start.
/// The state machine guarantees that writes arrive in order at the write pointer.
pub trait Storage: Send + Sync {
    /// The storage as a device spec names it (`mem`, `file:PATH`).
    fn describe(&self) -> String;

    /// Stores `data` at `off` in `zone` (at its write pointer).
    fn write(&self, zone: u32, off: u64, data: &[u8]) -> Result<()>;

    /// Reads bytes the state machine knows to be written (below the write pointer).
    fn read(&self, zone: u32, off: u64, buf: &mut [u8]) -> Result<()>;

    /// Forgets the zone's bytes at and beyond `len` (reset, power cut). Called only after
    /// [`Storage::persist`] has recorded the zone as holding at most `len` bytes.
    fn truncate(&self, zone: u32, len: u64) -> Result<()>;

    /// Records a zone's condition and written length (persistent storages only).
    fn persist(&self, zone: u32, state: ZoneState, written: u64) -> Result<()>;

    /// Flips one bit of a stored byte in place (bit rot; the byte is below the write
    /// pointer).
    fn flip_bit(&self, zone: u32, off: u64, bit: u8) -> Result<()> {
        let mut byte = [0u8];
        self.read(zone, off, &mut byte)?;
        byte[0] ^= 1 << (bit % 8);
        self.overwrite(zone, off, &byte)
    }

    /// Replaces stored bytes in place, below the write pointer. Only for fault injection:
    /// no zone command ever rewrites data.
    fn overwrite(&self, zone: u32, off: u64, data: &[u8]) -> Result<()>;

    /// Makes every stored byte and zone record durable.
    fn sync(&self) -> Result<()>;

    /// False for storage opened read-only: every mutating command is refused up front.
    fn writable(&self) -> bool {
        true
    }
}

/// A zone's condition as the state machine keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneRec {
    /// The zone's condition.
    pub state: ZoneState,
    /// Bytes written since the last reset (the write pointer, relative to the zone start).
    /// For a finished zone it stays what was written, so reads past it return zeros.
    pub written: u64,
    /// Bytes known durable (covered by a sync, a finish, or recovered from storage).
    durable: u64,
    /// When the zone last became implicitly open: the oldest is closed first.
    implicit_since: u64,
}

impl ZoneRec {
    /// A zone in `state` holding `written` bytes, all of them durable.
    pub fn new(state: ZoneState, written: u64) -> ZoneRec {
        ZoneRec {
            state,
            written,
            durable: written,
            implicit_since: 0,
        }
    }
}

#[derive(Debug)]
struct Injection {
    op: FaultOp,
    zone: Option<u32>,
    /// Matching commands to let through before the failure; `None` = fail every one.
    remaining: Option<u64>,
}

#[derive(Debug)]
struct Core {
    zones: Vec<ZoneRec>,
    open: u32,
    active: u32,
    clock: u64,
    powered: bool,
    mutating: u64,
    power_cut_at: Option<(u64, TearMode)>,
    injection: Option<Injection>,
}

/// An emulated zoned device over a [`Storage`].
pub struct Emulated<S: Storage> {
    geo: Geometry,
    core: Mutex<Core>,
    storage: S,
    counters: Counters,
    timing: Option<Mutex<TimingModel>>,
}

impl<S: Storage> std::fmt::Debug for Emulated<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulated")
            .field("storage", &self.storage.describe())
            .field("geometry", &self.geo)
            .finish()
    }
}

impl<S: Storage> Emulated<S> {
    /// Builds a device from storage and the zone conditions it recovered. Zone states are
    /// kept as they were (a process restart does not power the drive off); only a power cut
    /// closes open zones. Nothing is written, so opening an image has no side effects.
    pub fn with_zones(geo: Geometry, storage: S, zones: Vec<ZoneRec>) -> Result<Self> {
        geo.validate()?;
        if zones.len() != geo.zones as usize {
            return Err(ZnsError::InvalidGeometry {
                reason: format!("{} zone records for {} zones", zones.len(), geo.zones),
            });
        }
        let mut core = Core {
            zones,
            open: 0,
            active: 0,
            clock: 0,
            powered: true,
            mutating: 0,
            power_cut_at: None,
            injection: None,
        };
        for (z, rec) in core.zones.iter_mut().enumerate() {
            rec.durable = rec.written;
            // The order in which zones became implicitly open is not persisted: after a
            // restart the lowest-numbered implicitly open zone counts as the oldest.
            rec.implicit_since = z as u64;
        }
        core.recount();
        core.clock = u64::from(geo.zones);
        let over = |n: u32, limit: u32| limit > 0 && n > limit;
        if over(core.open, geo.max_open) || over(core.active, geo.max_active) {
            return Err(ZnsError::InvalidGeometry {
                reason: format!(
                    "{} open and {} active zones exceed the limits {}/{}",
                    core.open, core.active, geo.max_open, geo.max_active
                ),
            });
        }
        Ok(Emulated {
            geo,
            core: Mutex::new(core),
            storage,
            counters: Counters::new(geo.zones),
            timing: None,
        })
    }

    /// Attaches a NAND timing model. The model is told what each zone already holds, so that
    /// data present when the device was opened costs page reads and erases.
    pub fn with_timing(mut self, mut model: TimingModel) -> Self {
        for (zone, rec) in self.lock().zones.iter().enumerate() {
            if rec.written > 0 {
                model.note_zone_written(zone as u32, rec.written);
            }
        }
        self.timing = Some(Mutex::new(model));
        self
    }

    /// Where the device keeps its bytes.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Core> {
        // A panic while holding the lock cannot leave the core half-updated: every
        // mutation is applied after all fallible steps, so the data is still consistent.
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Feeds a completed command to the timing model, if one is attached. With a realtime
    /// model, sleeps for the command's modeled latency once the model's lock is released.
    fn observe(&self, kind: IoKind, zone: u32, offset: u64, len: u64, cat: IoCategory) {
        let Some(t) = &self.timing else {
            return;
        };
        let (latency, realtime) = {
            let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
            let latency = t.on_io(&IoEvent {
                kind,
                zone,
                offset,
                len,
                cat,
            });
            (latency, t.realtime())
        };
        if realtime && latency > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(latency));
        }
    }

    /// The common write path: `off` is where the caller writes (None = append at the WP).
    fn do_write(&self, zone: u32, off: Option<u64>, data: &[u8], cat: IoCategory) -> Result<u64> {
        let len = data.len() as u64;
        self.geo.check_block("write length", len)?;
        let mut core = self.lock();
        self.admit(&mut core, FaultOp::Write, Some(zone))?;
        let rec = *zone_entry(&core.zones, zone)?;
        match rec.state {
            ZoneState::Offline => return Err(ZnsError::Offline { zone }),
            ZoneState::ReadOnly => return Err(ZnsError::ReadOnly { zone }),
            ZoneState::Full => return Err(ZnsError::ZoneFull { zone }),
            _ => {}
        }
        let offset = off.unwrap_or(rec.written);
        if offset != rec.written {
            return Err(ZnsError::InvalidWritePosition {
                zone,
                offset,
                wp: rec.written,
            });
        }
        if len == 0 {
            return Ok(self.geo.zone_start(zone) + offset);
        }
        if offset + len > self.geo.zone_capacity {
            return Err(ZnsError::BoundaryCrossed {
                zone,
                offset,
                len,
                capacity: self.geo.zone_capacity,
            });
        }
        let victim = if rec.state.is_open() {
            None
        } else {
            core.open_resources(&self.geo, zone, rec.state == ZoneState::Empty)?
        };
        self.storage.write(zone, offset, data)?;
        if let Some(v) = victim {
            core.auto_close(v)?;
            core.persist(&self.storage, v)?;
        }
        if !rec.state.is_open() {
            core.clock += 1;
            let clock = core.clock;
            core.set_state(zone, ZoneState::ImplicitOpen)?;
            zone_entry_mut(&mut core.zones, zone)?.implicit_since = clock;
        }
        zone_entry_mut(&mut core.zones, zone)?.written = offset + len;
        if offset + len == self.geo.zone_capacity {
            core.set_state(zone, ZoneState::Full)?;
        }
        core.persist(&self.storage, zone)?;
        drop(core);
        self.counters.on_write(cat, len);
        self.observe(IoKind::Write, zone, offset, len, cat);
        Ok(self.geo.zone_start(zone) + offset)
    }

    fn do_zone_op(&self, zone: u32, op: ZoneOp) -> Result<()> {
        let mut core = self.lock();
        self.admit(&mut core, FaultOp::Zone(op), Some(zone))?;
        let rec = *zone_entry(&core.zones, zone)?;
        let (new, victim) = self.plan_zone_op(&core, zone, op, rec.state)?;
        if new == rec.state {
            return Ok(()); // a no-op: close of a closed zone, reset of an empty one, ...
        }
        let written = if op == ZoneOp::Reset { 0 } else { rec.written };
        // Persist first, then change the in-memory state: an I/O error leaves both as they were.
        if let Some(v) = victim {
            let written = zone_entry(&core.zones, v)?.written;
            self.storage.persist(v, ZoneState::Closed, written)?;
        }
        // The zone's new condition is recorded before its bytes are dropped: a crash in
        // between leaves an empty zone whose stale bytes lie behind the write pointer, where
        // they are never read. The other order could leave a zone that claims data it has
        // lost (it reads zeros), which is how an interrupted reset once hid a superblock.
        self.storage.persist(zone, new, written)?;
        if op == ZoneOp::Reset {
            self.storage.truncate(zone, 0)?;
        }
        if let Some(v) = victim {
            core.auto_close(v)?;
        }
        core.set_state(zone, new)?;
        let r = zone_entry_mut(&mut core.zones, zone)?;
        r.written = written;
        let timed = match op {
            // A finished zone is sealed: its data is durable (see fault.rs).
            ZoneOp::Finish => {
                r.durable = written;
                self.counters.on_finish();
                Some(IoKind::Finish)
            }
            ZoneOp::Reset => {
                r.durable = 0;
                self.counters.on_reset(zone);
                Some(IoKind::Reset)
            }
            _ => None,
        };
        // The timing model may sleep (realtime mode): never with the state lock held.
        drop(core);
        if let Some(kind) = timed {
            self.observe(kind, zone, 0, 0, IoCategory::User);
        }
        Ok(())
    }

    /// The state a zone command leads to, and the implicitly open zone it must close to get an
    /// open resource. Changes nothing.
    fn plan_zone_op(
        &self,
        core: &Core,
        zone: u32,
        op: ZoneOp,
        state: ZoneState,
    ) -> Result<(ZoneState, Option<u32>)> {
        use ZoneState::*;
        let invalid = Err(ZnsError::InvalidTransition { zone, op, state });
        Ok(match (op, state) {
            (_, Offline) => return Err(ZnsError::Offline { zone }),
            (_, ReadOnly) => return Err(ZnsError::ReadOnly { zone }),
            (ZoneOp::Open, ExplicitOpen | ImplicitOpen) => (ExplicitOpen, None),
            (ZoneOp::Open, Empty | Closed) => (
                ExplicitOpen,
                core.open_resources(&self.geo, zone, state == Empty)?,
            ),
            (ZoneOp::Close, Closed | ImplicitOpen | ExplicitOpen) => (Closed, None),
            (ZoneOp::Finish, _) => (Full, None),
            (ZoneOp::Reset, _) => (Empty, None),
            _ => return invalid,
        })
    }

    /// Admission of a mutating command: power, a scheduled power cut (which happens now,
    /// instead of the command), an injected error.
    fn admit(&self, core: &mut Core, op: FaultOp, zone: Option<u32>) -> Result<()> {
        if !core.powered {
            return Err(ZnsError::PowerLoss);
        }
        if !self.storage.writable() {
            return Err(ZnsError::ReadOnlyDevice {
                device: self.storage.describe(),
            });
        }
        if let Some((at, mode)) = core.power_cut_at {
            if core.mutating >= at {
                self.apply_power_cut(core, mode);
                return Err(ZnsError::PowerLoss);
            }
        }
        core.check_injection(op, zone)?;
        core.mutating += 1;
        Ok(())
    }

    fn apply_power_cut(&self, core: &mut Core, mode: TearMode) {
        let mut rng = match mode {
            TearMode::Drop => None,
            TearMode::Tear { seed } => Some(rand_chacha::ChaCha8Rng::seed_from_u64(seed)),
        };
        let block = u64::from(self.geo.block_size);
        for (z, r) in (0u32..).zip(core.zones.iter_mut()) {
            if matches!(r.state, ZoneState::Offline | ZoneState::ReadOnly) {
                continue;
            }
            let mut keep = r.durable;
            if let Some(rng) = rng.as_mut() {
                let blocks = (r.written - r.durable) / block;
                if blocks > 0 {
                    keep += rng.random_range(0..=blocks) * block;
                }
            }
            let state = match r.state {
                ZoneState::Full if keep == r.written => ZoneState::Full,
                _ if keep == 0 => ZoneState::Empty,
                _ => ZoneState::Closed,
            };
            r.state = state;
            r.written = keep;
            r.durable = keep;
            // Storage failures during a simulated power cut cannot be reported to anyone;
            // the next mount reads whatever the storage holds, which is what a real cut does.
            // The condition first, the bytes second, as for a reset.
            // A condition that could not be recorded keeps the bytes it describes: punching
            // them would leave an entry that claims data the storage no longer holds.
            if self.storage.persist(z, state, keep).is_ok() {
                let _ = self.storage.truncate(z, keep);
            }
        }
        core.recount();
        core.powered = false;
        core.power_cut_at = None;
    }
}

impl Core {
    fn check_injection(&mut self, op: FaultOp, zone: Option<u32>) -> Result<()> {
        let Some(inj) = self.injection.as_mut() else {
            return Ok(());
        };
        if inj.op != op || !(inj.zone.is_none() || inj.zone == zone) {
            return Ok(());
        }
        match inj.remaining.as_mut() {
            None => Err(ZnsError::Injected { op: op.name() }),
            Some(n) => {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.injection = None;
                    return Err(ZnsError::Injected { op: op.name() });
                }
                Ok(())
            }
        }
    }

    /// Checks the resources a zone needs to become open: an active one if it is EMPTY,
    /// then an open one. Returns the implicitly open zone that must be closed to make room.
    /// Changes nothing, so the caller can still fail afterwards.
    fn open_resources(&self, geo: &Geometry, zone: u32, empty: bool) -> Result<Option<u32>> {
        if empty && geo.max_active > 0 && self.active >= geo.max_active {
            return Err(ZnsError::TooManyActive {
                zone,
                limit: geo.max_active,
            });
        }
        if geo.max_open == 0 || self.open < geo.max_open {
            return Ok(None);
        }
        let oldest = self
            .zones
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state == ZoneState::ImplicitOpen)
            .min_by_key(|(_, r)| r.implicit_since)
            .map(|(z, _)| z as u32);
        match oldest {
            Some(z) => Ok(Some(z)),
            None => Err(ZnsError::TooManyOpen {
                zone,
                limit: geo.max_open,
            }),
        }
    }

    fn auto_close(&mut self, zone: u32) -> Result<()> {
        self.set_state(zone, ZoneState::Closed)
    }

    /// Changes a zone's state, keeping the open and active counts right.
    fn set_state(&mut self, zone: u32, new: ZoneState) -> Result<()> {
        let old = std::mem::replace(&mut zone_entry_mut(&mut self.zones, zone)?.state, new);
        self.open -= u32::from(old.is_open());
        self.active -= u32::from(old.is_active());
        self.open += u32::from(new.is_open());
        self.active += u32::from(new.is_active());
        Ok(())
    }

    /// Counts the open and active zones afresh (after zone states were set directly).
    fn recount(&mut self) {
        let count =
            |f: fn(ZoneState) -> bool| self.zones.iter().filter(|r| f(r.state)).count() as u32;
        (self.open, self.active) = (count(ZoneState::is_open), count(ZoneState::is_active));
    }

    fn persist<S: Storage>(&self, storage: &S, zone: u32) -> Result<()> {
        let r = zone_entry(&self.zones, zone)?;
        storage.persist(zone, r.state, r.written)
    }
}

impl<S: Storage> ZonedDevice for Emulated<S> {
    fn geometry(&self) -> Geometry {
        self.geo
    }

    fn describe(&self) -> String {
        self.storage.describe()
    }

    fn report_zones(&self, first: u32, count: u32) -> Result<Vec<ZoneInfo>> {
        let core = self.lock();
        if !core.powered {
            return Err(ZnsError::PowerLoss);
        }
        Ok((0u32..)
            .zip(&core.zones)
            .skip(first as usize)
            .take(count as usize)
            .map(|(z, r)| {
                let start = self.geo.zone_start(z);
                let wp = if r.state == ZoneState::Full {
                    start + self.geo.zone_size
                } else {
                    start + r.written
                };
                ZoneInfo {
                    zone: z,
                    start,
                    size: self.geo.zone_size,
                    capacity: self.geo.zone_capacity,
                    wp,
                    state: r.state,
                }
            })
            .collect())
    }

    fn read(&self, addr: u64, buf: &mut [u8], cat: IoCategory) -> Result<()> {
        let len = buf.len() as u64;
        let size = self.geo.device_size();
        if addr.checked_add(len).is_none_or(|end| end > size) {
            return Err(ZnsError::OutOfRange { addr, len, size });
        }
        for (zone, off, piece) in self.geo.zone_pieces(addr, buf) {
            let written = {
                let mut core = self.lock();
                if !core.powered {
                    return Err(ZnsError::PowerLoss);
                }
                core.check_injection(FaultOp::Read, Some(zone))?;
                let r = zone_entry(&core.zones, zone)?;
                if r.state == ZoneState::Offline {
                    return Err(ZnsError::Offline { zone });
                }
                r.written
            };
            let n = piece.len();
            let (stored, unwritten) = split_at_wp(piece, off, written);
            self.storage.read(zone, off, stored)?;
            unwritten.fill(0);
            self.observe(IoKind::Read, zone, off, n as u64, cat);
        }
        self.counters.on_read(cat, len);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8], cat: IoCategory) -> Result<()> {
        let (zone, off) = self.geo.locate_write(addr)?;
        self.do_write(zone, Some(off), data, cat).map(|_| ())
    }

    fn append(&self, zone: u32, data: &[u8], cat: IoCategory) -> Result<u64> {
        let zone = self.geo.check_zone(u64::from(zone))?;
        self.do_write(zone, None, data, cat)
    }

    fn zone_op(&self, zone: u32, op: ZoneOp) -> Result<()> {
        let zone = self.geo.check_zone(u64::from(zone))?;
        self.do_zone_op(zone, op)
    }

    fn sync(&self) -> Result<()> {
        let mut core = self.lock();
        self.admit(&mut core, FaultOp::Sync, None)?;
        self.storage.sync()?;
        for r in core.zones.iter_mut() {
            r.durable = r.written;
        }
        drop(core);
        self.counters.on_sync();
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        self.counters.snapshot()
    }

    fn faults(&self) -> Option<&dyn FaultControl> {
        Some(self)
    }

    fn timing(&self) -> Option<TimingReport> {
        self.timing
            .as_ref()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).report())
    }
}

impl<S: Storage> FaultControl for Emulated<S> {
    fn power_cut(&self, mode: TearMode) {
        let mut core = self.lock();
        if core.powered {
            self.apply_power_cut(&mut core, mode);
        }
    }

    fn schedule_power_cut(&self, after: u64, mode: TearMode) {
        let mut core = self.lock();
        core.power_cut_at = Some((core.mutating + after, mode));
    }

    fn restart(&self) {
        let mut core = self.lock();
        core.power_cut_at = None;
        core.injection = None;
        core.powered = true;
    }

    fn is_powered(&self) -> bool {
        self.lock().powered
    }

    fn inject_error(&self, op: FaultOp, zone: Option<u32>, nth: u64) {
        self.lock().injection = Some(Injection {
            op,
            zone,
            remaining: Some(nth.max(1)),
        });
    }

    fn inject_persistent(&self, op: FaultOp, zone: Option<u32>) {
        self.lock().injection = Some(Injection {
            op,
            zone,
            remaining: None,
        });
    }

    fn rot(&self, addr: u64, bit: u8) -> Result<()> {
        let size = self.geo.device_size();
        if addr >= size {
            return Err(ZnsError::OutOfRange { addr, len: 1, size });
        }
        let zone = self.geo.zone_of(addr) as u32;
        let off = addr - self.geo.zone_start(zone);
        let written = zone_entry(&self.lock().zones, zone)?.written;
        if off >= written {
            return Err(ZnsError::Unsupported(format!(
                "bit rot at zone {zone} offset {off}: nothing is stored there (write pointer {written})"
            )));
        }
        self.storage.flip_bit(zone, off, bit)
    }

    fn clear_injection(&self) {
        self.lock().injection = None;
    }

    fn set_zone_condition(&self, zone: u32, state: ZoneState) -> Result<()> {
        let zone = self.geo.check_zone(u64::from(zone))?;
        if !matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
            return Err(ZnsError::Unsupported(format!(
                "a zone can only be forced read_only or offline, not {state}"
            )));
        }
        let mut core = self.lock();
        core.set_state(zone, state)?;
        core.persist(&self.storage, zone)
    }

    fn mutating_commands(&self) -> u64 {
        self.lock().mutating
    }
}

/// An in-memory emulated device (like Linux null_blk).
pub type MemDevice = Emulated<MemStorage>;

/// A persistent emulated device in one image file.
pub type FileDevice = Emulated<FileStorage>;

impl MemDevice {
    /// A fresh in-memory device with every zone EMPTY.
    pub fn new(geo: Geometry) -> Result<MemDevice> {
        geo.validate()?;
        let zones = vec![ZoneRec::new(ZoneState::Empty, 0); geo.zones as usize];
        Emulated::with_zones(geo, MemStorage::new(geo.zones), zones)
    }
}

impl FileDevice {
    /// Creates a new image file (it must not exist) with every zone EMPTY.
    pub fn create(path: &std::path::Path, geo: Geometry) -> Result<FileDevice> {
        geo.validate()?;
        let storage = FileStorage::create(path, geo)?;
        let zones = vec![ZoneRec::new(ZoneState::Empty, 0); geo.zones as usize];
        Emulated::with_zones(geo, storage, zones)
    }

    /// Bytes the file system holding the image at `path` can still give an unprivileged
    /// writer; `None` when it cannot be asked. An image is sparse, so a new one takes
    /// almost nothing until its zones are written: this says whether it can ever be full.
    pub fn host_free_bytes(path: &std::path::Path) -> Option<u64> {
        let st = rustix::fs::statvfs(path).ok()?;
        Some(st.f_bavail.saturating_mul(st.f_frsize))
    }

    /// Opens an existing image; zone conditions and write pointers come from the file.
    pub fn open(path: &std::path::Path) -> Result<FileDevice> {
        let (storage, geo, zones) = FileStorage::open(path, true)?;
        Emulated::with_zones(geo, storage, zones)
    }

    /// Opens an existing image whose storage dies at its `budget`-th mutating step (see
    /// [`CrashPoint`]): for tests that kill the emulator between its own storage steps.
    pub fn open_with_crash_point(
        path: &std::path::Path,
        budget: u64,
        seed: u64,
    ) -> Result<Emulated<CrashPoint<FileStorage>>> {
        let (storage, geo, zones) = FileStorage::open(path, true)?;
        let storage = CrashPoint::new(storage, budget, geo.block_size, seed);
        Emulated::with_zones(geo, storage, zones)
    }

    /// Opens an existing image for reading only (report, read): nothing is ever written.
    /// Readers take no lock, so any number of them may share the image with each other and
    /// with one writer. The device shows the image as it was at one instant of the open;
    /// a read of a zone that a writer has reset since fails with [`ZnsError::ZoneChanged`]
    /// and never returns the writer's new bytes (see [`FileDevice::saw_zone_change`]).
    pub fn open_read_only(path: &std::path::Path) -> Result<FileDevice> {
        let (storage, geo, zones) = FileStorage::open(path, false)?;
        Emulated::with_zones(geo, storage, zones)
    }

    /// Whether a read of this read-only device failed because a writer reset the zone
    /// under it. An error that the layers above report after such a read (a corrupt block,
    /// a short file) may be the writer's doing: opening the image again is worth a try.
    pub fn saw_zone_change(&self) -> bool {
        self.storage().saw_zone_change()
    }
}
