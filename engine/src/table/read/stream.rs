//! One shard's part of a query: a [`Stream`] reads one family of one shard store — fact rows by
//! key range or key, or index entries by range (merged with pending outbox changes for a
//! strong read of an async index) — and yields the rows that pass the re-check. `Rows`
//! (`query.rs`) runs one stream per shard visited and merges them.
//!
//! For an index entry that does not cover the query, the row is fetched from the fact shard the
//! entry names, in index order or in sorted batches; for an async index the entry is also
//! re-derived from the fetched row and dropped unless equal, so a left-over entry never yields
//! a row (or a row twice).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use strata_planner::{Condition, Fetch, Predicate, Value};

use crate::error::{Corruption, Error, Result};
use crate::lsm::{ColumnFamily, Cursor, ReadOptions, Snapshot};
use crate::table::catalog::covering::{CoveringRead, KeyFields, covering_row};
use crate::table::catalog::entry::{index_entry, key_corrupt, record_corrupt};
use crate::table::codec::key::{decode_prefix, shared_prefix};
use crate::table::codec::record::{Record, RecordError};
use crate::table::codec::row_reader::RowReader;
use crate::table::db::reader_pool::{FetchBuffers, Target};
use crate::table::db::{ShardStore, Table};
use crate::table::read::rows::ExecStats;

mod fetch;

pub(crate) use fetch::{FIRST_FETCH_BATCH, Lending, Placed};

/// Key ranges `[lower, upper)`, in order; no upper bound is the end of the family.
pub(crate) type KeyRanges = VecDeque<(Vec<u8>, Option<Vec<u8>>)>;

/// Where a stream's candidate rows come from.
pub(crate) enum Source {
    /// Key ranges `[lower, upper)` of a family, read in order.
    Ranges {
        cf: ColumnFamily,
        ranges: KeyRanges,
        cursor: Option<Box<Cursor>>,
    },
    /// Key-value pairs already read (an index range merged with its pending changes).
    Pairs(VecDeque<(Vec<u8>, Bytes)>),
    /// Primary keys to look up, in order.
    Keys(VecDeque<Vec<u8>>),
}

/// How a read entry becomes a record.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    /// Fact rows.
    Fact,
    /// Entries of index `ix`.
    Index {
        ix: usize,
        covering: bool,
        fetch: Fetch,
        /// The index is async: an entry counts only if the row it names still gives it.
        recheck_entry: bool,
    },
}

/// An entry being read: at the cursor, or a pair taken from a source of pairs.
enum Held {
    Cursor(Box<Cursor>),
    Pair(Vec<u8>, Bytes),
}

