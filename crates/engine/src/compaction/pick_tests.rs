//! Tests of the compaction builder: hand-built versions for each rule, and a property test
//! that every picked compaction is one a version can apply.

use std::collections::HashSet;

use proptest::prelude::*;

use super::*;
use crate::compaction::picker::{NoZones, ZoneLookup};
use crate::compaction::registry::{picker_by_name, picker_names};
use crate::compaction::test_util::{arb_version, file, file_seq, numbers, version_of};
use crate::options::Options;
use crate::version::VersionEdit;

fn opts() -> Options {
    Options {
        level0_file_num_compaction_trigger: 4,
        max_bytes_for_level_base: 1000,
        max_bytes_for_level_multiplier: 10.0,
        target_file_size_base: 100,
        max_compaction_bytes: 100_000,
        ..Options::default()
    }
}

struct Env {
    options: Options,
    busy: HashSet<u64>,
    cursors: Vec<Option<Vec<u8>>>,
}

impl Env {
    fn new() -> Env {
        Env {
            options: opts(),
            busy: HashSet::new(),
            cursors: Vec::new(),
        }
    }

    fn busy(mut self, numbers: &[u64]) -> Env {
        self.busy = numbers.iter().copied().collect();
        self
    }

    fn ctx<'a>(&'a self, v: &'a Version) -> PickCtx<'a> {
        PickCtx {
            version: v,
            options: &self.options,
            compacting: &self.busy,
            zones: &NoZones,
            free_ratio: 1.0,
            cursors: &self.cursors,
            blob_gc_files: 0,
        }
    }

    fn pick(&self, v: &Version, picker: &str) -> Option<Compaction> {
        pick_compaction(&self.ctx(v), picker_by_name(picker).unwrap().as_ref())
    }
}

/// L1 with three files that each picker ranks differently; each overlaps one L2 file.
fn ranked_level() -> Version {
    version_of(
        4,
        &[
            (1, file_seq(1, (b"a", 10), (b"b", 60), 600)),
            (1, file_seq(2, (b"c", 30), (b"d", 40), 500)),
            (1, file_seq(3, (b"e", 20), (b"f", 90), 450)),
            (2, file(10, b"a", b"b", 400)),
            (2, file(11, b"c", b"d", 10)),
            (2, file(12, b"e", b"f", 100)),
        ],
    )
}

#[test]
fn each_picker_seeds_with_its_first_idle_file() {
    let v = ranked_level();
    // (picker, first choice, choice when the first is busy)
    let cases = [
        ("sica", 1, Some(2)),
        ("min-overlap", 2, Some(3)),
        ("oldest-smallest-seq", 1, Some(3)),
        ("oldest-largest-seq", 2, Some(1)),
        ("round-robin", 1, None),
        // Without zone information every group scores the same: SICA's order.
        ("zaca", 1, Some(2)),
        ("acc", 1, Some(2)),
    ];
    for (picker, first, second) in cases {
        let mut env = Env::new();
        env.options.max_bytes_for_level_base = 500;
        let c = env.pick(&v, picker).unwrap();
        assert_eq!(c.inputs[0].number, first, "{picker}");
        // Round-robin also takes file 2: L1 is 1050 bytes over its target.
        let want = if picker == "round-robin" { 2 } else { 1 };
        assert_eq!(
            (c.inputs.len(), c.output_inputs.len()),
            (want, want),
            "{picker}"
        );
        env.busy = [first].into();
        let next = env.pick(&v, picker).map(|c| c.inputs[0].number);
        assert_eq!(next, second, "{picker} with file {first} busy");
    }
}

#[test]
fn l0_takes_every_overlapping_l0_file() {
    let v = version_of(
        4,
        &[
            (0, file(1, b"a", b"c", 10)),
            (0, file(2, b"b", b"e", 10)),
            (0, file(3, b"d", b"f", 10)),
            (0, file(4, b"x", b"z", 10)),
            (0, file(5, b"m", b"n", 10)),
            (1, file(10, b"a", b"f", 10)),
            (1, file(11, b"g", b"h", 10)),
        ],
    );
    // The oldest file seeds; the overlapping chain 1-2-3 comes with it, 4 and 5 stay.
    let c = Env::new().pick(&v, "oldest-smallest-seq").unwrap();
    assert_eq!(
        (c.level, c.output_level, c.reason),
        (0, 1, CompactionReason::L0FileCount)
    );
    assert_eq!(numbers(&c.inputs), [3, 2, 1]);
    assert_eq!(numbers(&c.output_inputs), [10]);
    assert!(!c.trivial_move);
    assert_eq!(c.score, 1.25);
    assert_eq!(c.max_output_file_size, 100);
    assert!(c.bottommost);
}

