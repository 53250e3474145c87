//! The deterministic data `zkv zone write` and `zkv zone append` store, and how `zkv zone read`
//! recognises it.
//!
//! Every 8-byte word at device address `a` (a multiple of 8) holds `zkv` followed by the low
//! 40 bits of `a`, big endian: the word at 0x12340 reads `7a 6b 76 00 00 01 23 40`
//! (`zkv..#@`) in a hex dump. The data is never all zeros, tells where it was written, and
//! a stale or misplaced block does not match.

const TAG: u64 = u64::from_be_bytes(*b"zkv\0\0\0\0\0");
const ADDR_MASK: u64 = (1 << 40) - 1;

fn word(addr: u64) -> [u8; 8] {
    (TAG | (addr & !7 & ADDR_MASK)).to_be_bytes()
}

/// The pattern byte at device address `addr`.
pub fn byte_at(addr: u64) -> u8 {
    word(addr)[(addr & 7) as usize]
}

/// Fills `buf` with the pattern as it lies at device address `addr`.
pub fn fill(addr: u64, buf: &mut [u8]) {
    let head = ((8 - (addr & 7)) & 7).min(buf.len() as u64) as usize;
    let (first, rest) = buf.split_at_mut(head);
    for (i, b) in first.iter_mut().enumerate() {
        *b = byte_at(addr + i as u64);
    }
    let mut at = addr + head as u64;
    let mut chunks = rest.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&word(at));
        at += 8;
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b = byte_at(at + i as u64);
    }
}

/// True when `buf` holds exactly the pattern for device address `addr`.
pub fn matches(addr: u64, buf: &[u8]) -> bool {
    buf.iter()
        .enumerate()
        .all(|(i, b)| *b == byte_at(addr + i as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_their_address() {
        let mut b = [0u8; 16];
        fill(0x12340, &mut b);
        assert_eq!(&b[..8], &[0x7a, 0x6b, 0x76, 0, 0, 0x01, 0x23, 0x40]);
        assert_eq!(&b[8..], &[0x7a, 0x6b, 0x76, 0, 0, 0x01, 0x23, 0x48]);
    }

    #[test]
    fn fill_agrees_with_byte_at_at_any_alignment() {
        for addr in [0u64, 1, 5, 7, 8, 4093, 1 << 41] {
            for len in [0usize, 1, 3, 8, 9, 17, 64] {
                let mut b = vec![0u8; len];
                fill(addr, &mut b);
                assert!(matches(addr, &b), "addr {addr} len {len}");
                if len >= 8 {
                    assert!(!matches(addr + 8, &b), "addr {addr} len {len}");
                }
            }
        }
    }

    #[test]
    fn never_zero() {
        let mut b = [0u8; 8];
        fill(0, &mut b);
        assert_ne!(b, [0u8; 8]);
    }
}
