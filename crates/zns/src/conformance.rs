//! The conformance suite: the same checks run against every backend (the emulators in
//! `cargo test`, a kernel zoned block device inside a QEMU guest via the `zns-conformance`
//! binary). Cases only use what the geometry allows (zone count, capacity, limits), reset
//! the zones first, and return a message naming the rule that was broken.

use crate::device::ZonedDevice;
use crate::fault::{FaultOp, TearMode};
use crate::types::{Geometry, IoCategory, ZoneInfo, ZoneOp, ZoneState};

/// What a case needs from the device beyond the basic commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Needs {
    /// Only the basic commands.
    Nothing,
    /// Fault injection (the emulators).
    Faults,
    /// An open limit, and more zones than the active limit.
    OpenLimit,
    /// An active limit larger than the open limit (so CLOSED zones can exist while every
    /// open resource is taken), and zones to spare.
    ActiveLimit,
    /// An open limit with room for a zone to be auto-closed (active > open, or unlimited).
    AutoClose,
    /// An open limit equal to the active limit (common on real drives).
    EqualLimits,
}

impl Needs {
    fn met(self, geo: &Geometry, faults: bool) -> bool {
        let spare = |n: u32| geo.zones > n + 1;
        match self {
            Needs::Nothing => true,
            Needs::Faults => faults,
            Needs::OpenLimit => geo.max_open > 0 && spare(geo.max_open.max(geo.max_active)),
            Needs::ActiveLimit => geo.max_active > geo.max_open && spare(geo.max_active),
            Needs::AutoClose => {
                geo.max_open > 0
                    && (geo.max_active == 0 || geo.max_active > geo.max_open)
                    && spare(geo.max_open)
            }
            Needs::EqualLimits => {
                geo.max_open > 0 && geo.max_open == geo.max_active && spare(geo.max_open)
            }
        }
    }
}

/// A case's outcome: `Err` names the rule the device broke.
pub type CaseResult = Result<(), String>;

/// One check of the suite.
pub struct Case {
    /// The case's name (its function's).
    pub name: &'static str,
    /// What it needs beyond the basic commands; skipped on a device without it.
    pub needs: Needs,
    /// Runs the case on a device.
    pub run: fn(&dyn ZonedDevice) -> CaseResult,
}

macro_rules! case {
    ($f:ident) => {
        case!($f, Needs::Nothing)
    };
    ($f:ident, $needs:expr) => {
        Case {
            name: stringify!($f),
            needs: $needs,
            run: $f,
        }
    };
}

/// Every case, in a fixed order.
pub fn cases() -> Vec<Case> {
    vec![
        case!(write_at_wp_advances_wp),
        case!(write_not_at_wp_is_refused),
        case!(unaligned_write_is_refused),
        case!(append_returns_the_address_written),
        case!(zero_length_write_changes_nothing),
        case!(write_to_capacity_makes_zone_full),
        case!(write_crossing_capacity_is_refused),
        case!(read_of_unwritten_blocks_returns_zeros),
        case!(read_across_zone_boundary),
        case!(access_outside_device_is_refused),
        case!(explicit_open_and_close),
        case!(implicit_open_and_close),
        case!(close_rules),
        case!(open_rules),
        case!(finish_rules),
        case!(reset_rules),
        case!(sync_succeeds),
        case!(counters_follow_commands),
        case!(explicit_opens_hit_the_limit, Needs::OpenLimit),
        case!(active_limit_is_checked_first, Needs::ActiveLimit),
        case!(
            closed_zone_reopens_without_active_resource,
            Needs::ActiveLimit
        ),
        case!(oldest_implicit_zone_is_auto_closed, Needs::AutoClose),
        case!(equal_limits_refuse_new_zone, Needs::EqualLimits),
        case!(power_cut_drops_unsynced_writes, Needs::Faults),
        case!(power_cut_tears_at_block_boundary, Needs::Faults),
        case!(finish_makes_zone_durable, Needs::Faults),
        case!(scheduled_power_cut, Needs::Faults),
        case!(injected_error_changes_nothing, Needs::Faults),
        case!(read_only_and_offline_zones, Needs::Faults),
    ]
}

/// Outcome of running the suite.
#[derive(Debug, Default)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed: name and message.
    pub failed: Vec<(String, String)>,
    /// Cases skipped because the device cannot provide what they need.
    pub skipped: Vec<String>,
}

