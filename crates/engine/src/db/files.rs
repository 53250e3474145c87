//! The database's files on the file layer: names, placement hints, and writing a table that
//! was built in memory.
//!
//! Names: WALs `{number:06}.log`, SSTs `{number:06}.sst` (see [`sst_file_name`]), blob
//! files `{number:06}.blob`; the
//! manifest and CURRENT belong to the version set. Any name ending in `.tmp` or `.dbtmp` is a
//! temporary file left by a crash and is deleted at open.

use zkv_zonefs::fs::FsError;

use crate::fs::FileSystem;
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::{Lifetime, Neighbors, PlacementHint, PredictedDeath};

use crate::key;
use crate::lifetime::FileLifetime;
use crate::sst::BuiltTable;
use crate::version::FileMeta;
pub(crate) use crate::version::{sst_file_name, wal_file_name};
use crate::{Error, Result};

/// RocksDB's base level with static level sizes: L1.
pub(crate) const BASE_LEVEL: u8 = 1;

/// What a file name says about a file of the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DbFile {
    Wal(u64),
    Sst(u64),
    Blob(u64),
    Temp,
    /// Not one of the names above (the manifest, CURRENT, other users' files).
    Other,
}

/// Classifies a file name.
pub(crate) fn parse_file_name(name: &str) -> DbFile {
    let numbered = |suffix: &str| {
        let stem = name.strip_suffix(suffix)?;
        let digits = !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| stem.parse::<u64>().ok()).flatten()
    };
    if let Some(n) = numbered(".log") {
        DbFile::Wal(n)
    } else if let Some(n) = numbered(".sst") {
        DbFile::Sst(n)
    } else if let Some(n) = numbered(".blob") {
        DbFile::Blob(n)
    } else if name.ends_with(".tmp") || name.ends_with(".dbtmp") {
        DbFile::Temp
    } else {
        DbFile::Other
    }
}

/// The hint of a WAL: short-lived.
pub(crate) fn wal_hint() -> PlacementHint {
    PlacementHint {
        kind: Some(FileKind::Wal),
        lifetime: Lifetime::for_file(FileKind::Wal, None, BASE_LEVEL),
        ..PlacementHint::default()
    }
}

/// What a new SST's hint carries besides its level, size and key range, each computed only
/// when something uses it: the neighbourhood (key-range-aware placement) and the predicted
/// lifetime (lifetime-aware placement, compensating cleaning), kept with the file.
#[derive(Clone, Debug, Default)]
pub(crate) struct SstExtras {
    pub neighbors: Option<Neighbors>,
    pub lifetime: Option<FileLifetime>,
    pub death: Option<PredictedDeath>,
}

/// The hint of an SST of `level` whose table is complete: RocksDB's lifetime for the level,
/// the exact size and user-key range, and the extras.
pub(crate) fn sst_hint(level: usize, built: &BuiltTable, extras: SstExtras) -> PlacementHint {
    let (smallest, largest) = (&built.props.smallest, &built.props.largest);
    let range = (key::user_key(smallest), key::user_key(largest));
    sst_hint_of(level, built.data.len() as u64, range, extras)
}

/// The hint of the live SST `file` of `level`, as the zone cleaner asks for it when it
/// moves the file: as [`sst_hint`] for a new SST of that level, sized as the file.
pub(crate) fn live_sst_hint(level: usize, file: &FileMeta, extras: SstExtras) -> PlacementHint {
    let range = (file.smallest_user_key(), file.largest_user_key());
    sst_hint_of(level, file.size, range, extras)
}

/// The hint of an SST of `level` of `size` bytes over the user keys `range`.
fn sst_hint_of(
    level: usize,
    size: u64,
    (smallest, largest): (&[u8], &[u8]),
    extras: SstExtras,
) -> PlacementHint {
    let level = Some(u8::try_from(level).unwrap_or(u8::MAX));
    PlacementHint {
        kind: Some(FileKind::Sst),
        level,
        lifetime: Lifetime::for_file(FileKind::Sst, level, BASE_LEVEL),
        size,
        smallest_key: smallest.to_vec(),
        largest_key: largest.to_vec(),
        neighbors: extras.neighbors,
        death: extras.death,
        blob_file: None,
        job: None,
    }
}

/// Creates SST `number` of `level` with its hint (`extras` included), writes the built
/// table and syncs it; the file's metadata keeps the predicted lifetime. The table's
/// buffer goes to the next builder either way.
/// A failed write leaves no file behind when the file layer can still delete it (a file
/// that survives a crash is not in any version and is deleted at the next open).
pub(crate) fn write_table(
    fs: &dyn FileSystem,
    number: u64,
    level: usize,
    built: BuiltTable,
    extras: SstExtras,
) -> Result<FileMeta> {
    let lifetime = extras.lifetime;
    let name = sst_file_name(number);
    let failed = |step: &str, e: FsError| {
        let context = format!("{step} table '{name}'");
        match e.is_out_of_space() {
            true => Error::NoRoomForOutput { context, source: e },
            false => Error::fs(context, e),
        }
    };
    let written = fs
        .create(&name, FileKind::Sst, sst_hint(level, &built, extras))
        .map_err(|e| failed("create", e))
        .and_then(|mut writer| {
            let written = writer.append(&built.data).and_then(|()| writer.close());
            written.map_err(|e| {
                let _ = fs.delete(&name);
                failed("write", e)
            })
        });
    let mut meta = built.props.file_meta(number, built.data.len() as u64);
    meta.lifetime = lifetime;
    meta.oldest_blob_file = built.oldest_blob_file;
    built.recycle();
    written.map(|()| meta)
}

/// Deletes a file; a file that is already gone is fine.
pub(crate) fn delete_file(fs: &dyn FileSystem, name: &str) -> Result<()> {
    match fs.delete(name) {
        Ok(()) | Err(FsError::NotFound { .. }) => Ok(()),
        Err(e) => Err(Error::fs(format!("delete '{name}'"), e)),
    }
}

/// Whether an error says that a file does not exist (a reader raced with its deletion).
pub(crate) fn is_missing_file(e: &Error) -> bool {
    matches!(
        e,
        Error::Fs {
            source: FsError::NotFound { .. },
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_left_alone() {
        assert_eq!(parse_file_name(&wal_file_name(12)), DbFile::Wal(12));
        assert_eq!(parse_file_name(&sst_file_name(7)), DbFile::Sst(7));
        assert_eq!(parse_file_name("1234567.sst"), DbFile::Sst(1_234_567));
        assert_eq!(parse_file_name("000012.blob"), DbFile::Blob(12));
        assert_eq!(parse_file_name("CURRENT.dbtmp"), DbFile::Temp);
        assert_eq!(parse_file_name("x.tmp"), DbFile::Temp);
        for other in ["CURRENT", "MANIFEST-000001", ".log", "a1.sst", "a12.blob"] {
            assert_eq!(parse_file_name(other), DbFile::Other, "{other}");
        }
    }
}
