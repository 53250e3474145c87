//! Optional, deterministic NAND timing model.
//!
//! An emulated device answers at memory speed; attached to it (see
//! [`crate::emu::Emulated::with_timing`]), this model tells how long a NAND SSD with a given
//! internal layout would have taken, without slowing anything down unless asked to
//! ([`TimingModel::with_realtime`]). The full description, with the sources of every preset
//! number, is in `docs/TIMING.md`; the short version:
//!
//! **Layout.** The device has `channels × dies_per_channel` dies; die `d` sits on channel
//! `d % channels`. Zones are striped over a *group* of `dies_per_zone` dies: the dies are cut
//! into `groups = dies / dies_per_zone` consecutive groups and zone `z` uses group
//! `z % groups`, i.e. dies `g·w .. g·w + w` with `g = z % groups`, `w = dies_per_zone`
//! ([`NandParams::zone_dies`]). Within a zone, program unit `i` (bytes
//! `i·program_unit .. (i+1)·program_unit` of the zone) lives on the group's die `i % w`.
//!
//! **Operations.** A write of `N` bytes is cut into program units at their zone offsets,
//! issued round-robin over the zone's dies by unit index. A unit is programmed when the
//! zone's data covers it completely (or when the write reaches the zone capacity, or the zone
//! is finished); a partly filled unit waits in the device's write buffer. Programming a unit
//! occupies its channel for the transfer time (`program_unit / channel rate`), then its die
//! for the program time; the transfer of a die's next unit may overlap the die's current
//! program (one cache register per die). A read is cut into read units; each one occupies its
//! die for the read time, then its channel for the transfer of the bytes asked for. Bytes
//! that are still in the write buffer, or were never written, cost nothing to read. A reset
//! occupies every die of the zone's group for the erase time (a zone with nothing programmed
//! since its last erase costs nothing). A finish programs the buffered partial unit, if any,
//! and costs nothing else.
//!
//! **Resources.** Each die has a busy-until time and serves its operations in arrival order.
//! Channels keep a calendar of busy intervals, so that a transfer may use an idle gap between
//! transfers reserved earlier (channels are shared by dies that work at different paces).
//!
//! **Submission model.** The I/O categories form two *streams* ([`Stream`]): foreground
//! (user, WAL, flush) and background (compaction, cleaning copies, blob files, metadata, and
//! the zone commands reset and finish). Each stream has a virtual clock. A command is issued
//! at its stream's clock, waits for the dies and channels it needs, and the stream's clock
//! advances to its completion: for a read or a reset when the last byte is transferred or the
//! last die erased; for a write when its last unit has been handed to its die (the program
//! itself then finishes in the background, as on a drive with a write buffer). The two
//! streams therefore run concurrently and meet only on shared dies and channels.
//!
//! **Report** ([`TimingReport`]): modeled time (the latest completion anywhere), die busy
//! time per I/O category and per command kind (resets separate), and how long each stream's
//! commands waited: `wait` is the latency beyond what the same command takes on an idle
//! device, `interference` the latency beyond what it would take if the other stream did not
//! exist. The foreground writers' wait is the headline number.
//!
//! Everything is integer arithmetic on nanoseconds, driven only by the sequence of events:
//! the same events give the same report.

use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::types::{Geometry, IoCategory};

const KIB: u64 = 1024;
const NS_PER_SEC: u128 = 1_000_000_000;
/// Busy intervals each channel calendar remembers; older time counts as busy.
const CALENDAR_WINDOW: usize = 4096;
/// Upper bound on the number of dies, to reject absurd parameters before allocating.
const MAX_DIES: u64 = 1 << 16;

/// The kind of a device command, as the timing model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoKind {
    /// A read: page reads on the zone's dies.
    Read,
    /// A write or append: programs on the zone's dies.
    Write,
    /// A zone reset: erases of the zone's blocks.
    Reset,
    /// A zone finish: the program of a partial unit, padded.
    Finish,
}

/// One completed device command, as the timing model sees it.
#[derive(Clone, Copy, Debug)]
pub struct IoEvent {
    /// The command's kind.
    pub kind: IoKind,
    /// The zone it addressed.
    pub zone: u32,
    /// Offset within the zone.
    pub offset: u64,
    /// Bytes read or written (0 for a reset or finish).
    pub len: u64,
    /// What the I/O was for.
    pub cat: IoCategory,
}

/// Errors of the timing model's configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimingError {
    /// A preset name that is none of [`TimingPreset::NAMES`].
    #[error("unknown timing preset `{name}` (valid: {valid})", valid = TimingPreset::NAMES.join(", "))]
    UnknownPreset {
        /// The name given.
        name: String,
    },

    /// NAND parameters that break a rule of [`NandParams::validate`].
    #[error("invalid NAND timing parameters: {reason}")]
    InvalidParams {
        /// The rule broken.
        reason: String,
    },
}

/// A named set of NAND parameters. `None` means: no timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TimingPreset {
    /// No timing model.
    None,
    /// The ConfZNS emulator as the MSST'24 same-zone-compaction paper configures it.
    Confzns,
    /// FEMU's ZNS mode with TLC NAND and its default geometry.
    FemuTlc,
    /// A Western Digital Ultrastar DC ZN540-like drive.
    Zn540,
}

impl TimingPreset {
    /// Every preset, [`TimingPreset::None`] first.
    pub const ALL: [TimingPreset; 4] = [
        TimingPreset::None,
        TimingPreset::Confzns,
        TimingPreset::FemuTlc,
        TimingPreset::Zn540,
    ];

    /// The names accepted by [`FromStr`], in the order of [`TimingPreset::ALL`].
    pub const NAMES: [&'static str; 4] = ["none", "confzns", "femu-tlc", "zn540"];

    /// The preset's name, as `--timing` takes it.
    pub fn name(self) -> &'static str {
        match self {
            TimingPreset::None => "none",
            TimingPreset::Confzns => "confzns",
            TimingPreset::FemuTlc => "femu-tlc",
            TimingPreset::Zn540 => "zn540",
        }
    }

