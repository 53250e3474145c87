//! The writer: random operations over a small key space (so that overwrites and deletes
//! are frequent), issued one at a time through the engine, each recorded in the oracle
//! before it starts and acknowledged after it returned; reads are checked against the
//! oracle as they go.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zkv_engine::batch::WriteBatch;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};

use crate::oracle::{Op, OpKind, Oracle, State, Write};
use crate::value::{self, Version};

/// What the writer does next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// A write operation (or a flush), recorded in the oracle.
    Write(Op),
    /// A get of this key, checked against the oracle.
    Get(u32),
    /// A scan of keys `from..from + len`.
    Scan {
        /// The first key.
        from: u32,
        /// How many keys.
        len: u32,
    },
}

/// Draws actions: 45 % puts, 15 % deletes, 15 % batches (2-6 puts and deletes), 17 %
/// gets, 5 % scans, 3 % flushes.
pub struct Generator {
    rng: ChaCha8Rng,
    keys: u32,
}

impl Generator {
    /// A generator over keys `0..keys`; the same seed gives the same actions.
    pub fn new(seed: u64, keys: u32) -> Generator {
        Generator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            keys,
        }
    }

    fn put(&mut self, oracle: &mut Oracle) -> Write {
        Write {
            key: self.rng.random_range(0..self.keys),
            version: Some(oracle.new_version()),
        }
    }

    fn delete(&mut self) -> Write {
        Write {
            key: self.rng.random_range(0..self.keys),
            version: None,
        }
    }

    /// The next action; writes take fresh versions from `oracle`.
    pub fn next(&mut self, oracle: &mut Oracle) -> Action {
        let op = |kind, writes| Action::Write(Op { kind, writes });
        match self.rng.random_range(0..100) {
            0..45 => op(OpKind::Put, vec![self.put(oracle)]),
            45..60 => op(OpKind::Delete, vec![self.delete()]),
            60..75 => {
                let n = self.rng.random_range(2..=6);
                let writes = (0..n)
                    .map(|_| match self.rng.random_bool(0.3) {
                        true => self.delete(),
                        false => self.put(oracle),
                    })
                    .collect();
                op(OpKind::Batch, writes)
            }
            75..92 => Action::Get(self.rng.random_range(0..self.keys)),
            92..97 => {
                let from = self.rng.random_range(0..self.keys);
                let len = self.rng.random_range(1..=32).min(self.keys - from);
                Action::Scan { from, len }
            }
            _ => op(OpKind::Flush, Vec::new()),
        }
    }
}

/// Issues `op` through the engine.
pub fn apply(db: &Db, op: &Op, sync: bool, max_value: usize) -> zkv_engine::Result<()> {
    let wo = WriteOptions {
        sync,
        ..WriteOptions::default()
    };
    let put_value = |w: &Write, v: Version| value::value(w.key, v, max_value);
    match (op.kind, op.writes.as_slice()) {
        (OpKind::Flush, _) => db.flush(),
        (
            OpKind::Put,
            [w @ Write {
                version: Some(v), ..
            }],
        ) => db.put(&wo, &value::key(w.key), &put_value(w, *v)),
        (OpKind::Delete, [w]) => db.delete(&wo, &value::key(w.key)),
        _ => {
            let mut batch = WriteBatch::new();
            for w in &op.writes {
                match w.version {
                    Some(v) => batch.put(&value::key(w.key), &put_value(w, v)),
                    None => batch.delete(&value::key(w.key)),
                }
            }
            db.write(&wo, batch)
        }
    }
}

/// Where a writer records intents and acknowledgements besides its oracle (a child
/// process's log file, which outlives a kill).
pub trait Journal {
    /// `op` is about to be issued.
    fn intent(&mut self, op: &Op) -> std::io::Result<()>;
    /// The operation last announced by [`Journal::intent`] returned `Ok`.
    fn acked(&mut self) -> std::io::Result<()>;
    /// `keys` keys were read and found as the oracle says.
    fn read(&mut self, _keys: u32) -> std::io::Result<()> {
        Ok(())
    }
}

/// No journal: the oracle lives in the same process as the writer.
pub struct NoJournal;

impl Journal for NoJournal {
    fn intent(&mut self, _: &Op) -> std::io::Result<()> {
        Ok(())
    }

    fn acked(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a run of actions ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum End {
    /// Every action was issued.
    Done,
    /// The engine returned an error (a crash, normally).
    Error(zkv_engine::Error),
    /// A read returned what the oracle says it must not.
    Mismatch(String),
    /// The journal could not be written.
    Journal(std::io::Error),
}

/// What a run of actions did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// Actions issued (the last one may have failed).
    pub ops: u64,
    /// Keys read and compared with the oracle.
    pub reads: u64,
}

/// The writer's settings.
#[derive(Clone, Copy, Debug)]
pub struct Writer {
    /// Sync the WAL on every write.
    pub sync: bool,
    /// Largest value body, in bytes.
    pub max_value: usize,
}

impl Writer {
    /// Issues up to `n` actions; stops at the first error or wrong read.
    pub fn run(
        &self,
        db: &Db,
        gen: &mut Generator,
        oracle: &mut Oracle,
        journal: &mut dyn Journal,
        n: u64,
    ) -> (End, Done) {
        let mut done = Done::default();
        for _ in 0..n {
            done.ops += 1;
            let step = self.step(db, gen.next(oracle), oracle, journal, &mut done);
            if let Err(end) = step {
                return (end, done);
            }
        }
        (End::Done, done)
    }

