//! A stream's fetches: for an index entry that does not cover the query, the row it names is
//! fetched from its fact shard, a batch of entries at a time (in index order, or sorted by key
//! so that random fetches become a forward walk), by a merge with a cursor over the fact
//! family where the rows lie together, by batched lookups elsewhere. The batch's keys, rows
//! and targets live in the stream's fetch buffers, which its table's pool keeps between
//! queries.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use strata_lsm::coding::compare_keys;
use strata_planner::Fetch;

use super::{Mode, Source, Stream};
use crate::error::Result;
use crate::lsm::{Cursor, ReadOptions};
use crate::table::catalog::entry::{entry_target, record_corrupt};
use crate::table::codec::record::{Record, RecordError};
use crate::table::codec::row_reader::{RowReader, in_place};
use crate::table::db::Table;
use crate::table::db::reader_pool::Target;
use crate::table::read::row_ref::RowRef;
use crate::table::read::rows::ExecStats;

/// Index entries whose records are fetched together, sorted by key.
/// TUNING: enough keys that sorting turns random fetches into a forward walk through the
/// fact family's blocks, few enough to hold in memory.
const FETCH_BATCH: usize = 1024;

/// The first batch of fetches in index order when the query has no limit; each next batch is
/// twice as large, up to [`FETCH_BATCH`].
/// TUNING: small, so a query that stops after a few rows (a limit, an early end) fetches
/// few rows it does not return.
pub(crate) const FIRST_FETCH_BATCH: usize = 16;

/// How many entries a fact cursor steps over, at most, to reach the next row of a batch
/// fetched as a merge before it seeks instead.
/// TUNING: a step is ~500 instructions, a cursor's seek ~7,800 (it seeks every source of the
/// family), a lookup in a batch ~1,100; rows of one indexed value written together are next
/// to each other, so one step is the common case.
const MERGE_STEPS: usize = 8;

/// A stream fetches its batches as a merge while at most one row in this many of a batch
/// needed a seek: rows spread over the table are looked up in batches instead (a lookup
/// loads the blocks of the keys ahead while it reads the current one; a cursor cannot).
/// TUNING: from the costs above, a merge pays while fewer than one row in 13 needs a seek;
/// on `lineitem` read by ship date (a field that follows the key only loosely: a quarter
/// to a half of the rows needed a seek) a bound of one in four kept the merge and cost 14 %.
const MERGE_SEEKS_PER: usize = 16;

impl Stream {
    /// The stored row at `key` in fact shard `shard`, at the query's snapshot.
    pub(super) fn fetch(&mut self, shard: usize, key: &[u8]) -> Result<Option<Bytes>> {
        let start = self.timed.then(Instant::now);
        self.stats.fetches += 1;
        let fact = &self.table.shards[shard];
        let got = fact
            .store
            .store
            .get_at(&fact.fact, key, &self.facts[shard])?;
        if let Some(start) = start {
            self.stats.fetch_time += start.elapsed();
        }
        Ok(got)
    }

    /// The stored rows of `batch` (their primary keys in `keys`), at the query's snapshot,
    /// each shard's found in one pass per level: each found row is copied to the end of
    /// `values` and its place noted in its target (or, while `lending` lends, lent where the
    /// merge's cursor holds it, and its target dropped); the targets whose row is gone at this
    /// snapshot are dropped. The rest keep their order. Once `lending`'s reader asks for no
    /// more rows, the whole batch is dropped (no lookups are made for its rest).
    fn fetch_batch(
        &mut self,
        keys: &[u8],
        batch: &mut Vec<Target>,
        values: &mut Vec<u8>,
        mut lending: Option<&mut Lending<'_>>,
    ) -> Result<()> {
        let start = self.timed.then(Instant::now);
        self.stats.fetches += batch.len() as u64;
        let mut found = vec![false; batch.len()];
        let one_shard = batch.windows(2).all(|w| w[0].shard == w[1].shard);
        let mut merged = 0;
        if self.merge_fetches && one_shard {
            merged = self.fetch_merged(keys, batch, values, &mut found, lending.as_deref_mut())?;
            self.stats.fetches_merged += merged as u64;
        }
        if lending.is_some_and(|l| l.stopped) {
            // The reader asked for no more rows: nothing of the batch waits.
            batch.clear();
            return Ok(());
        }
        if merged < batch.len() {
            self.fetch_looked_up(keys, &mut batch[merged..], values, &mut found[merged..])?;
        }
        // A key whose row is gone at this snapshot is a dangling entry (`verify` reports
        // those) or a key that names no row: nothing to return.
        let mut i = 0;
        batch.retain(|_| {
            i += 1;
            found[i - 1]
        });
        if let Some(start) = start {
            self.stats.fetch_time += start.elapsed();
        }
        Ok(())
    }

