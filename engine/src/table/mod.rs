//! The table layer: the Index Table pattern as an API (`docs/architecture.md`, "Tables").
//!
//! A table is a *fact* column family keyed by its primary key plus one column family per
//! index, keyed by the index's fields then the primary key, whose entries carry nothing more
//! (`KeysOnly`), some fields (`Include`) or the whole record (`All`). A table has one or more
//! shards, each in its own store. Writes maintain sync indexes in the same atomic batch as the
//! row, and async (and global) ones through an outbox the indexer thread applies; queries go
//! through the planner and run across shards in parallel.
//!
//! # The rooms
//!
//! One folder (or file) per concept, listed from the bottom up. A room uses only the rooms
//! above it in this list, never one below (`cli/tests/crate_edges.rs` checks it on every
//! `use`). Each room's `//!` says what it holds.
//!
//! | room | holds |
//! |---|---|
//! | [`codec`] | values, keys, records, layouts, the row reader: bytes and values only |
//! | [`catalog`] | table and index definitions, their stored form, the keys and index entries a definition gives a row (`catalog::entry`), rows read from entries (`catalog::covering`) |
//! | `stats` | file sketches, live statistics, correlation, index usage counters, planning inputs |
//! | `commit` | lock stripes, the resolver, the transaction state file, the outbox format and its tracker |
//! | `db` | the handle: `Db`, what its threads share (`Shared`), an open `Table`, `Options` |
//! | `async_index` | the indexer thread that applies the outbox to async and global indexes |
//! | `write` | `TableBatch`, the write pipeline, unique checks, bulk load |
//! | `read` | planning a query, access paths, per-shard streams, `Rows`, `DbSnapshot` |
//! | `txn` | transactions; commits across stores after a crash (`txn::recovery`) |
//! | `ddl` | creating and dropping tables and indexes; building a new index (`ddl::backfill`) |
//! | `feed` | change feeds: `create_feed`, `drop_feed`, `feeds`, the reader's `poll` and `ack` (`feed::reader`) |
//! | `tune` | `analyze` and its thread, index advice |
//! | `verify` | `verify` and `repair` |
//! | `backup` | `Db::checkpoint`, the consistent cut under it, incremental backups (`backup::archive`) |
//! | `open` | `Db::open` and `Db::close`, the record-upgrade hook |
//! | `calibrate` | `Db::calibrate`: measures this machine on a scratch database it opens |
//!
//! Each room adds its part of the API to [`Db`] in its own `impl Db` block: the handle is
//! defined in `db`, below every room that has an operation, so each such room uses it
//! without a circle.

pub mod catalog;
pub mod codec;

pub(crate) mod async_index;
pub(crate) mod backup;
pub(crate) mod calibrate;
pub(crate) mod commit;
pub(crate) mod db;
pub(crate) mod ddl;
pub(crate) mod feed;
pub(crate) mod open;
pub(crate) mod read;
pub(crate) mod stats;
pub(crate) mod tune;
pub(crate) mod txn;
pub(crate) mod verify;
pub(crate) mod write;

// The format modules' former paths (`strata::table::key`, …), for the fuzz targets and
// white-box tests.
pub use catalog::entry;
pub use codec::{format, key, layouts, record};
pub use commit::{change_log, outbox, txn_state};
pub use stats::sketch;

pub use async_index::indexer::IndexLag;
pub use backup::Checkpoint;
pub use calibrate::CALIBRATION_ROWS;
pub use catalog::{
    ColumnDef, ColumnType, IndexDef, IndexOptions, Maintenance, StatisticsOptions, TableDef,
    TableOptions,
};
pub use codec::field_names::FieldNames;
pub use codec::key::{KeyError, KeyFormat};
pub use codec::record::{Record, RecordError};
pub use codec::value_ref::ValueRef;
pub use commit::change_log::{FeedOptions, OnLag};
pub use db::Db;
pub use db::options::Options;
pub use feed::reader::{Change, Feed, Position};
pub use feed::{FeedAck, FeedDef, FeedInfo, FeedState};
pub use read::query::{Analysis, DEFAULT_ROW_BYTES};
pub use read::row_ref::RowRef;
pub use read::rows::{ExecStats, OwnedRows, Rows};
pub use read::snapshot::DbSnapshot;
pub use stats::advice::{
    IndexAdvice, IndexUsage, MAX_INCLUDE_FIELDS, MIN_CANDIDACIES, MIN_FETCHING_PLANS, Note,
};
pub use stats::sketch::MAX_ANALYZED_FIELDS;
pub use txn::{OwnedTransaction, Transaction, TxRows};
pub use verify::{IndexReport, Problem, ProblemKind, RepairReport, VerifyReport};
pub use write::load::{BulkLoad, FALLBACK_BATCH_ROWS, RUN_BYTES};
pub use write::{Mutation, TableBatch};
