//! Low-level encoding shared by the table's parts: varints (from [`crate::coding`]), block
//! handles, the block trailer (type byte + masked CRC32C) and the fixed-size footer. See
//! `docs/SST.md`.

use crate::coding::mask_crc;
pub(crate) use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};

/// Bytes after every block: one type byte and a masked CRC32C of contents + type byte.
pub(crate) const BLOCK_TRAILER_LEN: u64 = 5;

/// Block type byte of an uncompressed block (compressed ones: `compression.rs`).
pub(crate) const BLOCK_TYPE_RAW: u8 = 0;

/// Size of the footer at the end of every table.
pub(crate) const FOOTER_LEN: u64 = 64;

/// The last 8 bytes of every table ("ZKVSST01" read as a big-endian number).
pub(crate) const MAGIC: u64 = 0x5a4b_5653_5354_3031;

/// The table format this code writes and reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The masked CRC32C stored in a block trailer: over the contents, then the type byte.
pub(crate) fn block_checksum(contents: &[u8], block_type: u8) -> u32 {
    mask_crc(crc32c::crc32c_append(
        crc32c::crc32c(contents),
        &[block_type],
    ))
}

/// The masked CRC32C of a footer's first bytes.
fn footer_checksum(bytes: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c(bytes))
}

/// Where a block lies in the file: offset and length of its contents (the trailer follows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle as two varints (offset, size).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    /// Decodes a handle that must fill `data` exactly.
    pub fn decode_exact(data: &[u8]) -> Option<BlockHandle> {
        let mut pos = 0;
        let offset = get_varint64(data, &mut pos)?;
        let size = get_varint64(data, &mut pos)?;
        (pos == data.len()).then_some(BlockHandle { offset, size })
    }

    /// The offset just past the block's trailer; `None` on overflow.
    pub fn end(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN)
    }
}

/// Appends `contents` as an uncompressed block with its trailer; returns its handle.
pub(crate) fn append_block(out: &mut Vec<u8>, contents: &[u8]) -> BlockHandle {
    append_stored_block(out, contents, BLOCK_TYPE_RAW)
}

/// Appends `stored` (a block's bytes as stored: raw or compressed, as `block_type` says)
/// with its trailer; returns its handle.
pub(crate) fn append_stored_block(out: &mut Vec<u8>, stored: &[u8], block_type: u8) -> BlockHandle {
    let handle = BlockHandle {
        offset: out.len() as u64,
        size: stored.len() as u64,
    };
    out.extend_from_slice(stored);
    out.push(block_type);
    out.extend_from_slice(&block_checksum(stored, block_type).to_le_bytes());
    handle
}

/// The footer: handles of the filter, index and properties blocks, the format version, a
/// checksum of all that, and the magic number. Fixed width, so no byte of it is padding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Footer {
    pub filter: BlockHandle,
    pub index: BlockHandle,
    pub props: BlockHandle,
}

const FOOTER_CHECKED_LEN: usize = 52;

/// A block with its trailer: the contents, the block type and the stored checksum; `None`
/// if it is shorter than a trailer.
pub(crate) fn split_trailer(block: &[u8]) -> Option<(&[u8], u8, u32)> {
    let (contents, &[block_type, c0, c1, c2, c3]) = block.split_last_chunk::<5>()?;
    Some((contents, block_type, u32::from_le_bytes([c0, c1, c2, c3])))
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let field = bytes.get(at..).and_then(<[u8]>::first_chunk);
    field.map_or(0, |b| u64::from_le_bytes(*b))
}

/// The u32 LE at `at`; the caller checked that 4 bytes are there.
pub(crate) fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let field = bytes.get(at..).and_then(<[u8]>::first_chunk);
    field.map_or(0, |b| u32::from_le_bytes(*b))
}

impl Footer {
    /// The footer's `FOOTER_LEN` bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN as usize);
        for h in [self.filter, self.index, self.props] {
            out.extend_from_slice(&h.offset.to_le_bytes());
            out.extend_from_slice(&h.size.to_le_bytes());
        }
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = footer_checksum(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out
    }

    /// Decodes and checks a footer; the error text says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Footer, String> {
        if bytes.len() as u64 != FOOTER_LEN {
            return Err(format!("footer of {} bytes", bytes.len()));
        }
        let magic = le_u64(bytes, 56);
        if magic != MAGIC {
            return Err(format!("bad magic number {magic:#018x}: not a zkv table"));
        }
        let stored = le_u32(bytes, FOOTER_CHECKED_LEN);
        let actual = footer_checksum(bytes.get(..FOOTER_CHECKED_LEN).unwrap_or_default());
        if stored != actual {
            return Err(format!(
                "footer checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
            ));
        }
        let version = le_u32(bytes, 48);
        if version != FORMAT_VERSION {
            return Err(format!("unsupported format version {version}"));
        }
        let handle = |at| BlockHandle {
            offset: le_u64(bytes, at),
            size: le_u64(bytes, at + 8),
        };
        Ok(Footer {
            filter: handle(0),
            index: handle(16),
            props: handle(32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overflow() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            let mut pos = 0;
            assert_eq!(get_varint64(&buf, &mut pos), Some(v));
            assert_eq!(pos, buf.len());
            let mut pos = 0;
            let as32 = get_varint32(&buf, &mut pos);
            assert_eq!(as32, u32::try_from(v).ok());
        }
        // Eleven continuation bytes, or a tenth byte with bits beyond 64, are refused.
        let mut pos = 0;
        assert_eq!(get_varint64(&[0xff; 11], &mut pos), None);
        let mut pos = 0;
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        assert_eq!(get_varint64(&too_big, &mut pos), None);
        let mut pos = 0;
        assert_eq!(get_varint32(&[0x80, 0x80], &mut pos), None);
    }

    #[test]
    fn footer_round_trips_and_detects_damage() {
        let f = Footer {
            filter: BlockHandle {
                offset: 10,
                size: 20,
            },
            index: BlockHandle {
                offset: 35,
                size: 7,
            },
            props: BlockHandle {
                offset: 47,
                size: 90,
            },
        };
        let bytes = f.encode();
        assert_eq!(bytes.len() as u64, FOOTER_LEN);
        assert_eq!(Footer::decode(&bytes), Ok(f));
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Footer::decode(&bad).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn handles_decode_exactly() {
        let mut buf = Vec::new();
        BlockHandle {
            offset: 1 << 40,
            size: 4096,
        }
        .encode_to(&mut buf);
        assert_eq!(
            BlockHandle::decode_exact(&buf),
            Some(BlockHandle {
                offset: 1 << 40,
                size: 4096
            })
        );
        buf.push(0);
        assert_eq!(BlockHandle::decode_exact(&buf), None);
        assert_eq!(BlockHandle::decode_exact(&buf[..2]), None);
    }
}
