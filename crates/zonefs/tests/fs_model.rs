//! Model test: random sequences of create / append / sync / close / drop / rename /
//! delete / read / remount against a plain map of name → synced bytes. After every
//! operation the file system must agree with the model; after every remount (writers
//! dropped, file system dropped, mounted again on the same device) every synced byte must
//! read back and nothing unsynced may be visible.

mod fs_support;

use std::collections::BTreeMap;

use fs_support::*;
use proptest::prelude::*;
use zkv_zonefs::fs::{FileWriter, FsError, FsOptions, ZoneFs};
use zkv_zonefs::meta::FileKind;

const NAMES: u8 = 8;

#[derive(Clone, Debug)]
enum Op {
    Create { file: u8, kind: u8, replace: bool },
    Append { file: u8, len: usize },
    Sync { file: u8 },
    Close { file: u8 },
    DropWriter { file: u8 },
    Rename { from: u8, to: u8 },
    Delete { file: u8 },
    Read { file: u8, offset: u64, len: usize },
    Remount,
}

fn op() -> impl Strategy<Value = Op> {
    let file = 0..NAMES;
    prop_oneof![
        4 => (file.clone(), 0..4u8, any::<bool>())
            .prop_map(|(file, kind, replace)| Op::Create { file, kind, replace }),
        12 => (file.clone(), prop_oneof![0..200usize, 0..20_000usize, 4096..4097usize, 0..90_000usize])
            .prop_map(|(file, len)| Op::Append { file, len }),
        3 => file.clone().prop_map(|file| Op::Sync { file }),
        2 => file.clone().prop_map(|file| Op::Close { file }),
        1 => file.clone().prop_map(|file| Op::DropWriter { file }),
        2 => (file.clone(), file.clone()).prop_map(|(from, to)| Op::Rename { from, to }),
        2 => file.clone().prop_map(|file| Op::Delete { file }),
        3 => (file.clone(), 0..30_000u64, 0..9000usize)
            .prop_map(|(file, offset, len)| Op::Read { file, offset, len }),
        1 => Just(Op::Remount),
    ]
}

fn name(i: u8) -> String {
    format!("f{i}")
}

const KINDS: [FileKind; 4] = [
    FileKind::Wal,
    FileKind::Sst,
    FileKind::Manifest,
    FileKind::Blob,
];

struct Open {
    writer: FileWriter,
    /// Everything appended (the file's content once synced).
    content: Vec<u8>,
    seed: u64,
    failed: bool,
}

struct World {
    dev: std::sync::Arc<dyn zkv_zns::ZonedDevice>,
    opts: FsOptions,
    fs: ZoneFs,
    /// The model: what each file holds as of its last successful sync.
    synced: BTreeMap<String, Vec<u8>>,
    open: BTreeMap<String, Open>,
    seeds: u64,
}

/// Out of space is allowed (the device is small); any other error is a failure.
fn oos_or_panic(e: FsError, what: &str) {
    assert!(e.is_out_of_space(), "{what}: {e}");
}

