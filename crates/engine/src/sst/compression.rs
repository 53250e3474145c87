//! Per-block compression of data blocks (RocksDB's `compression_type`).
//!
//! A block's trailer names how its stored bytes were written, with RocksDB's codes: 0 raw,
//! 1 Snappy, 4 LZ4, 7 Zstandard. Snappy's own format starts with the uncompressed length;
//! LZ4 and Zstandard blocks start with it as a varint32 (RocksDB's compression format 2).
//! As RocksDB does, a block is stored compressed only if that saves at least an eighth of
//! it; otherwise it is stored raw whatever the table's setting, so one table may mix both.
//!
//! Decompression runs only after the block's checksum matched (the checksum covers the
//! stored, compressed bytes), so damage is caught before a decoder sees it; a block that
//! does not decode to exactly the length it announces is corruption all the same.

use std::fmt;

use super::format::{get_varint32, put_varint32, BLOCK_TYPE_RAW};

/// How data blocks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CompressionType {
    /// Blocks are stored as they are.
    #[default]
    None,
    /// Snappy (RocksDB's block type 1).
    Snappy,
    /// LZ4 (RocksDB's block type 4).
    Lz4,
    /// Zstandard at level 3 (RocksDB's block type 7).
    Zstd,
}

/// RocksDB's block type codes.
const BLOCK_TYPE_SNAPPY: u8 = 1;
const BLOCK_TYPE_LZ4: u8 = 4;
const BLOCK_TYPE_ZSTD: u8 = 7;

/// Zstandard's level: the library's default, which RocksDB uses unless told otherwise.
const ZSTD_LEVEL: i32 = 3;

impl CompressionType {
    /// The names `compression_type` takes (db_bench's spellings).
    pub const NAMES: [&'static str; 4] = ["none", "snappy", "lz4", "zstd"];

    /// The type's name, one of [`CompressionType::NAMES`].
    pub fn name(self) -> &'static str {
        match self {
            CompressionType::None => "none",
            CompressionType::Snappy => "snappy",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }

    /// The type named `name` (also `no` for none); `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<CompressionType> {
        Some(match name {
            "none" | "no" => CompressionType::None,
            "snappy" => CompressionType::Snappy,
            "lz4" => CompressionType::Lz4,
            "zstd" => CompressionType::Zstd,
            _ => return None,
        })
    }
}

impl fmt::Display for CompressionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Block `raw` compressed and its block type, if compressing saves an eighth or more;
/// `None`: store `raw` itself (type 0).
pub(crate) fn compress(kind: CompressionType, raw: &[u8]) -> Option<(Vec<u8>, u8)> {
    let (bytes, block_type) = match kind {
        CompressionType::None => return None,
        CompressionType::Snappy => (
            snap::raw::Encoder::new().compress_vec(raw).ok()?,
            BLOCK_TYPE_SNAPPY,
        ),
        CompressionType::Lz4 => (
            with_length(raw, lz4_flex::block::compress(raw)),
            BLOCK_TYPE_LZ4,
        ),
        CompressionType::Zstd => (
            with_length(raw, zstd::bulk::compress(raw, ZSTD_LEVEL).ok()?),
            BLOCK_TYPE_ZSTD,
        ),
    };
    (bytes.len() < raw.len() - raw.len() / 8).then_some((bytes, block_type))
}

/// `compressed` after the varint32 length of `raw`.
fn with_length(raw: &[u8], compressed: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(compressed.len() + 5);
    // A block never reaches 4 GiB (the builder's limits keep it far below).
    put_varint32(&mut out, u32::try_from(raw.len()).unwrap_or(u32::MAX));
    out.extend_from_slice(&compressed);
    out
}

