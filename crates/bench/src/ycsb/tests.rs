use super::*;
use crate::gen::fnvhash64;
use crate::gen::stats::assert_close;

fn kinds(w: &mut YcsbWorkload) -> Vec<OpKind> {
    let mut out = Vec::new();
    while let Some(op) = w.next_op().unwrap() {
        out.push(op.kind);
    }
    out
}

#[test]
fn core_workloads_are_ycsbs() {
    let a = WorkloadSpec::core(CoreWorkloadId::A);
    assert_eq!((a.proportions.read, a.proportions.update), (0.5, 0.5));
    assert_eq!(a.request_distribution, RequestDistribution::Zipfian);
    let d = WorkloadSpec::core(CoreWorkloadId::D);
    assert_eq!((d.proportions.read, d.proportions.insert), (0.95, 0.05));
    assert_eq!(d.request_distribution, RequestDistribution::Latest);
    let e = WorkloadSpec::core(CoreWorkloadId::E);
    assert_eq!((e.proportions.scan, e.proportions.insert), (0.95, 0.05));
    assert_eq!((e.min_scan_length, e.max_scan_length), (1, 100));
    assert_eq!(e.scan_length_distribution, ScanLengthDistribution::Uniform);
    let f = WorkloadSpec::core(CoreWorkloadId::F);
    assert_eq!(
        (f.proportions.read, f.proportions.read_modify_write),
        (0.5, 0.5)
    );
    for id in CoreWorkloadId::ALL {
        let s = WorkloadSpec::core(id);
        assert_eq!((s.record_count, s.operation_count), (1000, 1000));
        assert_eq!(s.value_len(), Ok(1000));
        assert_eq!(s.insert_order, InsertOrder::Hashed);
        assert_eq!(CoreWorkloadId::from_name(id.name()), Some(id));
    }
}

/// Each workload's operation mix, over 100 000 operations, within 5 sigma.
#[test]
fn proportions_within_tolerance() {
    let n = 100_000;
    for id in CoreWorkloadId::ALL {
        let spec = WorkloadSpec::core(id).with_counts(10_000, n as u64);
        let p = spec.proportions;
        let mut w = YcsbWorkload::new(spec, 7).unwrap();
        let ops = kinds(&mut w);
        assert_eq!(ops.len(), n);
        let count = |f: fn(&OpKind) -> bool| ops.iter().filter(|k| f(k)).count() as u64;
        let label = id.name();
        assert_close(count(|k| *k == OpKind::Read), n, p.read, label);
        assert_close(count(|k| *k == OpKind::Update), n, p.update, label);
        assert_close(count(|k| *k == OpKind::Insert), n, p.insert, label);
        assert_close(
            count(|k| matches!(k, OpKind::Scan { .. })),
            n,
            p.scan,
            label,
        );
        let rmw = count(|k| *k == OpKind::ReadModifyWrite);
        assert_close(rmw, n, p.read_modify_write, label);
    }
}

#[test]
fn load_inserts_every_record_with_ycsb_keys() {
    let spec = WorkloadSpec::core(CoreWorkloadId::A).with_counts(100, 10);
    let mut w = YcsbWorkload::new(spec, 1).unwrap();
    assert_eq!(w.remaining(), (100, 10));
    let mut n = 0;
    while let Some(op) = w.next_load() {
        assert_eq!(op.kind, OpKind::Insert);
        assert_eq!(op.keynum, n);
        assert_eq!(op.key, format!("user{}", fnvhash64(n)).into_bytes());
        n += 1;
    }
    assert_eq!(n, 100);
    assert_eq!(w.remaining(), (0, 10));
}

#[test]
fn ordered_padded_keys() {
    let mut spec = WorkloadSpec::core(CoreWorkloadId::C).with_counts(10, 0);
    spec.insert_order = InsertOrder::Ordered;
    spec.zero_padding = 6;
    let mut w = YcsbWorkload::new(spec, 1).unwrap();
    assert_eq!(w.next_load().unwrap().key, b"user000000".to_vec());
    assert_eq!(w.next_load().unwrap().key, b"user000001".to_vec());
}