    /// The rows of `batch`, all of one shard, found by walking a cursor over the fact
    /// family alongside the batch's keys: a step to the next entry when the next key is a
    /// few entries on (the rows an index value names are often written together, so
    /// neighbours in the family), a seek otherwise. Found rows are copied to the end of
    /// `values` and marked in `found` — or, while `lending` lends, lent where the cursor holds
    /// them ([`Lending`]), neither copied nor marked. Once more than one row in
    /// [`MERGE_SEEKS_PER`] has needed a seek, it stops, and the stream fetches by lookups from
    /// then on: returns how many of the batch's rows it answered.
    fn fetch_merged(
        &mut self,
        keys: &[u8],
        batch: &mut [Target],
        values: &mut Vec<u8>,
        found: &mut [bool],
        mut lending: Option<&mut Lending<'_>>,
    ) -> Result<usize> {
        let Some(shard) = batch.first().map(|t| t.shard) else {
            return Ok(0);
        };
        let len = batch.len();
        let table = Arc::clone(&self.table);
        let cursor = match &mut self.fact_cursor {
            Some((at, cursor)) if *at == shard => cursor,
            slot => {
                let fact = &table.shards[shard];
                let options = ReadOptions::default().snapshot(&self.facts[shard]);
                let cursor = fact.store.store.cursor(&fact.fact, options)?;
                &mut slot.insert((shard, Box::new(cursor))).1
            }
        };
        let mut seeks = 0;
        for (i, (t, found)) in batch.iter_mut().zip(found).enumerate() {
            if seeks * MERGE_SEEKS_PER > i.max(MERGE_SEEKS_PER) {
                self.merge_fetches = false;
                return Ok(i);
            }
            let pk = &keys[t.pk..t.end];
            // Each position's order against the key, compared once (comparing it again for
            // each test was ~100 of a clustered fetch's ~5,000 instructions a row).
            let order = |c: &Cursor| c.valid().then(|| compare_keys(c.key(), pk));
            let mut at = order(cursor);
            let mut steps = 0;
            while at == Some(Ordering::Less) && steps < MERGE_STEPS {
                cursor.next();
                steps += 1;
                at = order(cursor);
            }
            // Behind the key still, or past it without having stepped from before it (the
            // keys went back, or the cursor is new or ran off the end): seek it.
            let behind = at == Some(Ordering::Less);
            if at.is_none() || behind || (steps == 0 && at == Some(Ordering::Greater)) {
                cursor.seek(pk);
                seeks += 1;
                at = order(cursor);
            }
            if at.is_none() {
                cursor.status()?;
                continue;
            }
            if at != Some(Ordering::Equal) {
                continue;
            }
            let row = cursor.value_ref();
            if let Some(lending) = lending.as_deref_mut().filter(|l| l.on) {
                let limited = lending
                    .limit
                    .is_some_and(|limit| self.stats.rows_returned >= limit);
                if in_place(row) && !limited {
                    let lent =
                        stored_row(&table, &mut self.reader, &mut self.stats, shard, pk, row)?;
                    if !(lending.lend)(&lent) {
                        lending.stopped = true;
                        return Ok(i + 1);
                    }
                    continue;
                }
                // A row of the first format (built when its turn comes), or one past the
                // limit: it and the rest of the batch wait in the stream's queue, in order.
                lending.on = false;
            }
            t.keep(values, row);
            *found = true;
        }
        Ok(len)
    }

    /// The rows of `batch` found by looking their keys up, each shard's in one pass per
    /// level of its fact family; found rows are copied to the end of `values` and marked in
    /// `found`.
    fn fetch_looked_up(
        &mut self,
        keys: &[u8],
        batch: &mut [Target],
        values: &mut Vec<u8>,
        found: &mut [bool],
    ) -> Result<()> {
        let table = Arc::clone(&self.table);
        let mut shards: Vec<usize> = batch.iter().map(|t| t.shard).collect();
        shards.sort_unstable();
        shards.dedup();
        for shard in shards {
            let at: Vec<usize> = (0..batch.len())
                .filter(|&i| batch[i].shard == shard)
                .collect();
            let pks: Vec<&[u8]> = at
                .iter()
                .map(|&i| &keys[batch[i].pk..batch[i].end])
                .collect();
            let fact = &table.shards[shard];
            fact.store.store.multi_get_each_at(
                &fact.fact,
                &pks,
                &self.facts[shard],
                |j, row| {
                    batch[at[j]].keep(values, row);
                    found[at[j]] = true;
                },
            )?;
        }
        Ok(())
    }

