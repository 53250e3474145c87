//! `zkv put`, `get`, `delete` and `scan`: the database by hand.
//!
//! Each command mounts the file system with the options its metadata records, opens the
//! database, does one thing and closes it. Write commands open the store through the
//! library's front door ([`zkv::Db::open_on`]), in deterministic mode: zones are cleaned
//! as `bench` cleans them in that mode. Writes are synced to the WAL before the command
//! returns. Reads mount the file system read-only and open the database read-only
//! ([`Db::open_read_only`]: the WAL's writes are replayed into memory only): the device is
//! only read, and reads may share an image with other readers and with a writer; they see
//! what the writer had synced when they opened the image.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use serde::Serialize;
use zkv::DbOptions;
use zkv_engine::db::{Db, ReadOptions, WriteOptions};
use zkv_engine::options::{ExecMode, Options, WalRecoveryMode};
use zkv_engine::version::VersionSet;
use zkv_zns::DeviceSpec;
use zkv_zonefs::fs::ZoneFs;

use super::device::{open_persistent, parse_device, read_device, Access, WaitArg};
use super::error::{CliError, CliResult};
use super::fsview::fs_error;
use super::size::human_size;
use super::Out;

const KV_EXAMPLES: &str = "\
Examples:
  zkv put    --device file:/tmp/zns.img user1 alice
  zkv get    --device file:/tmp/zns.img user1
  zkv delete --device file:/tmp/zns.img user1
  zkv compact --device file:/tmp/zns.img   # frees what deletes and overwrites left behind
  zkv scan   --device file:/tmp/zns.img --from user --to userz --limit 10
  zkv put    --device file:/tmp/zns.img --hex 00ff deadbeef
  zkv put    --device file:/tmp/zns.img photo --value-file photo.jpg   # - reads stdin
  zkv get    --device file:/tmp/zns.img photo --raw > copy.jpg

The device must hold a zkv file system ('zkv mkfs'); the first put creates the database.
put and delete are synced before the command returns. get and scan never write the device:
the file system is mounted read-only and the database opened read-only. They may run while
a put or a bench writes the image, and see what it had synced; two writers exclude each
other (--wait SECONDS waits for the other one).

A damaged WAL record makes every command fail with a corruption error (the default
--wal-recovery-mode absolute-consistency). put and delete can open such a database with
another mode, which drops the damaged writes for good; each region dropped is printed on
stderr as a warning.";

#[derive(Debug, Args)]
struct DbDevice {
    /// The device: file:PATH or zbd:/dev/DEV, formatted by 'zkv mkfs'
    #[arg(long, value_name = "DEVICE", value_parser = parse_device)]
    device: DeviceSpec,

    /// Keys and values are hex digits (binary data) instead of UTF-8 text
    #[arg(long)]
    hex: bool,

    #[command(flatten)]
    wait: WaitArg,
}

/// `--wal-recovery-mode`: what opening the database does with a bad WAL record. Shared by
/// the commands that open a database read-write (`put`, `delete`, `bench`).
#[derive(Debug, Args)]
pub struct WalRecoveryArg {
    /// What opening the database does with a damaged WAL record
    ///
    /// absolute-consistency (the default) refuses to open: zkv's file layer never shows a
    /// torn record, so a bad one is damage to an acknowledged write.
    /// tolerate-corrupted-tail-records drops damage that no valid record follows;
    /// point-in-time stops the replay at the first damage (RocksDB's default);
    /// skip-any-corrupted-records skips every bad record. Each region dropped is reported
    /// (put and delete print it on stderr) and lost for good: the open deletes the damaged
    /// WAL once the writes replayed from it are in L0.
    #[arg(long, value_name = "MODE", default_value_t = WalRecoveryMode::AbsoluteConsistency,
          value_parser = wal_recovery_mode_parser())]
    pub wal_recovery_mode: WalRecoveryMode,
}

