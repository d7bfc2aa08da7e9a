//! Writes, with index maintenance in the row's batch or through the outbox.
//!
//! For a batch of row mutations on one table:
//! 1. Check every record (key fields present and of a key type, names, sizes) and encode its
//!    primary key. Nothing is locked or written until all pass.
//! 2. Lock the stripes of every key, in stripe order (so two batches cannot deadlock), then
//!    read the table's definition: a writer that locks after an index became `WriteOnly` is
//!    guaranteed to see it, which is what makes the backfill correct (`ddl/backfill.rs`).
//! 3. Read each key's current record, apply the mutations in order to an overlay, and diff
//!    each index's entry for the first and the final record of each key.
//! 4. Per shard store, gather the fact changes, the sync indexes' diffs and (when an async
//!    index changed) one outbox entry with the async indexes' diffs into one `WriteBatch`
//!    (`commit/outbox.rs`), and commit every store's part under one range of seqnos from the
//!    database's sequencer, published once every part is in (`Db::commit_parts`): readers
//!    see all of the batch or none of it, whatever the shards.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use strata_planner::Value;

use crate::error::{Error, Result};
use crate::lsm::{ColumnFamily, WriteBatch, WriteOptions};
use crate::table::catalog::entry::index_entry;
use crate::table::codec::record::Record;
use crate::table::commit::change_log::{ChangeBody, change_key};
use crate::table::commit::outbox::{OutboxEntry, OutboxOp, now_micros, outbox_key};
use crate::table::commit::resolver::Validation;
use crate::table::db::{Db, ShardStore, Table};
pub(crate) mod batch;
pub(crate) mod load;
pub(crate) mod unique;

pub(crate) use batch::{KnownNames, checked, checked_known, plan};
pub use batch::{Mutation, TableBatch};
pub(crate) use unique::{KeyTaken, encoded_key_values, planned_unique_values};

/// One mutation of a batch, checked and encoded before any lock is taken.
pub(crate) struct Planned {
    /// The encoded primary key.
    pub(crate) key: Vec<u8>,
    /// The new row (`None`: a delete).
    pub(crate) record: Option<Record>,
    /// The new row encoded (empty for a delete).
    pub(crate) encoded: Vec<u8>,
    /// An insert: the row must not exist.
    pub(crate) insert: bool,
}

/// What a batch does to one key: the row before it and after all its mutations of the key.
pub(crate) struct KeyChange {
    key: Vec<u8>,
    before: Option<Record>,
    /// `before` as the fact family stored it, when it was read from there (a change feed
    /// logs these bytes).
    stored_before: Option<bytes::Bytes>,
    after: Option<Record>,
    /// `after` encoded (what the fact family stores); empty when `after` is `None`.
    encoded: Vec<u8>,
}

impl KeyChange {
    /// Whether the key had or has a row (a delete of a missing row changes nothing).
    pub(crate) fn changes_anything(&self) -> bool {
        self.before.is_some() || self.after.is_some()
    }
}

/// One shard store's part of a commit: its fact and sync index changes, the outbox entries
/// that carry its async index changes (one per table), and, when a transaction may need them,
/// the keys it writes.
pub(crate) struct StorePart {
    pub(crate) store: Arc<ShardStore>,
    pub(crate) wb: WriteBatch,
    pub(crate) outboxes: Vec<OutboxEntry>,
    /// The row changes of tables a feed covers, for the store's change log entry
    /// (`commit/change_log.rs`), put once the commit's range is known.
    pub(crate) changes: ChangeBody,
    /// `(family id, key)` of every fact and sync index key written, when collected.
    pub(crate) keys: Option<Vec<(u32, Vec<u8>)>>,
}

/// A commit's parts, by shard store number.
pub(crate) type Parts = BTreeMap<usize, StorePart>;

impl Db {
    /// Inserts `record` into `table`; a row with its key must not exist.
    pub fn insert(&self, table: &str, record: Record) -> Result<()> {
        let mut batch = TableBatch::new();
        batch.insert(record);
        self.write(table, batch, WriteOptions::default())
    }

    /// Inserts or replaces `record`.
    pub fn upsert(&self, table: &str, record: Record) -> Result<()> {
        let mut batch = TableBatch::new();
        batch.upsert(record);
        self.write(table, batch, WriteOptions::default())
    }

    /// Deletes the row whose primary key is `key`; deleting a missing row does nothing.
    pub fn delete(&self, table: &str, key: &[Value]) -> Result<()> {
        let mut batch = TableBatch::new();
        batch.delete(key);
        self.write(table, batch, WriteOptions::default())
    }

