//! mixgraph's choice of Get, Put or Seek (RocksDB db_bench_tool.cc, MixGraph:
//! `QueryDecider`).
//!
//! The three ratios are normalised by their sum and each is given ⌈1000 · ratio / sum⌉
//! consecutive slots; a draw picks slot `ini % slots`. The rounding up can give a kind a
//! slot more than its share (ratios of 1/3 each make 1002 slots), as in db_bench. The
//! slot comes from the same draw as the key, so with uniform keys a key is always read,
//! always written or always sought: db_bench's `GetRandomKey` feeds both.

use crate::error::{check_weight, Error, Result};

/// What one mixgraph operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueryKind {
    /// A get of the key.
    Get,
    /// A put of a value of the drawn size.
    Put,
    /// A seek to the key and a scan of the drawn length.
    Seek,
}

impl QueryKind {
    /// Every kind, in db_bench's order (the order of the slot table).
    pub const ALL: [QueryKind; 3] = [QueryKind::Get, QueryKind::Put, QueryKind::Seek];
}

/// `mix_get_ratio`, `mix_put_ratio`, `mix_seek_ratio` (weights: db_bench normalises them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryRatios {
    /// `mix_get_ratio`.
    pub get: f64,
    /// `mix_put_ratio`.
    pub put: f64,
    /// `mix_seek_ratio`.
    pub seek: f64,
}

impl Default for QueryRatios {
    /// db_bench's defaults: gets only.
    fn default() -> Self {
        QueryRatios {
            get: 1.0,
            put: 0.0,
            seek: 0.0,
        }
    }
}

/// Slots a ratio of 1 would get.
const SLOTS: f64 = 1000.0;

/// The slot table built from the ratios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryMix {
    /// Slots up to and including each kind, in the order of [`QueryKind::ALL`].
    ends: [i64; 3],
}

impl QueryMix {
    /// The table of `r`; each ratio must be finite and not negative, their sum positive.
    pub fn new(r: QueryRatios) -> Result<QueryMix> {
        let ratios = [
            ("mix_get_ratio", r.get),
            ("mix_put_ratio", r.put),
            ("mix_seek_ratio", r.seek),
        ];
        for (what, value) in ratios {
            check_weight(what, value)?;
        }
        // Summed and divided in db_bench's order, so that the rounding up agrees.
        let sum = r.get + r.put + r.seek;
        if sum <= 0.0 {
            return Err(Error::NoOperations);
        }
        let mut ends = [0i64; 3];
        let mut end = 0i64;
        for (slot, (_, ratio)) in ends.iter_mut().zip(ratios) {
            end += (SLOTS * (ratio / sum)).ceil() as i64;
            *slot = end;
        }
        Ok(QueryMix { ends })
    }

    /// All slots.
    pub fn slots(&self) -> i64 {
        self.ends[2]
    }

    /// The share of the slots `kind` owns: the fraction of operations of that kind.
    pub fn share(&self, kind: QueryKind) -> f64 {
        let [get, put, seek] = self.ends;
        let (before, end) = match kind {
            QueryKind::Get => (0, get),
            QueryKind::Put => (get, put),
            QueryKind::Seek => (put, seek),
        };
        (end - before) as f64 / self.slots() as f64
    }

    /// The kind of draw `ini` (≥ 0).
    pub fn kind(&self, ini: i64) -> QueryKind {
        let slot = ini % self.slots();
        self.ends
            .iter()
            .zip(QueryKind::ALL)
            .find_map(|(&end, kind)| (slot < end).then_some(kind))
            .unwrap_or(QueryKind::ALL[0])
    }
}