    /// The preset's NAND parameters; `None` for [`TimingPreset::None`].
    /// Where each number comes from is documented in `docs/TIMING.md`.
    pub fn params(self) -> Option<NandParams> {
        match self {
            TimingPreset::None => None,
            // ConfZNS as the MSST'24 paper sets it up: 8 channels × 2 dies, 16 KiB pages,
            // read 65 µs, program 450 µs, erase 2 ms; zones 8 dies wide. Channel: 1200 MT/s
            // on an 8-bit bus, the interface ConfZNS's NAND header names.
            TimingPreset::Confzns => Some(NandParams {
                channels: 8,
                dies_per_channel: 2,
                dies_per_zone: 8,
                read_unit: 16 * KIB,
                program_unit: 16 * KIB,
                read_ns: 65_000,
                program_ns: 450_000,
                erase_ns: 2_000_000,
                channel_bytes_per_sec: 1_200_000_000,
            }),
            // FEMU ZNS mode, TLC: 16 KiB pages, a program unit of 16 KiB × 3 bits × 2 planes
            // programmed in 937.5 µs, page read 32 µs, block erase 3 ms; FEMU's default
            // geometry of 2 channels × 4 LUNs with every zone on all of them. FEMU's ZNS mode
            // charges no channel time; 800 MT/s (8-bit) is assumed.
            TimingPreset::FemuTlc => Some(NandParams {
                channels: 2,
                dies_per_channel: 4,
                dies_per_zone: 8,
                read_unit: 16 * KIB,
                program_unit: 96 * KIB,
                read_ns: 32_000,
                program_ns: 937_500,
                erase_ns: 3_000_000,
                channel_bytes_per_sec: 800_000_000,
            }),
            // ZN540-like: 8 channels × 4 dies, every zone on all 32, 32 KiB pages, read 58 µs,
            // program 561 µs. Not published by the vendor, and assumed: erase 3 ms (the TLC
            // block erase FEMU uses) and an 800 MT/s 8-bit channel.
            TimingPreset::Zn540 => Some(NandParams {
                channels: 8,
                dies_per_channel: 4,
                dies_per_zone: 32,
                read_unit: 32 * KIB,
                program_unit: 32 * KIB,
                read_ns: 58_000,
                program_ns: 561_000,
                erase_ns: 3_000_000,
                channel_bytes_per_sec: 800_000_000,
            }),
        }
    }

    /// A model for this preset, or `None` for [`TimingPreset::None`].
    pub fn model(self, geo: &Geometry) -> Option<TimingModel> {
        match self {
            TimingPreset::None => None,
            preset => Some(TimingModel::new(preset, geo)),
        }
    }
}

impl fmt::Display for TimingPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TimingPreset {
    type Err = TimingError;

    fn from_str(s: &str) -> Result<TimingPreset, TimingError> {
        let wanted = s.trim();
        TimingPreset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| TimingError::UnknownPreset {
                name: s.to_string(),
            })
    }
}

/// The NAND layout and latencies the model works with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NandParams {
    /// Channels between the controller and the dies.
    pub channels: u32,
    /// Dies on each channel.
    pub dies_per_channel: u32,
    /// Width of a zone: how many dies its data is striped over. Divides the number of dies.
    pub dies_per_zone: u32,
    /// Bytes one page read senses on one die.
    pub read_unit: u64,
    /// Bytes one program operation writes on one die (page size × bits per cell × planes
    /// when the NAND programs them together); also the striping unit of a zone over its dies.
    /// A multiple of `read_unit`.
    pub program_unit: u64,
    /// Die time of one page read.
    pub read_ns: u64,
    /// Die time of one program operation (one program unit).
    pub program_ns: u64,
    /// Die time of erasing a zone's blocks on one die.
    pub erase_ns: u64,
    /// Transfer rate of one channel between controller and dies.
    pub channel_bytes_per_sec: u64,
}

impl NandParams {
    /// Checks the rules the model relies on; the message names the rule broken.
    pub fn validate(&self) -> Result<(), TimingError> {
        let bad = |reason: String| Err(TimingError::InvalidParams { reason });
        if self.channels == 0 || self.dies_per_channel == 0 || self.dies_per_zone == 0 {
            return bad("channels, dies per channel and dies per zone must be at least 1".into());
        }
        let dies = u64::from(self.channels) * u64::from(self.dies_per_channel);
        if dies > MAX_DIES {
            return bad(format!(
                "{dies} dies is more than the model supports ({MAX_DIES})"
            ));
        }
        if !dies.is_multiple_of(u64::from(self.dies_per_zone)) {
            return bad(format!(
                "dies per zone {} does not divide the {dies} dies",
                self.dies_per_zone
            ));
        }
        if self.read_unit == 0 || self.program_unit == 0 {
            return bad("read and program units must be at least one byte".into());
        }
        if !self.program_unit.is_multiple_of(self.read_unit) {
            return bad(format!(
                "program unit {} is not a multiple of the read unit {}",
                self.program_unit, self.read_unit
            ));
        }
        if self.channel_bytes_per_sec == 0 {
            return bad("the channel transfer rate must be positive".into());
        }
        Ok(())
    }

    /// Total number of dies.
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    /// Number of disjoint die groups zones are spread over.
    pub fn groups(&self) -> u32 {
        self.dies() / self.dies_per_zone
    }

    /// The dies zone `zone` is striped over: group `zone % groups`.
    pub fn zone_dies(&self, zone: u32) -> Range<u32> {
        let g = zone % self.groups();
        g * self.dies_per_zone..(g + 1) * self.dies_per_zone
    }

    /// The channel a die is attached to.
    pub fn die_channel(&self, die: u32) -> u32 {
        die % self.channels
    }

    /// Time to move `bytes` over one channel (rounded up to the nanosecond).
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        let ns = (u128::from(bytes) * NS_PER_SEC).div_ceil(u128::from(self.channel_bytes_per_sec));
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Bytes per second one zone absorbs when written sequentially with all its dies busy
    /// programming (the bandwidth arithmetic of the layout).
    pub fn zone_write_bytes_per_sec(&self) -> f64 {
        (self.program_unit * u64::from(self.dies_per_zone)) as f64 * 1e9 / self.program_ns as f64
    }
}

/// The two submission streams of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// User, WAL and flush I/O: what a writer waits for.
    Foreground,
    /// Compaction, cleaning copies, blob files, metadata, and the zone commands (reset,
    /// finish).
    Background,
}

impl Stream {
    /// The stream a read or write of category `cat` is issued on.
    pub fn of(cat: IoCategory) -> Stream {
        match cat {
            IoCategory::User | IoCategory::Wal | IoCategory::Flush => Stream::Foreground,
            IoCategory::Compaction
            | IoCategory::GcCopy
            | IoCategory::Metadata
            | IoCategory::Blob => Stream::Background,
        }
    }
}

/// One value per stream.
#[derive(Clone, Copy, Debug, Default)]
struct PerStream<T> {
    fg: T,
    bg: T,
}

