//! Byte sizes as the command line writes them: `4096`, `4K`, `4KiB`, `64MiB`, `1.5g`, `2 TiB`.
//!
//! Units are binary (K = KiB = 1024 bytes) and case-insensitive; a number without a unit
//! (or with `B`) is a byte count. Decimal-looking units (`KB`, `MB`, ...) are refused rather
//! than guessed. A fraction is accepted when it gives a whole number of bytes (`1.5K` = 1536).
//!
//! [`parse_size`] and [`parse_positive_size`] plug into clap as value parsers; clap then
//! reports a bad value as `invalid value '3X' for '--zone-size <SIZE>': <reason>`, which names
//! the flag. [`format_size`] writes a size back in the same syntax, exactly (no rounding).

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const TIB: u64 = 1 << 40;

const UNITS: &str = "B, K/KiB, M/MiB, G/GiB or T/TiB";

/// Why a size was refused. The message does not repeat the input: callers (clap) show it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("a size is required (a number of bytes, optionally with a unit: {UNITS})")]
    Empty,
    #[error("the value is missing ('{0}' is a flag, not a size)")]
    MissingValue(String),
    #[error("a size cannot be negative")]
    Negative,
    #[error("not a size: expected a number of bytes, optionally followed by a unit ({UNITS})")]
    Invalid,
    #[error("unknown unit '{0}' (use {UNITS})")]
    UnknownUnit(String),
    #[error("unit '{unit}' is ambiguous: sizes are binary, write {suggest} instead")]
    DecimalUnit { unit: String, suggest: &'static str },
    #[error("not a whole number of bytes")]
    Fractional,
    #[error("too large (the largest size is {} bytes)", u64::MAX)]
    Overflow,
    #[error("must be greater than zero")]
    Zero,
}

fn unit_multiplier(unit: &str) -> Result<u64, SizeError> {
    Ok(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => KIB,
        "m" | "mib" => MIB,
        "g" | "gib" => GIB,
        "t" | "tib" => TIB,
        "kb" => return Err(decimal(unit, "K or KiB")),
        "mb" => return Err(decimal(unit, "M or MiB")),
        "gb" => return Err(decimal(unit, "G or GiB")),
        "tb" => return Err(decimal(unit, "T or TiB")),
        _ => return Err(SizeError::UnknownUnit(unit.to_string())),
    })
}

fn decimal(unit: &str, suggest: &'static str) -> SizeError {
    SizeError::DecimalUnit {
        unit: unit.to_string(),
        suggest,
    }
}

/// Parses a size; zero is allowed (offsets).
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(SizeError::Empty);
    }
    if s.starts_with("--") {
        return Err(SizeError::MissingValue(s.to_string()));
    }
    if s.starts_with('-') {
        return Err(SizeError::Negative);
    }
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(num_end);
    let unit = unit.trim_start();
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if whole.is_empty() || frac.contains('.') || (number.contains('.') && frac.is_empty()) {
        return Err(SizeError::Invalid);
    }
    let mult = unit_multiplier(unit)?;
    // u128 arithmetic: a u64 times a u64 unit cannot overflow it; digits are checked below.
    let parse_digits = |digits: &str| -> Result<u128, SizeError> {
        digits.bytes().try_fold(0u128, |acc, d| {
            acc.checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(d - b'0')))
                .filter(|v| *v <= u128::from(u64::MAX))
                .ok_or(SizeError::Overflow)
        })
    };
    let whole = parse_digits(whole)?;
    let mut bytes = whole * u128::from(mult);
    let frac = frac.trim_end_matches('0');
    if !frac.is_empty() {
        // 19 fraction digits already exceed any exactness a u64 unit can give.
        if frac.len() > 19 {
            return Err(SizeError::Fractional);
        }
        let scale = 10u128.pow(frac.len() as u32);
        let scaled = parse_digits(frac)? * u128::from(mult);
        if scaled % scale != 0 {
            return Err(SizeError::Fractional);
        }
        bytes += scaled / scale;
    }
    u64::try_from(bytes).map_err(|_| SizeError::Overflow)
}

/// Parses a size that must be greater than zero (lengths, zone and block sizes).
pub fn parse_positive_size(input: &str) -> Result<u64, SizeError> {
    match parse_size(input)? {
        0 => Err(SizeError::Zero),
        n => Ok(n),
    }
}

/// Formats a size exactly, in the largest binary unit that divides it: `4 KiB`, `1280 KiB`,
/// `1 GiB`, `512 B`, `0`. The result parses back to the same number.
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0".into();
    }
    for (unit, name) in [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} B")
}

