//! Read-only inspection of a metadata zone: its superblock and the frames it holds, with
//! their offsets. For tools (a metadata dump command) and for tests that damage chosen
//! frames.

use zkv_zns::{IoCategory, ZoneState, ZonedDevice};

use super::error::MetaResult;
use super::record::{FrameError, FrameKind};
use super::scan::{Cursor, Item};
use super::superblock::{frames_start, Superblock, SuperblockError, FORMAT_VERSION};

/// One frame found in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// Offset from the zone start.
    pub offset: u64,
    /// Total bytes of the frame, header included.
    pub len: u64,
    /// What the frame holds.
    pub kind: FrameKind,
}

/// The readable contents of a metadata zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneDump {
    /// The metadata zone.
    pub zone: u32,
    /// Its device state.
    pub state: ZoneState,
    /// Bytes examined (the write pointer, or the capacity of a full zone).
    pub written: u64,
    /// `None` when nothing is written.
    pub superblock: Option<Result<Superblock, SuperblockError>>,
    /// Frames in log order, up to the first unreadable one.
    pub frames: Vec<FrameInfo>,
    /// Where and why the walk stopped early, if it did.
    pub stopped: Option<(u64, FrameError)>,
}

/// Lists the frames of metadata zone `zone`, without judging whether they form a valid log.
pub fn dump_zone(dev: &dyn ZonedDevice, zone: u32) -> MetaResult<ZoneDump> {
    let geo = dev.geometry();
    let info = dev.zone_info(zone)?;
    let written = info.used();
    let mut bytes = vec![0u8; written as usize];
    dev.read(info.start, &mut bytes, IoCategory::Metadata)?;
    let mut dump = ZoneDump {
        zone,
        state: info.state,
        written,
        superblock: (written > 0).then(|| Superblock::decode(&bytes)),
        frames: Vec::new(),
        stopped: None,
    };
    if written > 0 {
        // A zone whose superblock cannot be read is walked as the current format lays it out.
        let version = match &dump.superblock {
            Some(Ok(sb)) => sb.version,
            _ => FORMAT_VERSION,
        };
        let block = geo.block_size as usize;
        walk(&bytes, block, frames_start(version, block), &mut dump);
    }
    Ok(dump)
}

fn walk(bytes: &[u8], block: usize, start: usize, dump: &mut ZoneDump) {
    let mut cur = Cursor::at(bytes, block, start);
    let mut in_batch = true;
    loop {
        match cur.next(in_batch) {
            Item::Frame { at, frame } => {
                let kind = frame.kind();
                dump.frames.push(FrameInfo {
                    offset: at as u64,
                    len: (cur.pos() - at) as u64,
                    kind,
                });
                // After a commit comes the batch's copy, or padding up to the next batch.
                in_batch = kind != FrameKind::Commit;
            }
            Item::Bad { at, error } => {
                dump.stopped = Some((at as u64, error));
                return;
            }
            Item::End => return,
        }
    }
}
