//! `strata`: the engine. It holds the LSM store — column families, atomic write batches with
//! group commit over the `strata-wal` log, memtables, flushes to `strata-sstable` tables, a
//! manifest, snapshots and iterators — and will hold the table layer on top (records,
//! order-preserving keys, fact and index tables, driven by `strata-planner`).
//!
//! ```
//! use strata::{Options, ReadOptions, Store, WriteOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), Options::default())?;
//! let cf = store.default_cf();
//! store.put(&cf, b"apple", b"red")?;
//! store.put(&cf, b"pear", b"green")?;
//! let before = store.snapshot();
//! store.delete(&cf, b"apple")?;
//!
//! assert_eq!(store.get(&cf, b"apple")?, None);
//! assert_eq!(store.get_at(&cf, b"apple", &before)?.as_deref(), Some(&b"red"[..]));
//! let keys: Vec<_> = store
//!     .iter(&cf, ReadOptions::default().snapshot(&before))?
//!     .rev()
//!     .map(|kv| kv.map(|(k, _)| k))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(keys, [&b"pear"[..], &b"apple"[..]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! All file I/O goes through [`fs::FileSystem`]: [`fs::OsFs`] for real use and
//! [`fs::SimFs`] for crash and fault tests. The architecture is in `docs/architecture.md`.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod error;
pub mod fs;
pub mod lsm;
pub mod table;

pub use error::{Corruption, Error, Result};
pub use lsm::fuzzing;
pub use lsm::{
    CfStats, CollectedTable, ColumnFamily, Cursor, Iter, LevelStats, MAX_BATCH_BYTES,
    MAX_KEY_BYTES, MAX_VALUE_BYTES, Options, ReadOptions, SeqNo, Snapshot, Store, WriteBatch,
    WriteOptions, WriteStalls,
};
pub use strata_planner::{
    Consistency, CostModel, DIVE_LIMIT, Dive, Hint, IndexState, Observations, Op, Order, Plan,
    Predicate, Projection, Query, Scope, TableStats, Value,
};
pub use strata_wal::RecoveryMode;
pub use table::{
    Analysis, Db, ExecStats, IndexDef, IndexLag, IndexOptions, Maintenance, Mutation, ProblemKind,
    Record, Rows, TableBatch, TableDef, VerifyReport,
};
