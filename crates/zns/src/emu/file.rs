//! File-backed storage: one image file holds a header, a zone table and the zones' bytes.
//!
//! Layout (all integers little endian):
//! - block 0, the header: magic `ZKVZNSIM`, format version, geometry, table and data
//!   offsets, CRC32C of everything before it;
//! - the zone table, one 16-byte entry per zone: written bytes (u64), state code (u8), the
//!   zone's generation (u24), CRC32C of the first 12 bytes;
//! - the zones, zone `z` at `data_offset + z × zone_size`. The file is sparse, and a reset
//!   punches the zone's bytes out of it.
//!
//! Each write stores its bytes first and its table entry second, so a process killed in
//! between leaves the entry describing the older, shorter zone: the write never happened.
//! A reset goes the other way: the entry (empty) first, the punch second, so a process
//! killed in between leaves an empty zone whose old bytes lie behind the write pointer,
//! never read again. No order of steps leaves an entry that claims bytes the file lost.
//!
//! Sharing: a writer holds an exclusive `flock` on the image, so two writers exclude each
//! other. A reader takes no lock and may run next to a writer. It reads the zone table until
//! two reads agree (a view of one instant), and after every data read checks the zone's
//! entry again: an entry whose generation moved on means the writer dropped bytes of the
//! zone (a reset, a power cut) and may have written new ones where the reader read, so the
//! read fails with [`ZnsError::ZoneChanged`] instead of returning them. The generation is
//! recorded with the entry before the bytes go, which is what makes the check sound.
//! Version 1 images (before generations) carry zeros there: a reader of one takes a shared
//! lock instead, since a writer of that version would not record its resets, and a writer
//! of this version turns the image into a version 2 one when it opens it.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{Storage, ZoneRec};
use crate::error::{zone_entry, zone_entry_mut, Result, ZnsError};
use crate::types::{Geometry, ZoneState};

const MAGIC: &[u8; 8] = b"ZKVZNSIM";
/// The image format this build writes. Version 2 records a generation per zone; version 1
/// images (zeros there) still open.
pub const IMAGE_FORMAT_VERSION: u32 = 2;
const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: u64 = 4096;
const ENTRY_LEN: u64 = 16;
/// Bytes of the header covered by its checksum.
const HEADER_BODY: usize = 64;
/// Generations are 24 bits and wrap: a reader misses a change only if a zone went through
/// a multiple of 2^24 resets between two of its looks at it.
const GENERATION_MASK: u32 = 0x00ff_ffff;
/// Reads of the zone table (or of an entry) a reader makes to catch two that agree.
const STEADY_READS: usize = 1000;

/// The storage of a [`crate::FileDevice`]: one image file holding a header, the zone table
/// and the zones' bytes (sparse: unwritten space takes no room on disk).
#[derive(Debug)]
pub struct FileStorage {
    path: PathBuf,
    file: File,
    writable: bool,
    /// Read-only and unlocked: a writer may change the image under this storage.
    shared: bool,
    geo: Geometry,
    data_offset: u64,
    /// Per zone, the entry as last written (writer) or as read at open (reader).
    entries: Mutex<Vec<Entry>>,
    /// A read was refused because a writer reset the zone under it.
    changed: AtomicBool,
}

/// One zone table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    state: ZoneState,
    written: u64,
    /// Moves on whenever the zone loses bytes (a reset, a power cut).
    generation: u32,
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

/// The format version of the image at `path`, read from its header (checked) without
/// opening the image as a device: no lock, nothing written.
pub fn image_format_version(path: &Path) -> Result<u32> {
    let file =
        File::open(path).map_err(|e| ZnsError::io(format!("{}: open image", path.display()), e))?;
    read_header(path, &file, true).map(|(_, version)| version)
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

/// The little-endian integer at byte `at` of `b`; `None` if `b` ends before it does.
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(*b.get(at..)?.first_chunk()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(*b.get(at..)?.first_chunk()?))
}

/// The geometry and format version a header holds.
fn decode_header(path: &Path, h: &[u8]) -> Result<(Geometry, u32)> {
    if !h.starts_with(MAGIC) {
        return Err(bad(path, "not a zkv zone image (bad magic)"));
    }
    let short = || bad(path, format!("truncated header: {} bytes", h.len()));
    let u32_field = |at| u32_at(h, at).ok_or_else(short);
    let u64_field = |at| u64_at(h, at).ok_or_else(short);
    let version = u32_field(8)?;
    if !(OLDEST_VERSION..=IMAGE_FORMAT_VERSION).contains(&version) {
        return Err(bad(
            path,
            format!(
                "image format version {version} is not supported (this build reads \
                 {OLDEST_VERSION} to {IMAGE_FORMAT_VERSION})"
            ),
        ));
    }
    let body = h.get(..HEADER_BODY).ok_or_else(short)?;
    if crc32c::crc32c(body) != u32_field(HEADER_BODY)? {
        return Err(bad(path, "header checksum mismatch (the image is corrupt)"));
    }
    let geo = Geometry {
        zones: u32_field(12)?,
        block_size: u32_field(16)?,
        max_open: u32_field(20)?,
        max_active: u32_field(24)?,
        zone_size: u64_field(32)?,
        zone_capacity: u64_field(40)?,
    };
    geo.validate()
        .map_err(|e| bad(path, format!("header holds an invalid geometry: {e}")))?;
    if u64_field(48)? != HEADER_LEN || u64_field(56)? != data_offset(geo.zones) {
        return Err(bad(path, "header table/data offsets are inconsistent"));
    }
    Ok((geo, version))
}

