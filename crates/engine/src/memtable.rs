//! The memtable: recent writes in a concurrent skiplist ordered by internal key.
//!
//! Entries are only ever added (never changed or removed), so readers and iterators need no
//! lock; adds from several threads may run at once.
//!
//! # Layout
//!
//! The skiplist ([`arenaskiplist`]) keeps its nodes, their internal keys and values in an
//! arena of large chunks, as RocksDB's `InlineSkipList` does: an add is one bump of the
//! arena's offset instead of two heap allocations, and dropping a memtable frees a few
//! chunks instead of every entry. The memtable keeps the splice of the last add (the nodes
//! around it at every level), so an add just after the previous one (sequential keys, the
//! runs of a batch) starts from there instead of from the top. The splice is only used by
//! an add that runs alone and finds no other add since the one that left it (see
//! [`Splice`]); adds that run at once search from the top.
//!
//! A value too large for a chunk's quarter, or one that no longer fits the arena, is kept
//! out of line (one shared allocation in a side table): its node records the value's place
//! in the table instead of the bytes.
//!
//! # When it is full
//!
//! [`Memtable::is_full`] is what the write path asks after each write to decide a flush,
//! and it fixes how much data an L0 file receives, so it answers as RocksDB would: the
//! memtable records where RocksDB's arena would have put each entry's node and applies
//! RocksDB's rule on that ([`crate::arena_model`]). The model is deterministic (node
//! heights come from the sequence numbers), so the same writes flush at the same points.
//! The arena this crate actually uses is laid out differently, which only matters for the
//! process's memory footprint, not for the LSM shape.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use arenaskiplist::{Arena, EntryRef, Error as ListError, Inserter, Iter, SkipList};

use crate::arena_model::{self, ArenaModel};
use crate::coding::varint_len;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind, MAX_SEQ, TRAILER_LEN};
use crate::Result;

/// The arena's chunk size. Chunks are allocated zeroed and large enough to be mapped
/// fresh, so the part of a chunk no entry reached takes no resident memory.
const CHUNK: usize = 64 << 20;

/// The largest key plus value kept in the arena; a larger value is kept out of line.
const INLINE_MAX: usize = CHUNK / 4;

/// The largest user key a memtable takes (its node, with the key, must fit one chunk).
pub const MAX_KEY_LEN: usize = INLINE_MAX;

/// The most a memtable of `write_buffer_size` holds when it becomes full, as
/// [`Memtable::approximate_memory_usage`] counts it, unless its last entry is larger than a
/// quarter of an arena block: like RocksDB's, a memtable fills past the buffer size by up to
/// 0.6 of an arena block plus the block its last entry opened (see [`crate::arena_model`]).
pub fn full_size_bound(write_buffer_size: u64) -> u64 {
    write_buffer_size.saturating_add(2 * arena_model::block_size(write_buffer_size))
}

/// The splice of the last add, and the number of entries the list held after it: if the
/// list holds more, another add ran since, and the splice may not bracket the next key at
/// every level (the list trusts a splice that brackets the key at any level, so a stale one
/// could misplace the entry).
#[derive(Default)]
struct Splice {
    after: usize,
    inner: Inserter,
    /// The internal key being added (kept to spare an allocation per add).
    ikey: Vec<u8>,
}

// SAFETY: the splice's pointers name nodes of the one memtable whose lock holds it; those
// nodes live in its arena for as long as the memtable, and the splice is only read or
// written by an add that holds that lock for writing.
unsafe impl Send for Splice {}
// SAFETY: as for `Send`: no shared access reads the pointers.
unsafe impl Sync for Splice {}

/// Why [`Memtable::add`] added nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AddError {
    /// The memtable holds the entry `(key, seq, kind)` already: sequence numbers are unique
    /// per operation, so a repeated one means two writes were given the same numbers.
    #[error("the memtable holds this key and sequence number already")]
    Exists,
    /// The arena cannot take the entry's node (a key above [`MAX_KEY_LEN`], or about
    /// 4 GiB of entries in one memtable).
    #[error("the memtable's arena has no room for the entry")]
    Full,
}

/// A concurrent, append-only sorted map of internal key → value.
pub struct Memtable {
    list: SkipList,
    /// Held for writing by an add that uses the splice, for reading by adds that run at
    /// once (and search from the top): a splice add never runs beside another add.
    splice: RwLock<Splice>,
    /// Values kept out of line; an entry's version `i + 1` names `large[i]`.
    large: Mutex<Vec<Arc<[u8]>>>,
    /// The largest sequence number added: an add above it cannot repeat an entry.
    max_seq: AtomicU64,
    entries: AtomicU64,
    deletions: AtomicU64,
    /// Where RocksDB's arena would hold the entries: decides when the memtable is full.
    arena: ArenaModel,
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable::new()
    }
}