fn wal_recovery_mode_parser() -> impl TypedValueParser<Value = WalRecoveryMode> {
    PossibleValuesParser::new(WalRecoveryMode::NAMES).try_map(|name| {
        WalRecoveryMode::from_name(&name).ok_or_else(|| format!("unknown mode '{name}'"))
    })
}

/// What a write command opens: the device and how to recover the database's WAL.
#[derive(Debug, Args)]
struct WriteDb {
    #[command(flatten)]
    dev: DbDevice,
    #[command(flatten)]
    recovery: WalRecoveryArg,
}

#[derive(Debug, Args)]
#[command(after_help = KV_EXAMPLES)]
pub struct PutArgs {
    #[command(flatten)]
    db: WriteDb,
    /// The key
    #[arg(allow_hyphen_values = true)]
    key: String,
    /// The value (or --value-file)
    #[arg(allow_hyphen_values = true, required_unless_present = "value_file")]
    value: Option<String>,
    /// Read the value from this file, byte for byte (`-`: standard input), instead of the
    /// command line; for values too large or too binary for an argument
    #[arg(long, value_name = "PATH", conflicts_with = "value")]
    value_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = KV_EXAMPLES)]
pub struct DeleteArgs {
    #[command(flatten)]
    db: WriteDb,
    /// The key
    #[arg(allow_hyphen_values = true)]
    key: String,
}

/// `compact`: a device and an optional key range.
#[derive(Debug, Args)]
#[command(after_help = KV_EXAMPLES)]
pub struct CompactArgs {
    #[command(flatten)]
    db: WriteDb,
    /// First key of the range (inclusive) [default: the first key]
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    from: Option<String>,
    /// Last key of the range (inclusive) [default: the last key]
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    to: Option<String>,
}

/// `get`: a device and one key.
#[derive(Debug, Args)]
#[command(after_help = KV_EXAMPLES)]
pub struct KeyArgs {
    #[command(flatten)]
    dev: DbDevice,
    /// The key
    #[arg(allow_hyphen_values = true)]
    key: String,
    /// Print the value's bytes exactly as stored, with no escaping and no line break after
    /// them (to redirect into a file); --hex still applies to the key
    #[arg(long)]
    raw: bool,
}

#[derive(Debug, Args)]
#[command(after_help = KV_EXAMPLES)]
pub struct ScanArgs {
    #[command(flatten)]
    dev: DbDevice,
    /// First key to list (inclusive)
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    from: Option<String>,
    /// Key to stop before (exclusive)
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    to: Option<String>,
    /// Only the keys that start with PREFIX (combines with --from and --to)
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    prefix: Option<String>,
    /// List in descending key order, from the last key in range
    #[arg(long)]
    reverse: bool,
    /// List at most N keys
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print a JSON list of {key, value} instead of one line per key
    #[arg(long)]
    json: bool,
}

pub fn put(args: PutArgs) -> CliResult {
    let hex = args.db.dev.hex;
    let key = decode(&args.key, hex, "key")?;
    let value = match (&args.value, &args.value_file) {
        (_, Some(path)) => read_value_file(path)?,
        (Some(text), None) => decode(text, hex, "value")?,
        (None, None) => return Err(CliError::invalid("put: give a value or --value-file")),
    };
    let spec = &args.db.dev.device;
    let db = open_for_write(&args.db, true)?;
    let result = db.put_opt(&key, &value, &WriteOptions::synced());
    finish_write(spec, db, result)
}

pub fn delete(args: DeleteArgs) -> CliResult {
    let key = decode(&args.key, args.db.dev.hex, "key")?;
    let spec = &args.db.dev.device;
    let db = open_for_write(&args.db, false)?;
    let result = db.delete_opt(&key, &WriteOptions::synced());
    finish_write(spec, db, result)
}

