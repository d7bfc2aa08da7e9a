//! `Rows`, the executor of a planned query: it fills the streams (in parallel for big
//! queries, one batch at a time), merges them in the query's order when each gives it, else
//! sorts, projects, and stops at `LIMIT`; with the statistics of what it did (`ExecStats`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_planner::selectivity::constraints;
use strata_planner::{Access, Plan, Query};

use crate::error::Result;
use crate::lsm::Snapshot;
use crate::table::codec::record::Record;
use crate::table::commit::resolver::ReadRange;
use crate::table::db::{Db, Table};
use crate::table::read::access::{Direction, StreamKit, access_order, direction};
use crate::table::read::point::read_point;
use crate::table::read::row_ref::RowRef;
use crate::table::read::snapshot::DbSnapshot;
use crate::table::read::stream::RowFilter;
use crate::table::read::stream::{Lending, Mode, Placed, Source, Stream};

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
    /// The row [`Rows::next_ref`] lent last, when it lent a record.
    held: Record,
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
        // One row by its whole primary key: read at once, without a stream.
        if !timed
            && matches!(access, Access::PrimaryKeyLookup { .. })
            && let Some(point) = read_point(&table, &query, &by_field, at, reading.record)?
        {
            let mut rows = Rows {
                db,
                table,
                query,
                streams: Vec::new(),
                heads: Vec::new(),
                merge_by: None,
                descending: false,
                parallel: false,
                batch: 1,
                ready: None,
                built_projected: point.built_projected,
                stats: point.stats,
                done: false,
                read_ranges: point.read.into_iter().collect(),
                held: Record::default(),
            };
            let found = point.record.map(|r| rows.project(r));
            rows.ready = Some(found.into_iter().collect());
            return Ok(rows);
        }
        let order_fields = access_order(&table, access)?;
        let direction = direction(&query, &by_field, order_fields.as_deref());
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
            filter: (!query.conditions.is_empty()).then(|| {
                Arc::new(RowFilter {
                    all: query.conditions.clone(),
                    none: Vec::new(),
                })
            }),
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
            held: Record::default(),
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
            let by = |a: &Record, b: &Record| {
                let ord = compare_by(&order.fields, a, b);
                if order.descending { ord.reverse() } else { ord }
            };
            // With a LIMIT, only the first rows are sorted: the rest are set aside by a
            // selection, in linear time (the planner's `CostModel::top`).
            let limit = self.query.limit.and_then(|l| usize::try_from(l).ok());
            if let Some(limit) = limit.filter(|&l| l < all.len()) {
                match limit.checked_sub(1) {
                    Some(last) => {
                        all.select_nth_unstable_by(last, by);
                        all.truncate(limit);
                    }
                    None => all.clear(),
                }
            }
            all.sort_by(by);
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

    /// Reads the next row into `record`, building it in `record`'s buffers (its values, and
    /// the strings of its text values): a reader done with each row before it reads the
    /// next reads a run of rows without allocating for them, as a CSV reader's
    /// `read_record` does. `Ok(false)` at the end, `record` then empty.
    pub fn next_into(&mut self, record: &mut Record) -> Result<bool> {
        self.recycle(std::mem::take(record));
        match self.next() {
            Some(Ok(next)) => {
                *record = next;
                Ok(true)
            }
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// Lends the next row; `Ok(None)` at the end. A row of the current formats fetched
    /// through a sync index by a query of one stream (the rows of most selective queries on
    /// an unsharded table), untimed, whose stream builds exactly the fields it returns, is
    /// lent where it lies, in the buffer the fetch copied it to: its head is checked here, its
    /// values are decoded when asked for ([`RowRef::value`], which reports a damaged one),
    /// and a reader that copies them on into buffers of its own (a record batch's columns)
    /// copies each once, building no record. Any other row is lent as the record
    /// [`Iterator::next`] gives (built in the buffers of the one lent before when one stream
    /// builds the rows in order). After an error from `next_ref` it lends nothing more; an
    /// error from a lent row's value leaves the rows after it to be read.
    pub fn next_ref(&mut self) -> Result<Option<RowRef<'_>>> {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.recycle(held);
        }
        if self.done {
            return Ok(None);
        }
        let in_place = self.ready.is_none()
            && self.merge_by.is_none()
            && (self.query.projection.is_none() || self.built_projected)
            && matches!(&self.heads[..], [head] if head.is_empty());
        if !in_place {
            return match self.next() {
                Some(Ok(record)) => {
                    self.held = record;
                    Ok(Some(RowRef::from(&self.held)))
                }
                Some(Err(e)) => Err(e),
                None => Ok(None),
            };
        }
        if self
            .query
            .limit
            .is_some_and(|limit| self.stats().rows_returned >= limit)
        {
            self.done = true;
            return Ok(None);
        }
        let placed = match self.streams[0].next_placed() {
            Ok(Some(placed)) => placed,
            Ok(None) => {
                self.done = true;
                return Ok(None);
            }
            Err(e) => {
                self.done = true;
                return Err(e);
            }
        };
        match placed {
            // Counted as returned when lent (one stream: its statistics are the query's, as
            // `Rows::stats_mut` says).
            Placed::Stored(at) => match self.streams[0].placed_row(at) {
                Ok(row) => Ok(Some(row)),
                Err(e) => {
                    self.done = true;
                    Err(e)
                }
            },
            Placed::Built(record) => {
                self.stats_mut().rows_returned += 1;
                self.held = self.project(record);
                Ok(Some(RowRef::from(&self.held)))
            }
        }
    }

    /// Lends each row left to `f` in turn, as [`Rows::next_ref`] would lend them, until the
    /// rows end or `f` fails (its error is returned, and the rows are then done). The rows a
    /// query of one stream fetches through a sync index as a forward walk of the fact family
    /// (an index whose values follow the key order, from the last `analyze`) are lent where
    /// the walk's cursor holds them: not copied to the stream's buffer first, nor handed
    /// through its queue (a selective SQL query's rows, a record batch's worth at a time).
    /// An error of the engine's is returned as `E`, and the rows are then done too; where
    /// `next` would report it before any row of the batch it read (a lookup or a cursor that
    /// failed partway through a batch), `f` may have been lent the rows before it. After `f`
    /// fails, [`Rows::stats`] counts the fetches made up to that row.
    pub fn for_each_ref<E: From<crate::Error>>(
        &mut self,
        mut f: impl FnMut(&RowRef<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        loop {
            if !self.held.is_empty() {
                let held = std::mem::take(&mut self.held);
                self.recycle(held);
            }
            if let Some((ix, fetch)) = self.lends_fetched() {
                let mut failed = None;
                let mut lend = |row: &RowRef<'_>| match f(row) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                };
                let mut lending = Lending::new(&mut lend, self.query.limit);
                let more = self.streams[0].lend_next(ix, fetch, &mut lending);
                if let Some(e) = failed {
                    self.done = true;
                    return Err(e);
                }
                match more {
                    Ok(true) => continue,
                    Ok(false) => {
                        self.done = true;
                        return Ok(());
                    }
                    Err(e) => {
                        self.done = true;
                        return Err(e.into());
                    }
                }
            }
            let row = match self.next_ref() {
                Ok(Some(row)) => row,
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if let Err(e) = f(&row) {
                self.done = true;
                return Err(e);
            }
        }
    }

    /// The index and fetch of the one stream whose next rows [`Rows::for_each_ref`] may lend
    /// where its fact cursor finds them ([`Stream::lends`]): rows returned as the stream
    /// gives them (no rows made ready, no merge, the stream building exactly the projection),
    /// none waiting, the limit not reached.
    fn lends_fetched(&self) -> Option<(usize, strata_planner::Fetch)> {
        let plain = !self.done
            && self.ready.is_none()
            && self.merge_by.is_none()
            && (self.query.projection.is_none() || self.built_projected)
            && matches!(&self.heads[..], [head] if head.is_empty())
            && self
                .query
                .limit
                .is_none_or(|limit| self.stats().rows_returned < limit);
        match &self.streams[..] {
            [stream] if plain => stream.lends(),
            _ => None,
        }
    }

    /// Gives `record`'s buffers to the stream that builds the next row, when one stream
    /// builds the rows in the order they are returned; a point query's (no stream) to its
    /// table's readers, for a later query's row.
    fn recycle(&mut self, record: Record) {
        if let ([stream], None, None) = (&mut self.streams[..], &self.merge_by, &self.ready) {
            stream.spare = Some(record);
        } else if self.streams.is_empty() && !record.is_empty() {
            self.table.readers.give_spare(record);
        }
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

#[cfg(test)]
mod tests {
    use strata_planner::{Access, Predicate, Projection, Query};

    use super::*;
    use crate::record;

    /// A table whose index `by_day` follows its key (thirty rows a day), analysed, the first
    /// two thirds of its rows in a table file and the rest in the memtable.
    fn clustered(dir: &std::path::Path) -> Result<Db> {
        let db = Db::open(dir, crate::Options::default())?;
        db.create_table("t", ["id"], crate::TableOptions::default())?;
        db.create_index("t", "by_day", ["day"], Projection::KeysOnly)?;
        for id in 0..3000i64 {
            let row =
                record! { "id" => id, "day" => id / 30, "note" => "n".repeat(id as usize % 17) };
            db.insert("t", row)?;
            if id == 2000 {
                db.flush()?;
            }
        }
        db.analyze("t")?;
        Ok(db)
    }

    #[test]
    fn for_each_ref_lends_a_walks_rows_where_its_cursor_holds_them() -> Result<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = clustered(dir.path())?;
        let query = Query::default().filter(Predicate::between("day", 10, 40));
        let plan = db.explain("t", &query)?;
        assert!(matches!(plan.chosen.access, Access::Index { .. }), "{plan}");
        let expected: Vec<Record> = db.query("t", &query)?.collect::<Result<_>>()?;
        assert_eq!(expected.len(), 31 * 30);
        let mut rows = db.query("t", &query)?;
        let mut got = Vec::new();
        rows.for_each_ref(|row| -> Result<()> {
            assert!(row.as_record().is_none(), "lent where it lies");
            got.push(row.to_record()?);
            Ok(())
        })?;
        assert_eq!(got, expected, "the rows `next` reads, in its order");
        assert_eq!(rows.stats().fetches_merged, expected.len() as u64);
        assert_eq!(rows.stats().rows_returned, expected.len() as u64);
        // Each lent where the fact cursor held it: none copied to the stream's buffer.
        assert!(rows.streams[0].fetch_values.is_empty());
        assert!(rows.next_ref()?.is_none(), "the end stays the end");

        // The same rows by `next_ref` pass through the buffer (the test above can fail).
        let mut rows = db.query("t", &query)?;
        while rows.next_ref()?.is_some() {}
        assert!(!rows.streams[0].fetch_values.is_empty());
        Ok(())
    }

    #[test]
    fn for_each_ref_stops_at_the_readers_error_and_at_the_limit() -> Result<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = clustered(dir.path())?;
        let query = Query::default()
            .filter(Predicate::ge("day", 20))
            .hint(strata_planner::Hint::Index("by_day".into()));
        let mut rows = db.query("t", &query)?;
        let mut seen = 0;
        let stopped = rows.for_each_ref(|_| {
            seen += 1;
            if seen == 40 {
                return Err(crate::Error::InvalidArgument("enough".into()));
            }
            Ok(())
        });
        assert!(matches!(stopped, Err(crate::Error::InvalidArgument(_))));
        assert_eq!(seen, 40, "no row lent after the error");
        assert!(rows.stats().fetches_merged > 0, "fetched as a walk");
        assert!(rows.streams[0].fetch_values.is_empty(), "lent, not copied");
        assert!(rows.next_ref()?.is_none(), "the rows are done");

        // A limit inside a batch: the rows past it are not lent, and the end is the end.
        for limit in [1, 45, 100] {
            let limited = query.clone().limit(limit);
            let expected: Vec<Record> = db.query("t", &limited)?.collect::<Result<_>>()?;
            assert_eq!(expected.len() as u64, limit);
            let mut rows = db.query("t", &limited)?;
            let mut got = Vec::new();
            rows.for_each_ref(|row| -> Result<()> {
                got.push(row.to_record()?);
                Ok(())
            })?;
            assert_eq!(got, expected, "limit {limit}");
            assert_eq!(rows.stats().rows_returned, limit);
            assert!(
                rows.stats().fetches_merged > 0,
                "limit {limit}: fetched as a walk"
            );
        }
        Ok(())
    }

    /// The rows a query reads by `next` and by `for_each_ref` (each row's values, and whether
    /// the visitor's run ended in an error).
    fn both(db: &Db, query: &Query) -> Result<(Vec<Record>, Vec<Record>, Result<()>)> {
        let expected: Vec<Record> = db.query("t", query)?.filter_map(|r| r.ok()).collect();
        let mut rows = db.query("t", query)?;
        let mut got = Vec::new();
        let ended = rows.for_each_ref(|row| -> Result<()> {
            got.push(row.to_record()?);
            Ok(())
        });
        if ended.is_err() {
            assert!(
                rows.next_ref()?.is_none(),
                "the rows are done after an error"
            );
        }
        Ok((expected, got, ended))
    }

    #[test]
    fn a_walk_lends_around_rows_gone_and_stops_at_a_damaged_one() -> Result<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = clustered(dir.path())?;
        let store = db.raw_store();
        let fact = store.cf("t/t")?;
        // Rows in key order are rows by id.
        let stored: Vec<(Vec<u8>, Vec<u8>)> = store
            .iter(&fact, Default::default())?
            .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<std::result::Result<_, _>>()?;
        assert_eq!(stored.len(), 3000);
        // Rows 303 and 317 (day 10) gone from the fact family alone: their entries dangle.
        for id in [303, 317] {
            store.delete(&fact, &stored[id].0)?;
        }
        let day = |d: i64| {
            Query::default()
                .filter(Predicate::eq("day", d))
                .hint(strata_planner::Hint::Index("by_day".into()))
        };
        let (expected, got, ended) = both(&db, &day(10))?;
        ended?;
        assert_eq!(expected.len(), 28);
        assert_eq!(got, expected);

        // Row 325's head damaged: the rows before it are lent, then its error.
        let (key, row) = &stored[325];
        store.put(&fact, key, &row[..2])?;
        let (expected, got, ended) = both(&db, &day(10))?;
        assert!(
            matches!(ended, Err(crate::Error::Corruption { .. })),
            "{ended:?}"
        );
        assert_eq!(expected.len(), 28 - 5, "`next` reads up to the damaged row");
        assert_eq!(got, expected, "the rows before the damaged one");

        // The next query, with the buffers the failed one gave back, reads as `next` does.
        let (expected, got, ended) = both(&db, &day(11))?;
        ended?;
        assert_eq!(expected.len(), 30);
        assert_eq!(got, expected);
        Ok(())
    }
}
