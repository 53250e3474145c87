//! The check after every recovery: the file system is consistent, every value is one the
//! harness wrote, scans and point reads agree, and the store is in the state of an allowed
//! prefix of the writer's operations (see [`crate::oracle`]). On success the oracle is
//! rebased on the state found, so the store carries on from there.

use crate::oracle::{Oracle, Verdict};
use crate::setup::{is_out_of_space, Setup, Stack};
use crate::totals::Totals;
use crate::workload::read_back;

/// Checks a freshly recovered store and counts what it found. `Ok(false)` if anything is
/// wrong (the store cannot go on: the oracle no longer describes it); the engine's error if
/// the store could not be read (a crash that came after the recovery, or a failure: the
/// caller knows which).
pub fn verify(
    stack: &Stack,
    oracle: &mut Oracle,
    totals: &mut Totals,
    label: &str,
) -> Result<bool, zkv_engine::Error> {
    if let Err(e) = stack.fs.check_consistency() {
        totals.failures.fs_inconsistencies += 1;
        totals.fail(format!(
            "{label}: file system inconsistent after recovery: {e}"
        ));
        return Ok(false);
    }
    let rb = read_back(&stack.db, oracle.keys())?;
    totals.counts.reads_checked += 2 * u64::from(oracle.keys());
    if !rb.bad.is_empty() || !rb.get_vs_scan.is_empty() {
        totals.failures.bad_values += rb.bad.len() as u64;
        totals.failures.read_mismatches += rb.get_vs_scan.len() as u64;
        let first = rb.bad.iter().chain(&rb.get_vs_scan).next();
        totals.fail(format!(
            "{label}: after recovery: {}",
            first.map_or("", |s| s)
        ));
        return Ok(false);
    }
    match oracle.check(&rb.state) {
        Verdict::Prefix(i) => {
            count_prefix(oracle, i, totals);
            oracle.rebase(i);
            Ok(true)
        }
        Verdict::Wrong(p) => {
            let f = &mut totals.failures;
            f.lost_acked_writes += p.lost;
            f.resurrected_deletes += p.resurrected;
            f.phantom_values += p.phantom;
            f.prefix_violations += p.not_a_prefix;
            totals.fail(format!(
                "{label}: the recovered store is no allowed state (operations: {} begun, {} \
                 acknowledged, {} durable): {}",
                oracle.begun(),
                oracle.acked(),
                oracle.durable(),
                p.details.join("; ")
            ));
            Ok(false)
        }
    }
}

/// Counts what a successful check decided: the acknowledged writes it covered, the
/// acknowledged operations lost where that is allowed, the fate of the one in flight.
fn count_prefix(oracle: &Oracle, prefix: usize, totals: &mut Totals) {
    let c = &mut totals.counts;
    c.recoveries_checked += 1;
    c.acked_writes_checked += oracle.acked_writes();
    c.unsynced_ops_lost += oracle.acked().saturating_sub(prefix) as u64;
    if oracle.begun() > oracle.acked() {
        if prefix == oracle.begun() {
            c.in_flight_applied += 1;
        } else {
            c.in_flight_absent += 1;
        }
    }
}

/// Closes a checked store cleanly. An out-of-space error of a background job (the recovery's
/// flush or compactions) is counted and passed over if the setup tolerates it: the store
/// was checked, and the next open recovers the same state.
pub fn close(stack: Stack, setup: &Setup, totals: &mut Totals) -> Result<(), String> {
    match stack.close() {
        Ok(()) => Ok(()),
        Err(e) if is_out_of_space(&e) && setup.tolerate_out_of_space => {
            totals.out_of_space(format!("{}: close: {e}", setup.label()));
            Ok(())
        }
        Err(e) => Err(format!("close: {e}")),
    }
}
