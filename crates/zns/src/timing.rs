//! NAND timing model (interface; the model itself is being implemented).

use serde::Serialize;

use crate::types::{Geometry, IoCategory};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
    Reset,
    Finish,
}

/// One completed device command, as the timing model sees it.
#[derive(Clone, Copy, Debug)]
pub struct IoEvent {
    pub kind: IoKind,
    pub zone: u32,
    /// Offset within the zone.
    pub offset: u64,
    pub len: u64,
    pub cat: IoCategory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingPreset {
    Confzns,
    FemuTlc,
    Zn540,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TimingReport {
    pub busy_ns: u64,
}

#[derive(Debug)]
pub struct TimingModel {
    report: TimingReport,
}

impl TimingModel {
    pub fn new(_preset: TimingPreset, _geo: &Geometry) -> TimingModel {
        TimingModel {
            report: TimingReport::default(),
        }
    }

    pub fn on_io(&mut self, _io: &IoEvent) {}

    pub fn report(&self) -> TimingReport {
        self.report.clone()
    }
}
