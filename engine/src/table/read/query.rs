//! Planned queries: `Db::query`, `Db::explain`, `Db::explain_analyze`.
//!
//! 1. Plan: the planner gets the table's `Ready` indexes and its statistics — those of the
//!    last `analyze`, or the documented defaults (row count and size from the store's counts;
//!    PostgreSQL's default selectivities for every field).
//! 2. Read at one snapshot per shard store through the chosen access path, one `Stream`
//!    (`read/stream.rs`) per shard visited: the fact family (whole, or the primary-key ranges the
//!    bound key fields give, or point lookups routed to their shards), or an index family over
//!    the ranges its bound fields give (equality prefixes, then an optional range; for a global
//!    index, each range only in the shard its leading value hashes to), with the record built
//!    from the entry when it covers the query, else fetched.
//! 3. Each stream re-checks the whole predicate on every row, whatever the path. `Rows` fills
//!    the streams (in parallel for big queries), merges them in the query's order when each
//!    gives it, else sorts; projects; stops at `LIMIT`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_planner::selectivity::constraints;
use strata_planner::{
    Access, Candidate, CostModel, DIVE_LIMIT, Dive, Formula, Observations, Op, Plan, Predicate,
    Query, TableStats, Value, Wanted, choose_observed, choose_to_run, wanted_with_rows,
};

use crate::error::{Error, Result};
use crate::table::codec::format::KEY_NULL;
use crate::table::codec::key::decode_value;
use crate::table::db::{Db, Table};
use crate::table::read::access::ranges;
use crate::table::read::rows::{DbRef, ExecStats, OwnedRows, Reading, Rows};

/// Average row size assumed for a table the store has no size for yet.
pub const DEFAULT_ROW_BYTES: f64 = 100.0;

/// The plan and what running it did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Analysis {
    /// The plan, with every candidate.
    pub plan: Plan,
    /// What happened.
    pub actual: ExecStats,
    /// Wall time from planning to the last row.
    pub total_time: Duration,
}

impl std::fmt::Display for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.plan)?;
        let a = &self.actual;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(f, "actual:")?;
        writeln!(f, "  plan     {:>10.3} ms", ms(a.plan_time))?;
        writeln!(
            f,
            "  read     {:>10.3} ms  {} rows or entries (estimated {})",
            ms(a.read_time),
            a.rows_read,
            strata_planner::RowCount(self.plan.chosen.rows_read)
        )?;
        write!(
            f,
            "  fetch    {:>10.3} ms  {} records",
            ms(a.fetch_time),
            a.fetches
        )?;
        if a.fetches_merged > 0 {
            write!(f, ", {} walking along the table", a.fetches_merged)?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "  filter   {:>10.3} ms  {} matched (estimated {})",
            ms(a.filter_time),
            a.rows_matched,
            strata_planner::RowCount(self.plan.chosen.estimated_rows)
        )?;
        writeln!(f, "  sort     {:>10.3} ms", ms(a.sort_time))?;
        writeln!(
            f,
            "  total    {:>10.3} ms  {} rows returned",
            ms(self.total_time),
            a.rows_returned
        )
    }
}

