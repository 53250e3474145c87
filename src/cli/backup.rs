//! `zkv backup`: every file of a zkv file system copied out to a directory, byte for byte,
//! with a manifest that `zkv restore` checks and writes them back from.
//!
//! The device is only read: it is opened read-only (an image takes a shared lock, so no
//! writer can change it meanwhile) and the file system is mounted read-only
//! ([`FsView`]). A backup directory holds:
//!
//! - `files/NAME`: each file's bytes, under its file-system name ([`stored_name`] escapes
//!   the bytes a host file name cannot take);
//! - `zkv-backup.json`: the [`Manifest`], written last and renamed into place, so that a
//!   directory without it is never taken for a complete backup.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use serde::{Deserialize, Serialize};
use zkv_zns::{DeviceSpec, Geometry};
use zkv_zonefs::fs::FileInfo;
use zkv_zonefs::meta::{self, FileKind};

use super::device::{disturbed, open_for_reading, parse_device, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::{fs_error, meta_error, FsView};
use super::inspect::{kind_name, lifetime_name, OptionsJson};
use super::size::format_size;
use super::Out;

/// The manifest's file name in a backup directory.
pub const MANIFEST: &str = "zkv-backup.json";
/// Where the manifest is written before it is renamed into place.
const MANIFEST_TEMP: &str = "zkv-backup.json.tmp";
/// The directory of the files' bytes in a backup directory.
pub const FILES_DIR: &str = "files";
/// `format` of every manifest.
pub const FORMAT: &str = "zkv-backup";
/// The manifest version this build writes and reads.
pub const VERSION: u32 = 1;
/// Bytes copied at a time: files are streamed, never read whole into memory.
pub const CHUNK: usize = 1 << 20;

const BACKUP_EXAMPLES: &str = "\
Examples:
  zkv backup  --device file:/tmp/zns.img --to /backups/zns-monday
  zkv restore --from /backups/zns-monday --device file:/tmp/copy.img

The device is never written: an image is opened read-only (a shared lock: no writer can
change it during the backup) and the file system is mounted read-only. --to must not exist
or be an empty directory. The backup is complete once zkv-backup.json exists: it is written
last, and a failed backup removes what it wrote.";

#[derive(Debug, Args)]
#[command(after_help = BACKUP_EXAMPLES)]
pub struct BackupArgs {
    /// The device: file:PATH or zbd:/dev/DEV, formatted by 'zkv mkfs'; it is only read
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    /// The directory to write the backup to: created if it does not exist, refused if it
    /// is not empty
    #[arg(long, value_name = "DIR")]
    to: PathBuf,

    #[command(flatten)]
    wait: WaitArg,
}

/// What a backup directory's `zkv-backup.json` holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written by this build.
    pub version: u32,
    /// The zkv that wrote it.
    pub zkv_version: String,
    pub source: Source,
    /// In name order.
    pub files: Vec<FileEntry>,
}

/// The file system the backup was taken from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Source {
    pub device: String,
    pub geometry: Geometry,
    pub meta_zones: u32,
    /// The recorded options, as `zkv inspect df` shows them.
    pub options: OptionsJson,
    /// The newest metadata superblock's format version.
    pub metadata_format_version: u32,
    /// The metadata log's generation and last commit when the backup was taken.
    pub generation: Option<u64>,
    pub commit: Option<u64>,
}

/// One file of the backup.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileEntry {
    /// The name in the file system (the engine finds its files by name: `CURRENT`,
    /// `MANIFEST-000005`, `000012.sst`, `000013.log`).
    pub name: String,
    /// `wal`, `manifest`, `sst`, `blob` or `other`.
    pub kind: String,
    pub size: u64,
    /// CRC32C (Castagnoli) of the file's bytes.
    pub crc32c: u32,
    pub level: Option<u8>,
    /// The write-lifetime hint the file layer records (RocksDB's numbering).
    pub lifetime: u8,
    pub lifetime_name: Option<String>,
}

