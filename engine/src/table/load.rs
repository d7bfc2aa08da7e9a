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
//! together.
//!
//! Async indexes get their entries in the same ingestion as the rows (they are never behind
//! after a bulk load); the load waits for the indexer to finish what it has queued first, so
//! no queued change for a key can land after the loaded entry.

use crate::Scope;
use crate::error::{Error, Result};
use crate::lsm::{IngestRun, ReadOptions, WriteOptions};
use crate::table::db::{Db, Table};
use crate::table::entry::index_entry;
use crate::table::entry::record_corrupt;
use crate::table::record::Record;
use crate::table::write::{TableBatch, checked, display_key};

/// Encoded bytes of rows and entries a run collects before it is loaded.
/// TUNING: large enough that a run's tables are a few target-sized files (fewer, larger
/// ingestions; sorted input makes each run's key range its own), small enough that a load
/// holds a bounded amount of memory (about twice this, with the vectors' overhead).
pub const RUN_BYTES: usize = 64 << 20;

/// Rows per batch when a run overlaps stored rows and goes through ordinary inserts.
pub const FALLBACK_BATCH_ROWS: usize = 1000;

/// A row kept for the next run.
struct Kept {
    /// Its place in the run, in the order rows were added.
    seq: usize,
    key: Vec<u8>,
    encoded: Vec<u8>,
    /// `(index id, entry key, entry value)`, for the indexes the load started with.
    entries: Vec<(u64, Vec<u8>, Vec<u8>)>,
}

/// A bulk load into one table: see the module documentation (`load.rs`).
pub struct BulkLoad<'d> {
    db: &'d Db,
    table: String,
    /// The table's id when the load began: a table dropped and recreated meanwhile fails it.
    table_id: u64,
    /// The rows of the run being collected.
    rows: Vec<Kept>,
    bytes: usize,
    run_bytes: usize,
    loaded: u64,
}

