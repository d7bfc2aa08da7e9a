//! Planned queries: `Db::query`, `Db::explain`, `Db::explain_analyze`.
//!
//! 1. Plan: the planner gets the table's `Ready` indexes and its statistics — those of the
//!    last `analyze`, or the documented defaults (row count and size from the store's counts;
//!    PostgreSQL's default selectivities for every field).
//! 2. Read at one snapshot per shard store through the chosen access path, one [`Stream`]
//!    (`stream.rs`) per shard visited: the fact family (whole, or the primary-key ranges the
//!    bound key fields give, or point lookups routed to their shards), or an index family over
//!    the ranges its bound fields give (equality prefixes, then an optional range; for a global
//!    index, each range only in the shard its leading value hashes to), with the record built
//!    from the entry when it covers the query, else fetched.
//! 3. Each stream re-checks the whole predicate on every row, whatever the path. `Rows` fills
//!    the streams (in parallel for big queries), merges them in the query's order when each
//!    gives it, else sorts; projects; stops at `LIMIT`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_planner::selectivity::constraints;
use strata_planner::{
    Access, Candidate, CostModel, DIVE_LIMIT, Dive, Formula, Observations, Op, Plan, Predicate,
    Query, TableInfo, TableStats, Value, Wanted, choose_observed, choose_to_run, wanted,
};

use crate::error::{Error, Result};
use crate::lsm::Snapshot;
use crate::table::access::{Direction, StreamKit, access_order, direction, ranges};
use crate::table::db::{Db, Table};
use crate::table::format::KEY_NULL;
use crate::table::key::decode_value;
use crate::table::record::Record;
use crate::table::resolver::ReadRange;
use crate::table::stream::{Mode, Source, Stream};
use crate::table::txn::DbSnapshot;

/// Average row size assumed for a table the store has no size for yet.
pub const DEFAULT_ROW_BYTES: f64 = 100.0;

/// What a query's execution did, for `explain_analyze`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ExecStats {
    /// Fact rows or index entries read.
    pub rows_read: u64,
    /// Records fetched from the fact family by primary key.
    pub fetches: u64,
    /// Of those, the ones fetched by walking a cursor along the fact family beside the
    /// index (its rows lying together there) rather than by lookups.
    pub fetches_merged: u64,
    /// Rows that passed the predicate re-check.
    pub rows_matched: u64,
    /// Rows returned (after `LIMIT`).
    pub rows_returned: u64,
    /// Time spent planning.
    pub plan_time: Duration,
    /// Time spent reading the table or index (fetches excluded).
    pub read_time: Duration,
    /// Time spent fetching records.
    pub fetch_time: Duration,
    /// Time spent re-checking predicates and projecting.
    pub filter_time: Duration,
    /// Time spent sorting for `ORDER BY`.
    pub sort_time: Duration,
}

/// A table's planner view, shared by every query planned on one published [`Table`].
pub(crate) struct Planning {
    /// The definition as the planner sees it.
    pub(crate) info: TableInfo,
    /// The same without its indexes: what a primary-key equality is planned on.
    pub(crate) key_only: TableInfo,
    /// The last `analyze`, ready to plan with (`collected_rows` fixed, so the live row count
    /// can replace `row_count` without copying the distributions).
    pub(crate) analyzed: Option<Arc<TableStats>>,
}

impl Table {
    /// The planner's view of this table, built once per published definition.
    pub(crate) fn planning(&self) -> &Planning {
        self.planning.get_or_init(|| Planning {
            info: self.def.planner_info(),
            key_only: TableInfo {
                indexes: Vec::new(),
                ..self.def.planner_info()
            },
            analyzed: self
                .stats
                .as_ref()
                .map(|s| Arc::new(for_planning(s.clone()))),
        })
    }
}

/// `stats` with `collected_rows` fixed to what the distributions saw, so that replacing
/// `row_count` with a live count keeps it.
pub(crate) fn for_planning(mut stats: TableStats) -> TableStats {
    if !stats.columns.is_empty() {
        stats.collected_rows = stats.collected_rows();
    }
    stats
}

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
            "  read     {:>10.3} ms  {} rows or entries (estimated {:.0})",
            ms(a.read_time),
            a.rows_read,
            self.plan.chosen.rows_read
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
            "  filter   {:>10.3} ms  {} matched (estimated {:.0})",
            ms(a.filter_time),
            a.rows_matched,
            self.plan.chosen.estimated_rows
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

