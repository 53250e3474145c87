//! What the kernel says about the device's queue: the sysfs attributes (zone model, limits,
//! block size, scheduler) and whether the running kernel needs the mq-deadline scheduler.
//! Separate from the device because it is read once, before the device is opened, and its
//! parsing is pure and unit tested.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Result, ZnsError};

/// The zone model in `queue/zoned`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ZonedModel {
    None,
    HostAware,
    HostManaged,
    Other(String),
}

fn parse_zoned_model(s: &str) -> ZonedModel {
    match s.trim() {
        "none" => ZonedModel::None,
        "host-aware" => ZonedModel::HostAware,
        "host-managed" => ZonedModel::HostManaged,
        other => ZonedModel::Other(other.to_string()),
    }
}

/// A decimal number in a sysfs attribute.
fn parse_sysfs_u64(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// The active scheduler in `queue/scheduler` (the bracketed name), e.g.
/// `"[mq-deadline] kyber none"` → `mq-deadline`; `"none"` → `none`.
fn parse_active_scheduler(s: &str) -> Option<String> {
    let s = s.trim();
    if let Some(open) = s.find('[') {
        let rest = &s[open + 1..];
        let close = rest.find(']')?;
        return Some(rest[..close].to_string());
    }
    // A queue with a single choice may print it without brackets.
    let mut words = s.split_whitespace();
    match (words.next(), words.next()) {
        (Some(w), None) => Some(w.to_string()),
        _ => None,
    }
}

/// `(major, minor)` of a kernel release string such as `6.1.0-27-amd64`.
pub(super) fn parse_kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor_digits: String = parts
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor_digits.parse().ok()?))
}

/// Whether zoned writes need the mq-deadline scheduler: before Linux 6.10 (zone write
/// plugging) only mq-deadline keeps the writes of one zone in order once the block layer
/// splits them.
pub(super) fn needs_mq_deadline(version: Option<(u32, u32)>) -> bool {
    match version {
        Some(v) => v < (6, 10),
        None => true,
    }
}

fn read_attr(dir: &Path, name: &str) -> Result<Option<String>> {
    let p = dir.join(name);
    match std::fs::read_to_string(&p) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ZnsError::io(format!("read {}", p.display()), e)),
    }
}

fn read_num_attr(dir: &Path, name: &str) -> Result<Option<u64>> {
    match read_attr(dir, name)? {
        None => Ok(None),
        Some(s) => parse_sysfs_u64(&s).map(Some).ok_or_else(|| {
            ZnsError::Unsupported(format!(
                "{}: unexpected content {:?}",
                dir.join(name).display(),
                s.trim()
            ))
        }),
    }
}

/// What sysfs says about the device's queue.
#[derive(Debug)]
pub(super) struct QueueInfo {
    pub(super) name: String,
    pub(super) model: ZonedModel,
    pub(super) chunk_sectors: Option<u64>,
    pub(super) max_open: u64,
    pub(super) max_active: u64,
    pub(super) logical_block_size: u64,
    pub(super) scheduler: Option<String>,
}

pub(super) fn queue_info(path: &Path, major: u32, minor: u32) -> Result<QueueInfo> {
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if base.join("partition").exists() {
        return Err(ZnsError::Unsupported(format!(
            "{}: is a partition; zoned block devices are used whole (e.g. /dev/nvme0n1)",
            path.display()
        )));
    }
    let queue = base.join("queue");
    if !queue.is_dir() {
        return Err(ZnsError::Unsupported(format!(
            "{}: {} does not exist; is sysfs mounted?",
            path.display(),
            queue.display()
        )));
    }
    let name = std::fs::canonicalize(&base)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major}:{minor}"));
    let model = parse_zoned_model(&read_attr(&queue, "zoned")?.unwrap_or_default());
    let logical_block_size = read_num_attr(&queue, "logical_block_size")?.ok_or_else(|| {
        ZnsError::Unsupported(format!(
            "{}: {}/logical_block_size is missing",
            path.display(),
            queue.display()
        ))
    })?;
    Ok(QueueInfo {
        name,
        model,
        chunk_sectors: read_num_attr(&queue, "chunk_sectors")?,
        max_open: read_num_attr(&queue, "max_open_zones")?.unwrap_or(0),
        max_active: read_num_attr(&queue, "max_active_zones")?.unwrap_or(0),
        logical_block_size,
        scheduler: read_attr(&queue, "scheduler")?.and_then(|s| parse_active_scheduler(&s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_parsing() {
        assert_eq!(parse_zoned_model("host-managed\n"), ZonedModel::HostManaged);
        assert_eq!(parse_zoned_model("host-aware\n"), ZonedModel::HostAware);
        assert_eq!(parse_zoned_model("none\n"), ZonedModel::None);
        assert_eq!(
            parse_zoned_model("weird"),
            ZonedModel::Other("weird".into())
        );
        assert_eq!(parse_sysfs_u64("131072\n"), Some(131072));
        assert_eq!(parse_sysfs_u64(" 14 "), Some(14));
        assert_eq!(parse_sysfs_u64("x"), None);
        assert_eq!(parse_sysfs_u64(""), None);
        assert_eq!(
            parse_active_scheduler("[mq-deadline] kyber bfq none\n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(
            parse_active_scheduler("mq-deadline kyber [none]").as_deref(),
            Some("none")
        );
        assert_eq!(parse_active_scheduler("none\n").as_deref(), Some("none"));
        assert_eq!(parse_active_scheduler("a b"), None);
        assert_eq!(parse_active_scheduler("[broken"), None);
    }

    #[test]
    fn kernel_versions() {
        assert_eq!(parse_kernel_version("6.1.0-27-amd64\n"), Some((6, 1)));
        assert_eq!(parse_kernel_version("6.10.2"), Some((6, 10)));
        assert_eq!(parse_kernel_version("5.15.0+"), Some((5, 15)));
        assert_eq!(parse_kernel_version("6.9-rc1"), Some((6, 9)));
        assert_eq!(parse_kernel_version("garbage"), None);
        assert!(needs_mq_deadline(Some((6, 1))));
        assert!(needs_mq_deadline(Some((6, 9))));
        assert!(!needs_mq_deadline(Some((6, 10))));
        assert!(!needs_mq_deadline(Some((7, 0))));
        assert!(needs_mq_deadline(None));
    }
}
