//! The workload streams as the bench command drives them: every workload name parses to a
//! generator, and no operation touches a key that was never written.

use std::collections::HashSet;

use zkv_bench::mixgraph::TwoTermExp;
use zkv_bench::{
    parse_workload_list, CoreWorkloadId, DbBenchConfig, DbBenchGenerator, DbBenchWorkload,
    MixGraphConfig, MixGraphGenerator, OpKind, WorkloadName, WorkloadSpec, YcsbWorkload,
};

/// YCSB A to F: load, then run; each requested key was loaded or inserted (and
/// acknowledged) before it is asked for, and values are of the record size.
#[test]
fn ycsb_requests_only_existing_records() {
    for id in CoreWorkloadId::ALL {
        let spec = WorkloadSpec::core(id).with_counts(2000, 20_000);
        assert_eq!(spec.value_len(), Ok(1000), "{}", id.name());
        let mut w = YcsbWorkload::new(spec, 42).unwrap();
        let mut keys = HashSet::new();
        while let Some(op) = w.next_load() {
            assert!(keys.insert(op.key), "{}: key loaded twice", id.name());
        }
        assert_eq!(keys.len(), 2000);
        let mut ops = 0;
        while let Some(op) = w.next_op().unwrap() {
            ops += 1;
            if op.kind == OpKind::Insert {
                assert!(
                    keys.insert(op.key),
                    "{}: insert of an existing key",
                    id.name()
                );
            } else {
                assert!(
                    keys.contains(&op.key),
                    "{}: {:?} of a missing key",
                    id.name(),
                    op.kind
                );
            }
        }
        assert_eq!(ops, 20_000);
    }
}

/// fillseq writes every key of 0..num; readrandom and overwrite then only touch those.
#[test]
fn dbbench_random_keys_fall_in_the_filled_range() {
    let config = DbBenchConfig {
        num: 5000,
        ..DbBenchConfig::default()
    };
    let mut fill = DbBenchGenerator::new(DbBenchWorkload::FillSeq, config, 1).unwrap();
    let mut keys = HashSet::new();
    while let Some(op) = fill.next_op() {
        assert_eq!(op.key.len(), 16);
        keys.insert(op.key);
    }
    assert_eq!(keys.len(), 5000);
    for w in [
        DbBenchWorkload::Overwrite,
        DbBenchWorkload::ReadRandom,
        DbBenchWorkload::ReadRandomWriteRandom,
    ] {
        let mut g = DbBenchGenerator::new(w, config, 2).unwrap();
        assert_eq!(g.remaining(), 5000);
        while let Some(op) = g.next_op() {
            assert!(keys.contains(&op.key), "{}: key outside 0..num", w.name());
        }
    }
}

#[test]
fn every_listed_workload_builds() {
    let list = "fillseq,fillrandom,overwrite,readrandom,readrandomwriterandom,fillbatch,\
                readseq,seekrandom,deleterandom,mixgraph,\
                ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-e,ycsb-f,idle";
    for name in parse_workload_list(list).unwrap() {
        match name {
            WorkloadName::DbBench(w) => {
                let mut g = DbBenchGenerator::new(w, DbBenchConfig::default(), 3).unwrap();
                assert!(g.next_op().is_some());
            }
            WorkloadName::MixGraph => {
                let mut g = MixGraphGenerator::new(MixGraphConfig::default(), 3).unwrap();
                assert!(g.next_op().is_some());
            }
            WorkloadName::Ycsb(id) => {
                let mut w = YcsbWorkload::new(WorkloadSpec::core(id), 3).unwrap();
                assert!(w.next_load().is_some());
                assert!(w.next_op().unwrap().is_some());
            }
            // A pause: nothing to generate.
            WorkloadName::Idle => assert_eq!(name.name(), "idle"),
            other => panic!("{other:?}: a listed workload this test does not build"),
        }
    }
}

/// mixgraph's keys are those of the db_bench workloads, inside the key space, with uniform
/// keys and with key ranges alike; values are drawn for puts only.
#[test]
fn mixgraph_keys_lie_in_the_key_space() {
    let ranges = MixGraphConfig {
        keyrange_num: 30,
        keyrange_dist: TwoTermExp::PAPER,
        key_dist_a: 0.002312,
        key_dist_b: 0.3467,
        ..MixGraphConfig::default()
    };
    for config in [MixGraphConfig::default(), ranges] {
        let config = MixGraphConfig {
            num: 5000,
            reads: 20_000,
            ratios: zkv_bench::mixgraph::QueryRatios {
                get: 1.0,
                put: 1.0,
                seek: 1.0,
            },
            ..config
        };
        let mut g = MixGraphGenerator::new(config, 4).unwrap();
        while let Some(op) = g.next_op() {
            assert!((0..5000).contains(&op.keynum), "{op:?}");
            assert_eq!(op.key.len(), 16);
            assert_eq!(op.value_size.is_some(), op.kind == OpKind::Update);
        }
    }
}
