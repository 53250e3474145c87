//! Replaying one metadata zone: its snapshot batch, then every committed batch in order,
//! telling an interrupted last write (ignored) from damage (an error).

use super::batch::LENGTH_WORD;
use super::record::{decode_frame, Commit, Frame, FrameError, Record};
use super::state::{FsState, ZoneLayout};
use super::superblock::SUPERBLOCK_LEN;

/// A zone replayed up to its last committed batch.
#[derive(Debug)]
pub(crate) struct ZoneReplay {
    pub state: FsState,
    pub last_commit: u64,
    /// Delta batches and records applied after the snapshot.
    pub batches: u64,
    pub records: u64,
    /// Offset just past the last committed batch (block aligned).
    pub end: u64,
    /// Where an interrupted last write starts, if the zone ends with one.
    pub torn_tail: Option<u64>,
}

/// Why a zone could not be replayed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// The snapshot batch after the superblock is missing, incomplete or unusable: this
    /// generation never became complete, and an older one may still be used.
    NoBase { offset: u64, reason: String },
    /// Damage followed by valid data, or a well-formed record that cannot be applied.
    Corrupt { offset: u64, reason: String },
}

/// One step through a zone's frames.
#[derive(Debug)]
pub(crate) enum Item {
    Frame { at: usize, frame: Frame },
    Bad { at: usize, error: FrameError },
    End,
}

