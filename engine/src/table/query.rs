//! Planned queries: `Db::query`, `Db::explain`, `Db::explain_analyze`.
//!
//! 1. Plan: the planner gets the table's `Ready` indexes and its statistics — those of the
//!    last `analyze`, or the documented defaults (row count and size from the store's counts;
//!    PostgreSQL's default selectivities for every field).
//! 2. Read at one snapshot through the chosen access path: the fact family (whole, or the
//!    primary-key ranges the bound key fields give, or point lookups), or an index family over
//!    the ranges its bound fields give (equality prefixes, then an optional range), with the
//!    record built from the entry when it covers the query, else fetched in index order or
//!    in batches sorted by key.
//! 3. Re-check the whole predicate on every row, whatever the path; sort when the path does
//!    not give the asked order; project; stop at `LIMIT`.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_planner::selectivity::{Constraint, constraints};
use strata_planner::{Access, Fetch, Plan, Query, TableStats, Value, choose};

use crate::error::{Error, Result};
use crate::lsm::{ColumnFamily, Cursor, ReadOptions, Snapshot};
use crate::table::db::{Db, Table};
use crate::table::entry::{covering_record, decode_entry, record_corrupt};
use crate::table::format::KEY_NULL;
use crate::table::key::{encode_value, prefix_successor};
use crate::table::record::Record;

/// Index entries whose records are fetched together, sorted by key.
/// TUNING: enough keys that sorting turns random fetches into a forward walk through the
/// fact family's blocks, few enough to hold in memory.
const FETCH_BATCH: usize = 1024;

/// Most point lookups or ranges a query's `=`/`IN` lists expand to; beyond it the executor
/// binds fewer fields and lets the re-check filter.
const MAX_SEEKS: usize = 1 << 16;

/// Average row size assumed for a table the store has no size for yet.
pub const DEFAULT_ROW_BYTES: f64 = 100.0;

/// What a query's execution did, for `explain_analyze`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ExecStats {
    /// Fact rows or index entries read.
    pub rows_read: u64,
    /// Records fetched from the fact family by primary key.
    pub fetches: u64,
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
        writeln!(
            f,
            "  fetch    {:>10.3} ms  {} records",
            ms(a.fetch_time),
            a.fetches
        )?;
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

/// Where candidate rows come from.
enum Source {
    /// Key ranges `[lower, upper)` of a family, read in order.
    Ranges {
        cf: ColumnFamily,
        ranges: VecDeque<(Vec<u8>, Option<Vec<u8>>)>,
        cursor: Option<Box<Cursor>>,
    },
    /// Primary keys to look up, in order.
    Keys(VecDeque<Vec<u8>>),
}

/// How a read entry becomes a record.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Fact rows.
    Fact,
    /// Entries of index `ix`.
    Index {
        ix: usize,
        covering: bool,
        fetch: Fetch,
    },
}

/// The rows of a query, as an iterator. It reads at the snapshot taken when the query
/// started. After an error it yields nothing more.
pub struct Rows<'a> {
    db: &'a Db,
    table: Arc<Table>,
    snapshot: Snapshot,
    query: Query,
    source: Source,
    mode: Mode,
    /// Fetched candidates of a sorted batch, not yet checked.
    pending: VecDeque<Record>,
    /// Checked, sorted and projected rows, when the query had to be sorted.
    ready: Option<VecDeque<Record>>,
    stats: ExecStats,
    timed: bool,
    done: bool,
}

impl std::fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.table.def.name)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Db {
    /// The statistics the planner uses for `t`: the stored ones, or defaults from the store's
    /// counts (rows = entries − tombstones; row size = bytes ÷ entries, else
    /// [`DEFAULT_ROW_BYTES`]) with no column statistics, so every field gets the planner's
    /// default selectivities.
    fn planning_stats(&self, t: &Table) -> Result<TableStats> {
        if let Some(stats) = &t.stats {
            return Ok(stats.clone());
        }
        let s = self.store.stats(&t.fact)?;
        let entries = s.entries.max(1);
        let bytes = s.table_bytes + s.memtable_bytes;
        Ok(TableStats {
            row_count: s.entries.saturating_sub(s.deletions),
            avg_row_bytes: if bytes > 0 {
                bytes as f64 / entries as f64
            } else {
                DEFAULT_ROW_BYTES
            },
            ..TableStats::default()
        })
    }

