//! [`DbOptions`]: how [`crate::Db::open`] finds or makes a store, and what it runs with.

use std::sync::Arc;

use zkv_engine::options::Options;
use zkv_zns::Geometry;
use zkv_zonefs::fs::FsOptions;
use zkv_zonefs::placement::PlacementPolicy;

/// Zones of a new image or in-memory device unless [`DbOptions::geometry`] says otherwise.
pub const DEFAULT_ZONES: u32 = 100;

/// Zone size (and capacity) of a new image or in-memory device: 64 MiB, so that the
/// default device holds 6.25 GiB. An image is sparse: it takes room on disk only as its
/// zones are written.
pub const DEFAULT_ZONE_SIZE: u64 = 64 << 20;

/// How [`crate::Db::open`] opens a store. `DbOptions::default()` creates what is missing,
/// cleans zones as the engine's execution mode needs and otherwise uses the defaults of
/// each layer; change fields with struct update syntax:
///
/// ```
/// use zkv::{DbOptions, ExecMode, Options};
///
/// let options = DbOptions {
///     create_if_missing: false,
///     engine: Options { mode: ExecMode::Deterministic, ..Options::default() },
///     ..DbOptions::default()
/// };
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// Create what is missing: a `file:` image that does not exist (with
    /// [`DbOptions::geometry`]), a file system on a device that holds none (with
    /// [`DbOptions::fs`]), a database on a file system that holds none. Off: opening a
    /// store that is not there fails with [`crate::Error::NotFound`]; an in-memory device,
    /// which always starts empty, cannot be opened at all. Default: on.
    ///
    /// It decides for the engine too: `engine.create_if_missing` is ignored.
    pub create_if_missing: bool,

    /// Fail with [`crate::Error::AlreadyExists`] if the device holds a database already,
    /// before anything is written to it. Default: off.
    ///
    /// It decides for the engine too: `engine.error_if_exists` is ignored.
    pub error_if_exists: bool,

    /// The zones of a new `file:` image or of an in-memory device. An existing image and a
    /// zoned block device keep their own. Default: [`DEFAULT_ZONES`] zones of
    /// [`DEFAULT_ZONE_SIZE`], 4 KiB blocks, at most 14 open and 14 active zones.
    pub geometry: Geometry,

    /// The file layer's options for a new file system: metadata and reserved zones,
    /// placement, when zone cleaning starts and stops (`gc_start`, `gc_stop`) and what it
    /// does with valid data. They are recorded on the device: an existing file system is
    /// mounted with the options it records, whatever these say.
    pub fs: FsOptions,

    /// The engine's options (RocksDB's names and defaults), among them the execution mode:
    /// background threads ([`crate::ExecMode::Threaded`], the default) or a repeatable
    /// simulation of them on one thread ([`crate::ExecMode::Deterministic`]).
    pub engine: Options,

    /// Clean zones, so that space the store no longer needs is written again: in threaded
    /// mode a background cleaner thread, in deterministic mode the engine's virtual cleaner
    /// thread (and a writer that finds no free zone cleans before it gives up). Off, a
    /// store fails with "out of space" once every zone has been written once, however
    /// little of it is live. Default: on.
    pub cleaning: bool,

    /// A placement policy given as a value, e.g. one of the program's own: it places every
    /// file instead of the one `fs.placement` names, which becomes its name (recorded on
    /// the device). A store made with such a policy must be opened with it again for
    /// writing; readers (`zkv get`, `scan`, `inspect`) open it without it. The compaction
    /// picker is given the same way, in the engine's options ([`Options::with_picker`]).
    /// Default: none.
    pub placement: Option<Arc<dyn PlacementPolicy>>,

    /// Bytes kept free for recovery on a zoned device: while the store is nearly full of
    /// live data (free space, with what cleaning the full zones could still free, below
    /// this room, the cleaner's empty zone and the memtables' unflushed bytes), a write
    /// that adds data fails with [`crate::Error::Full`] and writes nothing, so that the
    /// store can still open, take deletes and compact them away
    /// ([`crate::Db::compact_range`]). `Some(0)`: none, writes fill the device to the last
    /// block as RocksDB's do, and a store full of live data may then be readable only.
    /// Default (`None`): a quarter of a zone's capacity.
    pub recovery_room: Option<u64>,
}

impl DbOptions {
    /// The geometry of a new device when none is given: see [`DbOptions::geometry`].
    pub fn default_geometry() -> Geometry {
        Geometry::new(DEFAULT_ZONES, DEFAULT_ZONE_SIZE)
    }
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            create_if_missing: true,
            error_if_exists: false,
            geometry: DbOptions::default_geometry(),
            recovery_room: None,
            fs: FsOptions::default(),
            engine: Options::default(),
            cleaning: true,
            placement: None,
        }
    }
}
