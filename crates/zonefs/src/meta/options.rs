//! The file-system options as the metadata records them.
//!
//! The metadata layer only stores them (in every snapshot, and as an `Options` record when
//! they change) so that they survive remounts and log rolls; the file layer gives them
//! their meaning and checks their values against the device when it mounts with them.

use super::state::{StateError, StateResult};

/// Longest placement policy or cleaning mode name, in bytes. Names are short words; the
/// bound keeps a damaged or hostile record from carrying a large blob.
pub const MAX_OPTION_NAME_LEN: usize = 64;

/// What the file system last ran with: the file layer's options except the metadata zone
/// count, which every superblock records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredOptions {
    /// Data zones kept as over-provisioning.
    pub reserved_zones: u32,
    /// Placement policy name.
    pub placement: String,
    /// Percent of a zone's capacity below which idle active zones are finished.
    pub finish_threshold: Option<u8>,
    /// Zone cleaning starts below this percentage of free usable capacity.
    pub gc_start: u8,
    /// A cleaning run stops at this percentage of free usable capacity.
    pub gc_stop: u8,
    /// Cleaning mode name.
    pub gc_mode: String,
}

impl StoredOptions {
    /// The checks the metadata can make without knowing the file layer: names that are
    /// neither empty nor longer than [`MAX_OPTION_NAME_LEN`].
    pub(crate) fn check(&self) -> StateResult<()> {
        check_name("placement policy", &self.placement)?;
        check_name("cleaning mode", &self.gc_mode)
    }
}

fn check_name(what: &'static str, name: &str) -> StateResult<()> {
    if name.is_empty() || name.len() > MAX_OPTION_NAME_LEN {
        return Err(StateError::BadOptionName {
            what,
            len: name.len(),
            max: MAX_OPTION_NAME_LEN,
        });
    }
    Ok(())
}
