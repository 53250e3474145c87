//! Replaying one metadata zone: its snapshot batch, then every committed batch in order,
//! telling an interrupted last write (ignored) from damage (repaired from the batch's copy,
//! or an error).
//!
//! Since format version 3 every batch is written twice, back to back, and each commit frame
//! carries its batch's length (span). Replay applies the first intact copy of each batch and
//! passes over the other. Past a damaged copy it looks for the next intact commit frame: one
//! of the expected number whose span leads to a complete batch is the copy, and replay goes
//! on from it; one numbered later means both copies of a batch are lost (corruption); none
//! means the damage is the zone's tail (an interrupted write, or a copy of a batch already
//! applied).

use super::batch::LENGTH_WORD;
use super::codec::u32_at;
use super::record::{decode_frame, Commit, Frame, FrameError, Record};
use super::state::{FsState, ZoneLayout};

/// A zone replayed up to its last committed batch.
#[derive(Debug)]
pub(crate) struct ZoneReplay {
    pub state: FsState,
    pub last_commit: u64,
    /// Delta batches and records applied after the snapshot.
    pub batches: u64,
    pub records: u64,
    /// Offset just past the last committed batch or its copy (block aligned).
    pub end: u64,
    /// Where an interrupted last write starts, if the zone ends with one.
    pub torn_tail: Option<u64>,
    /// Damaged copies that replay read past, using the other copy: (offset, why).
    pub repaired: Vec<(u64, String)>,
}

/// Why a zone could not be replayed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// The snapshot batch after the superblock is missing, incomplete or unusable in both
    /// copies: this generation never became complete, and an older one may still be used.
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
    /// A cursor at offset `pos` of the zone.
    pub fn at(bytes: &'a [u8], block: usize, pos: usize) -> Cursor<'a> {
        Cursor { bytes, block, pos }
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
            match self.bytes.get(self.pos..).map(decode_frame) {
                Some(Ok((frame, len))) => {
                    let at = self.pos;
                    self.pos += len;
                    return Item::Frame { at, frame };
                }
                Some(Err(FrameError::Empty)) if !in_batch => self.pos += left,
                Some(Err(error)) => {
                    return Item::Bad {
                        at: self.pos,
                        error,
                    }
                }
                None => return Item::End,
            }
        }
    }
}

/// A batch whose commit frame checks: where it starts, its records with their offsets,
/// the commit, and the position right after the commit frame.
#[derive(Debug)]
struct Complete {
    start: usize,
    records: Vec<(usize, Record)>,
    commit: Commit,
    end: usize,
}

/// What starts at a position between batches.
#[derive(Debug)]
enum Parsed {
    Complete(Complete),
    /// Not a complete batch: damage, or a write cut short.
    Bad {
        at: usize,
        error: FrameError,
    },
    /// Nothing more is written.
    End,
}

/// Reads the batch starting at (or, past padding, after) `pos`.
fn parse_batch(bytes: &[u8], block: usize, pos: usize) -> Parsed {
    let mut cur = Cursor::at(bytes, block, pos);
    let mut records = Vec::new();
    let mut start = None;
    loop {
        match cur.next(start.is_some()) {
            Item::Frame { at, frame } => {
                let start = *start.get_or_insert(at);
                match frame {
                    Frame::Record(rec) => records.push((at, rec)),
                    Frame::Commit(commit) if commit.records as usize == records.len() => {
                        let end = cur.pos();
                        return Parsed::Complete(Complete {
                            start,
                            records,
                            commit,
                            end,
                        });
                    }
                    Frame::Commit(c) => {
                        let error = FrameError::CountMismatch {
                            counted: c.records,
                            found: records.len() as u32,
                        };
                        return Parsed::Bad { at: start, error };
                    }
                }
            }
            Item::Bad { at, error } => {
                return Parsed::Bad {
                    at: start.unwrap_or(at),
                    error,
                }
            }
            Item::End => {
                return match start {
                    None => Parsed::End,
                    Some(at) => Parsed::Bad {
                        at,
                        error: FrameError::Truncated {
                            need: bytes.len() as u64 + 1,
                            have: (bytes.len() - at) as u64,
                        },
                    },
                }
            }
        }
    }
}

/// Total bytes of a commit frame with and without its span (format 3 and 2).
const COMMIT_FRAME_LENS: [u32; 2] = [1 + 8 + 4 + 4, 1 + 8 + 4];

/// The commit frame at `pos`, if an intact one starts there. Checks the length word first,
/// so scanning every offset of a zone costs little.
fn commit_at(bytes: &[u8], pos: usize) -> Option<Commit> {
    let len = u32_at(bytes, pos)?;
    if !COMMIT_FRAME_LENS.contains(&len) {
        return None;
    }
    match decode_frame(bytes.get(pos..)?) {
        Ok((Frame::Commit(c), _)) => Some(c),
        _ => None,
    }
}