impl<T> PerStream<T> {
    fn get(&self, stream: Stream) -> &T {
        match stream {
            Stream::Foreground => &self.fg,
            Stream::Background => &self.bg,
        }
    }

    fn get_mut(&mut self, stream: Stream) -> &mut T {
        match stream {
            Stream::Foreground => &mut self.fg,
            Stream::Background => &mut self.bg,
        }
    }
}

/// Modeled time of one I/O category. Die times are summed over dies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CategoryTime {
    /// Reads and writes of this category.
    pub ios: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// Die time (read + program) spent on this category's data.
    pub busy_ns: u64,
    /// The part of `busy_ns` spent on page reads.
    pub read_busy_ns: u64,
    /// Includes the program of a partial unit padded by a finish (charged to the category
    /// that wrote the zone last).
    pub program_busy_ns: u64,
    /// Sum of the commands' latencies (issue to completion).
    pub latency_ns: u64,
    /// Sum of the latency beyond what each command takes on an idle device.
    pub wait_ns: u64,
    /// Sum of the latency caused by the other stream.
    pub interference_ns: u64,
}

/// [`CategoryTime`] for every [`IoCategory`], named as in JSON reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CategoryTimes {
    /// [`IoCategory::User`].
    pub user: CategoryTime,
    /// [`IoCategory::Wal`].
    pub wal: CategoryTime,
    /// [`IoCategory::Flush`].
    pub flush: CategoryTime,
    /// [`IoCategory::Compaction`].
    pub compaction: CategoryTime,
    /// [`IoCategory::GcCopy`].
    pub gc_copy: CategoryTime,
    /// [`IoCategory::Metadata`].
    pub metadata: CategoryTime,
    /// [`IoCategory::Blob`].
    pub blob: CategoryTime,
}

impl CategoryTimes {
    /// The time of category `cat`.
    pub fn get(&self, cat: IoCategory) -> &CategoryTime {
        match cat {
            IoCategory::User => &self.user,
            IoCategory::Wal => &self.wal,
            IoCategory::Flush => &self.flush,
            IoCategory::Compaction => &self.compaction,
            IoCategory::GcCopy => &self.gc_copy,
            IoCategory::Metadata => &self.metadata,
            IoCategory::Blob => &self.blob,
        }
    }

    fn get_mut(&mut self, cat: IoCategory) -> &mut CategoryTime {
        match cat {
            IoCategory::User => &mut self.user,
            IoCategory::Wal => &mut self.wal,
            IoCategory::Flush => &mut self.flush,
            IoCategory::Compaction => &mut self.compaction,
            IoCategory::GcCopy => &mut self.gc_copy,
            IoCategory::Metadata => &mut self.metadata,
            IoCategory::Blob => &mut self.blob,
        }
    }
}

/// Die time per command kind (summed over dies), and channel time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindTimes {
    /// Page reads.
    pub read_ns: u64,
    /// Programs caused by writes.
    pub write_ns: u64,
    /// Erases caused by zone resets.
    pub reset_ns: u64,
    /// Programs of partial units padded by zone finishes.
    pub finish_ns: u64,
    /// Channel time of all transfers (not included in `busy_ns`).
    pub transfer_ns: u64,
}

/// What the timing model measured. Field names are the JSON names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimingReport {
    /// Preset name (`confzns`, `femu-tlc`, `zn540`), `custom`, or `none`.
    pub preset: String,
    /// The parameters used (absent without a model).
    pub params: Option<NandParams>,
    /// Modeled time: the latest completion of any command, including programs still
    /// running after their write was acknowledged.
    pub elapsed_ns: u64,
    /// Die busy time summed over all dies: reads, programs and erases.
    pub busy_ns: u64,
    /// Die and channel time by command kind.
    pub by_kind: KindTimes,
    /// Time by I/O category.
    pub by_category: CategoryTimes,
    /// Time foreground writes (user, WAL, flush) waited for the device: their latency beyond
    /// what each takes on an idle device.
    pub fg_write_wait_ns: u64,
    /// The same for every foreground command (reads included).
    pub fg_wait_ns: u64,
    /// Latency of foreground commands caused by background commands.
    pub fg_interference_ns: u64,
    /// Latency of background commands beyond their idle-device latency.
    pub bg_wait_ns: u64,
    /// Latency of background commands caused by foreground commands.
    pub bg_interference_ns: u64,
    /// Final clock of the foreground stream.
    pub foreground_clock_ns: u64,
    /// Final clock of the background stream.
    pub background_clock_ns: u64,
    /// Page reads (read units).
    pub pages_read: u64,
    /// Program operations (program units).
    pub pages_programmed: u64,
    /// Die erases (a reset erases every die of the zone's group).
    pub die_erases: u64,
    /// Reset commands, including those that found nothing to erase.
    pub resets: u64,
    /// Finish commands.
    pub finishes: u64,
}

impl TimingReport {
    /// Fraction of the dies' time spent busy: `busy / (dies × elapsed)`.
    pub fn utilization(&self) -> f64 {
        match self.params {
            Some(p) if self.elapsed_ns > 0 => {
                self.busy_ns as f64 / (f64::from(p.dies()) * self.elapsed_ns as f64)
            }
            _ => 0.0,
        }
    }
}

/// The NAND timing model: feed it every completed command with [`TimingModel::on_io`].
#[derive(Debug)]
pub struct TimingModel {
    label: &'static str,
    realtime: bool,
    engine: Option<Box<Engine>>,
}

impl TimingModel {
    /// A model with a preset's parameters; [`TimingPreset::None`] gives a model that costs
    /// nothing and reports zeros (prefer [`TimingPreset::model`], which gives no model).
    pub fn new(preset: TimingPreset, geo: &Geometry) -> TimingModel {
        let engine = preset.params().map(|p| Box::new(Engine::new(p, geo)));
        TimingModel {
            label: preset.name(),
            realtime: false,
            engine,
        }
    }

    /// A model with custom parameters (reported as preset `custom`).
    pub fn with_params(params: NandParams, geo: &Geometry) -> Result<TimingModel, TimingError> {
        params.validate()?;
        Ok(TimingModel {
            label: "custom",
            realtime: false,
            engine: Some(Box::new(Engine::new(params, geo))),
        })
    }

    /// When set, the emulator sleeps for each command's modeled latency (after releasing its
    /// locks), so that wall-clock time follows the model. Off by default.
    pub fn with_realtime(mut self, realtime: bool) -> TimingModel {
        self.realtime = realtime;
        self
    }