    fn plan_for(&self, t: &Table, query: &Query) -> Result<Plan> {
        let stats = self.planning_stats(t)?;
        choose(query, &t.def.planner_info(), &stats, &self.cost_model)
            .map_err(|e| Error::InvalidArgument(e.to_string()))
    }

    /// The planner's choice for `query` on `table`, with every candidate and its cost.
    pub fn explain(&self, table: &str, query: &Query) -> Result<Plan> {
        let t = self.handle(table)?;
        self.plan_for(&t, query)
    }

    /// Runs `query` on `table`: its rows, through the plan the planner chose (or the hint).
    pub fn query(&self, table: &str, query: &Query) -> Result<Rows<'_>> {
        let t = self.handle(table)?;
        let plan = self.plan_for(&t, query)?;
        Rows::new(self, t, query.clone(), &plan, false)
    }

    /// Runs `query` to the end and reports the plan with what actually happened: rows read,
    /// fetched, matched and returned, and time per step.
    pub fn explain_analyze(&self, table: &str, query: &Query) -> Result<Analysis> {
        let start = Instant::now();
        let t = self.handle(table)?;
        let plan = self.plan_for(&t, query)?;
        let plan_time = start.elapsed();
        let mut rows = Rows::new(self, t, query.clone(), &plan, true)?;
        for row in rows.by_ref() {
            row?;
        }
        let mut actual = rows.stats.clone();
        actual.plan_time = plan_time;
        Ok(Analysis {
            plan,
            actual,
            total_time: start.elapsed(),
        })
    }
}

/// The key ranges for `fields` bound as the plan says: the equality sets' product, in
/// ascending order, each optionally narrowed by a range on the last bound field.
fn ranges(
    bound: &[String],
    by_field: &std::collections::BTreeMap<String, Constraint>,
) -> VecDeque<(Vec<u8>, Option<Vec<u8>>)> {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut range: Option<&Constraint> = None;
    for field in bound {
        let Some(c) = by_field.get(field) else { break };
        match &c.values {
            Some(values) => {
                if prefixes.len().saturating_mul(values.len()) > MAX_SEEKS {
                    break;
                }
                let mut next = Vec::with_capacity(prefixes.len() * values.len());
                for p in &prefixes {
                    for v in values {
                        let mut k = p.clone();
                        encode_value(v, &mut k);
                        next.push(k);
                    }
                }
                prefixes = next;
            }
            None => {
                range = Some(c);
                break;
            }
        }
    }
    prefixes
        .into_iter()
        .map(|p| {
            let Some(c) = range else {
                let upper = prefix_successor(&p);
                return (p, upper);
            };
            let with = |v: &Value| {
                let mut k = p.clone();
                encode_value(v, &mut k);
                k
            };
            let lower = match &c.lower {
                // A comparison never matches NULL, which sorts first: start after it.
                Bound::Unbounded => {
                    let mut k = p.clone();
                    k.push(KEY_NULL + 1);
                    k
                }
                Bound::Included(v) => with(v),
                Bound::Excluded(v) => prefix_successor(&with(v)).unwrap_or_else(|| with(v)),
            };
            let upper = match &c.upper {
                Bound::Unbounded => prefix_successor(&p),
                Bound::Included(v) => prefix_successor(&with(v)),
                Bound::Excluded(v) => Some(with(v)),
            };
            (lower, upper)
        })
        .collect()
}

/// All primary keys an equality-bound key names, ascending.
fn point_keys(
    fields: &[String],
    by_field: &std::collections::BTreeMap<String, Constraint>,
) -> Option<VecDeque<Vec<u8>>> {
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    for field in fields {
        let values = by_field.get(field)?.values.as_ref()?;
        if keys.len().saturating_mul(values.len()) > MAX_SEEKS {
            return None;
        }
        let mut next = Vec::with_capacity(keys.len() * values.len());
        for k in &keys {
            for v in values {
                let mut key = k.clone();
                encode_value(v, &mut key);
                next.push(key);
            }
        }
        keys = next;
    }
    Some(keys.into())
}

fn matches(record: &Record, query: &Query) -> bool {
    query
        .predicates
        .iter()
        .all(|p| p.matches(record.value(&p.field)))
}