#[test]
fn oldest_l0_files_move_down_when_they_overlap_nothing() {
    let v = version_of(
        4,
        &[
            (0, file(1, b"e", b"f", 10)),
            (0, file(2, b"a", b"b", 10)),
            (0, file(3, b"g", b"h", 10)),
            (0, file(4, b"k", b"p", 10)),
            (1, file(10, b"m", b"n", 10)),
        ],
    );
    let c = Env::new().pick(&v, "min-overlap").unwrap();
    assert!(c.trivial_move);
    assert_eq!(numbers(&c.inputs), [2, 1, 3], "sorted by key");
    // The run only grows at its ends: a newer file in a gap between taken files stops it.
    let v = version_of(
        4,
        &[
            (0, file(1, b"e", b"f", 10)),
            (0, file(2, b"a", b"b", 10)),
            (0, file(3, b"c", b"d", 10)),
            (0, file(4, b"k", b"p", 10)),
            (1, file(10, b"m", b"n", 10)),
        ],
    );
    let c = Env::new().pick(&v, "min-overlap").unwrap();
    assert!(c.trivial_move);
    assert_eq!(numbers(&c.inputs), [2, 1]);
    assert!(c.output_inputs.is_empty() && c.grandparents.is_empty());
}

#[test]
fn l0_into_an_empty_level_moves_only_if_l0_files_are_disjoint() {
    let disjoint: Vec<_> = (1..=4u8)
        .map(|i| (0, file(u64::from(i), &[b'a' + 2 * i], &[b'b' + 2 * i], 10)))
        .collect();
    let c = Env::new().pick(&version_of(4, &disjoint), "sica").unwrap();
    assert!(c.trivial_move, "{c:?}");
    let overlapping: Vec<_> = (1..=4).map(|i| (0, file(i, b"a", b"z", 10))).collect();
    let c = Env::new()
        .pick(&version_of(4, &overlapping), "sica")
        .unwrap();
    assert!(!c.trivial_move);
    assert_eq!(numbers(&c.inputs), [4, 3, 2, 1]);
}

/// L1 over its target (1000 bytes) with files 1 and 2 sharing the user key `c`.
fn shared_key_level() -> Vec<(u32, FileMeta)> {
    vec![
        (1, file_seq(1, (b"a", 5), (b"c", 9), 400)),
        (1, file_seq(2, (b"c", 8), (b"e", 8), 600)),
        (1, file(3, b"f", b"g", 500)),
        (2, file(10, b"a", b"b", 50)),
        (2, file(11, b"f", b"g", 50)),
    ]
}

#[test]
fn a_user_key_is_never_split_between_compactions() {
    let v = version_of(4, &shared_key_level());
    let c = Env::new().pick(&v, "sica").unwrap();
    assert_eq!(c.reason, CompactionReason::LevelSize);
    assert_eq!(
        numbers(&c.inputs),
        [1, 2],
        "file 2 seeds, file 1 holds newer entries of c"
    );
    assert_eq!(numbers(&c.output_inputs), [10]);
    // With file 1 busy, the cut around file 2 is impossible: the next file seeds.
    let c = Env::new().busy(&[1]).pick(&v, "sica").unwrap();
    assert_eq!(
        numbers(&c.inputs),
        [3],
        "L1 still holds 1100 bytes without file 1"
    );
    assert_eq!(numbers(&c.output_inputs), [11]);
}

#[test]
fn deep_trivial_move_extends_to_at_most_four_files() {
    let mut files: Vec<_> = (0..6u8)
        .map(|i| {
            (
                1,
                file(u64::from(i) + 1, &[b'a' + 2 * i], &[b'b' + 2 * i], 200),
            )
        })
        .collect();
    files.push((2, file(20, b"x", b"z", 10)));
    let v = version_of(4, &files);
    let c = Env::new().pick(&v, "min-overlap").unwrap();
    assert!(c.trivial_move);
    assert_eq!(numbers(&c.inputs), [1, 2, 3, 4]);
    // A file of the next level in the middle stops the run before it.
    files.push((2, file(21, b"g", b"g", 10)));
    let v = version_of(4, &files);
    let c = Env::new().pick(&v, "min-overlap").unwrap();
    assert_eq!(numbers(&c.inputs), [1, 2, 3]);
    assert!(c.trivial_move);
}

