//! When a memtable is full: RocksDB's arena (7.8), modelled.
//!
//! How much data an L0 file receives decides every compaction after it, so zkv fills a
//! memtable to the point RocksDB would. RocksDB keeps a memtable's skiplist nodes in an
//! arena and asks the arena, after each add, whether the memtable should flush
//! (`MemTable::ShouldFlushNow`). The arena here holds no bytes; it records where RocksDB's
//! would have put each node, so the same writes fill a memtable at the same entry in both
//! engines (checked against RocksDB's flush logs in the tests below).
//!
//! What is modelled:
//! - **Blocks.** The arena starts in a 2 KiB block kept inside the memtable, then takes
//!   blocks of `arena_block_size`, RocksDB's default: an eighth of `write_buffer_size`, at
//!   most 1 MiB, rounded up to 4 KiB (see [`block_size`] for buffers below 32 KiB). An
//!   allocation above a quarter block gets a block of its own; one that does not fit the
//!   rest of the current block starts a new block, and the rest is lost.
//! - **Nodes.** A node is one 8-byte link per level plus the encoded entry (varint internal
//!   key length, internal key, varint value length, value), aligned to 16 bytes
//!   (`alignof(max_align_t)` on x86-64). Two 12-level head nodes (the point and the
//!   range-deletion lists) are allocated when the memtable is created.
//! - **Heights.** RocksDB draws a node's height at random (each further level with
//!   probability 1/4, at most 12). Here it is drawn from a hash of the entry's sequence
//!   number, so it is the same in every run and whatever the threads' timing.
//! - **Full.** With `allocated` the bytes of all blocks taken: not full while one more
//!   block would stay under `write_buffer_size` + 0.6 block; full once `allocated` is above
//!   that; in between, full once the current block has less than a quarter block unused.
//!   With an 8 MiB buffer that is about 7.75 MiB of nodes.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// The block every arena starts in (RocksDB's `Arena::kInlineSize`).
const INLINE_BLOCK: u64 = 2048;
/// Allocation alignment.
const ALIGN: u64 = 16;
/// Bytes of one level's link in a node.
const LINK: u64 = 8;
/// A skiplist's highest level.
const MAX_HEIGHT: u32 = 12;
/// The two head nodes allocated with the memtable.
const HEADS: u64 = 2 * LINK * MAX_HEIGHT as u64;

/// RocksDB's default `arena_block_size` for a write buffer of `write_buffer_size` bytes: an
/// eighth of it, at most 1 MiB, rounded up to 4 KiB. Below 32 KiB of buffer, which RocksDB
/// does not allow (it raises `write_buffer_size` to 64 KiB), the eighth is kept as it is
/// (in 16-byte units), so that a tiny memtable stays near its buffer size instead of
/// filling a 4 KiB block past it.
pub fn block_size(write_buffer_size: u64) -> u64 {
    let block = (write_buffer_size / 8).min(1 << 20);
    let unit = if block >= 4096 { 4096 } else { ALIGN };
    block.div_ceil(unit).max(1) * unit
}

/// The height of the node of the entry with sequence number `seq` (1..=12; each further
/// level with probability 1/4: two more trailing zero bits of a hash of `seq`).
fn height(seq: u64) -> u32 {
    (1 + xxh3_64(&seq.to_le_bytes()).trailing_zeros() / 2).min(MAX_HEIGHT)
}

/// The arena bytes of the node of an entry whose encoded form is `encoded` bytes.
pub fn node_bytes(seq: u64, encoded: u64) -> u64 {
    LINK * u64::from(height(seq)) + encoded
}

/// Where a memtable's nodes would be in RocksDB's arena.
#[derive(Debug)]
pub struct ArenaModel {
    write_buffer_size: u64,
    block: u64,
    /// Regular blocks taken (high 32 bits; 0: still in the inline block) and the bytes used
    /// of the current one (low 32 bits), changed together by one compare-and-swap.
    current: AtomicU64,
    /// Bytes of the blocks taken for one large node each.
    dedicated: AtomicU64,
}

impl ArenaModel {
    /// The arena of a new memtable filled up to `write_buffer_size`.
    pub fn new(write_buffer_size: u64) -> Self {
        ArenaModel {
            write_buffer_size,
            block: block_size(write_buffer_size),
            current: AtomicU64::new(HEADS),
            dedicated: AtomicU64::new(0),
        }
    }

