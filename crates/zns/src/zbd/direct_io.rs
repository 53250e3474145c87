//! `O_DIRECT` data transfer: aligned buffers (without unsafe), whole-buffer `pread` and
//! `pwrite` loops, and reads of any byte range through a bounce buffer. Separate from the
//! zone rules in `device.rs`: this only moves bytes at positions already checked.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::io::Errno;

use crate::error::{Result, ZnsError};

use super::device::ZbdDevice;

/// Largest bounce buffer used for one unaligned read; larger reads go in pieces.
const READ_BOUNCE_MAX: usize = 1 << 20;

/// The block-aligned span `[start, end)` covering `len` bytes at `addr`.
fn aligned_span(addr: u64, len: u64, block: u64) -> (u64, u64) {
    let start = addr / block * block;
    let end = (addr + len).div_ceil(block) * block;
    (start, end)
}

/// Whether a buffer can be used for `O_DIRECT` as it is.
pub(super) fn is_direct_ready(ptr: *const u8, len: usize, pos: u64, align: usize) -> bool {
    ptr.align_offset(align) == 0 && len.is_multiple_of(align) && pos.is_multiple_of(align as u64)
}

/// Aligned memory without unsafe: an over-allocated Vec and an aligned window into it.
pub(super) struct AlignedBuf {
    storage: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    pub(super) fn zeroed(len: usize, align: usize) -> Result<AlignedBuf> {
        let storage = vec![0u8; len + align];
        let off = storage.as_ptr().align_offset(align);
        if off.checked_add(len).is_none_or(|end| end > storage.len()) {
            return Err(ZnsError::io(
                "allocate an aligned I/O buffer",
                io::Error::new(io::ErrorKind::OutOfMemory, "cannot align the buffer"),
            ));
        }
        Ok(AlignedBuf { storage, off, len })
    }

    // `zeroed`, the only constructor, checked `off + len <= storage.len()`, and the
    // storage never changes length.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn as_slice(&self) -> &[u8] {
        &self.storage[self.off..self.off + self.len]
    }

    // As for `as_slice`.
    #[allow(clippy::indexing_slicing)]
    pub(super) fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.off..self.off + self.len]
    }
}

/// The kernel claimed to have transferred more bytes than the buffer holds.
fn overrun(what: &str, n: usize) -> io::Error {
    io::Error::other(format!(
        "the device reported {n} bytes {what}, more than were asked for"
    ))
}

pub(super) fn pwrite_all(fd: BorrowedFd<'_>, mut data: &[u8], mut pos: u64) -> io::Result<()> {
    while !data.is_empty() {
        match rustix::io::pwrite(fd, data, pos) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the device accepted no bytes",
                ))
            }
            Ok(n) => {
                data = data.get(n..).ok_or_else(|| overrun("written", n))?;
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn pread_exact(fd: BorrowedFd<'_>, mut buf: &mut [u8], mut pos: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::pread(fd, &mut *buf, pos) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "read past the end of the device",
                ))
            }
            Ok(n) => {
                buf = buf.get_mut(n..).ok_or_else(|| overrun("read", n))?;
                pos += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl ZbdDevice {
    /// Reads `out.len()` bytes at absolute `pos` (below the zone's write pointer).
    pub(super) fn read_device(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        if is_direct_ready(out.as_ptr(), out.len(), pos, self.align) {
            return pread_exact(self.fd.as_fd(), out, pos);
        }
        let block = u64::from(self.geo.block_size);
        let mut at = pos;
        for piece in out.chunks_mut(READ_BOUNCE_MAX) {
            let want = piece.len();
            let (a0, a1) = aligned_span(at, want as u64, block);
            let span = (a1 - a0) as usize;
            let mut bounce = AlignedBuf::zeroed(span, self.align)
                .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
            pread_exact(self.fd.as_fd(), bounce.as_mut_slice(), a0)?;
            let skip = (at - a0) as usize;
            let read = bounce.as_slice().get(skip..skip + want).ok_or_else(|| {
                io::Error::other("the aligned span does not cover the bytes to read")
            })?;
            piece.copy_from_slice(read);
            at += want as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_math() {
        assert_eq!(aligned_span(0, 4096, 4096), (0, 4096));
        assert_eq!(aligned_span(1, 1, 4096), (0, 4096));
        assert_eq!(aligned_span(4095, 2, 4096), (0, 8192));
        assert_eq!(aligned_span(8192, 0, 4096), (8192, 8192));
        assert_eq!(aligned_span(5000, 10000, 512), (4608, 15360));
        for align in [512usize, 4096, 65536] {
            for len in [0usize, 1, 511, 4096, 12345] {
                let b = AlignedBuf::zeroed(len, align).unwrap();
                assert_eq!(b.as_slice().len(), len);
                assert_eq!(b.as_slice().as_ptr().align_offset(align), 0);
                assert!(b.as_slice().iter().all(|&x| x == 0));
            }
        }
        let b = AlignedBuf::zeroed(8192, 4096).unwrap();
        assert!(is_direct_ready(b.as_slice().as_ptr(), 8192, 4096, 4096));
        assert!(!is_direct_ready(b.as_slice().as_ptr(), 8000, 4096, 4096));
        assert!(!is_direct_ready(b.as_slice().as_ptr(), 8192, 100, 4096));
        assert!(!is_direct_ready(
            b.as_slice()[1..].as_ptr(),
            4096,
            4096,
            4096
        ));
    }
}
