//! A compaction picker and a placement policy of the program's own, plugged into zkv
//! without changing it: `largest-first` compacts a level's largest file first, and
//! `zone-per-level` gives each LSM level zones of its own. The program writes enough to
//! flush and compact on a small in-memory device, checks every key, and checks that both
//! policies made the decisions. Exits with an error (and status 1) otherwise.

use std::cmp::Reverse;
use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use zkv::policy::{Decision, PickCtx, Picker, PlacementCtx, PlacementPolicy, ZoneUse};
use zkv::{Db, DbOptions, ExecMode, Geometry, Options};

/// Orders a level's files by size, largest first.
#[derive(Default)]
struct LargestFirst {
    calls: AtomicU64,
}

impl Picker for LargestFirst {
    fn name(&self) -> &'static str {
        "largest-first"
    }

    fn order(&self, ctx: &PickCtx<'_>, level: usize) -> Vec<usize> {
        self.calls.fetch_add(1, Relaxed);
        let files = ctx.version.files(level);
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_key(|&i| (Reverse(files[i].size), i));
        order
    }
}

/// One zone class per LSM level (class 0: files without a level, e.g. the WAL).
#[derive(Default)]
struct ZonePerLevel {
    decisions: AtomicU64,
}

impl PlacementPolicy for ZonePerLevel {
    fn name(&self) -> &'static str {
        "zone-per-level"
    }

    fn place(&self, ctx: &PlacementCtx<'_>) -> Decision {
        self.decisions.fetch_add(1, Relaxed);
        let class = ctx.hint.level.map_or(0, |level| level + 1);
        let idle = |z: &&zkv::policy::ZoneView| z.state == ZoneUse::Active && !z.busy;
        let same_level =
            ctx.zones.iter().filter(idle).rfind(|z| {
                z.class == class && z.valid > 0 && z.remaining >= ctx.min_capacity.max(1)
            });
        if let Some(zone) = same_level {
            return Decision::Use(zone.zone);
        }
        // No active resource free: give up the fullest idle zone's rest.
        let finish = match ctx.can_open {
            true => None,
            false => ctx.zones.iter().filter(idle).min_by_key(|z| z.remaining),
        };
        Decision::OpenEmpty {
            class,
            policy: Vec::new(),
            finish: finish.map(|z| z.zone),
        }
    }
}

const KEYS: u32 = 20_000;

fn main() -> Result<(), Box<dyn Error>> {
    let picker = Arc::new(LargestFirst::default());
    let placement = Arc::new(ZonePerLevel::default());
    let engine = Options {
        mode: ExecMode::Deterministic,
        write_buffer_size: 256 << 10,
        target_file_size_base: 256 << 10,
        max_bytes_for_level_base: 1 << 20,
        ..Options::default()
    };
    let options = DbOptions {
        geometry: Geometry::new(40, 4 << 20),
        engine: engine.with_picker(picker.clone()),
        placement: Some(placement.clone()),
        ..DbOptions::default()
    };
    let db = Db::open("mem", options)?;
    for round in 0..3u32 {
        for i in 0..KEYS {
            db.put(key(i), value(i, round))?;
        }
    }
    for i in 0..KEYS {
        let got = db.get(key(i))?;
        if got.as_deref() != Some(&value(i, 2)[..]) {
            return Err(format!("key {i}: {got:?}").into());
        }
    }
    let stats = db.engine().stats();
    let (orders, placed) = (
        picker.calls.load(Relaxed),
        placement.decisions.load(Relaxed),
    );
    println!(
        "zkv custom_policy: {KEYS} keys × 3 rounds read back; {} flushes, {} compactions; \
         largest-first ordered a level {orders} times, zone-per-level placed {placed} files",
        stats.flushes, stats.compactions
    );
    if stats.compactions == 0 || orders == 0 || placed == 0 {
        return Err("the program's policies were not used".into());
    }
    db.close()?;
    Ok(())
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!(
        "value {i} of round {round}, padded to a hundred bytes{:>50}",
        ""
    )
    .into_bytes()
}
