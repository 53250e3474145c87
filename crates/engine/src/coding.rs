//! Varints and length-prefixed byte strings, shared by every on-disk format of the engine
//! (write batches, version edits, SST blocks and properties), and the CRC mask of the
//! checksummed ones (SST blocks and footers, log records).
//!
//! Varints are LEB128: 7 bits per byte, low bits first, the top bit set on every byte but the
//! last; at most 10 bytes for 64 bits and 5 for 32 bits (RocksDB's varint64 and varint32).
//! A length-prefixed string is a varint64 length followed by that many bytes. Decoding is
//! strict: a varint cut short, one with more bytes or bits than its width, or a length beyond
//! the input is an error; each format turns it into its own message.

/// Why a value could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends inside a varint.
    Truncated,
    /// The varint has more bytes, or its value more bits, than its width allows.
    Overlong,
    /// A length prefix of `len` bytes with only `left` bytes after it.
    PastEnd {
        /// The length the prefix announces, in bytes.
        len: u64,
        /// The bytes left in the input after the prefix.
        left: usize,
    },
}

/// Masks a CRC so that a CRC computed over data that embeds CRCs stays strong (LevelDB's
/// and RocksDB's rotate-and-add).
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Appends `v` as a LEB128 varint.
pub fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a LEB128 varint.
pub fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, u64::from(v));
}

/// Appends `bytes` with a varint64 length in front.
pub fn put_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Bytes of the varint encoding of `v`.
pub fn varint_len(v: u64) -> u64 {
    u64::from((64 - v.leading_zeros()).max(1).div_ceil(7))
}

/// Decodes a varint whose value must fit `bits` bits (32 or 64) at `*pos`, advancing `*pos`
/// past it.
pub fn read_varint(data: &[u8], pos: &mut usize, bits: u32) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        if shift >= bits {
            return Err(DecodeError::Overlong);
        }
        let byte = *data.get(*pos).ok_or(DecodeError::Truncated)?;
        *pos += 1;
        let part = u64::from(byte & 0x7f);
        if shift > 0 && part >> (bits - shift) != 0 {
            return Err(DecodeError::Overlong);
        }
        value |= part << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// Decodes a varint that must fit 64 bits; `None` if malformed.
pub fn get_varint64(data: &[u8], pos: &mut usize) -> Option<u64> {
    read_varint(data, pos, 64).ok()
}

/// Decodes a varint that must fit 32 bits (at most 5 bytes); `None` if malformed.
pub fn get_varint32(data: &[u8], pos: &mut usize) -> Option<u32> {
    read_varint(data, pos, 32).ok().map(|v| v as u32)
}

/// Decodes a varint64 from the start of `data`: the value and the bytes after it; `None` if
/// malformed.
pub fn get_varint(data: &[u8]) -> Option<(u64, &[u8])> {
    let mut pos = 0;
    let v = get_varint64(data, &mut pos)?;
    Some((v, data.get(pos..)?))
}