impl World {
    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Create {
                file,
                kind,
                replace,
            } => self.create(name(file), kind, replace),
            Op::Append { file, len } => self.append(self.writer_name(file), len),
            Op::Sync { file } => self.sync(self.writer_name(file)),
            Op::Close { file } => self.close(self.writer_name(file)),
            Op::DropWriter { file } => drop(self.open.remove(&self.writer_name(file))),
            Op::Rename { from, to } => self.rename(name(from), name(to)),
            Op::Delete { file } => self.delete(name(file)),
            Op::Read { file, offset, len } => self.read(name(file), offset, len),
            Op::Remount => self.remount(),
        }
    }

    /// Writer operations pick among the open writers (a file name if none is open).
    fn writer_name(&self, pick: u8) -> String {
        let names: Vec<&String> = self.open.keys().collect();
        match names.len() {
            0 => name(pick),
            n => names[pick as usize % n].clone(),
        }
    }

    fn create(&mut self, name: String, kind: u8, replace: bool) {
        let kind = KINDS[kind as usize % KINDS.len()];
        let h = hint(kind, (kind == FileKind::Sst).then_some(1));
        let result = if replace {
            self.fs.create_or_replace(&name, kind, h)
        } else {
            self.fs.create(&name, kind, h)
        };
        let expect_busy = self.open.contains_key(&name);
        let expect_exists = !replace && self.synced.contains_key(&name);
        match result {
            Ok(writer) => {
                assert!(!expect_busy && !expect_exists, "create {name} should fail");
                self.seeds += 1;
                self.synced.insert(name.clone(), Vec::new());
                let open = Open {
                    writer,
                    content: Vec::new(),
                    seed: self.seeds,
                    failed: false,
                };
                self.open.insert(name, open);
            }
            Err(FsError::Busy { .. }) => assert!(expect_busy),
            Err(FsError::AlreadyExists { .. }) => assert!(!expect_busy && expect_exists),
            Err(e) => oos_or_panic(e, "create"),
        }
    }

    fn append(&mut self, name: String, len: usize) {
        let Some(o) = self.open.get_mut(&name).filter(|o| !o.failed) else {
            return;
        };
        let bytes = data(o.seed, o.content.len() as u64, len);
        match o.writer.append(&bytes) {
            Ok(()) => o.content.extend_from_slice(&bytes),
            Err(e) => {
                oos_or_panic(e, "append");
                o.failed = true;
            }
        }
    }

    fn sync(&mut self, name: String) {
        let Some(o) = self.open.get_mut(&name).filter(|o| !o.failed) else {
            return;
        };
        match o.writer.sync() {
            Ok(()) => {
                self.synced.insert(name, o.content.clone());
            }
            Err(e) => {
                oos_or_panic(e, "sync");
                o.failed = true;
            }
        }
    }

    fn close(&mut self, name: String) {
        let Some(o) = self.open.remove(&name) else {
            return;
        };
        match o.writer.close() {
            Ok(()) => {
                assert!(!o.failed, "a failed writer cannot close cleanly");
                self.synced.insert(name, o.content);
            }
            Err(FsError::WriterFailed { .. }) if o.failed => {}
            Err(e) => oos_or_panic(e, "close"),
        }
    }

    fn rename(&mut self, from: String, to: String) {
        let result = self.fs.rename(&from, &to);
        if !self.synced.contains_key(&from) {
            assert!(
                matches!(result, Err(FsError::NotFound { .. })),
                "{result:?}"
            );
        } else if self.open.contains_key(&from) || (from != to && self.open.contains_key(&to)) {
            assert!(matches!(result, Err(FsError::Busy { .. })), "{result:?}");
        } else {
            result.unwrap_or_else(|e| panic!("rename {from} {to}: {e}"));
            if let Some(content) = self.synced.remove(&from) {
                self.synced.insert(to, content);
            }
        }
    }

    fn delete(&mut self, name: String) {
        let result = self.fs.delete(&name);
        if !self.synced.contains_key(&name) {
            assert!(
                matches!(result, Err(FsError::NotFound { .. })),
                "{result:?}"
            );
        } else if self.open.contains_key(&name) {
            assert!(matches!(result, Err(FsError::Busy { .. })), "{result:?}");
        } else {
            result.unwrap_or_else(|e| panic!("delete {name}: {e}"));
            self.synced.remove(&name);
        }
    }

    fn read(&mut self, name: String, offset: u64, len: usize) {
        let Some(content) = self.synced.get(&name) else {
            assert!(matches!(self.fs.open(&name), Err(FsError::NotFound { .. })));
            return;
        };
        let reader = self
            .fs
            .open(&name)
            .unwrap_or_else(|e| panic!("open {name}: {e}"));
        assert_eq!(reader.size(), content.len() as u64);
        let mut buf = vec![0u8; len];
        let n = reader
            .read_at(offset, &mut buf)
            .unwrap_or_else(|e| panic!("read {name}: {e}"));
        let start = (offset as usize).min(content.len());
        let end = (start + len).min(content.len());
        assert_eq!(n, end - start);
        assert!(buf[..n] == content[start..end], "read {name} at {offset}");
    }

    fn remount(&mut self) {
        self.open.clear();
        let fs = ZoneFs::mount(self.dev.clone(), self.opts.clone()).expect("mount");
        self.fs = fs;
        assert_files(&self.fs, &self.synced, "after remount");
    }

    fn check(&self) {
        assert_consistent(&self.fs, "after an operation");
        let names: Vec<String> = self.fs.list().into_iter().map(|f| f.name).collect();
        assert_eq!(names, self.synced.keys().cloned().collect::<Vec<_>>());
    }
}

fn run(ops: &[Op], geo: zkv_zns::Geometry) {
    let (_, dev) = mem_device(geo);
    let opts = opts();
    let fs = format(&dev, opts.clone());
    let mut w = World {
        dev,
        opts,
        fs,
        synced: BTreeMap::new(),
        open: BTreeMap::new(),
        seeds: 0,
    };
    for op in ops {
        w.apply(op);
        w.check();
    }
    w.remount();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_file_system_behaves_like_a_map_of_synced_bytes(
        ops in proptest::collection::vec(op(), 1..120)
    ) {
        // Tokens = min(6 - 1, 8 - 2) = 5 for up to 8 writers: idle leases are taken back.
        run(&ops, geometry(12, 256, 6, 8));
    }

    #[test]
    fn a_full_device_refuses_writes_and_keeps_synced_data(
        ops in proptest::collection::vec(op(), 1..120)
    ) {
        // 6 data zones of 32 KiB, no limits: writes run out of space often.
        run(&ops, geometry(8, 32, 0, 0));
    }
}
