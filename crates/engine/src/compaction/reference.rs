//! The pickers' orders computed from scratch, file by file, as they were defined before the
//! version kept overlaps and memoised orders: what the fast paths must match exactly.

use std::cmp::{Ordering, Reverse};
use std::collections::HashMap;
use std::sync::Arc;

use crate::key;
use crate::version::{FileMeta, Version};

use super::acc::Acc;
use super::pick::{level0_non_overlapping, total_size};
use super::picker::{sorted_indexes, PickCtx, ZoneLookup};
use super::score::Compensation;
use super::zaca::s_same;
use super::zone_drain::drain_score;

/// The order `picker` (a name of `PICKER_TABLE`, with ACC's knobs `acc`) gives the files of
/// `level`.
pub fn order(picker: &str, acc: Acc, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    match picker {
        "sica" => sica(ctx, level),
        "min-overlap" => min_overlap(ctx, level),
        "round-robin" => round_robin(ctx, level),
        "oldest-smallest-seq" => by_key(ctx.version.files(level), |f| f.smallest_seq),
        "oldest-largest-seq" => by_key(ctx.version.files(level), |f| f.largest_seq),
        "zaca" => zaca(ctx, level),
        "acc" if acc.uses_zaca(ctx, level) => zaca(ctx, level),
        "acc" => sica(ctx, level),
        "zone-drain" => zone_drain(acc, ctx, level),
        _ => panic!("no reference for picker {picker}"),
    }
}

fn by_key<K: Ord>(files: &[Arc<FileMeta>], key: impl FnMut(&Arc<FileMeta>) -> K) -> Vec<usize> {
    let keys: Vec<K> = files.iter().map(key).collect();
    sorted_indexes(files, &keys)
}

fn below<'v>(v: &'v Version, level: usize, f: &FileMeta) -> &'v [Arc<FileMeta>] {
    if level + 1 >= v.num_levels() {
        return &[];
    }
    let (b, e) = (f.smallest_user_key(), f.largest_user_key());
    v.deep_overlapping(level + 1, Some(b), Some(e))
}

type SicaKey = (Reverse<u64>, u64);

fn sica_key(comp: &Compensation, f: &FileMeta, below: &[Arc<FileMeta>]) -> SicaKey {
    (Reverse(comp.size(f)), total_size(below))
}

fn sica(ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    let v = ctx.version;
    let comp = Compensation::of(v);
    by_key(v.files(level), |f| sica_key(&comp, f, below(v, level, f)))
}

fn ratios(v: &Version, level: usize) -> Vec<u64> {
    let comp = Compensation::of(v);
    let (files, next) = (v.files(level), v.files(level + 1));
    // RocksDB's single forward sweep over the next level.
    let mut j = 0;
    let mut out = Vec::new();
    for f in files {
        let mut bytes = 0u64;
        while j < next.len() && key::compare(&next[j].largest, &f.smallest) == Ordering::Less {
            j += 1;
        }
        while j < next.len() && key::compare(&next[j].smallest, &f.largest) == Ordering::Less {
            bytes = bytes.saturating_add(next[j].size);
            if key::compare(&next[j].largest, &f.largest) == Ordering::Greater {
                break;
            }
            j += 1;
        }
        let scaled = u128::from(bytes) * 1024 / u128::from(comp.size(f).max(1));
        out.push(u64::try_from(scaled).unwrap_or(u64::MAX));
    }
    out
}

fn min_overlap(ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    let ratio = ratios(ctx.version, level);
    sorted_indexes(ctx.version.files(level), &ratio)
}

fn round_robin(ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    let files = ctx.version.files(level);
    if level == 0 && !level0_non_overlapping(ctx.version) {
        return by_key(files, |f| f.smallest_seq);
    }
    let start = ctx.cursor(level).map_or(0, |cursor| {
        files
            .iter()
            .position(|f| key::compare(cursor, &f.smallest) != Ordering::Greater)
            .unwrap_or(0)
    });
    (start..files.len()).chain(0..start).collect()
}

