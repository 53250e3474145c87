//! Fault injection for the emulated devices: power cuts, one-shot and persistent I/O errors,
//! and bit rot of stored data.
//!
//! Durability model (what survives a power cut):
//! - A write or append is durable once a later `sync` (the NVMe flush) has returned.
//! - Zone management commands (open, close, finish, reset) are durable when they return;
//!   `finish` also makes the zone's earlier writes durable (the zone is sealed).
//! - At a power cut every zone loses its non-durable tail: with [`TearMode::Drop`] the whole
//!   tail, with [`TearMode::Tear`] all but a random block-aligned prefix of it. Open zones
//!   come back CLOSED (EMPTY if nothing durable remains), as after a controller reset.
//! - While the power is off every command fails with `PowerLoss`; `restart` powers on.

use crate::types::ZoneOp;

/// What happens to writes that were not yet made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TearMode {
    /// Every non-durable write is lost.
    Drop,
    /// Per zone, a random block-aligned prefix of the non-durable tail survives.
    Tear {
        /// Fixes which prefixes survive: the same seed, the same tears.
        seed: u64,
    },
}

/// Which command an injected error hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultOp {
    /// `read`.
    Read,
    /// `write` or `append`.
    Write,
    /// That zone management command.
    Zone(ZoneOp),
    /// `sync` (the flush).
    Sync,
}

impl FaultOp {
    /// The command's name, as [`crate::ZnsError::Injected`] reports it: `read`, `write`,
    /// `open`, `close`, `finish`, `reset` or `sync`.
    pub fn name(self) -> &'static str {
        match self {
            FaultOp::Read => "read",
            FaultOp::Write => "write",
            FaultOp::Zone(op) => op.name(),
            FaultOp::Sync => "sync",
        }
    }
}

/// Control of an emulated device's faults, reachable through
/// [`ZonedDevice::faults`](crate::ZonedDevice::faults).
pub trait FaultControl: Send + Sync {
    /// Cuts the power now.
    fn power_cut(&self, mode: TearMode);

    /// Cuts the power when the device is about to execute its `after + 1`-th mutating command
    /// (write, append, zone management, sync) from now: that command fails with `PowerLoss`
    /// and nothing of it is applied. Replaces any earlier schedule.
    fn schedule_power_cut(&self, after: u64, mode: TearMode);

    /// Powers the device on again after a power cut. Also disarms any injected error and
    /// scheduled cut: a power cycle starts from a clean slate.
    fn restart(&self);

    /// Whether the power is on (no cut since the last restart).
    fn is_powered(&self) -> bool;

    /// Makes the `nth` (1-based) next command of kind `op` (on `zone`, if given) fail with an
    /// `Injected` error that changes nothing. One shot: it disarms once it fires.
    fn inject_error(&self, op: FaultOp, zone: Option<u32>, nth: u64);

    /// Makes every command of kind `op` (on `zone`, if given) fail with an `Injected` error
    /// that changes nothing, until [`FaultControl::clear_injection`] or a restart: a
    /// failing medium rather than a glitch. Replaces any armed injection.
    fn inject_persistent(&self, op: FaultOp, zone: Option<u32>);

    /// Disarms an injected error (one-shot or persistent).
    fn clear_injection(&self);

    /// Flips bit `bit` (0..8) of the stored byte at device address `addr`, which must lie
    /// below its zone's write pointer, without any command or state change: bit rot of the
    /// medium while the device runs. Reads return the flipped byte from then on.
    fn rot(&self, addr: u64, bit: u8) -> crate::Result<()>;

    /// Marks a zone READ_ONLY or OFFLINE, as a device does when a zone wears out.
    fn set_zone_condition(&self, zone: u32, state: crate::ZoneState) -> crate::Result<()>;

    /// Number of mutating commands executed so far (to choose power-cut points).
    fn mutating_commands(&self) -> u64;
}