    /// A keys-only (or partly covering) index `ix`: a batch of entries whose rows are
    /// fetched together, sorted by key, or in index order (a batch that grows, so a query
    /// that stops early after a few rows fetches few more than it returns).
    #[inline(always)]
    pub(super) fn pull_fetching(&mut self, ix: usize, fetch: Fetch) -> Result<Option<Record>> {
        loop {
            if !self.fetch_next(ix, fetch, None)? {
                return Ok(None);
            }
            if let Some(r) = self.next_fetched()? {
                return Ok(Some(r));
            }
        }
    }

    /// Reads the next batch of index `ix`'s entries and fetches their rows, which then wait
    /// in `fetched` (but those `lending` lent, and all of them once its reader stopped);
    /// `false` when the source has no entries left.
    #[inline(always)]
    fn fetch_next(
        &mut self,
        ix: usize,
        fetch: Fetch,
        lending: Option<&mut Lending<'_>>,
    ) -> Result<bool> {
        let table = Arc::clone(&self.table);
        let sorted = fetch == Fetch::SortedByKey;
        let want = if sorted {
            FETCH_BATCH
        } else {
            self.fetch_batch
        };
        // The batch's entry keys, one after another in one buffer (no allocation per
        // entry), each read where the cursor holds it.
        let mut buf = std::mem::take(&mut self.fetch_keys);
        buf.clear();
        let mut batch = std::mem::take(&mut self.fetch_targets);
        batch.clear();
        batch.reserve(want);
        while batch.len() < want {
            // A range's entries are read where its cursor holds them, the cursor taken out
            // of the source once for the run of them, not once an entry (~90
            // instructions an entry, callgrind).
            if let Some(mut c) = self.take_cursor()? {
                let mut failed = None;
                while batch.len() < want && c.valid() {
                    self.stats.rows_read += 1;
                    let (k, v) = (c.key(), c.value_ref());
                    let target = self.target(&table, ix, (k, v), self.range_prefix, &mut buf);
                    if self.reverse {
                        c.prev();
                    } else {
                        c.next();
                    }
                    match target {
                        Ok(target) => batch.push(target),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                self.give_back(c);
                if let Some(e) = failed {
                    return Err(e);
                }
                continue;
            }
            // Pairs read before (a strong read of an async index).
            let Some((k, v)) = self.next_pair()? else {
                break;
            };
            self.stats.rows_read += 1;
            batch.push(self.target(&table, ix, (&k, &v), (0, 0), &mut buf)?);
        }
        if batch.is_empty() {
            self.fetch_keys = buf;
            self.fetch_targets = batch;
            return Ok(false);
        }
        if sorted {
            batch.sort_unstable_by(|a, b| {
                (a.shard, &buf[a.pk..a.end]).cmp(&(b.shard, &buf[b.pk..b.end]))
            });
        } else {
            self.fetch_batch = (self.fetch_batch * 2).min(FETCH_BATCH);
        }
        let mut values = std::mem::take(&mut self.fetch_values);
        values.clear();
        let fetched = self.fetch_batch(&buf, &mut batch, &mut values, lending);
        self.fetch_keys = buf;
        self.fetch_values = values;
        if fetched.is_ok() {
            self.fetched.extend(batch.drain(..));
        }
        self.fetch_targets = batch;
        fetched?;
        Ok(true)
    }

    /// The fetch target of the entry `key`, `value` of index `ix` (the first `skip` of its
    /// key's values and bytes stepped over at once, as `entry_parts` does): its key copied to
    /// the end of `buf`.
    #[inline(always)]
    fn target(
        &self,
        table: &Table,
        ix: usize,
        (key, value): (&[u8], &[u8]),
        skip: (usize, usize),
        buf: &mut Vec<u8>,
    ) -> Result<Target> {
        let cf_name = table.shards[self.shard].indexes[ix].name();
        let (shard, pk_at) = entry_target(
            &table.def,
            &table.def.indexes[ix],
            cf_name,
            (key, value),
            skip,
        )?;
        let shard = self.entry_shard(shard, cf_name, key)?;
        let start = buf.len();
        buf.extend_from_slice(key);
        Ok(Target {
            shard,
            start,
            pk: start + pk_at,
            end: buf.len(),
            value: (0, 0),
        })
    }

    /// The next row of the fetched batch that passes the re-check (and, for an async index,
    /// still gives its entry), built now.
    pub(super) fn next_fetched(&mut self) -> Result<Option<Record>> {
        let Mode::Index { ix, .. } = self.mode else {
            return Ok(None);
        };
        while let Some(t) = self.fetched.pop_front() {
            let (buf, values) = (
                std::mem::take(&mut self.fetch_keys),
                std::mem::take(&mut self.fetch_values),
            );
            let (pk, k) = (&buf[t.pk..t.end], &buf[t.start..t.end]);
            let row = &values[t.value.0..t.value.1];
            let found = self.fetched_match(t.shard, pk, Some(row), Some((ix, k)));
            self.fetch_keys = buf;
            self.fetch_values = values;
            if let Some(r) = found? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// The next row that passes the re-check, not built where it need not be: on a read of a
    /// sync index fetching rows, a fetched row of a current format is tested on its stored
    /// bytes and left where it lies ([`Placed::Stored`], lent by [`Stream::placed_row`]);
    /// any other row is built as [`Stream::next_row`] builds it. `None` (and the stream done)
    /// at the end.
    #[inline(always)]
    pub(crate) fn next_placed(&mut self) -> Result<Option<Placed>> {
        let Mode::Index {
            ix,
            covering: false,
            fetch,
            recheck_entry: false,
        } = self.mode
        else {
            return Ok(self.next_row()?.map(Placed::Built));
        };
        if self.done || self.timed || matches!(self.source, Source::Keys(_)) {
            return Ok(self.next_row()?.map(Placed::Built));
        }
        loop {
            while let Some(t) = self.fetched.pop_front() {
                if let Some(placed) = self.fetched_passes(ix, t)? {
                    // A row lent where it lies counts as matched once it is lent.
                    if let Placed::Built(_) = placed {
                        self.stats.rows_matched += 1;
                    }
                    return Ok(Some(placed));
                }
            }
            if !self.fetch_next(ix, fetch, None)? {
                self.done = true;
                return Ok(None);
            }
        }
    }

    /// Whether the fetched row of `t` (for an entry of index `ix`) passes the re-check and
    /// the filter: tested on its stored bytes and left there, or, for a row of the first
    /// format, built and tested on its record.
    #[inline(always)]
    fn fetched_passes(&mut self, ix: usize, t: Target) -> Result<Option<Placed>> {
        // The common case first, read where the buffers lie: a row of a current format with
        // nothing to test (the index's ranges answered every predicate) passes as it is.
        // (Taking both buffers out and putting them back, and the tests' chain of results,
        // were ~60 instructions a row of the day's customers, callgrind.)
        if self.predicates.is_empty()
            && self.filter.is_none()
            && in_place(&self.fetch_values[t.value.0..t.value.1])
        {
            return Ok(Some(Placed::Stored(t)));
        }
        let (buf, values) = (
            std::mem::take(&mut self.fetch_keys),
            std::mem::take(&mut self.fetch_values),
        );
        let (pk, row) = (&buf[t.pk..t.end], &values[t.value.0..t.value.1]);
        let found = if in_place(row) {
            // Nothing to test (the index's ranges answered every predicate): the row's head
            // is checked when it is lent.
            let passes = if self.predicates.is_empty() {
                Ok(true)
            } else {
                self.passes_row(t.shard, pk, row)
            };
            passes
                .and_then(|p| Ok(p && self.passes_filter(t.shard, pk, row)?))
                .map(|p| p.then_some(Placed::Stored(t)))
        } else {
            let entry = Some((ix, &buf[t.start..t.end]));
            self.fetched_match(t.shard, pk, Some(row), entry)
                .map(|found| match (found, &self.filter) {
                    (Some(record), Some(filter)) if !filter.admits(&record) => {
                        self.spare = Some(record);
                        None
                    }
                    (found, _) => found.map(Placed::Built),
                })
        };
        self.fetch_keys = buf;
        self.fetch_values = values;
        found
    }

    /// The fetched row of `t`, which [`Stream::next_placed`] found to pass, lent where it
    /// lies: the fields the query keeps, read when asked for (its head is checked here, each
    /// value when it is read). Counted as matched and returned when lent (the rows of one
    /// stream, whose statistics are the query's).
    #[inline(always)]
    pub(crate) fn placed_row(&mut self, t: Target) -> Result<RowRef<'_>> {
        let row = &self.fetch_values[t.value.0..t.value.1];
        let key = &self.fetch_keys[t.pk..t.end];
        stored_row(
            &self.table,
            &mut self.reader,
            &mut self.stats,
            t.shard,
            key,
            row,
        )
    }

    /// The index and the fetch of a stream whose fetched rows may be lent where the fact
    /// cursor holds them ([`Stream::lend_next`]): one reading a sync index that does not
    /// cover the query, fetching its rows as a merge, untimed, with nothing to test the rows
    /// on and no row of an earlier batch waiting.
    pub(crate) fn lends(&self) -> Option<(usize, Fetch)> {
        match self.mode {
            Mode::Index {
                ix,
                covering: false,
                fetch,
                recheck_entry: false,
            } if !self.done
                && !self.timed
                && self.merge_fetches
                && self.fetched.is_empty()
                && self.predicates.is_empty()
                && self.filter.is_none()
                && !matches!(self.source, Source::Keys(_)) =>
            {
                Some((ix, fetch))
            }
            _ => None,
        }
    }

    /// Reads the next batch of index `ix`'s entries (as [`Stream::lends`] gave them) and
    /// fetches their rows, lending each found row of a current format to `lending` where the
    /// fact cursor holds it, in the order [`Stream::next_placed`] would give them: the rows
    /// not lent (a row of the first format and those after it in the batch, the rows past a
    /// limit, the rows the merge gave over to lookups) wait in the stream's queue. `false`
    /// (and the stream done) when the index has no entries left.
    pub(crate) fn lend_next(
        &mut self,
        ix: usize,
        fetch: Fetch,
        lending: &mut Lending<'_>,
    ) -> Result<bool> {
        if self.fetch_next(ix, fetch, Some(lending))? {
            return Ok(true);
        }
        self.done = true;
        Ok(false)
    }
}

/// A reader's turn at the rows a merge finds ([`Stream::lend_next`]): each lent to `lend`
/// where the fact cursor holds it (one copy fewer, and no turn through the stream's queue:
/// ~200 instructions a row of a selective SQL query, callgrind), until `lend` answers `false`.
pub(crate) struct Lending<'f> {
    pub(crate) lend: &'f mut dyn FnMut(&RowRef<'_>) -> bool,
    /// The query's limit: a row past it is not lent.
    pub(crate) limit: Option<u64>,
    /// Still lending: no row of the batch has been queued (the rows after a queued one are
    /// queued too, to keep their order).
    pub(crate) on: bool,
    /// `lend` asked for no more rows.
    pub(crate) stopped: bool,
}

impl<'f> Lending<'f> {
    pub(crate) fn new(lend: &'f mut dyn FnMut(&RowRef<'_>) -> bool, limit: Option<u64>) -> Self {
        Lending {
            lend,
            limit,
            on: true,
            stopped: false,
        }
    }
}

