//! Schemes: named combinations of placement, picker and cleaning, as the papers name them
//! (DESIGN.md section 8), and the `--schemes` entries that pick them with per-entry
//! overrides (`baseline:gc-start=10:gc-stop=15`).
//!
//! A scheme is a placement, a picker and a cleaning mode; it stands for the bench flags
//! `--placement`, `--picker` and `--gc-mode`. A run's flags are, from weakest to strongest:
//! the scheme's, the flags given on the command line, the entry's overrides; so a flag
//! given once applies to every scheme unless an entry says otherwise.

use std::ffi::OsString;
use std::fmt;

use zkv_zonefs::fs::CleaningMode;

/// One named scheme: a placement, a picker and what the zone cleaner does; for BlobDB
/// runs, also where blob files go and which of them blob GC relocates.
#[derive(Debug)]
pub struct Scheme {
    pub name: &'static str,
    pub placement: &'static str,
    pub picker: &'static str,
    pub gc_mode: CleaningMode,
    /// `--blob-placement` (`liza`: blob files placed as the file policy places them).
    pub blob_placement: &'static str,
    /// `--blob-gc-cutoff` (`fixed`: RocksDB's age cutoff).
    pub blob_gc_cutoff: &'static str,
    /// `--fs`: `zoned` (the zoned file layer), or `posix` (the same engine on plain files
    /// in a temporary directory: the conventional-SSD baseline).
    pub fs: &'static str,
    /// Which engine runs it: zkv's (`zkv bench`), or RocksDB's own db_bench.
    pub engine: Engine,
    /// What the papers call it and why it is here (help text and docs/CLI.md).
    pub about: &'static str,
}

/// The engine a scheme's runs use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Zkv,
    /// RocksDB's db_bench on a temporary directory (`rocksdb.rs`); the scheme's flags are
    /// mapped to db_bench's.
    DbBench,
}

impl Scheme {
    /// The bench flags (without dashes) and values that make the scheme. The blob flags
    /// only when they differ from the defaults: they need `--enable-blob-files`, which
    /// only BlobDB runs give.
    pub fn flags(&self) -> Vec<(&'static str, &'static str)> {
        let mut flags = vec![
            ("placement", self.placement),
            ("picker", self.picker),
            ("gc-mode", self.gc_mode.name()),
        ];
        if self.blob_placement != "liza" {
            flags.push(("blob-placement", self.blob_placement));
        }
        if self.blob_gc_cutoff != "fixed" {
            flags.push(("blob-gc-cutoff", self.blob_gc_cutoff));
        }
        if self.fs != "zoned" {
            flags.push(("fs", self.fs));
        }
        flags
    }
}