/// Formats a size for people: exactly when a unit divides it into fewer than 1024 of it
/// (`768 KiB`, `4 MiB`, `512 B`), else with one decimal in the largest unit it reaches
/// (`51.8 MiB` for 53,040 KiB). Not for sizes meant to be typed back (offsets): use
/// [`format_size`]; JSON output keeps exact bytes.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    // The largest unit that divides it, as format_size picks.
    let exact = UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit));
    match exact {
        Some((unit, _)) if bytes / unit < 1024 => format_size(bytes),
        None if bytes < KIB => format_size(bytes),
        _ => {
            let (unit, name) = UNITS
                .iter()
                .find(|(unit, _)| bytes >= *unit)
                .unwrap_or(&UNITS[3]);
            // Display only: the f64 rounding of a byte count is far below one decimal.
            #[allow(clippy::cast_precision_loss)]
            let value = bytes as f64 / *unit as f64;
            format!("{value:.1} {name}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people_are_exact_when_short_and_rounded_otherwise() {
        assert_eq!(human_size(0), "0");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(768 * KIB), "768 KiB");
        assert_eq!(human_size(4 * MIB), "4 MiB");
        assert_eq!(human_size(53_040 * KIB), "51.8 MiB");
        assert_eq!(human_size(9984 * KIB), "9.8 MiB");
        assert_eq!(human_size(200_181), "195.5 KiB");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(5 * GIB + 1), "5.0 GiB");
    }

    #[test]
    fn plain_bytes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 4096 "), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("4096 b"), Ok(4096));
        assert_eq!(parse_size("007"), Ok(7));
        assert_eq!(parse_size(&u64::MAX.to_string()), Ok(u64::MAX));
    }

    #[test]
    fn binary_units_any_case() {
        for (s, v) in [
            ("4K", 4 * KIB),
            ("4k", 4 * KIB),
            ("4KiB", 4 * KIB),
            ("4kib", 4 * KIB),
            ("4KIB", 4 * KIB),
            ("64M", 64 * MIB),
            ("64MiB", 64 * MIB),
            ("64 mib", 64 * MIB),
            ("2G", 2 * GIB),
            ("2GiB", 2 * GIB),
            ("3T", 3 * TIB),
            ("3tib", 3 * TIB),
        ] {
            assert_eq!(parse_size(s), Ok(v), "{s}");
        }
    }

    #[test]
    fn exact_fractions() {
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("0.5MiB"), Ok(512 * KIB));
        assert_eq!(parse_size("1.25G"), Ok(GIB + GIB / 4));
        assert_eq!(parse_size("2.0"), Ok(2));
        assert_eq!(parse_size("1.3K"), Err(SizeError::Fractional));
        assert_eq!(parse_size("0.5"), Err(SizeError::Fractional));
        assert_eq!(
            parse_size("1.00000000000000000001K"),
            Err(SizeError::Fractional)
        );
        assert_eq!(parse_size("1.50000000000000000000K"), Ok(1536));
    }

    #[test]
    fn zero_is_refused_where_positive() {
        assert_eq!(parse_positive_size("0"), Err(SizeError::Zero));
        assert_eq!(parse_positive_size("0K"), Err(SizeError::Zero));
        assert_eq!(parse_positive_size("0.0M"), Err(SizeError::Zero));
        assert_eq!(parse_positive_size("1"), Ok(1));
    }

    #[test]
    fn negative_and_flags() {
        assert_eq!(parse_size("-1"), Err(SizeError::Negative));
        assert_eq!(parse_size("-4K"), Err(SizeError::Negative));
        assert_eq!(
            parse_size("--zones"),
            Err(SizeError::MissingValue("--zones".into()))
        );
    }

    #[test]
    fn overflow() {
        assert_eq!(parse_size("18446744073709551616"), Err(SizeError::Overflow));
        assert_eq!(
            parse_size("99999999999999999999999999999999999999999"),
            Err(SizeError::Overflow)
        );
        assert_eq!(parse_size("16777216T"), Err(SizeError::Overflow));
        assert_eq!(parse_size("16777215T"), Ok(16_777_215 * TIB));
        assert_eq!(parse_size("17179869184G"), Err(SizeError::Overflow));
    }

    #[test]
    fn garbage() {
        for s in [
            "abc", "K", "1.2.3K", ".5K", "1.K", "0x10", "+4K", "4 K B", "1e3", "4,096",
        ] {
            assert!(parse_size(s).is_err(), "{s} should be refused");
        }
        assert_eq!(parse_size(""), Err(SizeError::Empty));
        assert_eq!(parse_size("   "), Err(SizeError::Empty));
        assert_eq!(parse_size("12X"), Err(SizeError::UnknownUnit("X".into())));
        assert_eq!(parse_size("1P"), Err(SizeError::UnknownUnit("P".into())));
        assert!(matches!(
            parse_size("4MB"),
            Err(SizeError::DecimalUnit {
                suggest: "M or MiB",
                ..
            })
        ));
        assert!(matches!(
            parse_size("4kb"),
            Err(SizeError::DecimalUnit {
                suggest: "K or KiB",
                ..
            })
        ));
    }

    #[test]
    fn messages_are_readable() {
        assert_eq!(
            SizeError::UnknownUnit("X".into()).to_string(),
            "unknown unit 'X' (use B, K/KiB, M/MiB, G/GiB or T/TiB)"
        );
        assert_eq!(SizeError::Zero.to_string(), "must be greater than zero");
    }

    #[test]
    fn format_is_exact_and_round_trips() {
        assert_eq!(format_size(0), "0");
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(1280 * KIB), "1280 KiB");
        assert_eq!(format_size(MIB), "1 MiB");
        assert_eq!(format_size(62 * MIB), "62 MiB");
        assert_eq!(format_size(3 * GIB), "3 GiB");
        assert_eq!(format_size(2 * TIB), "2 TiB");
        assert_eq!(format_size(1000), "1000 B");
        for v in [
            0,
            1,
            4095,
            4096,
            MIB + 4096,
            7 * GIB,
            u64::MAX,
            16_777_215 * TIB,
        ] {
            assert_eq!(parse_size(&format_size(v)), Ok(v), "{v}");
        }
    }
}
