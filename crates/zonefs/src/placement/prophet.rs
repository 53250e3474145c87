//! Prophet's deletion-time-aware allocation (MSST'24, section IV): zones are given a window
//! [L, R] of predicted deletion ticks (FC-ticks, the engine's flush + compaction count) and
//! an SST goes to the zone whose window holds its predicted deletion tick PD.
//!
//! The engine predicts PD and says whether the file is short-lived (its level is at most
//! the short threshold, or it overlapped a file of the level above when it was created,
//! case c2B); it also sends how many SSTs die per tick (C_rate × D_num) and the SST size
//! (see [`PredictedDeath`]). The window length is T = zone capacity / (SST size × deaths
//! per tick) ticks: the ticks whose deaths fill one zone.
//!
//! Order (the paper's five steps, within the open/active limits):
//! 1. a short-lived file goes to a short-lived zone (the fullest with room), or opens one;
//! 2. a zone whose window holds PD;
//! 3. a new zone with the window of PD, if an active resource is free;
//! 4. the zone with the smallest L above PD (PD does not delay its reset);
//! 5. the zone with the largest R below PD;
//!
//! then, with no windowed zone with room and no free resource, the open zone with the least
//! room is finished and a new one opened (as LIZA does). Long-lived files never go to
//! short-lived zones; short-lived files may go anywhere when no short-lived zone can be had.
//! Files without a prediction (WAL, manifest, blob files, an SST the cleaner moves without
//! the engine's help) are placed by LIZA among LIZA's zones.
//!
//! With rounding, a window is L = ⌊PD/T⌋·T, R = L + T − 1, so that files of close PD share a
//! zone instead of opening zones with overlapping windows; without it (Prophet-GC-NO),
//! L = PD and R = L + T. Prophet-GC-NO also has no short-lived zones (no segregation).
//! Within a step, of several zones the fullest with room wins (fill a zone before starting
//! another); equal room goes to the lower zone.

use super::liza::{cheapest_to_finish, is_candidate};
use super::{Decision, Liza, PlacementCtx, PlacementPolicy, PredictedDeath, ZoneView};

/// The zone class of Prophet's short-lived zones.
pub const SHORT_CLASS: u8 = 16;
/// The zone class of Prophet's windowed zones (the window is in the zone's policy bytes).
pub const WINDOW_CLASS: u8 = 17;

/// Prophet's allocation; `rounding` and `segregation` are the paper's two optimizations
/// (both on in `prophet` and `prophet-gc`, both off in `prophet-gc-no`).
#[derive(Clone, Copy, Debug)]
pub struct Prophet {
    /// The policy's name: `prophet`, `prophet-gc` or `prophet-gc-no`.
    pub name: &'static str,
    /// Windows start at multiples of their length (else at the file's predicted death).
    pub rounding: bool,
    /// Short-lived files get zones of their own.
    pub segregation: bool,
}

impl Prophet {
    /// `prophet`, `prophet-gc` (the same allocation; they differ in the cleaning mode) and
    /// `prophet-gc-no`.
    pub fn by_name(name: &str) -> Option<Prophet> {
        let (name, optimized) = match name {
            "prophet" => ("prophet", true),
            "prophet-gc" => ("prophet-gc", true),
            "prophet-gc-no" => ("prophet-gc-no", false),
            _ => return None,
        };
        Some(Prophet {
            name,
            rounding: optimized,
            segregation: optimized,
        })
    }

    /// The window a zone opened for a file dying at `pd` gets.
    pub fn window(&self, pd: u64, len: u64) -> Window {
        let len = len.max(1);
        if self.rounding {
            let lo = pd / len * len;
            Window {
                lo,
                hi: lo.saturating_add(len - 1),
            }
        } else {
            Window {
                lo: pd,
                hi: pd.saturating_add(len),
            }
        }
    }
}

/// A zone's range of predicted deletion ticks, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The first tick of the window.
    pub lo: u64,
    /// The last tick of the window.
    pub hi: u64,
}

