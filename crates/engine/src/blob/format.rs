//! The bytes of a blob file and of a blob index: file names, the fixed-width header,
//! record header and footer, their checksums, and [`BlobIndex`]. `docs/BLOB.md` describes
//! the format.
//!
//! ```text
//! header   magic u64 | format version u32 | file number u64 | masked CRC32C of bytes 0..20
//! record*  masked CRC32C of the rest | key length u32 | value length u32 | key | value
//! footer   magic u64 | blob count u64 | blob bytes u64 | masked CRC32C of bytes 0..24
//! ```
//!
//! All fixed-width integers are little endian.

use crate::coding::{mask_crc, put_varint64, read_varint, DecodeError};
use crate::{Error, Result};

/// Bytes of the file header.
pub const HEADER_LEN: u64 = 24;

/// Bytes of a record header (checksum, key length, value length).
pub const RECORD_HEADER_LEN: u64 = 12;

/// Bytes of the file footer.
pub const FOOTER_LEN: u64 = 28;

/// The first 8 bytes of every blob file ("ZKVBLOBH" read as a big-endian number).
pub(crate) const HEADER_MAGIC: u64 = 0x5a4b_5642_4c4f_4248;

/// The first 8 bytes of every blob file's footer ("ZKVBLOBF" read as a big-endian number).
pub(crate) const FOOTER_MAGIC: u64 = 0x5a4b_5642_4c4f_4246;

/// The blob file format this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The blob index type of an uncompressed blob without expiration (the only one written).
const INDEX_TYPE_BLOB: u8 = 1;

/// Name of blob file number `number` on the file layer.
pub fn blob_file_name(number: u64) -> String {
    format!("{number:06}.blob")
}

/// The number of a blob file name made by [`blob_file_name`] (any count of digits is taken,
/// as for the other numbered files); `None` for any other name.
pub fn parse_blob_file_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".blob")?;
    let digits = !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| stem.parse().ok()).flatten()
}

/// What one blob counts toward its file's total bytes (the footer's blob bytes) and, once
/// no table references it any more, toward the file's garbage: its record header, key and
/// value, i.e. the bytes the record takes in the file.
pub fn blob_record_bytes(key_len: usize, value_len: usize) -> u64 {
    RECORD_HEADER_LEN + key_len as u64 + value_len as u64
}

/// Where a value lives in a blob file: what a table stores in place of a value that was
/// separated from its key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlobIndex {
    /// The blob file's number.
    pub file: u64,
    /// The offset of the value (not of its record) in the blob file.
    pub offset: u64,
    /// The value's size in bytes.
    pub size: u64,
}

impl BlobIndex {
    /// The encoded index: a type byte (1: an uncompressed blob without expiration), then the
    /// file number, offset and size as varint64s. Other types are left for compression and
    /// expiration.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(31);
        out.push(INDEX_TYPE_BLOB);
        for v in [self.file, self.offset, self.size] {
            put_varint64(&mut out, v);
        }
        out
    }

    /// Decodes an index that fills `bytes` exactly. Corruption for an unknown type, a
    /// malformed varint, trailing bytes, or values no blob file can have (file number 0, a
    /// value inside the file header, a value larger than a record holds, an end past
    /// 2^64).
    pub fn decode(bytes: &[u8]) -> Result<BlobIndex> {
        let bad = |detail: String| Error::corruption("blob index", detail);
        let (&kind, _) = bytes
            .split_first()
            .ok_or_else(|| bad("empty blob index".into()))?;
        if kind != INDEX_TYPE_BLOB {
            return Err(bad(format!("unknown blob index type {kind}")));
        }
        let mut pos = 1;
        let mut field = |name: &str| {
            read_varint(bytes, &mut pos, 64).map_err(|e| match e {
                DecodeError::Truncated => bad(format!("blob index cut short in its {name}")),
                _ => bad(format!("malformed varint for the {name}")),
            })
        };
        let index = BlobIndex {
            file: field("file number")?,
            offset: field("offset")?,
            size: field("size")?,
        };
        if pos != bytes.len() {
            let extra = bytes.len() - pos;
            return Err(bad(format!("{extra} bytes after the blob index")));
        }
        index.check().map_err(bad)?;
        Ok(index)
    }

    /// The values no blob file can have.
    fn check(&self) -> std::result::Result<(), String> {
        if self.file == 0 {
            return Err("blob file number 0 is never used".into());
        }
        if self.offset < HEADER_LEN + RECORD_HEADER_LEN {
            return Err(format!(
                "value offset {} lies inside the file or record header",
                self.offset
            ));
        }
        if self.size > u64::from(u32::MAX) {
            return Err(format!("value size {} exceeds a record's", self.size));
        }
        if self.offset.checked_add(self.size).is_none() {
            return Err(format!(
                "value at offset {} of {} bytes ends past 2^64",
                self.offset, self.size
            ));
        }
        Ok(())
    }
}