/// The bytes of an entry encoded as RocksDB's memtable encodes it: varint internal key
/// length, internal key, varint value length, value.
fn encoded_len(user_key_len: usize, value_len: usize) -> u64 {
    let ikey = (user_key_len + TRAILER_LEN) as u64;
    let value = value_len as u64;
    varint_len(ikey) + ikey + varint_len(value) + value
}

impl Memtable {
    /// An empty memtable, full at the default write buffer size (64 MiB).
    pub fn new() -> Self {
        Memtable::with_write_buffer_size(crate::options::DEFAULT_WRITE_BUFFER_SIZE)
    }

    /// An empty memtable, full when RocksDB's memtable of `write_buffer_size` would be.
    pub fn with_write_buffer_size(write_buffer_size: u64) -> Self {
        Memtable {
            list: SkipList::with_comparator(Arc::new(Arena::with_chunk_size(CHUNK)), key::compare),
            splice: RwLock::new(Splice::default()),
            large: Mutex::new(Vec::new()),
            max_seq: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            deletions: AtomicU64::new(0),
            arena: ArenaModel::new(write_buffer_size),
        }
    }

    /// Adds the entry `(key, seq, kind) → value` (a deletion carries an empty value).
    /// Safe to call from several threads at once. Returns false, adding nothing, if the
    /// memtable holds the entry `(key, seq, kind)` already, or cannot hold it (see
    /// [`Memtable::try_add`]). `seq` is at most [`MAX_SEQ`] (larger is clamped).
    pub fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) -> bool {
        self.try_add(seq, kind, key, value).is_ok()
    }

    /// [`Memtable::add`], saying why nothing was added.
    pub fn try_add(
        &self,
        seq: SeqNo,
        kind: ValueKind,
        key: &[u8],
        value: &[u8],
    ) -> std::result::Result<(), AddError> {
        let seq = seq.min(MAX_SEQ);
        match self.splice.try_write() {
            Ok(mut guard) => {
                let splice = &mut *guard;
                if splice.after != self.list.len() {
                    splice.inner = Inserter::new();
                }
                splice.ikey.clear();
                key::append_internal_key(&mut splice.ikey, key, seq, kind);
                self.insert(seq, &splice.ikey, value, &mut splice.inner)?;
                splice.after = self.list.len();
            }
            Err(_) => {
                let _shared = self.splice.read().unwrap_or_else(PoisonError::into_inner);
                let ikey = key::internal_key(key, seq, kind);
                self.insert(seq, &ikey, value, &mut Inserter::new())?;
            }
        }
        self.entries.fetch_add(1, Ordering::Relaxed);
        if kind == ValueKind::Delete {
            self.deletions.fetch_add(1, Ordering::Relaxed);
        }
        self.arena.allocate(arena_model::node_bytes(
            seq,
            encoded_len(key.len(), value.len()),
        ));
        Ok(())
    }

    /// Puts `ikey → value` in the list: in the arena if it fits, else out of line.
    fn insert(
        &self,
        seq: SeqNo,
        ikey: &[u8],
        value: &[u8],
        splice: &mut Inserter,
    ) -> std::result::Result<(), AddError> {
        // The list finds a repeated entry only when it searches from the top, not when a
        // splice places the add; a number above every one added cannot be a repeat, and
        // the single writer adds in increasing order, so only the rest is looked up.
        let fresh = self.max_seq.fetch_max(seq, Ordering::AcqRel) < seq;
        if !fresh && self.holds(ikey) {
            return Err(AddError::Exists);
        }
        if ikey.len() + value.len() <= INLINE_MAX {
            match self.list.insert_with_inserter(ikey, value, splice) {
                Ok(()) => return Ok(()),
                Err(ListError::RecordExists) => return Err(AddError::Exists),
                Err(ListError::ArenaFull) => {}
            }
        }
        let version = {
            let mut large = self.large.lock().unwrap_or_else(PoisonError::into_inner);
            large.push(Arc::from(value));
            large.len() as u64
        };
        match self
            .list
            .insert_with_version_and_inserter(ikey, version, &[], splice)
        {
            Ok(()) => Ok(()),
            Err(ListError::RecordExists) => Err(AddError::Exists),
            Err(ListError::ArenaFull) => Err(AddError::Full),
        }
    }

    /// Whether the list holds `ikey` (in either form).
    fn holds(&self, ikey: &[u8]) -> bool {
        let mut it = self.list.iter();
        it.seek_ge(ikey);
        it.key() == Some(ikey)
    }

    /// `f` of an entry's value: its arena bytes, or the out-of-line value its version names.
    fn with_value<R>(&self, entry: &EntryRef<'_>, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match entry.version() {
            0 => Some(f(entry.value())),
            v => self.large_value(v).map(|large| f(&large)),
        }
    }

    /// The out-of-line value that version `version` names (none for version 0: in the arena).
    fn large_value(&self, version: u64) -> Option<Arc<[u8]>> {
        let i = usize::try_from(version.checked_sub(1)?).ok()?;
        let large = self.large.lock().unwrap_or_else(PoisonError::into_inner);
        large.get(i).cloned()
    }

    /// The newest entry of `user_key` with a sequence number `<= snapshot`: its kind and
    /// value, or `None` if the memtable holds no such entry.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, Vec<u8>)> {
        let target = key::seek_key(user_key, snapshot.min(MAX_SEQ));
        let mut it = self.list.iter();
        it.seek_ge(&target);
        let entry = it.current()?;
        let parsed = key::parse(entry.key())?;
        if parsed.user_key != user_key {
            return None;
        }
        Some((parsed.kind, self.with_value(&entry, <[u8]>::to_vec)?))
    }

    /// The bytes RocksDB's memtable would use for the entries so far (its arena's blocks,
    /// less what is unused at the end of the current one; monotone).
    pub fn approximate_memory_usage(&self) -> u64 {
        self.arena.memory_usage()
    }

    /// Whether RocksDB would flush this memtable now (see the module doc).
    pub fn is_full(&self) -> bool {
        self.arena.is_full()
    }

    /// Entries added (puts and deletions).
    pub fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// Deletions added.
    pub fn deletions(&self) -> u64 {
        self.deletions.load(Ordering::Relaxed)
    }

    /// The puts whose value has at least `min` bytes, as (user key length, value length):
    /// the values a flush separating from `min` bytes on moves to blob files.
    pub fn large_puts(&self, min: u64) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.list.iter().filter_map(move |e| {
            let kind = key::parse(e.key())?.kind;
            let value = self.with_value(&e, <[u8]>::len)?;
            let large = kind == ValueKind::Put && value as u64 >= min;
            large.then(|| (e.key().len() - TRAILER_LEN, value))
        })
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// An iterator over the entries in internal-key order. It keeps the memtable alive and
    /// sees entries added after its creation when it reaches their position.
    pub fn iter(self: &Arc<Self>) -> MemIter {
        // SAFETY: the cursor borrows the skiplist of the memtable `mem` points to, which
        // lives in the `Arc`'s heap allocation: it does not move, and it outlives the
        // cursor, which is declared before `mem` in `MemIter` and so dropped first. The
        // `'static` lifetime never leaves `MemIter`: `key` and `value` lend their bytes
        // for as long as `&self`, and a memtable never removes entries.
        let cursor = unsafe { std::mem::transmute::<Iter<'_>, Iter<'static>>(self.list.iter()) };
        MemIter {
            cursor,
            large: None,
            mem: Arc::clone(self),
        }
    }
}