    fn step(
        &self,
        db: &Db,
        action: Action,
        oracle: &mut Oracle,
        journal: &mut dyn Journal,
        done: &mut Done,
    ) -> Result<(), End> {
        match action {
            Action::Write(op) => {
                journal.intent(&op).map_err(End::Journal)?;
                oracle.begin(op.clone());
                apply(db, &op, self.sync, self.max_value).map_err(End::Error)?;
                oracle.ack(self.sync || op.kind == OpKind::Flush);
                journal.acked().map_err(End::Journal)
            }
            Action::Get(k) => {
                done.reads += 1;
                let got = db.get(&ReadOptions::default(), &value::key(k));
                let found = decoded(k, got.map_err(End::Error)?.as_deref())?;
                compare(k, found, oracle.expected(k), "get")?;
                journal.read(1).map_err(End::Journal)
            }
            Action::Scan { from, len } => {
                done.reads += u64::from(len);
                let got = scan(db, from, from + len).map_err(End::Error)?;
                // Entries past `len` are keys the scan must not have returned.
                for (i, found) in got.into_iter().enumerate() {
                    let k = from + i as u32;
                    compare(k, found?, oracle.expected(k), "scan")?;
                }
                journal.read(len).map_err(End::Journal)
            }
        }
    }
}

fn decoded(k: u32, v: Option<&[u8]>) -> Result<Option<Version>, End> {
    v.map(|v| value::decode(k, v))
        .transpose()
        .map_err(End::Mismatch)
}

fn compare(k: u32, found: Option<Version>, want: Option<Version>, how: &str) -> Result<(), End> {
    if found == want {
        return Ok(());
    }
    Err(End::Mismatch(format!(
        "{how} of key {k} returned version {found:?}, the oracle says {want:?}"
    )))
}

/// The keys `from..to` through an iterator: each key's decoded version or absent, or why a
/// value is wrong (a damaged value, a key out of range or out of order).
fn scan(db: &Db, from: u32, to: u32) -> zkv_engine::Result<Vec<Result<Option<Version>, End>>> {
    let ro = ReadOptions {
        lower_bound: Some(value::key(from)),
        upper_bound: Some(value::key(to)),
        ..ReadOptions::default()
    };
    let mut out: Vec<Result<Option<Version>, End>> = (from..to).map(|_| Ok(None)).collect();
    for item in db.iter(&ro)? {
        let (k, v) = item?;
        // Keys `from..to` have the first `to - from` entries of `out`.
        let slot = value::parse_key(&k)
            .filter(|k| (from..to).contains(k))
            .and_then(|n| Some((n, out.get_mut((n - from) as usize)?)));
        match slot {
            Some((n, slot)) => *slot = decoded(n, Some(&v)),
            None => {
                let what = String::from_utf8_lossy(&k).into_owned();
                out.push(Err(End::Mismatch(format!(
                    "a scan of {from}..{to} returned key {what:?}"
                ))));
            }
        }
    }
    Ok(out)
}

/// Writes every key once, in batches, and flushes: a new store starts as full as it stays,
/// so that zone cleaning has live data to move from the first crash on.
pub fn prefill(db: &Db, oracle: &mut Oracle, max_value: usize) -> zkv_engine::Result<()> {
    const BATCH: u32 = 16;
    let keys = oracle.keys();
    for first in (0..keys).step_by(BATCH as usize) {
        let writes = (first..keys.min(first + BATCH))
            .map(|key| Write {
                key,
                version: Some(oracle.new_version()),
            })
            .collect();
        let op = Op {
            kind: OpKind::Batch,
            writes,
        };
        oracle.begin(op.clone());
        apply(db, &op, false, max_value)?;
        oracle.ack(false);
    }
    oracle.begin(Op {
        kind: OpKind::Flush,
        writes: Vec::new(),
    });
    db.flush()?;
    oracle.ack(true);
    Ok(())
}

/// A whole store read back for a check.
#[derive(Debug, Default)]
pub struct Readback {
    /// Each key's version as a point get returned it.
    pub state: State,
    /// Values that are not the harness's (damaged, another key's), keys out of range.
    pub bad: Vec<String>,
    /// Keys where a full scan and a point get disagree.
    pub get_vs_scan: Vec<String>,
}

/// Reads every key twice, by a full scan and by point gets, and decodes the values.
pub fn read_back(db: &Db, keys: u32) -> zkv_engine::Result<Readback> {
    let mut rb = Readback::default();
    let scanned: Vec<Option<Version>> = scan(db, 0, keys)?
        .into_iter()
        .map(|r| match r {
            Ok(v) => v,
            Err(e) => {
                rb.bad.push(describe(e));
                None
            }
        })
        .collect();
    for (k, from_scan) in (0..keys).zip(scanned) {
        let got = db.get(&ReadOptions::default(), &value::key(k))?;
        let v = match decoded(k, got.as_deref()) {
            Ok(v) => v,
            Err(e) => {
                rb.bad.push(describe(e));
                None
            }
        };
        if v != from_scan {
            rb.get_vs_scan
                .push(format!("key {k}: get returned {v:?}, a scan {from_scan:?}"));
        }
        rb.state.push(v);
    }
    Ok(rb)
}

fn describe(end: End) -> String {
    match end {
        End::Mismatch(s) => s,
        other => format!("{other:?}"),
    }
}