impl Db {
    /// The statistics the planner uses for `t` (`stats/sketch.rs` explains the choice), shared, and
    /// the live row count that replaces their `row_count`: the distributions of a fresh
    /// `analyze`, else of the live table files' merged sketches, else of a stale `analyze`,
    /// else none (every field gets the planner's default selectivities); the row count
    /// always from the live files and memtables.
    pub(crate) fn planning_stats(&self, t: &Table) -> Result<(Arc<TableStats>, u64)> {
        let (mut mem_rows, mut stored_rows, mut bytes, mut entries) = (0i64, 0i64, 0u64, 0u64);
        for shard in &t.shards {
            let s = shard.store.store.sizes(&shard.fact)?;
            mem_rows += s.memtable_entries as i64 - 2 * s.memtable_deletions as i64;
            stored_rows += s.table_entries as i64 - 2 * s.table_deletions as i64;
            entries += s.memtable_entries + s.table_entries;
            bytes += s.memtable_bytes + s.table_bytes;
        }
        let analyzed = &t.planning().analyzed;
        let fresh = |live: u64| {
            analyzed.as_ref().is_some_and(|a| {
                let threshold = self.shared.analyze_threshold(a.row_count);
                (t.changed.load(std::sync::atomic::Ordering::Relaxed) as f64) < threshold
                    && (live as f64 - a.row_count as f64).abs() < threshold
            })
        };
        // A fresh analysis answers without the files' sketches: the live count from the
        // tables' own entry counts spares merging them, which the first query of a process
        // paid (45 ms of a 50 ms `strata query` on a 1M-row table).
        let counted = (stored_rows + mem_rows).max(0) as u64;
        if let Some(a) = analyzed
            && fresh(counted)
        {
            return Ok((Arc::clone(a), counted));
        }
        let facts = t.shards.iter().map(|s| (&s.store.store, &s.fact));
        let merged = t.live.merged(&t.def.name, facts)?;
        let live =
            (merged.stats.row_count as i64 + merged.unsketched_rows + mem_rows).max(0) as u64;
        let analyzed_fresh = fresh(live);
        let stats = match analyzed {
            Some(analyzed) if analyzed_fresh || merged.sketched_rows == 0 => Arc::clone(analyzed),
            _ if merged.sketched_rows > 0 => Arc::clone(&merged.stats),
            _ => Arc::new(TableStats {
                avg_row_bytes: if entries > 0 {
                    bytes as f64 / entries as f64
                } else {
                    DEFAULT_ROW_BYTES
                },
                ..TableStats::default()
            }),
        };
        Ok((stats, live))
    }

    /// The statistics the planner uses for `table` now: see `explain` for what it does
    /// with them.
    pub fn planning_statistics(&self, table: &str) -> Result<TableStats> {
        let (stats, live) = self.shared_planning_statistics(table)?;
        let mut stats = Arc::unwrap_or_clone(stats);
        stats.row_count = live;
        Ok(stats)
    }

    /// [`Db::planning_statistics`] without copying them (their histograms and most-common
    /// lists): the planner's own, shared, with the live row count beside them (their
    /// `row_count` may be older).
    pub fn shared_planning_statistics(&self, table: &str) -> Result<(Arc<TableStats>, u64)> {
        let t = self.shared.handle(table)?;
        self.planning_stats(&t)
    }

    /// The plan for `query`: with its reason when it is `shown` (`explain`), without when it
    /// is only run.
    fn plan_for(&self, t: &Table, query: &Query, shown: bool) -> Result<Plan> {
        if let Some(plan) = self.point_plan(t, query, shown)? {
            return Ok(plan);
        }
        let (stats, live) = self.planning_stats(t)?;
        let info = &t.planning().info;
        let wanted = wanted_with_rows(query, info, &stats, live);
        let mut observed = if wanted.is_empty() {
            Observations::default()
        } else {
            self.observe(t, query, &wanted)?
        };
        observed.rows = Some(live);
        let choose = if shown {
            choose_observed
        } else {
            choose_to_run
        };
        choose(query, info, &stats, &self.cost_model(), &observed)
            .map_err(|e| Error::InvalidArgument(e.to_string()))
    }

