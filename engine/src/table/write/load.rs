//! Bulk loads: new rows sorted into runs and written straight into table files, with their
//! index entries sorted the same way (RocksDB's `SstFileWriter` and ingestion, as its bulk
//! loaders use them).
//!
//! [`Db::bulk_load`] returns a [`BulkLoad`]. Rows are inserts: a key that exists fails the
//! load. [`BulkLoad::insert`] checks a row as a write would (fields, key, size), encodes it and
//! its index entries, and keeps them; it says when the kept rows reach the run size, and the
//! caller then loads the run with [`BulkLoad::commit`] ([`BulkLoad::finish`] loads the last):
//! 1. its rows are sorted by primary key; a key given twice fails the run;
//! 2. every row lock is taken (no row of the database changes meanwhile), then the table's
//!    definition is read again: an index created since the rows were kept gets their entries
//!    now, as a writer's batch would give them;
//! 3. for each shard, if no stored row has a key in the run's key range (the common case of a
//!    load into a new table or a new key range), the rows and every index's entries go to the
//!    shard store as sorted runs ([`Store::ingest`](crate::lsm::Store::ingest)): no log, no
//!    memtable, no existence check per row. When a stored row falls in the range, the run is
//!    written as ordinary inserts instead (batches of [`FALLBACK_BATCH_ROWS`] rows), which
//!    check every key and keep the indexes as every write does.
//!
//! What a failure leaves: each shard's part of a run is one atomic ingestion, so a run is
//! loaded whole or not at all on a table of one shard; on several shards, shard by shard, as
//! a multi-shard batch commits. Runs before a failing one stay loaded;
//! [`BulkLoad::loaded`] counts the rows that are in. A table whose index entries live in
//! another shard store than their rows (a global index over several shards) is loaded through
//! ordinary inserts, since one ingestion per store could not keep such an entry and its row
//! together; so is a table a change feed covers, whose rows must each reach the change log
//! (`commit/change_log.rs`), which only the commit path writes.
//!
//! A load counts its rows towards auto-analyze as each run lands, and queues the table for
//! analysis once, when it ends ([`BulkLoad::finish`], or when it is dropped), rather than have
//! the analyzer read the table whole while it grows. Rows built with [`Record::with_names`]
//! on a few shared [`FieldNames`](crate::FieldNames) lists are checked and encoded faster:
//! the load remembers the lists it has checked.
//!
//! Async indexes get their entries in the same ingestion as the rows (they are never behind
//! after a bulk load); the load waits for the indexer to finish what it has queued first, so
//! no queued change for a key can land after the loaded entry.

use crate::Scope;
use crate::error::{Error, Result};
use crate::lsm::{IngestRun, ReadOptions, WriteOptions};
use crate::table::catalog::entry::index_entry;
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::record::Record;
use crate::table::db::{Db, Table};
use crate::table::write::{KnownNames, TableBatch, checked_known, display_key};

use std::sync::Arc;

/// Encoded bytes of rows and entries a run collects before it is loaded.
/// TUNING: large enough that a run's tables are a few target-sized files (fewer, larger
/// ingestions; sorted input makes each run's key range its own), small enough that a load
/// holds a bounded amount of memory (about twice this, with the vectors' overhead).
pub const RUN_BYTES: usize = 64 << 20;

/// Rows per batch when a run overlaps stored rows and goes through ordinary inserts.
pub const FALLBACK_BATCH_ROWS: usize = 1000;

/// A bulk load into one table: see the module documentation (`load.rs`).
pub struct BulkLoad<'d> {
    db: &'d Db,
    /// The table as the load began; its id must not change (a table dropped and recreated
    /// meanwhile fails the load), its indexes may.
    start: Arc<Table>,
    /// The run's rows, `(encoded primary key, encoded record)`, in the order they came.
    facts: IngestRun,
    /// The run's entries for each index of `start` (a table of one shard; with more, entries
    /// are made per shard when the run is loaded).
    entries: Vec<IngestRun>,
    run_bytes: usize,
    loaded: u64,
    /// The field-name lists of the rows added, checked.
    known: KnownNames,
    /// The stored form of the row being added (one buffer for every row).
    encoded: Vec<u8>,
    /// A run was ingested: when the load ends, the table may be due for analysis.
    noted: bool,
    /// The buffers of the runs ingested last, emptied, for the next run's (reusing them
    /// spares the page faults of fresh memory: most of an import's).
    spare: Vec<IngestRun>,
}

