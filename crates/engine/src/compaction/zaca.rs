//! ZACA, the zone-aware compaction victim selection of the MSST'24 Same-Zone Compaction
//! paper (section V-A): each file VC of the level, with the files of the next level that
//! overlap it, forms a group G; the groups whose bytes sit in the fewest zones come first.
//!
//! For each zone m, S_m = bytes of G stored in m, and S_same(G) = Σ S_m² / (Σ S_m)², in
//! (0, 1]: 1 when one zone holds the whole group. Higher S_same first; ties (and groups
//! whose zones are unknown, which score 0) keep SICA's order. A compaction that deletes a
//! group held by few zones leaves those zones mostly invalid, which the zone cleaner then
//! resets with few copies.

use crate::version::Version;

use super::groups::{order_by_score, GroupScore, LiveBytes};
use super::picker::{PickCtx, Picker};
use super::sica::Sica;

/// Most same-zone group first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Zaca;

impl Picker for Zaca {
    fn name(&self) -> &'static str {
        "zaca"
    }

    /// Candidates by S_same (higher first), files being compacted last; SICA's order
    /// among equal scores. The groups and scores are kept from call to call (see
    /// `groups.rs`).
    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        order_by_score(self, ctx, level)
    }
}

impl GroupScore for Zaca {
    fn scorer(&self) -> &'static str {
        "zaca"
    }

    fn base_order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        Sica.order(ctx, level)
    }

    fn reads_live(&self) -> bool {
        false
    }

    fn score(&self, _: &Version, _: usize, _: usize, zones: &[(u32, u64)], _: &LiveBytes) -> u64 {
        // S_same is never negative: its bit pattern orders like its value.
        s_same(zones).to_bits()
    }
}

/// S_same = Σ S_m² / (Σ S_m)² over the zones holding a group (`(zone, bytes)` pairs, one
/// per zone); 0 for no bytes. The same figure the compaction records report.
pub fn s_same(zone_bytes: &[(u32, u64)]) -> f64 {
    let total: f64 = zone_bytes.iter().map(|(_, b)| *b as f64).sum();
    if total == 0.0 {
        return 0.0;
    }
    let squares: f64 = zone_bytes.iter().map(|(_, b)| (*b as f64).powi(2)).sum();
    squares / (total * total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, order_in, two_groups, version_of, FakeZones};
    use crate::compaction::Sica;

    #[test]
    fn the_papers_example_scores_one_third_and_one() {
        // Three SSTs of size 1 in three zones, and three in one zone (MSST'24 V-A).
        let across = s_same(&[(0, 1), (1, 1), (2, 1)]);
        assert!((across - 1.0 / 3.0).abs() < 1e-12, "{across}");
        assert_eq!(s_same(&[(0, 3)]), 1.0);
        assert_eq!(s_same(&[]), 0.0);
        assert_eq!(s_same(&[(4, 0)]), 0.0);
    }

    #[test]
    fn the_same_zone_group_comes_first() {
        let v = two_groups();
        // Group 1 spread over zones 1, 2, 3 (S_same 1/3); group 2 all in zone 7 (1.0).
        let zones = FakeZones::one_zone_each(&[(1, 1), (10, 2), (11, 3), (2, 7), (12, 7), (13, 7)]);
        assert_eq!(order_in(&Sica, &v, 1, &zones, &[]), [1, 2]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [2, 1]);
        // The other way round, the other group.
        let zones = FakeZones::one_zone_each(&[(1, 1), (10, 1), (11, 1), (2, 7), (12, 8), (13, 9)]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [1, 2]);
    }

    #[test]
    fn bytes_not_file_counts_make_the_score() {
        let v = two_groups();
        // Group 1: 300 bytes in zone 1, 10 in zone 2 → (300² + 10²) / 310² ≈ 0.94.
        // Group 2: two zones of 150 bytes → 0.5.
        let zones = FakeZones::new(&[
            (1, vec![(1, 200)]),
            (10, vec![(1, 100)]),
            (11, vec![(2, 10)]),
            (2, vec![(5, 100)]),
            (12, vec![(5, 50), (6, 50)]),
            (13, vec![(6, 100)]),
        ]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [1, 2]);
    }

    #[test]
    fn ties_and_unknown_zones_keep_sicas_order() {
        let v = version_of(
            4,
            &[
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"d", b"f", 300)),
                (1, file(3, b"g", b"i", 200)),
                (1, file(4, b"j", b"l", 300)),
                (2, file(10, b"j", b"k", 50)),
            ],
        );
        let sica = order_in(&Sica, &v, 1, &FakeZones::default(), &[]);
        assert_eq!(sica, [2, 4, 3, 1]);
        // No zone known: every group scores 0.
        assert_eq!(order_in(&Zaca, &v, 1, &FakeZones::default(), &[]), sica);
        // Every group in one zone of its own: all score 1.
        let own = FakeZones::one_zone_each(&[(1, 1), (2, 2), (3, 3), (4, 4), (10, 4)]);
        assert_eq!(order_in(&Zaca, &v, 1, &own, &[]), sica);
        // Files 2 and 3 spread over two zones (0.5 each), 1 and 4 whole (1.0): SICA's
        // order within each score.
        let split = FakeZones::new(&[
            (1, vec![(1, 100)]),
            (2, vec![(2, 150), (3, 150)]),
            (3, vec![(4, 100), (5, 100)]),
            (4, vec![(6, 300)]),
            (10, vec![(6, 50)]),
        ]);
        assert_eq!(order_in(&Zaca, &v, 1, &split, &[]), [4, 1, 2, 3]);
    }

    #[test]
    fn busy_files_come_last_without_a_lookup() {
        let v = two_groups();
        let zones = FakeZones::one_zone_each(&[(1, 1), (10, 1), (11, 1), (2, 7), (12, 8), (13, 9)]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[1]), [2, 1]);
        assert_eq!(zones.looked_up(), vec![2, 12, 13]);
    }

    #[test]
    fn each_file_is_looked_up_once_per_call() {
        // L2 file 11 overlaps both L1 files.
        let v = version_of(
            4,
            &[
                (1, file(1, b"a", b"c", 100)),
                (1, file(2, b"d", b"f", 100)),
                (2, file(10, b"a", b"b", 100)),
                (2, file(11, b"c", b"d", 100)),
                (2, file(12, b"e", b"f", 100)),
            ],
        );
        let zones = FakeZones::one_zone_each(&[(1, 1), (2, 1), (10, 1), (11, 2), (12, 3)]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [1, 2]);
        // Group by group: 11 is in both, and looked up once.
        assert_eq!(zones.looked_up(), vec![1, 10, 11, 2, 12]);
        // A new call on the same version and layout looks nothing up again ...
        order_in(&Zaca, &v, 1, &zones, &[]);
        assert_eq!(zones.looked_up().len(), 5);
        // ... and after a move, only the groups in the zones it left or entered: 12 leaves
        // zone 3, which only group 2 holds.
        let mut zones = zones;
        zones.move_file(12, vec![(4, 100)]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [1, 2]);
        assert_eq!(zones.looked_up()[5..], [2, 11, 12]);
        // Files 2 and 11 joining 12 in zone 4 make group 2 whole there: it comes first.
        zones.move_file(2, vec![(4, 100)]);
        zones.move_file(11, vec![(4, 100)]);
        assert_eq!(order_in(&Zaca, &v, 1, &zones, &[]), [2, 1]);
    }
}
