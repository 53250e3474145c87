//! Checksum fix-ups: a copy of an input with every checksum the format has recomputed over
//! the bytes it covers, wherever the structure can be followed.
//!
//! A mutation almost never keeps a CRC valid, so without this the fuzzer would stop at the
//! checksums and rarely reach the decoders behind them. The targets that read checksummed
//! formats run on the input as it is (the checksum paths) *and* on its fixed-up copy (the
//! decoders behind the checksums). The fix-ups only follow the layout; they never decide
//! anything the decoders decide.

use zkv_engine::blob::{FOOTER_LEN, HEADER_LEN, RECORD_HEADER_LEN};
use zkv_engine::coding::mask_crc;
use zkv_engine::sst::parts;
use zkv_zonefs::meta::{frames_start, MAGIC, SUPERBLOCK_LEN};

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    if let Some(slot) = at.checked_add(4).and_then(|end| b.get_mut(at..end)) {
        slot.copy_from_slice(&v.to_le_bytes());
    }
}

// ---- engine SST ---------------------------------------------------------------------

/// The masked CRC32C of an SST footer's first 52 bytes, at byte 52.
pub fn sst_footer(data: &[u8]) -> Vec<u8> {
    let mut f = data.to_vec();
    if f.len() == 64 {
        let crc = mask_crc(crc32c::crc32c(&f[..52]));
        put_u32(&mut f, 52, crc);
    }
    f
}

/// Recomputes the trailer of the block at `handle`: masked CRC32C of contents + type byte.
fn sst_block(table: &mut [u8], handle: parts::Handle) {
    let range = usize::try_from(handle.0).ok().and_then(|start| {
        let end = start.checked_add(usize::try_from(handle.1).ok()?)?;
        (end.checked_add(5)? <= table.len()).then_some(start..end)
    });
    let Some(range) = range else {
        return;
    };
    let end = range.end;
    let crc = crc32c::crc32c_append(crc32c::crc32c(&table[range]), &table[end..end + 1]);
    put_u32(table, end + 1, mask_crc(crc));
}

/// The footer, the filter, index and properties blocks, and every data block the index
/// names.
pub fn sst_table(data: &[u8]) -> Vec<u8> {
    let mut t = data.to_vec();
    let Some(at) = t.len().checked_sub(64) else {
        return t;
    };
    let footer = sst_footer(&t[at..]);
    t[at..].copy_from_slice(&footer);
    let Ok(handles) = parts::decode_footer(&footer) else {
        return t;
    };
    for h in [handles.filter, handles.index, handles.props] {
        sst_block(&mut t, h);
    }
    let index = parts::block_contents(&t, handles.index).and_then(parts::decode_index_block);
    for (_, h) in index.unwrap_or_default() {
        sst_block(&mut t, h);
    }
    t
}

// ---- engine blob file ------------------------------------------------------------------

/// One record of a blob file found by following the record lengths from the header: where
/// it starts, where its value starts (after the key), where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobSpan {
    pub start: usize,
    pub value_at: usize,
    pub end: usize,
}

/// The records the lengths lead to, from the end of the header up to the footer (the last
/// 28 bytes), stopping at the first that does not fit.
pub fn blob_spans(data: &[u8]) -> Vec<BlobSpan> {
    let (header, footer) = (HEADER_LEN as usize, FOOTER_LEN as usize);
    let Some(records_end) = data.len().checked_sub(footer).filter(|&e| e >= header) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut pos = header;
    while pos + RECORD_HEADER_LEN as usize <= records_end {
        let (Some(key_len), Some(value_len)) = (u32_at(data, pos + 4), u32_at(data, pos + 8))
        else {
            break;
        };
        let value_at = pos + RECORD_HEADER_LEN as usize + key_len as usize;
        let end = value_at + value_len as usize;
        if end > records_end {
            break;
        }
        out.push(BlobSpan {
            start: pos,
            value_at,
            end,
        });
        pos = end;
    }
    out
}

/// The header's checksum (bytes 0..20, at 20), the footer's (its bytes 0..24, at 24) and
/// every record's the lengths lead to (bytes 4.. of the record, at 0), all masked CRC32C.
pub fn blob_file(data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    if d.len() < (HEADER_LEN + FOOTER_LEN) as usize {
        return d;
    }
    let crc = mask_crc(crc32c::crc32c(&d[..20]));
    put_u32(&mut d, 20, crc);
    let footer = d.len() - FOOTER_LEN as usize;
    let crc = mask_crc(crc32c::crc32c(&d[footer..footer + 24]));
    put_u32(&mut d, footer + 24, crc);
    for span in blob_spans(&d) {
        let crc = mask_crc(crc32c::crc32c(&d[span.start + 4..span.end]));
        put_u32(&mut d, span.start, crc);
    }
    d
}

