//! The NAND timing model attached to emulated devices.

use std::time::Instant;

use zkv_zns::timing::{TimingModel, TimingPreset};
use zkv_zns::{FileDevice, Geometry, IoCategory, MemDevice, ZonedDevice};

const MIB: u64 = 1024 * 1024;

fn geometry() -> Geometry {
    Geometry::new(8, 64 * MIB)
}

#[test]
fn device_reports_modeled_time_after_writes() -> zkv_zns::Result<()> {
    let geo = geometry();
    let p = TimingPreset::Zn540.params().expect("zn540 has parameters");
    let dev = MemDevice::new(geo)?.with_timing(TimingModel::new(TimingPreset::Zn540, &geo));
    let data = vec![0xa5u8; MIB as usize];
    for _ in 0..8 {
        dev.append(0, &data, IoCategory::Flush)?;
    }
    dev.append(1, &data, IoCategory::Compaction)?;

    let r = dev.timing().expect("a timing model is attached");
    assert_eq!(r.preset, "zn540");
    let units = 8 * MIB / p.program_unit;
    assert_eq!(r.by_category.flush.ios, 8);
    assert_eq!(r.by_category.flush.bytes, 8 * MIB);
    assert_eq!(r.by_category.flush.program_busy_ns, units * p.program_ns);
    assert_eq!(r.by_category.compaction.bytes, MIB);
    assert_eq!(r.pages_programmed, units + MIB / p.program_unit);
    // 9 MiB over 32 dies: at least 9 rounds of programs.
    assert!(r.elapsed_ns >= 9 * p.program_ns, "elapsed {}", r.elapsed_ns);
    assert!(r.busy_ns > 0 && r.utilization() > 0.0);

    let mut buf = vec![0u8; MIB as usize];
    dev.read(0, &mut buf, IoCategory::User)?;
    assert_eq!(buf, data);
    dev.reset_zone(1)?;
    let r = dev.timing().expect("a timing model is attached");
    assert_eq!(
        r.by_category.user.read_busy_ns,
        MIB / p.read_unit * p.read_ns
    );
    assert_eq!(r.resets, 1);
    assert_eq!(r.by_kind.reset_ns, u64::from(p.dies_per_zone) * p.erase_ns);
    assert!(r.elapsed_ns >= r.background_clock_ns);
    Ok(())
}

#[test]
fn no_model_no_report() -> zkv_zns::Result<()> {
    let geo = geometry();
    assert!(TimingPreset::None.model(&geo).is_none());
    let dev = MemDevice::new(geo)?;
    dev.append(0, &[1u8; 4096], IoCategory::User)?;
    assert!(dev.timing().is_none());
    Ok(())
}

#[test]
fn same_commands_same_report() -> zkv_zns::Result<()> {
    let run = || -> zkv_zns::Result<_> {
        let geo = geometry();
        let dev = MemDevice::new(geo)?.with_timing(TimingModel::new(TimingPreset::Confzns, &geo));
        for i in 0..64u32 {
            let cat = IoCategory::ALL[i as usize % IoCategory::ALL.len()];
            dev.append(i % 4, &vec![i as u8; 4096 * (1 + i as usize % 7)], cat)?;
        }
        dev.finish_zone(3)?;
        dev.reset_zone(3)?;
        let mut buf = vec![0u8; 64 * 1024];
        dev.read(0, &mut buf, IoCategory::User)?;
        Ok(dev.timing())
    };
    let a = run()?;
    assert!(a.as_ref().is_some_and(|r| r.elapsed_ns > 0));
    assert_eq!(a, run()?);
    Ok(())
}

#[test]
fn data_present_at_open_costs_reads_and_erases() -> zkv_zns::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("zns.img");
    let geo = Geometry::new(4, 4 * MIB);
    {
        let dev = FileDevice::create(&path, geo)?;
        dev.append(0, &vec![7u8; MIB as usize], IoCategory::Flush)?;
        dev.sync()?;
    }
    let dev = FileDevice::open(&path)?.with_timing(TimingModel::new(TimingPreset::Zn540, &geo));
    let mut buf = vec![0u8; MIB as usize];
    dev.read(0, &mut buf, IoCategory::User)?;
    dev.reset_zone(0)?;
    let r = dev.timing().expect("a timing model is attached");
    assert!(r.by_category.user.read_busy_ns > 0);
    assert!(r.by_kind.reset_ns > 0);
    Ok(())
}

#[test]
fn realtime_model_sleeps_for_the_modeled_latency() -> zkv_zns::Result<()> {
    let geo = geometry();
    let p = TimingPreset::Zn540.params().expect("zn540 has parameters");
    let model = TimingModel::new(TimingPreset::Zn540, &geo).with_realtime(true);
    assert!(model.realtime());
    let dev = MemDevice::new(geo)?.with_timing(model);
    let start = Instant::now();
    dev.append(0, &vec![1u8; p.program_unit as usize], IoCategory::Wal)?;
    let mut buf = vec![0u8; p.read_unit as usize];
    dev.read(0, &mut buf, IoCategory::Wal)?; // waits for the program, then reads
    dev.reset_zone(0)?; // one erase
    let modeled = dev.timing().expect("a timing model is attached").elapsed_ns;
    assert!(modeled >= p.program_ns + p.read_ns + p.erase_ns);
    assert!(
        start.elapsed().as_nanos() >= u128::from(p.program_ns + p.erase_ns),
        "slept {:?}, modeled {modeled} ns",
        start.elapsed()
    );
    Ok(())
}
