//! An image shared by one writer and any number of readers: readers open next to the
//! writer, see the image as it was when they opened it, and never get bytes of a zone the
//! writer reset under them (they get `ZnsError::ZoneChanged` instead).

use std::path::Path;

use proptest::prelude::*;
use zkv_zns::{FileDevice, Geometry, IoCategory, TearMode, ZnsError, ZonedDevice};

const ZONE: u64 = 16 * 1024;
const BLOCK: usize = 4096;

fn geo() -> Geometry {
    Geometry::new(4, ZONE)
}

/// The zone's written bytes as `dev` shows them.
fn zone_bytes(dev: &dyn ZonedDevice, zone: u32) -> zkv_zns::Result<Vec<u8>> {
    let info = dev.zone_info(zone)?;
    let mut bytes = vec![0u8; info.written() as usize];
    dev.read(info.start, &mut bytes, IoCategory::User)?;
    Ok(bytes)
}

fn append(dev: &FileDevice, zone: u32, byte: u8, blocks: usize) {
    dev.append(zone, &vec![byte; blocks * BLOCK], IoCategory::User)
        .unwrap();
}

fn new_image(path: &Path) -> FileDevice {
    FileDevice::create(path, geo()).unwrap()
}

#[test]
fn a_reader_opens_next_to_a_writer_and_sees_the_image_as_it_opened_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let writer = new_image(&path);
    append(&writer, 0, 1, 1);
    let reader = FileDevice::open_read_only(&path).unwrap();
    // Two writers still exclude each other.
    assert!(matches!(
        FileDevice::open(&path),
        Err(ZnsError::InUse { .. })
    ));
    append(&writer, 0, 2, 1);
    append(&writer, 1, 3, 1);
    assert_eq!(zone_bytes(&reader, 0).unwrap(), vec![1u8; BLOCK]);
    assert_eq!(zone_bytes(&reader, 1).unwrap(), Vec::<u8>::new());
    // Appends never disturb what a reader knows of.
    assert!(!reader.saw_zone_change());
    let later = FileDevice::open_read_only(&path).unwrap();
    assert_eq!(zone_bytes(&later, 0).unwrap().len(), 2 * BLOCK);
    assert_eq!(zone_bytes(&later, 1).unwrap(), vec![3u8; BLOCK]);
}

#[test]
fn a_zone_reset_and_rewritten_under_a_reader_fails_its_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let writer = new_image(&path);
    append(&writer, 0, 1, 2);
    append(&writer, 1, 5, 1);
    // The reader has read the zone table, not the data yet.
    let reader = FileDevice::open_read_only(&path).unwrap();
    writer.reset_zone(0).unwrap();
    append(&writer, 0, 2, 3);
    let err = zone_bytes(&reader, 0).unwrap_err();
    assert!(
        matches!(err, ZnsError::ZoneChanged { zone: 0, .. }),
        "{err}"
    );
    assert!(err.is_concurrent_change());
    assert!(err
        .to_string()
        .ends_with("zone 0 was reset by a writer while it was read"));
    assert!(reader.saw_zone_change());
    // Zones the writer left alone still read.
    assert_eq!(zone_bytes(&reader, 1).unwrap(), vec![5u8; BLOCK]);
    // Opening again sees the new state.
    let again = FileDevice::open_read_only(&path).unwrap();
    assert_eq!(zone_bytes(&again, 0).unwrap(), vec![2u8; 3 * BLOCK]);
}

#[test]
fn bytes_a_power_cut_dropped_and_rewritten_under_a_reader_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let writer = new_image(&path);
    append(&writer, 0, 1, 1);
    writer.sync().unwrap();
    append(&writer, 0, 2, 1); // not durable
    let reader = FileDevice::open_read_only(&path).unwrap();
    let faults = writer.faults().unwrap();
    faults.power_cut(TearMode::Drop);
    faults.restart();
    append(&writer, 0, 3, 1); // where the dropped block was
    let err = zone_bytes(&reader, 0).unwrap_err();
    assert!(
        matches!(err, ZnsError::ZoneChanged { zone: 0, .. }),
        "{err}"
    );
}