/// Runs every applicable case, printing one line per case when `verbose`.
pub fn run_all(dev: &dyn ZonedDevice, verbose: bool) -> Summary {
    let mut s = Summary::default();
    let geo = dev.geometry();
    let faults = dev.faults().is_some();
    for case in cases() {
        if !case.needs.met(&geo, faults) {
            if verbose {
                println!("skip    {} (needs {:?})", case.name, case.needs);
            }
            s.skipped.push(case.name.to_string());
            continue;
        }
        match (case.run)(dev) {
            Ok(()) => {
                s.passed += 1;
                if verbose {
                    println!("ok      {}", case.name);
                }
            }
            Err(msg) => {
                if verbose {
                    println!("FAILED  {}: {msg}", case.name);
                }
                s.failed.push((case.name.to_string(), msg));
            }
        }
    }
    s
}

/// Runs one case by name (for per-case `#[test]`s); `Ok(false)` if its needs are not met.
pub fn run_one(dev: &dyn ZonedDevice, name: &str) -> Result<bool, String> {
    let case = cases()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| format!("no conformance case named {name}"))?;
    if !case.needs.met(&dev.geometry(), dev.faults().is_some()) {
        return Ok(false);
    }
    (case.run)(dev).map(|()| true)
}

// ---------------------------------------------------------------------------------------
// Helpers

fn fail<T>(msg: impl Into<String>) -> Result<T, String> {
    Err(msg.into())
}

fn ok<T>(r: crate::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: unexpected error: {e}"))
}

fn expect_err<T: std::fmt::Debug>(r: crate::Result<T>, kind: &str, what: &str) -> CaseResult {
    match r {
        Ok(v) => fail(format!("{what}: expected {kind}, got success ({v:?})")),
        Err(e) if e.kind() == kind => Ok(()),
        Err(e) => fail(format!("{what}: expected {kind}, got {} ({e})", e.kind())),
    }
}

/// Resets every zone that is not EMPTY (offline and read-only zones cannot be reset).
pub fn reset_all(dev: &dyn ZonedDevice) -> CaseResult {
    for z in ok(dev.report_zones(0, dev.geometry().zones), "report zones")? {
        if !matches!(
            z.state,
            ZoneState::Empty | ZoneState::Offline | ZoneState::ReadOnly
        ) {
            ok(dev.reset_zone(z.zone), "reset")?;
        }
    }
    Ok(())
}

fn report(dev: &dyn ZonedDevice) -> Result<Vec<ZoneInfo>, String> {
    ok(dev.report_zones(0, dev.geometry().zones), "report zones")
}

/// Fails unless the device's zones are exactly as `before` (a refused command changed nothing).
fn unchanged(dev: &dyn ZonedDevice, before: &[ZoneInfo], what: &str) -> CaseResult {
    let now = report(dev)?;
    for (a, b) in before.iter().zip(&now) {
        if a != b {
            return fail(format!(
                "{what} failed but changed zone {}: {} wp {} -> {} wp {}",
                a.zone, a.state, a.wp, b.state, b.wp
            ));
        }
    }
    Ok(())
}

fn info(dev: &dyn ZonedDevice, zone: u32) -> Result<ZoneInfo, String> {
    ok(dev.zone_info(zone), "report zone")
}

/// Checks a zone's state and (zone-relative) write pointer.
fn expect_zone(dev: &dyn ZonedDevice, zone: u32, state: ZoneState, wp: u64) -> CaseResult {
    let z = info(dev, zone)?;
    if z.state != state || z.wp != z.start + wp {
        return fail(format!(
            "zone {zone}: expected {state} with wp at {wp}, found {} with wp at {}",
            z.state,
            z.wp - z.start
        ));
    }
    Ok(())
}

fn expect_state(dev: &dyn ZonedDevice, zone: u32, state: ZoneState) -> CaseResult {
    let z = info(dev, zone)?;
    if z.state != state {
        return fail(format!("zone {zone}: expected {state}, found {}", z.state));
    }
    Ok(())
}