/// One shard's part of a query: it reads one family of one shard store and yields the rows
/// that pass the re-check. Streams are `Send`, so a query's streams fill in parallel.
pub(crate) struct Stream {
    pub(crate) table: Arc<Table>,
    /// The query's predicates that this stream's key ranges do not answer: its re-check.
    pub(crate) predicates: Arc<[Predicate]>,
    /// The snapshot of every fact shard, for fetches.
    pub(crate) facts: Arc<[Snapshot]>,
    /// The store this stream reads, and the snapshot it reads at.
    pub(crate) store: Arc<ShardStore>,
    pub(crate) snapshot: Snapshot,
    /// For fact reads, the shard whose rows these are.
    pub(crate) shard: usize,
    pub(crate) source: Source,
    pub(crate) mode: Mode,
    /// Tests each stored row's predicate fields before building it, and builds only the
    /// fields the query needs.
    pub(crate) reader: RowReader,
    /// Fetched rows of a batch, each with its entry (in `fetch_keys`) and its stored bytes
    /// (in `fetch_values`), not yet tested or built: a row is built when it is pulled, so the
    /// records a batch returns are made and dropped one by one (building the whole batch
    /// first held up to 1,024 records' strings at once, past what the allocator's per-thread
    /// caches keep: a third of a clustered fetch's time went to the allocator).
    pub(crate) fetched: VecDeque<Target>,
    /// The stored rows of the batch being built, end to end, copied where the fetch found
    /// them (kept for the next batch): a copy costs less than a reference on the block each
    /// row would hold until it is built (two atomic counts and two calls through the block's
    /// table of functions a row, 4.4 % of a clustered fetch's time in `perf`). A row lent
    /// where the merge's cursor holds it ([`Stream::lend_next`]) is not copied.
    pub(crate) fetch_values: Vec<u8>,
    /// A record its reader gave back ([`Rows::next_into`](crate::Rows::next_into)), or one
    /// the re-check rejected: the next row is built in its buffers.
    pub(crate) spare: Option<Record>,
    /// A cursor on one fact shard, for batches fetched as a merge ([`Stream::fetch_merged`]),
    /// kept from batch to batch, and whether this stream still fetches that way.
    pub(crate) fact_cursor: Option<(usize, Box<Cursor>)>,
    pub(crate) merge_fetches: bool,
    /// For a covering index read: what the query needs of the fields an entry's key holds.
    pub(crate) covering: KeyFields,
    /// How many index entries the next batch in index order fetches together.
    pub(crate) fetch_batch: usize,
    /// The entry keys of the batch being fetched, end to end (kept for the next batch).
    pub(crate) fetch_keys: Vec<u8>,
    /// The targets of the batch being fetched (kept for the next batch).
    pub(crate) fetch_targets: Vec<Target>,
    /// The whole key values every key of the range being read starts with (how many and
    /// their bytes; see [`shared_prefix`]), up to the first one a covering read needs:
    /// stepped over, not walked, in each entry.
    pub(crate) range_prefix: (usize, usize),
    pub(crate) stats: ExecStats,
    pub(crate) timed: bool,
    /// Read the source from its end backwards: the last range first, each from its upper
    /// bound down (a descending ORDER BY that the key or index order provides).
    pub(crate) reverse: bool,
    /// What its records are tested on besides its predicates.
    pub(crate) filter: Option<Arc<RowFilter>>,
    pub(crate) done: bool,
}

impl Drop for Stream {
    /// Gives its reader back to its table's pool, for the next query of its shape.
    fn drop(&mut self) {
        let reader = std::mem::replace(&mut self.reader, RowReader::new(&[], None));
        self.table.readers.give_back(reader);
        self.table.readers.give_buffers(FetchBuffers {
            keys: std::mem::take(&mut self.fetch_keys),
            values: std::mem::take(&mut self.fetch_values),
            targets: std::mem::take(&mut self.fetch_targets),
            fetched: std::mem::take(&mut self.fetched),
        });
    }
}

/// What a stream tests on each record besides its predicates: the query's conditions
/// (`OR`s), and, for a part of a union, its member (`all`) and the members of the parts
/// before it (`none`: a row one of those returned is not returned again).
#[derive(Debug)]
pub(crate) struct RowFilter {
    pub(crate) all: Vec<Condition>,
    pub(crate) none: Vec<Condition>,
}

impl RowFilter {
    /// Whether `record` passes.
    pub(crate) fn admits(&self, record: &Record) -> bool {
        self.admits_values(&|f: &str| record.value(f))
    }

    /// Whether the row whose field values `value_of` gives passes.
    pub(crate) fn admits_values<'v>(&self, value_of: &impl Fn(&str) -> &'v Value) -> bool {
        self.all.iter().all(|c| c.matches(value_of))
            && !self.none.iter().any(|c| c.matches(value_of))
    }
}

/// Whether `record` passes every one of `predicates`.
pub(crate) fn matches(record: &Record, predicates: &[Predicate]) -> bool {
    predicates.iter().all(|p| p.matches(record.value(&p.field)))
}

/// The index pairs of `ranges` in `cf` at `snapshot`, with `pending` changes applied: what the
/// index will hold once the indexer has caught up.
pub(crate) fn merge_pending(
    store: &ShardStore,
    cf: &ColumnFamily,
    snapshot: &Snapshot,
    ranges: &KeyRanges,
    pending: &BTreeMap<Vec<u8>, Option<Vec<u8>>>,
) -> Result<VecDeque<(Vec<u8>, Bytes)>> {
    let mut pairs: BTreeMap<Vec<u8>, Bytes> = BTreeMap::new();
    for (lower, upper) in ranges {
        let mut options = ReadOptions::default().snapshot(snapshot);
        if !lower.is_empty() {
            options = options.lower_bound(lower);
        }
        if let Some(upper) = upper {
            options = options.upper_bound(upper);
        }
        for kv in store.store.iter(cf, options)? {
            let (k, v) = kv?;
            if !pending.contains_key(&k[..]) {
                pairs.insert(k.to_vec(), v);
            }
        }
        let above = pending.range::<[u8], _>((Bound::Included(&lower[..]), Bound::Unbounded));
        for (k, v) in above {
            if upper.as_ref().is_some_and(|u| k >= u) {
                break;
            }
            if let Some(v) = v {
                pairs.insert(k.clone(), Bytes::from(v.clone()));
            }
        }
    }
    Ok(pairs.into_iter().collect())
}

