//! `--device` on the command line: parsing the spec and opening a device that outlives the
//! command (an image file or a zoned block device), waiting for it (`--wait`) while another
//! process holds it.
//!
//! An image has one writer at a time (an exclusive lock) and any number of readers, which
//! take no lock and may read while a writer works (docs/DEVICE.md, "Sharing an image"). A
//! reader whose read meets a zone the writer reset under it gets an error rather than the
//! writer's new bytes; [`read_device`] then opens the image again and repeats the read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use zkv_zns::{DeviceSpec, FileDevice, Geometry, ZnsError, ZonedDevice};

use super::error::{CliError, CliResult};

/// How often a command waiting for a device tries it again.
const POLL: Duration = Duration::from_millis(50);
/// A reader that a writer disturbed tries this many times before it gives up, pausing
/// `FIRST_PAUSE`, then twice as long each time (at most `LONGEST_PAUSE`); `--wait` lets it
/// go on for longer.
const READ_TRIES: u32 = 5;
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// `--wait SECONDS`, for the commands that open an existing device.
#[derive(Clone, Copy, Debug, Args)]
pub struct WaitArg {
    /// Wait up to SECONDS when another command holds the device (a writer an image, anyone
    /// a zoned block device) instead of failing at once; reads also retry this long while a
    /// writer changes the image under them
    #[arg(long = "wait", value_name = "SECONDS", default_value = "0",
          value_parser = parse_wait)]
    pub wait: Duration,
}

/// `--wait`'s value: seconds, 0 or more, fractions allowed.
fn parse_wait(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| "not a number of seconds".to_string())?;
    if !secs.is_finite() || secs < 0.0 {
        return Err("give 0 or more seconds".to_string());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| "too many seconds".to_string())
}

/// clap value parser for `--device mem|file:PATH|zbd:/dev/DEV`.
pub fn parse_device(s: &str) -> Result<DeviceSpec, ZnsError> {
    s.parse()
}

/// Whether a command changes the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// report, read: an image is opened read-only, so nothing on disk changes, and other
    /// readers and a writer may share it.
    ReadOnly,
    ReadWrite,
}

/// Opens an existing persistent device: `file:PATH` (an image made by `zkv zone create`) or
/// `zbd:/dev/DEV`. `mem` is refused: a fresh in-memory device would vanish with the command.
/// While another process holds the device, tries again until `wait` has passed.
pub fn open_persistent(
    spec: &DeviceSpec,
    access: Access,
    wait: Duration,
) -> CliResult<Arc<dyn ZonedDevice>> {
    if access == Access::ReadOnly {
        return open_reader(spec, wait).map(|r| r.dev);
    }
    match spec {
        DeviceSpec::Mem => Err(refuse_mem()),
        DeviceSpec::File(path) => waiting(wait, || {
            FileDevice::open(path).map(|d| Arc::new(d) as Arc<dyn ZonedDevice>)
        }),
        DeviceSpec::Zbd(_) => waiting(wait, || open_zbd(spec)),
        _ => Err(refuse_unknown(spec)),
    }
}