/// Test data: byte `i` of stream `seed`. `pattern_at(start, ..)` continues the stream, so a
/// stream written in chunks can be checked in any other slicing.
fn pattern_at(start: u64, len: usize, seed: u64) -> Vec<u8> {
    (start..start + len as u64)
        .map(|i| {
            let x = (i ^ seed.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (x >> 56) as u8
        })
        .collect()
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    pattern_at(0, len, seed)
}

fn bs(dev: &dyn ZonedDevice) -> u64 {
    u64::from(dev.geometry().block_size)
}

/// Appends `len` bytes of pattern `seed` to a zone in chunks of at most 1 MiB.
fn fill(dev: &dyn ZonedDevice, zone: u32, len: u64, seed: u64) -> CaseResult {
    let chunk = (1u64 << 20).max(bs(dev));
    let mut done = 0;
    while done < len {
        let n = chunk.min(len - done);
        ok(
            dev.append(zone, &pattern_at(done, n as usize, seed), IoCategory::User),
            &format!("fill zone {zone}"),
        )?;
        done += n;
    }
    Ok(())
}

fn read_back(dev: &dyn ZonedDevice, addr: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0xA5u8; len];
    ok(dev.read(addr, &mut buf, IoCategory::User), "read")?;
    Ok(buf)
}

/// Whether `got` is `data` followed by nothing but zeros.
fn data_then_zeros(got: &[u8], data: &[u8]) -> bool {
    got.strip_prefix(data)
        .is_some_and(|tail| tail.iter().all(|&x| x == 0))
}

fn write_block(dev: &dyn ZonedDevice, zone: u32, seed: u64) -> CaseResult {
    ok(
        dev.append(zone, &pattern(bs(dev) as usize, seed), IoCategory::User)
            .map(|_| ()),
        &format!("write to zone {zone}"),
    )
}

// ---------------------------------------------------------------------------------------
// Writes

fn write_at_wp_advances_wp(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    let data = pattern(2 * b as usize, 7);
    ok(
        dev.write(geo.zone_start(1), &data, IoCategory::User),
        "write",
    )?;
    expect_zone(dev, 1, ZoneState::ImplicitOpen, 2 * b)?;
    let more = pattern(b as usize, 9);
    ok(
        dev.write(geo.zone_start(1) + 2 * b, &more, IoCategory::User),
        "second write",
    )?;
    expect_zone(dev, 1, ZoneState::ImplicitOpen, 3 * b)?;
    if read_back(dev, geo.zone_start(1), 2 * b as usize)? != data
        || read_back(dev, geo.zone_start(1) + 2 * b, b as usize)? != more
    {
        return fail("read back differs from what was written");
    }
    Ok(())
}

fn write_not_at_wp_is_refused(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    let block = pattern(b as usize, 1);
    let before = report(dev)?;
    expect_err(
        dev.write(geo.zone_start(2) + b, &block, IoCategory::User),
        "invalid_write_position",
        "write ahead of the wp of an empty zone",
    )?;
    unchanged(dev, &before, "write ahead of the wp")?;
    write_block(dev, 2, 3)?;
    let before = report(dev)?;
    expect_err(
        dev.write(geo.zone_start(2), &block, IoCategory::User),
        "invalid_write_position",
        "rewrite below the wp",
    )?;
    expect_err(
        dev.write(geo.zone_start(2) + 2 * b, &block, IoCategory::User),
        "invalid_write_position",
        "write past the wp",
    )?;
    unchanged(dev, &before, "write not at the wp")?;
    expect_zone(dev, 2, ZoneState::ImplicitOpen, b)
}

fn unaligned_write_is_refused(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    let before = report(dev)?;
    expect_err(
        dev.write(
            geo.zone_start(0),
            &vec![1u8; b as usize + 1],
            IoCategory::User,
        ),
        "unaligned",
        "write of a length that is not a block multiple",
    )?;
    expect_err(
        dev.write(
            geo.zone_start(0) + 1,
            &vec![1u8; b as usize],
            IoCategory::User,
        ),
        "unaligned",
        "write at an unaligned address",
    )?;
    expect_err(
        dev.append(0, &vec![1u8; b as usize - 1], IoCategory::User),
        "unaligned",
        "append of a partial block",
    )?;
    unchanged(dev, &before, "unaligned write")
}

fn append_returns_the_address_written(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    let one = pattern(b as usize, 11);
    let two = pattern(2 * b as usize, 12);
    let a1 = ok(dev.append(3, &one, IoCategory::User), "append")?;
    let a2 = ok(dev.append(3, &two, IoCategory::User), "append")?;
    if a1 != geo.zone_start(3) || a2 != geo.zone_start(3) + b {
        return fail(format!("append returned {a1} and {a2}"));
    }
    expect_zone(dev, 3, ZoneState::ImplicitOpen, 3 * b)?;
    if read_back(dev, a1, b as usize)? != one || read_back(dev, a2, 2 * b as usize)? != two {
        return fail("appended data reads back differently");
    }
    Ok(())
}

