//! All file I/O of the engine goes through [`FileSystem`], so that tests can run the same code
//! on [`SimFs`], which simulates a crash (dropping everything not yet synced) and fails chosen
//! operations, as LevelDB's `Env` and fault-injection tests do.
//!
//! The contract the engine relies on, which both implementations keep:
//! - A file's bytes are durable once `WritableFile::sync_data` returns.
//! - A file's *name* (its creation, a rename onto it, its removal) is durable only once
//!   [`FileSystem::sync_dir`] on its directory returns.
//! - Files are written once, by appending; they are never modified in place. (A log made by
//!   [`FileSystem::create_log`] may have zeros reserved past its end, which its writes
//!   replace, and which `finish` cuts off.)
//! - [`FileSystem::lock`] takes an exclusive lock that another holder, in this process or
//!   another, cannot take until it is released (on drop).

#[cfg(target_os = "linux")]
mod mapped;
mod os;
mod sim;

use std::fmt::Debug;
use std::io;
use std::path::Path;

use bytes::Bytes;

pub use os::OsFs;
pub use sim::{OpKind, SimFs};

/// A file being written. Writes append.
pub trait WritableFile: io::Write + Send + Debug {
    /// Makes the file's bytes written so far durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;

    /// Ends the file at the bytes written, giving back space reserved past them
    /// ([`FileSystem::create_log`]), and makes its length durable. The engine calls it on a
    /// log it leaves for good (for the next log, or at a clean close), after syncing it, so
    /// that every log but the last ends at its last record. Nothing to do for a file that
    /// reserves nothing.
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An exclusive lock on a path, released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _held: Box<dyn Debug + Send + Sync>,
}

impl FileLock {
    pub(crate) fn new(held: Box<dyn Debug + Send + Sync>) -> Self {
        FileLock { _held: held }
    }
}

/// The file operations the engine uses. See the module documentation for the contract.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates a directory and its parents; the directories are durable when this returns.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates a file for writing, replacing any file of that name.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates a log file. It may reserve space past what is written, which reads as zeros
    /// until written (a log reader takes zeros after the last record for a torn tail, the
    /// state a crash leaves), and may hand each write to the operating system without a system
    /// call; [`WritableFile::finish`] ends it at its last byte. By default, [`Self::create`].
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file to append to it.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// The whole contents of a file: a memory map for `OsFs`.
    fn read(&self, path: &Path) -> io::Result<Bytes>;
    /// Renames a file, replacing `to` atomically if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Gives `from`'s file a second name, `to` (which must not exist): a hard link, sharing
    /// the bytes, which is how a checkpoint takes immutable files without copying them. Like
    /// any name, durable once `sync_dir` on `to`'s directory returns. Fails where links are
    /// impossible (another device, a file system without them; the default): the caller
    /// copies instead.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system has no hard links",
        ))
    }
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// The names of the files in a directory, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Makes the directory's entries (created, renamed, removed files) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (creating the file), or fails with
    /// `ErrorKind::WouldBlock` if another holder has it.
    fn lock(&self, path: &Path) -> io::Result<FileLock>;
}

/// The error for a path held by another lock holder.
pub(crate) fn locked_error(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "{} is locked: another Store has this directory open, in this process or another",
            path.display()
        ),
    )
}