/// The fetched `row` at `key` of fact shard `shard`, which passes, lent where it lies: the
/// fields `reader` keeps, read when asked for (its head is checked here, each value when it
/// is read). Counted as matched and returned in `stats` (the rows of one stream, whose
/// statistics are the query's).
#[inline(always)]
fn stored_row<'a>(
    table: &'a Table,
    reader: &'a mut RowReader,
    stats: &mut ExecStats,
    shard: usize,
    key: &'a [u8],
    row: &'a [u8],
) -> Result<RowRef<'a>> {
    let family = table.shards[shard].fact.name();
    if table.row_layout.get().is_none() && reader.kept(row).is_ok() {
        // The table's first row read: its layout is learnt, and given the table for the
        // readers of later queries (the lent row borrows the reader).
        table.share_row_layout(reader);
    }
    // Only rows of the current formats are lent.
    if !in_place(row) {
        let version = row.first().copied().unwrap_or_default();
        return Err(record_corrupt(family, key, RecordError::Version(version)));
    }
    match reader.kept_in_place(row) {
        Ok((names, at, view)) => {
            stats.rows_matched += 1;
            stats.rows_returned += 1;
            Ok(RowRef::stored(names, at, view, family, key))
        }
        Err(e) => Err(record_corrupt(family, key, e)),
    }
}

/// What [`Stream::next_placed`] found.
pub(crate) enum Placed {
    /// A fetched row, where it lies ([`Stream::placed_row`] lends it).
    Stored(Target),
    /// A built row.
    Built(Record),
}
