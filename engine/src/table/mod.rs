//! The table layer: the Index Table pattern as an API (`docs/architecture.md`, "Tables").
//!
//! A table is a *fact* column family keyed by its primary key plus one column family per
//! index, keyed by the index's fields then the primary key, whose entries carry nothing more
//! (`KeysOnly`), some fields (`Include`) or the whole record (`All`). A table has one or more
//! shards, each in its own store. Writes maintain sync indexes in the same atomic batch as the
//! row, and async (and global) ones through an outbox the indexer thread applies; queries go
//! through the planner and run across shards in parallel.
//!
//! - [`record`]: `Record`, the `record!` macro, the stored record format; `FieldNames`
//!   (`field_names`), name lists shared by many records.
//! - [`key`]: the order-preserving tuple code for keys.
//! - [`catalog`]: table and index definitions, stored in a system column family.
//! - [`outbox`]: the outbox entry format and the tracker of its hand-off.
//! - `db` (with `schema`, the DDL), `write`, `load`, `indexer`, `backfill`, `query` (with
//!   `stream`), `verify`, `analyze`:
//!   the `Db` API.

mod access;
mod advice;
mod analyze;
mod backfill;
mod byte_test;
mod calibrate;
pub mod catalog;
mod correlation;
mod db;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod entry;
mod field_names;
pub mod format;
mod indexer;
pub mod key;
mod key_number;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod layouts;
mod load;
mod name_list;
mod options;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod outbox;
mod query;
pub mod record;
mod record_codec;
mod resolver;
mod row_reader;
mod schema;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod sketch;
mod stream;
mod txn;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod txn_state;
mod upgrade;
mod verify;
mod write;

pub use advice::{
    IndexAdvice, IndexUsage, MAX_INCLUDE_FIELDS, MIN_CANDIDACIES, MIN_FETCHING_PLANS, Note,
};
pub use analyze::MAX_ANALYZED_FIELDS;
pub use calibrate::CALIBRATION_ROWS;
pub use catalog::{IndexDef, IndexOptions, Maintenance, TableDef, TableOptions};
pub use db::Db;
pub use field_names::FieldNames;
pub use indexer::IndexLag;
pub use key::{KeyError, KeyFormat};
pub use load::{BulkLoad, FALLBACK_BATCH_ROWS, RUN_BYTES};
pub use options::Options;
pub use query::{Analysis, DEFAULT_ROW_BYTES, ExecStats, OwnedRows, Rows};
pub use record::{Record, RecordError};
pub use txn::{DbSnapshot, OwnedTransaction, Transaction, TxRows};
pub use verify::{IndexReport, Problem, ProblemKind, RepairReport, VerifyReport};
pub use write::{Mutation, TableBatch};
