//! The zone budget: lease tokens with one kept for WAL files, idle leases taken back,
//! writers that wait instead of spinning or failing.

mod fs_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use fs_support::*;
use zkv_zns::{IoCategory, ZonedDevice};
use zkv_zonefs::fs::ZoneFs;
use zkv_zonefs::meta::FileKind;

/// 4 open / 6 active: tokens = min(4 - 1, 6 - 2) = 3, one of them kept for WAL files.
fn setup() -> (Arc<Probe>, ZoneFs) {
    let (_, mem) = mem_device(geometry(16, 256, 4, 6));
    let probe = Probe::new(mem);
    let dev: Arc<dyn ZonedDevice> = probe.clone();
    let fs = format(&dev, opts());
    (probe, fs)
}

fn sst_writer(fs: &ZoneFs, name: &str) -> zkv_zonefs::fs::FileWriter {
    fs.create(name, FileKind::Sst, hint(FileKind::Sst, Some(2)))
        .unwrap()
}

#[test]
fn a_wal_writer_gets_a_zone_while_compaction_writes_hold_all_other_tokens() {
    let (probe, fs) = setup();
    probe.hold(&[IoCategory::Compaction]);
    // Two compaction outputs stuck inside device writes hold both non-WAL tokens.
    let stuck: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let fs = fs.clone();
            thread::spawn(move || {
                let mut w = sst_writer(&fs, name);
                w.append(&data(1, 0, 64 * 1024)).unwrap();
                w.close().unwrap();
            })
        })
        .collect();
    probe.wait_held(2);
    // The WAL does not wait behind them.
    let mut wal = fs
        .create("wal", FileKind::Wal, hint(FileKind::Wal, None))
        .unwrap();
    wal.append(&data(2, 0, 10_000)).unwrap();
    wal.sync().unwrap();
    assert_eq!(fs.stats().lease_waits, 0);
    // A third compaction output must wait for a token: it neither fails nor takes the
    // WAL's zone while the WAL is writing.
    let done = Arc::new(AtomicBool::new(false));
    let third = {
        let (fs, done) = (fs.clone(), done.clone());
        thread::spawn(move || {
            let mut w = sst_writer(&fs, "c");
            w.append(&data(3, 0, 8192)).unwrap();
            w.close().unwrap();
            done.store(true, Ordering::SeqCst);
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fs.stats().lease_waits == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the third writer never waited"
        );
        thread::sleep(Duration::from_millis(2));
    }
    assert!(!done.load(Ordering::SeqCst));
    probe.open_gate();
    for h in stuck {
        h.join().unwrap();
    }
    third.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    wal.close().unwrap();
    assert_eq!(read_file(&fs, "a"), data(1, 0, 64 * 1024));
    assert_eq!(read_file(&fs, "c"), data(3, 0, 8192));
    assert_eq!(read_file(&fs, "wal"), data(2, 0, 10_000));
    assert_consistent(&fs, "end");
}

#[test]
fn idle_writers_keep_their_zones_until_another_writer_needs_the_token() {
    let (_, fs) = setup();
    let mut a = sst_writer(&fs, "a");
    let mut b = sst_writer(&fs, "b");
    a.append(&data(1, 0, 8192)).unwrap();
    b.append(&data(2, 0, 8192)).unwrap();
    // The WAL token is free: nobody loses a zone.
    let mut wal = fs
        .create("wal", FileKind::Wal, hint(FileKind::Wal, None))
        .unwrap();
    wal.append(&data(3, 0, 8192)).unwrap();
    assert_eq!(fs.stats().lease_revocations, 0);
    for w in [&mut a, &mut b, &mut wal] {
        w.sync().unwrap();
    }
    let zone_a = fs.zones_of("a").unwrap();
    // More data from an idle writer goes on in its zone.
    a.append(&data(1, 8192, 8192)).unwrap();
    a.sync().unwrap();
    assert_eq!(fs.zones_of("a").unwrap()[0].0, zone_a[0].0);
    assert_eq!(fs.zones_of("a").unwrap().len(), 1);
    // A third non-WAL writer takes back the longest idle non-WAL lease (b's), not the WAL's.
    let mut c = sst_writer(&fs, "c");
    c.append(&data(4, 0, 8192)).unwrap();
    assert_eq!(fs.stats().lease_revocations, 1);
    assert_eq!(fs.stats().lease_waits, 0);
    wal.append(&data(3, 8192, 8192)).unwrap();
    wal.sync().unwrap();
    assert_eq!(
        fs.zones_of("wal").unwrap().len(),
        1,
        "the WAL kept its zone"
    );
    // b goes on in some zone the policy picks.
    b.append(&data(2, 8192, 8192)).unwrap();
    for w in [a, b, c, wal] {
        w.close().unwrap();
    }
    assert_eq!(read_file(&fs, "b"), data(2, 0, 16384));
    assert_consistent(&fs, "end");
}

#[test]
fn one_thread_with_more_writers_than_tokens_never_deadlocks() {
    let (_, fs) = setup();
    let mut writers: Vec<_> = (0..8)
        .map(|i| {
            let kind = if i % 3 == 0 {
                FileKind::Wal
            } else {
                FileKind::Sst
            };
            fs.create(&format!("f{i}"), kind, hint(kind, Some(1)))
                .unwrap()
        })
        .collect();
    for round in 0..4u64 {
        for (i, w) in writers.iter_mut().enumerate() {
            w.append(&data(i as u64, round * 5000, 5000)).unwrap();
        }
    }
    for w in writers {
        w.close().unwrap();
    }
    for i in 0..8u64 {
        assert_eq!(read_file(&fs, &format!("f{i}")), data(i, 0, 20_000));
    }
    assert!(fs.stats().lease_revocations > 0);
    assert_consistent(&fs, "end");
}