impl FileEntry {
    /// The file's kind; `None` for a name this build does not know.
    pub fn file_kind(&self) -> Option<FileKind> {
        FileKind::ALL
            .into_iter()
            .find(|k| kind_name(*k) == self.kind)
    }

    /// Where the file's bytes are in the backup directory `dir`.
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(FILES_DIR).join(stored_name(&self.name))
    }
}

/// A file-system name as a host file name: bytes other than ASCII letters, digits, `.`,
/// `_` and `-` become `%XX` (so `/` can never make a path, and `%` itself is escaped);
/// the names `.` and `..` are escaped whole. The engine's names are kept as they are.
pub fn stored_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"._-".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    if out == "." || out == ".." {
        out = out.replace('.', "%2E");
    }
    out
}

pub fn run(a: BackupArgs) -> CliResult {
    let dir = &a.to;
    let exists = check_destination(dir)?;
    let device = a.device.to_string();
    let reader = open_for_reading(&a.device, a.wait.wait)?;
    let view = FsView::open(Arc::clone(&reader.dev), &device)?;
    let dest = Destination::create(dir, exists)?;
    let written = write_backup(&view, dir);
    // A writer that reset a zone under the backup may have made any read fail: nothing of
    // it is kept.
    if reader.disturbed() {
        dest.remove();
        return Err(disturbed(&a.device, "backup"));
    }
    let manifest = match written {
        Ok(manifest) => manifest,
        Err(e) => {
            dest.remove();
            return Err(e);
        }
    };
    let mut out = Out::new();
    out.line(summary(&manifest, &device, dir))?;
    out.flush()
}

/// Whether `dir` exists (then it is an empty directory); refuses anything else there.
fn check_destination(dir: &Path) -> CliResult<bool> {
    let refuse = |why: &str| {
        CliError::invalid(format!(
            "--to {}: {why}; a backup goes to a new or empty directory (nothing was written)",
            dir.display()
        ))
    };
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(true),
        Ok(false) => Err(refuse("exists and is not empty")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            Err(refuse("exists and is not a directory"))
        }
        Err(e) => Err(CliError::io(format!("--to {}", dir.display()), e)),
    }
}

/// The backup directory while it is written: what to take back if the backup fails.
struct Destination {
    dir: PathBuf,
    created: bool,
}

impl Destination {
    fn create(dir: &Path, exists: bool) -> CliResult<Destination> {
        if !exists {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        }
        let dest = Destination {
            dir: dir.to_path_buf(),
            created: !exists,
        };
        let files = dir.join(FILES_DIR);
        if let Err(e) = std::fs::create_dir(&files) {
            dest.remove();
            return Err(io_error(&files, e));
        }
        Ok(dest)
    }

