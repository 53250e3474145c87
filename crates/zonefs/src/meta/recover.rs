//! Mount: find the newest complete generation among the metadata zones, replay it, and
//! leave the log ready to append.

use std::sync::Arc;

use zns::{Geometry, IoCategory, ZoneInfo, ZoneState, ZonedDevice};

use super::error::{MetaError, MetaResult};
use super::log::{check_layout, MetaLog, MountReport};
use super::scan::{replay_zone, ScanError, ZoneReplay};
use super::state::FsState;
use super::superblock::{Superblock, SuperblockError, FORMAT_VERSION};

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
        let geo = dev.geometry();
        let layout = check_layout(&geo, meta_zones)?;
        let heads = read_heads(dev.as_ref(), &geo, meta_zones)?;
        let mut skipped = damaged_superblocks(&heads);
        for (sb, head) in newest_first(&heads) {
            let bytes = read_zone(dev.as_ref(), &geo, &head.info)?;
            match replay_zone(&bytes, geo.block_size as usize, layout) {
                Ok(replay) => {
                    let mut log = MetaLog::unplaced(dev, layout);
                    let state = log.adopt(sb, head, &heads, replay, skipped)?;
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

    /// Positions the log after the replayed zone and cleans up the other metadata zones.
    fn adopt(
        &mut self,
        sb: Superblock,
        head: &ZoneHead,
        heads: &[ZoneHead],
        replay: ZoneReplay,
        skipped: Vec<Skip>,
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
        let rolled = replay.torn_tail.is_some() || written != Some(replay.end);
        if rolled {
            self.roll(&replay.state)?;
        }
        // What was read may still sit in a volatile cache: make it durable before the
        // other generations are erased.
        self.dev.sync()?;
        self.reset_stale()?;
        self.mount = Some(MountReport {
            zone: head.zone(),
            seq: sb.seq,
            commit: replay.last_commit,
            batches: replay.batches,
            records: replay.records,
            torn_tail: replay.torn_tail,
            skipped: skipped.iter().map(Skip::describe).collect(),
            rolled,
        });
        Ok(replay.state)
    }
}

/// Reads the superblock of every metadata zone and refuses zones written for another
/// device, layout or format version.
fn read_heads(dev: &dyn ZonedDevice, geo: &Geometry, meta_zones: u32) -> MetaResult<Vec<ZoneHead>> {
    let infos = dev.report_zones(0, meta_zones)?;
    let mut heads = Vec::with_capacity(infos.len());
    for info in infos {
        let superblock = match info.state {
            ZoneState::Empty | ZoneState::Offline => None,
            _ => {
                let mut block = vec![0u8; geo.block_size as usize];
                dev.read(info.start, &mut block, IoCategory::Metadata)?;
                Some(Superblock::decode(&block))
            }
        };
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

/// The written bytes of a zone. Linux reports a full zone's write pointer as the zone
/// end, so a full zone is read up to its capacity.
fn read_zone(dev: &dyn ZonedDevice, geo: &Geometry, info: &ZoneInfo) -> MetaResult<Vec<u8>> {
    let len = match info.state {
        ZoneState::Full => geo.zone_capacity,
        _ => info.written().min(geo.zone_capacity),
    };
    let mut bytes = vec![0u8; len as usize];
    dev.read(info.start, &mut bytes, IoCategory::Metadata)?;
    Ok(bytes)
}
