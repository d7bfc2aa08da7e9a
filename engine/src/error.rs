//! The table layer's error type: the store's ([`strata_lsm::Error`]), wrapped, plus the kinds
//! only tables have.
//!
//! Corruption is never a string: table-layer corruption names the column family, the key
//! where it was found (empty when it is the family as a whole) and a typed reason. `Error` is
//! `Clone`, as the store's is.

use strata_planner::{JsonFault, StatsError, Value};

use crate::table::{KeyError, RecordError};

/// What is wrong with table-layer data the engine read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// A key in a table or index column family does not decode.
    #[error("key: {0}")]
    Key(KeyError),
    /// A stored record or index entry does not decode.
    #[error("record: {0}")]
    Record(RecordError),
    /// An index entry names a shard its table does not have.
    #[error("an entry names shard {shard} of a table of {shards}")]
    ShardOutOfRange {
        /// The shard named.
        shard: u64,
        /// The table's shards.
        shards: usize,
    },
    /// A catalog entry is wrong.
    #[error("catalog: {0}")]
    Catalog(CatalogCorruption),
    /// An outbox entry or key is wrong.
    #[error("outbox: {0}")]
    Outbox(OutboxCorruption),
    /// The transaction state file (`TRANSACTIONS`) does not decode.
    #[error("transaction state: {0}")]
    TransactionState(TxnStateFault),
}

/// What is wrong with the transaction state file (`docs/formats/transactions.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxnStateFault {
    /// Shorter than its header and checksum.
    #[error("shorter than its header and checksum")]
    TooShort,
    /// The stored checksum does not match the bytes.
    #[error("checksum mismatch")]
    Checksum,
    /// The magic bytes are not the file's.
    #[error("not a transaction state file")]
    BadMagic,
    /// A field runs past the end.
    #[error("truncated")]
    Truncated,
    /// A format version this build does not read.
    #[error("a format version this build does not read")]
    UnknownVersion,
    /// The range count does not match the file's length.
    #[error("the range count does not match the length")]
    RangeCount,
    /// Ranges that are empty, out of order or overlap.
    #[error("ranges empty, out of order or overlapping")]
    RangesOutOfOrder,
}

/// What is wrong with the catalog (`sys/catalog`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogCorruption {
    /// A key is not UTF-8.
    #[error("a key is not UTF-8")]
    KeyNotUtf8,
    /// A key the catalog does not use.
    #[error("unknown key")]
    UnknownKey,
    /// A table definition does not parse or does not validate.
    #[error("table definition: {0}")]
    Definition(DefinitionFault),
    /// A table definition written by a newer build, in a catalog format this one cannot read.
    #[error("catalog format {found} is newer than this build's {supported}")]
    NewerFormat {
        /// The definition's format.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// A definition stored under one table's key defines another table.
    #[error("defines table {defined:?}")]
    NameMismatch {
        /// The name inside the definition.
        defined: String,
    },
    /// Statistics that do not decode.
    #[error("{0}")]
    Statistics(StatsError),
    /// Cost constants that do not parse or are not finite and non-negative.
    #[error("not valid cost constants")]
    CostModel,
    /// The next id is not a number.
    #[error("next_id is not a number")]
    NextId,
    /// A column family a definition names is missing.
    #[error("column family {0:?} the catalog names is missing")]
    MissingFamily(String),
    /// A row layout whose key is not `layout/<table id>/<number>`, whose names section does
    /// not decode, or a table whose layout numbers are not 0, 1, 2, … without a gap.
    #[error("row layout: {0}")]
    Layout(RecordError),
}

/// What is wrong with a stored table definition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefinitionFault {
    /// Not JSON of a definition's shape.
    #[error("{0}")]
    Json(JsonFault),
    /// It parses but breaks a rule a definition keeps (a name, a field list, the shard count,
    /// an index's options): the rule [`crate::TableDef::validate`] names.
    #[error("does not validate")]
    Invalid,
    /// Marked with an older catalog format than its contents need.
    #[error("marked format {marked} but needs format {needed}")]
    FormatTooOld {
        /// The format it is marked with.
        marked: u32,
        /// The format its contents need.
        needed: u32,
    },
}

/// What is wrong with an outbox (`sys/outbox` of a shard store).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutboxCorruption {
    /// A key that is not the 8-byte big-endian entry number.
    #[error("a key of {len} bytes, not 8")]
    KeyLength {
        /// Its length.
        len: usize,
    },
    /// The entry number `u64::MAX`, which the outbox never assigns.
    #[error("an entry numbered u64::MAX")]
    LastNumber,
    /// An entry names a shard the database does not have open.
    #[error("an entry names shard {0}, which is not open")]
    ShardNotOpen(u64),
}

