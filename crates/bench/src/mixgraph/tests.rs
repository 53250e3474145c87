use super::*;
use crate::gen::mt64;
use crate::gen::stats::assert_close;

/// The paper's parameters (RocksDB's example command of mixgraph), with 1,000,000 keys.
fn paper() -> MixGraphConfig {
    MixGraphConfig {
        keyrange_num: 30,
        keyrange_dist: TwoTermExp::PAPER,
        key_dist_a: 0.002312,
        key_dist_b: 0.3467,
        ratios: QueryRatios {
            get: 0.85,
            put: 0.14,
            seek: 0.01,
        },
        ..MixGraphConfig::default()
    }
}

fn draw(config: &MixGraphConfig, seed: u64) -> Vec<Op> {
    let mut g = MixGraphGenerator::new(config.clone(), seed).unwrap();
    std::iter::from_fn(|| g.next_op()).collect()
}

fn ranges_of(config: &MixGraphConfig) -> KeyRanges {
    match config.key_model().unwrap() {
        KeyModel::Ranges { ranges, .. } => *ranges,
        other => panic!("not ranges: {other:?}"),
    }
}

#[test]
fn paper_layout_has_db_bench_slots_and_order() {
    let r = ranges_of(&paper());
    // A = ⌊1 / f(30)⌋ + 1 = 689; slots ⌊689 · f(x)⌋ add up to 667.
    assert_eq!((r.total(), r.size()), (667, 33_333));
    let mut by_x: Vec<(i64, i64)> = r.ranges().iter().map(|k| (k.x, k.slots)).collect();
    by_x.sort();
    let slots: Vec<i64> = by_x.iter().map(|&(_, s)| s).collect();
    let want = [
        538, 38, 10, 8, 7, 6, 6, 5, 5, 5, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,
        1,
    ];
    assert_eq!(slots, want);
    // The order after the shuffle by std::mt19937_64(667), as libstdc++ gives it.
    let order: Vec<i64> = r.ranges().iter().map(|k| k.x).collect();
    let want = [
        29, 18, 16, 28, 25, 22, 27, 5, 21, 3, 26, 10, 11, 15, 6, 8, 4, 17, 12, 13, 9, 24, 30, 2,
        14, 19, 20, 7, 23, 1,
    ];
    assert_eq!(order, want);
}

#[test]
fn key_ranges_are_drawn_by_the_two_term_exponential() {
    // A steep f, so that the smallest share is tiny and the amplification large: the
    // integer slots then follow f(x) to a few parts in 10^5. The key space is much larger
    // than the 40,342 slots, so that `ini % slots` is uniform too (with num = 200,000 the
    // slots past 200,000 − 4 × 40,342 would get a fifth fewer draws, in db_bench as here).
    let f = TwoTermExp {
        a: 1.0,
        b: -0.5,
        c: 0.3,
        d: -0.6,
    };
    let config = MixGraphConfig {
        num: 100_000_000,
        reads: 400_000,
        keyrange_num: 20,
        keyrange_dist: f,
        key_dist_a: 0.01,
        key_dist_b: 0.5,
        ..MixGraphConfig::default()
    };
    let ranges = ranges_of(&config);
    let mut counts = vec![0u64; 20];
    for op in draw(&config, 11) {
        counts[(op.keynum / ranges.size()) as usize] += 1;
    }
    let sum: f64 = (1..=20).map(|x| f.at(f64::from(x))).sum();
    for (range, &count) in ranges.ranges().iter().zip(&counts) {
        let p = f.at(range.x as f64) / sum;
        assert_close(
            count,
            config.reads as usize,
            p,
            &format!("range x = {}", range.x),
        );
    }
}