/// The contents of a block stored as `stored` with type `block_type`; the error says what
/// is wrong with it.
pub(crate) fn decompress(block_type: u8, stored: &[u8]) -> Result<Vec<u8>, String> {
    match block_type {
        BLOCK_TYPE_RAW => Ok(stored.to_vec()),
        BLOCK_TYPE_SNAPPY => {
            let len =
                snap::raw::decompress_len(stored).map_err(|e| format!("bad Snappy block: {e}"))?;
            possible(len, stored.len(), SNAPPY_MAX_RATIO, "Snappy")?;
            snap::raw::Decoder::new()
                .decompress_vec(stored)
                .map_err(|e| format!("bad Snappy block: {e}"))
        }
        BLOCK_TYPE_LZ4 => {
            let (len, body) = length_prefix(stored, "LZ4")?;
            possible(len, body.len(), LZ4_MAX_RATIO, "LZ4")?;
            let out = lz4_flex::block::decompress(body, len)
                .map_err(|e| format!("bad LZ4 block: {e}"))?;
            exact(out, len, "LZ4")
        }
        BLOCK_TYPE_ZSTD => {
            let (len, body) = length_prefix(stored, "Zstandard")?;
            possible(len, body.len(), ZSTD_MAX_RATIO, "Zstandard")?;
            // Streamed, so memory grows with what the frame really holds, not with what
            // its length claims.
            let mut out = Vec::new();
            let decoder = zstd::stream::read::Decoder::new(body)
                .map_err(|e| format!("bad Zstandard block: {e}"))?;
            std::io::Read::read_to_end(&mut std::io::Read::take(decoder, len as u64 + 1), &mut out)
                .map_err(|e| format!("bad Zstandard block: {e}"))?;
            exact(out, len, "Zstandard")
        }
        other => Err(format!("unknown block type {other}")),
    }
}

/// The most bytes one stored byte can decode to in each format (Snappy: a 2-byte copy
/// gives at most 64; LZ4: each 0xff length byte adds 255; Zstandard: a 4-byte RLE block
/// gives 128 KiB): a block claiming more is damaged, and is refused before any allocation.
const SNAPPY_MAX_RATIO: usize = 64;
const LZ4_MAX_RATIO: usize = 255;
const ZSTD_MAX_RATIO: usize = 32 * 1024;

fn possible(len: usize, stored: usize, ratio: usize, codec: &str) -> Result<(), String> {
    if len <= stored.saturating_mul(ratio).saturating_add(64) {
        Ok(())
    } else {
        Err(format!(
            "{codec} block of {stored} bytes claims {len} bytes uncompressed"
        ))
    }
}

fn length_prefix<'a>(stored: &'a [u8], codec: &str) -> Result<(usize, &'a [u8]), String> {
    let mut pos = 0;
    let len = get_varint32(stored, &mut pos)
        .ok_or_else(|| format!("{codec} block without its length"))?;
    let body = stored.get(pos..).unwrap_or_default();
    Ok((len as usize, body))
}

fn exact(out: Vec<u8>, len: usize, codec: &str) -> Result<Vec<u8>, String> {
    if out.len() == len {
        Ok(out)
    } else {
        Err(format!(
            "{codec} block decodes to {} bytes, not the {len} it announces",
            out.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CompressionType; 4] = [
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ];

    fn compressible() -> Vec<u8> {
        (0..4096u32).map(|i| (i % 7) as u8).collect()
    }

    #[test]
    fn names_round_trip() {
        for c in ALL {
            assert_eq!(CompressionType::from_name(c.name()), Some(c));
        }
        assert_eq!(CompressionType::NAMES.len(), ALL.len());
        assert_eq!(CompressionType::from_name("zlib"), None);
    }

    #[test]
    fn every_codec_round_trips_and_compresses() {
        let raw = compressible();
        for c in ALL {
            let Some((stored, block_type)) = compress(c, &raw) else {
                assert_eq!(c, CompressionType::None);
                continue;
            };
            assert_ne!(block_type, BLOCK_TYPE_RAW, "{c}");
            assert!(stored.len() < raw.len() / 4, "{c}: {}", stored.len());
            assert_eq!(decompress(block_type, &stored).unwrap(), raw, "{c}");
        }
    }

    #[test]
    fn incompressible_blocks_stay_raw() {
        let mut state = 1u64;
        let raw: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for c in ALL {
            assert_eq!(compress(c, &raw), None, "{c}");
        }
    }

    #[test]
    fn damaged_compressed_blocks_are_errors_not_panics() {
        let raw = compressible();
        for c in &ALL[1..] {
            let (stored, block_type) = compress(*c, &raw).unwrap();
            for cut in [0, 1, stored.len() / 2, stored.len() - 1] {
                let r = decompress(block_type, &stored[..cut]);
                assert!(
                    r.is_err() || r.as_deref() != Ok(&raw[..]),
                    "{c} cut at {cut}"
                );
            }
            for at in (0..stored.len()).step_by(7) {
                let mut bad = stored.clone();
                bad[at] ^= 0x5a;
                // Either an error or other bytes: the checksum, not the codec, is what
                // guarantees detection; the codec must only never panic.
                let _ = decompress(block_type, &bad);
            }
        }
        assert!(decompress(9, b"x")
            .unwrap_err()
            .contains("unknown block type 9"));
    }
}
