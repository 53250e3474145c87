//! The memtable: recent writes in a concurrent skiplist ordered by internal key.
//!
//! Entries are only ever added (never changed or removed), so readers and iterators need no
//! lock; adds from several threads may run at once.
//!
//! # Memory accounting
//!
//! [`Memtable::approximate_memory_usage`] is what the write path compares with
//! `write_buffer_size` to decide a flush, so it follows RocksDB's arena accounting, which
//! fixes how much data an L0 file receives: per entry the encoded entry (varint internal
//! key length, internal key, varint value length, value) plus the skiplist node (RocksDB's
//! node is one 8-byte link per level, 4/3 levels on average with branching factor 4, and
//! the arena aligns each node to 8 bytes: [`ENTRY_OVERHEAD`] = 16 bytes). The estimate is
//! deterministic (no random tower heights), so the same writes flush at the same points.
//! The heap this crate actually uses per entry is larger (one allocation holding the
//! internal key and the value, and a node with pointer tower), which only matters for the
//! process's memory footprint, not for the LSM shape.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::map::Entry as MapEntry;
use crossbeam_skiplist::SkipMap;

use crate::coding::varint_len;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind, MAX_SEQ, TRAILER_LEN};
use crate::Result;

/// Bytes counted per entry beyond its encoded key and value (see the module doc).
pub const ENTRY_OVERHEAD: u64 = 16;

/// A concurrent, append-only sorted map of internal key → value.
#[derive(Default)]
pub struct Memtable {
    map: SkipMap<Entry, ()>,
    entries: AtomicU64,
    deletions: AtomicU64,
    memory: AtomicU64,
}

/// One entry: its internal key followed by its value, in a single allocation (an add is
/// on every write's path, and each allocation there costs as much as the skiplist insert),
/// ordered by the internal key alone.
struct Entry {
    buf: Vec<u8>,
    key_len: usize,
}

impl Entry {
    fn new(user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Entry {
        let key_len = user_key.len() + TRAILER_LEN;
        let mut buf = Vec::with_capacity(key_len + value.len());
        key::append_internal_key(&mut buf, user_key, seq, kind);
        buf.extend_from_slice(value);
        Entry { buf, key_len }
    }

    /// A search target: an internal key without a value.
    fn target(ikey: &[u8]) -> Entry {
        Entry {
            buf: ikey.to_vec(),
            key_len: ikey.len(),
        }
    }

    fn key(&self) -> &[u8] {
        self.buf.get(..self.key_len).unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.buf.get(self.key_len..).unwrap_or_default()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        key::compare(self.key(), other.key())
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The bytes an entry is counted for (see the module doc).
fn entry_charge(user_key_len: usize, value_len: usize) -> u64 {
    let ikey = (user_key_len + TRAILER_LEN) as u64;
    let value = value_len as u64;
    varint_len(ikey) + ikey + varint_len(value) + value + ENTRY_OVERHEAD
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Memtable::default()
    }

    /// Adds the entry `(key, seq, kind) → value` (a deletion carries an empty value).
    /// Safe to call from several threads at once. Returns false, adding nothing, if the
    /// memtable holds the entry `(key, seq, kind)` already: sequence numbers are unique
    /// per operation, so a repeated one means two writes were given the same numbers.
    /// `seq` is at most [`MAX_SEQ`] (larger is clamped).
    pub fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) -> bool {
        let seq = seq.min(MAX_SEQ);
        let mut added = false;
        self.map
            .get_or_insert_with(Entry::new(key, seq, kind, value), || added = true);
        if !added {
            return false;
        }
        self.entries.fetch_add(1, Ordering::Relaxed);
        if kind == ValueKind::Delete {
            self.deletions.fetch_add(1, Ordering::Relaxed);
        }
        self.memory
            .fetch_add(entry_charge(key.len(), value.len()), Ordering::Relaxed);
        true
    }

    /// The newest entry of `user_key` with a sequence number `<= snapshot`: its kind and
    /// value, or `None` if the memtable holds no such entry.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, Vec<u8>)> {
        // `key::seek_key`, built in place.
        let target = Entry::new(user_key, snapshot.min(MAX_SEQ), ValueKind::FOR_SEEK, &[]);
        let found = self.map.lower_bound(Bound::Included(&target))?;
        let entry = found.key();
        let parsed = key::parse(entry.key())?;
        (parsed.user_key == user_key).then(|| (parsed.kind, entry.value().to_vec()))
    }