/// A cursor over a memtable (see [`Memtable::iter`]). It holds the skiplist's node of the
/// current entry, so `next` and `prev` follow the list's links.
pub struct MemIter {
    // Declared before `mem`, so dropped before it: it borrows `mem`'s skiplist.
    cursor: Iter<'static>,
    /// The current entry's value when it is kept out of line.
    large: Option<Arc<[u8]>>,
    mem: Arc<Memtable>,
}

// SAFETY: the cursor holds a shared reference to the skiplist (which is `Sync`) and a raw
// pointer to one of its nodes, which it only reads through that skiplist, as any thread
// holding `&SkipList` may; the skiplist outlives the cursor (see `Memtable::iter`).
unsafe impl Send for MemIter {}

impl MemIter {
    /// Fetches the current entry's out-of-line value, if it has one.
    fn settle(&mut self) {
        self.large = self.cursor.version().and_then(|v| self.mem.large_value(v));
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.cursor.is_valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.cursor.first();
        self.settle();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.cursor.seek_ge(target);
        self.settle();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.cursor.advance();
        self.settle();
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        Iter::last(&mut self.cursor);
        self.settle();
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        self.cursor.prev();
        self.settle();
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        // The last entry at or before `target`: the first at or after it, or the one
        // before that.
        self.cursor.seek_ge(target);
        match self.cursor.key() {
            Some(k) if k == target => {}
            Some(_) => self.cursor.prev(),
            None => Iter::last(&mut self.cursor),
        }
        self.settle();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.cursor.key().unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        match &self.large {
            Some(v) => v,
            None => self.cursor.value().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::thread;

    use super::*;
    use crate::key::InternalKey;
    use proptest::prelude::*;

    #[test]
    fn large_puts_are_the_puts_of_large_values() {
        let m = Memtable::new();
        m.add(1, ValueKind::Put, b"a", &[1; 10]);
        m.add(2, ValueKind::Put, b"bb", &[2; 100]);
        m.add(3, ValueKind::Delete, b"ccc", b"");
        m.add(4, ValueKind::Put, b"bb", &[3; 50]);
        let large: Vec<_> = m.large_puts(50).collect();
        assert_eq!(large, [(2, 50), (2, 100)]);
        assert_eq!(m.large_puts(0).count(), 3);
    }

    /// (user key, put?, value) written with sequence numbers 1, 2, ...
    type Op = (Vec<u8>, bool, Vec<u8>);

    fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
        // Few distinct keys, so keys get many versions; prefixes of each other included.
        let key = prop::sample::select(vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"ab".to_vec(),
            b"b".to_vec(),
            b"zz".to_vec(),
        ]);
        let value = prop::collection::vec(any::<u8>(), 0..20);
        prop::collection::vec((key, any::<bool>(), value), 0..80)
    }