pub fn compact(args: CompactArgs) -> CliResult {
    let hex = args.db.dev.hex;
    let bound = |k: &Option<String>, what| k.as_ref().map(|k| decode(k, hex, what)).transpose();
    let (from, to) = (bound(&args.from, "--from")?, bound(&args.to, "--to")?);
    let spec = &args.db.dev.device;
    let db = open_for_write(&args.db, false)?;
    let before = table_bytes(&db);
    let result = db.compact_range(from.as_deref(), to.as_deref());
    if result.is_ok() {
        println!(
            "{spec}: compacted; tables {} -> {}",
            human_size(before),
            human_size(table_bytes(&db))
        );
    }
    finish_write(spec, db, result)
}

/// The bytes of the database's tables.
fn table_bytes(db: &zkv::Db) -> u64 {
    db.engine().live_files().iter().map(|(_, f)| f.size).sum()
}

pub fn get(args: KeyArgs) -> CliResult {
    let key = decode(&args.key, args.dev.hex, "key")?;
    let spec = &args.dev.device;
    let found = read_db(spec, args.dev.wait.wait, |db| {
        db.get(&ReadOptions::default(), &key)
            .map_err(|e| db_error(spec, e))
    })?;
    let Some(value) = found else {
        return Err(CliError::invalid(format!(
            "key {} not found on {spec}",
            quoted(&key, args.dev.hex)
        )));
    };
    if args.raw {
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(&value)
            .and_then(|()| stdout.flush())
            .map_err(CliError::Output);
    }
    let mut out = Out::new();
    out.line(show(&value, args.dev.hex))?;
    out.flush()
}

/// `put --value-file`: the file's bytes, or standard input's for `-`.
fn read_value_file(path: &Path) -> CliResult<Vec<u8>> {
    let read = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map(|_| bytes)
    } else {
        std::fs::read(path)
    };
    read.map_err(|e| CliError::invalid(format!("--value-file {}: {e}", path.display())))
}

pub fn scan(args: ScanArgs) -> CliResult {
    let hex = args.dev.hex;
    let bound = |b: &Option<String>, what| b.as_deref().map(|s| decode(s, hex, what)).transpose();
    let opts = scan_bounds(
        bound(&args.from, "--from key")?,
        bound(&args.to, "--to key")?,
        bound(&args.prefix, "--prefix")?,
    );
    let spec = &args.dev.device;
    let limit = args.limit.unwrap_or(usize::MAX);
    let entries = read_db(spec, args.dev.wait.wait, |db| {
        collect(db, &opts, limit, args.reverse).map_err(|e| db_error(spec, e))
    })?;
    let mut out = Out::new();
    if args.json {
        print_json(&entries, hex, &mut out)?;
    } else {
        for (k, v) in &entries {
            out.line(format!("{}\t{}", show(k, hex), show(v, hex)))?;
        }
    }
    out.flush()
}

/// The read's bounds: `[from, to)` narrowed to the keys that start with `prefix`.
fn scan_bounds(
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
    prefix: Option<Vec<u8>>,
) -> ReadOptions<'static> {
    let Some(prefix) = prefix else {
        return ReadOptions {
            lower_bound: from,
            upper_bound: to,
            ..ReadOptions::default()
        };
    };
    let by_prefix = ReadOptions::default().prefix(&prefix);
    ReadOptions {
        lower_bound: [from, by_prefix.lower_bound].into_iter().flatten().max(),
        upper_bound: [to, by_prefix.upper_bound].into_iter().flatten().min(),
        ..ReadOptions::default()
    }
}

/// The first `limit` entries within the read's bounds, in key order (descending when
/// `reverse`).
fn collect(
    db: &Db,
    opts: &ReadOptions<'_>,
    limit: usize,
    reverse: bool,
) -> zkv_engine::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut entries = Vec::new();
    if limit == 0 {
        return Ok(entries);
    }
    let mut it = db.iter(opts)?;
    match reverse {
        false => it.seek_to_first()?,
        true => it.seek_to_last()?,
    }
    while it.valid() && entries.len() < limit {
        entries.push((it.key().to_vec(), it.value().to_vec()));
        match reverse {
            false => it.next()?,
            true => it.prev()?,
        }
    }
    Ok(entries)
}

