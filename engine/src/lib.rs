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

/// The key-value store (the `strata-lsm` crate).
pub use strata_lsm as lsm;
pub use strata_lsm::fs;

pub use error::{
    CatalogCorruption, ConflictCause, Corruption, DefinitionFault, Encoded, Error,
    OutboxCorruption, Result, TxnStateFault,
};
/// The store's options, for [`Store::open`] (and inside [`Options::store`] for a database).
pub use strata_lsm::Options as StoreOptions;
pub use strata_lsm::RecoveryMode;
pub use strata_lsm::fuzzing;
pub use strata_lsm::{
    CfStats, CollectedTable, ColumnFamily, Cursor, Iter, LevelStats, MAX_BATCH_BYTES,
    MAX_KEY_BYTES, MAX_VALUE_BYTES, ReadOptions, SeqNo, Snapshot, Store, WriteBatch, WriteOptions,
    WriteStalls,
};
pub use strata_planner::{
    Access, Candidate, Consistency, CostModel, DIVE_LIMIT, Dive, Hint, IndexState, Observations,
    Op, Order, Plan, Predicate, Projection, Query, Scope, SqlLiteral, TableStats, Value, ValueKind,
    WrongKind,
};
pub use table::{
    Analysis, BulkLoad, Db, DbSnapshot, ExecStats, FieldNames, IndexDef, IndexLag, IndexOptions,
    Maintenance, Mutation, Options, OwnedRows, OwnedTransaction, ProblemKind, Record, Rows,
    TableBatch, TableDef, TableOptions, Transaction, TxRows, VerifyReport,
};