/// Every scheme zkv knows; a new placement or picker adds its schemes here (and to the
/// help text of `zkv compare` and docs/CLI.md). Every scheme but Prophet's full one cleans
/// by copying, as in the papers' experiments.
pub const SCHEMES: &[Scheme] = &[
    // LIZA placement, SICA picker: every paper's baseline.
    scheme(
        "baseline",
        "liza",
        "sica",
        "Baseline / LIZA (every paper)",
    ),
    // MSST'24's A-LIZA: LIZA placement, ACC picker (SICA above the turning point).
    scheme(
        "a-liza",
        "liza",
        "acc",
        "A-LIZA (MSST'24)",
    ),
    // MSST'24's CAZA is the enhanced algorithm, zkv's `caza+` placement.
    scheme(
        "caza",
        "caza+",
        "sica",
        "CAZA (MSST'24: the enhanced algorithm)",
    ),
    // MSST'24's A-CAZA: enhanced CAZA placement with the ACC picker.
    scheme(
        "a-caza",
        "caza+",
        "acc",
        "A-CAZA (MSST'24)",
    ),
    // HotStorage'22's CAZA, the first version of the algorithm (zkv's `caza` placement).
    scheme(
        "caza22",
        "caza",
        "sica",
        "CAZA (HotStorage'22)",
    ),
    // zkv's own: LIZA placement, the zone-drain picker (docs/COMPACTION.md).
    scheme(
        "drain-liza",
        "liza",
        "zone-drain",
        "zkv's zone-drain picker (docs/COMPACTION.md)",
    ),
    // zkv's own: enhanced CAZA placement, the zone-drain picker.
    scheme(
        "drain-caza",
        "caza+",
        "zone-drain",
        "zkv's zone-drain picker with MSST'24's CAZA",
    ),
    // RocksDB's default picker today (kMinOverlappingRatio) under LIZA: the strongest
    // baseline, and zone-drain's base order.
    scheme(
        "min-overlap",
        "liza",
        "min-overlap",
        "RocksDB's default picker today (`kMinOverlappingRatio`): the strongest baseline, zone-drain's base order",
    ),
    // The same picker under the enhanced CAZA placement: zone-drain without its zone
    // awareness.
    scheme(
        "min-overlap-caza",
        "caza+",
        "min-overlap",
        "the same picker with MSST'24's CAZA: zone-drain without its zone awareness",
    ),
    // MSST'24's Prophet: lifetime-window placement with rounding and level segregation,
    // GC with compaction compensation, the round-robin picker the paper runs.
    Scheme {
        gc_mode: CleaningMode::Compensate,
        ..scheme(
        "prophet",
        "prophet",
        "round-robin",
        "Prophet (MSST'24): deletion-time windows with rounding and level segregation, GC with compaction compensation",
    )
    },
    // Prophet without compensation (full GC).
    scheme(
        "prophet-gc",
        "prophet-gc",
        "round-robin",
        "Prophet-GC: the same allocation, full GC",
    ),
    // Prophet's prediction and windows without rounding and segregation, full GC.
    scheme(
        "prophet-gc-no",
        "prophet-gc-no",
        "round-robin",
        "Prophet-GC-NO: no rounding, no level segregation, full GC",
    ),
    // The Same-Victim paper's BAZA: blob files in zones in ascending blob file number, RocksDB's
    // fixed age cutoff (BlobDB runs: `--enable-blob-files`, or `--preset samevictim24`).
    Scheme {
        blob_placement: "baza",
        ..scheme(
        "baza",
        "liza",
        "sica",
        "BAZA (Same-Victim GC): blob files in zones in ascending blob file number, RocksDB's fixed age cutoff; BlobDB runs only (`--enable-blob-files`, or `--preset samevictim24`)",
    )
    },
    // BAZA+: BAZA with Z_Cutoff (blob GC relocates the oldest full blob zones' files).
    Scheme {
        blob_placement: "baza",
        blob_gc_cutoff: "zone",
        ..scheme(
        "baza+",
        "liza",
        "sica",
        "BAZA+: BAZA with Z_Cutoff (`--blob-gc-cutoff zone`)",
    )
    },
    // The same engine and picker on a conventional file system: what ZNS placement and
    // cleaning are measured against by someone choosing a drive.
    Scheme {
        fs: "posix",
        ..scheme(
        "posix",
        "liza",
        "sica",
        "not a paper's: the same engine and picker on plain files in a temporary directory (`--fs posix`), no zones and no zone cleaning; the conventional SSD next to the zoned schemes",
    )
    },
    // RocksDB itself on the same directory setting: what zkv's engine is measured against.
    // Its flags are checked as the posix scheme's, then mapped to db_bench's.
    Scheme {
        fs: "posix",
        engine: Engine::DbBench,
        ..scheme(
        "rocksdb",
        "liza",
        "sica",
        "not a paper's: RocksDB's own `db_bench` (rocksdb-tools) on a temporary directory with the run's flags as db_bench's, `kByCompensatedSize` unless `picker=` says otherwise; no zones and no zone cleaning (docs/CLI.md, \"The rocksdb scheme\")",
    )
    },
];

const fn scheme(
    name: &'static str,
    placement: &'static str,
    picker: &'static str,
    about: &'static str,
) -> Scheme {
    Scheme {
        name,
        placement,
        picker,
        gc_mode: CleaningMode::Copy,
        blob_placement: "liza",
        blob_gc_cutoff: "fixed",
        fs: "zoned",
        engine: Engine::Zkv,
        about,
    }
}

