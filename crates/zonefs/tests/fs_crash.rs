//! Crash tests: a power cut at a random point of a workload over several files (creates,
//! appends, syncs, closes, renames, deletes, dropped writers). After the device restarts,
//! mount must find every file exactly as its last acknowledged operation left it (the one
//! operation interrupted by the cut may or may not have happened, as a whole), metadata
//! consistent, and the file system must keep working.

mod fs_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use fs_support::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_zns::{FaultControl, MemDevice, TearMode, ZonedDevice};
use zkv_zonefs::fs::{FileWriter, FsError, FsResult, ZoneFs};
use zkv_zonefs::meta::FileKind;

type Files = BTreeMap<String, Vec<u8>>;

const STEPS: usize = 120;

struct Open {
    writer: FileWriter,
    content: Vec<u8>,
    seed: u64,
}

/// The workload and what it promised so far.
struct Workload {
    rng: ChaCha8Rng,
    fs: ZoneFs,
    open: BTreeMap<String, Open>,
    /// State promised by the acknowledged operations.
    acked: Files,
    /// The state if the interrupted operation took effect.
    maybe: Option<Files>,
    seeds: u64,
}

impl Workload {
    fn new(fs: ZoneFs, seed: u64) -> Workload {
        Workload {
            rng: ChaCha8Rng::seed_from_u64(seed),
            fs,
            open: BTreeMap::new(),
            acked: Files::new(),
            maybe: None,
            seeds: seed * 1000,
        }
    }

    /// Runs until the end or the first power loss.
    fn run(&mut self) {
        for _ in 0..STEPS {
            let (result, after) = self.step();
            match result {
                Ok(()) => self.acked = after,
                Err(e) if e.is_power_loss() => {
                    self.maybe = Some(after);
                    return;
                }
                Err(e) => panic!("unexpected error: {e}"),
            }
        }
    }

    fn pick_name(&mut self) -> String {
        format!("f{}", self.rng.random_range(0..6))
    }

    fn pick_open(&mut self) -> Option<String> {
        let n = self.open.len();
        (n > 0).then(|| {
            let i = self.rng.random_range(0..n);
            self.open.keys().nth(i).cloned().unwrap_or_default()
        })
    }

    /// One operation: its result and the state it promises if it succeeds.
    fn step(&mut self) -> (FsResult<()>, Files) {
        let mut after = self.acked.clone();
        let roll = self.rng.random_range(0..100);
        let result = match self.pick_open() {
            Some(name) if roll < 40 => self.append(&name),
            Some(name) if roll < 55 => {
                let r = self.sync(&name);
                after.insert(name.clone(), self.open[&name].content.clone());
                r
            }
            Some(name) if roll < 63 => {
                after.insert(name.clone(), self.open[&name].content.clone());
                self.close(&name)
            }
            Some(name) if roll < 66 => {
                self.open.remove(&name);
                Ok(())
            }
            _ if roll < 80 => self.create(&mut after),
            _ if roll < 90 => self.delete(&mut after),
            _ => self.rename(&mut after),
        };
        (result, after)
    }

    fn append(&mut self, name: &str) -> FsResult<()> {
        let len = self.rng.random_range(1..30_000);
        let Some(o) = self.open.get_mut(name) else {
            return Ok(());
        };
        let bytes = data(o.seed, o.content.len() as u64, len);
        o.writer.append(&bytes)?;
        o.content.extend_from_slice(&bytes);
        Ok(())
    }

    fn sync(&mut self, name: &str) -> FsResult<()> {
        match self.open.get_mut(name) {
            Some(o) => o.writer.sync(),
            None => Ok(()),
        }
    }

    fn close(&mut self, name: &str) -> FsResult<()> {
        match self.open.remove(name) {
            Some(o) => o.writer.close(),
            None => Ok(()),
        }
    }

    fn create(&mut self, after: &mut Files) -> FsResult<()> {
        let name = self.pick_name();
        if self.open.contains_key(&name) || self.open.len() >= 4 {
            return Ok(());
        }
        let kind = if self.rng.random_bool(0.3) {
            FileKind::Wal
        } else {
            FileKind::Sst
        };
        let h = hint(kind, Some(self.rng.random_range(0..4)));
        let exists = self.acked.contains_key(&name);
        if exists && self.rng.random_bool(0.5) {
            return Ok(());
        }
        after.insert(name.clone(), Vec::new());
        let writer = if exists {
            self.fs.create_or_replace(&name, kind, h)?
        } else {
            self.fs.create(&name, kind, h)?
        };
        self.seeds += 1;
        let open = Open {
            writer,
            content: Vec::new(),
            seed: self.seeds,
        };
        self.open.insert(name, open);
        Ok(())
    }

    fn delete(&mut self, after: &mut Files) -> FsResult<()> {
        let name = self.pick_name();
        if self.open.contains_key(&name) || !self.acked.contains_key(&name) {
            return Ok(());
        }
        after.remove(&name);
        self.fs.delete(&name)
    }

    fn rename(&mut self, after: &mut Files) -> FsResult<()> {
        let (from, to) = (self.pick_name(), self.pick_name());
        let busy = self.open.contains_key(&from) || self.open.contains_key(&to);
        if busy || !self.acked.contains_key(&from) {
            return Ok(());
        }
        if let Some(content) = after.remove(&from) {
            after.insert(to.clone(), content);
        }
        self.fs.rename(&from, &to)
    }
}

