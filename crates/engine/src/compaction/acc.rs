//! ACC, the adaptive compaction controller of the MSST'24 Same-Zone Compaction paper
//! (section V-B, Pseudocode 1): SICA while free space is plentiful or for the first levels,
//! ZACA once free space is at or below the turning point.
//!
//! ZACA merges larger groups than SICA, so its compactions take longer; it pays off only
//! when the zone cleaner is about to run, and L0→L1 and L1→L2 compactions (which run one
//! at a time and stall writes) stay with SICA. [`Acc::turning_point`] (a fraction of free
//! space, 0.25) and [`Acc::min_level`] (2) are the paper's two settings; zone-drain switches
//! with the same two knobs.

use crate::options::Options;

use super::picker::{PickCtx, Picker};
use super::sica::Sica;
use super::zaca::Zaca;

/// SICA or ZACA, by free space and level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Acc {
    /// The fraction of free space (0..=1) above which ACC orders like SICA; at or below it,
    /// levels from `min_level` on are ordered by ZACA (0.25, the MSST'24 paper's choice).
    pub turning_point: f64,
    /// The first level ACC may order by ZACA (2: L0→L1 and L1→L2 compactions always follow
    /// SICA, as in the paper; 0 = no level constraint).
    pub min_level: usize,
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            turning_point: 0.25,
            min_level: 2,
        }
    }
}

impl Acc {
    /// ACC with its two settings; a turning point outside [0, 1] is an error (0 turns ZACA
    /// off, 1 turns it on whenever a level allows it).
    pub fn new(turning_point: f64, min_level: usize) -> Result<Acc, String> {
        if !(0.0..=1.0).contains(&turning_point) {
            return Err(format!(
                "acc_turning_point {turning_point} is not a fraction of free space in [0, 1]"
            ));
        }
        Ok(Acc {
            turning_point,
            min_level,
        })
    }

    /// Whether ACC orders `level` by ZACA now: free space (`ctx.free_ratio`, the file
    /// layer's free/usable ratio) at or below the turning point and `level` at least
    /// `min_level`.
    pub fn uses_zaca(&self, ctx: &PickCtx<'_>, level: usize) -> bool {
        ctx.free_ratio <= self.turning_point && level >= self.min_level
    }

    /// A minimum level beyond the levels would silently turn ZACA off (a turning point of 0
    /// says that explicitly).
    pub(super) fn check_levels(&self, options: &Options) -> Result<(), String> {
        if self.min_level >= options.num_levels as usize {
            return Err(format!(
                "acc_min_level {} is not a level (num_levels {})",
                self.min_level, options.num_levels
            ));
        }
        Ok(())
    }
}

impl Picker for Acc {
    fn name(&self) -> &'static str {
        "acc"
    }

    fn check(&self, options: &Options) -> Result<(), String> {
        self.check_levels(options)
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        if self.uses_zaca(ctx, level) {
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

    fn order(level: usize, free_ratio: f64, acc: Acc) -> Vec<u64> {
        let (v, zones) = lsm();
        order_with(
            &acc,
            &v,
            level,
            &zones,
            &[],
            free_ratio,
            &Options::default(),
        )
    }

    #[test]
    fn above_the_turning_point_orders_like_sica() {
        let a = Acc::default();
        assert_eq!(order(1, 0.9, a), [1, 2]);
        assert_eq!(order(2, 0.9, a), [10, 11]);
        assert_eq!(order(2, 0.2501, a), [10, 11]);
    }

    #[test]
    fn below_the_turning_point_l0_and_l1_stay_with_sica() {
        assert_eq!(order(1, 0.1, Acc::default()), [1, 2]);
        // No level constraint: L1 goes to ZACA as well.
        let all_levels = Acc {
            min_level: 0,
            ..Acc::default()
        };
        assert_eq!(order(1, 0.1, all_levels), [2, 1]);
    }

    #[test]
    fn l2_at_or_below_the_turning_point_orders_by_zaca() {
        let a = Acc::default();
        assert_eq!(order(2, 0.25, a), [11, 10]);
        assert_eq!(order(2, 0.0, a), [11, 10]);
        // A turning point of 0 keeps SICA while any space is free; 1 always uses ZACA.
        let never = Acc::new(0.0, 2).unwrap();
        assert_eq!(order(2, 0.01, never), [10, 11]);
        let always = Acc::new(1.0, 2).unwrap();
        assert_eq!(order(2, 1.0, always), [11, 10]);
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(Acc::default(), Acc::new(0.25, 2).unwrap());
        for tp in [1.5, -0.1, f64::NAN] {
            let err = Acc::new(tp, 2).unwrap_err();
            assert!(err.contains("acc_turning_point"), "{err}");
        }
        let o = Options::default();
        Acc::new(0.25, 6).unwrap().check(&o).unwrap();
        let err = Acc::new(0.25, 7).unwrap().check(&o).unwrap_err();
        assert!(err.contains("acc_min_level 7"), "{err}");
    }
}
