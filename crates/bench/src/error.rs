//! Typed errors of the workload generators. Every variant names the parameter at fault, so a
//! command line can print one clear line before any work starts.

/// `Result` with the workload generators' [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Why a workload or generator could not be built, or a step of it failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A generator was given `max < min` (or a range whose size overflows 64 bits).
    #[error("empty or overflowing range for {what}: min {min}, max {max}")]
    EmptyRange {
        /// The parameter at fault.
        what: &'static str,
        /// The range's lower bound.
        min: i64,
        /// The range's upper bound (inclusive).
        max: i64,
    },

    /// Gray et al.'s zipfian method needs 0 < theta < 1.
    #[error("zipfian constant must be in (0, 1), got {0}")]
    InvalidTheta(f64),

    /// A fraction or proportion outside its allowed interval, or not a finite number.
    #[error("{what} must be {allowed}, got {value}")]
    InvalidFraction {
        /// The parameter at fault.
        what: &'static str,
        /// The interval it must lie in, in words (`in [0, 1]`).
        allowed: &'static str,
        /// The value given.
        value: f64,
    },

    /// A size or count that must be positive was zero, or one exceeds what the workload
    /// definition can represent.
    #[error("{what} must be in {min}..={max}, got {value}")]
    OutOfRange {
        /// The parameter at fault.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed.
        max: u64,
    },

    /// Every operation proportion is zero: the workload would never do anything.
    #[error("all operation proportions are zero")]
    NoOperations,

    /// A hotspot set that is chosen with positive probability holds no items.
    #[error("hotspot {which} set is empty but chosen with probability {probability}")]
    EmptyHotspotSet {
        /// `hot` or `cold`.
        which: &'static str,
        /// The probability of drawing from it.
        probability: f64,
    },

    /// More than 2^20 inserts were handed out and not yet acknowledged (YCSB's window).
    #[error("too many unacknowledged insertion keys (window of {window}), key {keynum}")]
    TooManyUnacknowledged {
        /// The key acknowledged whose slot of the window is still taken.
        keynum: i64,
        /// The window's size, in keys.
        window: usize,
    },

    /// mixgraph's key ranges cannot be laid out from the two-term exponential's parameters.
    #[error("mixgraph key ranges (keyrange_dist_a .. keyrange_dist_d): {0}")]
    InvalidKeyRanges(&'static str),

    /// A workload name that zkv does not know.
    #[error("unknown workload {0:?} (known: {known})", known = crate::workload::KNOWN_NAMES)]
    UnknownWorkload(String),

    /// A YCSB property zkv does not set, or a value it cannot take.
    #[error("YCSB property {name}={value}: {why}")]
    InvalidProperty {
        /// The property's name.
        name: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: String,
    },

    /// An error of one line of a YCSB workload properties file.
    #[error("line {line}: {source}")]
    AtLine {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong on it.
        source: Box<Error>,
    },

    /// A workload list (`a,b,c`) with an empty element.
    #[error("empty workload name in list {0:?}")]
    EmptyWorkloadList(String),
}

/// `value`, the weight of a kind of operation, must be finite and not negative; otherwise
/// `InvalidFraction` naming `what`.
pub(crate) fn check_weight(what: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidFraction {
            what,
            allowed: "finite and >= 0",
            value,
        })
    }
}

/// `value` must lie in `min..=max`; otherwise `OutOfRange` naming `what`.
pub(crate) fn check_range(what: &'static str, value: u64, min: u64, max: u64) -> Result<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::OutOfRange {
            what,
            value,
            min,
            max,
        })
    }
}