    type Model = BTreeMap<InternalKey, Vec<u8>>;

    fn fill(ops: &[Op]) -> (Arc<Memtable>, Model) {
        let mem = Arc::new(Memtable::new());
        let mut model = Model::new();
        for (i, (key, is_put, value)) in ops.iter().enumerate() {
            let (kind, value) = match is_put {
                true => (ValueKind::Put, value.clone()),
                false => (ValueKind::Delete, Vec::new()),
            };
            let before = mem.approximate_memory_usage();
            mem.add(i as u64 + 1, kind, key, &value);
            assert!(mem.approximate_memory_usage() > before);
            model.insert(InternalKey::new(key, i as u64 + 1, kind), value);
        }
        (mem, model)
    }

    fn model_get(model: &Model, key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, Vec<u8>)> {
        model
            .iter()
            .filter_map(|(k, v)| Some((key::parse(k.as_bytes())?, v)))
            .filter(|(p, _)| p.user_key == key && p.seq <= snapshot)
            .max_by_key(|(p, _)| p.seq)
            .map(|(p, v)| (p.kind, v.clone()))
    }

    fn collect(it: &mut MemIter, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        out
    }

    fn model_from(model: &Model, target: &InternalKey, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        model
            .range(target..)
            .take(limit)
            .map(|(k, v)| (k.0.clone(), v.clone()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn agrees_with_a_model(
            ops in ops_strategy(),
            probes in prop::collection::vec((0usize..6, 0u64..90), 1..20),
        ) {
            let (mem, model) = fill(&ops);
            prop_assert_eq!(mem.entries() as usize, ops.len());
            prop_assert_eq!(mem.deletions() as usize, ops.iter().filter(|o| !o.1).count());
            prop_assert_eq!(mem.is_empty(), ops.is_empty());
            let keys: [&[u8]; 6] = [b"", b"a", b"a\0", b"ab", b"b", b"c"];
            for &(k, snapshot) in &probes {
                prop_assert_eq!(mem.get(keys[k], snapshot), model_get(&model, keys[k], snapshot));
            }
            let mut it = mem.iter();
            prop_assert!(!it.valid());
            it.seek_to_first().unwrap();
            let all: Vec<_> = model.iter().map(|(k, v)| (k.0.clone(), v.clone())).collect();
            prop_assert_eq!(collect(&mut it, usize::MAX), all.clone());
            for &(k, snapshot) in &probes {
                let target = InternalKey(key::seek_key(keys[k], snapshot));
                it.seek(target.as_bytes()).unwrap();
                prop_assert_eq!(collect(&mut it, 5), model_from(&model, &target, 5));
                it.seek_for_prev(target.as_bytes()).unwrap();
                prop_assert_eq!(collect_back(&mut it, 5), model_back_from(&model, &target, 5));
            }
            it.seek_to_last().unwrap();
            let mut back = all.clone();
            back.reverse();
            prop_assert_eq!(collect_back(&mut it, usize::MAX), back);
        }
    }

    fn collect_back(it: &mut MemIter, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev().unwrap();
        }
        out
    }

    fn model_back_from(
        model: &Model,
        target: &InternalKey,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        model
            .range(..=target)
            .rev()
            .take(limit)
            .map(|(k, v)| (k.0.clone(), v.clone()))
            .collect()
    }

    #[test]
    fn get_sees_only_entries_at_or_below_the_snapshot() {
        let mem = Memtable::new();
        mem.add(5, ValueKind::Put, b"k", b"v5");
        mem.add(8, ValueKind::Delete, b"k", b"");
        mem.add(9, ValueKind::Put, b"k\0", b"other");
        assert_eq!(mem.get(b"k", 4), None);
        assert_eq!(mem.get(b"k", 5), Some((ValueKind::Put, b"v5".to_vec())));
        assert_eq!(mem.get(b"k", 7), Some((ValueKind::Put, b"v5".to_vec())));
        assert_eq!(mem.get(b"k", 8), Some((ValueKind::Delete, Vec::new())));
        assert_eq!(
            mem.get(b"k", u64::MAX),
            Some((ValueKind::Delete, Vec::new()))
        );
        assert_eq!(mem.get(b"j", u64::MAX), None);
    }

    #[test]
    fn a_repeated_key_and_sequence_number_is_refused_and_not_counted() {
        let mem = Memtable::new();
        assert!(mem.add(3, ValueKind::Put, b"k", b"first"));
        let usage = mem.approximate_memory_usage();
        assert!(!mem.add(3, ValueKind::Put, b"k", b"second"));
        assert_eq!(mem.get(b"k", 3), Some((ValueKind::Put, b"first".to_vec())));
        assert_eq!(mem.entries(), 1);
        assert_eq!(mem.approximate_memory_usage(), usage);
        // Another number of the same key, or the same number of another key, is added.
        assert!(mem.add(4, ValueKind::Put, b"k", b"v4"));
        assert!(mem.add(3, ValueKind::Put, b"j", b"v3"));
    }

    #[test]
    fn a_value_too_large_for_the_arena_is_kept_out_of_line() {
        let mem = Arc::new(Memtable::new());
        let big = vec![9u8; INLINE_MAX + 1];
        assert!(mem.add(1, ValueKind::Put, b"a", b"small"));
        assert!(mem.add(2, ValueKind::Put, b"b", &big));
        assert!(mem.add(3, ValueKind::Put, b"c", b"after"));
        assert_eq!(mem.get(b"b", 9), Some((ValueKind::Put, big.clone())));
        // Counted as if inline: the flush points do not depend on where a value is kept.
        let inline = Memtable::new();
        for (seq, key, value) in [
            (1, b"a", &b"small"[..]),
            (2, b"b", &big),
            (3, b"c", b"after"),
        ] {
            inline.arena.allocate(arena_model::node_bytes(
                seq,
                encoded_len(key.len(), value.len()),
            ));
        }
        assert_eq!(
            mem.approximate_memory_usage(),
            inline.approximate_memory_usage()
        );
        assert_eq!(mem.large_puts(6).collect::<Vec<_>>(), [(1, big.len())]);
        let mut it = mem.iter();
        it.seek_to_first().unwrap();
        let all = collect(&mut it, usize::MAX);
        let values: Vec<&[u8]> = all.iter().map(|(_, v)| v.as_slice()).collect();
        assert_eq!(values, [&b"small"[..], &big[..], &b"after"[..]]);
        it.seek_to_last().unwrap();
        it.prev().unwrap();
        assert_eq!(it.value(), &big[..]);
        // A repeat is refused in either form.
        assert!(!mem.add(2, ValueKind::Put, b"b", b"short"));
        assert!(!mem.add(1, ValueKind::Put, b"a", &big));
        assert_eq!(mem.entries(), 3);
    }

    #[test]
    fn a_repeat_just_after_the_previous_add_is_refused() {
        // The splice of the add of "a" ends at the planted "b", so the list itself would
        // place the repeat of "b" without seeing it.
        let mem = Memtable::new();
        assert!(mem.add(7, ValueKind::Put, b"b", b"planted"));
        assert!(mem.add(6, ValueKind::Put, b"a", b"1"));
        assert_eq!(
            mem.try_add(7, ValueKind::Put, b"b", b"again"),
            Err(AddError::Exists)
        );
        assert!(mem.add(8, ValueKind::Put, b"b", b"newer"));
        assert_eq!(
            mem.get(b"b", 7),
            Some((ValueKind::Put, b"planted".to_vec()))
        );
        assert_eq!(mem.entries(), 3);
    }

    #[test]
    fn a_key_no_chunk_can_hold_is_refused_as_full() {
        let mem = Memtable::new();
        let key = vec![1u8; CHUNK];
        assert_eq!(
            mem.try_add(1, ValueKind::Put, &key, b"v"),
            Err(AddError::Full)
        );
        assert_eq!(mem.try_add(1, ValueKind::Put, b"k", b"v"), Ok(()));
        assert_eq!(mem.entries(), 1);
    }

    #[test]
    fn adds_in_runs_across_two_memtables_stay_in_order() {
        // Adds alternating between two memtables, in descending and ascending runs: a
        // splice left behind by the key order would put entries out of order.
        let a = Arc::new(Memtable::new());
        let b = Arc::new(Memtable::new());
        for i in 0..2000u64 {
            let k = if i % 400 < 200 { 5000 - i } else { i };
            let key = format!("{k:06}");
            let m = if i % 3 == 0 { &a } else { &b };
            assert!(m.add(i + 1, ValueKind::Put, key.as_bytes(), b"v"));
        }
        for m in [&a, &b] {
            let mut it = m.iter();
            it.seek_to_first().unwrap();
            let keys: Vec<Vec<u8>> = collect(&mut it, usize::MAX)
                .into_iter()
                .map(|e| e.0)
                .collect();
            assert!(keys.windows(2).all(|w| key::compare(&w[0], &w[1]).is_lt()));
        }
        assert_eq!(a.entries() + b.entries(), 2000);
    }

    #[test]
    fn memory_usage_counts_encoded_entries_and_nodes() {
        let mem = Memtable::new();
        // The two lists' head nodes: 12 links of 8 bytes each.
        assert_eq!(mem.approximate_memory_usage(), 192);
        mem.add(1, ValueKind::Put, &[7; 16], &[1; 100]);
        // varint(24) + 24 + varint(100) + 100, plus one link per level of the node.
        let first = 192 + arena_model::node_bytes(1, 1 + 24 + 1 + 100);
        assert_eq!(mem.approximate_memory_usage(), first);
        mem.add(2, ValueKind::Put, &[7; 16], &[1; 200]);
        // Nodes are aligned to 16 bytes.
        let second = first.next_multiple_of(16) + arena_model::node_bytes(2, 1 + 24 + 2 + 200);
        assert_eq!(mem.approximate_memory_usage(), second);
    }

    #[test]
    fn concurrent_adds_are_all_kept_in_order() {
        const THREADS: u64 = 4;
        const PER_THREAD: u64 = 3000;
        let mem = Arc::new(Memtable::new());
        thread::scope(|s| {
            for t in 0..THREADS {
                let mem = Arc::clone(&mem);
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        let seq = i * THREADS + t + 1;
                        let key = format!("key{:05}", seq % 1000);
                        mem.add(seq, ValueKind::Put, key.as_bytes(), &seq.to_le_bytes());
                    }
                });
            }
            // A reader walking the table while it grows always sees sorted entries.
            let mem = Arc::clone(&mem);
            s.spawn(move || {
                for _ in 0..20 {
                    let mut it = mem.iter();
                    it.seek_to_first().unwrap();
                    let mut prev: Option<Vec<u8>> = None;
                    while it.valid() {
                        if let Some(p) = &prev {
                            assert_eq!(key::compare(p, it.key()), std::cmp::Ordering::Less);
                        }
                        prev = Some(it.key().to_vec());
                        it.next().unwrap();
                    }
                }
            });
        });
        let total = THREADS * PER_THREAD;
        assert_eq!(mem.entries(), total);
        let mut it = mem.iter();
        it.seek_to_first().unwrap();
        let all = collect(&mut it, usize::MAX);
        assert_eq!(all.len() as u64, total);
        assert!(all
            .windows(2)
            .all(|w| key::compare(&w[0].0, &w[1].0).is_lt()));
        for seq in 1..=total {
            let key = format!("key{:05}", seq % 1000);
            let newest = (seq..=total)
                .rev()
                .find(|s| s % 1000 == seq % 1000 && *s <= total);
            let want = newest.map(|s| (ValueKind::Put, s.to_le_bytes().to_vec()));
            assert_eq!(mem.get(key.as_bytes(), total), want);
        }
    }
}