impl<'a> Rows<'a> {
    fn new(db: &'a Db, table: Arc<Table>, query: Query, plan: &Plan, timed: bool) -> Result<Self> {
        let by_field = constraints(&query.predicates);
        let def = &table.def;
        let whole = |cf: &ColumnFamily| Source::Ranges {
            cf: cf.clone(),
            ranges: VecDeque::from([(Vec::new(), None)]),
            cursor: None,
        };
        let (source, mode, order_fields): (Source, Mode, Option<Vec<String>>) =
            match &plan.chosen.access {
                Access::FullScan => (
                    whole(&table.fact),
                    Mode::Fact,
                    Some(def.primary_key.clone()),
                ),
                Access::PrimaryKeyLookup { .. } => {
                    let source = match point_keys(&def.primary_key, &by_field) {
                        Some(keys) => Source::Keys(keys),
                        None => whole(&table.fact),
                    };
                    (source, Mode::Fact, Some(def.primary_key.clone()))
                }
                Access::PrimaryKeyRange { bound_fields } => (
                    Source::Ranges {
                        cf: table.fact.clone(),
                        ranges: ranges(bound_fields, &by_field),
                        cursor: None,
                    },
                    Mode::Fact,
                    Some(def.primary_key.clone()),
                ),
                Access::Index {
                    index,
                    bound_fields,
                    covering,
                    fetch,
                } => {
                    let (ix, ixdef, cf) = table.index(index)?;
                    let order = (*fetch != Fetch::SortedByKey).then(|| {
                        ixdef
                            .fields
                            .iter()
                            .chain(&def.primary_key)
                            .cloned()
                            .collect()
                    });
                    (
                        Source::Ranges {
                            cf: cf.clone(),
                            ranges: ranges(bound_fields, &by_field),
                            cursor: None,
                        },
                        Mode::Index {
                            ix,
                            covering: *covering,
                            fetch: *fetch,
                        },
                        order,
                    )
                }
            };
        let needs_sort = match &query.order {
            None => false,
            Some(order) => {
                let constant = |f: &String| {
                    by_field
                        .get(f)
                        .is_some_and(|c| c.values.as_ref().is_some_and(|v| v.len() == 1))
                };
                let provided = order_fields.is_some_and(|available| {
                    let mut available = available.iter().filter(|f| !constant(f));
                    order
                        .fields
                        .iter()
                        .filter(|f| !constant(f))
                        .all(|f| available.next() == Some(f))
                });
                order.descending || !provided
            }
        };
        let mut rows = Rows {
            db,
            snapshot: db.store.snapshot(),
            table,
            query,
            source,
            mode,
            pending: VecDeque::new(),
            ready: None,
            stats: ExecStats::default(),
            timed,
            done: false,
        };
        if needs_sort {
            rows.sort_all()?;
        }
        Ok(rows)
    }

