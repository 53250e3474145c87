//! The superblock that opens every metadata zone: what the zone is, which device it was
//! written for, and its generation (sequence) number.
//!
//! Layout (64 bytes, little endian; fixed across format versions so that any version can
//! at least be recognised and refused cleanly):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8 | magic `ZKVMETA\0` |
//! | 8  | 4 | format version |
//! | 12 | 4 | device block size |
//! | 16 | 8 | zone size |
//! | 24 | 8 | zone capacity |
//! | 32 | 4 | device zone count |
//! | 36 | 4 | metadata zone count |
//! | 40 | 4 | this zone's number |
//! | 44 | 4 | reserved (0) |
//! | 48 | 8 | sequence number |
//! | 56 | 4 | reserved (0) |
//! | 60 | 4 | CRC32C of bytes 0..60 |

use zkv_zns::Geometry;

use super::codec::{u32_at, u64_at};

/// The first 8 bytes of every superblock.
pub const MAGIC: [u8; 8] = *b"ZKVMETA\0";
/// The format this build writes. Version 2 added the file-system options (the `Options`
/// record and the options of the snapshot); version 3 keeps two copies of everything: the
/// superblock in blocks 0 and 1 of the zone, every batch twice, back to back, so that one
/// damaged block never makes the file system unmountable. Version 1 images are refused with
/// a request to reformat (there is no converter).
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format this build reads. A read-write mount of a version 2 generation rolls
/// to a new generation, written in the current format.
pub const MIN_READ_VERSION: u32 = 2;
/// Bytes of an encoded superblock.
pub const SUPERBLOCK_LEN: usize = 64;
const CRC_AT: usize = SUPERBLOCK_LEN - 4;

/// Where the first frame (the snapshot) of a zone written in format `version` starts:
/// right after the superblock up to version 2, after the superblock's two blocks since.
pub fn frames_start(version: u32, block: usize) -> usize {
    if version >= 3 {
        2 * block
    } else {
        SUPERBLOCK_LEN
    }
}

/// A decoded superblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// The metadata format version of the zone.
    pub version: u32,
    /// The device's block size, in bytes.
    pub block_size: u32,
    /// The device's zone size, in bytes.
    pub zone_size: u64,
    /// The device's zone capacity, in bytes.
    pub zone_capacity: u64,
    /// Zones of the device.
    pub zones: u32,
    /// Metadata zones of the layout.
    pub meta_zones: u32,
    /// The metadata zone this superblock heads.
    pub zone: u32,
    /// The generation's sequence number (1 after format, +1 per roll).
    pub seq: u64,
}

/// Why the first bytes of a zone are not a usable superblock.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SuperblockError {
    /// The bytes do not start with [`MAGIC`] (an empty or foreign zone).
    #[error("no superblock (magic missing)")]
    NoMagic,

    /// The stored checksum does not match the bytes.
    #[error("superblock checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The CRC32C recorded.
        stored: u32,
        /// The CRC32C of the bytes read.
        computed: u32,
    },

    /// Fewer bytes than [`SUPERBLOCK_LEN`].
    #[error("superblock truncated ({have} bytes)")]
    Truncated {
        /// Bytes there are.
        have: usize,
    },
}

/// A field of the superblock that disagrees with the device (or the requested layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The field's name.
    pub field: &'static str,
    /// The value the superblock records.
    pub on_disk: u64,
    /// The value of the device or layout.
    pub expected: u64,
}

impl Superblock {
    /// The superblock of metadata zone `zone`, generation `seq`, for this device.
    pub fn new(geo: &Geometry, meta_zones: u32, zone: u32, seq: u64) -> Superblock {
        Superblock {
            version: FORMAT_VERSION,
            block_size: geo.block_size,
            zone_size: geo.zone_size,
            zone_capacity: geo.zone_capacity,
            zones: geo.zones,
            meta_zones,
            zone,
            seq,
        }
    }

