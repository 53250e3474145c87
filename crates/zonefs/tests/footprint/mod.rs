//! What a device shows to a test that checks nothing wrote to it: the zone report and the
//! device's write, reset, finish and flush counters.

#![allow(dead_code)]

use zkv_zns::{ZoneInfo, ZonedDevice};

/// Everything a write, reset, finish or flush would change.
#[derive(Debug, PartialEq, Eq)]
pub struct Footprint {
    pub zones: Vec<ZoneInfo>,
    pub writes: u64,
    pub written: u64,
    pub resets: u64,
    pub finishes: u64,
    pub syncs: u64,
}

pub fn footprint(dev: &dyn ZonedDevice) -> Footprint {
    let s = dev.stats();
    Footprint {
        zones: dev
            .report_zones(0, dev.geometry().zones)
            .expect("zone report"),
        writes: s.writes,
        written: s.total_written(),
        resets: s.resets,
        finishes: s.finishes,
        syncs: s.syncs,
    }
}