#[test]
fn no_trivial_move_over_too_much_grandparent_data() {
    let v = version_of(
        4,
        &[
            (1, file(1, b"a", b"b", 1100)),
            (3, file(30, b"a", b"z", 5000)),
        ],
    );
    let mut env = Env::new();
    assert!(env.pick(&v, "sica").unwrap().trivial_move);
    env.options.max_compaction_bytes = 3000;
    let c = env.pick(&v, "sica").unwrap();
    assert!(!c.trivial_move && c.output_inputs.is_empty());
    assert_eq!(numbers(&c.grandparents), [30]);
}

#[test]
fn inputs_grow_when_the_output_level_files_stay_the_same() {
    let v = version_of(
        4,
        &[
            (1, file(1, b"a", b"b", 300)),
            (1, file(2, b"c", b"d", 600)),
            (1, file(3, b"e", b"f", 300)),
            (1, file(4, b"h", b"i", 300)),
            (2, file(10, b"a", b"d", 50)),
            (2, file(11, b"e", b"z", 50)),
        ],
    );
    let c = Env::new().pick(&v, "sica").unwrap();
    assert_eq!(numbers(&c.inputs), [1, 2], "3 would add file 11");
    assert_eq!(numbers(&c.output_inputs), [10]);
}

#[test]
fn nothing_is_picked_when_every_candidate_is_busy() {
    let v = version_of(
        4,
        &[
            (1, file(1, b"a", b"c", 600)),
            (1, file(2, b"d", b"f", 600)),
            (2, file(10, b"a", b"f", 50)),
        ],
    );
    assert!(Env::new().pick(&v, "sica").is_some());
    for picker in picker_names() {
        assert!(
            Env::new().busy(&[10]).pick(&v, picker).is_none(),
            "{picker}"
        );
    }
    // Nothing due at all.
    let calm = version_of(4, &[(1, file(1, b"a", b"c", 100))]);
    assert!(Env::new().pick(&calm, "sica").is_none());
}

#[test]
fn base_level_waits_while_l0_is_blocked() {
    // L0 scores 1.25, L1 (without its busy file) 1.15.
    let mut files: Vec<_> = (1..=5).map(|i| (0, file(i, b"a", b"m", 10))).collect();
    files.extend([
        (1, file(10, b"a", b"f", 800)),
        (1, file(11, b"g", b"m", 1150)),
        (2, file(20, b"a", b"f", 50)),
        (2, file(21, b"g", b"m", 50)),
    ]);
    let v = version_of(4, &files);
    // L1 → L2 on file 10 runs: L0 cannot compact (its range needs file 10), and L1 may
    // not go ahead of it even though file 11 is free.
    let env = Env::new().busy(&[10, 20]);
    assert!(env.pick(&v, "sica").is_none());
    // Without L0 pressure L1 compacts file 11.
    let v = version_of(4, &files[5..]);
    let c = env.pick(&v, "sica").unwrap();
    assert_eq!(numbers(&c.inputs), [11]);
}

#[test]
fn intra_l0_merges_the_newest_files_when_l0_cannot_move_down() {
    let mut files: Vec<_> = (1..=7).map(|i| (0, file(i, b"a", b"m", 10))).collect();
    files.push((1, file(10, b"a", b"m", 10)));
    let v = version_of(4, &files);
    let c = Env::new().busy(&[1, 2]).pick(&v, "sica").unwrap();
    assert_eq!((c.level, c.output_level), (0, 0));
    assert_eq!(numbers(&c.inputs), [7, 6, 5, 4, 3]);
    assert_eq!(c.max_output_file_size, u64::MAX, "L0 outputs are not cut");
    assert!(!c.bottommost && !c.trivial_move);
    // Fewer than trigger + 2 files: no intra-L0.
    let v = version_of(4, &files[2..]);
    assert!(Env::new().busy(&[3]).pick(&v, "sica").is_none());
}