    /// Whether the emulator sleeps for the modeled latencies ([`TimingModel::with_realtime`]).
    pub fn realtime(&self) -> bool {
        self.realtime
    }

    /// The preset name, `custom`, or `none`.
    pub fn preset_name(&self) -> &'static str {
        self.label
    }

    /// The NAND parameters; `None` for a model of [`TimingPreset::None`].
    pub fn params(&self) -> Option<NandParams> {
        self.engine.as_ref().map(|e| e.plan.params)
    }

    /// Tells the model that `zone` already holds `written` bytes on NAND (a device opened
    /// with data). Reads of them then cost page reads, and a reset costs an erase.
    pub fn note_zone_written(&mut self, zone: u32, written: u64) {
        if let Some(e) = self.engine.as_mut() {
            e.note_zone_written(zone, written);
        }
    }

    /// Accounts one command and returns its modeled latency in nanoseconds: from its issue at
    /// its stream's clock to its completion.
    pub fn on_io(&mut self, io: &IoEvent) -> u64 {
        match self.engine.as_mut() {
            Some(e) => e.on_io(io),
            None => 0,
        }
    }

    /// A stream's virtual clock.
    pub fn clock(&self, stream: Stream) -> u64 {
        self.engine.as_ref().map_or(0, |e| *e.clocks.get(stream))
    }

    /// What the model measured so far (zeros without parameters).
    pub fn report(&self) -> TimingReport {
        match self.engine.as_ref() {
            Some(e) => e.report(self.label),
            None => TimingReport {
                preset: self.label.to_string(),
                ..TimingReport::default()
            },
        }
    }
}

/// A channel's busy intervals, sorted and disjoint, with at most [`CALENDAR_WINDOW`] kept;
/// time before `floor` counts as busy.
#[derive(Clone, Debug, Default)]
struct Calendar {
    busy: VecDeque<(u64, u64)>,
    floor: u64,
}

impl Calendar {
    /// Reserves `len` ns at the earliest time ≥ `t` that is free; returns its start.
    fn reserve(&mut self, t: u64, len: u64) -> u64 {
        let mut start = t.max(self.floor);
        if len == 0 {
            return start;
        }
        let mut i = self.busy.partition_point(|&(_, end)| end <= start);
        while let Some(&(s, e)) = self.busy.get(i) {
            if start + len <= s {
                break;
            }
            start = start.max(e);
            i += 1;
        }
        // The new interval takes in the neighbours it touches.
        let mut end = start + len;
        if self.busy.get(i).is_some_and(|&(s, _)| s == end) {
            end = self.busy.remove(i).map_or(end, |(_, e)| e);
        }
        match i.checked_sub(1).and_then(|p| self.busy.get_mut(p)) {
            Some(prev) if prev.1 == start => prev.1 = end,
            _ => self.busy.insert(i, (start, end)),
        }
        while self.busy.len() > CALENDAR_WINDOW {
            if let Some((_, e)) = self.busy.pop_front() {
                self.floor = self.floor.max(e);
            }
        }
        start
    }

    fn last_end(&self) -> u64 {
        self.busy.back().map_or(self.floor, |&(_, e)| e)
    }

    fn clear(&mut self) {
        self.busy.clear();
        self.floor = 0;
    }
}

/// Die and channel state.
#[derive(Clone, Debug)]
struct Resources {
    /// When each die finishes the operations queued on it.
    die_free: Vec<u64>,
    /// When each die's cache register is free for the next unit to program (the start of its
    /// latest program).
    reg_free: Vec<u64>,
    channels: Vec<Calendar>,
}

impl Resources {
    fn new(dies: usize, channels: usize) -> Resources {
        Resources {
            die_free: vec![0; dies],
            reg_free: vec![0; dies],
            channels: vec![Calendar::default(); channels],
        }
    }

    fn clear(&mut self) {
        self.die_free.fill(0);
        self.reg_free.fill(0);
        self.channels.iter_mut().for_each(Calendar::clear);
    }

    /// The latest time any die or channel is busy until.
    fn horizon(&self) -> u64 {
        let dies = self.die_free.iter().copied().max().unwrap_or(0);
        let chans = self
            .channels
            .iter()
            .map(Calendar::last_end)
            .max()
            .unwrap_or(0);
        dies.max(chans)
    }
}

#[derive(Clone, Copy, Debug)]
enum OpKind {
    Program,
    /// A page read whose transfer takes `xfer_ns`.
    Read {
        xfer_ns: u64,
    },
    Erase,
}

#[derive(Clone, Copy, Debug)]
struct PageOp {
    die: usize,
    kind: OpKind,
}

/// Per-operation costs, precomputed.
#[derive(Clone, Copy, Debug)]
struct Costs {
    channels: usize,
    read_ns: u64,
    program_ns: u64,
    erase_ns: u64,
    program_xfer_ns: u64,
}

/// Where a zone's bytes go.
#[derive(Clone, Copy, Debug)]
struct Layout {
    width: u64,
    groups: u64,
    program_unit: u64,
    read_unit: u64,
}

impl Layout {
    /// The die holding byte `offset` of zone `zone`.
    fn die(&self, zone: usize, offset: u64) -> usize {
        self.group_die(zone, (offset / self.program_unit) % self.width)
    }

    /// The `i`-th die of zone `zone`'s group.
    fn group_die(&self, zone: usize, i: u64) -> usize {
        let group = zone as u64 % self.groups;
        (group * self.width + i) as usize
    }
}

/// What the model knows of a zone.
#[derive(Clone, Copy, Debug)]
struct ZoneTrack {
    /// Bytes written since the last reset (the write pointer as the model saw it).
    written: u64,
    /// Bytes on NAND; `written - programmed` wait in the write buffer.
    programmed: u64,
    /// Something was programmed since the last erase.
    erase_needed: bool,
    /// Category of the last write, charged for the padding program of a finish.
    last_cat: IoCategory,
}

impl Default for ZoneTrack {
    fn default() -> ZoneTrack {
        ZoneTrack {
            written: 0,
            programmed: 0,
            erase_needed: false,
            last_cat: IoCategory::User,
        }
    }
}