    /// Applies `batch` to `table`. Every check (types, keys, sizes, an insert of an existing
    /// key) runs before anything is written, so a refused batch writes nothing. On a table of
    /// one shard every row and index change then commits in one atomic write, or none does.
    /// A batch whose rows fall in several shards commits one atomic write per shard, in shard
    /// order: an I/O error in one shard's commit leaves the shards before it committed (the
    /// module docs; transactions across shards are a separate feature). A synced write makes
    /// every earlier write to the database durable, in every shard store.
    pub fn write(&self, table: &str, batch: TableBatch, options: WriteOptions) -> Result<()> {
        let first = self.shared.handle(table)?;
        if batch.is_empty() {
            if options.sync {
                // Every earlier write to any shard store becomes durable (see the end).
                for store in self.shared.stores() {
                    store.store.sync_wal()?;
                }
            }
            return Ok(());
        }
        // 1. Check and encode, before any lock.
        let planned = plan(&self.shared, &first, batch)?;

        // Back-pressure: wait, holding nothing, while the indexer is too far behind.
        if first.has_async() {
            self.shared
                .tracker
                .throttle(self.shared.options.max_pending_index_entries)?;
        }

        // 2. Lock (the rows' keys and their new unique values), then read the definition.
        let values = planned_unique_values(&first.def, &planned);
        let _guards = self.shared.stripes.lock(
            planned
                .iter()
                .map(|p| p.key.as_slice())
                .chain(values.iter().map(Vec::as_slice)),
        );
        let t = self.shared.handle(table)?;
        if t.def.id != first.def.id {
            return Err(Error::Conflict(format!(
                "table {table:?} was dropped and recreated during the write"
            )));
        }
        self.write_locked(&t, planned, options)
    }

    /// Steps 3 and 4 of [`Db::write`], with the definition `t` read under the stripes.
    /// REQUIRES: the stripes of every planned key and of its new unique values are locked.
    pub(crate) fn write_locked(
        &self,
        t: &Table,
        planned: Vec<Planned>,
        options: WriteOptions,
    ) -> Result<()> {
        // 3. Apply to an overlay of the current records; check unique indexes.
        let changes = self.overlay(t, planned)?;
        self.check_unique(t, &changes)?;

        // 4. Per shard store: one batch for facts, sync index diffs and the outbox entry,
        // all committed under one range of seqnos.
        let mut parts = Parts::new();
        let keys = self.shared.resolver.has_live();
        let covered = self.shared.feeds.covers(t.def.id);
        shard_parts(t, &changes, &mut parts, keys, covered)?;
        let wrote = self.commit_parts(parts, options, None)?;
        let changed = changes.iter().filter(|c| c.changes_anything()).count();
        self.shared.note_changes(t, changed as u64);
        if options.sync {
            self.sync_after(&wrote)?;
        }
        Ok(())
    }
}

impl Db {
    /// The batch's changes per key, in first-mention order: each key's row as stored, then
    /// every mutation of it applied in turn. An insert of a key that has a row (stored, or
    /// put by an earlier mutation of the batch) is a conflict.
    /// REQUIRES: the stripes of every planned key are locked.
    pub(crate) fn overlay(&self, t: &Table, planned: Vec<Planned>) -> Result<Vec<KeyChange>> {
        self.overlay_knowing(t, planned, &mut |_| None)?
            .map_err(|KeyTaken(key)| {
                let shown: Vec<String> = key.iter().map(|v| v.sql_literal().to_string()).collect();
                Error::Conflict(format!(
                    "table {:?} has a row with key ({})",
                    t.def.name,
                    shown.join(", ")
                ))
            })
    }

    /// [`Db::overlay`], taking a key's row from `known`; an insert of a key that has a row is
    /// [`KeyTaken`] (a plain write's conflict, a transaction's retryable one) when it has it (a transaction's read at
    /// its snapshot, which its validation proves current) instead of reading it.
    pub(crate) fn overlay_knowing(
        &self,
        t: &Table,
        planned: Vec<Planned>,
        known: &mut dyn FnMut(&[u8]) -> Option<Option<Record>>,
    ) -> Result<std::result::Result<Vec<KeyChange>, KeyTaken>> {
        let mut changes: Vec<KeyChange> = Vec::new();
        let mut slot: HashMap<Vec<u8>, usize> = HashMap::new();
        for p in planned {
            let i = match slot.get(&p.key) {
                Some(&i) => i,
                None => {
                    let (before, stored_before) = match known(&p.key) {
                        Some(row) => (row, None),
                        None => self.shared.read_record_stored(t, &p.key)?,
                    };
                    slot.insert(p.key.clone(), changes.len());
                    changes.push(KeyChange {
                        key: p.key,
                        after: before.clone(),
                        before,
                        stored_before,
                        encoded: Vec::new(),
                    });
                    changes.len() - 1
                }
            };
            let change = &mut changes[i];
            if p.insert && change.after.is_some() {
                return Ok(Err(KeyTaken(key_values(t, p.record.as_ref()))));
            }
            change.after = p.record;
            change.encoded = p.encoded;
        }
        Ok(Ok(changes))
    }