    /// The superblock's bytes, checksum included.
    pub fn encode(&self) -> [u8; SUPERBLOCK_LEN] {
        let mut out = [0u8; SUPERBLOCK_LEN];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[12..16].copy_from_slice(&self.block_size.to_le_bytes());
        out[16..24].copy_from_slice(&self.zone_size.to_le_bytes());
        out[24..32].copy_from_slice(&self.zone_capacity.to_le_bytes());
        out[32..36].copy_from_slice(&self.zones.to_le_bytes());
        out[36..40].copy_from_slice(&self.meta_zones.to_le_bytes());
        out[40..44].copy_from_slice(&self.zone.to_le_bytes());
        out[48..56].copy_from_slice(&self.seq.to_le_bytes());
        let crc = crc32c::crc32c(&out[..CRC_AT]);
        out[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the superblock at the start of `buf`. The version is returned as found;
    /// the caller decides whether it can read it.
    pub fn decode(buf: &[u8]) -> Result<Superblock, SuperblockError> {
        let truncated = SuperblockError::Truncated { have: buf.len() };
        let raw = buf.get(..SUPERBLOCK_LEN).ok_or(truncated.clone())?;
        let u32_field = |at| u32_at(raw, at).ok_or(truncated.clone());
        let u64_field = |at| u64_at(raw, at).ok_or(truncated.clone());
        if !raw.starts_with(&MAGIC) {
            return Err(SuperblockError::NoMagic);
        }
        let stored = u32_field(CRC_AT)?;
        let computed = crc32c::crc32c(raw.get(..CRC_AT).ok_or(truncated.clone())?);
        if stored != computed {
            return Err(SuperblockError::Checksum { stored, computed });
        }
        Ok(Superblock {
            version: u32_field(8)?,
            block_size: u32_field(12)?,
            zone_size: u64_field(16)?,
            zone_capacity: u64_field(24)?,
            zones: u32_field(32)?,
            meta_zones: u32_field(36)?,
            zone: u32_field(40)?,
            seq: u64_field(48)?,
        })
    }

    /// The first field that disagrees with the device, the layout or the zone it was read
    /// from, if any.
    pub fn mismatch(&self, geo: &Geometry, meta_zones: u32, zone: u32) -> Option<Mismatch> {
        let fields = [
            ("block size", self.block_size.into(), geo.block_size.into()),
            ("zone size", self.zone_size, geo.zone_size),
            ("zone capacity", self.zone_capacity, geo.zone_capacity),
            ("zone count", self.zones.into(), geo.zones.into()),
            (
                "metadata zone count",
                self.meta_zones.into(),
                meta_zones.into(),
            ),
            ("zone number", self.zone.into(), zone.into()),
        ];
        fields
            .into_iter()
            .find(|(_, on_disk, expected)| on_disk != expected)
            .map(|(field, on_disk, expected)| Mismatch {
                field,
                on_disk,
                expected,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        Superblock::new(&Geometry::new(16, 1 << 16), 3, 2, 42)
    }

    #[test]
    fn round_trip() {
        let sb = sample();
        let bytes = sb.encode();
        assert_eq!(Superblock::decode(&bytes), Ok(sb));
        assert_eq!(sb.mismatch(&Geometry::new(16, 1 << 16), 3, 2), None);
    }

    #[test]
    fn damage_is_detected() {
        let bytes = sample().encode();
        for bit in 64..SUPERBLOCK_LEN * 8 {
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(matches!(
                Superblock::decode(&b),
                Err(SuperblockError::Checksum { .. })
            ));
        }
        assert_eq!(
            Superblock::decode(&[0u8; 64]),
            Err(SuperblockError::NoMagic)
        );
        assert_eq!(
            Superblock::decode(&bytes[..10]),
            Err(SuperblockError::Truncated { have: 10 })
        );
    }

    #[test]
    fn mismatch_names_the_field() {
        let sb = sample();
        let m = sb.mismatch(&Geometry::new(32, 1 << 16), 3, 2).unwrap();
        assert_eq!(m.field, "zone count");
        assert_eq!((m.on_disk, m.expected), (16, 32));
        assert_eq!(
            sb.mismatch(&Geometry::new(16, 1 << 16), 4, 2)
                .unwrap()
                .field,
            "metadata zone count"
        );
    }
}