fn zero_length_write_changes_nothing(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let before = report(dev)?;
    ok(
        dev.write(geo.zone_start(1), &[], IoCategory::User),
        "empty write",
    )?;
    unchanged(dev, &before, "empty write")?;
    expect_zone(dev, 1, ZoneState::Empty, 0)
}

fn write_to_capacity_makes_zone_full(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let cap = geo.zone_capacity;
    fill(dev, 4, cap, 4)?;
    // Linux reports a full zone's write pointer at the zone end, not at its capacity.
    expect_zone(dev, 4, ZoneState::Full, geo.zone_size)?;
    let block = pattern(bs(dev) as usize, 0);
    let before = report(dev)?;
    expect_err(
        dev.append(4, &block, IoCategory::User),
        "zone_full",
        "append to a full zone",
    )?;
    expect_err(
        dev.write(geo.zone_start(4), &block, IoCategory::User),
        "zone_full",
        "write to a full zone",
    )?;
    unchanged(dev, &before, "write to a full zone")?;
    let tail = read_back(dev, geo.zone_start(4) + cap - bs(dev), bs(dev) as usize)?;
    if tail != pattern_at(cap - bs(dev), bs(dev) as usize, 4) {
        return fail("last block of the full zone reads back differently");
    }
    Ok(())
}

fn write_crossing_capacity_is_refused(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    let cap = geo.zone_capacity;
    if cap < 2 * b {
        return Ok(());
    }
    fill(dev, 5, cap - b, 5)?;
    let before = report(dev)?;
    expect_err(
        dev.append(5, &pattern(2 * b as usize, 0), IoCategory::User),
        "boundary_crossed",
        "write crossing the zone capacity",
    )?;
    unchanged(dev, &before, "write crossing capacity")?;
    write_block(dev, 5, 0)?;
    expect_zone(dev, 5, ZoneState::Full, geo.zone_size)
}

// ---------------------------------------------------------------------------------------
// Reads

fn read_of_unwritten_blocks_returns_zeros(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev) as usize;
    let data = pattern(b, 21);
    ok(dev.append(6, &data, IoCategory::User), "append")?;
    let got = read_back(dev, geo.zone_start(6), 3 * b)?;
    if !data_then_zeros(&got, &data) {
        return fail("written block wrong or unwritten blocks not zero");
    }
    // Unaligned reads inside written data work too.
    let mid = read_back(dev, geo.zone_start(6) + 5, 100)?;
    if data.get(5..105) != Some(&mid[..]) {
        return fail("unaligned read returned wrong bytes");
    }
    ok(dev.reset_zone(6), "reset")?;
    if read_back(dev, geo.zone_start(6), b)?
        .iter()
        .any(|&x| x != 0)
    {
        return fail("data is still readable after a reset");
    }
    Ok(())
}

fn read_across_zone_boundary(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev) as usize;
    let data = pattern(b, 31);
    ok(dev.append(3, &data, IoCategory::User), "append")?;
    let got = read_back(dev, geo.zone_start(3) - b as u64, 2 * b)?;
    let zeros_then_data = got
        .strip_suffix(&data[..])
        .is_some_and(|head| head.iter().all(|&x| x == 0));
    if !zeros_then_data {
        return fail("read across the zone 2/3 boundary returned wrong bytes");
    }
    Ok(())
}

