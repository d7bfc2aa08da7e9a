//! The outbox: how async and global indexes are kept up to date (`docs/formats/outbox.md`).
//!
//! 1. A write to a table with async indexes commits, in the fact shard's batch, the rows and
//!    one outbox entry: the index entries to put and delete, each naming its index (by id)
//!    and the shard that holds it. The entry's key is a sequence number the [`Tracker`] hands
//!    out while the writer holds its keys' stripes, so two changes of one row get increasing
//!    numbers and commit in that order.
//! 2. The indexer (one background thread per database) applies each shard's entries in order:
//!    only the prefix below the shard's *low water* — the smallest number still being written —
//!    so a number is never skipped. When an entry's index lives in another store, it first
//!    syncs the fact shard's log (a row change written unsynced must not be lost in a crash
//!    while its index entries survive in another store), then writes the index entries there,
//!    synced (so they are durable before the outbox entry is gone). Last it deletes the outbox
//!    entries in the fact shard, in the same batch as the index entries that live there.
//! 3. Applying an entry again — after a crash between the index write and the outbox delete —
//!    puts and deletes the same keys in the same order, so the index ends the same. Index
//!    keys end with the primary key, and a primary key lives in one fact shard, so entries
//!    of different fact shards never touch the same index key and need no order between them.
//!
//! The [`Tracker`] is the in-memory half: numbers in flight, entries pending, the wake-ups
//! between writers, the indexer, `wait_for_indexes` and back-pressure. It uses the loom-swappable
//! primitives, and `tests/loom.rs` models the hand-off.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::lsm::sync::core::{Condvar, Mutex, MutexGuard, lock};
use crate::table::codec::format::{OUTBOX_DELETE, OUTBOX_PUT, OUTBOX_VERSION};
use crate::table::codec::record::RecordError;
use crate::table::codec::record_codec::{Reader, put_varint};

/// One change to one index entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxOp {
    /// The index (its catalog id).
    pub index_id: u64,
    /// The shard holding the entry.
    pub shard: u32,
    /// The entry's key.
    pub key: Vec<u8>,
    /// The entry's value to put; `None` deletes it.
    pub value: Option<Vec<u8>>,
}

/// What one write did to a table's async indexes in one fact shard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutboxEntry {
    /// The table (its catalog id).
    pub table_id: u64,
    /// When it was written, in microseconds since the Unix epoch (for the lag metric).
    pub written_micros: u64,
    /// The changes, to apply in order.
    pub ops: Vec<OutboxOp>,
}

impl OutboxEntry {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![OUTBOX_VERSION];
        put_varint(&mut out, self.table_id);
        put_varint(&mut out, self.written_micros);
        put_varint(&mut out, self.ops.len() as u64);
        for op in &self.ops {
            out.push(if op.value.is_some() {
                OUTBOX_PUT
            } else {
                OUTBOX_DELETE
            });
            put_varint(&mut out, op.index_id);
            put_varint(&mut out, u64::from(op.shard));
            put_varint(&mut out, op.key.len() as u64);
            out.extend_from_slice(&op.key);
            if let Some(v) = &op.value {
                put_varint(&mut out, v.len() as u64);
                out.extend_from_slice(v);
            }
        }
        out
    }

    /// Parses a stored entry; any damage is an error, never a panic.
    pub fn decode(bytes: &[u8]) -> std::result::Result<OutboxEntry, RecordError> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.byte()?;
        if version != OUTBOX_VERSION {
            return Err(RecordError::Version(version));
        }
        let table_id = r.varint()?;
        let written_micros = r.varint()?;
        let count = r.varint()?;
        // Every op takes at least 4 bytes, so a count the bytes cannot hold is damage, and
        // the vector below is never larger than the input.
        if count > (bytes.len() / 4) as u64 {
            return Err(RecordError::TooLong(count));
        }
        let mut ops = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let kind = r.byte()?;
            let index_id = r.varint()?;
            let shard = r.varint()?;
            let shard = u32::try_from(shard).map_err(|_| RecordError::TooLong(shard))?;
            let bytes_field = |r: &mut Reader<'_>| -> std::result::Result<Vec<u8>, _> {
                let len = r.varint()?;
                let len = usize::try_from(len).map_err(|_| RecordError::TooLong(len))?;
                r.take(len).map(<[u8]>::to_vec)
            };
            let key = bytes_field(&mut r)?;
            let value = match kind {
                OUTBOX_PUT => Some(bytes_field(&mut r)?),
                OUTBOX_DELETE => None,
                other => return Err(RecordError::UnknownTag(other)),
            };
            ops.push(OutboxOp {
                index_id,
                shard,
                key,
                value,
            });
        }
        if r.at != bytes.len() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(OutboxEntry {
            table_id,
            written_micros,
            ops,
        })
    }
}