#[test]
fn keys_inside_a_range_follow_the_power_law() {
    // One range, so that the draw's range (`ini % slots`) and its offset (`ini % size`)
    // are not tied together: with several ranges the keys of a range see only some
    // residues of the draw, and its seed frequencies drift from the law by up to a
    // tenth (db_bench's and zkv's alike; scripts/mixgraph-check.sh compares those).
    let config = MixGraphConfig {
        keyrange_num: 1,
        reads: 400_000,
        ..paper()
    };
    let ranges = ranges_of(&config);
    assert_eq!((ranges.ranges().len(), ranges.size()), (1, 1_000_000));
    let (a, b) = (config.key_dist_a, config.key_dist_b);
    // Seed s takes the u in ((s−1)^b·a, s^b·a]; its key is the twister's output mod size.
    let key_of_seed = |s: u64| (mt64::mt19937_64_first(s) % 1_000_000) as i64;
    let ops = draw(&config, 12);
    for s in 1..=3u64 {
        let count = ops.iter().filter(|op| op.keynum == key_of_seed(s)).count() as u64;
        let p = a * ((s as f64).powf(b) - ((s - 1) as f64).powf(b));
        // Other seeds land on the same key with probability 1/size.
        assert_close(count, ops.len(), p + 1e-6, &format!("seed {s}"));
    }
}

#[test]
fn query_mix_rounds_each_share_up_to_a_thousandth() {
    let ends = |get, put, seek| {
        let m = QueryMix::new(QueryRatios { get, put, seek }).unwrap();
        let e = [QueryKind::Get, QueryKind::Put, QueryKind::Seek].map(|k| m.share(k));
        (m.slots(), e)
    };
    assert_eq!(ends(0.85, 0.14, 0.01).0, 1000);
    let third = 1.0 / 3.0;
    let (slots, shares) = ends(third, third, third);
    assert_eq!(slots, 1002);
    assert!(shares.iter().all(|&s| (s - third).abs() < 1e-12));
    // Weights need not add up to 1.
    assert_eq!(ends(5.0, 3.0, 2.0), (1000, [0.5, 0.3, 0.2]));
    assert_eq!(ends(0.0, 0.0, 1.0), (1000, [0.0, 0.0, 1.0]));
    // A tiny share still gets a slot.
    let (slots, shares) = ends(1.0, 0.0, 1e-9);
    assert_eq!(slots, 1001);
    assert_eq!(shares[2], 1.0 / 1001.0);
}

#[test]
fn operations_follow_the_mix_ratios() {
    let config = MixGraphConfig {
        reads: 200_000,
        ..paper()
    };
    let ops = draw(&config, 3);
    let count = |f: fn(&OpKind) -> bool| ops.iter().filter(|op| f(&op.kind)).count() as u64;
    let n = ops.len();
    assert_close(count(|k| *k == OpKind::Read), n, 0.85, "gets");
    assert_close(count(|k| *k == OpKind::Update), n, 0.14, "puts");
    assert_close(
        count(|k| matches!(k, OpKind::Scan { .. })),
        n,
        0.01,
        "seeks",
    );
    assert!(ops
        .iter()
        .all(|op| op.value_size.is_some() == op.kind.writes()));
}

#[test]
fn uniform_keys_decide_the_kind_as_in_db_bench() {
    // Without key_dist_a/b the key ranges are not used and the key is the draw itself, so
    // its kind is fixed by key % 1000.
    let config = MixGraphConfig {
        key_dist_a: 0.0,
        ..paper()
    };
    let g = MixGraphGenerator::new(config, 0).unwrap();
    assert!(matches!(g.key_model(), KeyModel::Uniform));
    for ini in [0, 849, 850, 989, 990, 999, 1000, 123_456] {
        let op = g.op_of(ini);
        assert_eq!(op.keynum, ini);
        let want = match ini % 1000 {
            0..=849 => OpKind::Read,
            850..=989 => OpKind::Update,
            _ => OpKind::Scan {
                len: g.config().scan_length(ini as f64 / 1e6),
            },
        };
        assert_eq!(op.kind, want, "ini {ini}");
        assert_eq!(op.key, key_from_int(ini as u64, 16));
    }
}

#[test]
fn power_law_keys_keep_db_bench_signed_remainder() {
    let config = MixGraphConfig {
        key_dist_a: 0.002312,
        key_dist_b: 0.3467,
        num: 1000,
        ..MixGraphConfig::default()
    };
    let g = MixGraphGenerator::new(config, 0).unwrap();
    let mut negative = 0;
    for ini in 0..1000 {
        let op = g.op_of(ini);
        let seed = power_inverse(ini as f64 / 1000.0, 0.002312, 0.3467) as u64;
        assert_eq!(op.keynum, mt64::mt19937_64_first(seed) as i64 % 1000);
        assert_eq!(op.key, key_from_int(op.keynum as u64, 16));
        negative += u32::from(op.keynum < 0);
    }
    // Half the twister's outputs are negative as signed numbers.
    assert!((300..700).contains(&negative), "{negative}");
}