/// A load's end (after [`BulkLoad::finish`], or when it is dropped) queues the table for
/// auto-analyze if the loaded rows passed the threshold: analysing a table while it is loaded
/// would read it whole after every tenth of growth, on the cores the load needs.
impl Drop for BulkLoad<'_> {
    fn drop(&mut self) {
        if self.noted
            && let Ok(t) = self.db.shared.handle(&self.start.def.name)
        {
            self.db.shared.analyze_if_due(&t);
        }
    }
}

impl Db {
    /// Starts a bulk load into `table`: inserts written straight into table files when their
    /// keys are new to the table (see [`BulkLoad`]).
    pub fn bulk_load(&self, table: &str) -> Result<BulkLoad<'_>> {
        let start = self.shared.handle(table)?;
        let shard = &start.shards[0];
        let entries = if start.shards.len() == 1 {
            shard.indexes.iter().cloned().map(IngestRun::new).collect()
        } else {
            Vec::new()
        };
        Ok(BulkLoad {
            db: self,
            facts: IngestRun::new(shard.fact.clone()),
            entries,
            start,
            run_bytes: RUN_BYTES,
            loaded: 0,
            known: KnownNames::default(),
            encoded: Vec::new(),
            noted: false,
            spare: Vec::new(),
        })
    }
}

impl<'d> BulkLoad<'d> {
    /// Every row lock, then the table's definition, with no async index entry left queued;
    /// `None` when the indexer does not catch up in a few waits (paused, failed or always
    /// behind): the caller inserts its rows ordinarily, which queue their entries like any
    /// write.
    #[expect(
        clippy::type_complexity,
        reason = "the stripes' guards and the table they guard, handed over together"
    )]
    fn lock_all_settled(&self) -> Result<Option<(Vec<std::sync::MutexGuard<'d, ()>>, Arc<Table>)>> {
        let db: &'d Db = self.db;
        for attempt in 0..=3 {
            let guards = db.shared.stripes.lock_all();
            let t = self.table()?;
            if !t.has_async() || db.shared.tracker.counts().pending == 0 {
                return Ok(Some((guards, t)));
            }
            drop(guards);
            if attempt == 3 || db.wait_for_indexes().is_err() {
                return Ok(None);
            }
        }
        Ok(None)
    }
}

