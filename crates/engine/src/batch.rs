//! Write batches: a group of puts and deletes applied atomically, in RocksDB's
//! `WriteBatch` representation (which is also the payload of a WAL record).
//!
//! ```text
//! sequence: u64 LE   (the sequence number of the first operation)
//! count:    u32 LE   (number of operations)
//! then `count` operations:
//!   tag 0x01 (put):    varint key length, key, varint value length, value
//!   tag 0x00 (delete): varint key length, key
//! ```
//!
//! Tags are the [`ValueKind`] codes. Lengths are LEB128 varints, byte for byte RocksDB's
//! varint32 for every length below 4 GiB. Operation `i` gets sequence number
//! `sequence + i`.

use crate::coding::{get_length_prefixed, put_length_prefixed, varint_len, DecodeError};
use crate::key::{SeqNo, ValueKind, MAX_SEQ};
use crate::{Error, Result};

/// Bytes of the sequence number and count that start every batch.
pub const HEADER_LEN: usize = 12;

const WHAT: &str = "write batch";

/// An ordered group of puts and deletes, applied atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    user_bytes: u64,
    /// The longest key of an operation (0 when empty).
    max_key_len: usize,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

/// One operation of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// Put or delete.
    pub kind: ValueKind,
    /// The user key.
    pub key: &'a [u8],
    /// The value (empty for a delete).
    pub value: &'a [u8],
}

/// The operations of a batch, in order (see [`WriteBatch::ops`]).
pub struct BatchOps<'a> {
    rest: &'a [u8],
    left: u32,
}

impl<'a> Iterator for BatchOps<'a> {
    type Item = BatchOp<'a>;

    fn next(&mut self) -> Option<BatchOp<'a>> {
        if self.left == 0 {
            return None;
        }
        // The representation was validated when the batch was built, so decoding cannot
        // fail here; stopping is the safe answer if it ever did.
        let (op, rest) = decode_op(self.rest, 0).ok()?;
        self.rest = rest;
        self.left -= 1;
        Some(op)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

impl WriteBatch {
    /// An empty batch with sequence number 0.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
            user_bytes: 0,
            max_key_len: 0,
        }
    }

    /// Adds a put of `key` = `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        // One reservation instead of a growth step per field.
        self.rep
            .reserve(op_encoded_len(ValueKind::Put, key.len(), value.len()));
        self.rep.push(ValueKind::Put as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.user_bytes += (key.len() + value.len()) as u64;
        self.max_key_len = self.max_key_len.max(key.len());
        self.bump_count(1);
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.rep.push(ValueKind::Delete as u8);
        put_length_prefixed(&mut self.rep, key);
        self.max_key_len = self.max_key_len.max(key.len());
        self.bump_count(1);
    }

    /// Removes every operation and the sequence number, keeping the allocation for reuse.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
        self.count = 0;
        self.user_bytes = 0;
        self.max_key_len = 0;
    }

    /// Number of operations.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Sets the sequence number of the first operation.
    pub fn set_sequence(&mut self, seq: SeqNo) {
        // `rep` always holds the header (every constructor writes it).
        if let Some(head) = self.rep.first_chunk_mut::<8>() {
            *head = seq.to_le_bytes();
        }
    }

    /// The sequence number of the first operation.
    pub fn sequence(&self) -> SeqNo {
        self.rep
            .first_chunk::<8>()
            .map_or(0, |b| u64::from_le_bytes(*b))
    }

    /// The encoded batch (what the WAL stores).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Decodes an encoded batch, validating all of it: the header, every tag and length,
    /// the count, no trailing bytes. Anything else is [`Error::Corruption`].
    pub fn from_data(data: Vec<u8>) -> Result<WriteBatch> {
        let Some((seq_bytes, rest)) = data.split_first_chunk::<8>() else {
            return Err(short_header(data.len()));
        };
        let Some((count_bytes, ops)) = rest.split_first_chunk::<4>() else {
            return Err(short_header(data.len()));
        };
        let sequence = u64::from_le_bytes(*seq_bytes);
        let declared = u32::from_le_bytes(*count_bytes);
        let (count, user_bytes, max_key_len) = validate_ops(ops)?;
        if count != u64::from(declared) {
            return Err(Error::corruption(
                WHAT,
                format!("header says {declared} operations, the batch holds {count}"),
            ));
        }
        // Operation `i` takes sequence number `sequence + i`, and internal keys hold 56-bit
        // sequence numbers: a batch whose numbers pass `MAX_SEQ` was not written by zkv,
        // and replaying it would overflow.
        let last = sequence.checked_add(u64::from(declared.saturating_sub(1)));
        if last.is_none_or(|last| last > MAX_SEQ) {
            return Err(Error::corruption(
                WHAT,
                format!(
                    "sequence number {sequence} with {declared} operations passes the largest \
                     sequence number {MAX_SEQ}"
                ),
            ));
        }
        Ok(WriteBatch {
            rep: data,
            count: declared,
            user_bytes,
            max_key_len,
        })
    }

    /// The operations in order.
    pub fn ops(&self) -> BatchOps<'_> {
        BatchOps {
            rest: self.rep.get(HEADER_LEN..).unwrap_or_default(),
            left: self.count,
        }
    }

    /// Σ (key + value) bytes of the puts: the user bytes written (a metric).
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes
    }

    /// The length of the longest key of an operation (0 for an empty batch).
    pub fn max_key_len(&self) -> usize {
        self.max_key_len
    }

    /// Appends the operations of `other` after this batch's (this sequence number stays).
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep
            .extend_from_slice(other.rep.get(HEADER_LEN..).unwrap_or_default());
        self.user_bytes += other.user_bytes;
        self.max_key_len = self.max_key_len.max(other.max_key_len);
        self.bump_count(other.count);
    }

    fn bump_count(&mut self, n: u32) {
        // A batch of 2^32 operations would need tens of GiB; saturating keeps it a
        // detectable count mismatch instead of an overflow.
        self.count = self.count.saturating_add(n);
        if let Some(count) = self.rep.get_mut(8..HEADER_LEN) {
            count.copy_from_slice(&self.count.to_le_bytes());
        }
    }
}

