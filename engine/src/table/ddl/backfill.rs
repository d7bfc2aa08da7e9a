//! Index backfill while writes go on.
//!
//! 1. The index is published `WriteOnly` before the backfill starts: from then on every
//!    writer maintains it, because a writer reads the definition after taking its key's stripe.
//! 2. `Backfilling`: every key stripe is taken once and released, so each writer that read
//!    the definition before step 1 has committed (its row, with no entry, is then in the
//!    snapshot below; a row it inserted after the snapshot would be indexed by no one).
//!    Then the fact family is scanned at a snapshot for its keys, in chunks. For each chunk
//!    the backfill takes the keys' stripes, reads each row as it is *now* (not as of the
//!    snapshot) and puts that row's entry. A row changed since the snapshot was either changed
//!    before the stripe was taken (the backfill sees the change) or after (the writer, which
//!    saw the index, fixes the entry); a row deleted meanwhile is skipped; a row inserted
//!    after the snapshot was indexed by its writer.
//! 3. `Ready`: the planner may use it. Then, if the entries went to more than one table
//!    (overlapping flushes in level 0), the index family is compacted into one sorted run, so
//!    a read of it seeks one table per shard, not one per flush.
//!
//! Putting an entry twice is harmless, so a backfill interrupted by a crash starts over at
//! open. Each shard's rows are read in turn; an entry goes to the shard that holds it (the
//! row's, or for a global index the one its leading value hashes to). For an async index the
//! backfill writes entries directly while writers queue theirs in the outbox: a pending
//! outbox entry was written before the backfill read the row, so it ends at that row's
//! state too, and applying it after the backfill's put changes nothing.

use std::collections::BTreeMap;

use strata_planner::{IndexState, Value};

use crate::error::{Error, Result};
use crate::lsm::{ReadOptions, WriteBatch, WriteOptions};
use crate::table::catalog::entry::{index_entry, key_corrupt};
use crate::table::codec::key::decode_value;
use crate::table::db::Db;

/// Keys per backfill step: each step holds its keys' stripes while it reads and writes.
/// TUNING: small enough that a writer waits at most one step (about a millisecond), large
/// enough that the write batch amortises the commit.
const CHUNK_KEYS: usize = 256;

impl Db {
    /// Backfills index `index` of `table` and marks it `Ready`.
    /// REQUIRES: the DDL lock is held; the index exists.
    pub(crate) fn backfill(&self, table: &str, index: &str) -> Result<()> {
        self.set_index_state(table, index, IndexState::Backfilling)?;
        // A writer that read the definition before the index was published may still be
        // committing a row without its entry; one that locks from now on sees the index.
        // Waiting for every stripe lets each of the first kind finish before the snapshot,
        // so its row is in it (a new row would otherwise be indexed by no one).
        drop(self.shared.stripes.lock_all());
        let start = self.shared.handle(table)?;
        let id = start.def.id;
        let mut rows = 0u64;
        for (s, shard) in start.shards.iter().enumerate() {
            let snapshot = shard.store.store.snapshot();
            let mut cursor = shard
                .store
                .store
                .cursor(&shard.fact, ReadOptions::default().snapshot(&snapshot))?;
            cursor.seek_to_first();
            loop {
                let mut keys: Vec<Vec<u8>> = Vec::with_capacity(CHUNK_KEYS);
                while cursor.valid() && keys.len() < CHUNK_KEYS {
                    keys.push(cursor.key().to_vec());
                    cursor.next();
                }
                cursor.status()?;
                if keys.is_empty() {
                    break;
                }
                let _guards = self.shared.stripes.lock(keys.iter().map(Vec::as_slice));
                let t = self.shared.handle(table)?;
                if t.def.id != id {
                    return Err(Error::NotFound(format!(
                        "table {table:?} (dropped during backfill)"
                    )));
                }
                let (i, ix) = t.index(index)?;
                let mut batches: BTreeMap<usize, WriteBatch> = BTreeMap::new();
                for key in &keys {
                    if let Some(record) = self.shared.read_record(&t, key)? {
                        let (k, v) = index_entry(t.def.key_format(), ix, s, key, &record)?;
                        let target = t.entry_shard(ix, s, &k);
                        batches.entry(target).or_default().put(
                            &t.shards[target].indexes[i],
                            &k,
                            &v,
                        )?;
                        rows += 1;
                    }
                }
                // As the indexer does: rows read here may have been written unsynced, and an
                // entry in another store must not outlive its row in a crash (a rerun backfill
                // would not remove it).
                if batches.keys().any(|&target| target != s) {
                    t.shards[s].store.store.sync_wal()?;
                }
                for (target, wb) in batches {
                    t.shards[target]
                        .store
                        .store
                        .write(wb, WriteOptions::default())?;
                }
            }
        }
        // The entries must be durable before the catalog says the index is complete.
        for shard in &start.shards {
            shard.store.store.sync_wal()?;
        }
        if let Err(error) = self.check_backfilled_unique(table, index) {
            self.drop_index_locked(table, index)?;
            return Err(error);
        }
        tracing::debug!(%table, %index, rows, "backfill done");
        self.set_index_state(table, index, IndexState::Ready)?;
        self.settle_index(table, index);
        Ok(())
    }