    /// The plan of a query that binds every primary-key field to one value, without
    /// statistics: one point lookup returns at most one row, so no index or scan can beat
    /// it, and what the statistics would say cannot change the choice. Its candidates are
    /// the lookup and the scan; the row count is the store's entry count (no sketches
    /// merged, no dives). `None` for any other query, or one with a hint.
    fn point_plan(&self, t: &Table, query: &Query, shown: bool) -> Result<Option<Plan>> {
        if query.hint.is_some() {
            return Ok(None);
        }
        // Most queries do not name every key field: they need no constraints built.
        let named = |f: &String| query.predicates.iter().any(|p| &p.field == f);
        if !t.def.primary_key.iter().all(named) {
            return Ok(None);
        }
        let by_field = constraints(&query.predicates);
        let pinned = |f: &String| {
            by_field
                .get(f)
                .is_some_and(|c| !c.is_null && c.values.as_ref().is_some_and(|v| v.len() == 1))
        };
        if !t.def.primary_key.iter().all(pinned) {
            return Ok(None);
        }
        let (mut entries, mut bytes) = (0u64, 0u64);
        for shard in &t.shards {
            let s = shard.store.store.sizes(&shard.fact)?;
            entries += s.memtable_entries + s.table_entries;
            bytes += s.table_bytes + s.memtable_bytes;
        }
        let stats = TableStats {
            row_count: entries,
            avg_row_bytes: if entries > 0 {
                bytes as f64 / entries as f64
            } else {
                DEFAULT_ROW_BYTES
            },
            ..TableStats::default()
        };
        let info = &t.planning().key_only;
        let choose = if shown {
            choose_observed
        } else {
            choose_to_run
        };
        let plan = choose(
            query,
            info,
            &stats,
            &self.cost_model(),
            &Observations::default(),
        )
        .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(Some(plan))
    }

    /// Reads what the planner wants ([`strata_planner::observe`]): bounded dives into
    /// indexes, and fields' true extremes from the indexes that lead with them.
    fn observe(&self, t: &Table, query: &Query, wanted: &Wanted) -> Result<Observations> {
        let by_field = constraints(&query.predicates);
        let mut observed = Observations::default();
        let read = crate::lsm::ReadOptions::default;
        for (name, bound) in &wanted.dives {
            let (i, _) = t.index(name)?;
            let mut counted = 0u64;
            let mut complete = true;
            'shards: for shard in &t.shards {
                let store = &shard.store.store;
                let mut cursor = store.cursor(&shard.indexes[i], read())?;
                for (lower, upper) in ranges(t.def.key_format(), bound, &by_field) {
                    cursor.seek(&lower);
                    while cursor.valid() && upper.as_ref().is_none_or(|u| cursor.key() < &u[..]) {
                        if counted == DIVE_LIMIT {
                            complete = false;
                            break 'shards;
                        }
                        counted += 1;
                        cursor.next();
                    }
                    cursor.status()?;
                }
            }
            observed.dives.insert(
                name.clone(),
                Dive {
                    entries: counted,
                    complete,
                },
            );
        }
        for (field, name) in &wanted.extremes {
            let (i, _) = t.index(name)?;
            let mut extremes: Option<(Value, Value)> = None;
            for shard in &t.shards {
                let store = &shard.store.store;
                let mut cursor = store.cursor(&shard.indexes[i], read())?;
                // NULL sorts first: the smallest value is the first entry after the NULLs.
                cursor.seek(&[KEY_NULL + 1]);
                let first = cursor.valid().then(|| decode_value(cursor.key()));
                cursor.seek_to_last();
                let last = cursor.valid().then(|| decode_value(cursor.key()));
                cursor.status()?;
                let (Some(Ok((min, _))), Some(Ok((max, _)))) = (first, last) else {
                    continue;
                };
                if max.is_null() {
                    continue;
                }
                extremes = Some(match extremes {
                    None => (min, max),
                    Some((a, b)) => (a.min(min), b.max(max)),
                });
            }
            if let Some(found) = extremes {
                observed.extremes.insert(field.clone(), found);
            }
        }
        Ok(observed)
    }

    /// The planner's choice for `query` on `table`, with every candidate and its cost.
    pub fn explain(&self, table: &str, query: &Query) -> Result<Plan> {
        let t = self.shared.handle(table)?;
        self.plan_for(&t, query, true)
    }

    /// Runs `query` on `table`: its rows, through the plan the planner chose (or the hint).
    pub fn query(&self, table: &str, query: &Query) -> Result<Rows<'_>> {
        let t = self.shared.handle(table)?;
        let plan = match lookup_plan(&t, query, &self.cost_model()) {
            Some(plan) => plan,
            None => self.plan_for(&t, query, false)?,
        };
        t.usage.planned(&t.def, query, &plan);
        Rows::new(
            DbRef::Borrowed(self),
            t,
            query.clone(),
            &plan,
            false,
            Reading::default(),
        )
    }

    /// [`Db::query`] for a database shared behind an [`Arc`]: the rows hold a clone of the
    /// `Arc` instead of a borrow, so they can move to another thread or live in a `'static`
    /// stream (an async task, a SQL engine's scan). The database stays open while they do.
    pub fn query_owned(self: &Arc<Self>, table: &str, query: &Query) -> Result<OwnedRows> {
        Db::query_with(
            DbRef::Shared(Arc::clone(self)),
            table,
            query,
            Reading::default(),
        )
    }

    /// [`Db::query`] with the options of a snapshot read or a transaction's read, over `db`
    /// borrowed or shared.
    pub(crate) fn query_with<'a>(
        db: DbRef<'a>,
        table: &str,
        query: &Query,
        reading: Reading<'_>,
    ) -> Result<Rows<'a>> {
        let t = db.shared.handle(table)?;
        let plan = match lookup_plan(&t, query, &db.cost_model()) {
            Some(plan) => plan,
            None => db.plan_for(&t, query, false)?,
        };
        t.usage.planned(&t.def, query, &plan);
        Rows::new(db, t, query.clone(), &plan, false, reading)
    }

    /// Runs `query` to the end and reports the plan with what actually happened: rows read,
    /// fetched, matched and returned, and time per step (summed over shards, which may run
    /// at once).
    pub fn explain_analyze(&self, table: &str, query: &Query) -> Result<Analysis> {
        let start = Instant::now();
        let t = self.shared.handle(table)?;
        let plan = self.plan_for(&t, query, true)?;
        let plan_time = start.elapsed();
        t.usage.planned(&t.def, query, &plan);
        let mut rows = Rows::new(
            DbRef::Borrowed(self),
            t,
            query.clone(),
            &plan,
            true,
            Reading::default(),
        )?;
        for row in rows.by_ref() {
            row?;
        }
        let mut actual = rows.stats().clone();
        actual.plan_time = plan_time;
        Ok(Analysis {
            plan,
            actual,
            total_time: start.elapsed(),
        })
    }
}

