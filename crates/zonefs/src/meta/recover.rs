//! Mount: find the newest complete generation among the metadata zones, replay it, and
//! leave the log ready to append (or, read-only, leave the device exactly as it is).

use std::sync::Arc;

use zns::{Geometry, IoCategory, ZoneInfo, ZoneState, ZonedDevice};

use super::error::{MetaError, MetaResult};
use super::log::{check_layout, MetaLog, MountReport};
use super::probe::read_superblock;
use super::scan::{replay_zone, ScanError, ZoneReplay};
use super::state::FsState;
use super::superblock::{Superblock, SuperblockError, FORMAT_VERSION};

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
            match replay_zone(&bytes, geo.block_size as usize, layout) {
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
        let needs_roll = replay.torn_tail.is_some() || written != Some(replay.end);
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
        let superblock = read_superblock(dev, geo, &info)?;
        let head = ZoneHead { info, superblock };
        if let Some(sb) = head.valid() {
            check_superblock(&sb, geo, meta_zones, head.zone())?;
        }
        heads.push(head);
    }
    Ok(heads)
}

fn check_superblock(sb: &Superblock, geo: &Geometry, meta_zones: u32, zone: u32) -> MetaResult<()> {
    if sb.version != FORMAT_VERSION {
        return Err(MetaError::UnsupportedVersion {
            zone,
            found: sb.version,
            supported: FORMAT_VERSION,
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