#[test]
fn a_reader_cannot_change_the_image_and_leaves_the_writer_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.img");
    let writer = new_image(&path);
    let reader = FileDevice::open_read_only(&path).unwrap();
    assert!(matches!(
        reader.reset_zone(0),
        Err(ZnsError::ReadOnlyDevice { .. })
    ));
    append(&writer, 0, 7, 1);
    drop(reader);
    drop(writer);
    let reopened = FileDevice::open(&path).unwrap();
    assert_eq!(zone_bytes(&reopened, 0).unwrap(), vec![7u8; BLOCK]);
}

/// What the writer does between a reader's steps.
#[derive(Clone, Debug)]
enum Step {
    Append {
        zone: u32,
        blocks: usize,
    },
    Reset {
        zone: u32,
    },
    Finish {
        zone: u32,
    },
    Sync,
    PowerCut,
    /// A new reader opens.
    Open,
    /// Reader `reader` (modulo the readers open) reads a zone.
    Read {
        reader: usize,
        zone: u32,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let zone = 0..4u32;
    prop_oneof![
        4 => (zone.clone(), 1..3usize).prop_map(|(zone, blocks)| Step::Append { zone, blocks }),
        2 => zone.clone().prop_map(|zone| Step::Reset { zone }),
        1 => zone.clone().prop_map(|zone| Step::Finish { zone }),
        1 => Just(Step::Sync),
        1 => Just(Step::PowerCut),
        2 => Just(Step::Open),
        4 => (any::<usize>(), zone).prop_map(|(reader, zone)| Step::Read { reader, zone }),
    ]
}

/// A reader and what it must see: each zone's bytes when it opened, and whether the writer
/// has dropped bytes of the zone since (only then may its read fail).
struct Reader {
    dev: FileDevice,
    seen: Vec<Vec<u8>>,
    dropped: Vec<bool>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the writer does, a reader's read gives the bytes the zone held when the
    /// reader opened, or `ZoneChanged`, and the latter only if the writer dropped bytes of
    /// that zone in between.
    #[test]
    fn a_reader_gets_the_bytes_it_opened_with_or_a_zone_changed_error(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.img");
        let writer = new_image(&path);
        let mut readers: Vec<Reader> = Vec::new();
        for (n, step) in steps.into_iter().enumerate() {
            let before: Vec<u64> = (0..4).map(|z| writer.zone_info(z).unwrap().written()).collect();
            // Failed commands (a full zone, no open resource) change nothing: ignore them.
            match step {
                Step::Append { zone, blocks } => {
                    let byte = (n % 250) as u8 + 1;
                    let _ = writer.append(zone, &vec![byte; blocks * BLOCK], IoCategory::User);
                }
                Step::Reset { zone } => writer.reset_zone(zone).unwrap(),
                Step::Finish { zone } => {
                    let _ = writer.finish_zone(zone);
                }
                Step::Sync => writer.sync().unwrap(),
                Step::PowerCut => {
                    let faults = writer.faults().unwrap();
                    faults.power_cut(TearMode::Tear { seed: n as u64 });
                    faults.restart();
                }
                Step::Open => {
                    let dev = FileDevice::open_read_only(&path).unwrap();
                    let seen = (0..4).map(|z| zone_bytes(&writer, z).unwrap()).collect();
                    readers.push(Reader { dev, seen, dropped: vec![false; 4] });
                }
                Step::Read { reader, zone } if !readers.is_empty() => {
                    let r = &readers[reader % readers.len()];
                    match zone_bytes(&r.dev, zone) {
                        Ok(bytes) => prop_assert_eq!(&bytes, &r.seen[zone as usize]),
                        Err(ZnsError::ZoneChanged { zone: z, .. }) => {
                            prop_assert_eq!(z, zone);
                            prop_assert!(r.dropped[zone as usize], "zone {zone} did not change");
                        }
                        Err(e) => prop_assert!(false, "unexpected error {e}"),
                    }
                }
                Step::Read { .. } => {}
            }
            for z in 0..4u32 {
                if writer.zone_info(z).unwrap().written() < before[z as usize] {
                    readers.iter_mut().for_each(|r| r.dropped[z as usize] = true);
                }
            }
        }
    }
}