/// An outbox entry's key: its sequence number, big-endian, so entries sort in number order.
pub fn outbox_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

/// The sequence number of an outbox key.
pub fn outbox_seq(key: &[u8]) -> Option<u64> {
    key.try_into().ok().map(u64::from_be_bytes)
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// One shard store's outbox, in memory.
#[derive(Debug, Default)]
struct Queue {
    /// The number the next entry gets.
    next_seq: u64,
    /// Numbers handed out whose writes have not returned.
    in_flight: BTreeSet<u64>,
    /// Every entry below this is applied (or was never written).
    floor: u64,
    /// Entries written and not yet applied.
    pending: u64,
}

impl Queue {
    /// The smallest number that may still be written: every entry below it that exists is
    /// visible to a snapshot taken after this is read.
    fn low_water(&self) -> u64 {
        self.in_flight.first().copied().unwrap_or(self.next_seq)
    }
}

#[derive(Debug, Default)]
struct State {
    queues: Vec<Queue>,
    stop: bool,
    paused: bool,
    failed: Option<Error>,
    applied: u64,
    throttled_writes: u64,
    throttled: Duration,
}

/// Outbox numbers, pending counts and the wake-ups between writers, the indexer and waiters.
#[derive(Debug, Default)]
pub struct Tracker {
    state: Mutex<State>,
    /// Signalled on every change: an entry written, entries applied, a stop, a failure.
    changed: Condvar,
}

/// Work for the indexer: shard `shard`'s entries from `floor` up to (not including) `low`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// The shard store.
    pub shard: usize,
    /// The first number not yet applied.
    pub floor: u64,
    /// The low water: entries below it are all written (or abandoned).
    pub low: u64,
}

/// The tracker's counters, for [`crate::Db::index_lag`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackerCounts {
    /// Entries written and not yet applied, over all shards.
    pub pending: u64,
    /// Entries applied since open.
    pub applied: u64,
    /// Writes that waited for the indexer because too many entries were pending.
    pub throttled_writes: u64,
    /// Time those writes waited, in total.
    pub throttled: Duration,
}

