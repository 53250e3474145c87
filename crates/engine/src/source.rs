//! Random-access reads of a stored file (an SST), from the file system or from memory.

use std::sync::Arc;

use crate::fs::ReadableFile;
use crate::{Error, Result};

/// A file that can be read at any offset. `what` names it in errors.
pub trait RandomAccess: Send + Sync {
    /// The file's size in bytes.
    fn size(&self) -> u64;

    /// Fills `buf` from `offset`; reading past the end is a corruption error (a table never
    /// points outside its file unless it is damaged).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// A name for error messages.
    fn what(&self) -> String;
}

fn past_end(what: String, offset: u64, len: usize, size: u64) -> Error {
    Error::corruption(
        what,
        format!("read of {len} bytes at offset {offset} passes the end of the file ({size} bytes)"),
    )
}

impl<T: ReadableFile + ?Sized> RandomAccess for T {
    fn size(&self) -> u64 {
        ReadableFile::size(self)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        let size = ReadableFile::size(self);
        if end.is_none_or(|end| end > size) {
            return Err(past_end(self.what(), offset, buf.len(), size));
        }
        let n = self
            .read_at(offset, buf)
            .map_err(|e| Error::fs(format!("read {}", self.name()), e))?;
        if n != buf.len() {
            return Err(past_end(self.what(), offset, buf.len(), size));
        }
        Ok(())
    }

    fn what(&self) -> String {
        format!("file '{}'", self.name())
    }
}

/// An in-memory file (tests, and tables read back right after they are built).
#[derive(Clone, Debug)]
pub struct MemFile {
    /// The name errors use for it.
    pub name: String,
    /// Its contents.
    pub data: Arc<Vec<u8>>,
}

impl MemFile {
    /// A file named `name` holding `data`.
    pub fn new(name: impl Into<String>, data: Vec<u8>) -> MemFile {
        MemFile {
            name: name.into(),
            data: Arc::new(data),
        }
    }
}

impl RandomAccess for MemFile {
    fn size(&self) -> u64 {
        self.data.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).ok();
        let range = start.and_then(|s| Some(s..s.checked_add(buf.len())?));
        match range.and_then(|r| self.data.get(r)) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(past_end(self.what(), offset, buf.len(), self.size())),
        }
    }

    fn what(&self) -> String {
        format!("file '{}'", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_file_reads_inside_and_refuses_past_end() {
        let f = MemFile::new("t", b"hello".to_vec());
        let mut buf = [0u8; 3];
        f.read_exact_at(1, &mut buf).unwrap();
        assert_eq!(&buf, b"ell");
        let err = f.read_exact_at(3, &mut buf).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(f.read_exact_at(u64::MAX, &mut buf).is_err());
    }
}