    /// Removes what the backup wrote (the directory was empty or new), best effort: the
    /// manifest is missing either way, so what is left is never taken for a backup.
    fn remove(&self) {
        let _ = std::fs::remove_dir_all(self.dir.join(FILES_DIR));
        let _ = std::fs::remove_file(self.dir.join(MANIFEST_TEMP));
        if self.created {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

fn io_error(path: &Path, e: io::Error) -> CliError {
    CliError::io(path.display().to_string(), e)
}

/// Copies every file out, then writes the manifest.
fn write_backup(view: &FsView, dir: &Path) -> CliResult<Manifest> {
    let files = view
        .fs
        .list()
        .iter()
        .map(|info| copy_out(view, info, dir))
        .collect::<CliResult<Vec<_>>>()?;
    sync_dir(&dir.join(FILES_DIR))?;
    let manifest = manifest(view, files)?;
    write_manifest(dir, &manifest)?;
    Ok(manifest)
}

/// Streams one file from the file system into the backup, durably.
fn copy_out(view: &FsView, info: &FileInfo, dir: &Path) -> CliResult<FileEntry> {
    let reader = view
        .fs
        .open(&info.name)
        .map_err(|e| fs_error(&view.device, e))?;
    let mut entry = FileEntry {
        name: info.name.clone(),
        kind: kind_name(info.kind).to_string(),
        size: 0,
        crc32c: 0,
        level: info.level,
        lifetime: info.lifetime,
        lifetime_name: lifetime_name(info.lifetime).map(str::to_string),
    };
    let path = entry.path(dir);
    let mut file = File::create_new(&path).map_err(|e| io_error(&path, e))?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = reader
            .read_at(entry.size, &mut buf)
            .map_err(|e| fs_error(&view.device, e))?;
        if n == 0 {
            break;
        }
        let bytes = &buf[..n];
        entry.crc32c = crc32c::crc32c_append(entry.crc32c, bytes);
        file.write_all(bytes).map_err(|e| io_error(&path, e))?;
        entry.size += n as u64;
    }
    file.sync_all().map_err(|e| io_error(&path, e))?;
    Ok(entry)
}

fn manifest(view: &FsView, files: Vec<FileEntry>) -> CliResult<Manifest> {
    let newest = meta::probe(view.fs.device().as_ref()).map_err(|e| meta_error(&view.device, e))?;
    Ok(Manifest {
        format: FORMAT.to_string(),
        version: VERSION,
        zkv_version: env!("CARGO_PKG_VERSION").to_string(),
        source: Source {
            device: view.device.clone(),
            geometry: view.geo,
            meta_zones: view.meta_zones,
            options: OptionsJson::of(view.fs.options()),
            metadata_format_version: newest.version(),
            generation: view.mount.as_ref().map(|m| m.seq),
            commit: view.mount.as_ref().map(|m| m.commit),
        },
        files,
    })
}

/// Writes the manifest to a temporary name, syncs it, renames it into place and syncs the
/// directory: the manifest appears whole, after every file it lists, or not at all.
fn write_manifest(dir: &Path, manifest: &Manifest) -> CliResult {
    let text = serde_json::to_string_pretty(manifest)
        .map_err(|e| CliError::invalid(format!("encoding the backup manifest: {e}")))?;
    let temp = dir.join(MANIFEST_TEMP);
    let mut file = File::create_new(&temp).map_err(|e| io_error(&temp, e))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&temp, e))?;
    let path = dir.join(MANIFEST);
    std::fs::rename(&temp, &path).map_err(|e| io_error(&path, e))?;
    sync_dir(dir)
}

/// Makes a directory's entries durable (the files created or renamed in it).
fn sync_dir(dir: &Path) -> CliResult {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, e))
}

/// `backed up file:fs.img to DIR: 8 files, 492246 B (1 wal, 2 manifest, 5 sst)`.
fn summary(m: &Manifest, device: &str, dir: &Path) -> String {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &m.files {
        *kinds.entry(f.kind.as_str()).or_default() += 1;
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let bytes: u64 = m.files.iter().map(|f| f.size).sum();
    let by_kind = if kinds.is_empty() {
        String::new()
    } else {
        format!(" ({})", kinds.join(", "))
    };
    format!(
        "backed up {device} to {}: {} file{}, {}{by_kind}",
        dir.display(),
        m.files.len(),
        if m.files.len() == 1 { "" } else { "s" },
        format_size(bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_names_are_kept_and_others_escaped() {
        for name in [
            "CURRENT",
            "MANIFEST-000005",
            "000012.sst",
            "000013.log",
            ".hidden",
        ] {
            assert_eq!(stored_name(name), name);
        }
        assert_eq!(stored_name("a/b"), "a%2Fb");
        assert_eq!(stored_name("100%"), "100%25");
        assert_eq!(stored_name("é"), "%C3%A9");
        assert_eq!(stored_name("."), "%2E");
        assert_eq!(stored_name(".."), "%2E%2E");
        assert_eq!(stored_name("..."), "...");
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in FileKind::ALL {
            let entry = FileEntry {
                name: "x".into(),
                kind: kind_name(kind).into(),
                size: 0,
                crc32c: 0,
                level: None,
                lifetime: 0,
                lifetime_name: None,
            };
            assert_eq!(entry.file_kind(), Some(kind));
        }
    }
}