impl Entry {
    const EMPTY: Entry = Entry {
        state: ZoneState::Empty,
        written: 0,
        generation: 0,
    };

    fn encode(&self) -> [u8; ENTRY_LEN as usize] {
        let mut e = [0u8; ENTRY_LEN as usize];
        e[0..8].copy_from_slice(&self.written.to_le_bytes());
        e[8] = self.state.code();
        e[9..12].copy_from_slice(&self.generation.to_le_bytes()[..3]);
        let crc = crc32c::crc32c(&e[..12]);
        e[12..16].copy_from_slice(&crc.to_le_bytes());
        e
    }

    fn decode(
        path: &Path,
        geo: &Geometry,
        zone: u32,
        e: &[u8; ENTRY_LEN as usize],
    ) -> Result<Entry> {
        let [w0, w1, w2, w3, w4, w5, w6, w7, code, g0, g1, g2, c0, c1, c2, c3] = *e;
        if crc32c::crc32c(&e[..12]) != u32::from_le_bytes([c0, c1, c2, c3]) {
            return Err(bad(
                path,
                format!("zone {zone}: zone table entry checksum mismatch"),
            ));
        }
        let written = u64::from_le_bytes([w0, w1, w2, w3, w4, w5, w6, w7]);
        let state = ZoneState::from_code(code)
            .ok_or_else(|| bad(path, format!("zone {zone}: unknown zone state code {code}")))?;
        if written > geo.zone_capacity || !written.is_multiple_of(u64::from(geo.block_size)) {
            return Err(bad(
                path,
                format!("zone {zone}: write pointer {written} is impossible for this geometry"),
            ));
        }
        if state == ZoneState::Empty && written != 0 {
            return Err(bad(path, format!("zone {zone}: empty zone with data")));
        }
        let generation = u32::from_le_bytes([g0, g1, g2, 0]);
        Ok(Entry {
            state,
            written,
            generation,
        })
    }
}