/// What the rocksdb scheme shows as its placement.
const ROCKSDB_PLACEMENT: &str = "RocksDB (db_bench)";

impl Scheme {
    /// The cleaning mode's name; none on a directory.
    fn cleaning(&self) -> &'static str {
        if self.fs == "zoned" {
            self.gc_mode.name()
        } else {
            "none"
        }
    }

    /// The placement, with the blob placement when it is not the file policy's.
    fn placement_text(&self) -> String {
        if self.engine == Engine::DbBench {
            return ROCKSDB_PLACEMENT.to_string();
        }
        if self.fs != "zoned" {
            return format!("a directory ({})", self.fs);
        }
        match self.blob_placement {
            "liza" => self.placement.to_string(),
            blobs => format!("{} (blob files: {blobs})", self.placement),
        }
    }
}

/// The schemes for `zkv compare --help`: name, placement + picker, cleaning, about.
pub fn schemes_help() -> String {
    let rows: Vec<(String, String)> = SCHEMES
        .iter()
        .map(|s| {
            let made_of = format!("{} + {}, {}", s.placement_text(), s.picker, s.cleaning());
            (
                format!("{:<17} {made_of}", s.name),
                s.about.replace('`', ""),
            )
        })
        .collect();
    let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(left, about)| format!("  {left:<width$}  {about}\n"))
        .collect()
}

/// The schemes as the Markdown table of docs/CLI.md ("Schemes and overrides"), which a test
/// holds to this table.
#[cfg(test)]
pub fn schemes_markdown() -> String {
    let mut out = String::from(
        "| scheme | placement | picker | cleaning | the papers' name |\n|---|---|---|---|---|\n",
    );
    for s in SCHEMES {
        let placement = match (s.fs, s.blob_placement) {
            _ if s.engine == Engine::DbBench => ROCKSDB_PLACEMENT.to_string(),
            ("posix", _) => "none (a directory)".to_string(),
            (_, "liza") => format!("`{}`", s.placement),
            (_, blobs) => format!("`{}` (blob files: `{blobs}`)", s.placement),
        };
        out.push_str(&format!(
            "| `{}` | {placement} | `{}` | `{}` | {} |\n",
            s.name,
            s.picker,
            s.cleaning(),
            s.about
        ));
    }
    out
}

/// What a run's scheme is made of (the flags `Scheme::flags` gives).
pub struct Parts<'a> {
    pub placement: &'a str,
    pub picker: &'a str,
    pub gc_mode: CleaningMode,
    pub blob_placement: &'a str,
    pub blob_gc_cutoff: &'a str,
}

/// The scheme a run's parts make, as the papers name it (the name of a bench report); any
/// other combination is `custom`.
pub fn scheme_name(p: &Parts<'_>) -> &'static str {
    SCHEMES
        .iter()
        .find(|s| {
            s.fs == "zoned"
                && s.placement == p.placement
                && s.picker == p.picker
                && s.gc_mode == p.gc_mode
                && s.blob_placement == p.blob_placement
                && s.blob_gc_cutoff == p.blob_gc_cutoff
        })
        .map_or("custom", |s| s.name)
}

/// The bench flags (without dashes) an entry may override.
pub const OVERRIDE_KEYS: &[&str] = &[
    "gc-start",
    "gc-stop",
    "gc-mode",
    "picker",
    "placement",
    "reserved-zones",
    "acc-turning-point",
    "acc-min-level",
    "short-threshold",
    "blob-placement",
    "blob-gc-cutoff",
];

/// One entry of `--schemes`: a scheme and its overrides. The label (the column of the
/// table, the name in the JSON) is the entry as written.
#[derive(Clone, Debug)]
pub struct Entry {
    pub label: String,
    pub scheme: &'static Scheme,
    pub overrides: Vec<(String, String)>,
}

/// `--schemes`, parsed by clap so that a bad entry is a usage error.
#[derive(Clone, Debug)]
pub struct SchemeList(pub Vec<Entry>);

/// Why an entry was refused; the message lists what is allowed.
#[derive(Debug)]
pub struct SchemeError(String);

impl fmt::Display for SchemeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchemeError {}

pub fn parse_schemes(s: &str) -> Result<SchemeList, SchemeError> {
    let entries = s
        .split(',')
        .map(str::trim)
        .map(parse_entry)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SchemeList(entries))
}