/// The error type of the engine.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key-value store failed: I/O (with path and operation), store corruption (with
    /// file and offset), a store limit, or a closed or read-only store.
    #[error(transparent)]
    Store(#[from] strata_lsm::Error),
    /// Table-layer data read back fails a check: a key, a record, an index entry, the
    /// catalog or an outbox.
    #[error("corruption in {family}{}: {what}", key_suffix(key))]
    Corruption {
        /// The column family (`t/<table>`, `i/<table>/<index>`, `sys/catalog`, `sys/outbox`).
        family: String,
        /// The key the bad data is at or under (empty: the family as a whole).
        key: Vec<u8>,
        /// What is wrong.
        what: Corruption,
    },
    /// A caller passed something the engine cannot take; nothing was changed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something a caller named does not exist (a table, an index, a field).
    #[error("not found: {0}")]
    NotFound(String),
    /// Something a caller wants to create exists already (a table, an index, a row).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A transaction's commit found that another commit since its snapshot wrote something
    /// it read or wrote (a serialization conflict); nothing was written. Retry the
    /// transaction ([`Error::is_retryable`]).
    #[error("transaction conflict: {0}; retry the transaction")]
    TransactionConflict(ConflictCause),
    /// A write would give two rows the same value of a unique index; nothing was written.
    /// Not retryable: the value is taken.
    #[error(
        "unique violation: index {index:?} of table {table:?} is unique: value ({}) is taken by \
         the row with key ({})",
        listed(value),
        listed(key)
    )]
    // Boxed slices, not vectors: every `Result` of the engine is as large as its largest
    // error, and rows move through several of them (a 120-byte error cost scans 2 %).
    UniqueViolation {
        /// The table.
        table: Box<str>,
        /// The unique index.
        index: Box<str>,
        /// The index's field values that are taken, in the index's field order.
        value: Box<[Value]>,
        /// The primary key of the row that holds them (for an index made unique over
        /// existing rows: one of the rows that share them).
        key: Box<[Value]>,
    },
    /// A commit across shard stores failed part way (a store's write failed after others
    /// had written). The database accepts no more writes; reopen it: recovery completes the
    /// commit where every part is durable and removes its parts otherwise
    /// (`docs/transactions.md`). Reads still work.
    #[error(
        "a commit across shard stores failed part way; reopen the database (recovery \
         completes or removes that commit)"
    )]
    CommitIncomplete,
    /// A record or field is larger than the engine allows; nothing was written.
    #[error("{what} of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The database is shutting down.
    #[error("the database is closed")]
    Closed,
    /// A change feed fell past its retention limit and gave up the changes it had not
    /// acknowledged (`OnLag::Release`): drop it, and start a new one from a checkpoint.
    #[error(
        "feed {0:?} fell past its retention limit and its changes were released; drop it and \
         start again from a checkpoint"
    )]
    FeedLagging(String),
    /// A backup's manifest or one of its files fails its check (`strata::backup::verify`,
    /// `restore`); a restore that finds it writes nothing.
    #[error("backup {id} is damaged: {file}: {what}")]
    BackupDamaged {
        /// The backup.
        id: u64,
        /// The file that fails the check.
        file: String,
        /// What is wrong with it.
        what: BackupFault,
    },
    /// Something could not be encoded for storage (a bug, never the data's fault); nothing
    /// was written.
    #[error("{what} does not encode: {reason}")]
    Encode {
        /// What was being encoded.
        what: Encoded,
        /// Why the encoder refused it.
        reason: JsonFault,
    },
}

/// What is wrong with a file of a backup ([`Error::BackupDamaged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackupFault {
    /// The manifest lists the file, and the backup directory does not have it.
    #[error("missing")]
    Missing,
    /// The file's size is not the one the manifest lists.
    #[error("{found} bytes, the manifest says {expected}")]
    Size {
        /// What the manifest lists.
        expected: u64,
        /// What the file has.
        found: u64,
    },
    /// The file's contents do not match the checksum the manifest lists.
    #[error("its checksum does not match the manifest's")]
    Checksum,
    /// The backup's manifest itself does not decode.
    #[error("the manifest: {0}")]
    Manifest(BackupFormatFault),
}