/// The u32 LE at `at`; callers pass fixed-size parts with the field inside them.
fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let field = bytes.get(at..).and_then(<[u8]>::first_chunk);
    field.map_or(0, |b| u32::from_le_bytes(*b))
}

/// The u64 LE at `at`; callers pass fixed-size parts with the field inside them.
fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let field = bytes.get(at..).and_then(<[u8]>::first_chunk);
    field.map_or(0, |b| u64::from_le_bytes(*b))
}

/// The masked CRC32C of `parts` one after the other.
fn checksum(parts: &[&[u8]]) -> u32 {
    mask_crc(parts.iter().fold(0, |crc, p| crc32c::crc32c_append(crc, p)))
}

/// Checks the checksum stored in the last 4 bytes of a fixed-width part against the bytes
/// before it; the error text says what is wrong.
fn check_trailing_crc(bytes: &[u8], part: &str) -> std::result::Result<(), String> {
    let Some((covered, stored)) = bytes.split_last_chunk::<4>() else {
        return Err(format!("{part} of {} bytes has no checksum", bytes.len()));
    };
    let stored = u32::from_le_bytes(*stored);
    let actual = checksum(&[covered]);
    if stored != actual {
        return Err(format!(
            "{part} checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
        ));
    }
    Ok(())
}

/// The file header: magic, format version, file number, checksum.
pub(crate) fn encode_header(number: u64) -> [u8; HEADER_LEN as usize] {
    let mut out = [0u8; HEADER_LEN as usize];
    out[..8].copy_from_slice(&HEADER_MAGIC.to_le_bytes());
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..20].copy_from_slice(&number.to_le_bytes());
    let crc = checksum(&[&out[..20]]);
    out[20..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a header and returns the file number it holds; the error text says what is
/// wrong.
pub(crate) fn decode_header(bytes: &[u8; HEADER_LEN as usize]) -> std::result::Result<u64, String> {
    let magic = le_u64(bytes, 0);
    if magic != HEADER_MAGIC {
        return Err(format!(
            "bad magic number {magic:#018x}: not a zkv blob file"
        ));
    }
    check_trailing_crc(bytes, "header")?;
    let version = le_u32(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(format!("unsupported blob file format version {version}"));
    }
    Ok(le_u64(bytes, 12))
}

/// What a footer holds besides its magic and checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub blob_count: u64,
    pub blob_bytes: u64,
}

