//! The async-index room: index entries written after the row's commit.
//!
//! - `indexer`: the thread that applies the outbox's entries (written by the `write` room in
//!   the row's commit) to async and global indexes, and `wait_for_indexes` / `index_lag`.
//!
//! Uses the rooms below it: `codec`, `catalog`, `commit` (the outbox and its tracker) and
//! `db` (the handle). A new index's backfill is DDL (`ddl::backfill`).

pub(crate) mod indexer;