impl Tracker {
    /// A tracker with no shards.
    pub fn new() -> Self {
        Tracker::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers shard store `shard`, found at open with `pending` entries from `floor` and
    /// the next number `next_seq`.
    pub fn add_shard(&self, shard: usize, floor: u64, next_seq: u64, pending: u64) {
        let mut state = self.lock();
        if state.queues.len() <= shard {
            state.queues.resize_with(shard + 1, Queue::default);
        }
        state.queues[shard] = Queue {
            next_seq,
            in_flight: BTreeSet::new(),
            floor,
            pending,
        };
        drop(state);
        self.changed.notify_all();
    }

    /// A number for an entry about to be written to shard `shard`; [`Tracker::end`] must follow.
    pub fn begin(&self, shard: usize) -> Result<u64> {
        let mut state = self.lock();
        // Shards are registered when their store opens, before any table uses them.
        let queue = state
            .queues
            .get_mut(shard)
            .ok_or_else(|| Error::NotFound(format!("the outbox of shard {shard}")))?;
        let seq = queue.next_seq;
        queue.next_seq = seq.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument(format!("shard {shard}'s outbox numbers ran out"))
        })?;
        queue.in_flight.insert(seq);
        Ok(seq)
    }

    /// The write of entry `seq` returned; `written` says whether it committed.
    pub fn end(&self, shard: usize, seq: u64, written: bool) {
        let mut state = self.lock();
        if let Some(queue) = state.queues.get_mut(shard) {
            queue.in_flight.remove(&seq);
            if written {
                queue.pending += 1;
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The shards with entries to apply now.
    pub fn ready_work(&self) -> Vec<Work> {
        Self::ready(&self.lock())
    }

    fn ready(state: &State) -> Vec<Work> {
        state
            .queues
            .iter()
            .enumerate()
            .filter(|(_, q)| q.floor < q.low_water())
            .map(|(shard, q)| Work {
                shard,
                floor: q.floor,
                low: q.low_water(),
            })
            .collect()
    }

    /// Blocks until some shard has entries to apply (and the indexer is not paused), and
    /// returns them; `None` once stopped.
    pub fn work(&self) -> Option<Vec<Work>> {
        let mut state = self.lock();
        loop {
            if state.stop || state.failed.is_some() {
                return None;
            }
            if !state.paused {
                let work = Self::ready(&state);
                if !work.is_empty() {
                    return Some(work);
                }
            }
            state = self.wait(state);
        }
    }

    /// Pauses (`true`) or resumes the indexer: paused, it applies nothing more after the
    /// step it is in.
    pub fn set_paused(&self, paused: bool) {
        self.lock().paused = paused;
        self.changed.notify_all();
    }

    /// The indexer applied (and deleted) `entries` entries of shard `shard`; every entry below
    /// `floor` is now applied.
    pub fn applied(&self, shard: usize, floor: u64, entries: u64) {
        let mut state = self.lock();
        if let Some(queue) = state.queues.get_mut(shard) {
            queue.floor = queue.floor.max(floor);
            queue.pending = queue.pending.saturating_sub(entries);
        }
        state.applied += entries;
        drop(state);
        self.changed.notify_all();
    }

    /// The next number of every shard: waiting until every floor reaches it waits for every
    /// entry written before this call.
    pub fn targets(&self) -> Vec<u64> {
        self.lock().queues.iter().map(|q| q.next_seq).collect()
    }

    /// Blocks until every shard's floor reaches its target (from [`Tracker::targets`]).
    pub fn wait_applied(&self, targets: &[u64]) -> Result<()> {
        let mut state = self.lock();
        loop {
            if let Some(e) = &state.failed {
                return Err(e.clone());
            }
            let done = targets
                .iter()
                .zip(&state.queues)
                .all(|(&target, q)| q.floor >= target);
            if done {
                return Ok(());
            }
            if state.stop {
                return Err(Error::InvalidArgument(
                    "the database is closing; its indexes were not caught up".into(),
                ));
            }
            if state.paused {
                return Err(Error::InvalidArgument(
                    "the indexer is paused; resume it before waiting for the indexes".into(),
                ));
            }
            state = self.wait(state);
        }
    }

    /// Waits while `limit` or more entries are pending (back-pressure on writers).
    pub fn throttle(&self, limit: u64) -> Result<()> {
        let mut state = self.lock();
        let pending = |s: &State| s.queues.iter().map(|q| q.pending).sum::<u64>();
        if pending(&state) < limit {
            return Ok(());
        }
        let start = Instant::now();
        state.throttled_writes += 1;
        while pending(&state) >= limit && !state.stop {
            if let Some(e) = &state.failed {
                return Err(e.clone());
            }
            state = self.wait(state);
        }
        state.throttled += start.elapsed();
        Ok(())
    }

    /// Stops the indexer and wakes every waiter.
    pub fn stop(&self) {
        self.lock().stop = true;
        self.changed.notify_all();
    }

    /// Records that the indexer failed: waiters and throttled writers get `error`.
    pub fn fail(&self, error: Error) {
        self.lock().failed = Some(error);
        self.changed.notify_all();
    }

    /// The counters.
    pub fn counts(&self) -> TrackerCounts {
        let state = self.lock();
        TrackerCounts {
            pending: state.queues.iter().map(|q| q.pending).sum(),
            applied: state.applied,
            throttled_writes: state.throttled_writes,
            throttled: state.throttled,
        }
    }

    /// Every shard's floor, by shard store number.
    pub fn floors(&self) -> Vec<u64> {
        self.lock().queues.iter().map(|q| q.floor).collect()
    }

    /// Shard `shard`'s floor: the first entry that may be pending.
    pub fn floor(&self, shard: usize) -> u64 {
        self.lock().queues.get(shard).map_or(0, |q| q.floor)
    }

    /// The indexer's failure, if it failed.
    pub fn failure(&self) -> Option<Error> {
        self.lock().failed.clone()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn entry() -> OutboxEntry {
        OutboxEntry {
            table_id: 7,
            written_micros: 1_700_000_000_000_000,
            ops: vec![
                OutboxOp {
                    index_id: 9,
                    shard: 2,
                    key: b"old\x00key".to_vec(),
                    value: None,
                },
                OutboxOp {
                    index_id: 9,
                    shard: 0,
                    key: b"new".to_vec(),
                    value: Some(vec![1, 0]),
                },
            ],
        }
    }

    #[test]
    fn entries_round_trip_and_damage_is_an_error() {
        let e = entry();
        let bytes = e.encode();
        assert_eq!(OutboxEntry::decode(&bytes).unwrap(), e);
        for cut in 0..bytes.len() {
            assert!(OutboxEntry::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            OutboxEntry::decode(&longer),
            Err(RecordError::TrailingBytes)
        );
        let mut bad = bytes.clone();
        bad[0] = 9;
        assert_eq!(OutboxEntry::decode(&bad), Err(RecordError::Version(9)));
        // A count no input could hold.
        assert!(OutboxEntry::decode(&[OUTBOX_VERSION, 1, 1, 0xff, 0xff, 0x03]).is_err());
    }

    #[test]
    fn keys_sort_in_number_order() {
        assert!(outbox_key(255) < outbox_key(256));
        assert_eq!(outbox_seq(&outbox_key(42)), Some(42));
        assert_eq!(outbox_seq(b"short"), None);
    }

    #[test]
    fn work_stops_below_a_number_still_in_flight() {
        let t = Tracker::new();
        t.add_shard(0, 0, 0, 0);
        let a = t.begin(0).unwrap();
        let b = t.begin(0).unwrap();
        t.end(0, b, true);
        // `a` is still being written: nothing below it is known complete, so no work yet.
        assert_eq!(t.ready_work(), Vec::new());
        t.end(0, a, true);
        assert_eq!(
            t.work(),
            Some(vec![Work {
                shard: 0,
                floor: 0,
                low: 2
            }])
        );
        t.applied(0, 2, 2);
        assert_eq!(t.counts().pending, 0);
        t.wait_applied(&t.targets()).unwrap();
    }

    #[test]
    fn throttled_writers_are_released_when_entries_are_applied() {
        let t = std::sync::Arc::new(Tracker::new());
        t.add_shard(0, 0, 0, 0);
        for _ in 0..3 {
            let s = t.begin(0).unwrap();
            t.end(0, s, true);
        }
        let writer = {
            let t = t.clone();
            std::thread::spawn(move || t.throttle(3))
        };
        while t.counts().throttled_writes == 0 {
            std::thread::yield_now();
        }
        t.applied(0, 3, 3);
        writer.join().unwrap().unwrap();
        assert_eq!(t.counts().throttled_writes, 1);
        t.fail(Error::InvalidArgument("disk gone".into()));
        let s = t.begin(0).unwrap();
        t.end(0, s, true);
        assert!(t.wait_applied(&t.targets()).is_err());
        assert_eq!(t.work(), None);
    }
}
