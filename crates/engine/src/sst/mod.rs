//! The SST table format: sorted internal entries in checksummed blocks, with an index, a
//! bloom filter over user keys, a properties block and a footer. `docs/SST.md` describes the
//! bytes.
//!
//! Tables are built whole in memory ([`TableBuilder`] → [`BuiltTable`]), so the engine can
//! create the file with a placement hint that knows the exact key range and size, and are
//! read through [`RandomAccess`](crate::source::RandomAccess) ([`Table`], [`TableIter`]).
//! [`parts`] decodes each part of a table on its own (footer, blocks, filter, properties).

mod block;
mod builder;
mod cache;
mod compression;
mod filter;
mod format;
pub mod parts;
mod props;
mod table;
#[cfg(test)]
mod tests;

pub use builder::{BuiltTable, TableBuilder};
pub use cache::{BlockCache, BlockCacheStats, CacheSlot};
pub use compression::CompressionType;
pub use props::TableProps;
pub use table::{Table, TableIter};

use crate::options::Options;

/// The options a table is built with (taken from [`Options`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// Target size of a data block's contents (a block is cut at about this size).
    pub block_size: u32,
    /// Keys between restart points in a data block (0 is taken as 1).
    pub block_restart_interval: u32,
    /// Bits per key of the bloom filter; 0 = no filter.
    pub bloom_bits_per_key: u32,
    /// How data blocks are compressed.
    pub compression: CompressionType,
}

impl From<&Options> for TableOptions {
    fn from(o: &Options) -> TableOptions {
        TableOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: o.bloom_bits_per_key,
            compression: o.compression,
        }
    }
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions::from(&Options::default())
    }
}
