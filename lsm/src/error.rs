//! The store's one error type. It knows nothing of tables: the table layer (`strata`) wraps
//! it and adds its own kinds.
//!
//! Corruption is never a string: it names the file, the offset, and what the format check found,
//! reusing the structured reasons of `strata-wal` and `strata-sstable`. An I/O error names the
//! operation and the path it failed on. `Error` is `Clone` so that one failed group commit can
//! report the same failure to every writer in the group, and so the store can keep it as its
//! sticky error.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What is wrong with bytes the store read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The log framing is damaged where the recovery mode does not allow it.
    #[error("log: {0}")]
    Log(strata_wal::Damage),
    /// A table failed a format check in one of its regions.
    #[error("table {region:?}: {what}")]
    Table {
        /// The part of the table (footer, index, filter, properties, data).
        region: strata_sstable::Region,
        /// What is wrong.
        what: strata_sstable::Corruption,
    },
    /// A write batch record does not decode.
    #[error("write batch: {0}")]
    Batch(BatchFault),
    /// A manifest edit does not decode, or the edits contradict each other.
    #[error("manifest: {0}")]
    Manifest(ManifestFault),
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
}

/// What is wrong with a write batch record read back from the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchFault {
    /// Names a column family that never existed.
    #[error("names a column family that never existed")]
    UnknownFamily,
    /// Shorter than its header.
    #[error("shorter than its header")]
    ShorterThanHeader,
    /// Sequence number 0 is never assigned.
    #[error("sequence number 0 is never assigned")]
    SeqnoZero,
    /// Sequence numbers exceed 56 bits.
    #[error("sequence numbers exceed 56 bits")]
    SeqnoOver56Bits,
    /// Fewer entries than its count.
    #[error("fewer entries than its count")]
    FewerEntriesThanCount,
    /// Bytes after the last entry.
    #[error("bytes after the last entry")]
    BytesAfterLastEntry,
    /// Transaction trailer truncated.
    #[error("transaction trailer truncated")]
    TrailerTruncated,
    /// Transaction trailer participant count.
    #[error("transaction trailer participant count")]
    TrailerParticipantCount,
    /// Participant over 32 bits.
    #[error("participant over 32 bits")]
    ParticipantOver32Bits,
    /// Bytes after the transaction trailer.
    #[error("bytes after the transaction trailer")]
    BytesAfterTrailer,
    /// Entry truncated.
    #[error("entry truncated")]
    EntryTruncated,
    /// Unknown entry kind.
    #[error("unknown entry kind")]
    UnknownEntryKind,
    /// Cf id over 32 bits.
    #[error("cf id over 32 bits")]
    FamilyIdOver32Bits,
    /// Key or value over its limit.
    #[error("key or value over its limit")]
    KeyOrValueOverLimit,
}

/// What is wrong with a manifest edit, or with an edit against the state before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestFault {
    /// Truncated tag.
    #[error("truncated tag")]
    TruncatedTag,
    /// Truncated name.
    #[error("truncated name")]
    TruncatedName,
    /// Name is not UTF-8.
    #[error("name is not UTF-8")]
    NameNotUtf8,
    /// Column family name length out of range.
    #[error("column family name length out of range")]
    NameLength,
    /// Table bounds out of order.
    #[error("table bounds out of order")]
    TableBoundsOutOfOrder,
    /// Unknown tag.
    #[error("unknown tag")]
    UnknownTag,
    /// Truncated number.
    #[error("truncated number")]
    TruncatedNumber,
    /// Column family id over 32 bits.
    #[error("column family id over 32 bits")]
    FamilyIdOver32Bits,
    /// Level out of range.
    #[error("level out of range")]
    LevelOutOfRange,
    /// Truncated key.
    #[error("truncated key")]
    TruncatedKey,
    /// Key over its limit.
    #[error("key over its limit")]
    KeyOverLimit,
    /// Next file number out of range.
    #[error("next file number out of range")]
    NextFileNumberOutOfRange,
    /// Last seqno out of range.
    #[error("last seqno out of range")]
    LastSeqnoOutOfRange,
    /// Column family created twice.
    #[error("column family created twice")]
    FamilyCreatedTwice,
    /// Log number for unknown family.
    #[error("log number for unknown family")]
    LogNumberForUnknownFamily,
    /// Table removed from unknown family.
    #[error("table removed from unknown family")]
    TableRemovedFromUnknownFamily,
    /// Removed table is not in its level.
    #[error("removed table is not in its level")]
    RemovedTableNotInLevel,
    /// Table added to unknown family.
    #[error("table added to unknown family")]
    TableAddedToUnknownFamily,
    /// Table number out of range.
    #[error("table number out of range")]
    TableNumberOutOfRange,
    /// Table added twice.
    #[error("table added twice")]
    TableAddedTwice,
    /// The default column family dropped.
    #[error("the default column family dropped")]
    DefaultFamilyDropped,
    /// Unknown family dropped.
    #[error("unknown family dropped")]
    UnknownFamilyDropped,
    /// No default column family.
    #[error("no default column family")]
    NoDefaultFamily,
    /// Tables overlap in a sorted level.
    #[error("tables overlap in a sorted level")]
    TablesOverlap,
}

/// The file-system operation an I/O error happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Creating a directory.
    CreateDir,
    /// Creating (or truncating) a file.
    Create,
    /// Opening a file to append.
    OpenAppend,
    /// Reading a file.
    Read,
    /// Writing to a file.
    Write,
    /// Syncing a file's data.
    Sync,
    /// Syncing a directory's entries.
    SyncDir,
    /// Renaming a file.
    Rename,
    /// Removing a file.
    Remove,
    /// Listing a directory.
    List,
    /// Asking whether a file exists.
    Exists,
    /// Taking the directory's lock.
    Lock,
    /// Starting a background thread.
    Spawn,
}