/// Opens the device read-only and runs `read` on it. A writer may reset a zone under a
/// reader of an image, or keep its zone table changing through the open: what the reader
/// got is then not trusted, and the whole read runs again on a new open, after a short
/// pause, [`READ_TRIES`] times and, with `--wait`, until `wait` has passed. `read` must
/// print nothing: it may run more than once.
pub fn read_device<T>(
    spec: &DeviceSpec,
    wait: Duration,
    mut read: impl FnMut(Arc<dyn ZonedDevice>) -> CliResult<T>,
) -> CliResult<T> {
    let start = Instant::now();
    let mut pause = FIRST_PAUSE;
    let mut tries = 0;
    loop {
        tries += 1;
        match open_reader(spec, wait.saturating_sub(start.elapsed())) {
            Ok(reader) => {
                let done = read(reader.dev);
                // Whatever came out of a read that met a reset zone is not trusted, even a
                // success: a layer above may have taken the failed read for damage.
                if !reader.image.is_some_and(|i| i.saw_zone_change()) {
                    return done;
                }
            }
            Err(CliError::Device(e)) if e.is_concurrent_change() => {}
            Err(e) => return Err(e),
        }
        if tries >= READ_TRIES && start.elapsed() >= wait {
            return Err(CliError::invalid(format!(
                "{spec}: a writer kept changing the image while it was read ({tries} tries in \
                 {:.1} s); run the command again, or add --wait SECONDS to keep trying longer",
                start.elapsed().as_secs_f64()
            )));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// A device opened for reading.
pub struct Reader {
    pub dev: Arc<dyn ZonedDevice>,
    /// For an image, the image itself: it knows whether a writer disturbed a read.
    image: Option<Arc<FileDevice>>,
}

impl Reader {
    /// Whether a writer reset a zone under a read of this device: whatever the reads
    /// gave since the open is then not trusted (the errors they met may be the writer's).
    pub fn disturbed(&self) -> bool {
        self.image.as_ref().is_some_and(|i| i.saw_zone_change())
    }
}

/// Opens the device read-only for a command that cannot simply run again (it writes its
/// output as it reads): it asks [`Reader::disturbed`] at the end and fails with
/// [`disturbed`]'s error if a writer got in the way.
pub fn open_for_reading(spec: &DeviceSpec, wait: Duration) -> CliResult<Reader> {
    open_reader(spec, wait)
}

/// The error of a command whose reads a writer disturbed.
pub fn disturbed(spec: &DeviceSpec, command: &str) -> CliError {
    CliError::invalid(format!(
        "{spec}: a writer changed the image while {command} read it (what was written was \
         removed); stop the writer, or run the command again"
    ))
}

/// Opens the device read-only. A zoned block device is opened as for writing: it has no
/// read-only mode, and every open of it is exclusive.
fn open_reader(spec: &DeviceSpec, wait: Duration) -> CliResult<Reader> {
    match spec {
        DeviceSpec::Mem => Err(refuse_mem()),
        DeviceSpec::File(path) => {
            // Only a version 1 image, which a reader locks, can be in use here.
            let image = Arc::new(waiting(wait, || FileDevice::open_read_only(path))?);
            Ok(Reader {
                dev: Arc::clone(&image) as Arc<dyn ZonedDevice>,
                image: Some(image),
            })
        }
        DeviceSpec::Zbd(_) => Ok(Reader {
            dev: waiting(wait, || open_zbd(spec))?,
            image: None,
        }),
        _ => Err(refuse_unknown(spec)),
    }
}

fn open_zbd(spec: &DeviceSpec) -> Result<Arc<dyn ZonedDevice>, ZnsError> {
    // The geometry argument only shapes `mem` devices; a zoned block device has its own.
    // The backend's errors already say what is missing (not Linux, not a block device, not
    // zoned, no permission).
    let unused = Geometry::new(1, 4096);
    zkv_zns::open_device(spec, unused)
}

/// Runs `open` until it no longer finds the device in use by another process, or until
/// `wait` has passed; then its error says how long it waited.
fn waiting<T>(wait: Duration, mut open: impl FnMut() -> Result<T, ZnsError>) -> CliResult<T> {
    let start = Instant::now();
    loop {
        match open() {
            Err(e @ ZnsError::InUse { .. }) => {
                let waited = start.elapsed();
                if waited >= wait {
                    if wait.is_zero() {
                        return Err(e.into());
                    }
                    return Err(CliError::invalid(format!(
                        "{e} (waited {} s for it)",
                        wait.as_secs_f64()
                    )));
                }
                std::thread::sleep(POLL.min(wait - waited));
            }
            done => return done.map_err(CliError::from),
        }
    }
}

/// The error for a kind of device the device layer names but this command does not know
/// how to open.
pub fn refuse_unknown(spec: &DeviceSpec) -> CliError {
    CliError::invalid(format!(
        "--device {spec}: this kind of device is not supported here"
    ))
}

/// The error for `--device mem` where the device must persist.
pub fn refuse_mem() -> CliError {
    CliError::invalid(
        "--device mem: an in-memory device does not outlive the command, so there is \
         nothing to inspect or change; use --device file:PATH (see 'zkv zone create')",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkv_zns::IoCategory;

    /// An image whose zone 0 holds one block of ones.
    fn image(dir: &std::path::Path) -> DeviceSpec {
        let path = dir.join("z.img");
        let dev = FileDevice::create(&path, Geometry::new(4, 65536)).unwrap();
        dev.append(0, &[1u8; 4096], IoCategory::User).unwrap();
        DeviceSpec::File(path)
    }

    /// Resets zone 0 behind the reader's back and writes it again.
    fn rewrite_zone_0(spec: &DeviceSpec, byte: u8) {
        let DeviceSpec::File(path) = spec else {
            unreachable!()
        };
        let writer = FileDevice::open(path).unwrap();
        writer.reset_zone(0).unwrap();
        writer.append(0, &[byte; 4096], IoCategory::User).unwrap();
    }

    fn read_zone_0(dev: &dyn ZonedDevice) -> CliResult<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        dev.read(0, &mut buf, IoCategory::User)?;
        Ok(buf)
    }

    #[test]
    fn a_read_a_writer_disturbed_runs_again_on_a_new_open() {
        let dir = tempfile::tempdir().unwrap();
        let spec = image(dir.path());
        let mut runs = 0;
        let got = read_device(&spec, Duration::ZERO, |dev| {
            runs += 1;
            if runs == 1 {
                rewrite_zone_0(&spec, 2);
            }
            read_zone_0(dev.as_ref())
        })
        .unwrap();
        assert_eq!((runs, got), (2, vec![2u8; 4096]));
    }

    #[test]
    fn a_writer_that_keeps_changing_the_image_ends_in_one_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let spec = image(dir.path());
        let mut runs = 0;
        let err = read_device(&spec, Duration::ZERO, |dev| {
            runs += 1;
            rewrite_zone_0(&spec, runs as u8);
            read_zone_0(dev.as_ref())
        })
        .unwrap_err();
        assert_eq!(runs, READ_TRIES);
        let msg = err.to_string();
        assert!(
            msg.contains("a writer kept changing the image while it was read (5 tries in"),
            "{msg}"
        );
    }

    #[test]
    fn other_failures_are_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let spec = image(dir.path());
        let mut runs = 0;
        let err = read_device(&spec, Duration::from_secs(5), |_| -> CliResult<()> {
            runs += 1;
            Err(CliError::invalid("no"))
        })
        .unwrap_err();
        assert_eq!((runs, err.to_string()), (1, "no".to_string()));
    }

    #[test]
    fn wait_takes_fractions_of_seconds_and_nothing_negative() {
        assert_eq!(parse_wait("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_wait("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_wait("-1").is_err());
        assert!(parse_wait("NaN").is_err());
        assert!(parse_wait("1e30").is_err());
        assert!(parse_wait("soon").is_err());
    }
}