/// Walks the frames of a zone, skipping the padding the writer leaves.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    block: usize,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the first frame after the superblock.
    pub fn after_superblock(bytes: &'a [u8], block: usize) -> Cursor<'a> {
        Cursor {
            bytes,
            block,
            pos: SUPERBLOCK_LEN,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next frame. Inside a batch, padding cannot occur, so a zero length word there
    /// is reported as [`Item::Bad`]; between batches it skips to the next block.
    pub fn next(&mut self, in_batch: bool) -> Item {
        loop {
            if self.pos >= self.bytes.len() {
                return Item::End;
            }
            let left = self.block - self.pos % self.block;
            if left < LENGTH_WORD {
                self.pos += left;
                continue;
            }
            match decode_frame(&self.bytes[self.pos..]) {
                Ok((frame, len)) => {
                    let at = self.pos;
                    self.pos += len;
                    return Item::Frame { at, frame };
                }
                Err(FrameError::Empty) if !in_batch => self.pos += left,
                Err(error) => {
                    return Item::Bad {
                        at: self.pos,
                        error,
                    }
                }
            }
        }
    }

    /// Moves past the padding that closes a batch.
    pub fn align(&mut self) {
        let into = self.pos % self.block;
        if into != 0 {
            self.pos += self.block - into;
        }
    }
}

/// Replays the zone whose written bytes are `bytes` (superblock already checked).
pub(crate) fn replay_zone(
    bytes: &[u8],
    block: usize,
    layout: ZoneLayout,
) -> Result<ZoneReplay, ScanError> {
    let mut cur = Cursor::after_superblock(bytes, block);
    let (state, commit) = read_base(&mut cur, layout)?;
    let mut zone = ZoneReplay {
        state,
        last_commit: commit,
        batches: 0,
        records: 0,
        end: cur.pos as u64,
        torn_tail: None,
    };
    let mut batch: Vec<(usize, Record)> = Vec::new();
    loop {
        match cur.next(!batch.is_empty()) {
            Item::Frame {
                at,
                frame: Frame::Record(rec),
            } => batch.push((at, rec)),
            Item::Frame {
                at,
                frame: Frame::Commit(c),
            } => {
                zone.commit(c, at, &mut batch)?;
                cur.align();
                zone.end = cur.pos as u64;
            }
            Item::Bad { at, error } => {
                check_nothing_follows(bytes, block, at, &error, zone.last_commit)?;
                zone.torn_tail = Some(batch.first().map_or(at, |(start, _)| *start) as u64);
                return Ok(zone);
            }
            Item::End => {
                zone.torn_tail = batch.first().map(|(start, _)| *start as u64);
                return Ok(zone);
            }
        }
    }
}

/// Reads the generation's base: a snapshot frame and a commit of exactly that record.
fn read_base(cur: &mut Cursor<'_>, layout: ZoneLayout) -> Result<(FsState, u64), ScanError> {
    let no_base = |offset: usize, reason: String| ScanError::NoBase {
        offset: offset as u64,
        reason,
    };
    let snapshot = match cur.next(true) {
        Item::Frame {
            frame: Frame::Record(Record::Snapshot(s)),
            ..
        } => s,
        Item::Frame { at, frame } => {
            return Err(no_base(at, format!("first frame is {:?}", frame.kind())))
        }
        Item::Bad { at, error } => return Err(no_base(at, format!("snapshot: {error}"))),
        Item::End => {
            return Err(no_base(
                cur.pos(),
                "no snapshot after the superblock".into(),
            ))
        }
    };
    let state = FsState::from_snapshot(snapshot, layout)
        .map_err(|e| no_base(SUPERBLOCK_LEN, format!("snapshot rejected: {e}")))?;
    match cur.next(true) {
        Item::Frame {
            frame: Frame::Commit(c),
            ..
        } if c.records == 1 => {
            cur.align();
            Ok((state, c.seq))
        }
        _ => Err(no_base(cur.pos(), "snapshot is not committed".into())),
    }
}

impl ZoneReplay {
    /// Applies a complete batch. Its number must follow the previous one and its record
    /// count must match, so a lost or duplicated batch is detected.
    fn commit(
        &mut self,
        c: Commit,
        at: usize,
        batch: &mut Vec<(usize, Record)>,
    ) -> Result<(), ScanError> {
        let corrupt = |offset: usize, reason: String| ScanError::Corrupt {
            offset: offset as u64,
            reason,
        };
        if Some(c.seq) != self.last_commit.checked_add(1) {
            let last = self.last_commit;
            return Err(corrupt(at, format!("batch {} follows batch {last}", c.seq)));
        }
        if c.records as usize != batch.len() {
            let reason = format!("commit counts {} records, found {}", c.records, batch.len());
            return Err(corrupt(at, reason));
        }
        for (offset, rec) in batch.drain(..) {
            self.state
                .apply(&rec)
                .map_err(|e| corrupt(offset, format!("record cannot be applied: {e}")))?;
            self.records += 1;
        }
        self.last_commit = c.seq;
        self.batches += 1;
        Ok(())
    }
}

/// A bad frame at `at` is an interrupted last write only if no later write follows it.
/// A power cut may garble any part of the write it interrupts, so frames of that same
/// batch do not count; what counts is a complete batch numbered after it. Batches start
/// at block boundaries, so those are the only places to look. A frame whose checksum is
/// valid but which this build cannot read was written that way: never a torn write.
fn check_nothing_follows(
    bytes: &[u8],
    block: usize,
    at: usize,
    error: &FrameError,
    last_commit: u64,
) -> Result<(), ScanError> {
    let corrupt = |reason: String| ScanError::Corrupt {
        offset: at as u64,
        reason,
    };
    if !error.is_damage() {
        return Err(corrupt(error.to_string()));
    }
    let first_boundary = (at / block + 1) * block;
    let later = (first_boundary..bytes.len())
        .step_by(block)
        .find(|pos| batch_after(bytes, block, *pos, last_commit.saturating_add(1)));
    match later {
        Some(pos) => Err(corrupt(format!(
            "{error}; a later batch follows at offset {pos}"
        ))),
        None => Ok(()),
    }
}

/// Whether a complete batch numbered above `seq` starts at `pos`.
fn batch_after(bytes: &[u8], block: usize, pos: usize, seq: u64) -> bool {
    let mut cur = Cursor { bytes, block, pos };
    loop {
        match cur.next(true) {
            Item::Frame {
                frame: Frame::Commit(c),
                ..
            } => return c.seq > seq,
            Item::Frame { .. } => {}
            Item::Bad { .. } | Item::End => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::batch::Batch;
    use crate::meta::state::{FileId, FileKind, FileMeta};
    use crate::meta::superblock::Superblock;
    use zns::Geometry;

    const BLOCK: usize = 512;

    fn layout() -> ZoneLayout {
        ZoneLayout::new(8, 1 << 16, 2)
    }

    fn create(id: u64) -> Record {
        Record::FileUpdate {
            id: FileId(id),
            meta: FileMeta::new(format!("file-{id}"), FileKind::Sst),
        }
    }

    /// A zone image: base batch, then one batch per entry of `batches` (records per batch).
    fn image(batches: &[usize]) -> (Vec<u8>, Vec<usize>) {
        let geo = Geometry::new(8, 1 << 16).with_block_size(BLOCK as u32);
        let mut base = Batch::new(BLOCK);
        base.push_superblock(&Superblock::new(&geo, 2, 0, 1));
        base.push_snapshot(&FsState::new(layout())).unwrap();
        base.seal(0).unwrap();
        let mut bytes = base.bytes().to_vec();
        let mut starts = Vec::new();
        let mut id = 1;
        for (n, count) in batches.iter().enumerate() {
            let mut b = Batch::new(BLOCK);
            for _ in 0..*count {
                b.push_record(&create(id)).unwrap();
                id += 1;
            }
            b.seal(n as u64 + 1).unwrap();
            starts.push(bytes.len());
            bytes.extend_from_slice(b.bytes());
        }
        (bytes, starts)
    }

    #[test]
    fn replays_every_committed_batch() {
        let (bytes, _) = image(&[1, 3, 2]);
        let z = replay_zone(&bytes, BLOCK, layout()).unwrap();
        assert_eq!((z.last_commit, z.batches, z.records), (3, 3, 6));
        assert_eq!(z.end, bytes.len() as u64);
        assert_eq!(z.torn_tail, None);
        assert_eq!(z.state.file_count(), 6);
    }

    #[test]
    fn torn_last_batch_is_ignored_entirely() {
        let (bytes, starts) = image(&[2, 40]);
        let last = starts[1];
        assert!(bytes.len() - last > BLOCK, "the last batch spans blocks");
        // Keep only the first block of the last batch, as a torn write would.
        let mut torn = bytes[..last + BLOCK].to_vec();
        torn.resize(bytes.len(), 0);
        let z = replay_zone(&torn, BLOCK, layout()).unwrap();
        assert_eq!((z.last_commit, z.records), (1, 2));
        assert_eq!(z.torn_tail, Some(last as u64));
        assert_eq!(z.end, last as u64);
    }

    #[test]
    fn damage_followed_by_valid_frames_is_corruption() {
        let (mut bytes, starts) = image(&[1, 1, 1]);
        bytes[starts[1] + 12] ^= 0x40;
        match replay_zone(&bytes, BLOCK, layout()) {
            Err(ScanError::Corrupt { offset, .. }) => assert_eq!(offset, starts[1] as u64),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn damage_inside_the_last_batch_is_a_torn_tail() {
        let (bytes, starts) = image(&[1, 3]);
        let mut flipped = bytes.clone();
        // The first record of the last batch; its other records and commit stay intact.
        flipped[starts[1] + 12] ^= 0x40;
        let z = replay_zone(&flipped, BLOCK, layout()).unwrap();
        assert_eq!((z.last_commit, z.records), (1, 1));
        assert_eq!(z.torn_tail, Some(starts[1] as u64));
    }

    #[test]
    fn a_missing_batch_is_corruption() {
        let (bytes, starts) = image(&[1, 1, 1]);
        let mut holed = bytes[..starts[1]].to_vec();
        holed.extend_from_slice(&bytes[starts[2]..]);
        assert!(matches!(
            replay_zone(&holed, BLOCK, layout()),
            Err(ScanError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_zone_without_committed_snapshot_has_no_base() {
        let (bytes, _) = image(&[]);
        let mut cut = bytes.clone();
        cut[SUPERBLOCK_LEN + 20] ^= 1;
        assert!(matches!(
            replay_zone(&cut, BLOCK, layout()),
            Err(ScanError::NoBase { .. })
        ));
        assert!(matches!(
            replay_zone(&bytes[..SUPERBLOCK_LEN], BLOCK, layout()),
            Err(ScanError::NoBase { .. })
        ));
    }
}