fn access_outside_device_is_refused(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let mut buf = vec![0u8; bs(dev) as usize];
    expect_err(
        dev.read(geo.device_size() - 1, &mut buf, IoCategory::User),
        "out_of_range",
        "read past the device end",
    )?;
    expect_err(
        dev.write(geo.device_size(), &buf, IoCategory::User),
        "no_such_zone",
        "write past the device end",
    )?;
    expect_err(
        dev.append(geo.zones, &buf, IoCategory::User),
        "no_such_zone",
        "append to a zone that does not exist",
    )?;
    for op in [ZoneOp::Open, ZoneOp::Close, ZoneOp::Finish, ZoneOp::Reset] {
        expect_err(
            dev.zone_op(geo.zones, op),
            "no_such_zone",
            &format!("{op} of a zone that does not exist"),
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Zone management

fn explicit_open_and_close(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    ok(dev.open_zone(1), "open")?;
    expect_zone(dev, 1, ZoneState::ExplicitOpen, 0)?;
    write_block(dev, 1, 0)?;
    // Writing keeps an explicitly opened zone explicitly open.
    expect_zone(dev, 1, ZoneState::ExplicitOpen, bs(dev))?;
    ok(dev.close_zone(1), "close")?;
    expect_zone(dev, 1, ZoneState::Closed, bs(dev))?;
    // An explicitly opened zone closed before any write is CLOSED too (as QEMU does).
    ok(dev.open_zone(2), "open")?;
    ok(dev.close_zone(2), "close")?;
    expect_zone(dev, 2, ZoneState::Closed, 0)?;
    ok(dev.reset_zone(2), "reset")?;
    expect_zone(dev, 2, ZoneState::Empty, 0)
}

fn implicit_open_and_close(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let b = bs(dev);
    write_block(dev, 2, 1)?;
    expect_zone(dev, 2, ZoneState::ImplicitOpen, b)?;
    ok(dev.close_zone(2), "close")?;
    expect_zone(dev, 2, ZoneState::Closed, b)?;
    write_block(dev, 2, 2)?;
    expect_zone(dev, 2, ZoneState::ImplicitOpen, 2 * b)?;
    let got = read_back(dev, dev.geometry().zone_start(2), 2 * b as usize)?;
    let mut want = pattern(b as usize, 1);
    want.extend(pattern(b as usize, 2));
    if got != want {
        return fail("data written across a close reads back differently");
    }
    Ok(())
}

fn close_rules(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let before = report(dev)?;
    expect_err(
        dev.close_zone(1),
        "invalid_transition",
        "close of an empty zone",
    )?;
    unchanged(dev, &before, "close of an empty zone")?;
    ok(dev.finish_zone(1), "finish")?;
    expect_err(
        dev.close_zone(1),
        "invalid_transition",
        "close of a full zone",
    )?;
    write_block(dev, 2, 0)?;
    ok(dev.close_zone(2), "close")?;
    ok(dev.close_zone(2), "close of a closed zone")?;
    expect_zone(dev, 2, ZoneState::Closed, bs(dev))
}

fn open_rules(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    write_block(dev, 1, 0)?;
    ok(dev.open_zone(1), "open of an implicitly open zone")?;
    expect_zone(dev, 1, ZoneState::ExplicitOpen, bs(dev))?;
    ok(dev.open_zone(1), "open of an explicitly open zone")?;
    expect_zone(dev, 1, ZoneState::ExplicitOpen, bs(dev))?;
    ok(dev.close_zone(1), "close")?;
    ok(dev.open_zone(1), "open of a closed zone")?;
    expect_zone(dev, 1, ZoneState::ExplicitOpen, bs(dev))?;
    ok(dev.finish_zone(2), "finish")?;
    let before = report(dev)?;
    expect_err(
        dev.open_zone(2),
        "invalid_transition",
        "open of a full zone",
    )?;
    unchanged(dev, &before, "open of a full zone")
}

fn finish_rules(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let b = bs(dev);
    ok(dev.finish_zone(1), "finish of an empty zone")?;
    expect_zone(dev, 1, ZoneState::Full, geo.zone_size)?;
    let data = pattern(b as usize, 41);
    ok(dev.append(2, &data, IoCategory::User), "append")?;
    ok(dev.finish_zone(2), "finish of an open zone")?;
    expect_zone(dev, 2, ZoneState::Full, geo.zone_size)?;
    let got = read_back(dev, geo.zone_start(2), 2 * b as usize)?;
    if !data_then_zeros(&got, &data) {
        return fail("a finished zone reads back wrong (data, or zeros past the old wp)");
    }
    write_block(dev, 3, 0)?;
    ok(dev.close_zone(3), "close")?;
    ok(dev.finish_zone(3), "finish of a closed zone")?;
    ok(dev.finish_zone(3), "finish of a full zone")?;
    expect_zone(dev, 3, ZoneState::Full, geo.zone_size)?;
    expect_err(
        dev.append(2, &data, IoCategory::User),
        "zone_full",
        "write to a finished zone",
    )
}

fn reset_rules(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    ok(dev.reset_zone(1), "reset of an empty zone")?;
    expect_zone(dev, 1, ZoneState::Empty, 0)?;
    write_block(dev, 1, 0)?; // implicitly open
    ok(dev.open_zone(2), "open")?; // explicitly open
    write_block(dev, 3, 0)?;
    ok(dev.close_zone(3), "close")?; // closed
    ok(dev.finish_zone(4), "finish")?; // full
    for z in 1..=4 {
        ok(dev.reset_zone(z), &format!("reset of zone {z}"))?;
        expect_zone(dev, z, ZoneState::Empty, 0)?;
    }
    // A reset zone is writable from its start again.
    write_block(dev, 4, 9)?;
    expect_zone(dev, 4, ZoneState::ImplicitOpen, bs(dev))
}

fn sync_succeeds(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    write_block(dev, 1, 0)?;
    ok(dev.sync(), "sync")?;
    expect_zone(dev, 1, ZoneState::ImplicitOpen, bs(dev))
}

fn counters_follow_commands(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let b = bs(dev);
    let s0 = dev.stats();
    ok(
        dev.append(1, &pattern(3 * b as usize, 0), IoCategory::Compaction),
        "append",
    )?;
    ok(
        dev.append(2, &pattern(b as usize, 0), IoCategory::Wal),
        "append",
    )?;
    let mut buf = vec![0u8; 100];
    ok(
        dev.read(dev.geometry().zone_start(1), &mut buf, IoCategory::GcCopy),
        "read",
    )?;
    ok(dev.finish_zone(1), "finish")?;
    ok(dev.reset_zone(1), "reset")?;
    let s1 = dev.stats();
    let d = |f: fn(&crate::DeviceStats) -> u64| f(&s1) - f(&s0);
    let checks = [
        (
            "compaction bytes",
            s1.written(IoCategory::Compaction) - s0.written(IoCategory::Compaction),
            3 * b,
        ),
        (
            "wal bytes",
            s1.written(IoCategory::Wal) - s0.written(IoCategory::Wal),
            b,
        ),
        (
            "gc_copy read bytes",
            s1.read(IoCategory::GcCopy) - s0.read(IoCategory::GcCopy),
            100,
        ),
        ("finishes", d(|s| s.finishes), 1),
        ("resets", d(|s| s.resets), 1),
        ("zone 1 resets", d(|s| s.resets_of(1)), 1),
    ];
    for (what, got, want) in checks {
        if got != want {
            return fail(format!("{what}: counted {got}, expected {want}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Open and active limits

fn explicit_opens_hit_the_limit(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    for z in 0..geo.max_open {
        ok(dev.open_zone(z), &format!("open zone {z}"))?;
    }
    // With every open resource held by explicit opens nothing can be auto-closed. When the
    // active limit equals the open limit the active check (made first) refuses instead.
    let want = if geo.max_active > 0 && geo.max_active <= geo.max_open {
        "too_many_active"
    } else {
        "too_many_open"
    };
    let next = geo.max_open;
    let before = report(dev)?;
    expect_err(dev.open_zone(next), want, "open beyond the limit")?;
    expect_err(
        dev.append(next, &pattern(bs(dev) as usize, 0), IoCategory::User),
        want,
        "write to a new zone beyond the limit",
    )?;
    unchanged(dev, &before, "open beyond the limit")?;
    // Closing one frees an open resource (but not an active one).
    ok(dev.close_zone(0), "close")?;
    if want == "too_many_open" {
        ok(dev.open_zone(next), "open after a close")?;
    } else {
        ok(dev.open_zone(0), "reopen of the closed zone")?;
    }
    Ok(())
}

fn active_limit_is_checked_first(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    // Make every active resource a CLOSED zone: no zone is open at all.
    for z in 0..geo.max_active {
        write_block(dev, z, u64::from(z))?;
        ok(dev.close_zone(z), "close")?;
    }
    let next = geo.max_active;
    let before = report(dev)?;
    expect_err(
        dev.append(next, &pattern(bs(dev) as usize, 0), IoCategory::User),
        "too_many_active",
        "write to an empty zone with every active resource taken",
    )?;
    expect_err(
        dev.open_zone(next),
        "too_many_active",
        "open of an empty zone with every active resource taken",
    )?;
    unchanged(dev, &before, "command beyond the active limit")?;
    // Finishing a closed zone gives its active resource back.
    ok(dev.finish_zone(0), "finish")?;
    write_block(dev, next, 0)?;
    expect_zone(dev, next, ZoneState::ImplicitOpen, bs(dev))
}

fn closed_zone_reopens_without_active_resource(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    for z in 0..geo.max_active {
        write_block(dev, z, 0)?;
        ok(dev.close_zone(z), "close")?;
    }
    // The active limit is reached, but a CLOSED zone only needs an open resource.
    write_block(dev, 0, 1)?;
    expect_zone(dev, 0, ZoneState::ImplicitOpen, 2 * bs(dev))?;
    ok(dev.open_zone(1), "open of a closed zone")?;
    expect_zone(dev, 1, ZoneState::ExplicitOpen, bs(dev))
}

fn oldest_implicit_zone_is_auto_closed(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let n = geo.max_open;
    for z in 0..n {
        write_block(dev, z, 0)?;
    }
    // Zone 0 was opened first; writing to it again does not make it younger.
    write_block(dev, 0, 1)?;
    write_block(dev, n, 0)?;
    expect_zone(dev, 0, ZoneState::Closed, 2 * bs(dev))?;
    for z in 1..=n {
        expect_state(dev, z, ZoneState::ImplicitOpen)?;
    }
    // Explicitly opened zones are never auto-closed: with all open resources explicit,
    // an implicit open must fail.
    reset_all(dev)?;
    for z in 0..n {
        ok(dev.open_zone(z), "open")?;
    }
    let before = report(dev)?;
    expect_err(
        dev.append(n, &pattern(bs(dev) as usize, 0), IoCategory::User),
        "too_many_open",
        "write with every open resource held explicitly",
    )?;
    unchanged(dev, &before, "write beyond the open limit")
}

fn equal_limits_refuse_new_zone(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let geo = dev.geometry();
    let n = geo.max_open;
    for z in 0..n {
        write_block(dev, z, 0)?;
    }
    // Every active resource is an open zone: a new zone is refused for lack of an active
    // resource. (QEMU may auto-close an implicitly open zone before refusing; only the
    // refused zone is checked here.)
    expect_err(
        dev.append(n, &pattern(bs(dev) as usize, 0), IoCategory::User),
        "too_many_active",
        "write to a new zone with open = active = limit",
    )?;
    expect_zone(dev, n, ZoneState::Empty, 0)
}

// ---------------------------------------------------------------------------------------
// Faults (emulators)

fn faults(dev: &dyn ZonedDevice) -> Result<&dyn crate::FaultControl, String> {
    dev.faults().ok_or_else(|| "no fault injection".to_string())
}

fn power_cut_drops_unsynced_writes(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let f = faults(dev)?;
    let b = bs(dev);
    fill(dev, 1, 2 * b, 1)?;
    ok(dev.sync(), "sync")?;
    fill(dev, 1, 2 * b, 2)?;
    fill(dev, 2, b, 3)?;
    f.power_cut(TearMode::Drop);
    expect_err(dev.sync(), "power_loss", "sync after a power cut")?;
    expect_err(
        dev.append(3, &pattern(b as usize, 0), IoCategory::User),
        "power_loss",
        "write after a power cut",
    )?;
    f.restart();
    expect_zone(dev, 1, ZoneState::Closed, 2 * b)?;
    expect_zone(dev, 2, ZoneState::Empty, 0)?;
    let got = read_back(dev, dev.geometry().zone_start(1), 4 * b as usize)?;
    if !data_then_zeros(&got, &pattern(2 * b as usize, 1)) {
        return fail("after a power cut: synced data lost or unsynced data kept");
    }
    Ok(())
}

fn power_cut_tears_at_block_boundary(dev: &dyn ZonedDevice) -> CaseResult {
    let f = faults(dev)?;
    let b = bs(dev);
    let mut kept = std::collections::BTreeSet::new();
    for seed in 0..16 {
        reset_all(dev)?;
        fill(dev, 1, b, 0)?;
        ok(dev.sync(), "sync")?;
        fill(dev, 1, 4 * b, 1)?;
        f.power_cut(TearMode::Tear { seed });
        f.restart();
        let z = info(dev, 1)?;
        let w = z.wp - z.start;
        if w < b || w > 5 * b || w % b != 0 || z.state != ZoneState::Closed {
            return fail(format!("torn zone has wp {w} and state {}", z.state));
        }
        let got = read_back(dev, z.start + b, (w - b) as usize)?;
        if !pattern(4 * b as usize, 1).starts_with(&got) {
            return fail("the kept prefix of a torn write differs from what was written");
        }
        kept.insert(w);
    }
    if kept.len() < 2 {
        return fail("tearing never kept different prefixes over 16 seeds");
    }
    reset_all(dev)
}

fn finish_makes_zone_durable(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let f = faults(dev)?;
    fill(dev, 1, bs(dev), 5)?;
    ok(dev.finish_zone(1), "finish")?;
    ok(dev.reset_zone(2), "reset")?;
    f.power_cut(TearMode::Drop);
    f.restart();
    expect_zone(dev, 1, ZoneState::Full, dev.geometry().zone_size)?;
    let got = read_back(dev, dev.geometry().zone_start(1), bs(dev) as usize)?;
    if got != pattern(bs(dev) as usize, 5) {
        return fail("finished zone lost its data at a power cut");
    }
    Ok(())
}

fn scheduled_power_cut(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let f = faults(dev)?;
    let b = bs(dev) as usize;
    f.schedule_power_cut(2, TearMode::Drop);
    write_block(dev, 1, 0)?;
    ok(dev.sync(), "sync")?;
    expect_err(
        dev.append(1, &pattern(b, 1), IoCategory::User),
        "power_loss",
        "the command at the scheduled cut",
    )?;
    if f.is_powered() {
        return fail("device still powered after the scheduled cut");
    }
    f.restart();
    expect_zone(dev, 1, ZoneState::Closed, b as u64)?;
    write_block(dev, 1, 2)?;
    expect_zone(dev, 1, ZoneState::ImplicitOpen, 2 * b as u64)
}

fn injected_error_changes_nothing(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let f = faults(dev)?;
    let b = bs(dev) as usize;
    f.inject_error(FaultOp::Write, Some(1), 2);
    write_block(dev, 1, 0)?;
    let before = report(dev)?;
    expect_err(
        dev.append(1, &pattern(b, 1), IoCategory::User),
        "injected",
        "second write to zone 1",
    )?;
    unchanged(dev, &before, "injected write error")?;
    write_block(dev, 1, 1)?; // one shot: disarmed
    f.inject_error(FaultOp::Zone(ZoneOp::Reset), None, 1);
    expect_err(dev.reset_zone(1), "injected", "reset")?;
    expect_zone(dev, 1, ZoneState::ImplicitOpen, 2 * b as u64)?;
    f.inject_error(FaultOp::Read, None, 1);
    let mut buf = vec![0u8; b];
    expect_err(dev.read(0, &mut buf, IoCategory::User), "injected", "read")?;
    f.inject_error(FaultOp::Sync, None, 1);
    expect_err(dev.sync(), "injected", "sync")?;
    ok(dev.sync(), "sync after the injected error")?;
    // An armed injection can be disarmed, and a power cycle disarms it too.
    f.inject_error(FaultOp::Sync, None, 1);
    f.clear_injection();
    ok(dev.sync(), "sync after clearing the injection")?;
    f.inject_error(FaultOp::Sync, None, 1);
    f.power_cut(TearMode::Drop);
    f.restart();
    ok(dev.sync(), "sync after a power cycle")
}

fn read_only_and_offline_zones(dev: &dyn ZonedDevice) -> CaseResult {
    reset_all(dev)?;
    let f = faults(dev)?;
    let b = bs(dev) as usize;
    write_block(dev, 1, 7)?;
    ok(
        f.set_zone_condition(1, ZoneState::ReadOnly),
        "set read-only",
    )?;
    ok(f.set_zone_condition(2, ZoneState::Offline), "set offline")?;
    expect_err(
        dev.append(1, &pattern(b, 0), IoCategory::User),
        "read_only",
        "write to a read-only zone",
    )?;
    expect_err(dev.reset_zone(1), "read_only", "reset of a read-only zone")?;
    if read_back(dev, dev.geometry().zone_start(1), b)? != pattern(b, 7) {
        return fail("a read-only zone's data is not readable");
    }
    let mut buf = vec![0u8; b];
    expect_err(
        dev.read(dev.geometry().zone_start(2), &mut buf, IoCategory::User),
        "offline",
        "read of an offline zone",
    )?;
    expect_err(dev.open_zone(2), "offline", "open of an offline zone")?;
    expect_err(
        dev.append(2, &pattern(b, 0), IoCategory::User),
        "offline",
        "write to an offline zone",
    )?;
    Ok(())
}