/// Why a backup manifest does not decode (`docs/formats/backup.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackupFormatFault {
    /// Shorter than the fixed header and checksum.
    #[error("too short")]
    TooShort,
    /// The checksum does not match the contents.
    #[error("checksum mismatch")]
    Checksum,
    /// Not a backup manifest.
    #[error("bad magic")]
    BadMagic,
    /// A format version this build does not read.
    #[error("unknown version")]
    UnknownVersion,
    /// More files than the manifest has bytes for.
    #[error("file count out of range")]
    FileCount,
    /// A file name that is empty, too long, or not a store file's name.
    #[error("bad file name")]
    BadName,
    /// Ends inside a file's entry.
    #[error("truncated")]
    Truncated,
    /// Bytes after the last file.
    #[error("bytes after the last file")]
    TrailingBytes,
    /// The manifest's id is not the one its name gives.
    #[error("its id is not its file name's")]
    WrongId,
}

/// What the engine was encoding for storage when [`Error::Encode`] happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Encoded {
    /// A table definition (the catalog).
    #[error("a table definition")]
    TableDefinition,
    /// A table's statistics (the catalog).
    #[error("statistics")]
    Statistics,
}

/// Why a transaction could not commit. Every cause is retryable: begin again and redo the
/// reads and writes.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConflictCause {
    /// A commit in flight when the transaction began could not be checked key by key.
    #[error("a write committed since the snapshot could not be checked")]
    Unchecked,
    /// Another commit since the snapshot wrote a key the transaction read.
    #[error("{family} key {} it read was written since its snapshot", hex(key))]
    KeyRead {
        /// The column family (`t/<table>`, `i/<table>/<index>`) and its shard store.
        family: String,
        /// The key, as stored.
        key: Vec<u8>,
    },
    /// Another commit since the snapshot wrote a key inside a range the transaction read
    /// (a query's scan or index range).
    #[error(
        "{family} key {}, in a range it read, was written since its snapshot",
        hex(key)
    )]
    RangeRead {
        /// The column family and its shard store.
        family: String,
        /// The key written, as stored.
        key: Vec<u8>,
    },
    /// A row the transaction inserts was inserted by another commit since its snapshot.
    #[error(
        "table {table:?} has a row with key ({}) inserted since its snapshot",
        listed(key)
    )]
    KeyTaken {
        /// The table.
        table: String,
        /// The row's primary key.
        key: Vec<Value>,
    },
}

fn listed(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().map(|v| v.sql_literal().to_string()).collect();
    shown.join(", ")
}

fn hex(key: &[u8]) -> String {
    key.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_suffix(key: &[u8]) -> String {
    if key.is_empty() {
        String::new()
    } else {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        format!(" at key {hex}")
    }
}

impl Error {
    /// Whether running the same work again may succeed: a transaction's serialization
    /// conflict (begin a new transaction and redo its reads and writes).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::TransactionConflict(_))
    }

    /// Whether this is an I/O error or carries one.
    pub fn is_io(&self) -> bool {
        matches!(self, Error::Store(e) if e.is_io())
    }

    /// The operating system's error, if this is (or carries) one.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Store(e) => e.io_error(),
            _ => None,
        }
    }

    /// Whether this reports corruption, of the store's files or of table-layer data.
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Store(e) => e.is_corruption(),
            Error::Corruption { .. } => true,
            _ => false,
        }
    }

    /// Whether the database refuses writes after an earlier failure (until reopened).
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Error::Store(strata_lsm::Error::ReadOnly(_)) | Error::CommitIncomplete
        )
    }

    /// Whether something named does not exist: a table, index or field, or a column family.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::NotFound(_) | Error::Store(strata_lsm::Error::NotFound(_))
        )
    }

    /// Whether the database or its store is shutting down.
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            Error::Closed | Error::Store(strata_lsm::Error::Closed)
        )
    }

    /// Table-layer corruption of `family`, found at `key`.
    pub(crate) fn corrupt(family: &str, key: &[u8], what: Corruption) -> Error {
        Error::Corruption {
            family: family.to_owned(),
            key: key.to_vec(),
            what,
        }
    }
}

/// The engine's result type.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::Error;

    /// Every `Result` of the engine is as large as its largest error, and a row moves
    /// through several of them on its way out of a query: an error of 120 bytes (the first
    /// `UniqueViolation` with five vectors) cost scans 2 % and covering reads 6 %.
    #[test]
    fn the_error_stays_as_small_as_a_row_result_needs() {
        assert!(
            std::mem::size_of::<Error>() <= 80,
            "{}",
            std::mem::size_of::<Error>()
        );
    }
}
