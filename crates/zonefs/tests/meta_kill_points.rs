//! Kill points between the emulator's own storage steps: the metadata log runs on a
//! file-backed image whose storage dies at step N (every N of the workload, several cut
//! positions of the dying write), as a process killed there would leave the image. The
//! image is reopened by a fresh device, and the mount must return the state of a sync point
//! at or after the last acknowledged one. This is the class of crash that once left a zone
//! claiming data it had lost, after which the file system looked unformatted.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use common::{small_geometry, Harness, Model};
use zkv_zns::{FileDevice, ZonedDevice};
use zkv_zonefs::meta::{probe, MetaLog};

const META_ZONES: u32 = 3;
/// Enough syncs to roll through the metadata zones more than once.
const SYNCS: usize = 60;

/// Mounts the formatted image and runs the workload until it ends or the storage dies.
/// Returns the harness (`None` when the kill landed inside the mount) and the storage
/// steps taken.
fn run(path: &Path, budget: u64, seed: u64) -> (Option<Harness>, u64) {
    let dev = Arc::new(FileDevice::open_with_crash_point(path, budget, seed).unwrap());
    let shared: Arc<dyn ZonedDevice> = dev.clone();
    let h = MetaLog::recover(shared.clone(), META_ZONES)
        .ok()
        .map(|(state, log)| {
            let mut h = Harness::resume(shared, log, state, Model::default(), 11);
            let _ = h.run(SYNCS);
            h
        });
    let steps = dev.storage().steps();
    (h, steps)
}

#[test]
fn every_kill_point_of_the_metadata_log_recovers_an_acknowledged_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    {
        let dev: Arc<dyn ZonedDevice> =
            Arc::new(FileDevice::create(&path, small_geometry()).unwrap());
        MetaLog::format(dev, META_ZONES).unwrap();
    }
    let pristine = std::fs::read(&path).unwrap();

    let (h, steps) = run(&path, u64::MAX, 0);
    assert!(h.unwrap().log.stats().rolls >= 3, "the workload must roll");
    let mut points = 0;
    for budget in 0..steps {
        for seed in 0..2 {
            std::fs::write(&path, &pristine).unwrap();
            let (h, _) = run(&path, budget, seed);
            // Killed inside the mount: the formatted (empty) state, batch 0, must survive.
            let (history, last_ok, last_written) = match h {
                Some(h) => (h.history.clone(), h.last_ok, h.last_written()),
                None => (BTreeMap::from([(0, Model::default())]), 0, 0),
            };
            let dev: Arc<dyn ZonedDevice> = Arc::new(FileDevice::open(&path).unwrap());
            probe(dev.as_ref()).unwrap_or_else(|e| panic!("kill at step {budget}: probe: {e}"));
            let (state, log) = MetaLog::recover(dev, META_ZONES)
                .unwrap_or_else(|e| panic!("kill at step {budget}/{seed}: {e}"));
            let commit = log.mount_report().unwrap().commit;
            assert!(
                last_ok <= commit && commit <= last_written,
                "kill at step {budget}: recovered batch {commit}, acknowledged {last_ok}, \
                 written {last_written}"
            );
            history[&commit].assert_matches(&state);
            points += 1;
        }
    }
    assert_eq!(points, 2 * steps);
}
