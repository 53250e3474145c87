//! Checking the file layer without writing: what the metadata recovery had to repair or
//! pass over, the zone table against the metadata (every extent within its zone's written
//! part, live bytes as the extents add up), and zones that hold file data but can no
//! longer be read or written.

use zkv_zns::ZoneState;

use super::mount::data_zone_report;
use super::{FsResult, ZoneFs};

/// One thing a file-layer check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsFinding {
    /// Data is lost or cannot be read (true), or nothing is lost (false: a copy was
    /// repaired from the other, leftovers a read-write mount cleans up).
    pub damage: bool,
    /// The zone it is about, if one.
    pub zone: Option<u32>,
    /// What was found, in words.
    pub what: String,
}

impl FsFinding {
    fn notice(zone: Option<u32>, what: String) -> FsFinding {
        FsFinding {
            damage: false,
            zone,
            what,
        }
    }

    fn damage(zone: Option<u32>, what: String) -> FsFinding {
        FsFinding {
            damage: true,
            zone,
            what,
        }
    }
}

impl ZoneFs {
    /// Checks the mounted file system (see the module documentation). The files' contents
    /// are not read: what they hold is for the layer above to verify.
    pub fn check(&self) -> FsResult<Vec<FsFinding>> {
        let mut found = self.mount_findings();
        if let Err(e) = self.check_consistency() {
            found.push(FsFinding::damage(None, e.to_string()));
        }
        found.extend(self.lost_zones()?);
        Ok(found)
    }

    /// What the metadata recovery repaired, passed over or dropped.
    fn mount_findings(&self) -> Vec<FsFinding> {
        let Some(m) = self.mount_report() else {
            return Vec::new();
        };
        let mut found: Vec<FsFinding> = m
            .repaired
            .iter()
            .map(|(offset, why)| {
                FsFinding::notice(
                    Some(m.zone),
                    format!(
                        "metadata at offset {offset}: {why}; read from the other copy (a \
                         read-write mount writes a clean generation)"
                    ),
                )
            })
            .collect();
        if let Some(offset) = m.torn_tail {
            found.push(FsFinding::notice(
                Some(m.zone),
                format!(
                    "the last metadata write, at offset {offset}, is incomplete in both \
                     copies: a write cut short by a crash (nothing it recorded was synced), \
                     or damage to both copies of the last batch; it was left out"
                ),
            ));
        }
        for (zone, why) in &m.skipped {
            found.push(FsFinding::notice(
                Some(*zone),
                format!("metadata zone passed over: {why}"),
            ));
        }
        found
    }

    /// Data zones holding file data that the device reports offline (unreadable) or
    /// read-only (readable, never written again).
    fn lost_zones(&self) -> FsResult<Vec<FsFinding>> {
        let sh = &self.shared;
        let report = data_zone_report(sh.dev.as_ref(), sh.layout.meta_zones)?;
        let meta = sh.lock_meta();
        let mut found = Vec::new();
        for info in report {
            let files = meta.state.zone_extents(info.zone).count();
            if files == 0 {
                continue;
            }
            match info.state {
                ZoneState::Offline => found.push(FsFinding::damage(
                    Some(info.zone),
                    format!("the zone is offline: the {files} extents it holds cannot be read"),
                )),
                ZoneState::ReadOnly => found.push(FsFinding::notice(
                    Some(info.zone),
                    format!(
                        "the zone is read-only: its {files} extents can be read, the zone \
                         is never written again"
                    ),
                )),
                _ => {}
            }
        }
        Ok(found)
    }
}