    /// After a synced commit to the stores `wrote` (each synced with its part): syncs every
    /// store, so every earlier write is durable, as with one log. The commit waited until
    /// every older range was published, so each is in its store's log by now: a recovery
    /// never has to cut below an acknowledged synced commit (`txn/recovery.rs`). A store with nothing
    /// unsynced costs nothing, the stores written usually have nothing new. Found by the
    /// `engine_model` fuzz target: an unsynced row in one shard was lost to a power cut after
    /// a synced write to another.
    pub(crate) fn sync_after(&self, wrote: &[usize]) -> Result<()> {
        let stores = self.shared.stores();
        if stores.len() == 1 && wrote.contains(&stores[0].number) {
            return Ok(());
        }
        for store in stores {
            store.store.sync_wal()?;
        }
        Ok(())
    }

    /// Commits `parts` as one: numbers each outbox entry under the keys' stripes (so a row's
    /// next change gets a higher number), allocates one range of seqnos for every part under
    /// the resolver's lock (after validating `reads`, for a transaction), writes each store's
    /// part under its share of the range, and publishes the range once all are in, so a
    /// reader sees every part or none. Returns the shard stores written.
    ///
    /// A part that fails after another was written leaves the range unpublishable: the
    /// sequencer fails, and the database refuses writes until it is reopened (the other
    /// parts are then in the logs; see `docs/transactions.md` for what recovery does).
    pub(crate) fn commit_parts(
        &self,
        mut parts: Parts,
        options: WriteOptions,
        reads: Option<&Validation<'_>>,
    ) -> Result<Vec<usize>> {
        parts.retain(|_, p| !p.wb.is_empty() || !p.outboxes.is_empty() || !p.changes.is_empty());
        // Outbox entries first: each is a put in its part's batch.
        let mut begun: Vec<(usize, u64)> = Vec::new();
        let numbered = (|| {
            for (&s, part) in parts.iter_mut() {
                for outbox in &mut part.outboxes {
                    outbox.written_micros = now_micros();
                    let seq = self.shared.tracker.begin(s)?;
                    begun.push((s, seq));
                    part.wb
                        .put(&part.store.outbox, &outbox_key(seq), &outbox.encode())?;
                }
            }
            Ok(())
        })();
        let stores: Vec<usize> = parts.keys().copied().collect();
        let result = numbered.and_then(|()| self.write_parts(parts, options, reads));
        for &(s, seq) in &begun {
            self.shared.tracker.end(s, seq, result.is_ok());
        }
        result?;
        Ok(stores)
    }

