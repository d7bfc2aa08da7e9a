//! The indexer thread, `wait_for_indexes`, the lag metric, and the pending changes a strong
//! read folds in. The protocol is in [`crate::table::commit::outbox`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Corruption, Error, OutboxCorruption, Result};
use crate::lsm::{MAX_BATCH_BYTES, ReadOptions, Snapshot, WriteBatch, WriteOptions};
use crate::table::catalog::IndexDef;
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::format::OUTBOX_CF;
use crate::table::commit::outbox::{OutboxEntry, Work, now_micros, outbox_key, outbox_seq};
use crate::table::db::{Db, Shared, Table};

/// Most bytes of outbox entries one indexer step applies: the step's batches stay well under
/// the store's batch limit, which every single entry already fits (it was written in one).
/// TUNING: large enough that a step's synced write to another shard is amortised over
/// thousands of entries.
const APPLY_BYTES: usize = MAX_BATCH_BYTES / 4;

/// With fewer entries than this pending, the indexer gathers more before a step.
/// TUNING: a step applying entries to another shard syncs two logs; a few hundred entries
/// per step make that a small share of the work.
const GATHER_ENTRIES: u64 = 256;

/// How long the indexer gathers: the lag a lone write sees, at most (plus the step).
/// TUNING: a sync holds its store's writers for its duration (about 170 µs here); at 1 ms
/// between small steps, inserts with a global index measured 2.5× those with a local sync
/// one, at 5 ms 1.35× (`benches/benches/shards.rs`).
const GATHER_DELAY: Duration = Duration::from_millis(5);

/// How far the indexes are behind their tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexLag {
    /// Outbox entries written and not yet applied, over all shards.
    pub pending_entries: u64,
    /// Age of the oldest of them.
    pub oldest_pending: Option<Duration>,
    /// Entries applied since the database was opened.
    pub applied_entries: u64,
    /// Writes that waited because `Options::max_pending_index_entries` were pending.
    pub throttled_writes: u64,
    /// Time those writes waited, in total.
    pub throttled_time: Duration,
}

/// Pending changes to one index, by the shard holding the entries: key → value to put, or
/// `None` to delete.
pub(crate) type Overlay = Vec<BTreeMap<Vec<u8>, Option<Vec<u8>>>>;

/// The outbox of a shard store is wrong at `key`.
fn outbox_corrupt(key: &[u8], what: OutboxCorruption) -> Error {
    Error::corrupt(OUTBOX_CF, key, Corruption::Outbox(what))
}

impl Shared {
    /// The indexer thread: applies work until the database stops, or fails and says so.
    /// With few entries pending it waits [`GATHER_DELAY`] first, so a stream of small writes
    /// costs its two log syncs per step, not per write.
    pub(crate) fn run_indexer(&self) {
        while let Some(mut work) = self.tracker.work() {
            if self.tracker.counts().pending < GATHER_ENTRIES {
                std::thread::sleep(GATHER_DELAY);
                work = self.tracker.ready_work();
            }
            for w in work {
                if let Err(error) = self.apply_outbox(w) {
                    tracing::error!(%error, shard = w.shard, "the indexer failed");
                    self.tracker.fail(error);
                    return;
                }
            }
        }
    }

    /// Applies one step of shard `w.shard`'s outbox, from its floor towards its low water.
    fn apply_outbox(&self, w: Work) -> Result<()> {
        let stores = self.stores();
        let source = stores
            .get(w.shard)
            .ok_or_else(|| outbox_corrupt(&[], OutboxCorruption::ShardNotOpen(w.shard as u64)))?;
        // The snapshot is taken after the low water was read: every entry below it is visible.
        let snapshot = source.store.snapshot();
        let lower = outbox_key(w.floor);
        let upper = outbox_key(w.low);
        let mut entries = Vec::new();
        let mut keys = Vec::new();
        let mut bytes = 0;
        let mut floor = w.low;
        let read = ReadOptions::default()
            .snapshot(&snapshot)
            .lower_bound(&lower)
            .upper_bound(&upper);
        for kv in source.store.iter(&source.outbox, read)? {
            let (k, v) = kv?;
            if bytes > 0 && bytes + v.len() > APPLY_BYTES {
                // Stop before it; this step covers everything below it.
                let len = k.len();
                floor = outbox_seq(&k)
                    .ok_or_else(|| outbox_corrupt(&k, OutboxCorruption::KeyLength { len }))?;
                break;
            }
            bytes += v.len();
            entries.push(OutboxEntry::decode(&v).map_err(|e| record_corrupt(OUTBOX_CF, &k, e))?);
            keys.push(k);
        }

        // Resolve tables under the gate, so none of their families is dropped meanwhile.
        let _gate = self.gate.read().unwrap_or_else(|p| p.into_inner());
        let mut tables: HashMap<u64, Option<Arc<Table>>> = HashMap::new();
        let mut batches: BTreeMap<usize, WriteBatch> = BTreeMap::new();
        for entry in &entries {
            let table = tables
                .entry(entry.table_id)
                .or_insert_with(|| self.handle_by_id(entry.table_id));
            let Some(t) = table else {
                continue; // dropped: its entries have nowhere to go
            };
            for op in &entry.ops {
                let Some(i) = t.def.indexes.iter().position(|ix| ix.id == op.index_id) else {
                    continue; // the index was dropped
                };
                let shard = t.shards.get(op.shard as usize).ok_or_else(|| {
                    let (shard, shards) = (u64::from(op.shard), t.shards.len());
                    Error::corrupt(
                        OUTBOX_CF,
                        &[],
                        Corruption::ShardOutOfRange { shard, shards },
                    )
                })?;
                let wb = batches.entry(op.shard as usize).or_default();
                match &op.value {
                    Some(v) => wb.put(&shard.indexes[i], &op.key, v)?,
                    None => wb.delete(&shard.indexes[i], &op.key)?,
                }
            }
        }
        // Other shards first, synced: their entries must be durable before the outbox
        // entries that would redo them are deleted. And before them, the source's log: an
        // index entry in another store must never outlive, in a crash, the row change it
        // comes from (which may have been written unsynced).
        let mut own = batches.remove(&w.shard).unwrap_or_default();
        if !batches.is_empty() {
            source.store.sync_wal()?;
        }
        for (target, wb) in batches {
            let store = stores.get(target).ok_or_else(|| {
                outbox_corrupt(&[], OutboxCorruption::ShardNotOpen(target as u64))
            })?;
            store.store.write(wb, WriteOptions::synced())?;
        }
        for k in &keys {
            own.delete(&source.outbox, k)?;
        }
        if !own.is_empty() {
            source.store.write(own, WriteOptions::default())?;
        }
        self.tracker.applied(w.shard, floor, entries.len() as u64);
        Ok(())
    }