/// Schedules `ops`, issued at `issue`, on `res`; returns the completion: the latest program
/// start (a write is acknowledged once its data is handed to the dies), transfer end (reads)
/// or erase end.
// Every op names a die of its [`Layout`] (`group × width + i` < `groups × width` = dies) and
// `die % channels` < channels: `res` has one entry per die and per channel of those params.
#[allow(clippy::indexing_slicing)]
fn schedule(c: &Costs, ops: &[PageOp], issue: u64, res: &mut Resources) -> u64 {
    let mut done = issue;
    for op in ops {
        let die = op.die;
        let ch = die % c.channels;
        match op.kind {
            OpKind::Program => {
                let ready = issue.max(res.reg_free[die]);
                let xfer_end =
                    res.channels[ch].reserve(ready, c.program_xfer_ns) + c.program_xfer_ns;
                let start = xfer_end.max(res.die_free[die]);
                res.reg_free[die] = start;
                res.die_free[die] = start + c.program_ns;
                done = done.max(start);
            }
            OpKind::Read { xfer_ns } => {
                let sensed = issue.max(res.die_free[die]) + c.read_ns;
                res.die_free[die] = sensed;
                let xfer_end = res.channels[ch].reserve(sensed, xfer_ns) + xfer_ns;
                done = done.max(xfer_end);
            }
            OpKind::Erase => {
                let end = issue.max(res.die_free[die]) + c.erase_ns;
                res.die_free[die] = end;
                done = done.max(end);
            }
        }
    }
    done
}

/// Turns a command on a zone into the page operations it costs.
#[derive(Debug)]
struct Planner {
    params: NandParams,
    layout: Layout,
    zone_capacity: u64,
    /// The operations of the command being planned.
    ops: Vec<PageOp>,
}

impl Planner {
    /// Program every unit the zone's data now covers completely (all of it at capacity).
    fn write(&mut self, t: &mut ZoneTrack, z: usize, offset: u64, len: u64, cat: IoCategory) {
        let layout = self.layout;
        let pu = layout.program_unit;
        let capacity = self.zone_capacity;
        if offset != t.written {
            // Writes the model did not see (or a power cut that dropped some): assume what
            // precedes the current unit is on NAND.
            t.written = offset;
            t.programmed = offset - offset % pu;
        }
        let end = offset.saturating_add(len);
        let target = if end >= capacity { end } else { end - end % pu };
        let mut unit = t.programmed;
        while unit < target {
            self.ops.push(PageOp {
                die: layout.die(z, unit),
                kind: OpKind::Program,
            });
            unit += pu;
        }
        if target > t.programmed {
            t.programmed = target;
            t.erase_needed = true;
        }
        t.written = end;
        t.last_cat = cat;
    }

    /// Read the units holding `offset .. offset + len` that are on NAND.
    fn read(&mut self, t: &ZoneTrack, z: usize, offset: u64, len: u64) {
        let layout = self.layout;
        let ru = layout.read_unit;
        let end = offset.saturating_add(len).min(t.programmed);
        let mut unit = offset - offset % ru;
        while unit < end {
            let bytes = (unit + ru).min(end) - unit.max(offset);
            self.ops.push(PageOp {
                die: layout.die(z, unit),
                kind: OpKind::Read {
                    xfer_ns: self.params.transfer_ns(bytes),
                },
            });
            unit += ru;
        }
    }

    fn reset(&mut self, t: &mut ZoneTrack, z: usize) {
        let layout = self.layout;
        if t.erase_needed {
            for i in 0..layout.width {
                self.ops.push(PageOp {
                    die: layout.group_die(z, i),
                    kind: OpKind::Erase,
                });
            }
        }
        *t = ZoneTrack::default();
    }

    fn finish(&mut self, t: &mut ZoneTrack, z: usize) {
        let layout = self.layout;
        if t.written > t.programmed {
            self.ops.push(PageOp {
                die: layout.die(z, t.programmed),
                kind: OpKind::Program,
            });
            t.programmed = t.written;
            t.erase_needed = true;
        }
    }
}

/// The model proper (absent for preset `none`).
#[derive(Debug)]
struct Engine {
    costs: Costs,
    plan: Planner,
    zones: Vec<ZoneTrack>,
    /// The device as both streams use it.
    real: Resources,
    /// The device as each stream alone would have used it (for interference).
    alone: PerStream<Resources>,
    /// An idle device, for the service time of one command.
    idle: Resources,
    clocks: PerStream<u64>,
    by_kind: KindTimes,
    by_category: CategoryTimes,
    wait: PerStream<u64>,
    interference: PerStream<u64>,
    fg_write_wait: u64,
    pages_read: u64,
    pages_programmed: u64,
    die_erases: u64,
    resets: u64,
    finishes: u64,
}

impl Engine {
    fn new(params: NandParams, geo: &Geometry) -> Engine {
        let dies = params.dies() as usize;
        let channels = params.channels as usize;
        let res = Resources::new(dies, channels);
        Engine {
            costs: Costs {
                channels,
                read_ns: params.read_ns,
                program_ns: params.program_ns,
                erase_ns: params.erase_ns,
                program_xfer_ns: params.transfer_ns(params.program_unit),
            },
            plan: Planner {
                params,
                layout: Layout {
                    width: u64::from(params.dies_per_zone),
                    groups: u64::from(params.groups()),
                    program_unit: params.program_unit,
                    read_unit: params.read_unit,
                },
                zone_capacity: geo.zone_capacity,
                ops: Vec::new(),
            },
            zones: vec![ZoneTrack::default(); geo.zones as usize],
            alone: PerStream {
                fg: res.clone(),
                bg: res.clone(),
            },
            idle: res.clone(),
            real: res,
            clocks: PerStream::default(),
            by_kind: KindTimes::default(),
            by_category: CategoryTimes::default(),
            wait: PerStream::default(),
            interference: PerStream::default(),
            fg_write_wait: 0,
            pages_read: 0,
            pages_programmed: 0,
            die_erases: 0,
            resets: 0,
            finishes: 0,
        }
    }

    fn note_zone_written(&mut self, zone: u32, written: u64) {
        if let Some(t) = self.zones.get_mut(zone as usize) {
            *t = ZoneTrack {
                written,
                programmed: written,
                erase_needed: written > 0,
                last_cat: IoCategory::User,
            };
        }
    }