impl Stream {
    /// Adds up to `want` matching rows to `out`; marks the stream done at its end.
    pub(crate) fn fill(&mut self, want: usize, out: &mut VecDeque<Record>) -> Result<()> {
        while out.len() < want && !self.done {
            match self.next_row()? {
                Some(r) => out.push_back(r),
                None => break,
            }
        }
        Ok(())
    }

    /// The next row that passes the re-check; `None` (and the stream done) at the end.
    #[inline(always)]
    pub(crate) fn next_row(&mut self) -> Result<Option<Record>> {
        if self.done {
            return Ok(None);
        }
        let found = loop {
            let found = if self.timed {
                self.pull_timed()?
            } else {
                self.pull()?
            };
            match (&found, &self.filter) {
                (Some(record), Some(filter)) if !filter.admits(record) => continue,
                _ => break found,
            }
        };
        match &found {
            Some(_) => self.stats.rows_matched += 1,
            None => self.done = true,
        }
        Ok(found)
    }

    /// [`Stream::pull`], its reading time (less fetching and filtering) added up.
    #[inline(never)]
    fn pull_timed(&mut self) -> Result<Option<Record>> {
        let start = Instant::now();
        let (fetch_before, filter_before) = (self.stats.fetch_time, self.stats.filter_time);
        let found = self.pull()?;
        let elsewhere =
            (self.stats.fetch_time - fetch_before) + (self.stats.filter_time - filter_before);
        self.stats.read_time += start.elapsed().saturating_sub(elsewhere);
        Ok(found)
    }

    /// The record of the stored row `bytes` (at `key` of fact shard `shard`) if it passes the
    /// re-check. A row that is `likely` to pass (one an index entry named) is built and then
    /// tested, in one walk over its bytes; any other has its predicate fields tested first, and
    /// is built only if it passes.
    #[inline(always)]
    fn accept(
        &mut self,
        shard: usize,
        key: &[u8],
        bytes: &[u8],
        likely: bool,
    ) -> Result<Option<Record>> {
        if likely && self.reader.builds_tested() {
            let start = self.timed.then(Instant::now);
            let record = self.build(shard, key, bytes)?;
            let passes = matches(&record, &self.predicates);
            if let Some(start) = start {
                self.stats.filter_time += start.elapsed();
            }
            self.share_layout();
            if !passes {
                self.spare = Some(record);
                return Ok(None);
            }
            return Ok(Some(record));
        }
        if !self.passes_row(shard, key, bytes)? || !self.passes_filter(shard, key, bytes)? {
            return Ok(None);
        }
        self.build_row(shard, key, bytes).map(Some)
    }

    /// Whether the stored row `bytes` (at `key` of fact shard `shard`) passes the re-check,
    /// its predicate fields read alone.
    #[inline(always)]
    fn passes_row(&mut self, shard: usize, key: &[u8], bytes: &[u8]) -> Result<bool> {
        let start = self.timed.then(Instant::now);
        let passes = self
            .reader
            .test_passes(bytes, &self.predicates)
            .map_err(|e| self.corrupt_row(shard, key, e))?;
        if let Some(start) = start {
            self.stats.filter_time += start.elapsed();
        }
        Ok(passes)
    }

    /// Whether the stored row `bytes` (at `key` of fact shard `shard`), which passed its
    /// predicates, passes the stream's filter too, its fields read alone: a row the
    /// conditions reject is never built (building every row a scan with an `OR` read cost it
    /// a third of its time against a union on the regret bench).
    #[inline(always)]
    fn passes_filter(&mut self, shard: usize, key: &[u8], bytes: &[u8]) -> Result<bool> {
        let Some(filter) = &self.filter else {
            return Ok(true);
        };
        let start = self.timed.then(Instant::now);
        self.reader
            .test(bytes)
            .map_err(|e| self.corrupt_row(shard, key, e))?;
        let reader = &self.reader;
        let passes = filter.admits_values(&|f: &str| reader.value_of(f));
        if let Some(start) = start {
            self.stats.filter_time += start.elapsed();
        }
        Ok(passes)
    }

