//! The zoned file layer as the engine's [`FileSystem`].

use zkv_zns::DeviceStats;
use zkv_zonefs::fs::{FileReader, FileWriter, FsResult, ZoneFs};
use zkv_zonefs::meta::FileKind;
use zkv_zonefs::placement::PlacementHint;

use super::{FileSystem, ReadableFile, WritableFile};

impl WritableFile for FileWriter {
    fn name(&self) -> &str {
        FileWriter::name(self)
    }

    fn size(&self) -> u64 {
        FileWriter::size(self)
    }

    fn append(&mut self, data: &[u8]) -> FsResult<()> {
        FileWriter::append(self, data)
    }

    fn sync(&mut self) -> FsResult<()> {
        FileWriter::sync(self)
    }

    fn close(self: Box<Self>) -> FsResult<()> {
        FileWriter::close(*self)
    }
}

impl ReadableFile for FileReader {
    fn name(&self) -> &str {
        FileReader::name(self)
    }

    fn size(&self) -> u64 {
        FileReader::size(self)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> FsResult<usize> {
        FileReader::read_at(self, offset, buf)
    }

    fn read_all(&self) -> FsResult<Vec<u8>> {
        FileReader::read_all(self)
    }
}

impl FileSystem for ZoneFs {
    fn create(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        Ok(Box::new(ZoneFs::create(self, name, kind, hint)?))
    }

    fn create_or_replace(
        &self,
        name: &str,
        kind: FileKind,
        hint: PlacementHint,
    ) -> FsResult<Box<dyn WritableFile>> {
        Ok(Box::new(ZoneFs::create_or_replace(self, name, kind, hint)?))
    }

    fn open(&self, name: &str) -> FsResult<Box<dyn ReadableFile>> {
        Ok(Box::new(ZoneFs::open(self, name)?))
    }

    fn rename(&self, old: &str, new: &str) -> FsResult<()> {
        ZoneFs::rename(self, old, new)
    }

    fn delete(&self, name: &str) -> FsResult<()> {
        ZoneFs::delete(self, name)
    }

    fn exists(&self, name: &str) -> bool {
        ZoneFs::exists(self, name)
    }

    fn list(&self) -> FsResult<Vec<String>> {
        Ok(ZoneFs::list(self).into_iter().map(|f| f.name).collect())
    }

    fn io_stats(&self) -> DeviceStats {
        self.device().stats()
    }

    fn describe(&self) -> String {
        format!("zoned ({})", self.device().describe())
    }

    fn zoned(&self) -> Option<&ZoneFs> {
        Some(self)
    }
}