/// Workload D: inserts take the next record numbers and are acknowledged at once; reads
/// only see acknowledged records and favour the newest.
#[test]
fn inserts_advance_and_latest_follows() {
    let spec = WorkloadSpec::core(CoreWorkloadId::D).with_counts(1000, 20_000);
    let mut w = YcsbWorkload::new(spec, 3).unwrap();
    let mut next_insert = 1000;
    let mut newest_reads = 0;
    let mut reads = 0;
    while let Some(op) = w.next_op().unwrap() {
        match op.kind {
            OpKind::Insert => {
                assert_eq!(op.keynum, next_insert);
                assert_eq!(w.acknowledged_limit(), next_insert);
                next_insert += 1;
            }
            OpKind::Read => {
                assert!(op.keynum <= w.acknowledged_limit());
                reads += 1;
                newest_reads += u64::from(op.keynum == w.acknowledged_limit());
            }
            other => panic!("workload D made {other:?}"),
        }
    }
    assert!(next_insert > 1000);
    // The newest record gets about 1/zeta(~1500) = 13 % of reads.
    let share = newest_reads as f64 / reads as f64;
    assert!((0.10..0.17).contains(&share), "newest share {share}");
}

#[test]
fn unacknowledged_inserts_stay_invisible() {
    let mut spec = WorkloadSpec::core(CoreWorkloadId::D).with_counts(10, 1000);
    spec.proportions.insert = 0.5;
    spec.proportions.read = 0.5;
    let mut w = YcsbWorkload::new(spec, 4).unwrap();
    let mut pending = Vec::new();
    while let Some(op) = w.next_op_unacknowledged() {
        match op.kind {
            OpKind::Insert => pending.push(op.keynum),
            _ => assert!(op.keynum <= 9, "read {} before acknowledgement", op.keynum),
        }
    }
    assert_eq!(w.acknowledged_limit(), 9);
    for k in pending.iter().rev() {
        w.acknowledge(*k).unwrap();
    }
    assert_eq!(w.acknowledged_limit(), 9 + pending.len() as i64);
}

#[test]
fn scan_lengths_of_workload_e() {
    let spec = WorkloadSpec::core(CoreWorkloadId::E).with_counts(1000, 20_000);
    let mut w = YcsbWorkload::new(spec, 5).unwrap();
    let (mut sum, mut scans) = (0u64, 0u64);
    while let Some(op) = w.next_op().unwrap() {
        if let OpKind::Scan { len } = op.kind {
            assert!((1..=100).contains(&len));
            sum += len;
            scans += 1;
        }
    }
    let mean = sum as f64 / scans as f64;
    assert!((mean - 50.5).abs() < 1.0, "mean scan length {mean}");
}

#[test]
fn zipfian_requests_stay_within_loaded_records() {
    let spec = WorkloadSpec::core(CoreWorkloadId::B).with_counts(500, 20_000);
    let mut w = YcsbWorkload::new(spec, 6).unwrap();
    let mut counts = vec![0u64; 500];
    while let Some(op) = w.next_op().unwrap() {
        counts[op.keynum as usize] += 1;
    }
    // The hottest record is the one rank 0 hashes to; with 501 slots it gets
    // 1/ZETAN + tail share, about 3.9 %.
    let hot = (fnvhash64(0) % 501) as usize;
    let top = counts
        .iter()
        .enumerate()
        .max_by_key(|(_, c)| **c)
        .unwrap()
        .0;
    assert_eq!(top, hot);
}

#[test]
fn same_seed_same_stream() {
    let spec = WorkloadSpec::core(CoreWorkloadId::A).with_counts(100, 1000);
    let run = |seed| {
        let mut w = YcsbWorkload::new(spec.clone(), seed).unwrap();
        let mut keys = Vec::new();
        while let Some(op) = w.next_op().unwrap() {
            keys.push((op.kind, op.keynum));
        }
        keys
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(9), run(10));
}

