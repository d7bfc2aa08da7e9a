//! The read room: from a planned query to rows.
//!
//! - `query`: `Db::query` and its forms (`explain`, `explain_analyze`, owned rows): planning
//!   with the statistics of the moment, the point-query fast path.
//! - `rows`: `Rows`, the executor that fills, merges, sorts and projects the streams;
//!   `row_ref`: `RowRef`, a row `Rows::next_ref` lends where it lies.
//! - `point`: one row by its whole primary key, read without a stream.
//! - `access`: a chosen plan turned into key ranges or keys per shard.
//! - `stream`: one shard's reader in its four modes (fact range, keys, covering index entries,
//!   index entries with fetches), with prefetching batched reads.
//! - `snapshot`: `DbSnapshot`, one seqno across every shard store.
//!
//! Uses the rooms below it: `codec`, `catalog`, `stats` (planning inputs), `commit` (the read
//! ranges a transaction validates) and `db`.

pub(crate) mod access;
pub(crate) mod point;
pub(crate) mod query;
pub(crate) mod row_ref;
pub(crate) mod rows;
pub(crate) mod snapshot;
pub(crate) mod stream;
