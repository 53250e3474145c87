//! Little-endian byte codec for the metadata formats.
//!
//! The reader is bounds-checked everywhere: every read states what it reads, and running
//! out of bytes is a typed [`DecodeError`], never a panic. Counts read from the input are
//! checked against the bytes left before anything is allocated, so hostile input cannot
//! make the decoder reserve more memory than the input is long.

/// Why a payload could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends before the value does.
    #[error("truncated {what}: needs {need} bytes, {have} left")]
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Bytes the value needs.
        need: u64,
        /// Bytes left in the input.
        have: u64,
    },

    /// A code byte that stands for nothing this build knows.
    #[error("unknown {what} code {code}")]
    UnknownCode {
        /// What was being decoded.
        what: &'static str,
        /// The byte found.
        code: u8,
    },

    /// A string whose bytes are not UTF-8.
    #[error("{what} is not valid UTF-8")]
    BadUtf8 {
        /// What was being decoded.
        what: &'static str,
    },

    /// Bytes left over after a value that should end its input.
    #[error("{count} unexpected bytes after {what}")]
    TrailingBytes {
        /// What was being decoded.
        what: &'static str,
        /// Bytes left over.
        count: usize,
    },
}

/// The little-endian `u32` at byte `at` of `buf`; `None` if `buf` ends before it does.
pub fn u32_at(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(*buf.get(at..)?.first_chunk()?))
}

/// The little-endian `u64` at byte `at` of `buf`; `None` if `buf` ends before it does.
pub fn u64_at(buf: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(*buf.get(at..)?.first_chunk()?))
}

/// Why a value could not be encoded (a length does not fit its 32-bit field).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A string or list longer than its 32-bit length field can say.
    #[error("{what} is too long to encode ({len} bytes or items)")]
    TooLong {
        /// What was being encoded.
        what: &'static str,
        /// Its length, in bytes or items.
        len: u64,
    },
}

/// Reads values from a byte slice, front to back.
#[derive(Debug)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(buf: &'a [u8]) -> ByteReader<'a> {
        ByteReader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let (out, _) = rest.split_at_checked(n).ok_or(DecodeError::Truncated {
            what,
            need: n as u64,
            have: rest.len() as u64,
        })?;
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A u32 length followed by that many bytes.
    pub fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(what)?;
        self.take(len as usize, what)
    }

    pub fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let raw = self.bytes(what)?;
        let s = std::str::from_utf8(raw).map_err(|_| DecodeError::BadUtf8 { what })?;
        Ok(s.to_owned())
    }

    /// A u32 item count. Each item takes at least `min_item` bytes, so a count that cannot
    /// fit in what is left is rejected before the caller allocates for it.
    pub fn count(&mut self, what: &'static str, min_item: usize) -> Result<usize, DecodeError> {
        let count = self.u32(what)? as usize;
        let need = (count as u64).saturating_mul(min_item as u64);
        if need > self.remaining() as u64 {
            return Err(DecodeError::Truncated {
                what,
                need,
                have: self.remaining() as u64,
            });
        }
        Ok(count)
    }

    /// Fails unless every byte was consumed: a payload with extra bytes is not ours.
    pub fn finish(&self, what: &'static str) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::TrailingBytes { what, count }),
        }
    }
}

pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A length or count as the u32 the format stores.
pub fn put_len(out: &mut Vec<u8>, len: usize, what: &'static str) -> Result<(), EncodeError> {
    let v = u32::try_from(len).map_err(|_| EncodeError::TooLong {
        what,
        len: len as u64,
    })?;
    put_u32(out, v);
    Ok(())
}

/// A u32 length followed by the bytes.
pub fn put_bytes(out: &mut Vec<u8>, v: &[u8], what: &'static str) -> Result<(), EncodeError> {
    put_len(out, v.len(), what)?;
    out.extend_from_slice(v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_written() {
        let mut out = Vec::new();
        put_u8(&mut out, 7);
        put_u32(&mut out, 0xdead_beef);
        put_u64(&mut out, u64::MAX - 1);
        put_bytes(&mut out, "zone".as_bytes(), "name").unwrap();
        let mut r = ByteReader::new(&out);
        assert_eq!(r.u8("a").unwrap(), 7);
        assert_eq!(r.u32("b").unwrap(), 0xdead_beef);
        assert_eq!(r.u64("c").unwrap(), u64::MAX - 1);
        assert_eq!(r.string("d").unwrap(), "zone");
        r.finish("all").unwrap();
    }

    #[test]
    fn out_of_bounds_is_an_error() {
        let mut r = ByteReader::new(&[1, 2, 3]);
        assert!(matches!(r.u32("x"), Err(DecodeError::Truncated { .. })));
        // A failed read consumes nothing.
        assert_eq!(r.remaining(), 3);
        let mut r = ByteReader::new(&[0xff, 0xff, 0xff, 0xff, 1]);
        assert!(r.bytes("x").is_err());
        let mut r = ByteReader::new(&[0xff, 0xff, 0xff, 0x7f]);
        assert!(r.count("items", 1).is_err());
        let mut r = ByteReader::new(&[2, 0, 0, 0, 0xc3, 0x28]);
        assert_eq!(r.string("s"), Err(DecodeError::BadUtf8 { what: "s" }));
        let r = ByteReader::new(&[1]);
        assert!(r.finish("p").is_err());
    }
}