/// Decodes a length-prefixed string at `*pos`, advancing `*pos` past it.
pub fn get_length_prefixed<'a>(data: &'a [u8], pos: &mut usize) -> Result<&'a [u8], DecodeError> {
    let len = read_varint(data, pos, 64)?;
    let rest = data.get(*pos..).unwrap_or_default();
    let left = rest.len();
    let fits = usize::try_from(len).ok().and_then(|l| rest.get(..l));
    let Some(bytes) = fits else {
        return Err(DecodeError::PastEnd { len, left });
    };
    *pos += bytes.len();
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VALUES: [u64; 9] = [
        0,
        1,
        127,
        128,
        300,
        u32::MAX as u64,
        u32::MAX as u64 + 1,
        u64::MAX - 1,
        u64::MAX,
    ];

    #[test]
    fn varints_round_trip() {
        for v in VALUES {
            let mut out = Vec::new();
            put_varint64(&mut out, v);
            assert_eq!(out.len() as u64, varint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos, 64), Ok(v), "{v}");
            assert_eq!(pos, out.len());
            let mut pos = 0;
            assert_eq!(get_varint32(&out, &mut pos), u32::try_from(v).ok(), "{v}");
            out.push(0xab);
            assert_eq!(get_varint(&out), Some((v, &[0xab][..])), "{v}");
        }
        let mut out = Vec::new();
        put_varint32(&mut out, u32::MAX);
        assert_eq!(out, [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(u64::MAX), 10);
    }

    #[test]
    fn truncated_varints_are_refused() {
        for v in VALUES.into_iter().filter(|&v| v >= 0x80) {
            let mut out = Vec::new();
            put_varint64(&mut out, v);
            for cut in 0..out.len() {
                let mut pos = 0;
                let got = read_varint(&out[..cut], &mut pos, 64);
                assert_eq!(got, Err(DecodeError::Truncated), "{v} cut at {cut}");
            }
        }
        assert_eq!(get_varint(&[]), None);
        assert_eq!(get_varint(&[0x80; 9]), None);
    }

    #[test]
    fn overlong_varints_are_refused() {
        let overlong = |bytes: &[u8], bits| read_varint(bytes, &mut 0, bits);
        // Eleven bytes, or a tenth byte with bits beyond 64.
        assert_eq!(overlong(&[0xff; 11], 64), Err(DecodeError::Overlong));
        let mut too_big = vec![0x80; 9];
        too_big.push(0x02);
        assert_eq!(overlong(&too_big, 64), Err(DecodeError::Overlong));
        // Six bytes, or a fifth byte with bits beyond 32.
        assert_eq!(overlong(&[0x80; 6], 32), Err(DecodeError::Overlong));
        assert_eq!(
            overlong(&[0x80, 0x80, 0x80, 0x80, 0x10], 32),
            Err(DecodeError::Overlong)
        );
        assert_eq!(get_varint64(&[0xff; 10], &mut 0), None);
        assert_eq!(get_varint32(&[0x80, 0x80, 0x80, 0x80, 0x10], &mut 0), None);
    }

    #[test]
    fn length_prefixed_strings() {
        let mut out = Vec::new();
        put_length_prefixed(&mut out, b"abc");
        put_length_prefixed(&mut out, b"");
        assert_eq!(out, [3, b'a', b'b', b'c', 0]);
        let mut pos = 0;
        assert_eq!(get_length_prefixed(&out, &mut pos), Ok(&b"abc"[..]));
        assert_eq!(get_length_prefixed(&out, &mut pos), Ok(&b""[..]));
        assert_eq!(pos, out.len());
        assert_eq!(
            get_length_prefixed(&out, &mut pos),
            Err(DecodeError::Truncated)
        );
        assert_eq!(
            get_length_prefixed(&out[..3], &mut 0),
            Err(DecodeError::PastEnd { len: 3, left: 2 })
        );
        assert_eq!(
            get_length_prefixed(&[0xff; 11], &mut 0),
            Err(DecodeError::Overlong)
        );
        let mut huge = Vec::new();
        put_varint64(&mut huge, u64::MAX);
        assert_eq!(
            get_length_prefixed(&huge, &mut 0),
            Err(DecodeError::PastEnd {
                len: u64::MAX,
                left: 0
            })
        );
    }

    proptest! {
        #[test]
        fn any_value_round_trips(v in any::<u64>(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut out = Vec::new();
            put_varint64(&mut out, v);
            out.extend_from_slice(&tail);
            prop_assert_eq!(get_varint(&out), Some((v, &tail[..])));
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            for bits in [32, 64] {
                let mut pos = 0;
                if read_varint(&bytes, &mut pos, bits).is_ok() {
                    prop_assert!(pos <= bytes.len() && pos <= 10);
                }
            }
            let _ = get_length_prefixed(&bytes, &mut 0);
        }
    }
}