/// The database a query or a transaction reads: borrowed ([`Db::query`], [`Db::begin`]) or
/// shared through an [`Arc`] ([`Db::query_owned`], [`Db::begin_owned`]), so that the owned
/// forms are `'static` and can move between threads.
#[derive(Clone)]
pub(crate) enum DbRef<'a> {
    Borrowed(&'a Db),
    Shared(Arc<Db>),
}

impl std::ops::Deref for DbRef<'_> {
    type Target = Db;

    fn deref(&self) -> &Db {
        match self {
            DbRef::Borrowed(db) => db,
            DbRef::Shared(db) => db,
        }
    }
}

/// The rows of [`Db::query_owned`]: [`Rows`] that hold the database by [`Arc`], `'static`
/// and [`Send`].
pub type OwnedRows = Rows<'static>;

/// The rows of a query, as an iterator. It reads at the snapshots taken when the query
/// started (one per shard store). After an error it yields nothing more.
///
/// On a sharded table each shard is a stream; a query expected to read many rows fills the
/// streams' buffers in parallel (scoped threads, a batch at a time), others read them in
/// turn. Streams are merged in the query's order when the access path gives it per shard.
pub struct Rows<'a> {
    db: DbRef<'a>,
    table: Arc<Table>,
    query: Arc<Query>,
    streams: Vec<Stream>,
    /// Each stream's rows read ahead, checked, not projected.
    heads: Vec<VecDeque<Record>>,
    /// Fields to merge the streams by, when each gives the query's order.
    merge_by: Option<Vec<String>>,
    /// The streams run backwards (a descending order the access path provides): merge them
    /// largest first.
    descending: bool,
    parallel: bool,
    /// Rows a stream reads ahead per fill.
    batch: usize,
    /// Checked, sorted and projected rows, when the query had to be sorted.
    ready: Option<VecDeque<Record>>,
    /// Every stream builds only fields of the query's projection: its rows need no
    /// projecting.
    built_projected: bool,
    stats: ExecStats,
    done: bool,
    /// What the query reads, for a transaction's validation (when asked for).
    read_ranges: Vec<ReadRange>,
}

/// How a query reads: at a given snapshot (else one taken now), and whether it records the
/// key ranges it reads for a transaction.
#[derive(Clone, Copy, Default)]
pub(crate) struct Reading<'s> {
    pub(crate) at: Option<&'s DbSnapshot>,
    pub(crate) record: bool,
}

/// The key ranges `streams` read, as a transaction validates them: each range of a fact or
/// sync index family, each key looked up; a read through an async index (whose entries are
/// written after the commit) counts as a read of every fact shard.
fn read_ranges(table: &Table, streams: &[Stream]) -> Vec<ReadRange> {
    let whole_table = || {
        table
            .shards
            .iter()
            .map(|s| ReadRange::whole(s.store.number, s.fact.id()))
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for stream in streams {
        let store = stream.store.number;
        if let Mode::Index {
            recheck_entry: true,
            ..
        } = stream.mode
        {
            return whole_table();
        }
        match &stream.source {
            Source::Ranges { cf, ranges, .. } => {
                for (lower, upper) in ranges {
                    out.push(ReadRange::new(store, cf.id(), lower, upper.as_deref()));
                }
            }
            Source::Keys(keys) => {
                let fact = table.shards[stream.shard].fact.id();
                for key in keys {
                    out.push(ReadRange::key(store, fact, key));
                }
            }
            Source::Pairs(_) => return whole_table(),
        }
    }
    out
}

impl Rows<'_> {
    /// The key ranges this query reads (empty unless it was asked to record them).
    pub(crate) fn take_read_ranges(&mut self) -> Vec<ReadRange> {
        std::mem::take(&mut self.read_ranges)
    }
}

impl std::fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.table.def.name)
            .field("streams", &self.streams.len())
            .field("stats", self.stats())
            .finish()
    }
}

impl Db {
    /// The statistics the planner uses for `t` (`sketch.rs` explains the choice), shared, and
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
        let merged = t.live.merged(t)?;
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
        let t = self.shared.handle(table)?;
        let (stats, live) = self.planning_stats(&t)?;
        let mut stats = Arc::unwrap_or_clone(stats);
        stats.row_count = live;
        Ok(stats)
    }

    /// The plan for `query`: with its reason when it is `shown` (`explain`), without when it
    /// is only run.
    fn plan_for(&self, t: &Table, query: &Query, shown: bool) -> Result<Plan> {
        if let Some(plan) = self.point_plan(t, query, shown)? {
            return Ok(plan);
        }
        let (stats, live) = self.planning_stats(t)?;
        let info = &t.planning().info;
        let wanted = wanted(query, info, &stats);
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
    })
}

