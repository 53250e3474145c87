//! A program's own compaction picker and placement policy, given as values: they make the
//! decisions of a store end to end, the store keeps every write (checked against a
//! model), and a store made with a policy of the program's own is reopened with it,
//! refused without it for writing, and read without it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use zkv::policy::{Decision, PickCtx, Picker, PlacementCtx, PlacementPolicy, ZoneUse};
use zkv::{Db, DbOptions, Error, ExecMode, Geometry, Options};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The newest files of a level first; counts its calls.
#[derive(Default)]
struct NewestFirst {
    calls: AtomicU64,
}

impl Picker for NewestFirst {
    fn name(&self) -> &'static str {
        "newest-first"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        self.calls.fetch_add(1, Relaxed);
        let files = ctx.version.files(level);
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(files[i].number));
        order
    }
}

/// Every file into the lowest-numbered zone with room, opening zones in order; counts its
/// decisions.
#[derive(Default)]
struct FirstFit {
    decisions: AtomicU64,
}

impl PlacementPolicy for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        self.decisions.fetch_add(1, Relaxed);
        let fits = ctx.zones.iter().find(|z| {
            z.state == ZoneUse::Active
                && !z.busy
                && z.valid > 0
                && z.remaining >= ctx.min_capacity.max(1)
        });
        match fits {
            Some(z) => Decision::Use(z.zone),
            None => Decision::OpenEmpty {
                class: 0,
                policy: Vec::new(),
                finish: (!ctx.can_open)
                    .then(|| {
                        ctx.zones
                            .iter()
                            .find(|z| z.state == ZoneUse::Active && !z.busy)
                    })
                    .flatten()
                    .map(|z| z.zone),
            },
        }
    }
}

fn options(picker: &Arc<NewestFirst>, placement: &Arc<FirstFit>) -> DbOptions {
    let engine = Options {
        mode: ExecMode::Deterministic,
        write_buffer_size: 64 * KIB,
        target_file_size_base: 64 * KIB,
        max_bytes_for_level_base: 256 * KIB,
        ..Options::default()
    };
    DbOptions {
        geometry: Geometry::new(24, MIB),
        engine: engine.with_picker(picker.clone()),
        placement: Some(placement.clone()),
        ..DbOptions::default()
    }
}

fn fill(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, round: u32) {
    for i in 0..3000u32 {
        let key = format!("key{:05}", (i * 7919) % 3000).into_bytes();
        if i % 11 == round {
            db.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let value = format!("{round}:{i}:{:>80}", "").into_bytes();
            db.put(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
}

fn assert_matches(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().unwrap().map(Result::unwrap).collect();
    assert_eq!(&all, model);
}

#[test]
fn a_programs_own_policies_run_the_store_and_it_reopens_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("file:{}", dir.path().join("own.img").display());
    let picker = Arc::new(NewestFirst::default());
    let placement = Arc::new(FirstFit::default());
    let mut model = BTreeMap::new();

    let db = Db::open(&spec, options(&picker, &placement)).unwrap();
    assert_eq!(db.engine().options().compaction_pri, "newest-first");
    for round in 0..4 {
        fill(&db, &mut model, round);
    }
    assert_matches(&db, &model);
    let stats = db.engine().stats();
    assert!(stats.compactions > 0, "no compaction ran: {stats:?}");
    assert!(picker.calls.load(Relaxed) > 0, "the picker was never asked");
    let placed = placement.decisions.load(Relaxed);
    assert!(
        placed > stats.flushes,
        "{placed} placements, {} flushes",
        stats.flushes
    );
    db.close().unwrap();

    // Without its policy the store cannot take writes, and says why.
    let plain = DbOptions {
        create_if_missing: false,
        ..DbOptions::default()
    };
    let Err(err) = Db::open(&spec, plain) else {
        panic!("a store of an unknown placement opened for writing");
    };
    assert!(matches!(err, Error::FileSystem { .. }), "{err:?}");
    assert!(err.to_string().contains("first-fit"), "{err}");

    // With it, it opens and places new files with it.
    let db = Db::open(&spec, options(&picker, &placement)).unwrap();
    assert_matches(&db, &model);
    fill(&db, &mut model, 4);
    db.engine().flush().unwrap();
    assert!(placement.decisions.load(Relaxed) > placed);
    assert_matches(&db, &model);
    db.close().unwrap();
}

#[test]
fn readers_open_a_store_of_an_unknown_placement() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("own.img");
    let picker = Arc::new(NewestFirst::default());
    let placement = Arc::new(FirstFit::default());
    let mut model = BTreeMap::new();
    let db = Db::open(
        &format!("file:{}", path.display()),
        options(&picker, &placement),
    )
    .unwrap();
    fill(&db, &mut model, 0);
    db.close().unwrap();

    let dev: Arc<dyn zkv::zns::ZonedDevice> =
        Arc::new(zkv::zns::FileDevice::open_read_only(&path).unwrap());
    let fs = zkv::zonefs::fs::ZoneFs::mount_read_only(dev).unwrap();
    let db = zkv::engine::db::Db::open_read_only(Arc::new(fs), Options::default()).unwrap();
    let mut it = db.iter(&zkv::ReadOptions::default()).unwrap();
    it.seek_to_first().unwrap();
    let mut read = BTreeMap::new();
    while it.valid() {
        read.insert(it.key().to_vec(), it.value().to_vec());
        it.next().unwrap();
    }
    assert_eq!(read, model);
}