impl Db {
    /// Starts a bulk load into `table`: inserts written straight into table files when their
    /// keys are new to the table (see [`BulkLoad`]).
    pub fn bulk_load(&self, table: &str) -> Result<BulkLoad<'_>> {
        let t = self.handle(table)?;
        Ok(BulkLoad {
            db: self,
            table: table.to_owned(),
            table_id: t.def.id,
            rows: Vec::new(),
            bytes: 0,
            run_bytes: RUN_BYTES,
            loaded: 0,
        })
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
    /// db.create_table("t", &["id"])?;
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
        let t = self.table()?;
        let (key, record, encoded) = checked(&t.def, record)?;
        let shard = t.fact_shard(&key);
        let mut entries = Vec::with_capacity(t.def.indexes.len());
        for ix in &t.def.indexes {
            let (k, v) = index_entry(ix, shard, &key, &record)?;
            entries.push((ix.id, k, v));
        }
        self.bytes += key.len() + encoded.len();
        self.bytes += entries
            .iter()
            .map(|(_, k, v)| k.len() + v.len())
            .sum::<usize>();
        self.rows.push(Kept {
            seq: self.rows.len(),
            key,
            encoded,
            entries,
        });
        Ok(self.bytes >= self.run_bytes)
    }

    /// Rows loaded so far (in runs that committed).
    pub fn loaded(&self) -> u64 {
        self.loaded
    }

    /// Rows added and not loaded yet.
    pub fn pending(&self) -> usize {
        self.rows.len()
    }

    /// Loads the rows added since the last run. On an error, the rows of the run that were
    /// committed before it count in [`BulkLoad::loaded`]: none when the run was ingested,
    /// the first ones in the order they were added when it went through ordinary inserts.
    /// The rest of the run is dropped.
    pub fn commit(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.rows);
        self.bytes = 0;
        if rows.is_empty() {
            return Ok(());
        }
        self.load_run(rows)
    }

    /// Loads what is left and returns the rows the load wrote.
    pub fn finish(mut self) -> Result<u64> {
        self.commit()?;
        Ok(self.loaded)
    }

    fn table(&self) -> Result<std::sync::Arc<Table>> {
        let t = self.db.handle(&self.table)?;
        if t.def.id != self.table_id {
            return Err(Error::Conflict(format!(
                "table {:?} was dropped and recreated during the bulk load",
                self.table
            )));
        }
        Ok(t)
    }

    fn load_run(&mut self, mut rows: Vec<Kept>) -> Result<()> {
        // 1. Sorted; a repeated key fails the run.
        rows.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        if let Some(pair) = rows.windows(2).find(|w| w[0].key == w[1].key) {
            let t = self.table()?;
            let record = Record::decode(&pair[1].encoded).ok();
            return Err(Error::Conflict(format!(
                "table {:?} has a row with key {} (twice in the load)",
                t.def.name,
                display_key(&t, record.as_ref())
            )));
        }
        let first = self.table()?;
        let global_elsewhere =
            first.shards.len() > 1 && first.def.indexes.iter().any(|ix| ix.scope == Scope::Global);
        if global_elsewhere {
            return self.insert_rows(rows);
        }

        // 2. Every row lock, then the definition; with async indexes, nothing left queued.
        let mut attempts = 0;
        let (guards, t) = loop {
            let guards = self.db.stripes.lock_all();
            let t = self.table()?;
            if !t.has_async() || self.db.tracker.counts().pending == 0 {
                break (guards, t);
            }
            drop(guards);
            attempts += 1;
            // A paused or failed indexer, or one that never catches up: ordinary inserts,
            // which queue their entries like any write.
            if attempts > 3 || self.db.wait_for_indexes().is_err() {
                return self.insert_rows(rows);
            }
        };
        let started = std::time::Instant::now();

        // 3. Per shard: new key range, or ordinary inserts.
        let shards = t.shards.len();
        let mut per_shard: Vec<Vec<Kept>> = (0..shards).map(|_| Vec::new()).collect();
        for row in rows {
            per_shard[t.fact_shard(&row.key)].push(row);
        }
        for (s, rows) in per_shard.iter().enumerate() {
            let (Some(lo), Some(hi)) = (rows.first(), rows.last()) else {
                continue;
            };
            if self.holds_rows_in(&t, s, &lo.key, &hi.key)? {
                drop(guards);
                return self.insert_rows(per_shard.into_iter().flatten().collect());
            }
        }
        let mut written = 0u64;
        for (s, rows) in per_shard.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let n = rows.len() as u64;
            let runs = shard_runs(&t, s, rows)?;
            t.shards[s].store.store.ingest(runs)?;
            written += n;
            self.loaded += n;
        }
        drop(guards);
        let spent = started.elapsed();
        for ix in &t.def.indexes {
            t.usage.maintained(ix.id, written, 0, spent / shards as u32);
        }
        self.db.note_changes(&t, written);
        Ok(())
    }

    /// Whether shard `s` holds a row with a key in `[lo, hi]`.
    fn holds_rows_in(&self, t: &Table, s: usize, lo: &[u8], hi: &[u8]) -> Result<bool> {
        let shard = &t.shards[s];
        let mut cursor = shard
            .store
            .store
            .cursor(&shard.fact, ReadOptions::default().lower_bound(lo))?;
        cursor.seek(lo);
        cursor.status()?;
        Ok(cursor.valid() && cursor.key() <= hi)
    }

    /// The fallback: `rows` as ordinary inserts, in batches in the order they were added (so
    /// what commits before a failure is a prefix of the run), counting what commits.
    fn insert_rows(&mut self, mut rows: Vec<Kept>) -> Result<()> {
        rows.sort_unstable_by_key(|row| row.seq);
        for chunk in rows.chunks(FALLBACK_BATCH_ROWS) {
            let mut batch = TableBatch::new();
            for row in chunk {
                let record = Record::decode(&row.encoded)
                    .map_err(|e| record_corrupt(&self.table, &row.key, e))?;
                batch.insert(record);
            }
            self.db.write(&self.table, batch, WriteOptions::default())?;
            self.loaded += chunk.len() as u64;
        }
        Ok(())
    }
}

/// Shard `s`'s rows and index entries as sorted runs, one per family. A row kept under
/// other indexes than `t` has now (one was created or dropped since) gets its entries again.
fn shard_runs(t: &Table, s: usize, rows: Vec<Kept>) -> Result<Vec<IngestRun>> {
    let shard = &t.shards[s];
    let ids: Vec<u64> = t.def.indexes.iter().map(|ix| ix.id).collect();
    let mut index_entries: Vec<Vec<(Vec<u8>, Vec<u8>)>> =
        ids.iter().map(|_| Vec::with_capacity(rows.len())).collect();
    let mut facts = Vec::with_capacity(rows.len());
    for row in rows {
        if row.entries.iter().map(|e| e.0).eq(ids.iter().copied()) {
            for (i, (_, k, v)) in row.entries.into_iter().enumerate() {
                index_entries[i].push((k, v));
            }
        } else {
            let record = Record::decode(&row.encoded)
                .map_err(|e| record_corrupt(shard.fact.name(), &row.key, e))?;
            for (i, ix) in t.def.indexes.iter().enumerate() {
                index_entries[i].push(index_entry(ix, s, &row.key, &record)?);
            }
        }
        facts.push((row.key, row.encoded));
    }
    let mut runs = Vec::with_capacity(1 + index_entries.len());
    runs.push(IngestRun {
        cf: shard.fact.clone(),
        entries: facts,
    });
    for (i, mut entries) in index_entries.into_iter().enumerate() {
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        runs.push(IngestRun {
            cf: shard.indexes[i].clone(),
            entries,
        });
    }
    Ok(runs)
}