#[derive(Serialize)]
struct EntryJson {
    key: String,
    value: String,
}

/// JSON strings must be text: without `--hex`, a key or value that is not UTF-8 is refused
/// (before anything is printed) rather than shown with replacement characters.
fn print_json(entries: &[(Vec<u8>, Vec<u8>)], hex: bool, out: &mut Out) -> CliResult {
    let field = |bytes: &[u8], what: &str| -> CliResult<String> {
        if hex {
            return Ok(to_hex(bytes));
        }
        String::from_utf8(bytes.to_vec()).map_err(|_| {
            CliError::invalid(format!(
                "{what} {} is not UTF-8 text and cannot be a JSON string; add --hex",
                quoted(bytes, false)
            ))
        })
    };
    let list = entries
        .iter()
        .map(|(k, v)| {
            Ok(EntryJson {
                key: field(k, "key")?,
                value: field(v, &format!("the value of key {}", quoted(k, false)))?,
            })
        })
        .collect::<CliResult<Vec<_>>>()?;
    out.json(&list)
}

// ---------------------------------------------------------------------------------------
// Opening and closing

/// The options every command opens the database with: RocksDB's defaults, background work
/// inline (one short command gains nothing from threads, and the result is repeatable).
pub(crate) fn base_options() -> Options {
    Options {
        mode: ExecMode::Deterministic,
        ..Options::default()
    }
}

/// Mounts the device read-write and opens the store with the WAL recovery mode asked
/// for, zone cleaning on; `create`: create the database if the file system holds none.
/// Every WAL region the recovery did not replay is printed on stderr as a warning.
fn open_for_write(args: &WriteDb, create: bool) -> CliResult<zkv::Db> {
    let spec = &args.dev.device;
    let dev = open_persistent(spec, Access::ReadWrite, args.dev.wait.wait)?;
    let fs = mount(spec, dev)?;
    let options = DbOptions {
        create_if_missing: create,
        engine: Options {
            wal_recovery_mode: args.recovery.wal_recovery_mode,
            ..base_options()
        },
        ..DbOptions::default()
    };
    let db = zkv::Db::open_on(fs, options).map_err(|e| store_error(spec, e))?;
    for region in &db.engine().recovery().dropped {
        super::warn(format_args!("{spec}: {region}"));
    }
    Ok(db)
}

/// Opens the database read-only, runs `read` on it and closes it; fails if the file
/// system holds none. Runs again on a new open when a writer changed the image under it
/// ([`read_device`]).
fn read_db<T>(
    spec: &DeviceSpec,
    wait: Duration,
    read: impl Fn(&Db) -> CliResult<T>,
) -> CliResult<T> {
    read_device(spec, wait, |dev| {
        let db = open_read_only(spec, dev)?.ok_or_else(|| no_database(spec))?;
        let found = read(&db)?;
        close(spec, db)?;
        Ok(found)
    })
}

/// Mounts the file system on `dev` (opened read-only, see [`read_device`]) read-only and
/// opens the database read-only with the options `put` uses: nothing is written. `None`
/// if the file system holds no database.
pub fn open_read_only(
    spec: &DeviceSpec,
    dev: Arc<dyn zkv_zns::ZonedDevice>,
) -> CliResult<Option<Db>> {
    let fs = ZoneFs::mount_read_only(dev).map_err(|e| fs_error(&spec.to_string(), e))?;
    if !VersionSet::exists(&fs) {
        return Ok(None);
    }
    let db = Db::open_read_only(Arc::new(fs), base_options()).map_err(|e| db_error(spec, e))?;
    Ok(Some(db))
}