/// The bytes one operation takes in a batch (a delete has no value: `value_len` is
/// ignored).
pub fn op_encoded_len(kind: ValueKind, key_len: usize, value_len: usize) -> usize {
    let prefixed = |len: usize| varint_len(len as u64) as usize + len;
    match kind {
        ValueKind::Put | ValueKind::BlobIndex => 1 + prefixed(key_len) + prefixed(value_len),
        ValueKind::Delete => 1 + prefixed(key_len),
    }
}

/// A varint-prefixed slice; `at` is the offset of `data` in the batch, for messages.
fn get_slice(data: &[u8], at: usize) -> Result<(&[u8], &[u8])> {
    let mut pos = 0;
    match get_length_prefixed(data, &mut pos) {
        Ok(slice) => Ok((slice, data.get(pos..).unwrap_or_default())),
        Err(DecodeError::PastEnd { len, left }) => Err(Error::corruption(
            WHAT,
            format!("length {len} at offset {at} passes the end of the batch ({left} bytes left)"),
        )),
        Err(_) => Err(Error::corruption(
            WHAT,
            format!("bad length varint at offset {at}"),
        )),
    }
}

/// Decodes one operation; `at` is the offset of `data` in the batch, for messages.
fn decode_op(data: &[u8], at: usize) -> Result<(BatchOp<'_>, &[u8])> {
    let Some((&tag, rest)) = data.split_first() else {
        return Err(Error::corruption(
            WHAT,
            format!("missing operation at offset {at}"),
        ));
    };
    // A batch holds puts and deletes only: blob references exist in tables, never in a
    // write.
    let kind = ValueKind::from_code(tag)
        .filter(|k| *k != ValueKind::BlobIndex)
        .ok_or_else(|| Error::corruption(WHAT, format!("unknown tag {tag} at offset {at}")))?;
    let (key, rest) = get_slice(rest, at + 1)?;
    let (value, rest) = match kind {
        ValueKind::Delete => (&[][..], rest),
        _ => get_slice(rest, data.len() - rest.len() + at)?,
    };
    Ok((BatchOp { kind, key, value }, rest))
}