#[test]
fn keys_beyond_the_output_level() {
    let v = version_of(
        5,
        &[
            (1, file(1, b"a", b"m", 1500)),
            (2, file(10, b"a", b"f", 50)),
            (3, file(20, b"k", b"z", 50)),
        ],
    );
    let c = Env::new().pick(&v, "sica").unwrap();
    assert_eq!((c.level, c.output_level), (1, 2));
    assert!(!c.bottommost);
    assert!(c.key_may_exist_beyond_output(&v, b"l"));
    assert!(!c.key_may_exist_beyond_output(&v, b"b"));
    assert_eq!(numbers(&c.grandparents), [20]);
    let v = version_of(
        5,
        &[
            (1, file(1, b"a", b"m", 1500)),
            (3, file(20, b"n", b"z", 50)),
        ],
    );
    let c = Env::new().pick(&v, "sica").unwrap();
    assert!(c.bottommost && !c.key_may_exist_beyond_output(&v, b"b"));
}

#[test]
fn round_robin_never_skips_the_file_at_its_cursor() {
    let v = version_of(
        4,
        &[
            (1, file(1, b"a", b"b", 600)),
            (1, file(2, b"c", b"d", 600)),
            (1, file(3, b"e", b"f", 600)),
            (2, file(10, b"c", b"f", 50)),
        ],
    );
    let mut env = Env::new();
    env.cursors = vec![None, Some(v.files(1)[1].smallest.clone())];
    let c = env.pick(&v, "round-robin").unwrap();
    assert_eq!(
        numbers(&c.inputs),
        [2, 3],
        "from the cursor to the right, until L1 fits"
    );
    assert_eq!(
        c.compact_cursor,
        Some(Vec::new()),
        "wraps after the last file"
    );
    env.busy = [2].into();
    assert!(
        env.pick(&v, "round-robin").is_none(),
        "a busy cursor file blocks the level"
    );
    assert!(env.pick(&v, "sica").is_some(), "other pickers skip it");
}

#[test]
fn round_robin_records_the_next_cursor() {
    let v = version_of(
        4,
        &[
            (1, file(1, b"a", b"b", 1100)),
            (1, file(2, b"c", b"d", 10)),
            (2, file(10, b"a", b"b", 50)),
        ],
    );
    let c = Env::new().pick(&v, "round-robin").unwrap();
    assert_eq!(numbers(&c.inputs), [1]);
    assert_eq!(
        c.compact_cursor.as_deref(),
        Some(v.files(1)[1].smallest.as_slice())
    );
    assert_eq!(Env::new().pick(&v, "sica").unwrap().compact_cursor, None);
}

#[test]
fn requested_compactions() {
    let v = version_of(
        4,
        &[
            (0, file(1, b"a", b"c", 10)),
            (0, file(2, b"b", b"d", 10)),
            (0, file(3, b"x", b"y", 10)),
            (2, file(20, b"a", b"c", 10)),
            (2, file(21, b"d", b"f", 10)),
            (2, file(22, b"g", b"h", 10)),
            (3, file(30, b"a", b"e", 10)),
            (3, file(31, b"x", b"z", 10)),
        ],
    );
    let env = Env::new();
    let ctx = env.ctx(&v);
    // Non-adjacent files take every file between them.
    let c = pick_requested(&ctx, 2, &[22, 20]).unwrap();
    assert_eq!(
        (c.level, c.output_level, c.reason),
        (2, 3, CompactionReason::Requested)
    );
    assert_eq!(numbers(&c.inputs), [20, 21, 22]);
    assert_eq!(numbers(&c.output_inputs), [30]);
    // Never a trivial move, even without overlap.
    let c = pick_requested(&ctx, 0, &[3]).unwrap();
    assert_eq!(numbers(&c.inputs), [3]);
    assert!(!c.trivial_move);
    // L0 takes the overlapping L0 files.
    assert_eq!(
        numbers(&pick_requested(&ctx, 0, &[1]).unwrap().inputs),
        [2, 1]
    );
    // The last level is rewritten in place.
    let c = pick_requested(&ctx, 3, &[31]).unwrap();
    assert_eq!((c.level, c.output_level), (3, 3));
    assert!(c.bottommost && c.output_inputs.is_empty());
    // Gone or busy files: nothing.
    assert!(pick_requested(&ctx, 2, &[99]).is_none());
    assert!(pick_requested(&ctx, 1, &[20]).is_none());
    let env = Env::new().busy(&[30]);
    assert!(pick_requested(&env.ctx(&v), 2, &[20]).is_none());
    let env = Env::new().busy(&[3]);
    assert!(
        pick_requested(&env.ctx(&v), 0, &[1]).is_none(),
        "one L0 compaction at a time"
    );
}