fn mount(spec: &DeviceSpec, dev: Arc<dyn zkv_zns::ZonedDevice>) -> CliResult<Arc<ZoneFs>> {
    let fs = ZoneFs::mount_stored(dev).map_err(|e| fs_error(&spec.to_string(), e))?;
    Ok(Arc::new(fs))
}

/// Ends a write command: the write's own error first, then closing (which waits for the
/// background work the write started, syncs the WAL and then the device, so that the file
/// system's metadata is on disk too when the command returns).
fn finish_write(spec: &DeviceSpec, db: zkv::Db, result: zkv::Result<()>) -> CliResult {
    if let Err(e) = result {
        // The write failed: closing may fail for the same reason, and says less.
        let _ = db.close();
        return Err(store_error(spec, e));
    }
    db.close().map_err(|e| store_error(spec, e))
}

fn close(spec: &DeviceSpec, db: Db) -> CliResult {
    db.close().map_err(|e| db_error(spec, e))
}

/// An engine error, with the device it happened on.
pub fn db_error(spec: &DeviceSpec, e: zkv_engine::Error) -> CliError {
    CliError::invalid(format!("{spec}: {e}"))
}

/// An error of the store opened through the library; its message names the device.
fn store_error(spec: &DeviceSpec, e: zkv::Error) -> CliError {
    match e {
        zkv::Error::NotFound { .. } => no_database(spec),
        e => CliError::invalid(e.to_string()),
    }
}

/// The error for a file system without a database.
pub fn no_database(spec: &DeviceSpec) -> CliError {
    CliError::invalid(format!("no zkv database on {spec} ('zkv put' creates one)"))
}

// ---------------------------------------------------------------------------------------
// Keys and values on the command line

/// The bytes of a key or value given as text, or as hex digits with `--hex`.
fn decode(text: &str, hex: bool, what: &str) -> CliResult<Vec<u8>> {
    if !hex {
        return Ok(text.as_bytes().to_vec());
    }
    from_hex(text).map_err(|why| CliError::invalid(format!("--hex {what} '{text}': {why}")))
}

fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "odd number of hex digits ({}); each byte takes two",
            digits.len()
        ));
    }
    let digit = |c: u8| {
        (c as char)
            .to_digit(16)
            .ok_or_else(|| format!("'{}' is not a hex digit", c.escape_ascii()))
    };
    digits
        .chunks(2)
        .map(|pair| Ok((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a key or value is printed: hex digits, or text with tabs, line breaks, backslashes,
/// other control characters and bytes that are not UTF-8 escaped, so that every entry of
/// `scan` stays one line with one tab.
fn show(bytes: &[u8], hex: bool) -> String {
    if hex {
        return to_hex(bytes);
    }
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '\t' => s.push_str("\\t"),
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                c if c.is_control() => s.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

/// A key in a message: `'text'` (escaped as printed), or hex digits with `--hex`.
pub(crate) fn quoted(bytes: &[u8], hex: bool) -> String {
    if hex {
        format!("0x{}", to_hex(bytes))
    } else {
        format!("'{}'", show(bytes, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_bad_digits() {
        assert_eq!(from_hex("00fFa1").unwrap(), vec![0, 0xff, 0xa1]);
        assert_eq!(from_hex("").unwrap(), Vec::<u8>::new());
        assert_eq!(to_hex(&[0, 0xff, 0xa1]), "00ffa1");
        assert!(from_hex("abc").unwrap_err().contains("odd number"));
        assert!(from_hex("zz")
            .unwrap_err()
            .contains("'z' is not a hex digit"));
        assert!(from_hex("é0").is_err());
    }

    #[test]
    fn text_is_shown_on_one_line() {
        assert_eq!(show(b"plain text", false), "plain text");
        assert_eq!(show(b"a\tb\nc\\", false), "a\\tb\\nc\\\\");
        assert_eq!(show(b"\x00ok\xff", false), "\\u{0}ok\\xff");
        assert_eq!(show("é".as_bytes(), false), "é");
        assert_eq!(show(b"\x01", true), "01");
    }
}