impl std::fmt::Display for IoOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IoOp::CreateDir => "create directory",
            IoOp::Create => "create",
            IoOp::OpenAppend => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::SyncDir => "sync directory",
            IoOp::Rename => "rename",
            IoOp::Remove => "remove",
            IoOp::List => "list",
            IoOp::Exists => "stat",
            IoOp::Lock => "lock",
            IoOp::Spawn => "start a thread for",
        })
    }
}

/// What a full memtable or an over-long log replay is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capacity {
    /// A group of batches did not fit in a memtable (a bug: `make_room` seals memtables that
    /// cannot take a whole group).
    MemtableFull,
    /// The logs hold more unflushed entries for one family than one memtable can replay.
    ReplayLimit,
}

/// The error type of the store.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O error, with the operation and the file it failed on.
    #[error("I/O error: {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: IoOp,
        /// The file or directory (empty when there is none, as for a thread).
        path: PathBuf,
        /// The operating system's error.
        source: Arc<io::Error>,
    },
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
    /// A caller passed something the store cannot take; nothing was changed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something a caller named does not exist (a column family).
    #[error("not found: {0}")]
    NotFound(String),
    /// Something a caller wants to create exists already, or the directory is in use.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A key, value or batch is larger than the store allows; nothing was written.
    #[error("{what} of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// "key", "value" or "batch".
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A memtable could not take what it had to (see [`Capacity`]), in `family`.
    #[error("column family {family}: {what:?}: {limit} entries")]
    Capacity {
        /// Which limit.
        what: Capacity,
        /// The column family's id.
        family: u32,
        /// The limit, in entries.
        limit: u64,
    },
    /// An earlier write, sync or flush failed, so the store refuses writes until it is reopened
    /// (which recovers every acknowledged write from the log). Holds the original failure.
    #[error("the store refuses writes after an earlier failure: {0}")]
    ReadOnly(Box<Error>),
    /// The log writer refuses writes after a failed write at `offset` left its file in an
    /// unknown state (the store is then read-only until reopened).
    #[error("the log {} refuses writes after a failed write at offset {offset}", path.display())]
    LogPoisoned {
        /// The log file.
        path: PathBuf,
        /// Where the failed write started.
        offset: u64,
    },
    /// The store is shutting down.
    #[error("the store is closed")]
    Closed,
    /// The layer above refused a flush through its [`crate::FlushBarrier`] (for the table
    /// layer: a commit across shard stores failed part way, and no store may make durable
    /// what recovery may have to remove). The store is then read-only until reopened.
    #[error("the layer above the store refused a flush; reopen the store")]
    FlushRefused,
    /// A write to another store sharing this store's [`crate::Sequencer`] failed after
    /// taking its seqnos, so no later write can be published in the shared commit order
    /// (`Sequencer::fail`). Every store sharing it is read-only until reopened.
    #[error("a write to another store sharing this store's commit order failed; reopen")]
    CommitOrderFailed,
    /// One of the store's own invariants failed (a bug, not the caller's or the disk's
    /// fault); nothing was changed.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Attaches the operation and path to an I/O result.
pub trait IoContext<T> {
    /// The error, if any, as [`Error::Io`] of `op` on `path`.
    fn at(self, op: IoOp, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, op: IoOp, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(op, path, e))
    }
}

impl Error {
    /// An I/O error of `op` on `path`.
    pub fn io(op: IoOp, path: &Path, error: io::Error) -> Error {
        Error::Io {
            op,
            path: path.to_path_buf(),
            source: Arc::new(error),
        }
    }

    /// Whether this is an I/O error or carries one (as `ReadOnly` does).
    pub fn is_io(&self) -> bool {
        match self {
            Error::Io { .. } | Error::LogPoisoned { .. } => true,
            Error::ReadOnly(cause) => cause.is_io(),
            _ => false,
        }
    }

    /// Whether this reports corruption.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// The operating system's error, if this is (or carries) one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::ReadOnly(cause) => cause.io_error(),
            _ => None,
        }
    }

    /// A table's error, for the table file `file`. Takes it by reference because an
    /// iterator keeps its error to report it again; an I/O error is copied as its kind and
    /// message (`io::Error` is not `Clone`).
    pub(crate) fn table(file: PathBuf, error: &strata_sstable::Error) -> Error {
        match error {
            strata_sstable::Error::Corruption {
                region,
                offset,
                what,
            } => Error::Corruption {
                file,
                offset: *offset,
                what: Corruption::Table {
                    region: *region,
                    what: what.clone(),
                },
            },
            strata_sstable::Error::Io(e) => {
                Error::io(IoOp::Read, &file, io::Error::new(e.kind(), e.to_string()))
            }
            strata_sstable::Error::TooLarge { what, len, max } => Error::TooLarge {
                what,
                len: *len,
                max: *max,
            },
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
            strata_wal::Error::Io(error) => Error::io(IoOp::Write, &file, error),
            strata_wal::Error::RecordTooLarge { len, max } => Error::TooLarge {
                what: "batch",
                len,
                max,
            },
            strata_wal::Error::Poisoned { offset } => Error::LogPoisoned { path: file, offset },
            other => Error::InvalidArgument(other.to_string()),
        }
    }
}

/// The store's result type.
pub type Result<T> = std::result::Result<T, Error>;
