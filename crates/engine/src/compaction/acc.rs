//! ACC, the adaptive compaction controller of the MSST'24 Same-Zone Compaction paper
//! (section V-B, Pseudocode 1): SICA while free space is plentiful or for the first levels,
//! ZACA once free space is at or below the turning point.
//!
//! ZACA merges larger groups than SICA, so its compactions take longer; it pays off only
//! when the zone cleaner is about to run, and L0→L1 and L1→L2 compactions (which run one
//! at a time and stall writes) stay with SICA. `Options::acc_turning_point` (a fraction of
//! free space, 0.25) and `Options::acc_min_level` (2) are the paper's two settings.

use super::picker::{PickCtx, Picker};
use super::sica::Sica;
use super::zaca::Zaca;

/// SICA or ZACA, by free space and level.
#[derive(Clone, Copy, Debug, Default)]
pub struct Acc;

impl Acc {
    /// Whether ACC orders `level` by ZACA now: free space (`ctx.free_ratio`, the file
    /// layer's free/usable ratio) at or below the turning point and `level` at least
    /// `acc_min_level`.
    pub fn uses_zaca(ctx: &PickCtx<'_>, level: usize) -> bool {
        let o = ctx.options;
        ctx.free_ratio <= o.acc_turning_point && level >= o.acc_min_level
    }
}

impl Picker for Acc {
    fn name(&self) -> &'static str {
        "acc"
    }

    fn uses_acc_options(&self) -> bool {
        true
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        if Acc::uses_zaca(ctx, level) {
            Zaca.order(ctx, level)
        } else {
            Sica.order(ctx, level)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_util::{file, order_with, version_of, FakeZones};
    use crate::options::Options;
    use crate::version::Version;

    /// L1: 1 [a,c] (200 bytes), 2 [d,f]; L2: 10 [a,c] (200 bytes), 11 [d,f]; L3: 30 [a,b],
    /// 31 [e,e]. In L1 and in L2 the larger file (1, 10) comes first for SICA; its group is
    /// spread over two zones, the other file's group sits in zone 5: ZACA puts it first.
    fn lsm() -> (Version, FakeZones) {
        let v = version_of(
            4,
            &[
                (1, file(1, b"a", b"c", 200)),
                (1, file(2, b"d", b"f", 100)),
                (2, file(10, b"a", b"c", 200)),
                (2, file(11, b"d", b"f", 100)),
                (3, file(30, b"a", b"b", 100)),
                (3, file(31, b"e", b"e", 100)),
            ],
        );
        let zones = FakeZones::one_zone_each(&[(1, 1), (2, 5), (10, 2), (11, 5), (30, 3), (31, 5)]);
        (v, zones)
    }

    fn order(level: usize, free_ratio: f64, options: &Options) -> Vec<u64> {
        let (v, zones) = lsm();
        order_with(&Acc, &v, level, &zones, &[], free_ratio, options)
    }

    #[test]
    fn above_the_turning_point_orders_like_sica() {
        let o = Options::default();
        assert_eq!(order(1, 0.9, &o), [1, 2]);
        assert_eq!(order(2, 0.9, &o), [10, 11]);
        assert_eq!(order(2, 0.2501, &o), [10, 11]);
    }

    #[test]
    fn below_the_turning_point_l0_and_l1_stay_with_sica() {
        let o = Options::default();
        assert_eq!(order(1, 0.1, &o), [1, 2]);
        // No level constraint: L1 goes to ZACA as well.
        let all_levels = Options {
            acc_min_level: 0,
            ..Options::default()
        };
        assert_eq!(order(1, 0.1, &all_levels), [2, 1]);
    }

    #[test]
    fn l2_at_or_below_the_turning_point_orders_by_zaca() {
        let o = Options::default();
        assert_eq!(order(2, 0.25, &o), [11, 10]);
        assert_eq!(order(2, 0.0, &o), [11, 10]);
        // A turning point of 0 keeps SICA while any space is free; 1 always uses ZACA.
        let never = Options {
            acc_turning_point: 0.0,
            ..Options::default()
        };
        assert_eq!(order(2, 0.01, &never), [10, 11]);
        let always = Options {
            acc_turning_point: 1.0,
            ..Options::default()
        };
        assert_eq!(order(2, 1.0, &always), [11, 10]);
    }
}