/// One entry, `NAME[:KEY=VALUE...]`.
pub fn parse_entry(entry: &str) -> Result<Entry, SchemeError> {
    let mut parts = entry.split(':');
    let name = parts.next().unwrap_or_default();
    if name.is_empty() {
        return Err(SchemeError(format!(
            "empty scheme name in {entry:?} (known: {})",
            known_schemes()
        )));
    }
    let scheme = SCHEMES.iter().find(|s| s.name == name).ok_or_else(|| {
        SchemeError(format!(
            "unknown scheme {name:?} (known: {})",
            known_schemes()
        ))
    })?;
    let overrides = parts
        .map(|p| parse_override(entry, p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Entry {
        label: entry.to_string(),
        scheme,
        overrides,
    })
}

fn parse_override(entry: &str, part: &str) -> Result<(String, String), SchemeError> {
    let (key, value) = part.split_once('=').ok_or_else(|| {
        SchemeError(format!(
            "{entry:?}: override {part:?} is not KEY=VALUE (keys: {})",
            OVERRIDE_KEYS.join(", ")
        ))
    })?;
    if !OVERRIDE_KEYS.contains(&key) {
        return Err(SchemeError(format!(
            "{entry:?}: unknown override {key:?} (keys: {})",
            OVERRIDE_KEYS.join(", ")
        )));
    }
    if value.is_empty() {
        return Err(SchemeError(format!("{entry:?}: {key} has no value")));
    }
    Ok((key.to_string(), value.to_string()))
}

pub fn known_schemes() -> String {
    let names: Vec<&str> = SCHEMES.iter().map(|s| s.name).collect();
    names.join(", ")
}

impl Entry {
    /// The scheme's flags, to go before the command line's.
    pub fn scheme_args(&self) -> Vec<OsString> {
        flag_args(self.scheme.flags().into_iter())
    }

    /// The overrides' flags, to go after the command line's.
    pub fn override_args(&self) -> Vec<OsString> {
        flag_args(self.overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// `--key=value`: the `=` form, so that a value is never taken for a flag.
fn flag_args<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<OsString> {
    pairs.map(|(k, v)| format!("--{k}={v}").into()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_docs_list_every_scheme_as_the_table_does() {
        let docs = include_str!("../../../docs/CLI.md");
        let table = super::schemes_markdown();
        assert!(
            docs.contains(&table),
            "docs/CLI.md (\"Schemes and overrides\") must hold this table:\n{table}"
        );
    }

    use super::*;

    #[test]
    fn entries_keep_their_text_as_label() {
        let list = parse_schemes("baseline,baseline:gc-start=10:gc-stop=15").unwrap();
        assert_eq!(list.0.len(), 2);
        assert_eq!(list.0[1].label, "baseline:gc-start=10:gc-stop=15");
        assert_eq!(
            list.0[1].override_args(),
            vec![OsString::from("--gc-start=10"), "--gc-stop=15".into()]
        );
        assert_eq!(
            list.0[0].scheme_args()[0],
            OsString::from("--placement=liza")
        );
    }

    #[test]
    fn schemes_are_the_papers_combinations() {
        let parts = |name: &str| {
            let e = parse_entry(name).unwrap();
            let flags: Vec<String> = e
                .scheme_args()
                .iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect();
            flags.join(" ")
        };
        let copy = "--gc-mode=copy";
        assert_eq!(
            parts("baseline"),
            format!("--placement=liza --picker=sica {copy}")
        );
        assert_eq!(
            parts("a-liza"),
            format!("--placement=liza --picker=acc {copy}")
        );
        assert_eq!(
            parts("caza"),
            format!("--placement=caza+ --picker=sica {copy}")
        );
        assert_eq!(
            parts("a-caza"),
            format!("--placement=caza+ --picker=acc {copy}")
        );
        assert_eq!(
            parts("caza22"),
            format!("--placement=caza --picker=sica {copy}")
        );
        assert_eq!(
            parts("drain-caza"),
            format!("--placement=caza+ --picker=zone-drain {copy}")
        );
        assert_eq!(
            known_schemes(),
            "baseline, a-liza, caza, a-caza, caza22, drain-liza, drain-caza, min-overlap, \
             min-overlap-caza, prophet, prophet-gc, prophet-gc-no, baza, baza+, posix, rocksdb"
        );
        assert_eq!(
            parts("posix"),
            format!("--placement=liza --picker=sica {copy} --fs=posix")
        );
        assert_eq!(
            parts("rocksdb"),
            format!("--placement=liza --picker=sica {copy} --fs=posix")
        );
        assert_eq!(
            parse_entry("rocksdb").unwrap().scheme.engine,
            Engine::DbBench
        );
        assert_eq!(
            parts("baza+"),
            format!(
                "--placement=liza --picker=sica {copy} --blob-placement=baza --blob-gc-cutoff=zone"
            )
        );
        let prophet = SCHEMES.iter().find(|s| s.name == "prophet").unwrap();
        assert_eq!(
            prophet.flags(),
            [
                ("placement", "prophet"),
                ("picker", "round-robin"),
                ("gc-mode", "compensate")
            ]
        );
    }

    #[test]
    fn bench_runs_are_named_after_their_scheme() {
        let parts = |placement, picker, gc_mode, blob_placement, blob_gc_cutoff| {
            scheme_name(&Parts {
                placement,
                picker,
                gc_mode,
                blob_placement,
                blob_gc_cutoff,
            })
        };
        // A directory's run names itself (`posix`); its parts are the baseline's.
        for s in SCHEMES.iter().filter(|s| s.fs == "zoned") {
            let p = (s.placement, s.picker, s.gc_mode);
            assert_eq!(
                parts(p.0, p.1, p.2, s.blob_placement, s.blob_gc_cutoff),
                s.name
            );
        }
        let (rr, copy) = ("round-robin", CleaningMode::Copy);
        assert_eq!(parts("prophet", rr, copy, "liza", "fixed"), "custom");
        assert_eq!(parts("prophet-gc", rr, copy, "liza", "fixed"), "prophet-gc");
        assert_eq!(parts("liza", "sica", copy, "liza", "fixed"), "baseline");
        assert_eq!(parts("liza", "sica", copy, "baza", "fixed"), "baza");
        assert_eq!(parts("liza", "sica", copy, "baza", "zone"), "baza+");
        assert_eq!(parts("liza", "sica", copy, "liza", "zone"), "custom");
        assert_eq!(parts("caza+", "acc", copy, "liza", "fixed"), "a-caza");
        assert_eq!(parts("caza", "acc", copy, "liza", "fixed"), "custom");
        assert_eq!(
            parts("liza", "min-overlap", copy, "liza", "fixed"),
            "min-overlap"
        );
        assert_eq!(parts("liza", "zaca", copy, "liza", "fixed"), "custom");
        let compact = CleaningMode::Compact;
        assert_eq!(parts("liza", "sica", compact, "liza", "fixed"), "custom");
    }

    #[test]
    fn acc_options_can_be_overridden() {
        let e = parse_entry("a-caza:acc-turning-point=30:acc-min-level=1").unwrap();
        assert_eq!(
            e.override_args(),
            vec![
                OsString::from("--acc-turning-point=30"),
                "--acc-min-level=1".into()
            ]
        );
    }

    #[test]
    fn bad_entries_name_what_is_allowed() {
        let e = parse_schemes("baseline,nope").unwrap_err().to_string();
        assert!(
            e.contains("unknown scheme \"nope\" (known: baseline"),
            "{e}"
        );
        let e = parse_schemes("baseline:num=5").unwrap_err().to_string();
        assert!(
            e.contains("unknown override \"num\" (keys: gc-start"),
            "{e}"
        );
        let e = parse_schemes("baseline:gc-start").unwrap_err().to_string();
        assert!(e.contains("is not KEY=VALUE"), "{e}");
        assert!(parse_schemes("").is_err());
    }
}
