//! Internal keys: a user key followed by an 8-byte trailer `(seq << 8) | kind`, little
//! endian, as RocksDB lays them out.
//!
//! Order: user keys bytewise ascending; for equal user keys, the trailer descending, so the
//! newest entry of a key comes first and a seek to `(key, snapshot)` lands on the newest
//! entry visible at that snapshot.

use std::cmp::Ordering;

/// A sequence number: the order of writes. Only 56 bits are stored.
pub type SeqNo = u64;

/// The largest sequence number that fits the trailer.
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

/// Length of the trailer that follows the user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry says about its key (RocksDB's codes: deletion 0, value 1, blob index
/// 0x11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// A tombstone: the key has no value as of this entry.
    Delete = 0,
    /// The entry's value is the key's value.
    Put = 1,
    /// The value lives in a blob file; the entry's value is the encoded
    /// [`BlobIndex`](crate::blob::BlobIndex) that finds it.
    BlobIndex = 0x11,
}

impl ValueKind {
    /// The largest kind: a seek key with it sorts before every entry of the same sequence.
    pub const FOR_SEEK: ValueKind = ValueKind::BlobIndex;

    /// The kind stored as `code` in a trailer; `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<ValueKind> {
        match code {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            0x11 => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }

    /// Whether the entry gives its key a value (inline or in a blob file).
    pub fn is_value(self) -> bool {
        self != ValueKind::Delete
    }
}

/// A decoded internal key borrowing its user key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The key as the user wrote it.
    pub user_key: &'a [u8],
    /// The sequence number of the write.
    pub seq: SeqNo,
    /// What the entry says about the key.
    pub kind: ValueKind,
}

/// Packs a sequence number and a kind into a trailer value.
pub fn pack_trailer(seq: SeqNo, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | kind as u64
}

/// Appends the internal key `(user_key, seq, kind)` to `out`.
pub fn append_internal_key(out: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueKind) {
    out.extend_from_slice(user_key);
    out.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// The internal key `(user_key, seq, kind)`.
pub fn internal_key(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
    let mut out = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut out, user_key, seq, kind);
    out
}

/// The key to seek to for the newest entry of `user_key` visible at `snapshot`.
pub fn seek_key(user_key: &[u8], snapshot: SeqNo) -> Vec<u8> {
    internal_key(user_key, snapshot, ValueKind::FOR_SEEK)
}

/// Splits an internal key; `None` if it is too short or its kind is unknown.
pub fn parse(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    let split = ikey.len().checked_sub(TRAILER_LEN)?;
    let (user_key, trailer) = ikey.split_at(split);
    let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
    let kind = ValueKind::from_code((trailer & 0xff) as u8)?;
    Some(ParsedKey {
        user_key,
        seq: trailer >> 8,
        kind,
    })
}

/// The user key of an internal key (the whole slice if it is too short to hold a trailer;
/// callers that need validation use [`parse`]).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    ikey.split_at_checked(ikey.len().saturating_sub(TRAILER_LEN))
        .map_or(ikey, |(user, _)| user)
}

fn trailer(ikey: &[u8]) -> u64 {
    if let Some(tail) = ikey.last_chunk::<TRAILER_LEN>() {
        return u64::from_le_bytes(*tail);
    }
    // Too short for a trailer: the whole key, zero-padded.
    let mut buf = [0u8; TRAILER_LEN];
    buf.iter_mut().zip(ikey).for_each(|(b, k)| *b = *k);
    u64::from_le_bytes(buf)
}

/// The order of internal keys: user key ascending, then sequence (and kind) descending.
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    user_key(a)
        .cmp(user_key(b))
        .then_with(|| trailer(b).cmp(&trailer(a)))
}

/// An owned internal key ordered by [`compare`] (for ordered maps and sorting).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InternalKey(pub Vec<u8>);

impl InternalKey {
    /// The internal key `(user_key, seq, kind)`.
    pub fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> InternalKey {
        InternalKey(internal_key(user_key, seq, kind))
    }

    /// The user key, without the trailer.
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }

    /// The encoded key: user key followed by the 8-byte trailer.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_entry_of_a_key_sorts_first() {
        let old = internal_key(b"k", 5, ValueKind::Put);
        let new = internal_key(b"k", 9, ValueKind::Delete);
        assert_eq!(compare(&new, &old), Ordering::Less);
        assert_eq!(
            compare(&internal_key(b"a", 1, ValueKind::Put), &new),
            Ordering::Less
        );
        // A prefix sorts before its extension whatever the sequence numbers.
        let short = internal_key(b"k", 1, ValueKind::Put);
        let long = internal_key(b"k\0", 100, ValueKind::Put);
        assert_eq!(compare(&short, &long), Ordering::Less);
    }

    #[test]
    fn seek_key_lands_on_newest_visible_entry() {
        let mut keys = [
            InternalKey::new(b"k", 3, ValueKind::Put),
            InternalKey::new(b"k", 7, ValueKind::Put),
            InternalKey::new(b"k", 5, ValueKind::Delete),
        ];
        keys.sort();
        let target = InternalKey(seek_key(b"k", 6));
        let first = keys.iter().find(|k| **k >= target);
        assert_eq!(first.and_then(|k| parse(&k.0)).map(|p| p.seq), Some(5));
    }

    #[test]
    fn parse_round_trips_and_rejects_garbage() {
        let k = internal_key(b"user", MAX_SEQ, ValueKind::Delete);
        let p = parse(&k);
        assert_eq!(
            p,
            Some(ParsedKey {
                user_key: b"user",
                seq: MAX_SEQ,
                kind: ValueKind::Delete
            })
        );
        assert_eq!(parse(b"short"), None);
        let mut bad = internal_key(b"x", 1, ValueKind::Put);
        bad[1] = 7;
        assert_eq!(parse(&bad), None);
    }
}