    /// The record of the stored row `bytes` (at `key` of fact shard `shard`): the fields the
    /// query keeps.
    fn build_row(&mut self, shard: usize, key: &[u8], bytes: &[u8]) -> Result<Record> {
        let start = self.timed.then(Instant::now);
        let record = self.build(shard, key, bytes)?;
        if let Some(start) = start {
            self.stats.filter_time += start.elapsed();
        }
        self.share_layout();
        Ok(record)
    }

    /// The record of the stored row `bytes` (at `key` of fact shard `shard`), built in the
    /// spare record's buffers when there is one.
    #[inline(always)]
    fn build(&mut self, shard: usize, key: &[u8], bytes: &[u8]) -> Result<Record> {
        let built = match self.spare.take() {
            Some(spare) => self.reader.build_reusing(bytes, spare),
            None => self.reader.build(bytes),
        };
        built.map_err(|e| self.corrupt_row(shard, key, e))
    }

    /// Gives the table the field names of the rows read, for the readers of later queries,
    /// if it has none yet.
    fn share_layout(&self) {
        self.table.share_row_layout(&self.reader);
    }

    /// The error for the damaged row at `key` of fact shard `shard`.
    #[cold]
    fn corrupt_row(&self, shard: usize, key: &[u8], e: RecordError) -> Error {
        record_corrupt(self.table.shards[shard].fact.name(), key, e)
    }

    /// The row at `key` in fact shard `shard` if it passes the re-check and, for an async
    /// index, still gives the entry at `entry_key`.
    fn fetch_match(
        &mut self,
        shard: usize,
        key: &[u8],
        entry: Option<(usize, &[u8])>,
    ) -> Result<Option<Record>> {
        let bytes = self.fetch(shard, key)?;
        self.fetched_match(shard, key, bytes.as_deref(), entry)
    }

    /// The fetched row `bytes` at `key` in fact shard `shard` if it passes the re-check and,
    /// for an async index, still gives the entry at `entry_key`.
    #[inline(always)]
    fn fetched_match(
        &mut self,
        shard: usize,
        key: &[u8],
        bytes: Option<&[u8]>,
        entry: Option<(usize, &[u8])>,
    ) -> Result<Option<Record>> {
        // A key whose row is gone at this snapshot is a dangling entry (`verify` reports
        // those) or a key that names no row: nothing to return.
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let Some(record) = self.accept(shard, key, bytes, true)? else {
            return Ok(None);
        };
        match entry {
            Some((ix, entry_key)) if !self.still_indexed(ix, shard, entry_key, &record)? => {
                Ok(None)
            }
            _ => Ok(Some(record)),
        }
    }

    /// The next key-value pair of the source, in the stream's direction.
    fn next_pair(&mut self) -> Result<Option<(Vec<u8>, Bytes)>> {
        match &mut self.source {
            Source::Pairs(pairs) if self.reverse => return Ok(pairs.pop_back()),
            Source::Pairs(pairs) => return Ok(pairs.pop_front()),
            Source::Keys(_) => return Ok(None),
            Source::Ranges { .. } => {}
        }
        let Some(cursor) = self.take_cursor()? else {
            return Ok(None);
        };
        let pair = (cursor.key().to_vec(), cursor.value());
        self.step(cursor);
        Ok(Some(pair))
    }

    /// The next entry of an index read, where the cursor holds it (or a pair read before,
    /// for a strong read of an async index). Give a cursor back with [`Stream::give_back`], or
    /// step it on with [`Stream::step`].
    fn next_held(&mut self) -> Result<Option<Held>> {
        if let Some(cursor) = self.take_cursor()? {
            return Ok(Some(Held::Cursor(cursor)));
        }
        Ok(self.next_pair()?.map(|(k, v)| Held::Pair(k, v)))
    }

