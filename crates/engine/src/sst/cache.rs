//! The block cache: data blocks by (file number, offset), shared by every table of a
//! database, bounded in bytes ([`Options::block_cache_size`](crate::options::Options)).
//!
//! A block enters the cache after it was read, checksummed and validated, so a hit skips
//! the device read and every check. File numbers are never reused within a database, so a
//! key names the same bytes for as long as the file lives; the blocks of a deleted file
//! are never asked for again and age out.
//!
//! Eviction must not depend on the machine (the deterministic mode's reports count device
//! reads, which hits save): the shard count is fixed by the capacity and the hasher has a
//! fixed seed, so the same reads give the same hits everywhere.

use foldhash::fast::FixedState;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::{OptionsBuilder, Weighter};

use super::block::Block;

/// Bytes a shard holds at least (RocksDB sizes its LRU cache's shards the same way).
const MIN_SHARD_BYTES: u64 = 512 * 1024;
/// The most shards a cache has.
const MAX_SHARDS: u64 = 64;
/// What an entry costs beyond its block's bytes (key, `Arc`, the block's fields).
const ENTRY_OVERHEAD: u64 = 96;

type Key = (u64, u64);

#[derive(Clone, Copy)]
struct BlockWeight;

impl Weighter<Key, Arc<Block>> for BlockWeight {
    fn weight(&self, _key: &Key, block: &Arc<Block>) -> u64 {
        block.memory() + ENTRY_OVERHEAD
    }
}

type Inner = Cache<Key, Arc<Block>, BlockWeight, FixedState, DefaultLifecycle<Key, Arc<Block>>>;

/// Validated data blocks of a database's tables.
pub struct BlockCache {
    inner: Inner,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.inner.capacity())
            .field("bytes", &self.inner.weight())
            .finish()
    }
}

/// Hits and misses so far, and what the cache holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    /// The most bytes of blocks the cache holds.
    pub capacity: u64,
    /// Bytes of the blocks it holds now.
    pub bytes: u64,
    /// Block reads the cache answered.
    pub hits: u64,
    /// Block reads that went to the file.
    pub misses: u64,
}

impl BlockCache {
    /// A cache of `capacity` bytes; `None` for 0 (no cache).
    pub fn new(capacity: u64) -> Option<Arc<BlockCache>> {
        if capacity == 0 {
            return None;
        }
        let shards = (capacity / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        // A power of two: the largest one not above the count.
        let shards = 1u64 << (63 - shards.leading_zeros());
        let options = OptionsBuilder::new()
            .shards(usize::try_from(shards).unwrap_or(1))
            .estimated_items_capacity(usize::try_from(capacity / 4096).unwrap_or(1).max(1))
            .weight_capacity(capacity)
            .build()
            .ok()?;
        let inner = Cache::with_options(
            options,
            BlockWeight,
            FixedState::default(),
            DefaultLifecycle::default(),
        );
        Some(Arc::new(BlockCache {
            inner,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }))
    }

    pub(crate) fn get(&self, file: u64, offset: u64) -> Option<Arc<Block>> {
        let found = self.inner.get(&(file, offset));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    pub(crate) fn insert(&self, file: u64, offset: u64, block: Arc<Block>) {
        self.inner.insert((file, offset), block);
    }

    /// The cache's fill and its hits and misses since it was made.
    pub fn stats(&self) -> BlockCacheStats {
        BlockCacheStats {
            capacity: self.inner.capacity(),
            bytes: self.inner.weight(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// Where a table's blocks are cached: the database's cache and the table's file number.
#[derive(Clone, Debug)]
pub struct CacheSlot {
    /// The database's block cache.
    pub cache: Arc<BlockCache>,
    /// The table's file number, which keys its blocks in the cache.
    pub file: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize) -> Arc<Block> {
        // An empty block: no entries, one restart at 0.
        let mut data = vec![0u8; len.saturating_sub(8)];
        data.extend_from_slice(&0u32.to_le_bytes());
        data.extend_from_slice(&1u32.to_le_bytes());
        Arc::new(Block::new(data, Arc::from("test")).unwrap())
    }

    #[test]
    fn zero_capacity_is_no_cache() {
        assert!(BlockCache::new(0).is_none());
    }

    #[test]
    fn keeps_what_it_was_given_and_counts_hits() {
        let cache = BlockCache::new(1 << 20).unwrap();
        assert!(cache.get(1, 0).is_none());
        cache.insert(1, 0, block(4096));
        assert!(cache.get(1, 0).is_some());
        assert!(
            cache.get(2, 0).is_none(),
            "another file's block at the same offset"
        );
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (1, 2));
    }

    #[test]
    fn stays_within_its_capacity() {
        let capacity = 64 * 1024;
        let cache = BlockCache::new(capacity).unwrap();
        for i in 0..100 {
            cache.insert(7, i * 4096, block(4096));
        }
        assert!(cache.stats().bytes <= capacity, "{:?}", cache.stats());
        let kept = (0..100)
            .filter(|i| cache.get(7, i * 4096).is_some())
            .count();
        assert!(
            kept > 0 && kept < 16,
            "kept {kept} blocks of 4 KiB in 64 KiB"
        );
    }

    #[test]
    fn evicts_the_same_way_every_time() {
        let run = || {
            let cache = BlockCache::new(256 * 1024).unwrap();
            for i in 0..500u64 {
                cache.insert(i % 13, i * 4096, block(4096));
                let _ = cache.get((i * 7) % 13, (i / 2) * 4096);
            }
            (0..500u64)
                .filter(|i| cache.get(i % 13, i * 4096).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
