//! The child writer's log: a plain file a SIGKILL does not lose (the kernel keeps every
//! finished `write`), one line per event, each written by one `write` call. The parent
//! reads it after the kill to learn exactly what the child began and what it was told
//! succeeded. A line without its newline was cut by the kill and is ignored: an intent is
//! written whole before its operation starts, so a cut intent means it never started, and
//! a cut acknowledgement leaves the operation in flight (present or absent), which is the
//! conservative reading.
//!
//! Lines:
//! - `R`: the store is open and was read (the kill came after the recovery);
//! - `I P 5=123`, `I D 5`, `I B 5=123 6=- 9=130`, `I F`: the intent of a put, delete,
//!   batch or flush, with each key's new version (`-` for a delete);
//! - `A`: the operation begun last returned `Ok`;
//! - `G n`: `n` keys were read and matched the child's oracle;
//! - `S name=value ...`: the child's counters since its open ([`Activity`]);
//! - `E`: the child ran out of operations and waits for the kill;
//! - `O`: the engine ran out of space (tolerated, see `Setup::tolerate_out_of_space`): the
//!   child exits there.

use std::fs::File;
use std::io::Write as _;
use std::path::Path;

use crate::oracle::{Op, OpKind, Write};
use crate::setup::Activity;
use crate::workload::Journal;

/// One event of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Ready,
    Intent(Op),
    Acked,
    Read(u64),
    Activity(Activity),
    End,
    OutOfSpace,
}

fn kind_letter(kind: OpKind) -> char {
    match kind {
        OpKind::Put => 'P',
        OpKind::Delete => 'D',
        OpKind::Batch => 'B',
        OpKind::Flush => 'F',
    }
}

/// The line of an event, newline included.
pub fn encode(event: &Event) -> String {
    match event {
        Event::Ready => "R\n".into(),
        Event::Intent(op) => {
            let mut line = format!("I {}", kind_letter(op.kind));
            for w in &op.writes {
                match w.version {
                    Some(v) => line.push_str(&format!(" {}={v}", w.key)),
                    None => line.push_str(&format!(" {}=-", w.key)),
                }
            }
            line + "\n"
        }
        Event::Acked => "A\n".into(),
        Event::Read(n) => format!("G {n}\n"),
        Event::Activity(a) => {
            let fields: Vec<String> = a
                .named()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("S {}\n", fields.join(" "))
        }
        Event::End => "E\n".into(),
        Event::OutOfSpace => "O\n".into(),
    }
}

fn decode_write(field: &str) -> Option<Write> {
    let (key, version) = field.split_once('=')?;
    let version = match version {
        "-" => None,
        v => Some(v.parse().ok()?),
    };
    Some(Write {
        key: key.parse().ok()?,
        version,
    })
}

fn decode_intent<'a>(mut fields: impl Iterator<Item = &'a str>) -> Option<Op> {
    let kind = match fields.next()? {
        "P" => OpKind::Put,
        "D" => OpKind::Delete,
        "B" => OpKind::Batch,
        "F" => OpKind::Flush,
        _ => return None,
    };
    let writes = fields.map(decode_write).collect::<Option<Vec<_>>>()?;
    Some(Op { kind, writes })
}

fn decode_activity<'a>(fields: impl Iterator<Item = &'a str>) -> Option<Activity> {
    let mut a = Activity::default();
    for field in fields {
        let (name, value) = field.split_once('=')?;
        if !a.set(name, value.parse().ok()?) {
            return None;
        }
    }
    Some(a)
}

/// The event of one whole line (without its newline).
pub fn decode(line: &str) -> Option<Event> {
    let mut fields = line.split(' ');
    match fields.next()? {
        "R" => Some(Event::Ready),
        "I" => decode_intent(fields).map(Event::Intent),
        "A" => Some(Event::Acked),
        "G" => Some(Event::Read(fields.next()?.parse().ok()?)),
        "S" => decode_activity(fields).map(Event::Activity),
        "E" => Some(Event::End),
        "O" => Some(Event::OutOfSpace),
        _ => None,
    }
}

/// The events of a log: its whole lines, in order. A line that does not decode is an
/// error (the parent cannot know what the child did); a last line without its newline was
/// cut by the kill and is left out.
pub fn read(path: &Path) -> Result<Vec<Event>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("read the child's log {}: {e}", path.display()))?;
    let whole = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => return Ok(Vec::new()),
    };
    whole
        .split('\n')
        .map(|line| decode(line).ok_or_else(|| format!("bad line in the child's log: {line:?}")))
        .collect()
}

/// The child's side: appends events to the log file.
pub struct FileJournal {
    file: File,
}

impl FileJournal {
    /// Opens (and empties) the log at `path`.
    pub fn create(path: &Path) -> std::io::Result<FileJournal> {
        Ok(FileJournal {
            file: File::create(path)?,
        })
    }

    /// Appends one event with one `write` call.
    pub fn event(&mut self, event: &Event) -> std::io::Result<()> {
        self.file.write_all(encode(event).as_bytes())
    }
}

impl Journal for FileJournal {
    fn intent(&mut self, op: &Op) -> std::io::Result<()> {
        self.event(&Event::Intent(op.clone()))
    }

    fn acked(&mut self) -> std::io::Result<()> {
        self.event(&Event::Acked)
    }

    fn read(&mut self, keys: u32) -> std::io::Result<()> {
        self.event(&Event::Read(u64::from(keys)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        let events = [
            Event::Ready,
            Event::Intent(Op {
                kind: OpKind::Batch,
                writes: vec![
                    Write {
                        key: 5,
                        version: Some(123),
                    },
                    Write {
                        key: 6,
                        version: None,
                    },
                ],
            }),
            Event::Intent(Op {
                kind: OpKind::Flush,
                writes: vec![],
            }),
            Event::Acked,
            Event::Read(17),
            Event::Activity(Activity {
                flushes: 3,
                gc_resets: 2,
                ..Activity::default()
            }),
            Event::End,
            Event::OutOfSpace,
        ];
        for e in events {
            let line = encode(&e);
            assert_eq!(decode(line.trim_end_matches('\n')), Some(e), "{line}");
        }
        assert_eq!(decode("I X 1=2"), None);
        assert_eq!(decode("S nonsense=1"), None);
    }

    #[test]
    fn a_line_cut_by_the_kill_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "R\nI P 1=2\nA\nI D").unwrap();
        let events = read(&path).unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!(events[2], Event::Acked);
    }
}