/// The bytes of a group in each zone, each file looked up once per call.
struct Zones<'a> {
    lookup: &'a dyn ZoneLookup,
    known: HashMap<u64, Vec<(u32, u64)>>,
}

impl Zones<'_> {
    fn group<'f>(&mut self, files: impl Iterator<Item = &'f Arc<FileMeta>>) -> Vec<(u32, u64)> {
        let mut pairs: Vec<(u32, u64)> = Vec::new();
        for f in files {
            let lookup = self.lookup;
            let zones = self
                .known
                .entry(f.number)
                .or_insert_with(|| lookup.zones_of(f.number));
            pairs.extend_from_slice(zones);
        }
        pairs.sort_unstable_by_key(|&(zone, _)| zone);
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = kept.1.saturating_add(later.1);
            }
            same
        });
        pairs
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ZacaKey {
    Candidate(Reverse<u64>, SicaKey),
    Busy(SicaKey),
}

fn zaca(ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    let v = ctx.version;
    let comp = Compensation::of(v);
    let mut zones = Zones {
        lookup: ctx.zones,
        known: HashMap::new(),
    };
    by_key(v.files(level), |f| {
        let below = below(v, level, f);
        let rank = sica_key(&comp, f, below);
        if ctx.is_compacting(f) {
            return ZacaKey::Busy(rank);
        }
        let score = s_same(&zones.group(std::iter::once(f).chain(below)));
        ZacaKey::Candidate(Reverse(score.to_bits()), rank)
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum DrainKey {
    Candidate(Reverse<u64>, u64),
    Busy(u64),
}

fn zone_drain(acc: Acc, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
    if !acc.uses_zaca(ctx, level) {
        return min_overlap(ctx, level);
    }
    let v = ctx.version;
    let files = v.files(level);
    let live: HashMap<u32, u64> = ctx.zones.full_zone_live().into_iter().collect();
    let mut zones = Zones {
        lookup: ctx.zones,
        known: HashMap::new(),
    };
    let keys: Vec<DrainKey> = files
        .iter()
        .zip(ratios(v, level))
        .map(|(f, ratio)| {
            if ctx.is_compacting(f) {
                return DrainKey::Busy(ratio);
            }
            let below = below(v, level, f);
            let group = zones.group(std::iter::once(f).chain(below));
            let seed_share = {
                let g = f.size.saturating_add(total_size(below));
                if g == 0 {
                    0.0
                } else {
                    f.size as f64 / g as f64
                }
            };
            let score = drain_score(&group, &live) * seed_share;
            let score = if score > 0.0 { score } else { 0.0 };
            DrainKey::Candidate(Reverse(score.to_bits()), ratio)
        })
        .collect();
    sorted_indexes(files, &keys)
}

/// Scores by walking every file, as they were computed before the version kept the sums
/// they need.
fn walked_scores(v: &Version, options: &crate::options::Options, busy: &HashSet<u64>) -> Vec<f64> {
    let comp = Compensation::of(v);
    let mut scores = vec![0.0; v.num_levels()];
    for (level, score) in scores.iter_mut().enumerate().take(v.num_levels() - 1) {
        let idle = v.files(level).iter().filter(|f| !busy.contains(&f.number));
        let (mut files, mut bytes) = (0u64, 0u64);
        for f in idle {
            files += 1;
            bytes = bytes.saturating_add(comp.size(f));
        }
        *score = if level == 0 {
            let trigger = f64::from(options.level0_file_num_compaction_trigger.max(1));
            let by_size = bytes as f64 / options.max_bytes_for_level_base.max(1) as f64;
            (files as f64 / trigger).max(by_size)
        } else {
            bytes as f64 / options.max_bytes_for_level(level).max(1) as f64
        };
    }
    scores
}

use std::collections::HashSet;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compaction::test_util::{arb_chain, drawn_busy, FakeZones};
    use crate::compaction::{picker_names, picker_with, scores_by_level};
    use crate::key::ValueKind;
    use crate::options::Options;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_picker_orders_like_its_reference_through_edits(
            chain in arb_chain(),
            busy_bits in prop::collection::vec(prop::bool::weighted(0.2), 64),
            placed in prop::collection::vec((0u32..6, 1u64..300, prop::bool::weighted(0.2)), 64),
            full in prop::collection::vec(prop::option::of(0u64..600), 6),
            free_ratio in prop_oneof![Just(0.1), Just(0.9)],
            cursor in prop::option::of(0u8..70),
        ) {
            let options = Options::default();
            let acc = Acc::new(0.25, 1).unwrap();
            chain.visit(|v, looked| {
                if !looked {
                    return Ok(());
                }
                let zones = FakeZones::drawn(v, &placed, &full);
                let busy = drawn_busy(v, &busy_bits);
                let key = cursor.map(|k| crate::key::internal_key(&[k], 500, ValueKind::Put));
                let cursors = vec![key; v.num_levels()];
                let ctx = PickCtx {
                    version: v,
                    options: &options,
                    compacting: &busy,
                    zones: &zones,
                    free_ratio,
                    cursors: &cursors,
                    blob_gc_files: 0,
                };
                for name in picker_names() {
                    let picker = picker_with(name, acc).unwrap();
                    for level in 0..v.num_levels() {
                        let want = order(name, acc, &ctx, level);
                        prop_assert_eq!(picker.order(&ctx, level), want, "{} L{}", name, level);
                    }
                }
                let scores = scores_by_level(v, &options, &busy);
                prop_assert_eq!(scores, walked_scores(v, &options, &busy));
                Ok(())
            })?;
        }

        /// The zone-aware pickers keep their groups and scores from call to call and
        /// version to version: with one layout throughout, files moving between zones (or
        /// out of every zone and back) and the full zones' live bytes changing between
        /// calls, every order is the reference's.
        #[test]
        fn zone_pickers_keep_up_with_moves_between_calls(
            chain in arb_chain(),
            busy_bits in prop::collection::vec(prop::bool::weighted(0.2), 64),
            placed in prop::collection::vec((0u32..6, 1u64..300, prop::bool::weighted(0.2)), 64),
            steps in prop::collection::vec(
                (
                    prop::collection::vec(
                        (0usize..64, prop::option::weighted(0.8, (0u32..6, 1u64..300))),
                        0..3,
                    ),
                    prop::collection::vec(prop::option::of(0u64..600), 6),
                ),
                12,
            ),
        ) {
            let options = Options::default();
            let acc = Acc::new(0.25, 1).unwrap();
            for name in ["zaca", "acc", "zone-drain"] {
                let picker = picker_with(name, acc).unwrap();
                let mut zones = FakeZones::default();
                let mut steps = steps.iter().cycle();
                let mut call = 0usize;
                chain.visit(|v, _| {
                    zones.place_drawn(v, &placed);
                    for _ in 0..2 {
                        let Some((moves, full)) = steps.next() else {
                            return Ok(());
                        };
                        let files: Vec<u64> = v.all_files().map(|(_, f)| f.number).collect();
                        for &(i, to) in moves {
                            if let Some(&n) = files.get(i % files.len().max(1)) {
                                zones.move_file(n, to.map(|(z, b)| vec![(z, b)]).unwrap_or_default());
                            }
                        }
                        zones.set_full(full);
                        call += 1;
                        let busy_bits = &busy_bits[call % 8..];
                        let busy = drawn_busy(v, busy_bits);
                        let ctx = PickCtx {
                            version: v,
                            options: &options,
                            compacting: &busy,
                            zones: &zones,
                            free_ratio: 0.1,
                            cursors: &[],
                            blob_gc_files: 0,
                        };
                        for level in 0..v.num_levels() {
                            let want = order(name, acc, &ctx, level);
                            prop_assert_eq!(picker.order(&ctx, level), want, "{} L{}", name, level);
                        }
                    }
                    Ok(())
                })?;
            }
        }
    }
}
