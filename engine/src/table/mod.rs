//! The table layer: the Index Table pattern as an API (`docs/architecture.md`, "Tables").
//!
//! A table is a *fact* column family keyed by its primary key plus one column family per
//! index, keyed by the index's fields then the primary key, whose entries carry nothing more
//! (`KeysOnly`), some fields (`Include`) or the whole record (`All`). Writes maintain every
//! index in the same atomic batch as the row; queries go through the planner.
//!
//! - [`record`]: `Record`, the `record!` macro, the stored record format.
//! - [`key`]: the order-preserving tuple code for keys.
//! - [`catalog`]: table and index definitions, stored in a system column family.
//! - `db`, `write`, `backfill`, `query`, `verify`, `analyze`: the `Db` API.

mod analyze;
mod backfill;
pub mod catalog;
mod db;
pub mod entry;
pub mod format;
pub mod key;
mod query;
pub mod record;
mod verify;
mod write;

pub use analyze::MAX_ANALYZED_FIELDS;
pub use catalog::{IndexDef, TableDef};
pub use db::Db;
pub use key::KeyError;
pub use query::{Analysis, DEFAULT_ROW_BYTES, ExecStats, Rows};
pub use record::{Record, RecordError};
pub use verify::{IndexReport, Problem, ProblemKind, RepairReport, VerifyReport};
pub use write::{Mutation, TableBatch};