impl Window {
    /// The window as a zone's policy bytes: `lo`, `hi`, little-endian.
    pub fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&self.lo.to_le_bytes());
        out.extend_from_slice(&self.hi.to_le_bytes());
        out
    }

    /// The window of a windowed zone; `None` for any other zone, or bytes of another size.
    pub fn of(z: &ZoneView) -> Option<Window> {
        if z.class != WINDOW_CLASS {
            return None;
        }
        let lo = z.policy.get(..8)?.try_into().ok()?;
        let hi = z.policy.get(8..16)?.try_into().ok()?;
        (z.policy.len() == 16).then(|| Window {
            lo: u64::from_le_bytes(lo),
            hi: u64::from_le_bytes(hi),
        })
    }

    /// Whether `tick` lies in the window.
    pub fn holds(self, tick: u64) -> bool {
        self.lo <= tick && tick <= self.hi
    }
}

/// The window length T in ticks: the ticks whose predicted deaths fill one zone (at least
/// one tick).
pub fn window_len(zone_capacity: u64, death: &PredictedDeath) -> u64 {
    let per_tick = death.sst_size as f64 * death.deaths_per_tick;
    if per_tick.is_nan() || per_tick <= 0.0 {
        return 1;
    }
    // Truncation toward zero is the intent (a whole number of ticks); huge values saturate.
    ((zone_capacity as f64 / per_tick) as u64).max(1)
}

impl PlacementPolicy for Prophet {
    fn name(&self) -> &'static str {
        self.name
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        let Some(death) = ctx.hint.death.as_ref() else {
            return liza_among_its_zones(ctx);
        };
        let short = self.segregation && death.short_lived;
        if short {
            if let Some(zone) = fullest(ctx, |z| z.class == SHORT_CLASS) {
                return Decision::Use(zone);
            }
            if ctx.can_open {
                return self.open(SHORT_CLASS, Vec::new(), None);
            }
        }
        let pd = death.tick;
        let windowed = |z: &ZoneView| Window::of(z);
        if let Some(zone) = fullest(ctx, |z| windowed(z).is_some_and(|w| w.holds(pd))) {
            return Decision::Use(zone);
        }
        let window = self.window(pd, window_len(ctx.zone_capacity, death));
        if ctx.can_open {
            return self.open(WINDOW_CLASS, window.encode(), None);
        }
        let candidates = || {
            ctx.zones
                .iter()
                .filter(|z| is_candidate(z, ctx.min_capacity))
                .filter_map(|z| Some((z.zone, windowed(z)?)))
        };
        let later = candidates()
            .filter(|(_, w)| w.lo > pd)
            .min_by_key(|&(zone, w)| (w.lo, zone));
        let earlier = || {
            candidates()
                .filter(|(_, w)| w.hi < pd)
                .max_by_key(|&(zone, w)| (w.hi, std::cmp::Reverse(zone)))
        };
        if let Some((zone, _)) = later.or_else(earlier) {
            return Decision::Use(zone);
        }
        if short {
            // No short-lived zone and no windowed one: any zone of the file's own kind.
            if let Some(zone) = fullest(ctx, |z| z.class == SHORT_CLASS) {
                return Decision::Use(zone);
            }
        }
        let class = if short { SHORT_CLASS } else { WINDOW_CLASS };
        let policy = if short { Vec::new() } else { window.encode() };
        self.open(class, policy, cheapest_to_finish(ctx.zones))
    }

    fn wants_prediction(&self) -> bool {
        true
    }
}

impl Prophet {
    fn open(&self, class: u8, policy: Vec<u8>, finish: Option<u32>) -> Decision {
        Decision::OpenEmpty {
            class,
            policy,
            finish,
        }
    }
}

/// Of the candidate zones (active, live data, idle, room for the file) that pass `keep`, the
/// one with the least room; the lower zone of equals.
fn fullest(ctx: &PlacementCtx<'_>, keep: impl Fn(&ZoneView) -> bool) -> Option<u32> {
    ctx.zones
        .iter()
        .filter(|z| is_candidate(z, ctx.min_capacity) && keep(z))
        .min_by_key(|z| (z.remaining, z.zone))
        .map(|z| z.zone)
}