    /// Bytes counted for the entries so far (monotone; see the module doc).
    pub fn approximate_memory_usage(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
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
        self.map.iter().filter_map(move |e| {
            let entry = e.key();
            let kind = key::parse(entry.key())?.kind;
            let value = entry.value().len();
            let large = kind == ValueKind::Put && value as u64 >= min;
            large.then(|| (entry.key_len - TRAILER_LEN, value))
        })
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// An iterator over the entries in internal-key order. It keeps the memtable alive and
    /// sees entries added after its creation when it reaches their position.
    pub fn iter(self: &Arc<Self>) -> MemIter {
        MemIter {
            current: None,
            mem: Arc::clone(self),
        }
    }
}

/// A cursor over a memtable (see [`Memtable::iter`]). It holds the skiplist's handle of the
/// current entry, so `next` and `prev` follow the list's links instead of searching it
/// again from the top (a flush walks every entry of its memtables).
pub struct MemIter {
    // Declared before `mem`, so dropped before it: it borrows `mem`'s skiplist.
    current: Option<MapEntry<'static, Entry, ()>>,
    mem: Arc<Memtable>,
}

impl MemIter {
    fn set(&mut self, entry: Option<MapEntry<'_, Entry, ()>>) {
        // SAFETY: the handle borrows the skiplist of the memtable `self.mem` points to,
        // which lives in the `Arc`'s heap allocation: it does not move, and it outlives
        // the handle, which is dropped or replaced first (field order, and `set` only
        // replaces it while `self.mem` is held). The handle keeps a reference count on its
        // node, and a memtable never removes entries. The `'static` lifetime never leaves
        // this type: `key` and `value` lend their bytes for as long as `&self`.
        self.current = entry.map(|e| unsafe {
            std::mem::transmute::<MapEntry<'_, Entry, ()>, MapEntry<'static, Entry, ()>>(e)
        });
    }

    fn entry(&self) -> Option<&Entry> {
        self.current.as_ref().map(|e| e.key())
    }
}

impl InternalIterator for MemIter {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let mem = Arc::clone(&self.mem);
        self.set(mem.map.front());
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let mem = Arc::clone(&self.mem);
        let target = Entry::target(target);
        self.set(mem.map.lower_bound(Bound::Included(&target)));
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if let Some(current) = self.current.as_mut() {
            if !current.move_next() {
                self.current = None;
            }
        }
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let mem = Arc::clone(&self.mem);
        self.set(mem.map.back());
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(current) = self.current.as_mut() {
            if !current.move_prev() {
                self.current = None;
            }
        }
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let mem = Arc::clone(&self.mem);
        let target = Entry::target(target);
        self.set(mem.map.upper_bound(Bound::Included(&target)));
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.entry().map_or(&[], Entry::key)
    }

    fn value(&self) -> &[u8] {
        self.entry().map_or(&[], Entry::value)
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
    fn memory_usage_counts_encoded_entries_and_nodes() {
        let mem = Memtable::new();
        assert_eq!(mem.approximate_memory_usage(), 0);
        mem.add(1, ValueKind::Put, &[7; 16], &[1; 100]);
        // varint(24) + 24 + varint(100) + 100 + node.
        assert_eq!(
            mem.approximate_memory_usage(),
            1 + 24 + 1 + 100 + ENTRY_OVERHEAD
        );
        mem.add(2, ValueKind::Put, &[7; 16], &[1; 200]);
        assert_eq!(
            mem.approximate_memory_usage(),
            2 * (26 + ENTRY_OVERHEAD) + 300 + 1
        );
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
        assert_eq!(collect(&mut it, usize::MAX).len() as u64, total);
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