    /// The resolver and the writes of [`Db::commit_parts`].
    fn write_parts(
        &self,
        parts: Parts,
        options: WriteOptions,
        reads: Option<&Validation<'_>>,
    ) -> Result<()> {
        // Each part with feed changes adds its change log entry once the range is known.
        let total: u64 = parts
            .values()
            .map(|p| p.wb.len() as u64 + u64::from(!p.changes.is_empty()))
            .sum();
        if total == 0 {
            // Nothing to write (a delete of a row that is not there): a transaction still
            // validates, or a delete it based on a stale read would pass (found by the
            // `engine_model` fuzz target).
            return match reads {
                Some(v) => self
                    .shared
                    .resolver
                    .validate(v, &|store, cf| self.family_name(store, cf)),
                None => Ok(()),
            };
        }
        // Back-pressure before the range exists: once allocated, every part must go in
        // without waiting, or the range would hold back every reader.
        for part in parts.values() {
            part.store.store.throttle(&part.wb);
        }
        let mut parts = parts;
        let first = self.shared.resolver.admit(
            &self.shared.sequencer,
            parts.iter_mut().map(|(&s, part)| (s, &mut part.keys)),
            total,
            reads,
            &|store, cf| self.family_name(store, cf),
        )?;
        let last = first + total - 1;
        let mut logged = 0;
        for part in parts.values_mut().filter(|p| !p.changes.is_empty()) {
            let value = part.changes.finish(last);
            logged += value.len() as u64;
            if let Err(error) = part.wb.put(&part.store.changes, &change_key(first), &value) {
                self.shared.sequencer.publish_range(first, last);
                return Err(error.into());
            }
        }
        if parts.len() > 1 {
            // Each part names the others and the commit (its range's first seqno), so
            // recovery can tell whether all of them are in (`docs/transactions.md` §2).
            let participants: Vec<u32> = parts.keys().map(|&s| s as u32).collect();
            for part in parts.values_mut() {
                if let Err(error) = part.wb.set_transaction(first, &participants) {
                    self.shared.sequencer.publish_range(first, last);
                    return Err(error.into());
                }
            }
        }
        let mut next = first;
        for (written, part) in parts.into_values().enumerate() {
            let len = part.wb.len() as u64;
            if let Err(error) = part.store.store.write_assigned(part.wb, options, next) {
                if written > 0 {
                    // Some parts are in and this one is not: publishing would show half.
                    self.shared.sequencer.fail();
                } else {
                    // Nothing of the range is in: publishing it shows nothing.
                    self.shared.sequencer.publish_range(first, last);
                }
                return Err(error.into());
            }
            next += len;
        }
        self.shared.sequencer.publish_range(first, last);
        if !self.shared.sequencer.wait_visible(last) {
            return Err(Error::CommitIncomplete);
        }
        if logged > 0 {
            self.shared.feeds.written(first, logged);
        }
        Ok(())
    }
}

/// Adds each shard's fact puts and deletes, sync index diffs (in the store each entry lives
/// in: the row's, or for a global index the one its value hashes to) and outbox operations
/// for `changes` to `parts`, with the keys written when `keys` is set, and each row change
/// for the change log when a feed covers the table (`covered`).
pub(crate) fn shard_parts(
    t: &Table,
    changes: &[KeyChange],
    parts: &mut Parts,
    keys: bool,
    covered: bool,
) -> Result<()> {
    let mut ops: Vec<OutboxOp> = Vec::new();
    for c in changes.iter().filter(|c| c.changes_anything()) {
        let s = t.fact_shard(&c.key);
        let fact = &t.shards[s].fact;
        let part = store_part(parts, t, s, keys);
        match &c.after {
            Some(_) => part.wb.put(fact, &c.key, &c.encoded)?,
            None => part.wb.delete(fact, &c.key)?,
        }
        if let Some(keys) = &mut part.keys {
            keys.push((fact.id(), c.key.clone()));
        }
        let (before, after) = (c.before.as_ref(), c.after.as_ref());
        if covered {
            // The row as stored; one a transaction read (no bytes kept) in the
            // self-describing form, which the layouts decode as well.
            let encoded_before;
            let before_bytes = match (&c.stored_before, before) {
                (Some(bytes), _) => Some(&bytes[..]),
                (None, Some(r)) => {
                    encoded_before = r.encode();
                    Some(&encoded_before[..])
                }
                (None, None) => None,
            };
            let after_bytes = after.map(|_| &c.encoded[..]);
            part.changes.push(t.def.id, before_bytes, after_bytes);
        }
        ops.clear();
        diff_indexes(
            t,
            s,
            &c.key,
            (before, after),
            &mut |target, cf, op| {
                let part = store_part(parts, t, target, keys);
                match op {
                    SyncOp::Put(k, v) => part.wb.put(cf, k, v)?,
                    SyncOp::Delete(k) => part.wb.delete(cf, k)?,
                    SyncOp::Touch(_) => {}
                }
                if let Some(keys) = &mut part.keys {
                    let (SyncOp::Put(k, _) | SyncOp::Delete(k) | SyncOp::Touch(k)) = op;
                    keys.push((cf.id(), k.to_vec()));
                }
                Ok(())
            },
            &mut ops,
        )?;
        if ops.is_empty() {
            continue;
        }
        // The table's outbox entry in the row's part, started if not there yet.
        let part = store_part(parts, t, s, keys);
        match part.outboxes.iter_mut().find(|o| o.table_id == t.def.id) {
            Some(entry) => entry.ops.append(&mut ops),
            None => part.outboxes.push(OutboxEntry {
                table_id: t.def.id,
                written_micros: 0,
                ops: std::mem::take(&mut ops),
            }),
        }
    }
    Ok(())
}