#[test]
fn clean_files_within_skips_shared_boundaries() {
    let v = version_of(
        3,
        &[
            (1, file_seq(1, (b"a", 9), (b"c", 9), 10)),
            (1, file_seq(2, (b"c", 8), (b"e", 8), 10)),
            (1, file(3, b"f", b"g", 10)),
            (1, file_seq(4, (b"h", 7), (b"k", 7), 10)),
            (1, file_seq(5, (b"k", 6), (b"m", 6), 10)),
        ],
    );
    assert_eq!(numbers(&clean_files_within(&v, 1, b"b", b"k")), [3]);
    assert_eq!(
        numbers(&clean_files_within(&v, 1, b"a", b"z")),
        [1, 2, 3, 4, 5]
    );
    assert!(clean_files_within(&v, 0, b"a", b"z").is_empty());
}

// ---- property test ----------------------------------------------------------------------

fn arb_case() -> impl Strategy<Value = (Version, Vec<bool>, usize, u64, f64)> {
    (
        arb_version(),
        prop::collection::vec(prop::bool::weighted(0.2), 64),
        0..picker_names().len(),
        prop_oneof![Just(150u64), Just(100_000u64)],
        // Plenty of free space, and little (the adaptive picker's two modes).
        prop_oneof![Just(1.0), Just(0.1)],
    )
}

/// File n in zone n % 3: zone-aware pickers see groups of differing S_same.
struct ThreeZones;

impl ZoneLookup for ThreeZones {
    fn zones_of(&self, file_number: u64) -> Vec<(u32, u64)> {
        vec![((file_number % 3) as u32, 100)]
    }
}

/// Everything a compaction must satisfy, whatever chose it.
fn check_valid(v: &Version, busy: &HashSet<u64>, c: &Compaction) -> Result<(), TestCaseError> {
    prop_assert!(!c.inputs.is_empty());
    let mut seen = HashSet::new();
    for f in c.input_files() {
        prop_assert!(!busy.contains(&f.number), "busy file {} taken", f.number);
        prop_assert!(seen.insert(f.number), "file {} twice", f.number);
    }
    let in_level = |level: usize, files: &[Arc<FileMeta>]| {
        files
            .iter()
            .all(|f| v.files(level).iter().any(|g| g.number == f.number))
    };
    prop_assert!(in_level(c.level, &c.inputs) && in_level(c.output_level, &c.output_inputs));
    if c.output_level != c.level {
        let (b, e) = user_range(&c.inputs);
        let overlapping = v.overlapping(c.output_level, Some(&b), Some(&e));
        let want = expand_to_clean_cut(v, c.output_level, overlapping);
        prop_assert_eq!(
            numbers(&c.output_inputs),
            numbers(&want),
            "all overlapping output files"
        );
        check_clean_cut(v, c.output_level, &c.output_inputs)?;
    } else {
        prop_assert!(c.output_inputs.is_empty());
    }
    if c.output_level > 0 {
        // A scan of the deeper levels: the first one meeting the compaction's range holds
        // the grandparents, and bottommost means there is none. An L0 trivial-move pick has
        // no grandparents even when the move test then fails; from outside it looks like an
        // L0 compaction without output-level files.
        let (b, e) = user_range2(&c.inputs, &c.output_inputs);
        let below: Vec<Vec<u64>> = (c.output_level + 1..v.num_levels())
            .map(|l| {
                let hits = v.files(l).iter().filter(|f| f.overlaps(Some(&b), Some(&e)));
                hits.map(|f| f.number).collect()
            })
            .filter(|hits: &Vec<u64>| !hits.is_empty())
            .collect();
        prop_assert_eq!(c.bottommost, below.is_empty(), "bottommost");
        let l0_move_pick = c.level == 0 && c.output_inputs.is_empty();
        if !c.grandparents.is_empty() || !l0_move_pick {
            let want = below.first().cloned().unwrap_or_default();
            prop_assert_eq!(numbers(&c.grandparents), want, "grandparents");
        }
    }
    if c.level > 0 {
        check_clean_cut(v, c.level, &c.inputs)?;
    } else if c.output_level == 0 {
        let prefix = &v.files(0)[..c.inputs.len()];
        prop_assert_eq!(
            numbers(&c.inputs),
            numbers(prefix),
            "intra-L0 takes the newest files"
        );
    } else {
        check_l0_cut(v, &c.inputs)?;
    }
    if c.trivial_move {
        prop_assert!(c.output_inputs.is_empty() && c.level != c.output_level);
    }
    check_applies(v, c)
}

