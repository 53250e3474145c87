//! Many threads on one emulated device: writers each own a zone (as the file layer's write
//! pointer lock guarantees), readers read what was acknowledged, the counters add up.

use std::sync::Arc;
use std::thread;

use zkv_zns::{FileDevice, Geometry, IoCategory, MemDevice, ZoneState, ZonedDevice};

fn hammer(dev: Arc<dyn ZonedDevice>) {
    let geo = dev.geometry();
    let writers = 6u32;
    let blocks = (geo.zone_capacity / 4096) as usize;
    let handles: Vec<_> = (0..writers)
        .map(|z| {
            let dev = Arc::clone(&dev);
            thread::spawn(move || {
                for i in 0..blocks {
                    let block = vec![(z as u8) ^ (i as u8); 4096];
                    let addr = dev.append(z, &block, IoCategory::Flush).unwrap();
                    assert_eq!(addr, geo.zone_start(z) + 4096 * i as u64);
                    // Read back something acknowledged, from a zone another thread writes.
                    let other = (z + 1) % writers;
                    let mut buf = vec![0u8; 4096];
                    dev.read(geo.zone_start(other), &mut buf, IoCategory::User)
                        .unwrap();
                    assert!(buf.iter().all(|&b| b == buf[0]));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for z in 0..writers {
        let info = dev.zone_info(z).unwrap();
        assert_eq!(info.state, ZoneState::Full);
        let mut buf = vec![0u8; geo.zone_capacity as usize];
        dev.read(geo.zone_start(z), &mut buf, IoCategory::User)
            .unwrap();
        for (i, chunk) in buf.chunks(4096).enumerate() {
            assert!(chunk.iter().all(|&b| b == (z as u8) ^ (i as u8)));
        }
    }
    assert_eq!(
        dev.stats().written(IoCategory::Flush),
        u64::from(writers) * geo.zone_capacity
    );
}

fn geo() -> Geometry {
    Geometry::new(8, 256 * 1024).with_limits(8, 8)
}

#[test]
fn concurrent_writers_on_memory() {
    hammer(Arc::new(MemDevice::new(geo()).unwrap()));
}

#[test]
fn concurrent_writers_on_file() {
    let dir = tempfile::tempdir().unwrap();
    hammer(Arc::new(
        FileDevice::create(&dir.path().join("c.img"), geo()).unwrap(),
    ));
}
