//! The real file system: `std::fs`, memory maps for reading, `flock` for locking.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use bytes::Bytes;

use super::{FileLock, FileSystem, WritableFile, locked_error};

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFs;

/// How many bytes a file written in the background (a table, by a flush, a compaction or an
/// ingest) takes before the operating system is asked to start writing them to the disk, and
/// waits for the step before to be written.
/// TUNING: without it the kernel's writeback finds tens of megabytes of a new table file dirty
/// at once and queues them ahead of the log's `fdatasync`, which a synced writer waits on
/// (issue 45: one synced writer on a store compacting ran at 0.61 of fjall's rate). A step of
/// 1 MiB (RocksDB's recommended `bytes_per_sync`) keeps at most two steps of a file in
/// flight; the wait throttles a compaction to what the disk takes, never a writer.
const RANGE_SYNC_BYTES: u64 = 1 << 20;

#[derive(Debug)]
struct OsFile {
    file: io::BufWriter<File>,
    /// Whether the file is written out in steps of [`RANGE_SYNC_BYTES`] as it grows.
    range_sync: bool,
    /// Bytes handed to the file so far.
    written: u64,
    /// Where the step whose writeback was started last begins, and where it ends.
    step: (u64, u64),
}

impl OsFile {
    fn new(file: File, range_sync: bool) -> OsFile {
        OsFile {
            file: io::BufWriter::with_capacity(64 * 1024, file),
            range_sync,
            written: 0,
            step: (0, 0),
        }
    }

    /// Starts the writeback of the bytes written since the last step, after waiting for the
    /// step before it to be written: the file's dirty pages never pile up. Not a promise of
    /// durability (`sync_data` is): metadata and the disk's cache are untouched. Advice, so a
    /// file system that refuses it only turns it off for this file.
    #[cfg(target_os = "linux")]
    #[expect(
        unsafe_code,
        reason = "sync_file_range has no safe wrapper in std or libc"
    )]
    fn range_sync(&mut self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        self.file.flush()?;
        // The step started last, [previous, from), is waited for; [from, written) starts.
        let (previous, from) = self.step;
        let fd = self.file.get_ref().as_raw_fd();
        let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE;
        // SAFETY: a plain system call on a descriptor this file owns; it reads no memory of
        // ours. Offsets and lengths are bytes of the file, below i64::MAX for any real file.
        let result = unsafe {
            libc::sync_file_range(
                fd,
                previous as libc::off64_t,
                (self.written - previous) as libc::off64_t,
                flags,
            )
        };
        if result != 0 {
            self.range_sync = false;
        }
        self.step = (from, self.written);
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    fn range_sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for OsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.range_sync && self.written - self.step.1 >= RANGE_SYNC_BYTES {
            self.range_sync()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl WritableFile for OsFile {
    fn sync_data(&mut self) -> io::Result<()> {
        self.file.flush()?;
        self.file.get_ref().sync_data()
    }
}

/// Maps a whole file read-only.
#[expect(
    unsafe_code,
    reason = "memory-mapping a file is unsafe in Rust's model"
)]
fn map(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: the engine maps only files it wrote completely and never modifies or truncates
    // afterwards (tables and finished logs), and its LOCK file keeps other Strata processes out
    // of the directory. Another program truncating the file under us would make reads fault
    // (SIGBUS), as with every memory-mapped engine; the bytes themselves are never trusted,
    // since every format checks lengths and checksums before use.
    unsafe { memmap2::Mmap::map(file) }
}

/// Whether a mapped log failed because the file system or kernel does not offer what it needs:
/// reserving space (`EOPNOTSUPP`, `ENOSYS` from `fallocate`) or mapping a file (`ENODEV`).
#[cfg(target_os = "linux")]
fn cannot_reserve(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::ENODEV)
    )
}

impl FileSystem for OsFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.sync_dir(parent)?;
        }
        Ok(())
    }

    /// Written out in steps of 1 MiB as it grows (`sync_file_range` on
    /// Linux), so that a large file written in the background never lands on the disk in one
    /// burst ahead of a log's sync.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(OsFile::new(File::create(path)?, true)))
    }

    /// On Linux, a `MappedLog` (`fs/mapped.rs`): space reserved ahead and written through a
    /// memory map. Where the file system cannot reserve space, an ordinary file.
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        #[cfg(target_os = "linux")]
        match super::mapped::MappedLog::create(path) {
            Ok(log) => return Ok(Box::new(log)),
            // A file system (or kernel) that cannot reserve or map: an ordinary file.
            Err(error) if cannot_reserve(&error) => {}
            Err(error) => return Err(error),
        }
        // A log is synced by its writers, not in steps behind their backs.
        Ok(Box::new(OsFile::new(File::create(path)?, false)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Box::new(OsFile::new(file, false)))
    }

    fn read(&self, path: &Path) -> io::Result<Bytes> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            return Ok(Bytes::new());
        }
        Ok(Bytes::from_owner(map(&file)?))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(FileLock::new(Box::new(file))),
            Err(fs::TryLockError::WouldBlock) => Err(locked_error(path)),
            Err(fs::TryLockError::Error(error)) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{OsFile, RANGE_SYNC_BYTES};

    /// A file written in steps holds every byte written, in order, and its steps follow its
    /// growth: each starts where the one before ended, at most a step and a write behind.
    #[test]
    fn range_synced_file_keeps_its_bytes_and_steps_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table");
        let mut file = OsFile::new(std::fs::File::create(&path).unwrap(), true);
        let chunk: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        let mut expected = Vec::new();
        while expected.len() < 3 * RANGE_SYNC_BYTES as usize + 12_345 {
            file.write_all(&chunk).unwrap();
            expected.extend_from_slice(&chunk);
            let (from, to) = file.step;
            assert!(from <= to && to <= file.written);
            assert!(file.written - to < RANGE_SYNC_BYTES + chunk.len() as u64);
        }
        #[cfg(target_os = "linux")]
        assert!(
            file.step.1 >= 2 * RANGE_SYNC_BYTES,
            "steps: {:?}",
            file.step
        );
        crate::fs::WritableFile::sync_data(&mut file).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    /// A file opened to append (the manifest) is not written in steps.
    #[test]
    fn appended_file_takes_no_steps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest");
        let mut file = OsFile::new(std::fs::File::create(&path).unwrap(), false);
        file.write_all(&vec![7u8; 2 * RANGE_SYNC_BYTES as usize])
            .unwrap();
        assert_eq!(file.step, (0, 0));
    }
}