/// The plan [`Db::query`] runs for a query without a hint that binds every primary-key field
/// to one value: the lookup, taken without costing anything. One point lookup returns at most
/// one row, so `explain` (which costs it against the scan, with numbers to show) chooses it
/// too on any table with a row; on an empty one either returns nothing. The plan carries no
/// other candidate and no formula: `Db::query` shows neither.
fn lookup_plan(t: &Table, query: &Query, model: &CostModel) -> Option<Plan> {
    if query.hint.is_some() || t.def.primary_key.is_empty() {
        return None;
    }
    // Each key field needs an `=` of one non-NULL value; any other predicate on it (a range,
    // a second `=`, IS NULL) goes to the planner.
    for field in &t.def.primary_key {
        let mut on_field = query.predicates.iter().filter(|p| &p.field == field);
        match (on_field.next(), on_field.next()) {
            (Some(Predicate { op: Op::Eq(v), .. }), None) if !v.is_null() => {}
            _ => return None,
        }
    }
    Some(Plan {
        chosen: Candidate {
            plan: "primary_key",
            index: None,
            access: Access::PrimaryKeyLookup { keys: 1 },
            rows_read: 1.0,
            estimated_rows: 1.0,
            cost: model.fetch_us,
            stops_early: false,
            formula: Formula::default(),
        },
        candidates: Vec::new(),
        reason: String::new(),
        observed: Observations::default(),
        estimates: Vec::new(),
    })
}
