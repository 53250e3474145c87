//! Mount: find the newest complete generation among the metadata zones, replay it, and
//! leave the log ready to append (or, read-only, leave the device exactly as it is).

use std::sync::Arc;

use zkv_zns::{Geometry, IoCategory, ZoneInfo, ZoneState, ZonedDevice};

use super::error::{MetaError, MetaResult};
use super::log::{check_layout, MetaLog, MountReport};
use super::probe::read_superblock;
use super::scan::{replay_zone, ScanError, ZoneReplay};
use super::state::FsState;
use super::superblock::{Superblock, SuperblockError, FORMAT_VERSION, MIN_READ_VERSION};

/// Whether recovery may write to repair the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    ReadWrite,
    ReadOnly,
}

/// What the first block of a metadata zone holds.
#[derive(Debug)]
struct ZoneHead {
    info: ZoneInfo,
    /// `None` for zones with nothing written (or unreadable ones).
    superblock: Option<Result<Superblock, SuperblockError>>,
    /// Block 0's superblock was damaged and its copy in block 1 was read instead.
    from_copy: bool,
}

impl ZoneHead {
    fn zone(&self) -> u32 {
        self.info.zone
    }

    fn valid(&self) -> Option<Superblock> {
        self.superblock.as_ref()?.as_ref().ok().copied()
    }

    fn has_magic(&self) -> bool {
        !matches!(
            self.superblock,
            None | Some(Err(
                SuperblockError::NoMagic | SuperblockError::Truncated { .. }
            ))
        )
    }
}

impl MetaLog {
    /// Mounts the metadata log: picks the metadata zone with the highest sequence number
    /// whose superblock and snapshot are valid, replays its committed batches, ignores an
    /// interrupted last write, and returns the state with a log ready to append.
    ///
    /// Mount writes too: when the chosen zone ends with a torn write or is full it rolls to
    /// a fresh zone, and it resets every other metadata zone once the chosen state is
    /// durable.
    pub fn recover(dev: Arc<dyn ZonedDevice>, meta_zones: u32) -> MetaResult<(FsState, MetaLog)> {
        MetaLog::recover_with(dev, meta_zones, Access::ReadWrite)
    }

    /// Recovers the same state as [`MetaLog::recover`] without writing anything: no roll
    /// away from a torn tail or a full zone, no reset of older generations, no device
    /// flush. The mount report says what a read-write recovery would do (`roll_to`,
    /// `stale`). The returned log refuses every write with [`MetaError::ReadOnly`].
    pub fn recover_read_only(
        dev: Arc<dyn ZonedDevice>,
        meta_zones: u32,
    ) -> MetaResult<(FsState, MetaLog)> {
        MetaLog::recover_with(dev, meta_zones, Access::ReadOnly)
    }

    fn recover_with(
        dev: Arc<dyn ZonedDevice>,
        meta_zones: u32,
        access: Access,
    ) -> MetaResult<(FsState, MetaLog)> {
        let geo = dev.geometry();
        let layout = check_layout(&geo, meta_zones)?;
        let heads = read_heads(dev.as_ref(), &geo, meta_zones)?;
        let mut skipped = damaged_superblocks(&heads);
        for (sb, head) in newest_first(&heads) {
            let bytes = read_zone(dev.as_ref(), &head.info)?;
            match replay_zone(&bytes, geo.block_size as usize, layout, sb.version) {
                Ok(replay) => {
                    let mut log = MetaLog::unplaced(dev, layout);
                    let state = log.adopt(sb, head, &heads, replay, skipped, access)?;
                    return Ok((state, log));
                }
                Err(ScanError::NoBase { offset, reason }) => skipped.push(Skip {
                    zone: head.zone(),
                    offset,
                    reason,
                }),
                Err(ScanError::Corrupt { offset, reason }) => {
                    return Err(MetaError::Corrupt {
                        zone: head.zone(),
                        offset,
                        reason,
                    });
                }
            }
        }
        Err(nothing_usable(&heads, skipped))
    }

