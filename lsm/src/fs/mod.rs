//! All file I/O of the engine goes through [`FileSystem`], so that tests can run the same code
//! on [`SimFs`], which simulates a crash (dropping everything not yet synced) and fails chosen
//! operations, as LevelDB's `Env` and fault-injection tests do.
//!
//! The contract the engine relies on, which both implementations keep:
//! - A file's bytes are durable once `WritableFile::sync_data` returns.
//! - A file's *name* (its creation, a rename onto it, its removal) is durable only once
//!   [`FileSystem::sync_dir`] on its directory returns.
//! - Files are written once, by appending; they are never modified in place.
//! - [`FileSystem::lock`] takes an exclusive lock that another holder, in this process or
//!   another, cannot take until it is released (on drop).

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
    /// Opens an existing file to append to it.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// The whole contents of a file: a memory map for `OsFs`.
    fn read(&self, path: &Path) -> io::Result<Bytes>;
    /// Renames a file, replacing `to` atomically if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
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
