//! `strata`: tables with index tables and a cost-based planner, on an LSM store.
//!
//! A table is a *fact* column family keyed by its primary key plus *index tables* keyed by
//! other fields, kept consistent in one atomic batch or through a durable outbox. Every
//! query is planned: the planner picks the primary key, an index or a scan from statistics.
//!
//! ```
//! use strata::{Db, Options, Predicate, Projection, Query, TableOptions, record};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default())?;
//! db.create_table("customers", ["id"], TableOptions::default())?;
//! db.create_index("customers", "by_town", ["town"], Projection::KeysOnly)?;
//! db.insert("customers", record! { "id" => 1, "name" => "Ada", "town" => "Ely" })?;
//! db.insert("customers", record! { "id" => 2, "name" => "Alan", "town" => "Wilmslow" })?;
//!
//! let query = Query::default().filter(Predicate::eq("town", "Ely"));
//! let names: Vec<String> = db
//!     .query("customers", &query)?
//!     .map(|row| row.map(|r| r.value("name").to_string()))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(names, ["Ada"]);
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The key-value store underneath is the `strata-lsm` crate, re-exported here as [`lsm`]
//! (with [`Store`] and its options, for users who want the store alone); all file I/O goes
//! through [`fs::FileSystem`]. The architecture is in `docs/architecture.md`.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod error;
pub mod table;

/// Incremental backups of a database ([`Db::backup`]) and what reads them: the backups in a
/// backup directory, checking one, restoring one, and removing old ones
/// (`docs/backups.md`).
pub mod backup {
    pub use crate::table::backup::archive::{
        BackupFile, BackupInfo, BackupManifest, MARKER, Purged, file_checksum, list, list_on,
        purge_old, purge_old_on, restore, restore_with, verify, verify_on,
    };
}

/// The key-value store (the `strata-lsm` crate).
pub use strata_lsm as lsm;
pub use strata_lsm::fs;

pub use error::{
    BackupFault, BackupFormatFault, CatalogCorruption, ConflictCause, Corruption, DefinitionFault,
    Encoded, Error, OutboxCorruption, Result, TxnStateFault,
};
/// The store's options, for [`Store::open`] (and inside [`Options::store`] for a database).
pub use strata_lsm::Options as StoreOptions;
pub use strata_lsm::RecoveryMode;
/// The store's write options, which [`Db::write`] and transactions' commits take.
pub use strata_lsm::WriteOptions;
pub use strata_lsm::fuzzing;
/// The store alone, for users who want only the key-value layer ([`Db::raw_store`] hands out
/// a database's own).
pub use strata_lsm::{SeqNo, Store};

// The store's other types once shared the crate root with the table layer's (`Snapshot` beside
// `DbSnapshot`, `WriteBatch` beside `TableBatch`, the store's 64 KiB `MAX_KEY_BYTES` beside a
// primary key's 4 KiB). They live under `strata::lsm::`; these aliases keep code written
// against the old paths compiling for one release (README, "Changes").
/// Deprecated path of [`lsm::CfStats`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::CfStats")]
pub type CfStats = strata_lsm::CfStats;
/// Deprecated path of [`lsm::CollectedTable`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::CollectedTable")]
pub type CollectedTable = strata_lsm::CollectedTable;
/// Deprecated path of [`lsm::ColumnFamily`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::ColumnFamily")]
pub type ColumnFamily = strata_lsm::ColumnFamily;
/// Deprecated path of [`lsm::Cursor`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::Cursor")]
pub type Cursor = strata_lsm::Cursor;
/// Deprecated path of [`lsm::Iter`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::Iter")]
pub type Iter = strata_lsm::Iter;
/// Deprecated path of [`lsm::LevelStats`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::LevelStats")]
pub type LevelStats = strata_lsm::LevelStats;
/// Deprecated path of [`lsm::ReadOptions`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::ReadOptions")]
pub type ReadOptions = strata_lsm::ReadOptions;
/// Deprecated path of [`lsm::Snapshot`] (a database's is [`DbSnapshot`]).
#[deprecated(
    since = "0.2.0",
    note = "use strata::lsm::Snapshot, or DbSnapshot for a database"
)]
pub type Snapshot = strata_lsm::Snapshot;
/// Deprecated path of [`lsm::WriteBatch`] (a table's is [`TableBatch`]).
#[deprecated(
    since = "0.2.0",
    note = "use strata::lsm::WriteBatch, or TableBatch for a table"
)]
pub type WriteBatch = strata_lsm::WriteBatch;
/// Deprecated path of [`lsm::WriteStalls`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::WriteStalls")]
pub type WriteStalls = strata_lsm::WriteStalls;
/// Deprecated path of [`lsm::MAX_BATCH_BYTES`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::MAX_BATCH_BYTES")]
pub const MAX_BATCH_BYTES: usize = strata_lsm::MAX_BATCH_BYTES;
/// Deprecated path of the store's [`lsm::MAX_KEY_BYTES`] (a primary key's limit is
/// `table::format::MAX_PRIMARY_KEY_BYTES`).
#[deprecated(since = "0.2.0", note = "use strata::lsm::MAX_KEY_BYTES")]
pub const MAX_KEY_BYTES: usize = strata_lsm::MAX_KEY_BYTES;
/// Deprecated path of [`lsm::MAX_VALUE_BYTES`].
#[deprecated(since = "0.2.0", note = "use strata::lsm::MAX_VALUE_BYTES")]
pub const MAX_VALUE_BYTES: usize = strata_lsm::MAX_VALUE_BYTES;
pub use strata_planner::{
    Access, Candidate, Condition, Consistency, CostModel, DIVE_LIMIT, Dive, Hint, IndexState,
    Observations, Op, Order, PartEstimate, Plan, Predicate, Projection, Query, RowCount, Scope,
    SqlLiteral, TableStats, UnionPart, Value, ValueKind, WrongKind,
};
pub use table::{
    Analysis, BulkLoad, Change, Checkpoint, ColumnDef, ColumnType, Db, DbSnapshot, ExecStats, Feed,
    FeedInfo, FeedOptions, FeedState, FieldNames, IndexDef, IndexLag, IndexOptions, Maintenance,
    Mutation, OnLag, Options, OwnedRows, OwnedTransaction, Position, ProblemKind, Record, RowRef,
    Rows, StatisticsOptions, TableBatch, TableDef, TableOptions, Transaction, TxRows, ValueRef,
    VerifyReport,
};
