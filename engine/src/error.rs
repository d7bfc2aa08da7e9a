//! The engine's one error type.
//!
//! Corruption is never a string: it names the file, the offset, and what the format check found,
//! reusing the structured reasons of `strata-wal` and `strata-sstable`. `Error` is `Clone` so
//! that one failed group commit can report the same failure to every writer in the group, and
//! so the store can keep it as its sticky error.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// What is wrong with bytes the engine read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The log framing is damaged where the recovery mode does not allow it.
    #[error("log: {0}")]
    Log(strata_wal::Damage),
    /// A table failed a format check.
    #[error("table: {0}")]
    Table(strata_sstable::Corruption),
    /// A write batch record does not decode.
    #[error("write batch: {0}")]
    Batch(&'static str),
    /// A manifest edit does not decode, or the edits contradict each other.
    #[error("manifest: {0}")]
    Manifest(&'static str),
    /// The `CURRENT` file does not name a manifest.
    #[error("CURRENT does not name a manifest")]
    Current,
    /// A table's size on disk differs from the size the manifest recorded.
    #[error("table is {actual} bytes, the manifest recorded {expected}")]
    TableSize {
        /// What the manifest recorded.
        expected: u64,
        /// What is on disk.
        actual: u64,
    },
    /// A file the manifest lists is missing.
    #[error("file is missing")]
    Missing,
    /// A log a clean close synced whole is shorter than the size the manifest recorded.
    #[error("log is {actual} bytes, but the close recorded {expected} synced")]
    LogSize {
        /// What the close recorded.
        expected: u64,
        /// What is on disk.
        actual: u64,
    },
    /// A key in a table or index column family does not decode (the "file" is the family).
    #[error("key: {0}")]
    Key(crate::table::KeyError),
    /// A stored record or index entry does not decode.
    #[error("record: {0}")]
    Record(crate::table::RecordError),
    /// A catalog entry does not decode, or names something that is not there.
    #[error("catalog: {0}")]
    Catalog(String),
    /// An outbox key is malformed, or an entry names a shard its table does not have.
    #[error("outbox: {0}")]
    Outbox(String),
}

/// The error type of the engine.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error.
    #[error("I/O error: {0}")]
    Io(Arc<io::Error>),
    /// Bytes read from disk fail a format check.
    #[error("corruption in {} at offset {offset}: {what}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Where in it the damage starts (0 when the whole file is affected).
        offset: u64,
        /// What is wrong.
        what: Corruption,
    },
    /// A caller passed something the engine cannot take; nothing was changed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something a caller named does not exist (a column family).
    #[error("not found: {0}")]
    NotFound(String),
    /// Something a caller wants to create exists already, or the directory is in use.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A key, value or batch is larger than the engine allows; nothing was written.
    #[error("{what} of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// "key", "value" or "batch".
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// An earlier write, sync or flush failed, so the store refuses writes until it is reopened
    /// (which recovers every acknowledged write from the log). Holds the original failure.
    #[error("the store refuses writes after an earlier failure: {0}")]
    ReadOnly(Box<Error>),
    /// The store is shutting down.
    #[error("the store is closed")]
    Closed,
    /// Something could not be encoded for storage (a bug, never the data's fault); nothing
    /// was written.
    #[error("{what} does not encode: {reason}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The encoder's message.
        reason: String,
    },
}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Self {
        Error::Io(Arc::new(error))
    }
}

impl Error {
    /// Whether this is an I/O error or carries one (as `ReadOnly` does).
    pub fn is_io(&self) -> bool {
        match self {
            Error::Io(_) => true,
            Error::ReadOnly(cause) => cause.is_io(),
            _ => false,
        }
    }

    /// Whether this reports corruption.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    pub(crate) fn table(file: PathBuf, error: strata_sstable::Error) -> Error {
        match error {
            strata_sstable::Error::Corruption { offset, what, .. } => Error::Corruption {
                file,
                offset,
                what: Corruption::Table(what),
            },
            strata_sstable::Error::Io(error) => Error::from(error),
            strata_sstable::Error::TooLarge { what, len, max } => {
                Error::TooLarge { what, len, max }
            }
            other => Error::InvalidArgument(other.to_string()),
        }
    }

    pub(crate) fn log(file: PathBuf, error: strata_wal::Error) -> Error {
        match error {
            strata_wal::Error::Corruption { offset, reason } => Error::Corruption {
                file,
                offset,
                what: Corruption::Log(reason),
            },
            strata_wal::Error::Io(error) => Error::from(error),
            strata_wal::Error::RecordTooLarge { len, max } => Error::TooLarge {
                what: "batch",
                len,
                max,
            },
            other => Error::from(io::Error::other(other.to_string())),
        }
    }
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, Error>;