#[test]
fn bad_specs_are_errors() {
    let base = WorkloadSpec::core(CoreWorkloadId::A);
    let bad = |f: fn(&mut WorkloadSpec)| {
        let mut s = base.clone();
        f(&mut s);
        YcsbWorkload::new(s, 0).err()
    };
    assert!(bad(|s| s.record_count = 0).is_some());
    assert!(bad(|s| s.record_count = 1 << 31).is_some());
    assert!(bad(|s| s.operation_count = i32::MAX as u64).is_some());
    assert!(bad(|s| s.insert_start = 1000).is_some());
    assert!(bad(|s| s.insert_count = Some(1001)).is_some());
    assert!(bad(|s| s.proportions.read = -0.1).is_some());
    assert!(bad(|s| s.proportions.update = f64::NAN).is_some());
    assert!(matches!(
        bad(|s| {
            s.proportions.read = f64::MAX;
            s.proportions.update = f64::MAX;
        }),
        Some(Error::InvalidFraction {
            what: "sum of proportions",
            ..
        })
    ));
    assert_eq!(
        bad(|s| {
            s.proportions.read = 0.0;
            s.proportions.update = 0.0;
        }),
        Some(Error::NoOperations)
    );
    assert!(bad(|s| s.min_scan_length = 0).is_some());
    assert!(bad(|s| s.max_scan_length = 0).is_some());
    assert!(bad(|s| s.value_size = Some(0)).is_some());
    assert!(bad(|s| s.field_length = 0).is_some());
    assert!(bad(|s| {
        s.request_distribution = RequestDistribution::Hotspot {
            data_fraction: 2.0,
            opn_fraction: 0.5,
        }
    })
    .is_some());
    let mut ok = base.clone();
    ok.value_size = Some(8192);
    assert_eq!(ok.value_len(), Ok(8192));
}

#[test]
fn request_distributions_are_named_as_ycsb_names_them() {
    for name in RequestDistribution::NAMES {
        let d = RequestDistribution::from_name(name).expect("known name");
        assert_eq!(d.name(), name);
    }
    assert_eq!(
        RequestDistribution::from_name("hotspot"),
        Some(RequestDistribution::Hotspot {
            data_fraction: 0.2,
            opn_fraction: 0.8,
        })
    );
    assert_eq!(RequestDistribution::from_name("sequential"), None);
}

/// The request distribution picks the run phase's keys: with workload C's reads over 1000
/// records, "hotspot" sends 80 % of them to the lowest 200 records, "uniform" 20 %.
#[test]
fn the_request_distribution_chooses_the_keys() {
    let n = 50_000;
    for (name, hot_share) in [("hotspot", 0.8), ("uniform", 0.2)] {
        let mut spec = WorkloadSpec::core(CoreWorkloadId::C).with_counts(1000, n as u64);
        spec.request_distribution = RequestDistribution::from_name(name).expect("known name");
        let mut w = YcsbWorkload::new(spec, 8).unwrap();
        let mut hot = 0;
        while let Some(op) = w.next_op().unwrap() {
            assert!((0..1000).contains(&op.keynum), "{name}: {}", op.keynum);
            hot += u64::from(op.keynum < 200);
        }
        assert_close(hot, n, hot_share, name);
    }
}

/// YCSB's `-p NAME=VALUE`: the Same-Victim paper's WL(A) is workload A with 80 % updates
/// and 20 % inserts; its operations follow the new proportions.
#[test]
fn properties_override_a_core_workload() {
    let mut spec = WorkloadSpec::core(CoreWorkloadId::A).with_counts(1000, 20_000);
    for (name, value) in [
        ("readproportion", "0"),
        ("updateproportion", "0.8"),
        ("insertproportion", "0.2"),
        ("requestdistribution", "zipfian"),
    ] {
        spec.set_property(name, value).unwrap();
    }
    assert_eq!(spec.proportions.read, 0.0);
    assert_eq!(spec.proportions.insert, 0.2);
    let mut w = YcsbWorkload::new(spec, 3).unwrap();
    while w.next_load().is_some() {}
    let ops: Vec<_> = std::iter::from_fn(|| w.next_op().unwrap()).collect();
    let inserts = ops.iter().filter(|o| o.kind == OpKind::Insert).count();
    let updates = ops.iter().filter(|o| o.kind == OpKind::Update).count();
    assert_eq!(ops.len(), 20_000);
    assert_eq!(inserts + updates, 20_000, "no reads");
    assert!((3_500..4_500).contains(&inserts), "{inserts} inserts");
}

#[test]
fn unknown_or_malformed_properties_are_refused() {
    let mut spec = WorkloadSpec::core(CoreWorkloadId::A);
    let e = spec
        .set_property("fieldlengthdistribution", "zipfian")
        .unwrap_err();
    assert!(e.to_string().contains("not settable"), "{e}");
    let e = spec.set_property("readproportion", "half").unwrap_err();
    assert!(e.to_string().contains("readproportion=half"), "{e}");
    let e = spec
        .set_property("requestdistribution", "exponential")
        .unwrap_err();
    assert!(e.to_string().contains("known: zipfian"), "{e}");
}