/// Reads `buf.len()` bytes at `at` until two reads in a row agree. A writer's `pwrite` is
/// not atomic against a `pread`, and the zone table changes entry by entry: bytes that stay
/// the same across two reads are what the file held at one instant between them (every
/// change moves a write pointer or a generation forward, so none undoes another).
fn read_steady(path: &Path, file: &File, at: u64, buf: &mut [u8], what: &str) -> Result<()> {
    let io = |e| ZnsError::io(format!("{}: read {what}", path.display()), e);
    file.read_exact_at(buf, at).map_err(io)?;
    let mut again = vec![0u8; buf.len()];
    for _ in 0..STEADY_READS {
        file.read_exact_at(&mut again, at).map_err(io)?;
        if again == buf {
            return Ok(());
        }
        buf.copy_from_slice(&again);
        std::thread::yield_now();
    }
    Err(ZnsError::TableChanging {
        path: path.to_path_buf(),
    })
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
        let entries = vec![Entry::EMPTY; geo.zones as usize];
        let table: Vec<u8> = entries.iter().flat_map(Entry::encode).collect();
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
            shared: false,
            geo,
            data_offset,
            entries: Mutex::new(entries),
            changed: AtomicBool::new(false),
        })
    }

    /// Opens an image and recovers its geometry and zone conditions from the file. A
    /// writable open takes an exclusive lock; a read-only one takes none (see the module
    /// doc), except on a version 1 image, where it takes a shared lock.
    pub fn open(path: &Path, writable: bool) -> Result<(FileStorage, Geometry, Vec<ZoneRec>)> {
        let file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|e| ZnsError::io(format!("{}: open image", path.display()), e))?;
        if writable {
            lock(path, &file, true)?;
        }
        let (geo, version) = read_header(path, &file, !writable)?;
        // A writer of version 1 does not record resets, so a reader cannot see them: it
        // keeps such a writer out as before.
        let shared = !writable && version >= 2;
        if !writable && !shared {
            lock(path, &file, false)?;
        }
        let data_offset = data_offset(geo.zones);
        let mut table = vec![0u8; (u64::from(geo.zones) * ENTRY_LEN) as usize];
        if shared {
            read_steady(path, &file, HEADER_LEN, &mut table, "zone table")?;
        } else {
            file.read_exact_at(&mut table, HEADER_LEN)
                .map_err(|e| ZnsError::io(format!("{}: read zone table", path.display()), e))?;
        }
        let entries = table
            .as_chunks::<{ ENTRY_LEN as usize }>()
            .0
            .iter()
            .enumerate()
            .map(|(z, e)| Entry::decode(path, &geo, z as u32, e))
            .collect::<Result<Vec<_>>>()?;
        if writable && version < IMAGE_FORMAT_VERSION {
            upgrade(path, &file, &geo)?;
        }
        let zones = entries
            .iter()
            .map(|e| ZoneRec::new(e.state, e.written))
            .collect();
        let storage = FileStorage {
            path: path.to_path_buf(),
            file,
            writable,
            shared,
            geo,
            data_offset,
            entries: Mutex::new(entries),
            changed: AtomicBool::new(false),
        };
        Ok((storage, geo, zones))
    }

    /// The image file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a read was refused because a writer reset the zone under this read-only
    /// storage ([`ZnsError::ZoneChanged`]): a failure seen by the layers above may then be
    /// the writer's doing, and opening the image again sees its new state.
    pub fn saw_zone_change(&self) -> bool {
        self.changed.load(Ordering::Relaxed)
    }

    fn zone_addr(&self, zone: u32, off: u64) -> u64 {
        self.data_offset + self.geo.zone_start(zone) + off
    }

    fn io_err(&self, what: &str, e: std::io::Error) -> ZnsError {
        ZnsError::io(format!("{}: {what}", self.path.display()), e)
    }

    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        // Each entry is replaced whole, so a panic elsewhere cannot leave one half-updated.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fails if a writer dropped bytes of `zone` (moved its generation on) since this reader
    /// read the zone table: the bytes just read may then not be the ones it knew of.
    fn check_unchanged(&self, zone: u32) -> Result<()> {
        let at = HEADER_LEN + u64::from(zone) * ENTRY_LEN;
        let mut raw = [0u8; ENTRY_LEN as usize];
        let read = |raw: &mut [u8]| {
            self.file
                .read_exact_at(raw, at)
                .map_err(|e| self.io_err(&format!("read zone table entry {zone}"), e))
        };
        read(&mut raw)?;
        let now = match Entry::decode(&self.path, &self.geo, zone, &raw) {
            Ok(now) => now,
            // Most likely a read that caught the writer's pwrite half done.
            Err(_) => {
                let steady = read_steady(&self.path, &self.file, at, &mut raw, "zone table entry");
                if steady.as_ref().is_err_and(ZnsError::is_concurrent_change) {
                    // A writer kept the entry changing: what was just read is not trusted.
                    self.changed.store(true, Ordering::Relaxed);
                }
                steady?;
                Entry::decode(&self.path, &self.geo, zone, &raw)?
            }
        };
        let then = *zone_entry(&self.entries(), zone)?;
        if now.generation != then.generation || now.written < then.written {
            self.changed.store(true, Ordering::Relaxed);
            return Err(ZnsError::ZoneChanged {
                path: self.path.clone(),
                zone,
            });
        }
        Ok(())
    }
}

/// Reads and checks the header. `steady`: a writer may be rewriting it (see [`upgrade`]).
fn read_header(path: &Path, file: &File, steady: bool) -> Result<(Geometry, u32)> {
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
    if steady {
        read_steady(path, file, 0, &mut h, "header")?;
    } else {
        file.read_exact_at(&mut h, 0)
            .map_err(|e| io("read header", e))?;
    }
    let (geo, version) = decode_header(path, &h)?;
    let expect = data_offset(geo.zones) + geo.device_size();
    if len < expect {
        return Err(bad(
            path,
            format!("truncated image: {len} bytes, this geometry needs {expect}"),
        ));
    }
    Ok((geo, version))
}