impl Footer {
    pub fn encode(&self) -> [u8; FOOTER_LEN as usize] {
        let mut out = [0u8; FOOTER_LEN as usize];
        out[..8].copy_from_slice(&FOOTER_MAGIC.to_le_bytes());
        out[8..16].copy_from_slice(&self.blob_count.to_le_bytes());
        out[16..24].copy_from_slice(&self.blob_bytes.to_le_bytes());
        let crc = checksum(&[&out[..24]]);
        out[24..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Checks the magic and checksum; the error text says what is wrong.
    pub fn decode(bytes: &[u8; FOOTER_LEN as usize]) -> std::result::Result<Footer, String> {
        let magic = le_u64(bytes, 0);
        if magic != FOOTER_MAGIC {
            return Err(format!(
                "bad magic number {magic:#018x}: no blob file footer (an unfinished or cut file)"
            ));
        }
        check_trailing_crc(bytes, "footer")?;
        Ok(Footer {
            blob_count: le_u64(bytes, 8),
            blob_bytes: le_u64(bytes, 16),
        })
    }
}

/// The header of one record: the lengths, and the checksum it stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub crc: u32,
    pub key_len: u32,
    pub value_len: u32,
}

impl RecordHeader {
    /// The header of a record holding `key` and `value` (each at most `u32::MAX` bytes:
    /// the caller checked).
    pub fn of(key: &[u8], value: &[u8]) -> [u8; RECORD_HEADER_LEN as usize] {
        let mut out = [0u8; RECORD_HEADER_LEN as usize];
        out[4..8].copy_from_slice(&(key.len() as u32).to_le_bytes());
        out[8..].copy_from_slice(&(value.len() as u32).to_le_bytes());
        let crc = checksum(&[&out[4..], key, value]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// The header in the [`RECORD_HEADER_LEN`] bytes of `bytes`.
    pub fn decode(bytes: &[u8; RECORD_HEADER_LEN as usize]) -> RecordHeader {
        RecordHeader {
            crc: le_u32(bytes, 0),
            key_len: le_u32(bytes, 4),
            value_len: le_u32(bytes, 8),
        }
    }

    /// Bytes of the whole record.
    pub fn record_len(&self) -> u64 {
        blob_record_bytes(self.key_len as usize, self.value_len as usize)
    }

    /// Whether `rest` (the record after its checksum: lengths, key, value) matches the
    /// stored checksum; the error text says what is wrong.
    pub fn check(&self, rest: &[&[u8]]) -> std::result::Result<(), String> {
        let actual = checksum(rest);
        if actual != self.crc {
            return Err(format!(
                "record checksum mismatch (stored {:#010x}, computed {actual:#010x})",
                self.crc
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn file_names() {
        assert_eq!(blob_file_name(12), "000012.blob");
        assert_eq!(blob_file_name(1_234_567), "1234567.blob");
        assert_eq!(parse_blob_file_name("000012.blob"), Some(12));
        assert_eq!(parse_blob_file_name("1234567.blob"), Some(1_234_567));
        for bad in [
            ".blob",
            "000012.sst",
            "00a012.blob",
            "-1.blob",
            "12.blob.tmp",
            "x",
        ] {
            assert_eq!(parse_blob_file_name(bad), None, "{bad}");
        }
        assert_eq!(parse_blob_file_name("99999999999999999999.blob"), None);
    }

    #[test]
    fn record_bytes_count_header_key_and_value() {
        assert_eq!(blob_record_bytes(0, 0), RECORD_HEADER_LEN);
        assert_eq!(blob_record_bytes(3, 10), RECORD_HEADER_LEN + 13);
    }

    #[test]
    fn index_round_trips() {
        for index in [
            BlobIndex {
                file: 1,
                offset: HEADER_LEN + RECORD_HEADER_LEN,
                size: 0,
            },
            BlobIndex {
                file: 12,
                offset: 4096,
                size: 300,
            },
            BlobIndex {
                file: u64::MAX,
                offset: u64::MAX - 7,
                size: 7,
            },
        ] {
            let bytes = index.encode();
            assert_eq!(bytes[0], INDEX_TYPE_BLOB);
            assert_eq!(BlobIndex::decode(&bytes).unwrap(), index);
        }
    }

    fn decode_err(bytes: &[u8]) -> String {
        let err = BlobIndex::decode(bytes).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        err.to_string()
    }

    #[test]
    fn malformed_indexes_are_corruption() {
        let good = BlobIndex {
            file: 5,
            offset: 100,
            size: 20,
        }
        .encode();
        assert!(decode_err(&[]).contains("empty"));
        for kind in [0, 2, 3, 0xff] {
            let mut bytes = good.clone();
            bytes[0] = kind;
            assert!(decode_err(&bytes).contains("unknown blob index type"));
        }
        for cut in 1..good.len() {
            assert!(
                decode_err(&good[..cut]).contains("cut short"),
                "cut at {cut}"
            );
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode_err(&trailing).contains("1 bytes after"));
        let mut overlong = vec![INDEX_TYPE_BLOB];
        overlong.extend_from_slice(&[0xff; 11]);
        assert!(decode_err(&overlong).contains("malformed varint for the file number"));
    }

    #[test]
    fn impossible_index_values_are_corruption() {
        let text = |index: BlobIndex| decode_err(&index.encode());
        assert!(text(BlobIndex {
            file: 0,
            offset: 100,
            size: 1
        })
        .contains("number 0"));
        let inside = BlobIndex {
            file: 1,
            offset: HEADER_LEN + RECORD_HEADER_LEN - 1,
            size: 0,
        };
        assert!(text(inside).contains("inside the file or record header"));
        let big = BlobIndex {
            file: 1,
            offset: 100,
            size: u64::from(u32::MAX) + 1,
        };
        assert!(text(big).contains("exceeds a record's"));
        let past = BlobIndex {
            file: 1,
            offset: u64::MAX,
            size: 1,
        };
        assert!(text(past).contains("past 2^64"));
    }

    #[test]
    fn header_and_footer_round_trip_and_check() {
        let header = encode_header(77);
        assert_eq!(decode_header(&header), Ok(77));
        let mut v2 = header;
        v2[8] = 2;
        let crc = checksum(&[&v2[..20]]);
        v2[20..].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_header(&v2).unwrap_err().contains("version 2"));
        let mut flipped = header;
        flipped[13] ^= 1;
        assert!(decode_header(&flipped).unwrap_err().contains("checksum"));
        flipped[0] ^= 1;
        assert!(decode_header(&flipped).unwrap_err().contains("magic"));

        let footer = Footer {
            blob_count: 3,
            blob_bytes: 99,
        };
        let bytes = footer.encode();
        assert_eq!(Footer::decode(&bytes), Ok(footer));
        let mut flipped = bytes;
        flipped[17] ^= 0x40;
        assert!(Footer::decode(&flipped).unwrap_err().contains("checksum"));
        // A footer is not a header.
        let as_header: [u8; 24] = bytes[..24].try_into().unwrap();
        assert!(decode_header(&as_header).unwrap_err().contains("magic"));
    }

    #[test]
    fn record_header_checksum_covers_lengths_key_and_value() {
        let bytes = RecordHeader::of(b"key", b"value");
        let header = RecordHeader::decode(&bytes);
        assert_eq!((header.key_len, header.value_len), (3, 5));
        assert_eq!(header.record_len(), blob_record_bytes(3, 5));
        header.check(&[&bytes[4..], b"key", b"value"]).unwrap();
        header.check(&[&bytes[4..], b"keyvalue"]).unwrap();
        assert!(header.check(&[&bytes[4..], b"key", b"valuE"]).is_err());
        assert!(header.check(&[&bytes[4..], b"kez", b"value"]).is_err());
        let other = RecordHeader::of(b"keyv", b"alue");
        assert!(header.check(&[&other[4..], b"key", b"value"]).is_err());
    }

    proptest! {
        #[test]
        fn index_decode_of_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(index) = BlobIndex::decode(&bytes) {
                prop_assert_eq!(BlobIndex::decode(&index.encode()).unwrap(), index);
            }
        }

        #[test]
        fn index_decode_of_a_type_byte_and_varints_never_panics(
            values in proptest::collection::vec(any::<u64>(), 0..5),
            tail in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let mut bytes = vec![INDEX_TYPE_BLOB];
            for v in &values {
                put_varint64(&mut bytes, *v);
            }
            bytes.extend_from_slice(&tail);
            let got = BlobIndex::decode(&bytes);
            if values.len() > 3 || (values.len() == 3 && !tail.is_empty()) {
                prop_assert!(got.unwrap_err().is_corruption());
            } else if let (Ok(index), [file, offset, size]) = (got, values.as_slice()) {
                prop_assert_eq!(index, BlobIndex { file: *file, offset: *offset, size: *size });
            }
        }
    }
}
