//! `--fs`: which file system the engine runs on. The zoned file layer on `--device` (the
//! default), or `posix:DIR`, plain files in a directory of a conventional file system (the
//! same engine on a conventional SSD: no zones, no placement, no zone cleaning).

use std::path::{Path, PathBuf};

use zkv_engine::options::BlobGcCutoffMode;
use zkv_zonefs::fs::{DEFAULT_GC_START, DEFAULT_GC_STOP};

use super::BenchArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::mkfs::default_gc_mode;

/// The value of `--fs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FsSpec {
    /// The zoned file layer on `--device`.
    #[default]
    Zoned,
    /// A directory: created if missing, and empty.
    Posix(PathBuf),
    /// A new temporary directory (under `TMPDIR`), removed when the run ends.
    PosixTemp,
}

impl FsSpec {
    /// Whether the run is on a directory.
    pub fn is_posix(&self) -> bool {
        !matches!(self, FsSpec::Zoned)
    }

    /// The directory of `posix:DIR`.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            FsSpec::Posix(dir) => Some(dir),
            FsSpec::Zoned | FsSpec::PosixTemp => None,
        }
    }
}

impl std::fmt::Display for FsSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FsSpec::Zoned => f.write_str("zoned"),
            FsSpec::Posix(dir) => write!(f, "posix:{}", dir.display()),
            FsSpec::PosixTemp => f.write_str("posix"),
        }
    }
}

/// `--fs`: `zoned`, `posix:DIR`, or `posix` (a temporary directory).
pub fn parse_fs(s: &str) -> Result<FsSpec, String> {
    match s.split_once(':') {
        None if s == "zoned" => Ok(FsSpec::Zoned),
        None if s == "posix" => Ok(FsSpec::PosixTemp),
        Some(("posix", dir)) if !dir.is_empty() => Ok(FsSpec::Posix(PathBuf::from(dir))),
        Some(("posix", _)) => Err("posix: needs a directory (posix:DIR)".into()),
        _ => Err(format!(
            "'{s}' is not a file system: give zoned (the zoned file layer on --device), \
             posix:DIR (plain files in the directory DIR) or posix (in a temporary directory)"
        )),
    }
}

/// The zone-only flags: clap id and flag.
const ZONE_FLAGS: [(&str, &str); 14] = [
    ("device", "--device"),
    ("zones", "--zones"),
    ("zone_size", "--zone-size"),
    ("zone_capacity", "--zone-capacity"),
    ("max_open", "--max-open"),
    ("max_active", "--max-active"),
    ("block_size", "--block-size"),
    ("timing", "--timing"),
    ("reserved_zones", "--reserved-zones"),
    ("placement", "--placement"),
    ("gc_start", "--gc-start"),
    ("gc_stop", "--gc-stop"),
    ("gc_mode", "--gc-mode"),
    ("blob_placement", "--blob-placement"),
];

impl BenchArgs {
    /// On a directory: refuses the flags that only make sense on zones, given with other
    /// values than their defaults (all of them in one message), and a run on an existing
    /// database; checks that the directory is new or empty.
    pub(super) fn check_posix(&self) -> CliResult {
        if !self.file_system.is_posix() {
            return Ok(());
        }
        let zone_only = self.zone_only_flags();
        if !zone_only.is_empty() {
            return Err(CliError::invalid(format!(
                "--fs {}: {} only apply to the zoned file layer (a directory has no zones, \
                 no placement and no zone cleaning); leave them out or at their defaults",
                self.file_system,
                zone_only.join(", ")
            )));
        }
        if self.existing_db() {
            return Err(CliError::invalid(format!(
                "--fs {}: runs start on a new database in an empty directory; an existing \
                 database (--use-existing-db, --ycsb-phase run) is for --device images",
                self.file_system
            )));
        }
        self.file_system.dir().map_or(Ok(()), check_dir)
    }

    /// For `zkv compare`'s directory scheme: the zone-only flags the comparison's command
    /// line gave are for its zoned schemes, and count as not given here; those the entry
    /// itself overrides (`kept`, clap ids) are still refused.
    pub(crate) fn leave_zone_flags_to_zoned_schemes(&mut self, kept: &[String]) {
        for (id, _) in ZONE_FLAGS {
            if !kept.iter().any(|k| k == id) {
                self.given.forget(id);
            }
        }
    }

    /// The zone-only flags the command line gave with other values than their defaults.
    pub(crate) fn zone_only_flags(&self) -> Vec<&'static str> {
        let default = |id: &str| match id {
            "device" => self.device.to_string() == "mem",
            "timing" => self.timing.name() == "none",
            "reserved_zones" => self.fs.reserved_zones == 0,
            "placement" => self.fs.placement == "liza",
            "gc_start" => self.fs.gc_start == DEFAULT_GC_START,
            "gc_stop" => self.fs.gc_stop == DEFAULT_GC_STOP,
            "gc_mode" => self.fs.cleaning_mode() == default_gc_mode(&self.fs.placement),
            "zones" => self.geometry.zones == Some(super::DEFAULT_ZONES),
            "zone_size" => self.geometry.zone_size == Some(super::DEFAULT_ZONE_SIZE),
            _ => false,
        };
        let mut flags: Vec<&'static str> = ZONE_FLAGS
            .iter()
            .filter(|(id, _)| self.given.has(id) && !default(id))
            .map(|&(_, flag)| flag)
            .collect();
        if self.given.has("blob_gc_cutoff") && self.blob.gc_cutoff() == BlobGcCutoffMode::Zone {
            flags.push("--blob-gc-cutoff zone");
        }
        flags
    }
}

/// A run's directory: missing (it is created) or empty, as a new image must be new.
fn check_dir(dir: &Path) -> CliResult {
    let bad = |why: String| CliError::invalid(format!("--fs posix:{}: {why}", dir.display()));
    let mut entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(bad(e.to_string())),
        Ok(entries) => entries,
    };
    match entries.next() {
        Some(_) => Err(bad(
            "not empty; zkv bench starts a new database in a new or empty \
             directory and never overwrites files"
                .into(),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!(parse_fs("zoned"), Ok(FsSpec::Zoned));
        assert_eq!(parse_fs("posix:/tmp/x"), Ok(FsSpec::Posix("/tmp/x".into())));
        assert_eq!(
            parse_fs("posix:/tmp/x").unwrap().to_string(),
            "posix:/tmp/x"
        );
        assert!(parse_fs("posix:")
            .unwrap_err()
            .contains("needs a directory"));
        assert_eq!(parse_fs("posix"), Ok(FsSpec::PosixTemp));
        assert_eq!(FsSpec::PosixTemp.to_string(), "posix");
        for bad in ["ext4", "zoned:x", ""] {
            let e = parse_fs(bad).unwrap_err();
            assert!(e.contains("posix:DIR"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_directory_must_be_new_or_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_dir(&dir.path().join("new")).is_ok());
        assert!(check_dir(dir.path()).is_ok());
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        let e = check_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not empty"), "{e}");
    }
}