/// Makes a version 1 image a version 2 one. The layout is the same and its generations are
/// all 0; from here on its resets are recorded, and builds that would not record them
/// refuse it.
fn upgrade(path: &Path, file: &File, geo: &Geometry) -> Result<()> {
    let io = |what: &str, e| ZnsError::io(format!("{}: {what}", path.display()), e);
    file.write_all_at(&encode_header(geo), 0)
        .map_err(|e| io("upgrade header", e))?;
    file.sync_data().map_err(|e| io("sync", e))
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
            .map_err(|e| self.io_err(&format!("read zone {zone}"), e))?;
        // The check comes after the bytes: a reset that reached them was recorded before.
        if self.shared && !buf.is_empty() {
            self.check_unchanged(zone)?;
        }
        Ok(())
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
        let mut entries = self.entries();
        let slot = zone_entry_mut(&mut entries, zone)?;
        let last = *slot;
        // A zone about to lose bytes starts a new generation, recorded before the bytes go
        // (truncate comes after persist), so that readers notice.
        let generation = if written < last.written {
            (last.generation + 1) & GENERATION_MASK
        } else {
            last.generation
        };
        let entry = Entry {
            state,
            written,
            generation,
        };
        let at = HEADER_LEN + u64::from(zone) * ENTRY_LEN;
        self.file
            .write_all_at(&entry.encode(), at)
            .map_err(|e| self.io_err(&format!("write zone table entry {zone}"), e))?;
        *slot = entry;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.io_err("sync", e))
    }

    fn writable(&self) -> bool {
        self.writable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry::new(4, 16384)
    }

    /// Turns the image at `path` into what a version 1 build wrote.
    fn make_version_1(path: &Path) {
        let mut h = encode_header(&geo());
        h[8..12].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c::crc32c(&h[..HEADER_BODY]);
        h[HEADER_BODY..HEADER_BODY + 4].copy_from_slice(&crc.to_le_bytes());
        let f = OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(&h, 0).unwrap();
    }

    fn version(path: &Path) -> u32 {
        let h = std::fs::read(path).unwrap();
        u32_at(&h, 8).unwrap()
    }

    #[test]
    fn a_short_header_is_an_error_not_a_panic() {
        let h = encode_header(&geo());
        assert!(decode_header(Path::new("x"), &h).is_ok());
        for len in [8, 12, 40, HEADER_BODY] {
            let err = decode_header(Path::new("x"), &h[..len]).unwrap_err();
            assert!(err.to_string().contains("truncated header"), "{len}: {err}");
        }
    }

    #[test]
    fn entries_round_trip_with_their_generation() {
        let g = geo();
        let e = Entry {
            state: ZoneState::Closed,
            written: 8192,
            generation: GENERATION_MASK,
        };
        assert_eq!(
            Entry::decode(Path::new("x"), &g, 0, &e.encode()).unwrap(),
            e
        );
        // Generation 0 is stored as zeros, which is what version 1 wrote there.
        assert_eq!(Entry::EMPTY.encode()[9..12], [0, 0, 0]);
    }

    #[test]
    fn a_zone_that_loses_bytes_moves_to_the_next_generation_and_wraps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.img");
        let s = FileStorage::create(&path, geo()).unwrap();
        let gen = |s: &FileStorage| s.entries()[0].generation;
        s.persist(0, ZoneState::ImplicitOpen, 4096).unwrap();
        s.persist(0, ZoneState::Closed, 4096).unwrap();
        assert_eq!(gen(&s), 0, "growing or closing keeps the generation");
        s.persist(0, ZoneState::Empty, 0).unwrap();
        assert_eq!(gen(&s), 1);
        s.entries()[0] = Entry {
            state: ZoneState::Full,
            written: 16384,
            generation: GENERATION_MASK,
        };
        s.persist(0, ZoneState::Empty, 0).unwrap();
        assert_eq!(gen(&s), 0);
        drop(s);
        let (s, _, _) = FileStorage::open(&path, false).unwrap();
        assert_eq!(gen(&s), 0);
    }

    #[test]
    fn a_version_1_image_keeps_its_reader_lock_until_a_writer_upgrades_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.img");
        drop(FileStorage::create(&path, geo()).unwrap());
        make_version_1(&path);
        let (reader, _, _) = FileStorage::open(&path, false).unwrap();
        assert!(!reader.shared);
        // A version 1 writer would not record resets: a reader still keeps writers out.
        assert!(matches!(
            FileStorage::open(&path, true),
            Err(ZnsError::InUse { .. })
        ));
        drop(reader);
        assert_eq!(version(&path), 1, "a read-only open writes nothing");
        drop(FileStorage::open(&path, true).unwrap());
        assert_eq!(version(&path), IMAGE_FORMAT_VERSION);
        let (reader, _, _) = FileStorage::open(&path, false).unwrap();
        assert!(reader.shared);
    }

    #[test]
    fn a_damaged_entry_under_a_reader_is_a_bad_image_not_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.img");
        let w = FileStorage::create(&path, geo()).unwrap();
        w.write(0, 0, &[1u8; 4096]).unwrap();
        w.persist(0, ZoneState::ImplicitOpen, 4096).unwrap();
        let (r, _, _) = FileStorage::open(&path, false).unwrap();
        w.file.write_all_at(&[0xff], HEADER_LEN + 3).unwrap();
        let err = r.read(0, 0, &mut [0u8; 4096]).unwrap_err();
        assert!(matches!(err, ZnsError::BadImage { .. }), "{err}");
        assert!(!r.saw_zone_change());
    }
}