    /// Positions the log after the replayed zone and, with write access, repairs it.
    fn adopt(
        &mut self,
        sb: Superblock,
        head: &ZoneHead,
        heads: &[ZoneHead],
        replay: ZoneReplay,
        skipped: Vec<Skip>,
        access: Access,
    ) -> MetaResult<FsState> {
        self.active = head.zone();
        self.seq = sb.seq;
        self.write_off = replay.end;
        self.next_commit = replay.last_commit.saturating_add(1);
        self.stale = heads
            .iter()
            .filter(|h| h.zone() != head.zone() && h.info.state != ZoneState::Empty)
            .map(ZoneHead::zone)
            .collect();
        // Appending after a torn write would leave garbage between valid batches, which
        // the next mount would rightly call corruption; a full zone has no room left.
        let written = (head.info.state != ZoneState::Full).then(|| head.info.written());
        let mut repaired = replay.repaired.clone();
        if head.from_copy {
            repaired.insert(0, (0, "superblock damaged, its copy used".to_string()));
        }
        // Damage read past is rewritten by rolling to a clean generation, and so is a
        // generation of an older format.
        let needs_roll = replay.torn_tail.is_some()
            || written != Some(replay.end)
            || !repaired.is_empty()
            || sb.version != FORMAT_VERSION;
        let stale = self.stale.clone();
        match access {
            Access::ReadWrite => self.repair(needs_roll, &replay.state)?,
            Access::ReadOnly => self.read_only = true,
        }
        self.mount = Some(MountReport {
            zone: head.zone(),
            seq: sb.seq,
            commit: replay.last_commit,
            batches: replay.batches,
            records: replay.records,
            torn_tail: replay.torn_tail,
            skipped: skipped.iter().map(Skip::describe).collect(),
            repaired,
            roll_to: needs_roll.then(|| self.next_zone(head.zone())),
            rolled: needs_roll && access == Access::ReadWrite,
            stale,
        });
        Ok(replay.state)
    }

    /// Makes the log ready to append: rolls away from a torn or full zone, then erases the
    /// other generations.
    fn repair(&mut self, roll: bool, state: &FsState) -> MetaResult<()> {
        if roll {
            self.roll(state)?;
        }
        // What was read may still sit in a volatile cache: make it durable before the
        // other generations are erased.
        self.dev.sync()?;
        self.reset_stale()
    }
}

/// Reads the superblock of every metadata zone and refuses zones written for another
/// device, layout or format version.
fn read_heads(dev: &dyn ZonedDevice, geo: &Geometry, meta_zones: u32) -> MetaResult<Vec<ZoneHead>> {
    let infos = dev.report_zones(0, meta_zones)?;
    let mut heads = Vec::with_capacity(infos.len());
    for info in infos {
        let (superblock, from_copy) = match read_superblock(dev, geo, &info)? {
            Some((sb, from_copy)) => (Some(sb), from_copy),
            None => (None, false),
        };
        let head = ZoneHead {
            info,
            superblock,
            from_copy,
        };
        if let Some(sb) = head.valid() {
            check_superblock(&sb, geo, meta_zones, head.zone())?;
        }
        heads.push(head);
    }
    Ok(heads)
}

fn check_superblock(sb: &Superblock, geo: &Geometry, meta_zones: u32, zone: u32) -> MetaResult<()> {
    if !(MIN_READ_VERSION..=FORMAT_VERSION).contains(&sb.version) {
        return Err(MetaError::UnsupportedVersion {
            zone,
            found: sb.version,
            oldest: MIN_READ_VERSION,
            newest: FORMAT_VERSION,
        });
    }
    match sb.mismatch(geo, meta_zones, zone) {
        Some(m) => Err(MetaError::GeometryMismatch {
            zone,
            field: m.field,
            on_disk: m.on_disk,
            expected: m.expected,
        }),
        None => Ok(()),
    }
}

/// Zones with a valid superblock, highest sequence first.
fn newest_first(heads: &[ZoneHead]) -> Vec<(Superblock, &ZoneHead)> {
    let mut valid: Vec<(Superblock, &ZoneHead)> = heads
        .iter()
        .filter_map(|h| h.valid().map(|sb| (sb, h)))
        .collect();
    valid.sort_by(|a, b| b.0.seq.cmp(&a.0.seq).then(a.1.zone().cmp(&b.1.zone())));
    valid
}