    /// The cursor of a `Ranges` source, taken out of it, at its next pair (the next range
    /// opened when one ends); `None` at the end of the ranges or for another source. Give it
    /// back with [`Stream::step`].
    fn take_cursor(&mut self) -> Result<Option<Box<Cursor>>> {
        loop {
            let Source::Ranges { cf, ranges, cursor } = &mut self.source else {
                return Ok(None);
            };
            if let Some(c) = cursor.take() {
                if c.valid() {
                    return Ok(Some(c));
                }
                c.status()?;
            }
            let next = if self.reverse {
                ranges.pop_back()
            } else {
                ranges.pop_front()
            };
            let Some((lower, upper)) = next else {
                return Ok(None);
            };
            let mut options = ReadOptions::default().snapshot(&self.snapshot);
            if !lower.is_empty() {
                options = options.lower_bound(&lower);
            }
            if let Some(upper) = &upper {
                options = options.upper_bound(upper);
            }
            self.range_prefix = match self.mode {
                Mode::Index { ix, covering, .. } => {
                    // A fetch needs only the entry's primary key.
                    let fields = self.table.def.indexes[ix].fields.len();
                    let needed = if covering {
                        self.covering.first_needed().min(fields)
                    } else {
                        fields
                    };
                    shared_prefix(&lower, upper.as_deref(), needed)
                }
                Mode::Fact => (0, 0),
            };
            let mut c = self.store.store.cursor(cf, options)?;
            if self.reverse {
                c.seek_to_last();
            } else {
                c.seek_to_first();
            }
            *cursor = Some(Box::new(c));
        }
    }

    /// Moves `cursor` (from [`Stream::take_cursor`]) past its pair, in the stream's direction,
    /// and gives it back to the source.
    fn step(&mut self, mut c: Box<Cursor>) {
        if self.reverse {
            c.prev();
        } else {
            c.next();
        }
        self.give_back(c);
    }

    /// Gives `c` (from [`Stream::take_cursor`]) back to the source where it was.
    fn give_back(&mut self, c: Box<Cursor>) {
        if let Source::Ranges { cursor, .. } = &mut self.source {
            *cursor = Some(c);
        }
    }

    /// The fact shard `shard` that the entry at `key` of family `cf` names, checked.
    fn entry_shard(&self, shard: u64, cf: &str, key: &[u8]) -> Result<usize> {
        let shards = self.table.shards.len();
        usize::try_from(shard)
            .ok()
            .filter(|&s| s < shards)
            .ok_or_else(|| Error::corrupt(cf, key, Corruption::ShardOutOfRange { shard, shards }))
    }

    /// Whether `record`, fetched for the entry at `key`, still gives that entry: for an async
    /// index an entry may be left over from an earlier version of the row.
    fn still_indexed(&self, ix: usize, shard: usize, key: &[u8], record: &Record) -> Result<bool> {
        let Mode::Index {
            recheck_entry: true,
            ..
        } = self.mode
        else {
            return Ok(true);
        };
        let ixdef = &self.table.def.indexes[ix];
        let entry_pk = {
            let cf = self.table.shards[self.shard].indexes[ix].name();
            let (_, used) =
                decode_prefix(key, ixdef.fields.len()).map_err(|e| key_corrupt(cf, key, e))?;
            &key[used..]
        };
        let (expected, _) =
            index_entry(self.table.def.key_format(), ixdef, shard, entry_pk, record)?;
        Ok(expected[..] == key[..])
    }

    /// The next record that passes the re-check: rows fetched and waiting first, then by the
    /// stream's source and mode.
    #[inline(always)]
    fn pull(&mut self) -> Result<Option<Record>> {
        if let Some(r) = self.next_fetched()? {
            return Ok(Some(r));
        }
        if let Source::Keys(_) = &self.source {
            return self.pull_keys();
        }
        match self.mode {
            Mode::Fact => self.pull_fact(),
            Mode::Index {
                ix, covering: true, ..
            } => self.pull_covering(ix),
            Mode::Index { ix, fetch, .. } => self.pull_fetching(ix, fetch),
        }
    }

    /// Keys named by the query (a primary-key `IN` or equality): each fetched in turn.
    #[inline(always)]
    fn pull_keys(&mut self) -> Result<Option<Record>> {
        loop {
            let Source::Keys(keys) = &mut self.source else {
                return Ok(None);
            };
            let next = if self.reverse {
                keys.pop_back()
            } else {
                keys.pop_front()
            };
            let Some(key) = next else {
                return Ok(None);
            };
            self.stats.rows_read += 1;
            if let Some(r) = self.fetch_match(self.shard, &key, None)? {
                return Ok(Some(r));
            }
        }
    }