fn short_header(len: usize) -> Error {
    Error::corruption(
        WHAT,
        format!("{len} bytes, shorter than its {HEADER_LEN}-byte header"),
    )
}

/// Decodes every operation of `ops`, the bytes after the header: (count, user bytes).
/// The operations' count, user bytes and longest key, once every operation decodes.
fn validate_ops(ops: &[u8]) -> Result<(u64, u64, usize)> {
    let mut rest = ops;
    let (mut count, mut user_bytes, mut max_key_len) = (0u64, 0u64, 0usize);
    while !rest.is_empty() {
        let (op, next) = decode_op(rest, HEADER_LEN + ops.len() - rest.len())?;
        if op.kind == ValueKind::Put {
            user_bytes += (op.key.len() + op.value.len()) as u64;
        }
        max_key_len = max_key_len.max(op.key.len());
        count += 1;
        rest = next;
    }
    Ok((count, user_bytes, max_key_len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Op = (bool, Vec<u8>, Vec<u8>);

    fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
        let value = prop_oneof![
            4 => prop::collection::vec(any::<u8>(), 0..40),
            1 => prop::collection::vec(any::<u8>(), 100..20_000),
        ];
        let key = prop::collection::vec(any::<u8>(), 0..200);
        prop::collection::vec((any::<bool>(), key, value), 0..20)
    }

    fn build(ops: &[Op], seq: SeqNo) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.set_sequence(seq);
        for (is_put, key, value) in ops {
            if *is_put {
                b.put(key, value);
            } else {
                b.delete(key);
            }
        }
        b
    }

    fn model(ops: &[Op]) -> Vec<(ValueKind, Vec<u8>, Vec<u8>)> {
        ops.iter()
            .map(|(is_put, k, v)| match is_put {
                true => (ValueKind::Put, k.clone(), v.clone()),
                false => (ValueKind::Delete, k.clone(), Vec::new()),
            })
            .collect()
    }

    fn decoded(b: &WriteBatch) -> Vec<(ValueKind, Vec<u8>, Vec<u8>)> {
        b.ops()
            .map(|op| (op.kind, op.key.to_vec(), op.value.to_vec()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        // The last operation's sequence number must fit too: at most 20 operations.
        fn batches_round_trip(ops in ops_strategy(), seq in 0..=MAX_SEQ - 20) {
            let b = build(&ops, seq);
            prop_assert_eq!(b.count() as usize, ops.len());
            prop_assert_eq!(b.is_empty(), ops.is_empty());
            prop_assert_eq!(b.sequence(), seq);
            let puts = ops.iter().filter(|o| o.0).map(|o| (o.1.len() + o.2.len()) as u64);
            prop_assert_eq!(b.user_bytes(), puts.sum::<u64>());
            let longest = ops.iter().map(|o| o.1.len()).max().unwrap_or(0);
            prop_assert_eq!(b.max_key_len(), longest);
            prop_assert_eq!(decoded(&b), model(&ops));
            let back = WriteBatch::from_data(b.data().to_vec()).unwrap();
            prop_assert_eq!(&back, &b);
            let kind = |put: bool| if put { ValueKind::Put } else { ValueKind::Delete };
            let lens = ops.iter().map(|(p, k, v)| op_encoded_len(kind(*p), k.len(), v.len()));
            prop_assert_eq!(HEADER_LEN + lens.sum::<usize>(), b.data().len());
            let mut reused = build(&ops, 9);
            reused.clear();
            prop_assert_eq!(&reused, &WriteBatch::new());
        }

        #[test]
        fn append_concatenates(ops in ops_strategy(), split in any::<prop::sample::Index>(), seq in 0..1000u64) {
            let split = split.index(ops.len() + 1);
            let mut first = build(&ops[..split], seq);
            first.append(&build(&ops[split..], 77));
            prop_assert_eq!(&first, &build(&ops, seq));
        }

        #[test]
        fn any_truncation_is_corruption(ops in ops_strategy(), cut in any::<prop::sample::Index>()) {
            let b = build(&ops, 5);
            let cut = cut.index(b.data().len());
            let err = WriteBatch::from_data(b.data()[..cut].to_vec()).unwrap_err();
            prop_assert!(err.is_corruption(), "{}", err);
        }

        #[test]
        fn damaged_batches_decode_consistently_or_fail(
            ops in ops_strategy(),
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let b = build(&ops, 9);
            let mut data = b.data().to_vec();
            let at = at.index(data.len());
            data[at] ^= 1 << bit;
            // A flipped byte inside a key, value or the sequence is a different valid
            // batch (the WAL checksum catches those); the structure must never be misread.
            match WriteBatch::from_data(data) {
                Ok(back) => {
                    prop_assert_eq!(back.ops().count(), back.count() as usize);
                    let puts = back.ops().filter(|op| op.kind == ValueKind::Put);
                    let user: u64 = puts.map(|op| (op.key.len() + op.value.len()) as u64).sum();
                    prop_assert_eq!(back.user_bytes(), user);
                    let longest = back.ops().map(|op| op.key.len()).max().unwrap_or(0);
                    prop_assert_eq!(back.max_key_len(), longest);
                }
                Err(e) => prop_assert!(e.is_corruption(), "{}", e),
            }
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..100)) {
            if let Err(e) = WriteBatch::from_data(data) {
                prop_assert!(e.is_corruption(), "{}", e);
            }
        }
    }

    #[test]
    fn layout_matches_rocksdb() {
        let mut b = WriteBatch::new();
        b.set_sequence(0x0102);
        b.put(b"k", b"vv");
        b.delete(b"d");
        let expected = [
            0x02, 0x01, 0, 0, 0, 0, 0, 0, // sequence
            2, 0, 0, 0, // count
            1, 1, b'k', 2, b'v', b'v', // put
            0, 1, b'd', // delete
        ];
        assert_eq!(b.data(), &expected[..]);
        assert_eq!(b.user_bytes(), 3);
    }

    #[test]
    fn structural_damage_is_named() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let mut wrong_count = b.data().to_vec();
        wrong_count[8] = 2;
        let err = WriteBatch::from_data(wrong_count).unwrap_err();
        assert!(
            err.to_string().contains("header says 2 operations"),
            "{err}"
        );
        let mut bad_tag = b.data().to_vec();
        bad_tag[HEADER_LEN] = 7;
        let err = WriteBatch::from_data(bad_tag).unwrap_err();
        assert!(
            err.to_string().contains("unknown tag 7 at offset 12"),
            "{err}"
        );
        let mut long_varint = b.data()[..HEADER_LEN + 1].to_vec();
        long_varint.extend_from_slice(&[0xff; 11]);
        let err = WriteBatch::from_data(long_varint).unwrap_err();
        assert!(err.to_string().contains("bad length varint"), "{err}");
        let err = WriteBatch::from_data(vec![0; 5]).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    /// Found by the fuzzer (`fuzz/corpus/write_batch/regression-seq-overflow`): a batch
    /// whose sequence numbers pass `MAX_SEQ` decoded, and WAL replay's `sequence + i`
    /// overflowed.
    #[test]
    fn sequence_numbers_past_max_seq_are_corruption() {
        let batch = |seq: SeqNo, ops: usize| {
            let mut b = WriteBatch::new();
            b.set_sequence(seq);
            for _ in 0..ops {
                b.put(b"k", b"v");
            }
            WriteBatch::from_data(b.data().to_vec())
        };
        assert!(batch(MAX_SEQ, 1).is_ok());
        assert!(batch(MAX_SEQ - 2, 3).is_ok());
        assert!(batch(MAX_SEQ, 0).is_ok());
        for (seq, ops) in [
            (MAX_SEQ - 1, 3),
            (MAX_SEQ + 1, 0),
            (u64::MAX, 2),
            (u64::MAX, 1),
        ] {
            let err = batch(seq, ops).unwrap_err();
            assert!(err.is_corruption(), "{err}");
            assert!(err.to_string().contains("passes the largest"), "{err}");
        }
    }
}