/// What lies past damage at `at`, for a replay whose last applied batch is `last`.
enum PastDamage {
    /// The complete copy of batch `last + 1`.
    Copy(Complete),
    /// An intact commit of a later batch: batch `last + 1` is lost.
    Later { offset: usize, seq: u64 },
    /// Nothing: the damage is the zone's tail.
    Nothing,
}

/// Looks past damage at `at` for the copy of the next batch: every intact commit frame
/// after it is a candidate, and its span says where its batch starts.
fn look_past_damage(bytes: &[u8], block: usize, at: usize, last: u64) -> PastDamage {
    let next = last.saturating_add(1);
    for pos in at + 1..bytes.len() {
        let Some(commit) = commit_at(bytes, pos) else {
            continue;
        };
        if commit.seq > next {
            return PastDamage::Later {
                offset: pos,
                seq: commit.seq,
            };
        }
        let start = commit.span.and_then(|s| pos.checked_sub(s as usize));
        let Some(start) = start.filter(|s| *s > at) else {
            continue; // an older batch's copy, or the damaged batch's own commit
        };
        if commit.seq != next {
            continue;
        }
        if let Parsed::Complete(c) = parse_batch(bytes, block, start) {
            if c.start == start && c.end > pos {
                return PastDamage::Copy(c);
            }
        }
    }
    PastDamage::Nothing
}

/// Replays the zone whose written bytes are `bytes`; its superblock (format `version`) has
/// been checked.
pub(crate) fn replay_zone(
    bytes: &[u8],
    block: usize,
    layout: ZoneLayout,
    version: u32,
) -> Result<ZoneReplay, ScanError> {
    let start = super::superblock::frames_start(version, block);
    let (base, repaired) = read_base(bytes, block, layout, start)?;
    let mut pos = base.end;
    let mut zone = ZoneReplay {
        state: base.state,
        last_commit: base.commit,
        batches: 0,
        records: 0,
        end: pos.next_multiple_of(block) as u64,
        torn_tail: None,
        repaired: repaired.into_iter().collect(),
    };
    loop {
        let batch = match parse_batch(bytes, block, pos) {
            Parsed::Complete(batch) => batch,
            Parsed::End => return Ok(zone),
            Parsed::Bad { at, error } => match zone.past_damage(bytes, block, at, error)? {
                Some(copy) => copy,
                None => return Ok(zone),
            },
        };
        pos = batch.end;
        zone.end = batch.end.next_multiple_of(block) as u64;
        zone.apply(batch)?;
    }
}

/// Reads the generation's base: a snapshot frame and a commit of exactly that record, from
/// its first copy at `start` or, when that is damaged, from its copy. Returns the state,
/// its commit number, the position after the base's commit, and the damage read past.
fn read_base(
    bytes: &[u8],
    block: usize,
    layout: ZoneLayout,
    start: usize,
) -> Result<(Base, Option<(u64, String)>), ScanError> {
    let first = match base_at(bytes, block, layout, start) {
        Ok(base) => return Ok((base, None)),
        Err(e) => e,
    };
    let copy = (start + 1..bytes.len()).find_map(|pos| {
        let commit = commit_at(bytes, pos).filter(|c| c.records == 1)?;
        let copy = pos.checked_sub(commit.span? as usize)?;
        (copy > start).then_some(())?;
        base_at(bytes, block, layout, copy).ok()
    });
    match (copy, first) {
        (Some(base), ScanError::NoBase { offset, reason }) => Ok((base, Some((offset, reason)))),
        (_, e) => Err(e),
    }
}

/// A generation's base as read: its state, commit number, and the position after its
/// commit frame.
struct Base {
    state: FsState,
    commit: u64,
    end: usize,
}

/// The base batch at `at`.
fn base_at(bytes: &[u8], block: usize, layout: ZoneLayout, at: usize) -> Result<Base, ScanError> {
    let no_base = |offset: usize, reason: String| ScanError::NoBase {
        offset: offset as u64,
        reason,
    };
    let mut cur = Cursor::at(bytes, block, at);
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
        .map_err(|e| no_base(at, format!("snapshot rejected: {e}")))?;
    match cur.next(true) {
        Item::Frame {
            frame: Frame::Commit(c),
            ..
        } if c.records == 1 => Ok(Base {
            state,
            commit: c.seq,
            end: cur.pos(),
        }),
        _ => Err(no_base(cur.pos(), "snapshot is not committed".into())),
    }
}