    /// The changes to index `ix` of `t` still in the outboxes of `t`'s shards, as of
    /// `snapshots` (one per shard), reading each outbox from `floors` (read before the
    /// snapshots were taken, so no entry still visible to them is below its floor).
    pub(crate) fn pending_changes(
        &self,
        t: &Table,
        ix: &IndexDef,
        snapshots: &[Snapshot],
        floors: &[u64],
    ) -> Result<Overlay> {
        let mut overlay: Overlay = vec![BTreeMap::new(); t.shards.len()];
        for ((shard, snapshot), &floor) in t.shards.iter().zip(snapshots).zip(floors) {
            let store = &shard.store;
            let lower = outbox_key(floor);
            let read = ReadOptions::default()
                .snapshot(snapshot)
                .lower_bound(&lower);
            for kv in store.store.iter(&store.outbox, read)? {
                let (k, v) = kv?;
                let entry =
                    OutboxEntry::decode(&v).map_err(|e| record_corrupt(OUTBOX_CF, &k, e))?;
                if entry.table_id != t.def.id {
                    continue;
                }
                for op in entry.ops {
                    if op.index_id != ix.id {
                        continue;
                    }
                    let target = overlay.get_mut(op.shard as usize).ok_or_else(|| {
                        let (shard, shards) = (u64::from(op.shard), t.shards.len());
                        Error::corrupt(OUTBOX_CF, &k, Corruption::ShardOutOfRange { shard, shards })
                    })?;
                    target.insert(op.key, op.value);
                }
            }
        }
        Ok(overlay)
    }
}

impl Db {
    /// Waits until every outbox entry written before this call is applied: every async and
    /// global index then reflects every write acknowledged before it. Fails if the indexer
    /// failed (an I/O error; the entries stay in the outbox for the next open) or is paused
    /// with entries left to apply.
    pub fn wait_for_indexes(&self) -> Result<()> {
        let targets = self.shared.tracker.targets();
        self.shared.tracker.wait_applied(&targets)
    }

    /// Pauses the indexer after the step it is in, as RocksDB's `PauseBackgroundWork`: outbox
    /// entries accumulate (and writers wait once `Options::max_pending_index_entries` are
    /// pending) until [`Db::resume_indexer`]. For maintenance windows and tests.
    pub fn pause_indexer(&self) {
        self.shared.tracker.set_paused(true);
    }

    /// Resumes a paused indexer.
    pub fn resume_indexer(&self) {
        self.shared.tracker.set_paused(false);
    }

    /// How far the async indexes are behind: pending entries, the age of the oldest, and the
    /// writes back-pressure has slowed.
    pub fn index_lag(&self) -> Result<IndexLag> {
        let counts = self.shared.tracker.counts();
        let mut oldest: Option<u64> = None;
        for s in self.shared.stores() {
            let lower = outbox_key(self.shared.tracker.floor(s.number));
            let read = ReadOptions::default().lower_bound(&lower);
            if let Some(kv) = s.store.iter(&s.outbox, read)?.next() {
                let (k, v) = kv?;
                let entry =
                    OutboxEntry::decode(&v).map_err(|e| record_corrupt(OUTBOX_CF, &k, e))?;
                oldest = Some(oldest.map_or(entry.written_micros, |o| o.min(entry.written_micros)));
            }
        }
        if let Some(error) = self.shared.tracker.failure() {
            return Err(error);
        }
        Ok(IndexLag {
            pending_entries: counts.pending,
            oldest_pending: oldest.map(|w| Duration::from_micros(now_micros().saturating_sub(w))),
            applied_entries: counts.applied,
            throttled_writes: counts.throttled_writes,
            throttled_time: counts.throttled,
        })
    }
}
