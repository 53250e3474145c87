//! Crash-safe metadata of the zoned file layer.
//!
//! - [`FsState`]: files (name, kind, size, extents, level, lifetime class), the name
//!   index, per-zone placement metadata and the derived valid bytes per zone.
//! - [`Record`]: the changes of the state and their versioned binary encoding.
//! - [`MetaLog`]: a rolling log of records in the first metadata zones of the device
//!   (superblock + snapshot + batches of delta records per zone), with [`MetaLog::format`],
//!   [`MetaLog::recover`] (and [`MetaLog::recover_read_only`], which never writes),
//!   [`MetaLog::append`] and [`MetaLog::sync`].
//! - [`StoredOptions`]: the file-system options the metadata records.
//! - [`probe`]: the newest superblock of a device, to learn its layout before a mount.
//!
//! The on-disk format and the guarantees are specified in `docs/METADATA.md`.

mod batch;
mod codec;
mod error;
mod index;
mod inspect;
mod log;
mod options;
mod probe;
mod record;
mod recover;
mod scan;
mod state;
mod superblock;

pub use codec::{DecodeError, EncodeError};
pub use error::{MetaError, MetaResult};
pub use index::ExtentMark;
pub use inspect::{dump_zone, FrameInfo, ZoneDump};
pub use log::{MetaLog, MetaLogStats, MountReport, DEFAULT_META_ZONES, MIN_META_ZONES};
pub use options::{StoredOptions, MAX_OPTION_NAME_LEN};
pub use probe::{probe, ProbeInfo};
pub use record::{
    check_frame, decode_frame, encode_frame, Commit, Frame, FrameError, FrameKind, Record,
    FRAME_HEADER_LEN,
};
pub use state::{
    Extent, FileId, FileKind, FileMeta, FsState, Snapshot, StateError, StateResult, ZoneLayout,
    ZonePlacement, MAX_NAME_LEN, MAX_POLICY_LEN,
};
pub use superblock::{
    frames_start, Mismatch, Superblock, SuperblockError, FORMAT_VERSION, MAGIC, MIN_READ_VERSION,
    SUPERBLOCK_LEN,
};