    fn on_io(&mut self, io: &IoEvent) -> u64 {
        let z = io.zone as usize;
        let Some(t) = self.zones.get_mut(z) else {
            return 0;
        };
        let plan = &mut self.plan;
        plan.ops.clear();
        let (stream, cat) = match io.kind {
            IoKind::Read => {
                plan.read(t, z, io.offset, io.len);
                (Stream::of(io.cat), io.cat)
            }
            IoKind::Write => {
                plan.write(t, z, io.offset, io.len, io.cat);
                (Stream::of(io.cat), io.cat)
            }
            IoKind::Reset => {
                plan.reset(t, z);
                (Stream::Background, io.cat)
            }
            IoKind::Finish => {
                let cat = t.last_cat;
                plan.finish(t, z);
                (Stream::Background, cat)
            }
        };
        let ops = &self.plan.ops;
        let issue = *self.clocks.get(stream);
        let (done, alone, idle) = if ops.is_empty() {
            (issue, issue, issue)
        } else {
            let done = schedule(&self.costs, ops, issue, &mut self.real);
            let alone = schedule(&self.costs, ops, issue, self.alone.get_mut(stream));
            self.idle.clear();
            let idle = schedule(&self.costs, ops, issue, &mut self.idle);
            (done, alone, idle)
        };
        *self.clocks.get_mut(stream) = done;
        let latency = done - issue;
        let wait = done.saturating_sub(idle);
        let interference = done.saturating_sub(alone);
        self.account(io, stream, cat, latency, wait, interference);
        latency
    }

    fn account(
        &mut self,
        io: &IoEvent,
        stream: Stream,
        cat: IoCategory,
        latency: u64,
        wait: u64,
        interference: u64,
    ) {
        let (mut reads, mut programs, mut erases, mut xfer) = (0u64, 0u64, 0u64, 0u64);
        for op in &self.plan.ops {
            match op.kind {
                OpKind::Program => {
                    programs += 1;
                    xfer += self.costs.program_xfer_ns;
                }
                OpKind::Read { xfer_ns } => {
                    reads += 1;
                    xfer += xfer_ns;
                }
                OpKind::Erase => erases += 1,
            }
        }
        let read_ns = reads * self.costs.read_ns;
        let program_ns = programs * self.costs.program_ns;
        let erase_ns = erases * self.costs.erase_ns;
        self.pages_read += reads;
        self.pages_programmed += programs;
        self.die_erases += erases;
        self.by_kind.transfer_ns += xfer;

        *self.wait.get_mut(stream) += wait;
        *self.interference.get_mut(stream) += interference;
        if stream == Stream::Foreground && io.kind == IoKind::Write {
            self.fg_write_wait += wait;
        }

        match io.kind {
            IoKind::Read | IoKind::Write => {
                if io.kind == IoKind::Read {
                    self.by_kind.read_ns += read_ns;
                } else {
                    self.by_kind.write_ns += program_ns;
                }
                let c = self.by_category.get_mut(cat);
                c.ios += 1;
                c.bytes += io.len;
                c.read_busy_ns += read_ns;
                c.program_busy_ns += program_ns;
                c.busy_ns += read_ns + program_ns;
                c.latency_ns += latency;
                c.wait_ns += wait;
                c.interference_ns += interference;
            }
            IoKind::Reset => {
                self.by_kind.reset_ns += erase_ns;
                self.resets += 1;
            }
            IoKind::Finish => {
                self.by_kind.finish_ns += program_ns;
                self.finishes += 1;
                let c = self.by_category.get_mut(cat);
                c.program_busy_ns += program_ns;
                c.busy_ns += program_ns;
            }
        }
    }

