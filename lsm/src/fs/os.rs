//! The real file system: `std::fs`, memory maps for reading, `flock` for locking.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use bytes::Bytes;

use super::{FileLock, FileSystem, WritableFile, locked_error};

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFs;

#[derive(Debug)]
struct OsFile {
    file: io::BufWriter<File>,
}

impl Write for OsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
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

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = File::create(path)?;
        Ok(Box::new(OsFile {
            file: io::BufWriter::with_capacity(64 * 1024, file),
        }))
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
        self.create(path)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Box::new(OsFile {
            file: io::BufWriter::with_capacity(64 * 1024, file),
        }))
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