// ---- engine record log ------------------------------------------------------------------

/// Every record header the log's lengths lead to: the record CRC (type, length, payload)
/// and the header check (bytes 4..13), both masked.
pub fn record_log(data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let mut pos = 0usize;
    while let Some(len) = u32_at(&d, pos + 8) {
        let Some(&kind) = d.get(pos + 12) else {
            break;
        };
        let end = pos + 13 + len as usize;
        if end > d.len() {
            break;
        }
        let crc = crc32c::crc32c(&[kind]);
        let crc = crc32c::crc32c_append(crc, &d[pos + 8..pos + 12]);
        let crc = crc32c::crc32c_append(crc, &d[pos + 13..end]);
        put_u32(&mut d, pos + 4, mask_crc(crc));
        let check = mask_crc(crc32c::crc32c(&d[pos + 4..pos + 13]));
        put_u32(&mut d, pos, check);
        pos = end;
    }
    d
}

// ---- zonefs metadata --------------------------------------------------------------------

/// The CRC32C of one metadata frame (`len | crc | type + payload`) at the start of `data`.
pub fn meta_frame(data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    fix_frame(&mut d, 0);
    d
}

/// Fixes the frame at `pos`; returns where it ends (`None` if it does not fit).
fn fix_frame(d: &mut [u8], pos: usize) -> Option<usize> {
    let len = u32_at(d, pos)? as usize;
    let end = pos.checked_add(8)?.checked_add(len)?;
    let crc = crc32c::crc32c(d.get(pos + 8..end)?);
    put_u32(d, pos + 4, crc);
    Some(end)
}

/// The CRC32C of a superblock (bytes 0..60, at 60) that has the magic.
pub fn meta_superblock(data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    fix_superblock(&mut d, 0);
    d
}

fn fix_superblock(d: &mut [u8], at: usize) {
    let Some(sb) = d.get_mut(at..at + SUPERBLOCK_LEN) else {
        return;
    };
    if sb[..8] == MAGIC {
        let crc = crc32c::crc32c(&sb[..SUPERBLOCK_LEN - 4]);
        put_u32(sb, SUPERBLOCK_LEN - 4, crc);
    }
}

/// Each zone of a `targets::meta_zone` input: its superblock and the copy in block 1, then
/// every frame from the first, skipping to the next block at a zero length word (the
/// padding after a batch).
pub fn meta_zone(data: &[u8], zone_capacity: usize, block: usize) -> Vec<u8> {
    let mut d = data.to_vec();
    for zone in d.chunks_mut(zone_capacity) {
        fix_superblock(zone, 0);
        fix_superblock(zone, block);
        let version = u32_at(zone, 8).unwrap_or(0);
        let mut pos = frames_start(version, block);
        while pos < zone.len() {
            pos = match u32_at(zone, pos) {
                Some(0) => (pos + 1).next_multiple_of(block),
                Some(_) => match fix_frame(zone, pos) {
                    Some(end) => end,
                    None => break,
                },
                None => break,
            };
        }
    }
    d
}

// ---- zns file image ------------------------------------------------------------------------

/// The header's CRC32C (bytes 0..64, at 64) and each zone table entry's (bytes 0..12 of
/// the 16-byte entry, at 12), for the zone count the header gives.
pub fn zns_image(data: &[u8]) -> Vec<u8> {
    const HEADER_LEN: usize = 4096;
    let mut d = data.to_vec();
    if d.len() < HEADER_LEN {
        return d;
    }
    let crc = crc32c::crc32c(&d[..64]);
    put_u32(&mut d, 64, crc);
    let zones = u32_at(&d, 12).unwrap_or(0) as usize;
    for z in 0..zones {
        let at = HEADER_LEN + 16 * z;
        let Some(entry) = d.get_mut(at..at + 16) else {
            break;
        };
        let crc = crc32c::crc32c(&entry[..12]);
        put_u32(entry, 12, crc);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixups_keep_valid_inputs_as_they_are() {
        for (target, seeds) in crate::seeds::all() {
            let fix: fn(&[u8]) -> Vec<u8> = match target {
                "sst_footer" => sst_footer,
                "sst_table" => sst_table,
                "blob_file" => blob_file,
                "engine_wal" | "engine_manifest" => record_log,
                "meta_frame" => meta_frame,
                "meta_superblock" => meta_superblock,
                "meta_zone" => crate::targets::fix_meta_zone,
                "zns_image" => zns_image,
                _ => continue,
            };
            for (name, bytes) in seeds {
                if !name.contains('.') {
                    assert_eq!(fix(&bytes), bytes, "{target}/{name}");
                }
            }
        }
    }
}