impl BulkLoad<'_> {
    /// Sets the bytes a run collects before it is loaded (at least one row a run).
    pub fn run_bytes(mut self, bytes: usize) -> Self {
        self.run_bytes = bytes;
        self
    }

    /// Adds a row; its key must not exist in the table nor earlier in the load. The row is
    /// checked now (fields, key, size: an error keeps nothing of it) and kept for its run.
    /// Returns whether the run is full: then [`BulkLoad::commit`] should load it before more
    /// rows are added (a load holds about twice the run size in memory, not more).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = strata::Db::open(dir.path(), strata::Options::default())?;
    /// db.create_table("t", &["id"], strata::TableOptions::default())?;
    /// let mut load = db.bulk_load("t")?;
    /// for id in 0..10_000 {
    ///     if load.insert(strata::record! { "id" => id, "v" => id % 7 })? {
    ///         load.commit()?;
    ///     }
    /// }
    /// assert_eq!(load.finish()?, 10_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&mut self, record: Record) -> Result<bool> {
        let t = &self.start;
        let (key, record) = checked_known(
            &self.db.shared,
            t,
            record,
            &mut self.known,
            &mut self.encoded,
        )?;
        // Every entry is made before any is kept, so a refused row leaves nothing behind.
        let mut made = Vec::with_capacity(self.entries.len());
        for ix in t.def.indexes.iter().take(self.entries.len()) {
            made.push(index_entry(t.def.key_format(), ix, 0, &key, &record)?);
        }
        self.facts.push(&key, &self.encoded);
        for (run, (k, v)) in self.entries.iter_mut().zip(made) {
            run.push(&k, &v);
        }
        let bytes = self.facts.bytes() + self.entries.iter().map(IngestRun::bytes).sum::<usize>();
        Ok(bytes >= self.run_bytes)
    }

    /// Rows loaded so far (in runs that committed).
    pub fn loaded(&self) -> u64 {
        self.loaded
    }

    /// Rows added and not loaded yet.
    pub fn pending(&self) -> usize {
        self.facts.len()
    }

    /// Loads the rows added since the last run. On an error, the rows of the run that were
    /// committed before it count in [`BulkLoad::loaded`]: none when the run was ingested,
    /// the first ones in the order they were added when it went through ordinary inserts.
    /// The rest of the run is dropped.
    pub fn commit(&mut self) -> Result<()> {
        if self.facts.is_empty() {
            // Nothing added since the last run: its buffers stay for the next.
            return Ok(());
        }
        let sizes: Vec<(usize, usize)> = std::iter::once(&self.facts)
            .chain(&self.entries)
            .map(|run| (run.bytes(), run.len()))
            .collect();
        let emptied = |run: &mut IngestRun| {
            let cf = run.cf().clone();
            std::mem::replace(run, IngestRun::new(cf))
        };
        let facts = emptied(&mut self.facts);
        let entries: Vec<IngestRun> = self.entries.iter_mut().map(emptied).collect();
        let loaded = self.load_run(facts, entries);
        // The next runs: in the buffers of the run just ingested (largest first, to the
        // facts), else reserved at this run's sizes (the next is likely as large) rather
        // than grown from nothing.
        for (run, (bytes, len)) in std::iter::once(&mut self.facts)
            .chain(&mut self.entries)
            .zip(sizes)
        {
            let cf = run.cf().clone();
            *run = match self.spare.pop() {
                Some(spare) => spare.recycle(cf),
                None => IngestRun::with_capacity(cf, bytes, len),
            };
        }
        self.spare.clear();
        loaded
    }

    /// Loads what is left and returns the rows the load wrote.
    pub fn finish(mut self) -> Result<u64> {
        self.commit()?;
        Ok(self.loaded)
    }

    fn table(&self) -> Result<Arc<Table>> {
        let t = self.db.shared.handle(&self.start.def.name)?;
        if t.def.id != self.start.def.id {
            return Err(Error::Conflict(format!(
                "table {:?} was dropped and recreated during the bulk load",
                t.def.name
            )));
        }
        Ok(t)
    }

    fn load_run(&mut self, mut facts: IngestRun, entries: Vec<IngestRun>) -> Result<()> {
        // 1. Sorted; a repeated key fails the run.
        facts.sort();
        if let Some(i) = facts.first_repeat() {
            let record = self.start.layouts.decode(facts.get(i).1).ok();
            return Err(Error::Conflict(format!(
                "table {:?} has a row with key {} (twice in the load)",
                self.start.def.name,
                display_key(&self.start, record.as_ref())
            )));
        }
        let first = self.table()?;
        let global_elsewhere =
            first.shards.len() > 1 && first.def.indexes.iter().any(|ix| ix.scope == Scope::Global);
        if global_elsewhere {
            return self.insert_rows(&facts);
        }

        // 2. Every row lock, then the definition; with async indexes, nothing left queued.
        let Some((guards, t)) = self.lock_all_settled()? else {
            return self.insert_rows(&facts);
        };
        if self.db.shared.feeds.covers(t.def.id) {
            // A feed covers the table: every row goes through the commit path, which
            // writes its change log entry (checked under every row lock, which a feed's
            // creation takes too).
            drop(guards);
            return self.insert_rows(&facts);
        }
        let started = std::time::Instant::now();

        // 3. Per shard: a new key range, or ordinary inserts.
        let mut rest = None;
        // (A table of several shards splits a copy: the fallback needs the rows in the order
        // they came, which is the whole run's push order.)
        let per_shard = if t.shards.len() == 1 {
            vec![facts]
        } else {
            let split = split_by_shard(&t, &facts);
            rest = Some(facts);
            split
        };
        for (s, rows) in per_shard.iter().enumerate() {
            let Some((lo, hi)) = rows
                .len()
                .checked_sub(1)
                .map(|last| (rows.get(0).0, rows.get(last).0))
            else {
                continue;
            };
            if holds_rows_in(&t, s, lo, hi)? {
                drop(guards);
                let all = match rest {
                    Some(all) => all,
                    None => per_shard
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| IngestRun::new(t.shards[0].fact.clone())),
                };
                return self.insert_rows(&all);
            }
        }
        let ids = |def: &crate::table::catalog::TableDef| -> Vec<u64> {
            def.indexes.iter().map(|ix| ix.id).collect()
        };
        let kept = t.shards.len() == 1 && ids(&t.def) == ids(&self.start.def);
        let mut entries = if kept { Some(entries) } else { None };
        let mut written = 0u64;
        for (s, rows) in per_shard.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let n = rows.len() as u64;
            let indexes = match entries.take() {
                Some(entries) => entries,
                None => index_runs(&t, s, &rows)?,
            };
            let mut runs = Vec::with_capacity(1 + indexes.len());
            runs.push(rows);
            runs.extend(indexes);
            let ingested = t.shards[s].store.store.ingest_reusing(&mut runs);
            // Kept for the next run's buffers, the largest last (taken first).
            runs.sort_by_key(IngestRun::capacity);
            self.spare.extend(runs);
            ingested?;
            written += n;
            self.loaded += n;
        }
        drop(guards);
        let spent = started.elapsed() / t.def.indexes.len().max(1) as u32;
        for ix in &t.def.indexes {
            t.usage.maintained(ix.id, written, 0, spent);
        }
        self.db.shared.count_changes(&t, written);
        self.noted = true;
        Ok(())
    }

    /// The fallback: `rows` as ordinary inserts, in batches in the order they were added (so
    /// what commits before a failure is a prefix of the run), counting what commits.
    fn insert_rows(&mut self, rows: &IngestRun) -> Result<()> {
        let name = self.start.def.name.clone();
        let mut batch = TableBatch::new();
        for (key, encoded) in rows.in_push_order() {
            let record =
                (self.start.layouts.decode(encoded)).map_err(|e| record_corrupt(&name, key, e))?;
            batch.insert(record);
            if batch.len() == FALLBACK_BATCH_ROWS {
                let n = batch.len() as u64;
                self.db
                    .write(&name, std::mem::take(&mut batch), WriteOptions::default())?;
                self.loaded += n;
            }
        }
        let n = batch.len() as u64;
        if n > 0 {
            self.db.write(&name, batch, WriteOptions::default())?;
            self.loaded += n;
        }
        Ok(())
    }
}

