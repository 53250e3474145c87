//! The pickers by name, for the command line and reports: one table that builds each picker
//! and says what it is, from which the names, the help text and the list in docs/CLI.md
//! come. A program gives its picker as a value (`Options::with_picker`); names only stand
//! for zkv's own pickers with their knobs.

use std::sync::Arc;

use super::acc::Acc;
use super::min_overlap::MinOverlap;
use super::oldest_largest_seq::OldestLargestSeq;
use super::oldest_smallest_seq::OldestSmallestSeq;
use super::picker::Picker;
use super::round_robin::RoundRobin;
use super::sica::Sica;
use super::zaca::Zaca;
use super::zone_drain::ZoneDrain;

/// One picker of zkv's: its name (`Options::compaction_pri`, `--picker`), what it is, and
/// how it is built from the knobs a command line gives.
pub struct PickerEntry {
    /// The name used by `Options::compaction_pri` and the command line.
    pub name: &'static str,
    /// One line: where the picker comes from and what it orders first.
    pub about: &'static str,
    /// Whether the picker reads ACC's knobs (turning point and minimum level).
    pub reads_acc: bool,
    build: fn(Acc) -> Arc<dyn Picker>,
}

/// zkv's pickers, in the order help texts list them.
pub const PICKER_TABLE: &[PickerEntry] = &[
    PickerEntry {
        name: "sica",
        about: "RocksDB's kByCompensatedSize, the papers' SICA: the largest file \
                (deletions weighed extra) first",
        reads_acc: false,
        build: |_| Arc::new(Sica),
    },
    PickerEntry {
        name: "min-overlap",
        about: "RocksDB's default kMinOverlappingRatio: the file that overlaps the next \
                level least per byte first",
        reads_acc: false,
        build: |_| Arc::new(MinOverlap),
    },
    PickerEntry {
        name: "round-robin",
        about: "RocksDB's kRoundRobin: files in key order from a cursor kept per level",
        reads_acc: false,
        build: |_| Arc::new(RoundRobin),
    },
    PickerEntry {
        name: "oldest-smallest-seq",
        about: "RocksDB's kOldestSmallestSeqFirst: the file holding the oldest entry first",
        reads_acc: false,
        build: |_| Arc::new(OldestSmallestSeq),
    },
    PickerEntry {
        name: "oldest-largest-seq",
        about: "RocksDB's kOldestLargestSeqFirst: the file whose newest entry is oldest first",
        reads_acc: false,
        build: |_| Arc::new(OldestLargestSeq),
    },
    PickerEntry {
        name: "zaca",
        about: "MSST'24 ZACA: the file whose compaction group sits in the fewest zones \
                (highest S_same) first",
        reads_acc: false,
        build: |_| Arc::new(Zaca),
    },
    PickerEntry {
        name: "acc",
        about: "MSST'24 ACC: SICA, and ZACA from the minimum level on once free space is at \
                or below the turning point",
        reads_acc: true,
        build: |acc| Arc::new(acc),
    },
    PickerEntry {
        name: "zone-drain",
        about: "zkv's own: min-overlap, and, switching as ACC does, the group that empties \
                the cleaner's victims most per byte it rewrites (docs/COMPACTION.md)",
        reads_acc: true,
        build: |acc| Arc::new(ZoneDrain { switch: acc }),
    },
];

/// The names of zkv's pickers, in [`PICKER_TABLE`]'s order.
pub fn picker_names() -> Vec<&'static str> {
    PICKER_TABLE.iter().map(|e| e.name).collect()
}

/// The entry of the picker called `name`; an unknown name is an error listing the known
/// ones.
pub fn picker_entry(name: &str) -> Result<&'static PickerEntry, String> {
    PICKER_TABLE.iter().find(|e| e.name == name).ok_or_else(|| {
        format!(
            "unknown compaction picker {name:?}; known pickers: {}",
            picker_names().join(", ")
        )
    })
}

/// The picker called `name` with its default knobs.
pub fn picker_by_name(name: &str) -> Result<Arc<dyn Picker>, String> {
    picker_with(name, Acc::default())
}

/// The picker called `name`, a picker that reads ACC's knobs taking `acc`'s.
pub fn picker_with(name: &str, acc: Acc) -> Result<Arc<dyn Picker>, String> {
    picker_entry(name).map(|e| (e.build)(acc))
}

/// The pickers as help text: a line each, the name and what it is.
pub fn pickers_help() -> String {
    let width = PICKER_TABLE.iter().map(|e| e.name.len()).max().unwrap_or(0);
    PICKER_TABLE
        .iter()
        .map(|e| format!("  {:<width$}  {}\n", e.name, e.about))
        .collect()
}

/// The pickers as the Markdown table of docs/CLI.md ("Pickers"), which a test holds to
/// [`PICKER_TABLE`].
pub fn pickers_markdown() -> String {
    let mut table =
        String::from("| picker | what it orders first | reads ACC's knobs |\n|---|---|---|\n");
    for e in PICKER_TABLE {
        let reads = if e.reads_acc { "yes" } else { "" };
        table.push_str(&format!("| `{}` | {} | {reads} |\n", e.name, e.about));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_builds_its_picker() {
        for name in picker_names() {
            let picker = picker_by_name(name).unwrap();
            assert_eq!(picker.name(), name);
        }
    }

    #[test]
    fn the_acc_readers_take_the_knobs() {
        let readers: Vec<&str> = PICKER_TABLE
            .iter()
            .filter(|e| e.reads_acc)
            .map(|e| e.name)
            .collect();
        assert_eq!(readers, ["acc", "zone-drain"]);
        let o = crate::options::Options::default();
        let deep = Acc::new(0.3, 9).unwrap();
        for name in readers {
            let err = picker_with(name, deep).unwrap().check(&o).unwrap_err();
            assert!(err.contains("acc_min_level 9"), "{name}: {err}");
        }
    }

    #[test]
    fn unknown_name_lists_the_known_pickers() {
        let err = picker_by_name("zaca-typo").err().unwrap();
        assert!(err.contains("zaca-typo"), "{err}");
        for name in picker_names() {
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn help_has_a_line_per_picker() {
        let help = pickers_help();
        assert_eq!(help.lines().count(), PICKER_TABLE.len());
        assert!(help.contains("zone-drain"), "{help}");
    }
}