/// Shard store `s`'s part of `parts`, started if not there yet.
fn store_part<'p>(parts: &'p mut Parts, t: &Table, s: usize, keys: bool) -> &'p mut StorePart {
    parts.entry(s).or_insert_with(|| StorePart {
        store: Arc::clone(&t.shards[s].store),
        wb: WriteBatch::new(),
        outboxes: Vec::new(),
        changes: ChangeBody::default(),
        keys: keys.then(Vec::new),
    })
}

/// One change to a sync index entry, for [`diff_indexes`]'s caller to put in the entry's
/// store's part.
pub(crate) enum SyncOp<'a> {
    Put(&'a [u8], &'a [u8]),
    Delete(&'a [u8]),
    /// Not written: the entry of a changed row that stays as it is (a transaction that read
    /// it through an index range must still conflict with the change).
    Touch(&'a [u8]),
}

pub(crate) fn display_key(t: &Table, record: Option<&Record>) -> String {
    let parts: Vec<String> = key_values(t, record)
        .iter()
        .map(|v| v.sql_literal().to_string())
        .collect();
    format!("({})", parts.join(", "))
}

/// `record`'s primary key values (none without a record).
pub(crate) fn key_values(t: &Table, record: Option<&Record>) -> Vec<Value> {
    let Some(r) = record else {
        return Vec::new();
    };
    t.def
        .primary_key
        .iter()
        .map(|f| r.value(f).clone())
        .collect()
}

/// Hands over what turns every index entry of `before` into that of `after` (a row of shard
/// `shard`): sync indexes' entries to `sync` (with the shard store each lives in), async ones'
/// to `outbox`.
pub(crate) fn diff_indexes(
    t: &Table,
    shard: usize,
    key: &[u8],
    (before, after): (Option<&Record>, Option<&Record>),
    sync: &mut dyn FnMut(usize, &ColumnFamily, SyncOp<'_>) -> Result<()>,
    outbox: &mut Vec<OutboxOp>,
) -> Result<()> {
    for (i, ix) in t.def.indexes.iter().enumerate() {
        let started = Instant::now();
        let old = before
            .map(|r| index_entry(t.def.key_format(), ix, shard, key, r))
            .transpose()?;
        let new = after
            .map(|r| index_entry(t.def.key_format(), ix, shard, key, r))
            .transpose()?;
        if old == new {
            if let Some((k, _)) = &old
                && !ix.is_async()
            {
                let target = t.entry_shard(ix, shard, k);
                sync(target, &t.shards[target].indexes[i], SyncOp::Touch(k))?;
            }
            continue;
        }
        let delete = old
            .filter(|(old_key, _)| new.as_ref().is_none_or(|(k, _)| k != old_key))
            .map(|(k, _)| k);
        let bytes = delete.as_ref().map_or(0, Vec::len)
            + new.as_ref().map_or(0, |(k, v)| k.len() + v.len());
        let entries = u64::from(delete.is_some()) + u64::from(new.is_some());
        t.usage
            .maintained(ix.id, entries, bytes as u64, started.elapsed());
        if ix.is_async() {
            let ops = delete
                .map(|k| (k, None))
                .into_iter()
                .chain(new.map(|(k, v)| (k, Some(v))));
            for (k, v) in ops {
                outbox.push(OutboxOp {
                    index_id: ix.id,
                    shard: t.entry_shard(ix, shard, &k) as u32,
                    key: k,
                    value: v,
                });
            }
            continue;
        }
        // Sync: in the row's store (local), or the one the value hashes to (global).
        if let Some(k) = &delete {
            let target = t.entry_shard(ix, shard, k);
            sync(target, &t.shards[target].indexes[i], SyncOp::Delete(k))?;
        }
        if let Some((k, v)) = &new {
            let target = t.entry_shard(ix, shard, k);
            sync(target, &t.shards[target].indexes[i], SyncOp::Put(k, v))?;
        }
    }
    Ok(())
}

impl Db {
    /// Column family `cf` of shard store `store`, named for an error a caller reads (the
    /// numbers when the store or family is gone).
    pub(crate) fn family_name(&self, store: u32, cf: u32) -> String {
        let named = self.shared.stores().get(store as usize).and_then(|s| {
            s.store
                .column_families()
                .into_iter()
                .find(|name| s.store.cf(name).is_ok_and(|f| f.id() == cf))
        });
        match named {
            Some(name) if store == 0 => name,
            Some(name) => format!("{name} (shard store {store})"),
            None => format!("family {cf} of shard store {store}"),
        }
    }
}