    /// Places a node of `bytes`.
    pub fn allocate(&self, bytes: u64) {
        if bytes > self.block / 4 {
            self.dedicated.fetch_add(bytes, Ordering::Relaxed);
            return;
        }
        let mut seen = self.current.load(Ordering::Relaxed);
        loop {
            let (blocks, used) = (seen >> 32, seen & u64::from(u32::MAX));
            let start = used.next_multiple_of(ALIGN);
            let next = if start + bytes <= self.capacity(blocks) {
                blocks << 32 | (start + bytes)
            } else {
                (blocks + 1) << 32 | bytes
            };
            match self.current.compare_exchange_weak(
                seen,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
    }

    /// The size of the current block when `blocks` regular blocks were taken.
    fn capacity(&self, blocks: u64) -> u64 {
        if blocks == 0 {
            INLINE_BLOCK
        } else {
            self.block
        }
    }

    /// Bytes of all blocks taken, and the unused bytes of the current one.
    fn state(&self) -> (u64, u64) {
        let current = self.current.load(Ordering::Relaxed);
        let (blocks, used) = (current >> 32, current & u64::from(u32::MAX));
        let allocated = INLINE_BLOCK + blocks * self.block + self.dedicated.load(Ordering::Relaxed);
        (allocated, self.capacity(blocks).saturating_sub(used))
    }

    /// Bytes taken and not left unused at the end of the current block (RocksDB's
    /// `ApproximateMemoryUsage` of a memtable).
    pub fn memory_usage(&self) -> u64 {
        let (allocated, unused) = self.state();
        allocated - unused
    }

    /// Whether RocksDB would flush the memtable now (see the module doc).
    pub fn is_full(&self) -> bool {
        let (allocated, unused) = self.state();
        // allocated + block < buffer + 0.6 block, in tenths.
        let tenths = |bytes: u64| bytes.saturating_mul(10);
        let limit = tenths(self.write_buffer_size).saturating_add(6 * self.block);
        if tenths(allocated + self.block) < limit {
            return false;
        }
        tenths(allocated) > limit || unused < self.block / 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries a memtable of `buffer` bytes takes before it is full, for entries encoded
    /// in `encoded` bytes.
    fn entries_until_full(buffer: u64, encoded: u64) -> u64 {
        let arena = ArenaModel::new(buffer);
        let mut seq = 1;
        loop {
            arena.allocate(node_bytes(seq, encoded));
            if arena.is_full() {
                return seq;
            }
            seq += 1;
        }
    }

    #[test]
    fn fills_like_rocksdb_memtables() {
        // RocksDB 7.8's flush_started events (db_bench, write_buffer_size 8 MiB, 16-byte
        // keys, no WAL): 45,893–45,902 entries of 128-byte values (155 bytes encoded),
        // 7,779–7,781 entries of 1000-byte values (1027 bytes encoded).
        let small = entries_until_full(8 << 20, 155);
        assert!((45_800..=46_000).contains(&small), "{small}");
        let large = entries_until_full(8 << 20, 1027);
        assert!((7_765..=7_795).contains(&large), "{large}");
    }

    #[test]
    fn a_full_memtable_holds_about_three_quarters_of_its_last_block() {
        let arena = ArenaModel::new(8 << 20);
        let mut seq = 1;
        while !arena.is_full() {
            arena.allocate(node_bytes(seq, 155));
            seq += 1;
        }
        let usage = arena.memory_usage();
        // RocksDB reports 8,128,784 bytes at these flushes.
        assert!((8_120_000..8_135_000).contains(&usage), "{usage}");
    }

    #[test]
    fn heights_follow_a_quarter_per_level() {
        let n = 1 << 16;
        let above_one = (1..=n).filter(|&s| height(s) > 1).count() as f64 / n as f64;
        assert!((0.24..0.26).contains(&above_one), "{above_one}");
        assert!((1..=n).all(|s| (1..=MAX_HEIGHT).contains(&height(s))));
    }

    #[test]
    fn a_large_node_takes_a_block_of_its_own() {
        let arena = ArenaModel::new(8 << 20);
        let before = arena.memory_usage();
        arena.allocate(300 << 10);
        assert_eq!(arena.memory_usage(), before + (300 << 10));
        arena.allocate(100);
        assert_eq!(arena.memory_usage(), before + (300 << 10) + 100);
    }

    #[test]
    fn a_node_that_does_not_fit_starts_a_new_block_and_loses_the_rest() {
        let arena = ArenaModel::new(8 << 20);
        arena.allocate(1800); // inline block: 192 + 1800 of 2048
        arena.allocate(100); // does not fit: a new 1 MiB block
        assert_eq!(arena.memory_usage(), INLINE_BLOCK + 100);
        assert!(!arena.is_full());
    }

    #[test]
    fn a_buffer_filled_past_its_size_by_large_nodes_is_full() {
        let arena = ArenaModel::new(1 << 20);
        assert_eq!(arena.block, 128 << 10);
        for _ in 0..40 {
            arena.allocate(40 << 10);
        }
        assert!(arena.is_full());
        assert!(arena.memory_usage() >= 1 << 20);
    }

    #[test]
    fn block_sizes_are_rocksdbs_defaults() {
        assert_eq!(block_size(64 << 20), 1 << 20);
        assert_eq!(block_size(8 << 20), 1 << 20);
        assert_eq!(block_size(1 << 20), 128 << 10);
        assert_eq!(block_size(100_000), 16384);
        assert_eq!(block_size(32 << 10), 4096);
        assert_eq!(block_size(4096), 512);
        assert_eq!(block_size(100), 16);
    }
}