/// Whether shard `s` of `t` holds a row with a key in `[lo, hi]`.
fn holds_rows_in(t: &Table, s: usize, lo: &[u8], hi: &[u8]) -> Result<bool> {
    let shard = &t.shards[s];
    let mut cursor = shard
        .store
        .store
        .cursor(&shard.fact, ReadOptions::default().lower_bound(lo))?;
    cursor.seek(lo);
    cursor.status()?;
    Ok(cursor.valid() && cursor.key() <= hi)
}

/// `facts` (sorted) as one run per shard of `t`, each still sorted.
fn split_by_shard(t: &Table, facts: &IngestRun) -> Vec<IngestRun> {
    let mut runs: Vec<IngestRun> = t
        .shards
        .iter()
        .map(|shard| IngestRun::new(shard.fact.clone()))
        .collect();
    for (key, encoded) in facts.iter() {
        runs[t.fact_shard(key)].push(key, encoded);
    }
    runs
}

/// The entries of shard `s`'s rows in every index `t` has now, one run per index.
fn index_runs(t: &Table, s: usize, rows: &IngestRun) -> Result<Vec<IngestRun>> {
    let shard = &t.shards[s];
    let mut runs: Vec<IngestRun> = shard.indexes.iter().cloned().map(IngestRun::new).collect();
    for (key, encoded) in rows.iter() {
        let record =
            (t.layouts.decode(encoded)).map_err(|e| record_corrupt(shard.fact.name(), key, e))?;
        for (run, ix) in runs.iter_mut().zip(&t.def.indexes) {
            let (k, v) = index_entry(t.def.key_format(), ix, s, key, &record)?;
            run.push(&k, &v);
        }
    }
    Ok(runs)
}
