//! One row by its whole primary key, read without a stream.
//!
//! A query that binds every primary-key field to one value reads at most one row: the
//! lookup, the re-check of what the key does not answer, and the row's build, with the
//! table's pooled row reader. A stream for it (its source, read-ahead, fetch buffers, its
//! shared handles and their release) cost `Db::query` ~3,600 of a point query's ~21,600
//! instructions (callgrind; `Db::get`'s whole lookup and full decode is ~15,400).

use strata_planner::Query;
use strata_planner::selectivity::Constraints;

use crate::error::Result;
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::record::Record;
use crate::table::commit::resolver::ReadRange;
use crate::table::db::Table;
use crate::table::read::access::{row_reader, single_key};
use crate::table::read::rows::ExecStats;
use crate::table::read::snapshot::DbSnapshot;
use crate::table::read::stream::{Mode, matches};

/// What a point read found.
pub(crate) struct PointRead {
    /// The row, if it exists at the snapshot and passes the re-check; its fields those the
    /// query returns, orders by or tests (every field when the query returns them all).
    pub(crate) record: Option<Record>,
    /// Whether the record holds only fields of the query's projection.
    pub(crate) built_projected: bool,
    pub(crate) stats: ExecStats,
    /// The key read, as a transaction validates it (when asked for).
    pub(crate) read: Option<ReadRange>,
}

/// Reads `query`'s one row of `table` at `at`, if its predicates name a single primary key
/// (`None` otherwise: the query runs through streams); with the key read when `recorded`.
pub(crate) fn read_point(
    table: &Table,
    query: &Query,
    by_field: &Constraints<'_>,
    at: &DbSnapshot,
    recorded: bool,
) -> Result<Option<PointRead>> {
    let Some((key, predicates)) = single_key(table, &query.predicates, by_field) else {
        return Ok(None);
    };
    let shard = &table.shards[table.fact_shard(&key)];
    let bytes = shard.store.store.get_at(&shard.fact, &key, at.lsm())?;
    let mut stats = ExecStats {
        rows_read: 1,
        fetches: 1,
        ..ExecStats::default()
    };
    let mut reader = row_reader(table, query, &predicates, Mode::Fact);
    let built = bytes.as_deref().map(|bytes| {
        // A row its key names is likely to pass: built first and tested on its record when
        // the reader builds every tested field, as a stream's fetch does.
        if reader.builds_tested() {
            let record = reader.build_spared(bytes)?;
            Ok(matches(&record, &predicates).then_some(record))
        } else if reader.test_passes(bytes, &predicates)? {
            reader.build_spared(bytes).map(Some)
        } else {
            Ok(None)
        }
    });
    let built_projected = query
        .projection
        .as_ref()
        .is_some_and(|fields| reader.keeps_only(fields));
    if built.is_some() {
        table.share_row_layout(&reader);
    }
    table.readers.give_back(reader);
    let record = built
        .transpose()
        .map_err(|e| record_corrupt(shard.fact.name(), &key, e))?
        .flatten()
        // The query's `OR`s, on the fields the reader built for them.
        .filter(|record| {
            let value_of = |f: &str| record.value(f);
            query.conditions.iter().all(|c| c.matches(&value_of))
        });
    stats.rows_matched = u64::from(record.is_some());
    Ok(Some(PointRead {
        record,
        built_projected,
        stats,
        read: recorded.then(|| ReadRange::key(shard.store.number, shard.fact.id(), &key)),
    }))
}