    /// For a unique index, once backfilled: with every row's stripe locked (no write runs),
    /// looks for two entries with one value. Writers checked against the entries there while
    /// the backfill ran; this finds what no one could check: duplicates among the rows that
    /// were there before, or written meanwhile against entries not yet backfilled.
    fn check_backfilled_unique(&self, table: &str, index: &str) -> Result<()> {
        let t = self.shared.handle(table)?;
        let (i, ix) = t.index(index)?;
        if !ix.unique {
            return Ok(());
        }
        let _all = self.shared.stripes.lock_all();
        let mut seen: std::collections::HashMap<Vec<u8>, Vec<u8>> =
            std::collections::HashMap::new();
        for shard in &t.shards {
            for kv in shard
                .store
                .store
                .iter(&shard.indexes[i], ReadOptions::default())?
            {
                let (k, _) = kv?;
                let mut used = 0;
                let mut values = Vec::with_capacity(ix.fields.len());
                for _ in &ix.fields {
                    let (v, n) = decode_value(&k[used..])
                        .map_err(|e| key_corrupt(shard.indexes[i].name(), &k, e))?;
                    values.push(v);
                    used += n;
                }
                if values.iter().any(Value::is_null) {
                    continue;
                }
                let (value, pk) = k.split_at(used);
                if let Some(other) = seen.insert(value.to_vec(), pk.to_vec())
                    && other != pk
                {
                    return Err(Error::UniqueViolation {
                        table: table.into(),
                        index: index.into(),
                        value: values.into(),
                        key: crate::table::write::encoded_key_values(&t.def, pk).into(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Compacts a freshly backfilled index into one sorted run where its entries went to
    /// tables in more than one: a backfill writes in row order, so each flush of its entries
    /// overlaps the others in level 0, and every read of the index would seek each of them
    /// until writes triggered a compaction (a read-mostly table may never write enough). The
    /// index is ready and correct either way: a failure is logged, not returned.
    fn settle_index(&self, table: &str, index: &str) {
        let Ok(t) = self.shared.handle(table) else {
            return;
        };
        let Ok((i, _)) = t.index(index) else { return };
        for shard in &t.shards {
            let store = &shard.store.store;
            let cf = &shard.indexes[i];
            // The memtables count as one run (the compaction flushes them first); entries
            // that are all still there need nothing.
            let runs = store.stats(cf).map_or(0, |stats| {
                let deeper = stats.levels.iter().skip(1).filter(|l| l.tables > 0).count();
                let memtables = usize::from(stats.memtable_bytes > 0);
                stats.levels.first().map_or(0, |l0| l0.tables) + deeper + memtables
            });
            if runs > 1
                && let Err(error) = store.compact_range(cf, ..)
            {
                tracing::warn!(%table, %index, %error, "compacting a backfilled index failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use strata_planner::{Projection, Value};

    use crate::lsm::WriteOptions;
    use crate::table::codec::record::Record;
    use crate::table::commit::stripes::LOCK_ALL;
    use crate::table::db::Db;
    use crate::table::db::options::Options;
    use crate::table::write::{TableBatch, plan};

    const DDL_DONE: &str = "the DDL returned";

    fn row(id: i64, v: i64) -> Record {
        let mut r = Record::new();
        r.set("id", Value::Int(id));
        r.set("v", Value::Int(v));
        r
    }

    /// A writer that read the table's definition before the index was published may commit
    /// a new row after the backfill's snapshot: the backfill must wait for it, or neither
    /// indexes the row. The writer is held between the two moments (its stripe taken, the
    /// old definition read) until the DDL has begun waiting for every stripe (the stripes
    /// tell the test), then commits.
    #[test]
    fn a_writer_that_read_the_definition_before_the_index_is_waited_for() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        db.create_table("t", ["id"], crate::TableOptions::default())
            .expect("table");
        for id in 0..100 {
            db.insert("t", row(id, id % 7)).expect("insert");
        }
        let stale = db.shared.handle("t").expect("table");
        let mut batch = TableBatch::new();
        batch.insert(row(1_000, 3));
        let planned = plan(&db.shared, &stale, batch).expect("plan");
        let guards = db
            .shared
            .stripes
            .lock(planned.iter().map(|p| p.key.as_slice()));
        let (events, observed) = mpsc::channel();
        *db.shared.stripes.on_lock_all.lock().expect("observer") = Some(events.clone());
        let db = &db;
        std::thread::scope(|s| {
            let creating = s.spawn(move || {
                let created = db.create_index("t", "by_v", ["v"], Projection::KeysOnly);
                let _ = events.send(DDL_DONE);
                created.expect("create index")
            });
            assert_eq!(
                observed.recv().expect("an event"),
                LOCK_ALL,
                "the index was published without waiting for the writer"
            );
            db.write_locked(&stale, planned, WriteOptions::default())
                .expect("the stale writer commits");
            drop(guards);
            creating.join().expect("creating thread");
        });
        let report = db.verify("t").expect("verify");
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.indexes[0].entries, 101);
    }
}