    fn report(&self, label: &str) -> TimingReport {
        let k = &self.by_kind;
        TimingReport {
            preset: label.to_string(),
            params: Some(self.plan.params),
            elapsed_ns: self.clocks.fg.max(self.clocks.bg).max(self.real.horizon()),
            busy_ns: k.read_ns + k.write_ns + k.reset_ns + k.finish_ns,
            by_kind: *k,
            by_category: self.by_category,
            fg_write_wait_ns: self.fg_write_wait,
            fg_wait_ns: self.wait.fg,
            fg_interference_ns: self.interference.fg,
            bg_wait_ns: self.wait.bg,
            bg_interference_ns: self.interference.bg,
            foreground_clock_ns: self.clocks.fg,
            background_clock_ns: self.clocks.bg,
            pages_read: self.pages_read,
            pages_programmed: self.pages_programmed,
            die_erases: self.die_erases,
            resets: self.resets,
            finishes: self.finishes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn ev(kind: IoKind, zone: u32, offset: u64, len: u64, cat: IoCategory) -> IoEvent {
        IoEvent {
            kind,
            zone,
            offset,
            len,
            cat,
        }
    }

    fn write(m: &mut TimingModel, zone: u32, offset: u64, len: u64, cat: IoCategory) -> u64 {
        m.on_io(&ev(IoKind::Write, zone, offset, len, cat))
    }

    fn read(m: &mut TimingModel, zone: u32, offset: u64, len: u64, cat: IoCategory) -> u64 {
        m.on_io(&ev(IoKind::Read, zone, offset, len, cat))
    }

    fn reset(m: &mut TimingModel, zone: u32) -> u64 {
        m.on_io(&ev(IoKind::Reset, zone, 0, 0, IoCategory::User))
    }

    fn params(preset: TimingPreset) -> NandParams {
        preset.params().expect("preset has parameters")
    }

    /// 64 MiB zones whose capacity is a whole number of program rounds over the zone's dies.
    fn round_geometry(p: &NandParams, zones: u32) -> Geometry {
        let round = p.program_unit * u64::from(p.dies_per_zone);
        Geometry::new(zones, 64 * MIB).with_capacity(64 * MIB / round * round)
    }

    #[test]
    fn preset_names_parse_and_print() {
        for p in TimingPreset::ALL {
            assert_eq!(p.name().parse::<TimingPreset>(), Ok(p));
            assert_eq!(p.to_string(), p.name());
        }
        assert_eq!("ZN540".parse::<TimingPreset>(), Ok(TimingPreset::Zn540));
        let err = "tlc".parse::<TimingPreset>().unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`tlc`"), "{msg}");
        for name in TimingPreset::NAMES {
            assert!(msg.contains(name), "{msg} lacks {name}");
        }
    }

    #[test]
    fn presets_are_valid() {
        assert!(TimingPreset::None.params().is_none());
        let geo = Geometry::new(4, 64 * MIB);
        assert!(TimingPreset::None.model(&geo).is_none());
        for preset in [
            TimingPreset::Confzns,
            TimingPreset::FemuTlc,
            TimingPreset::Zn540,
        ] {
            let p = params(preset);
            assert_eq!(p.validate(), Ok(()), "{preset}");
            let m = preset.model(&geo).expect("a model");
            assert_eq!(m.preset_name(), preset.name());
            assert_eq!(m.report().preset, preset.name());
        }
        let zn = params(TimingPreset::Zn540);
        assert_eq!((zn.dies(), zn.groups()), (32, 1));
        let cz = params(TimingPreset::Confzns);
        assert_eq!((cz.dies(), cz.groups()), (16, 2));
        assert_eq!(cz.zone_dies(0), 0..8);
        assert_eq!(cz.zone_dies(1), 8..16);
        assert_eq!(cz.zone_dies(2), 0..8);
        let bad = NandParams {
            dies_per_zone: 3,
            ..cz
        };
        assert!(TimingModel::with_params(bad, &geo).is_err());
    }

    #[test]
    fn no_model_costs_nothing() {
        let geo = Geometry::new(4, 64 * MIB);
        let mut m = TimingModel::new(TimingPreset::None, &geo);
        assert_eq!(write(&mut m, 0, 0, MIB, IoCategory::Wal), 0);
        assert_eq!(reset(&mut m, 0), 0);
        let r = m.report();
        assert_eq!(r.preset, "none");
        assert_eq!(r.elapsed_ns, 0);
        assert!(r.params.is_none());
    }

    #[test]
    fn sequential_gib_matches_bandwidth_arithmetic() {
        let total = 1024 * MIB;
        for preset in [
            TimingPreset::Confzns,
            TimingPreset::FemuTlc,
            TimingPreset::Zn540,
        ] {
            let p = params(preset);
            let geo = round_geometry(&p, 20);
            let mut m = TimingModel::new(preset, &geo);
            let (mut zone, mut off, mut left) = (0u32, 0u64, total);
            while left > 0 {
                let n = MIB.min(left).min(geo.zone_capacity - off);
                write(&mut m, zone, off, n, IoCategory::Flush);
                off += n;
                left -= n;
                if off == geo.zone_capacity {
                    zone += 1;
                    off = 0;
                }
            }
            let r = m.report();
            // Bytes / (bytes one round of programs over the zone's dies) × program time.
            let round = (p.program_unit * u64::from(p.dies_per_zone)) as f64;
            let expected = total as f64 / round * p.program_ns as f64;
            let err = (r.elapsed_ns as f64 - expected).abs() / expected;
            assert!(
                err < 0.01,
                "{preset}: modeled {} ns, expected {expected:.0} ns ({:.2}% off)",
                r.elapsed_ns,
                err * 100.0
            );
            let bw = total as f64 * 1e9 / r.elapsed_ns as f64;
            assert!((bw / p.zone_write_bytes_per_sec() - 1.0).abs() < 0.01);
            assert_eq!(r.busy_ns, r.pages_programmed * p.program_ns);
            assert_eq!(r.by_category.flush.program_busy_ns, r.busy_ns);
            assert_eq!(r.by_category.flush.bytes, total);
            assert_eq!(r.pages_programmed, total / p.program_unit);
            assert_eq!(
                r.by_kind.transfer_ns,
                r.pages_programmed * p.transfer_ns(p.program_unit)
            );
        }
    }

    #[test]
    fn reads_on_distinct_dies_run_in_parallel() {
        let p = params(TimingPreset::Confzns);
        let geo = Geometry::new(4, 64 * MIB);
        let page = p.read_unit;
        let w = u64::from(p.dies_per_zone);
        let cat = IoCategory::Compaction;

        let mut m = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut m, 0, 0, w * page, cat);
        read(&mut m, 0, 0, w * page, cat); // waits for the programs to finish
        let one_page = p.read_ns + p.transfer_ns(page);
        for k in 1..=w {
            assert_eq!(read(&mut m, 0, 0, k * page, cat), one_page, "{k} pages");
        }

        // The same pages on a single die: the reads queue on it.
        let narrow = NandParams {
            dies_per_zone: 1,
            ..p
        };
        let mut m = TimingModel::with_params(narrow, &geo).expect("valid parameters");
        write(&mut m, 0, 0, w * page, cat);
        read(&mut m, 0, 0, w * page, cat);
        assert_eq!(
            read(&mut m, 0, 0, w * page, cat),
            w * p.read_ns + p.transfer_ns(page)
        );
        assert_eq!(read(&mut m, 0, 0, page, cat), one_page);
    }

    #[test]
    fn unprogrammed_bytes_cost_nothing_to_read() {
        let p = params(TimingPreset::Zn540);
        let geo = Geometry::new(4, 64 * MIB);
        let mut m = TimingModel::new(TimingPreset::Zn540, &geo);
        // Never written.
        assert_eq!(read(&mut m, 1, 0, MIB, IoCategory::User), 0);
        // Half a unit: still in the write buffer.
        assert_eq!(write(&mut m, 0, 0, p.program_unit / 2, IoCategory::Wal), 0);
        assert_eq!(read(&mut m, 0, 0, p.program_unit / 2, IoCategory::User), 0);
        assert_eq!(m.report().busy_ns, 0);
        // Completing the unit programs it.
        let lat = write(
            &mut m,
            0,
            p.program_unit / 2,
            p.program_unit / 2,
            IoCategory::Wal,
        );
        assert_eq!(lat, p.transfer_ns(p.program_unit));
        assert_eq!(m.report().pages_programmed, 1);
    }

    #[test]
    fn reset_costs_the_erase_time_on_every_die_of_the_zone() {
        let p = params(TimingPreset::Confzns);
        let geo = Geometry::new(4, 64 * MIB);
        let w = u64::from(p.dies_per_zone);
        let mut m = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut m, 0, 0, w * p.program_unit, IoCategory::Compaction);
        read(&mut m, 0, 0, w * p.read_unit, IoCategory::Compaction);

        assert_eq!(reset(&mut m, 0), p.erase_ns);
        let r = m.report();
        assert_eq!(r.resets, 1);
        assert_eq!(r.die_erases, w);
        assert_eq!(r.by_kind.reset_ns, w * p.erase_ns);
        // Nothing was programmed since: nothing to erase.
        assert_eq!(reset(&mut m, 0), 0);
        assert_eq!(m.report().resets, 2);

        // Zone 2 shares zone 0's dies: a foreground write issued at time 0 waits for the
        // erase; zone 1 is on the other group and does not.
        let erased_at = m.clock(Stream::Background);
        write(&mut m, 2, 0, p.program_unit, IoCategory::Wal);
        assert!(m.clock(Stream::Foreground) >= erased_at);
        let waited = m.report().fg_write_wait_ns;
        assert!(waited > p.erase_ns / 2, "waited {waited}");
        let mut m2 = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut m2, 0, 0, w * p.program_unit, IoCategory::Compaction);
        read(&mut m2, 0, 0, w * p.read_unit, IoCategory::Compaction);
        reset(&mut m2, 0);
        write(&mut m2, 1, 0, p.program_unit, IoCategory::Wal);
        assert!(m2.report().fg_write_wait_ns <= p.transfer_ns(p.program_unit));
    }

    #[test]
    fn finish_programs_the_buffered_partial_unit() {
        let p = params(TimingPreset::Zn540);
        let geo = Geometry::new(4, 64 * MIB);
        let mut m = TimingModel::new(TimingPreset::Zn540, &geo);
        write(&mut m, 0, 0, 4096, IoCategory::Metadata);
        assert_eq!(reset(&mut m, 3), 0);
        m.on_io(&ev(IoKind::Finish, 0, 0, 0, IoCategory::User));
        let r = m.report();
        assert_eq!(r.finishes, 1);
        assert_eq!(r.pages_programmed, 1);
        assert_eq!(r.by_kind.finish_ns, p.program_ns);
        assert_eq!(r.by_category.metadata.program_busy_ns, p.program_ns);
        // A finish with nothing buffered costs nothing.
        assert_eq!(m.on_io(&ev(IoKind::Finish, 0, 0, 0, IoCategory::User)), 0);
        assert!(reset(&mut m, 0) >= p.erase_ns);
    }

    #[test]
    fn foreground_waits_when_background_keeps_the_dies_busy() {
        let p = params(TimingPreset::Zn540);
        let geo = Geometry::new(4, 64 * MIB);

        let mut alone = TimingModel::new(TimingPreset::Zn540, &geo);
        write(&mut alone, 1, 0, MIB, IoCategory::Wal);
        let r = alone.report();
        assert_eq!(r.fg_write_wait_ns, 0);
        assert_eq!(r.fg_interference_ns, 0);

        let mut busy = TimingModel::new(TimingPreset::Zn540, &geo);
        write(&mut busy, 0, 0, 64 * MIB, IoCategory::Compaction);
        let bg_until = busy.report().elapsed_ns;
        write(&mut busy, 1, 0, MIB, IoCategory::Wal);
        let r = busy.report();
        assert!(
            r.fg_write_wait_ns as f64 > 0.9 * bg_until as f64,
            "waited {} ns behind {} ns of background work",
            r.fg_write_wait_ns,
            bg_until
        );
        assert_eq!(r.fg_interference_ns, r.fg_write_wait_ns);
        assert_eq!(r.by_category.wal.wait_ns, r.fg_write_wait_ns);
        assert_eq!(r.bg_wait_ns, 0);
        assert!(r.foreground_clock_ns >= bg_until - p.program_ns);

        // ConfZNS: zones 0 and 1 are on different dies; only channel time is shared.
        let cz = params(TimingPreset::Confzns);
        let mut split = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut split, 0, 0, 64 * MIB, IoCategory::Compaction);
        write(&mut split, 1, 0, MIB, IoCategory::Wal);
        let r = split.report();
        assert!(
            r.fg_interference_ns <= 3 * cz.transfer_ns(cz.program_unit),
            "interference {} ns",
            r.fg_interference_ns
        );
    }

    #[test]
    fn streams_on_disjoint_dies_overlap() {
        let p = params(TimingPreset::Confzns);
        let geo = round_geometry(&p, 4);
        let zone = geo.zone_capacity;
        let mut serial = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut serial, 0, 0, zone, IoCategory::Flush);
        write(&mut serial, 1, 0, zone, IoCategory::Flush);
        let mut parallel = TimingModel::new(TimingPreset::Confzns, &geo);
        write(&mut parallel, 0, 0, zone, IoCategory::Flush);
        write(&mut parallel, 1, 0, zone, IoCategory::Compaction);
        let (s, q) = (serial.report().elapsed_ns, parallel.report().elapsed_ns);
        assert!(
            (q as f64) < 0.51 * s as f64,
            "serial {s} ns, parallel {q} ns"
        );
    }

    fn scripted_run(preset: TimingPreset) -> TimingReport {
        let p = params(preset);
        let geo = Geometry::new(8, MIB);
        let mut m = TimingModel::new(preset, &geo);
        let cats = IoCategory::ALL;
        let mut wp = [0u64; 8];
        for i in 0..400u64 {
            let zone = (i * 7 % 8) as usize;
            let cat = cats[(i % cats.len() as u64) as usize];
            let len = (1 + i * 13 % 29) * 4096;
            if wp[zone] + len > geo.zone_capacity {
                m.on_io(&ev(IoKind::Finish, zone as u32, 0, 0, IoCategory::User));
                reset(&mut m, zone as u32);
                wp[zone] = 0;
            }
            write(&mut m, zone as u32, wp[zone], len, cat);
            wp[zone] += len;
            if i % 3 == 0 && wp[zone] > p.program_unit {
                read(
                    &mut m,
                    zone as u32,
                    0,
                    wp[zone].min(256 * 1024),
                    cats[(i % 5) as usize],
                );
            }
        }
        m.report()
    }

    #[test]
    fn identical_inputs_give_identical_reports() {
        for preset in [
            TimingPreset::Confzns,
            TimingPreset::FemuTlc,
            TimingPreset::Zn540,
        ] {
            let a = scripted_run(preset);
            let b = scripted_run(preset);
            assert_eq!(a, b);
            assert!(a.elapsed_ns > 0 && a.resets > 0 && a.pages_read > 0);
            let cat_busy: u64 = IoCategory::ALL
                .iter()
                .map(|&c| a.by_category.get(c).busy_ns)
                .sum();
            assert_eq!(cat_busy + a.by_kind.reset_ns, a.busy_ns);
            assert!(a.utilization() > 0.0 && a.utilization() <= 1.0);
        }
    }

    #[test]
    fn calendar_fills_gaps_and_forgets_old_time() {
        let mut c = Calendar::default();
        assert_eq!(c.reserve(100, 10), 100);
        assert_eq!(c.reserve(0, 10), 0);
        assert_eq!(c.reserve(0, 95), 110); // does not fit in 10..100
        assert_eq!(c.reserve(10, 90), 10); // exactly fills the gap
        assert_eq!(c.busy.len(), 1);
        assert_eq!(c.last_end(), 205);
        for i in 0..(CALENDAR_WINDOW as u64 + 10) {
            c.reserve(1000 + i * 100, 10);
        }
        assert_eq!(c.busy.len(), CALENDAR_WINDOW);
        let floor = c.floor;
        assert!(floor > 205);
        assert_eq!(c.reserve(0, 1), floor);
    }
}