/// Rows a stream reads ahead per parallel fill.
/// TUNING: enough that a scoped thread per shard per fill (tens of microseconds) is noise
/// beside the reading; few enough that the read-ahead of every shard fits in cache-sized
/// memory.
const FILL_ROWS: usize = 4096;

/// A query the planner expects to read at least this many rows fills its shards' streams in
/// parallel; smaller ones read them in turn, cheaper than starting threads.
const PARALLEL_ROWS: f64 = 4096.0;

fn compare_by(fields: &[String], a: &Record, b: &Record) -> std::cmp::Ordering {
    fields
        .iter()
        .map(|f| a.value(f).cmp(b.value(f)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

impl<'a> Rows<'a> {
    pub(crate) fn new(
        db: DbRef<'a>,
        table: Arc<Table>,
        query: Query,
        plan: &Plan,
        timed: bool,
        reading: Reading<'_>,
    ) -> Result<Self> {
        let query = Arc::new(query);
        let by_field = constraints(&query.predicates);
        let access = &plan.chosen.access;
        let order_fields = access_order(&table, access)?;
        let direction = direction(&query, &by_field, order_fields.as_deref());
        // One snapshot of the whole database (its floors read before it: no outbox entry it
        // sees is below its floor).
        let now;
        let at = match reading.at {
            Some(at) => at,
            None => {
                now = db.snapshot();
                &now
            }
        };
        let floors: Vec<u64> = table
            .shards
            .iter()
            .map(|s| at.floor(s.store.number))
            .collect();
        let facts: Arc<[Snapshot]> = table.shards.iter().map(|_| at.lsm().clone()).collect();
        let kit = StreamKit {
            table: &table,
            query: &query,
            facts: &facts,
            by_field: &by_field,
            timed,
            reverse: direction == Direction::Reverse,
        };
        let streams = kit.streams(&db, access, &floors)?;
        let read_ranges = if reading.record {
            read_ranges(&table, &streams)
        } else {
            Vec::new()
        };
        let needs_sort = direction == Direction::Sort;
        let merge_by = (query.order.is_some() && !needs_sort && streams.len() > 1)
            .then_some(order_fields)
            .flatten();
        let built_projected = query
            .projection
            .as_ref()
            .is_some_and(|fields| streams.iter().all(|s| s.reader.keeps_only(fields)));
        let parallel = streams.len() > 1 && plan.chosen.rows_read >= PARALLEL_ROWS;
        // Streams read in turn hand over each row as it is read, while it is in cache: a
        // read-ahead of 64 rows measured 6-10 % slower (covering reads, scans keeping most
        // rows) than one.
        let batch = if parallel {
            query.limit.map_or(FILL_ROWS, |l| {
                usize::try_from(l).unwrap_or(FILL_ROWS).clamp(1, FILL_ROWS)
            })
        } else {
            1
        };
        let mut rows = Rows {
            db,
            heads: (0..streams.len()).map(|_| VecDeque::new()).collect(),
            table,
            query,
            streams,
            merge_by,
            descending: direction == Direction::Reverse,
            parallel,
            batch,
            ready: None,
            built_projected,
            stats: ExecStats::default(),
            done: false,
            read_ranges,
        };
        if needs_sort {
            rows.sort_all(timed)?;
        }
        Ok(rows)
    }

    /// Reads every matching row, sorts by the query's order, and keeps them projected.
    fn sort_all(&mut self, timed: bool) -> Result<()> {
        if self.parallel {
            self.batch = FILL_ROWS;
        }
        let mut all = Vec::new();
        while let Some(r) = self.next_match()? {
            all.push(r);
        }
        let start = timed.then(Instant::now);
        if let Some(order) = &self.query.order {
            all.sort_by(|a, b| {
                let ord = compare_by(&order.fields, a, b);
                if order.descending { ord.reverse() } else { ord }
            });
        }
        if let Some(start) = start {
            self.stats_mut().sort_time += start.elapsed();
        }
        let projected = all.into_iter().map(|r| self.project(r)).collect();
        self.ready = Some(projected);
        Ok(())
    }

    #[inline(always)]
    fn project(&self, record: Record) -> Record {
        match &self.query.projection {
            None => record,
            Some(_) if self.built_projected => record,
            // The streams built only what the query returns (and orders by): most rows are
            // already their projection.
            Some(fields)
                if record
                    .iter()
                    .all(|(name, _)| fields.iter().any(|f| f == name)) =>
            {
                record
            }
            Some(fields) => record.project(fields),
        }
    }

    /// Fills the read-ahead of streams that have none: all of them at once when parallel,
    /// else every one (`all`) or the first.
    fn refill(&mut self, all: bool) -> Result<()> {
        let batch = self.batch;
        let wanted = |s: &Stream, h: &VecDeque<Record>| h.is_empty() && !s.done;
        let todo = self
            .streams
            .iter()
            .zip(&self.heads)
            .filter(|(s, h)| wanted(s, h))
            .count();
        if todo == 0 {
            return Ok(());
        }
        if self.parallel && todo > 1 {
            let results: Vec<Result<()>> = std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .streams
                    .iter_mut()
                    .zip(self.heads.iter_mut())
                    .filter(|(s, h)| wanted(s, h))
                    .map(|(s, h)| scope.spawn(move || s.fill(batch, h)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            for r in results {
                r?;
            }
        } else {
            for (s, h) in self.streams.iter_mut().zip(self.heads.iter_mut()) {
                if wanted(s, h) {
                    s.fill(batch, h)?;
                    if !all {
                        break;
                    }
                }
            }
        }
        self.gather_stats();
        Ok(())
    }

    /// The streams' statistics summed into the query's (one stream's are the query's
    /// already: see [`Rows::stats_mut`]).
    fn gather_stats(&mut self) {
        if self.streams.len() == 1 {
            return;
        }
        let (returned, sort) = (self.stats.rows_returned, self.stats.sort_time);
        let mut total = ExecStats::default();
        for s in &self.streams {
            total.rows_read += s.stats.rows_read;
            total.fetches += s.stats.fetches;
            total.fetches_merged += s.stats.fetches_merged;
            total.rows_matched += s.stats.rows_matched;
            total.read_time += s.stats.read_time;
            total.fetch_time += s.stats.fetch_time;
            total.filter_time += s.stats.filter_time;
        }
        total.rows_returned = returned;
        total.sort_time = sort;
        self.stats = total;
    }

    /// The next row that passes the re-check (not projected), from whichever stream is next.
    #[inline(always)]
    fn next_match(&mut self) -> Result<Option<Record>> {
        // One stream, read a row at a time: its rows are handed straight over, not through a
        // read-ahead of one (the refill's bookkeeping was 153 of a covering row's 2,340
        // instructions, callgrind).
        if let ([stream], [head], None) =
            (&mut self.streams[..], &mut self.heads[..], &self.merge_by)
        {
            if let Some(r) = head.pop_front() {
                return Ok(Some(r));
            }
            return stream.next_row();
        }
        loop {
            if let Some(fields) = &self.merge_by {
                let fields = fields.clone();
                self.refill(true)?;
                let mut best: Option<usize> = None;
                for (i, h) in self.heads.iter().enumerate() {
                    let Some(r) = h.front() else { continue };
                    let better = best.is_none_or(|b| {
                        self.heads[b].front().is_none_or(|current| {
                            let ord = compare_by(&fields, r, current);
                            if self.descending {
                                ord.is_gt()
                            } else {
                                ord.is_lt()
                            }
                        })
                    });
                    if better {
                        best = Some(i);
                    }
                }
                return Ok(best.and_then(|b| self.heads[b].pop_front()));
            }
            if let Some(h) = self.heads.iter_mut().find(|h| !h.is_empty()) {
                return Ok(h.pop_front());
            }
            if self.streams.iter().all(|s| s.done) {
                return Ok(None);
            }
            self.refill(false)?;
        }
    }

    /// What running the query has done so far (over every shard).
    pub fn stats(&self) -> &ExecStats {
        match &self.streams[..] {
            [one] => &one.stats,
            _ => &self.stats,
        }
    }

    /// Where the query's statistics are kept: a single stream's own, else the sum
    /// [`Rows::gather_stats`] keeps. (Copying one stream's out after each row loaded, in
    /// wide words, counts the stream had just written in narrow ones, which the processor
    /// cannot forward: a quarter of `Rows::next`'s time on a covering read, `perf record -e
    /// cpu-clock`.)
    fn stats_mut(&mut self) -> &mut ExecStats {
        match &mut self.streams[..] {
            [one] => &mut one.stats,
            _ => &mut self.stats,
        }
    }

    /// The database the rows come from.
    pub fn db(&self) -> &Db {
        &self.db
    }
}

impl Iterator for Rows<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self
            .query
            .limit
            .is_some_and(|limit| self.stats().rows_returned >= limit)
        {
            self.done = true;
            return None;
        }
        let next = match &mut self.ready {
            Some(ready) => Ok(ready.pop_front()),
            None => self.next_match().map(|r| r.map(|r| self.project(r))),
        };
        match next {
            Ok(Some(r)) => {
                self.stats_mut().rows_returned += 1;
                Some(Ok(r))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