#[test]
fn value_sizes_and_scan_lengths_are_clamped_as_in_db_bench() {
    let config = MixGraphConfig {
        value: Pareto {
            theta: 0.0,
            k: 1.0,
            sigma: 1.0,
        },
        ..MixGraphConfig::default()
    };
    // x = 1/u − 1: below 10 → 10; above 1024 → modulo 1024; u = 0 → i64::MIN → 10.
    assert_eq!(config.value_size(0.5), 10);
    assert_eq!(config.value_size(1.0 / 500.0), 499);
    assert_eq!(config.value_size(1.0 / 2000.0), 1999 % 1024);
    assert_eq!(config.value_size(1.0 / 2049.0), 0);
    assert_eq!(config.value_size(0.0), 10);
    let capped = MixGraphConfig {
        mix_max_value_size: 1 << 30,
        ..config.clone()
    };
    assert_eq!(capped.value_max(), 1 << 20);
    // Scan lengths: modulo the maximum; the infinite draw of u = 0 scans nothing.
    let scans = MixGraphConfig {
        iter: config.value,
        mix_max_scan_len: 100,
        ..config
    };
    assert_eq!(scans.scan_length(1.0 / 250.0), 249 % 100);
    assert_eq!(scans.scan_length(0.0), 0);
    // The paper's value law averages about 36 bytes (db_bench measures 36.0).
    let mean = paper().mean_value_size(100_000);
    assert!((33.0..39.0).contains(&mean), "{mean}");
}

#[test]
fn a_seed_gives_the_same_operations() {
    let config = MixGraphConfig {
        reads: 5000,
        ..paper()
    };
    assert_eq!(draw(&config, 7), draw(&config, 7));
    assert_ne!(draw(&config, 7), draw(&config, 8));
    let g = MixGraphGenerator::new(config, 7).unwrap();
    assert_eq!(g.remaining(), 5000);
    assert!(g.rate_schedule().is_none());
}

#[test]
fn bad_parameters_are_errors() {
    let ok = paper();
    let bad = [
        MixGraphConfig {
            num: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            reads: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            key_size: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            keyrange_num: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            keyrange_num: 1_000_001,
            ..ok.clone()
        },
        MixGraphConfig {
            mix_max_value_size: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            mix_max_scan_len: 0,
            ..ok.clone()
        },
        MixGraphConfig {
            key_dist_a: f64::NAN,
            ..ok.clone()
        },
        MixGraphConfig {
            value: Pareto {
                sigma: f64::INFINITY,
                ..ok.value
            },
            ..ok.clone()
        },
        MixGraphConfig {
            ratios: QueryRatios {
                get: 0.0,
                put: 0.0,
                seek: 0.0,
            },
            ..ok.clone()
        },
        MixGraphConfig {
            ratios: QueryRatios {
                get: -1.0,
                ..ok.ratios
            },
            ..ok.clone()
        },
        MixGraphConfig {
            sine: Some(SineRate {
                interval_ms: 0,
                ..SineRate::default()
            }),
            ..ok.clone()
        },
        // Every share below 1e-16.
        MixGraphConfig {
            keyrange_dist: TwoTermExp {
                a: 1e-20,
                b: 0.0,
                c: 0.0,
                d: 0.0,
            },
            ..ok.clone()
        },
        // A share that is not a number.
        MixGraphConfig {
            keyrange_dist: TwoTermExp {
                a: 1.0,
                b: 1000.0,
                c: 0.0,
                d: 0.0,
            },
            ..ok.clone()
        },
    ];
    for config in bad {
        assert!(
            MixGraphGenerator::new(config.clone(), 0).is_err(),
            "{config:?}"
        );
    }
    // Key ranges that would not be used are not laid out, as in db_bench.
    let unused = MixGraphConfig {
        key_dist_b: 0.0,
        keyrange_dist: TwoTermExp {
            a: 1e-20,
            b: 0.0,
            c: 0.0,
            d: 0.0,
        },
        ..ok
    };
    assert!(!unused.uses_key_ranges());
    assert!(MixGraphGenerator::new(unused, 0).is_ok());
}