    /// A scan or a key range of the fact family. Each row is tested where the cursor holds
    /// it, neither key nor value copied, and the cursor is held until a row passes or its
    /// range ends (taking it from the source and giving it back was ~55 of a rejected row's
    /// ~1,040 instructions).
    #[inline(always)]
    fn pull_fact(&mut self) -> Result<Option<Record>> {
        loop {
            let Some(mut cursor) = self.take_cursor()? else {
                return Ok(None);
            };
            while cursor.valid() {
                self.stats.rows_read += 1;
                let (key, bytes) = (cursor.key(), cursor.value_ref());
                // Most rows of a scan fail the re-check: that path builds nothing.
                let passes = self
                    .passes_row(self.shard, key, bytes)
                    .and_then(|p| Ok(p && self.passes_filter(self.shard, key, bytes)?));
                let found = match passes {
                    Ok(true) => self.build_row(self.shard, key, bytes).map(Some),
                    Ok(false) => Ok(None),
                    Err(e) => Err(e),
                };
                if !matches!(found, Ok(None)) {
                    self.step(cursor);
                    return found;
                }
                if self.reverse {
                    cursor.prev();
                } else {
                    cursor.next();
                }
            }
            self.give_back(cursor);
        }
    }

    /// A covering index `ix`: each entry is read where the range's cursor holds it, in place
    /// in the source (taking the cursor out and giving it back was 146 of a covering row's
    /// 2,187 instructions); the next range's cursor goes back in its place, read the same
    /// way; pairs already read, for a strong read of an async index, are taken one by one.
    #[inline(always)]
    fn pull_covering(&mut self, ix: usize) -> Result<Option<Record>> {
        loop {
            if let Source::Ranges {
                cursor: Some(c), ..
            } = &mut self.source
                && c.valid()
            {
                self.stats.rows_read += 1;
                let mut read = CoveringRead::of(
                    &self.table,
                    self.shard,
                    ix,
                    &mut self.covering,
                    &mut self.reader,
                    &self.predicates,
                );
                let filter_time = self.timed.then_some(&mut self.stats.filter_time);
                let entry = (c.key(), c.value_ref());
                let record = timed_covering(&mut read, entry, self.range_prefix, filter_time);
                if self.reverse {
                    c.prev();
                } else {
                    c.next();
                }
                match record? {
                    Some(r) => return Ok(Some(r)),
                    None => continue,
                }
            }
            let (key, value) = match self.next_held()? {
                None => return Ok(None),
                Some(Held::Cursor(c)) => {
                    self.give_back(c);
                    continue;
                }
                Some(Held::Pair(k, v)) => (k, v),
            };
            self.stats.rows_read += 1;
            let mut read = CoveringRead::of(
                &self.table,
                self.shard,
                ix,
                &mut self.covering,
                &mut self.reader,
                &self.predicates,
            );
            let filter_time = self.timed.then_some(&mut self.stats.filter_time);
            if let Some(r) = timed_covering(&mut read, (&key, &value), (0, 0), filter_time)? {
                return Ok(Some(r));
            }
        }
    }
}

/// [`covering_row`] through `read`, its time added to `filter_time` when the query is timed.
#[inline(always)]
fn timed_covering(
    read: &mut CoveringRead<'_>,
    entry: (&[u8], &[u8]),
    skip: (usize, usize),
    filter_time: Option<&mut std::time::Duration>,
) -> Result<Option<Record>> {
    let Some(filter_time) = filter_time else {
        return covering_row(read, entry, skip);
    };
    let start = Instant::now();
    let record = covering_row(read, entry, skip);
    *filter_time += start.elapsed();
    record
}

impl<'a> CoveringRead<'a> {
    /// The parts of a read of covering index `ix` of `table`'s shard `shard`.
    #[inline(always)]
    pub(crate) fn of(
        table: &'a Table,
        shard: usize,
        ix: usize,
        fixed: &'a mut KeyFields,
        reader: &'a mut RowReader,
        predicates: &'a [Predicate],
    ) -> Self {
        CoveringRead {
            def: &table.def,
            index: &table.def.indexes[ix],
            cf: table.shards[shard].indexes[ix].name(),
            fixed,
            reader,
            predicates,
        }
    }
}