fn device() -> (Arc<MemDevice>, Arc<dyn ZonedDevice>) {
    // 22 data zones of 128 KiB; a metadata zone holds 32 blocks, so the log rolls every
    // thirty-odd metadata syncs and cuts also hit rolls.
    mem_device(geometry(24, 128, 6, 8))
}

/// Mutating commands the workload of `seed` issues without a cut.
fn commands_of(seed: u64) -> u64 {
    let (mem, dev) = device();
    let fs = format(&dev, opts());
    let start = mem.mutating_commands();
    let mut w = Workload::new(fs, seed);
    w.run();
    assert!(w.maybe.is_none());
    mem.mutating_commands() - start
}

fn mount_after_cut(mem: &MemDevice, dev: &Arc<dyn ZonedDevice>, second_cut: Option<u64>) -> ZoneFs {
    mem.restart();
    if let Some(after) = second_cut {
        mem.schedule_power_cut(after, TearMode::Drop);
        match ZoneFs::mount(dev.clone(), opts()) {
            Ok(fs) => {
                // The mount finished before the cut: cut now (nothing is in flight).
                drop(fs);
                mem.power_cut(TearMode::Drop);
            }
            Err(e) => assert!(e.is_power_loss(), "{e}"),
        }
        mem.restart();
    }
    mount(dev, opts())
}

fn same_files(fs: &ZoneFs, files: &Files) -> bool {
    let names: Vec<String> = fs.list().into_iter().map(|f| f.name).collect();
    names == files.keys().cloned().collect::<Vec<_>>()
        && files
            .iter()
            .all(|(name, content)| read_file(fs, name) == *content)
}

fn crash_once(seed: u64, mode: TearMode) {
    let total = commands_of(seed);
    let (mem, dev) = device();
    let fs = format(&dev, opts());
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xdead_beef);
    mem.schedule_power_cut(rng.random_range(0..=total), mode);
    let mut w = Workload::new(fs, seed);
    w.run();
    if mem.is_powered() {
        mem.power_cut(mode);
    }
    let (acked, maybe) = (w.acked.clone(), w.maybe.clone());
    drop(w); // writers and file system go away while the power is off
    let second_cut = rng.random_bool(0.3).then(|| rng.random_range(0..12));
    let fs = mount_after_cut(&mem, &dev, second_cut);
    let ok = same_files(&fs, &acked) || maybe.as_ref().is_some_and(|m| same_files(&fs, m));
    assert!(
        ok,
        "seed {seed} {mode:?}: found {:?}, acknowledged {:?}, maybe {:?}",
        fs.list()
            .iter()
            .map(|f| (&f.name, f.size))
            .collect::<Vec<_>>(),
        acked.iter().map(|(n, c)| (n, c.len())).collect::<Vec<_>>(),
        maybe.map(|m| m
            .iter()
            .map(|(n, c)| (n.clone(), c.len()))
            .collect::<Vec<_>>()),
    );
    assert_consistent(&fs, &format!("seed {seed} after mount"));
    keeps_working(fs, &dev, seed);
}

/// The mounted file system takes new files, deletes old ones, and mounts again.
fn keeps_working(fs: ZoneFs, dev: &Arc<dyn ZonedDevice>, seed: u64) {
    let mut files: Files = fs
        .list()
        .into_iter()
        .map(|f| (f.name.clone(), read_file(&fs, &f.name)))
        .collect();
    if let Some(name) = files.keys().next().cloned() {
        fs.delete(&name).unwrap();
        files.remove(&name);
    }
    let content = data(seed, 0, 70_000);
    let mut w = fs
        .create_or_replace("after", FileKind::Sst, Default::default())
        .unwrap();
    w.append(&content).unwrap();
    w.close().unwrap();
    files.insert("after".into(), content);
    drop(fs);
    let fs = mount(dev, opts());
    assert_files(&fs, &files, &format!("seed {seed} second mount"));
}

#[test]
fn power_cuts_dropping_unsynced_writes() {
    for seed in 0..250 {
        crash_once(seed, TearMode::Drop);
    }
}

#[test]
fn power_cuts_tearing_unsynced_writes() {
    for seed in 0..250 {
        crash_once(seed, TearMode::Tear { seed });
    }
}

/// Power cuts never leave out-of-space or other errors behind: only power loss.
#[test]
fn only_power_loss_errors_surface_during_a_cut() {
    let (mem, dev) = device();
    let fs = format(&dev, opts());
    let mut w = fs.create("a", FileKind::Sst, Default::default()).unwrap();
    mem.power_cut(TearMode::Drop);
    let err = w.append(&data(1, 0, 8192)).err();
    assert!(err.as_ref().is_some_and(FsError::is_power_loss), "{err:?}");
    assert!(matches!(w.sync(), Err(FsError::WriterFailed { .. })));
    drop(w);
    drop(fs);
    mem.restart();
    let fs = mount(&dev, opts());
    assert_eq!(read_file(&fs, "a"), Vec::<u8>::new());
}