impl ZoneReplay {
    /// Damage at `at` where a batch should start: the batch's copy to go on with, or
    /// `None` when the damage is the zone's tail (recorded as the torn tail). A frame that
    /// checks but cannot be read, or a later batch past the damage, is corruption.
    fn past_damage(
        &mut self,
        bytes: &[u8],
        block: usize,
        at: usize,
        error: FrameError,
    ) -> Result<Option<Complete>, ScanError> {
        if !error.is_damage() {
            return Err(ScanError::Corrupt {
                offset: at as u64,
                reason: error.to_string(),
            });
        }
        match look_past_damage(bytes, block, at, self.last_commit) {
            PastDamage::Copy(copy) => {
                self.repaired.push((at as u64, error.to_string()));
                Ok(Some(copy))
            }
            PastDamage::Later { offset, seq } => Err(ScanError::Corrupt {
                offset: at as u64,
                reason: format!(
                    "{error}; batch {seq} follows at offset {offset}, after batch {}",
                    self.last_commit
                ),
            }),
            PastDamage::Nothing => {
                self.torn_tail = Some(at as u64);
                Ok(None)
            }
        }
    }

    /// Applies a complete batch numbered after the last one; passes over a copy of the last
    /// one (the same number). Any other number means a batch was lost or repeated.
    fn apply(&mut self, batch: Complete) -> Result<(), ScanError> {
        let Complete {
            start,
            records,
            commit: c,
            ..
        } = batch;
        let corrupt = |offset: usize, reason: String| ScanError::Corrupt {
            offset: offset as u64,
            reason,
        };
        if c.seq == self.last_commit {
            return Ok(());
        }
        if Some(c.seq) != self.last_commit.checked_add(1) {
            let last = self.last_commit;
            return Err(corrupt(
                start,
                format!("batch {} follows batch {last}", c.seq),
            ));
        }
        for (offset, rec) in records {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::batch::Batch;
    use crate::meta::state::{FileId, FileKind, FileMeta};
    use crate::meta::superblock::{Superblock, SUPERBLOCK_LEN};
    use zkv_zns::Geometry;

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

    /// A zone image in format `version`: base batch, then one batch per entry of `batches`
    /// (records per batch). Returns the bytes and where each batch's copies start.
    fn image(version: u32, batches: &[usize]) -> (Vec<u8>, Vec<Vec<usize>>) {
        let geo = Geometry::new(8, 1 << 16).with_block_size(BLOCK as u32);
        let sb = Superblock::new(&geo, 2, 0, 1);
        let seal = |b: &mut Batch, seq| {
            if version >= 3 {
                b.seal(seq).unwrap();
            } else {
                b.seal_format_2(seq).unwrap();
            }
        };
        let mut base = Batch::new(BLOCK);
        if version >= 3 {
            base.push_superblock(&sb);
            base.push_superblock(&sb);
        } else {
            base.push_superblock_format_2(&sb);
        }
        base.push_snapshot(&FsState::new(layout())).unwrap();
        seal(&mut base, 0);
        let mut bytes = base.bytes().to_vec();
        let mut id = 1;
        for (n, count) in batches.iter().enumerate() {
            let mut b = Batch::new(BLOCK);
            for _ in 0..*count {
                b.push_record(&create(id)).unwrap();
                id += 1;
            }
            seal(&mut b, n as u64 + 1);
            bytes.extend_from_slice(b.bytes());
        }
        (bytes.clone(), copy_starts(&bytes, version))
    }

    /// Where the first frame of each copy of each delta batch is.
    fn copy_starts(bytes: &[u8], version: u32) -> Vec<Vec<usize>> {
        let copies = if version >= 3 { 2 } else { 1 };
        let mut cur = Cursor::at(bytes, BLOCK, crate::meta::frames_start(version, BLOCK));
        let mut groups = Vec::new();
        let mut first = None;
        while let Item::Frame { at, frame } = cur.next(first.is_some()) {
            first.get_or_insert(at);
            if matches!(frame, Frame::Commit(_)) {
                groups.extend(first.take());
            }
        }
        groups[copies..]
            .chunks(copies)
            .map(<[usize]>::to_vec)
            .collect()
    }

    fn replay(version: u32, bytes: &[u8]) -> Result<ZoneReplay, ScanError> {
        replay_zone(bytes, BLOCK, layout(), version)
    }

    #[test]
    fn replays_every_committed_batch_once() {
        for version in [2, 3] {
            let (bytes, _) = image(version, &[1, 3, 2]);
            let z = replay(version, &bytes).unwrap();
            assert_eq!((z.last_commit, z.batches, z.records), (3, 3, 6));
            assert_eq!(z.end, bytes.len() as u64);
            assert_eq!((z.torn_tail, z.repaired.len()), (None, 0));
            assert_eq!(z.state.file_count(), 6);
        }
    }

    #[test]
    fn torn_last_batch_is_ignored_entirely() {
        for version in [2, 3] {
            let (bytes, starts) = image(version, &[2, 40]);
            let last = starts[1][0];
            // Keep only the first block of the last batch, as a torn write would.
            let mut torn = bytes[..last + BLOCK].to_vec();
            torn.resize(bytes.len(), 0);
            let z = replay(version, &torn).unwrap();
            assert_eq!((z.last_commit, z.records), (1, 2));
            assert_eq!(z.torn_tail, Some(last as u64));
            assert_eq!(z.end, last as u64);
        }
    }

    #[test]
    fn a_write_torn_inside_the_second_copy_keeps_the_batch() {
        let (bytes, starts) = image(3, &[2, 40]);
        let copy = starts[1][1];
        let cut = (copy + 1).next_multiple_of(BLOCK);
        let z = replay(3, &bytes[..cut]).unwrap();
        assert_eq!((z.last_commit, z.records), (2, 42));
        assert_eq!(z.torn_tail, Some(copy as u64));
    }

    #[test]
    fn damage_in_one_copy_is_repaired_from_the_other() {
        for (batch, copy) in [(1, 0), (1, 1), (2, 0), (2, 1)] {
            let (mut bytes, starts) = image(3, &[1, 3, 2]);
            let at = starts[batch][copy] + 12;
            bytes[at] ^= 0x40;
            let z = replay(3, &bytes).unwrap();
            assert_eq!(
                (z.last_commit, z.records),
                (3, 6),
                "batch {batch} copy {copy}"
            );
            let at = starts[batch][copy] as u64;
            if (batch, copy) == (2, 1) {
                // The last copy of the last batch: the zone's tail, nothing lost either way.
                assert_eq!((z.torn_tail, z.repaired.len()), (Some(at), 0));
            } else {
                assert_eq!(z.torn_tail, None);
                assert_eq!(z.repaired.len(), 1);
                assert_eq!(z.repaired[0].0, at);
            }
        }
    }

    #[test]
    fn damage_in_both_copies_followed_by_a_batch_is_corruption() {
        for version in [2, 3] {
            let (mut bytes, starts) = image(version, &[1, 1, 1]);
            for at in &starts[1] {
                bytes[at + 12] ^= 0x40;
            }
            match replay(version, &bytes) {
                Err(ScanError::Corrupt { offset, .. }) => {
                    assert_eq!(offset, starts[1][0] as u64)
                }
                other => panic!("expected corruption, got {other:?}"),
            }
        }
    }

    #[test]
    fn damage_inside_the_only_copy_of_the_last_batch_is_a_torn_tail() {
        let (bytes, starts) = image(2, &[1, 3]);
        let mut flipped = bytes.clone();
        // The first record of the last batch; its other records and commit stay intact.
        flipped[starts[1][0] + 12] ^= 0x40;
        let z = replay(2, &flipped).unwrap();
        assert_eq!((z.last_commit, z.records), (1, 1));
        assert_eq!(z.torn_tail, Some(starts[1][0] as u64));
    }

    #[test]
    fn a_missing_batch_is_corruption() {
        for version in [2, 3] {
            let (bytes, starts) = image(version, &[1, 1, 1]);
            let mut holed = bytes[..starts[1][0]].to_vec();
            holed.extend_from_slice(&bytes[starts[2][0]..]);
            assert!(matches!(
                replay(version, &holed),
                Err(ScanError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn a_base_is_read_from_its_copy_and_missing_only_when_both_are_damaged() {
        let (bytes, _) = image(3, &[1]);
        let first = 2 * BLOCK;
        let mut one = bytes.clone();
        one[first + 20] ^= 1;
        let z = replay(3, &one).unwrap();
        assert_eq!((z.last_commit, z.records, z.repaired.len()), (1, 1, 1));

        // The copy starts after the first copy's commit frame.
        let copy = match parse_batch(&bytes, BLOCK, first) {
            Parsed::Complete(c) => c.end,
            other => panic!("{other:?}"),
        };
        let mut both = one.clone();
        both[copy + 20] ^= 1;
        assert!(matches!(replay(3, &both), Err(ScanError::NoBase { .. })));

        let (v2, _) = image(2, &[]);
        let mut cut = v2.clone();
        cut[SUPERBLOCK_LEN + 20] ^= 1;
        assert!(matches!(replay(2, &cut), Err(ScanError::NoBase { .. })));
        assert!(matches!(
            replay(2, &v2[..SUPERBLOCK_LEN]),
            Err(ScanError::NoBase { .. })
        ));
    }
}