/// A metadata zone mount passed over.
#[derive(Debug)]
struct Skip {
    zone: u32,
    offset: u64,
    reason: String,
}

impl Skip {
    fn describe(&self) -> (u32, String) {
        (
            self.zone,
            format!("offset {}: {}", self.offset, self.reason),
        )
    }
}

fn damaged_superblocks(heads: &[ZoneHead]) -> Vec<Skip> {
    heads
        .iter()
        .filter(|h| h.has_magic())
        .filter_map(|h| match &h.superblock {
            Some(Err(e)) => Some(Skip {
                zone: h.zone(),
                offset: 0,
                reason: e.to_string(),
            }),
            _ => None,
        })
        .collect()
}

/// The error when no zone could be replayed: not formatted if no zone even looks like
/// metadata, otherwise the first problem found.
fn nothing_usable(heads: &[ZoneHead], skipped: Vec<Skip>) -> MetaError {
    match skipped.into_iter().next() {
        Some(skip) if heads.iter().any(ZoneHead::has_magic) => MetaError::Corrupt {
            zone: skip.zone,
            offset: skip.offset,
            reason: format!("no complete metadata generation: {}", skip.reason),
        },
        _ => MetaError::NotFormatted,
    }
}

/// The written bytes of a zone (a full zone up to its capacity, see [`ZoneInfo::used`]).
fn read_zone(dev: &dyn ZonedDevice, info: &ZoneInfo) -> MetaResult<Vec<u8>> {
    let mut bytes = vec![0u8; info.used() as usize];
    dev.read(info.start, &mut bytes, IoCategory::Metadata)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::batch::Batch;
    use crate::meta::record::Record;
    use crate::meta::state::{FileId, FileKind, FileMeta, ZoneLayout};
    use zkv_zns::MemDevice;

    /// A generation as format version 2 wrote it: one copy of everything, the snapshot
    /// right after the superblock.
    fn version_2_zone(geo: &Geometry, files: u64) -> Vec<u8> {
        let block = geo.block_size as usize;
        let layout = ZoneLayout::of_device(geo, 3);
        let mut sb = Superblock::new(geo, 3, 0, 1);
        sb.version = 2;
        let mut base = Batch::new(block);
        base.push_superblock_format_2(&sb);
        base.push_snapshot(&FsState::new(layout)).unwrap();
        base.seal_format_2(0).unwrap();
        let mut bytes = base.bytes().to_vec();
        for id in 1..=files {
            let mut b = Batch::new(block);
            let meta = FileMeta::new(format!("f{id}"), FileKind::Other);
            b.push_record(&Record::FileUpdate {
                id: FileId(id),
                meta,
            })
            .unwrap();
            b.seal_format_2(id).unwrap();
            bytes.extend_from_slice(b.bytes());
        }
        bytes
    }

    #[test]
    fn a_version_2_generation_is_read_and_rewritten_in_the_current_format() {
        let geo = Geometry::new(8, 1 << 16);
        let dev: Arc<dyn ZonedDevice> = Arc::new(MemDevice::new(geo).unwrap());
        dev.write(0, &version_2_zone(&geo, 3), IoCategory::Metadata)
            .unwrap();
        let (ro, _) = MetaLog::recover_read_only(dev.clone(), 3).unwrap();
        assert_eq!(ro.file_count(), 3);
        let (state, log) = MetaLog::recover(dev.clone(), 3).unwrap();
        assert_eq!(state, ro);
        let report = log.mount_report().unwrap();
        assert_eq!((report.zone, report.commit, report.rolled), (0, 3, true));
        assert_eq!(log.active_zone(), 1);
        let info = dev.zone_info(1).unwrap();
        let head = read_superblock(dev.as_ref(), &geo, &info).unwrap();
        let sb = head.and_then(|(sb, _)| sb.ok()).unwrap();
        assert_eq!(sb.version, FORMAT_VERSION);
        drop(log);
        let (again, log) = MetaLog::recover(dev, 3).unwrap();
        assert_eq!(again, state);
        assert!(!log.mount_report().unwrap().rolled);
    }
}
