//! Property test: random sequences of appends, syncs and remounts, checked against the
//! reference model. After every remount the state equals the model as of the last sync.

mod common;

use common::{mem_device, small_geometry, Harness, Model};
use proptest::prelude::*;
use zkv_zns::TearMode;
use zkv_zonefs::meta::MetaLog;

#[derive(Clone, Copy, Debug)]
enum Op {
    Append,
    Sync,
    /// Drop the log (unsynced records are lost) and mount again.
    Remount,
    /// Cut the power while idle, then mount.
    PowerCycle,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => Just(Op::Append),
        8 => Just(Op::Sync),
        1 => Just(Op::Remount),
        1 => Just(Op::PowerCycle),
    ]
}

/// Mounts again and continues from the recovered state.
fn remount(h: Harness, seed: u64) -> Harness {
    let synced = h.history[&h.last_ok].clone();
    let (state, log) = MetaLog::recover(h.dev.clone(), h.meta_zones).unwrap();
    assert_eq!(log.mount_report().unwrap().commit, h.last_ok);
    synced.assert_matches(&state);
    Harness::resume(h.dev, log, state, synced, seed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn recovery_returns_the_state_of_the_last_sync(
        seed in any::<u64>(),
        meta_zones in 2u32..=4,
        ops in prop::collection::vec(op(), 1..600),
    ) {
        let (mem, dev) = mem_device(small_geometry());
        let mut h = Harness::format(dev, meta_zones, seed);
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Append => h.append_one(),
                Op::Sync => h.sync().unwrap(),
                Op::Remount => h = remount(h, seed ^ i as u64),
                Op::PowerCycle => {
                    use zkv_zns::FaultControl;
                    mem.power_cut(TearMode::Drop);
                    mem.restart();
                    h = remount(h, seed ^ i as u64);
                }
            }
        }
        h.sync().unwrap();
        let expected: Model = h.work.model.clone();
        let h = remount(h, seed);
        expected.assert_matches(&h.state);
    }
}