/// LIZA over the zones that are not Prophet's, so that WAL and manifest data never lands in
/// a zone of predicted SST deaths (LIZA would read Prophet's classes as long lifetimes).
fn liza_among_its_zones(ctx: &PlacementCtx<'_>) -> Decision {
    let zones: Vec<ZoneView> = ctx
        .zones
        .iter()
        .filter(|z| z.class != SHORT_CLASS && z.class != WINDOW_CLASS)
        .cloned()
        .collect();
    let liza_ctx = PlacementCtx {
        zones: &zones,
        ..*ctx
    };
    match Liza.place(&liza_ctx) {
        // LIZA may only finish one of its own zones; with none, finish any.
        Decision::OpenEmpty {
            class,
            policy,
            finish: None,
        } if !ctx.can_open => Decision::OpenEmpty {
            class,
            policy,
            finish: cheapest_to_finish(ctx.zones),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::FileKind;
    use crate::placement::{Lifetime, PlacementHint, ZoneUse};

    const CAP: u64 = 1000;

    fn prophet() -> Prophet {
        Prophet::by_name("prophet").unwrap()
    }

    fn windowed(zone: u32, lo: u64, hi: u64, remaining: u64) -> ZoneView {
        ZoneView {
            zone,
            state: ZoneUse::Active,
            remaining,
            valid: 10,
            busy: false,
            class: WINDOW_CLASS,
            policy: Window { lo, hi }.encode(),
            first_blob: None,
        }
    }

    fn short_zone(zone: u32, remaining: u64) -> ZoneView {
        ZoneView {
            class: SHORT_CLASS,
            policy: Vec::new(),
            ..windowed(zone, 0, 0, remaining)
        }
    }

    /// A hint for an SST of 100 bytes dying at `tick`, with 1 death per tick: T = 10.
    fn hint(tick: u64, short_lived: bool) -> PlacementHint {
        PlacementHint {
            kind: Some(FileKind::Sst),
            level: Some(3),
            lifetime: Lifetime::Extreme,
            size: 100,
            death: Some(PredictedDeath {
                tick,
                short_lived,
                deaths_per_tick: 1.0,
                sst_size: 100,
            }),
            ..PlacementHint::default()
        }
    }

    fn place(p: Prophet, hint: &PlacementHint, zones: &[ZoneView], can_open: bool) -> Decision {
        p.place(&PlacementCtx {
            hint,
            zones,
            can_open,
            min_capacity: 1,
            zone_capacity: CAP,
        })
    }

    fn opened(p: &Decision) -> (u8, Option<Window>, Option<u32>) {
        match p {
            Decision::OpenEmpty {
                class,
                policy,
                finish,
            } => {
                let view = ZoneView {
                    class: *class,
                    policy: policy.clone(),
                    ..windowed(0, 0, 0, 0)
                };
                (*class, Window::of(&view), *finish)
            }
            other => panic!("expected an open, got {other:?}"),
        }
    }

    #[test]
    fn figure_4_window() {
        // A zone of 10 SSTs, C_rate = 6/9, D_num = 4: T = 10 / (6/9 × 4) = 3.75 → 3 ticks
        // of whole deaths; the paper's example rounds R up to 8 for L = 5 (R = L + T).
        let death = PredictedDeath {
            tick: 5,
            short_lived: false,
            deaths_per_tick: 6.0 / 9.0 * 4.0,
            sst_size: 1,
        };
        let t = window_len(10, &death);
        assert_eq!(t, 3);
        let unrounded = Prophet::by_name("prophet-gc-no").unwrap();
        assert_eq!(unrounded.window(5, t), Window { lo: 5, hi: 8 });
        // Rounded: ⌊5/3⌋·3 = 3 .. 5. The paper's rounding example: T = 10, PD 15 and 13
        // share [10, 19].
        assert_eq!(prophet().window(5, t), Window { lo: 3, hi: 5 });
        assert_eq!(prophet().window(15, 10), prophet().window(13, 10));
        assert_eq!(prophet().window(15, 10), Window { lo: 10, hi: 19 });
    }

    #[test]
    fn step_1_short_lived_files_go_to_short_lived_zones() {
        let zones = [
            windowed(1, 50, 59, 500),
            short_zone(2, 900),
            short_zone(3, 300),
        ];
        // The fullest short-lived zone, even though a window holds PD.
        assert_eq!(
            place(prophet(), &hint(55, true), &zones, true),
            Decision::Use(3)
        );
        // None: open one (no window).
        let (class, window, finish) = opened(&place(prophet(), &hint(55, true), &zones[..1], true));
        assert_eq!((class, window, finish), (SHORT_CLASS, None, None));
        // Long-lived files never go to short-lived zones.
        let d = place(prophet(), &hint(500, false), &zones[1..], false);
        assert!(matches!(d, Decision::OpenEmpty { .. }), "{d:?}");
        // Without segregation, no short-lived zone is used or opened.
        let gc_no = Prophet::by_name("prophet-gc-no").unwrap();
        assert_eq!(
            place(gc_no, &hint(55, true), &zones, true),
            Decision::Use(1)
        );
    }

    #[test]
    fn step_2_a_zone_whose_window_holds_pd() {
        let zones = [
            windowed(1, 10, 19, 500),
            windowed(2, 20, 29, 500),
            windowed(3, 20, 29, 200),
        ];
        assert_eq!(
            place(prophet(), &hint(25, false), &zones, true),
            Decision::Use(3)
        );
        assert_eq!(
            place(prophet(), &hint(10, false), &zones, false),
            Decision::Use(1)
        );
    }

    #[test]
    fn step_3_opens_a_zone_with_the_window_of_pd() {
        let zones = [windowed(1, 10, 19, 500)];
        let (class, window, finish) = opened(&place(prophet(), &hint(47, false), &zones, true));
        assert_eq!(class, WINDOW_CLASS);
        assert_eq!(window, Some(Window { lo: 40, hi: 49 }));
        assert_eq!(finish, None);
    }

    #[test]
    fn steps_4_and_5_when_no_zone_may_be_opened() {
        let zones = [
            windowed(1, 10, 19, 500),
            windowed(2, 60, 69, 500),
            windowed(3, 40, 49, 500),
            windowed(4, 30, 39, 500),
        ];
        // Step 4: the smallest L above PD.
        assert_eq!(
            place(prophet(), &hint(25, false), &zones, false),
            Decision::Use(4)
        );
        // Step 5: nothing above: the largest R below PD.
        assert_eq!(
            place(prophet(), &hint(75, false), &zones, false),
            Decision::Use(2)
        );
        // Busy or full zones are not candidates.
        let mut busy = zones.clone();
        busy[3].busy = true;
        assert_eq!(
            place(prophet(), &hint(25, false), &busy, false),
            Decision::Use(3)
        );
    }

    #[test]
    fn no_candidate_and_no_resource_finishes_the_fullest_zone() {
        let mut zones = [windowed(1, 10, 19, 0), windowed(2, 20, 29, 40)];
        zones[0].state = ZoneUse::Full;
        zones[1].busy = false;
        zones[1].valid = 0;
        let (class, window, finish) = opened(&place(prophet(), &hint(75, false), &zones, false));
        assert_eq!((class, finish), (WINDOW_CLASS, Some(2)));
        assert_eq!(window, Some(Window { lo: 70, hi: 79 }));
    }

    #[test]
    fn files_without_a_prediction_use_liza_zones_only() {
        let wal = PlacementHint {
            kind: Some(FileKind::Wal),
            lifetime: Lifetime::Short,
            ..PlacementHint::default()
        };
        let zones = [windowed(1, 10, 19, 500), short_zone(2, 500)];
        let (class, window, _) = opened(&place(prophet(), &wal, &zones, true));
        assert_eq!((class, window), (Lifetime::Short.code(), None));
        let mut liza_zone = windowed(3, 0, 0, 500);
        liza_zone.class = Lifetime::Short.code();
        liza_zone.policy.clear();
        let zones = [windowed(1, 10, 19, 500), liza_zone];
        // LIZA relaxes to a zone of the same class when it cannot open one.
        assert_eq!(place(prophet(), &wal, &zones, false), Decision::Use(3));
    }

    #[test]
    fn window_bytes_round_trip_and_reject_other_sizes() {
        let mut z = windowed(1, 7, 1 << 40, 10);
        assert_eq!(Window::of(&z), Some(Window { lo: 7, hi: 1 << 40 }));
        z.policy.push(0);
        assert_eq!(Window::of(&z), None);
        z.class = SHORT_CLASS;
        assert_eq!(Window::of(&z), None);
    }

    #[test]
    fn window_length_is_at_least_one_tick() {
        let mut d = PredictedDeath {
            tick: 0,
            short_lived: false,
            deaths_per_tick: 0.0,
            sst_size: 100,
        };
        assert_eq!(window_len(1000, &d), 1);
        d.deaths_per_tick = f64::NAN;
        assert_eq!(window_len(1000, &d), 1);
        d.deaths_per_tick = 0.5;
        assert_eq!(window_len(1000, &d), 20);
    }
}
