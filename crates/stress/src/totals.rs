//! The harness's counters: crash points by kind, operations, checks, what went wrong (must
//! stay 0) and the work the engine and file layer did in between. Printed as one
//! `total <name>=<value>` line each, in a fixed order, so that a script can grep them.

use crate::setup::{Activity, CrashKind};

crate::counters::counters! {
    /// What the harness did and saw.
    pub struct Counts {
        /// Crash points of kill stores: child processes killed.
        crash_points_kill,
        /// Crash points of power-cut stores: power cuts.
        crash_points_power,
        /// Crash points of crash-point stores: emulator deaths between two storage steps.
        crash_points_crashpoint,
        /// Crashes that hit before the store was open again (mount, recovery, a child's
        /// start).
        crashes_in_recovery,
        /// Crashes forced after an epoch ran out of operations before its crash point.
        crashes_at_end,
        /// Recovered stores checked against the oracle.
        recoveries_checked,
        /// Operations issued (puts, deletes, batches, flushes, gets, scans).
        ops,
        /// Acknowledged key writes (puts and deletes, batch members one by one) whose
        /// survival a check decided on.
        acked_writes_checked,
        /// Acknowledged operations a check found lost where that is allowed (no WAL sync,
        /// after the last flush): the lost suffix of the prefix guarantee.
        unsynced_ops_lost,
        /// The operation in flight at the crash, found applied.
        in_flight_applied,
        /// The operation in flight at the crash, found absent.
        in_flight_absent,
        /// Reads (gets, scanned keys) compared with the oracle while the store ran.
        reads_checked,
        /// Out-of-space errors without a crash, tolerated (`Setup::tolerate_out_of_space`):
        /// the store was crashed there and went on.
        out_of_space,
        /// Stores retired because they could no longer be opened: every open failed for
        /// want of space (tolerated as above).
        stuck_out_of_space,
    }
}

crate::counters::counters! {
    /// What must stay 0.
    pub struct Failures {
        /// Acknowledged durable writes a recovered store lost.
        lost_acked_writes,
        /// Durable deletes a recovered store undid (an older value came back).
        resurrected_deletes,
        /// Values of a version no write produced (or of another key).
        phantom_values,
        /// Recovered states that are no prefix of the writes although every key alone is.
        prefix_violations,
        /// Values whose bytes are damaged, keys that are not the harness's.
        bad_values,
        /// Reads that differ from the oracle (while running, or a get against a scan).
        read_mismatches,
        /// `ZoneFs::check_consistency` failures after a recovery.
        fs_inconsistencies,
        /// Errors without a crash, failed recoveries, a child that died by itself.
        unexpected_errors,
    }
}

/// Everything the harness counts, for one store or summed over many; printed by
/// [`Totals::report`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// What the harness did and saw.
    pub counts: Counts,
    /// What must stay 0.
    pub failures: Failures,
    /// Work the engine and the file layer did.
    pub activity: Activity,
    /// The first failure, described.
    pub first_failure: Option<String>,
    /// The first tolerated out-of-space error, described.
    pub first_out_of_space: Option<String>,
    /// The first store retired as stuck out of space, with its last error.
    pub first_stuck: Option<String>,
}

impl Totals {
    /// Counts one crash point of `kind`.
    pub fn crash(&mut self, kind: CrashKind) {
        let c = &mut self.counts;
        match kind {
            CrashKind::Kill => c.crash_points_kill += 1,
            CrashKind::PowerCut => c.crash_points_power += 1,
            CrashKind::CrashPoint => c.crash_points_crashpoint += 1,
        }
    }

    /// Crash points of every kind.
    pub fn crash_points(&self) -> u64 {
        let c = &self.counts;
        c.crash_points_kill + c.crash_points_power + c.crash_points_crashpoint
    }

    /// Records a failure's description (the first one is kept); the caller counts it.
    pub fn fail(&mut self, what: String) {
        if self.first_failure.is_none() {
            self.first_failure = Some(what);
        }
    }

    /// Counts a tolerated out-of-space error (see `Setup::tolerate_out_of_space`).
    pub fn out_of_space(&mut self, what: String) {
        self.counts.out_of_space += 1;
        if self.first_out_of_space.is_none() {
            self.first_out_of_space = Some(what);
        }
    }

    /// Notes a store retired because it could no longer be opened.
    pub fn note_stuck(&mut self, what: String) {
        if self.first_stuck.is_none() {
            self.first_stuck = Some(what);
        }
    }

    /// Whether anything went wrong.
    pub fn failed(&self) -> bool {
        self.failures.sum() > 0 || self.first_failure.is_some()
    }

    /// Adds `o`'s counters; keeps the first failure, out-of-space error and stuck store
    /// (this one's, else `o`'s).
    pub fn add(&mut self, o: &Totals) {
        self.counts.add(&o.counts);
        self.failures.add(&o.failures);
        self.activity.add(&o.activity);
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&o.first_failure);
        }
        if self.first_out_of_space.is_none() {
            self.first_out_of_space.clone_from(&o.first_out_of_space);
        }
        if self.first_stuck.is_none() {
            self.first_stuck.clone_from(&o.first_stuck);
        }
    }

    /// Every counter by name, in the printed order.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut f = vec![("crash_points", self.crash_points())];
        f.extend(self.counts.named());
        f.extend(self.failures.named());
        f.extend(self.activity.named());
        f
    }

    /// The `total name=value` lines, then `result=PASS`, or `result=FAIL` with the first
    /// failure.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for (name, value) in self.fields() {
            out.push_str(&format!("total {name}={value}\n"));
        }
        if let Some(oos) = &self.first_out_of_space {
            out.push_str(&format!("note first_out_of_space: {oos}\n"));
        }
        if let Some(stuck) = &self.first_stuck {
            out.push_str(&format!("note first_stuck_out_of_space: {stuck}\n"));
        }
        if self.failed() {
            out.push_str(&format!(
                "result=FAIL failures={} first: {}\n",
                self.failures.sum(),
                self.first_failure.as_deref().unwrap_or("(not described)")
            ));
        } else {
            out.push_str("result=PASS\n");
        }
        out
    }

    /// One progress line.
    pub fn progress(&self, elapsed_secs: u64) -> String {
        let (c, a) = (&self.counts, &self.activity);
        format!(
            "progress elapsed={elapsed_secs}s crash_points={} kill={} power={} crashpoint={} \
             ops={} acked_writes_checked={} failures={} flushes={} compactions={} \
             gc_victims={} gc_resets={}",
            self.crash_points(),
            c.crash_points_kill,
            c.crash_points_power,
            c.crash_points_crashpoint,
            c.ops,
            c.acked_writes_checked,
            self.failures.sum(),
            a.flushes,
            a.compactions,
            a.gc_victims,
            a.gc_resets
        )
    }
}