/// Contiguous in the level, and no file outside shares a user key with the set.
fn check_clean_cut(
    v: &Version,
    level: usize,
    files: &[Arc<FileMeta>],
) -> Result<(), TestCaseError> {
    if files.is_empty() {
        return Ok(());
    }
    let all = v.files(level);
    let first = all
        .iter()
        .position(|f| f.number == files[0].number)
        .unwrap();
    let run = &all[first..first + files.len()];
    prop_assert_eq!(
        numbers(run),
        numbers(files),
        "contiguous run of level {}",
        level
    );
    if first > 0 {
        prop_assert!(all[first - 1].largest_user_key() != files[0].smallest_user_key());
    }
    if let Some(after) = all.get(first + files.len()) {
        prop_assert!(after.smallest_user_key() != files[files.len() - 1].largest_user_key());
    }
    Ok(())
}

/// An L0 file leaving L0 leaves no older overlapping L0 file behind.
fn check_l0_cut(v: &Version, inputs: &[Arc<FileMeta>]) -> Result<(), TestCaseError> {
    let l0 = v.files(0);
    let pos = |n: u64| l0.iter().position(|f| f.number == n).unwrap();
    for f in inputs {
        for (i, g) in l0.iter().enumerate() {
            let overlaps = g.overlaps(Some(f.smallest_user_key()), Some(f.largest_user_key()));
            let taken = inputs.iter().any(|x| x.number == g.number);
            prop_assert!(
                !overlaps || taken || i < pos(f.number),
                "older L0 file {} left",
                g.number
            );
        }
    }
    Ok(())
}

/// Installing the compaction's result (one output over its whole range, or the moved
/// files) gives a valid version.
fn check_applies(v: &Version, c: &Compaction) -> Result<(), TestCaseError> {
    let mut edit = VersionEdit::new();
    for f in &c.inputs {
        edit.delete_file(c.level as u32, f.number);
    }
    for f in &c.output_inputs {
        edit.delete_file(c.output_level as u32, f.number);
    }
    if c.trivial_move {
        for f in &c.inputs {
            edit.add_file(c.output_level as u32, (**f).clone());
        }
    } else {
        let all: Vec<&Arc<FileMeta>> = c.input_files().collect();
        let smallest = all
            .iter()
            .map(|f| &f.smallest)
            .min_by(|a, b| key::compare(a, b))
            .unwrap();
        let largest = all
            .iter()
            .map(|f| &f.largest)
            .max_by(|a, b| key::compare(a, b))
            .unwrap();
        let mut out = (*all[0]).as_ref().clone();
        (out.number, out.smallest, out.largest) = (10_000, smallest.clone(), largest.clone());
        out.smallest_seq = all.iter().map(|f| f.smallest_seq).min().unwrap();
        out.largest_seq = all.iter().map(|f| f.largest_seq).max().unwrap();
        edit.add_file(c.output_level as u32, out);
    }
    let applied = v.apply(&edit);
    prop_assert!(applied.is_ok(), "{:?} for {:?}", applied.err(), c);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn picked_compactions_are_valid((v, busy_bits, picker, max_bytes, free_ratio) in arb_case()) {
        let busy: HashSet<u64> = v
            .all_files()
            .filter(|(_, f)| busy_bits[f.number as usize % busy_bits.len()])
            .map(|(_, f)| f.number)
            .collect();
        let options = Options {
            level0_file_num_compaction_trigger: 2,
            max_bytes_for_level_base: 100,
            max_bytes_for_level_multiplier: 2.0,
            max_compaction_bytes: max_bytes,
            ..opts()
        };
        let cursors: Vec<Option<Vec<u8>>> =
            (0..5).map(|l| v.files(l).get(1).map(|f| f.smallest.clone())).collect();
        let ctx = PickCtx {
            version: &v,
            options: &options,
            compacting: &busy,
            zones: &ThreeZones,
            free_ratio,
            cursors: &cursors,
            blob_gc_files: 0,
        };
        let picker = picker_by_name(picker_names()[picker]).unwrap();
        if let Some(c) = pick_compaction(&ctx, picker.as_ref()) {
            check_valid(&v, &busy, &c)?;
        }
        for level in 0..5 {
            let files = v.files(level);
            if let Some(f) = files.get(files.len() / 2) {
                if let Some(c) = pick_requested(&ctx, level, &[f.number]) {
                    prop_assert!(!c.trivial_move);
                    check_valid(&v, &busy, &c)?;
                }
            }
        }
    }
}