    /// Reads every matching row, sorts by the query's order, and keeps them projected.
    fn sort_all(&mut self) -> Result<()> {
        let mut all = Vec::new();
        while let Some(r) = self.next_match()? {
            all.push(r);
        }
        let start = self.timed.then(Instant::now);
        if let Some(order) = &self.query.order {
            all.sort_by(|a, b| {
                let ord = order
                    .fields
                    .iter()
                    .map(|f| a.value(f).cmp(b.value(f)))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal);
                if order.descending { ord.reverse() } else { ord }
            });
        }
        if let Some(start) = start {
            self.stats.sort_time += start.elapsed();
        }
        let projected = all.into_iter().map(|r| self.project(r)).collect();
        self.ready = Some(projected);
        Ok(())
    }

    fn project(&self, record: Record) -> Record {
        match &self.query.projection {
            None => record,
            Some(fields) => record.project(fields),
        }
    }

    /// The next row that passes the re-check (not projected).
    fn next_match(&mut self) -> Result<Option<Record>> {
        loop {
            let start = self.timed.then(Instant::now);
            let fetch_before = self.stats.fetch_time;
            let candidate = self.pull()?;
            if let Some(start) = start {
                let fetched = self.stats.fetch_time - fetch_before;
                self.stats.read_time += start.elapsed().saturating_sub(fetched);
            }
            let Some(record) = candidate else {
                return Ok(None);
            };
            let start = self.timed.then(Instant::now);
            let ok = matches(&record, &self.query);
            if let Some(start) = start {
                self.stats.filter_time += start.elapsed();
            }
            if ok {
                self.stats.rows_matched += 1;
                return Ok(Some(record));
            }
        }
    }

    fn fetch(&mut self, key: &[u8]) -> Result<Option<Record>> {
        let start = self.timed.then(Instant::now);
        self.stats.fetches += 1;
        let got = self
            .db
            .store
            .get_at(&self.table.fact, key, &self.snapshot)?;
        let record = match got {
            None => None,
            Some(bytes) => Some(
                Record::decode(&bytes).map_err(|e| record_corrupt(self.table.fact.name(), e))?,
            ),
        };
        if let Some(start) = start {
            self.stats.fetch_time += start.elapsed();
        }
        Ok(record)
    }

    /// The next key-value pair of the ranges.
    fn next_pair(&mut self) -> Result<Option<(Vec<u8>, bytes::Bytes)>> {
        let Source::Ranges { cf, ranges, cursor } = &mut self.source else {
            return Ok(None);
        };
        loop {
            if let Some(c) = cursor {
                if c.valid() {
                    let pair = (c.key().to_vec(), c.value());
                    c.next();
                    return Ok(Some(pair));
                }
                c.status()?;
                *cursor = None;
            }
            let Some((lower, upper)) = ranges.pop_front() else {
                return Ok(None);
            };
            let mut options = ReadOptions::default().snapshot(&self.snapshot);
            if !lower.is_empty() {
                options = options.lower_bound(&lower);
            }
            if let Some(upper) = &upper {
                options = options.upper_bound(upper);
            }
            let mut c = self.db.store.cursor(cf, options)?;
            c.seek_to_first();
            *cursor = Some(Box::new(c));
        }
    }

    /// The next candidate record, before the re-check.
    fn pull(&mut self) -> Result<Option<Record>> {
        if let Some(r) = self.pending.pop_front() {
            return Ok(Some(r));
        }
        if let Source::Keys(_) = &self.source {
            loop {
                let Source::Keys(keys) = &mut self.source else {
                    return Ok(None);
                };
                let Some(key) = keys.pop_front() else {
                    return Ok(None);
                };
                self.stats.rows_read += 1;
                if let Some(r) = self.fetch(&key)? {
                    return Ok(Some(r));
                }
            }
        }
        match self.mode {
            Mode::Fact => {
                let Some((_, value)) = self.next_pair()? else {
                    return Ok(None);
                };
                self.stats.rows_read += 1;
                Record::decode(&value)
                    .map(Some)
                    .map_err(|e| record_corrupt(self.table.fact.name(), e))
            }
            Mode::Index {
                ix,
                covering,
                fetch,
            } => loop {
                let table = Arc::clone(&self.table);
                let ixdef = &table.def.indexes[ix];
                let cf_name = table.indexes[ix].name().to_owned();
                if fetch == Fetch::SortedByKey && !covering {
                    let mut keys = Vec::with_capacity(FETCH_BATCH);
                    while keys.len() < FETCH_BATCH {
                        let Some((k, v)) = self.next_pair()? else {
                            break;
                        };
                        self.stats.rows_read += 1;
                        keys.push(decode_entry(&table.def, ixdef, &cf_name, &k, &v)?.pk_bytes);
                    }
                    if keys.is_empty() {
                        return Ok(None);
                    }
                    keys.sort_unstable();
                    for k in keys {
                        // An entry whose row is gone at this snapshot would be dangling;
                        // `verify` reports those. Skip it here.
                        if let Some(r) = self.fetch(&k)? {
                            self.pending.push_back(r);
                        }
                    }
                    if let Some(r) = self.pending.pop_front() {
                        return Ok(Some(r));
                    }
                    continue;
                }
                let Some((k, v)) = self.next_pair()? else {
                    return Ok(None);
                };
                self.stats.rows_read += 1;
                let entry = decode_entry(&table.def, ixdef, &cf_name, &k, &v)?;
                if covering {
                    return Ok(Some(covering_record(&table.def, ixdef, entry)));
                }
                if let Some(r) = self.fetch(&entry.pk_bytes)? {
                    return Ok(Some(r));
                }
            },
        }
    }

    /// What running the query has done so far.
    pub fn stats(&self) -> &ExecStats {
        &self.stats
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
            .is_some_and(|limit| self.stats.rows_returned >= limit)
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
                self.stats.rows_returned += 1;
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
