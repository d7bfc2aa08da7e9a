//! The change log behind change feeds (`docs/feeds.md`; format in `docs/formats/changes.md`).
//!
//! 1. Every shard store has a column family `sys/changes`. A commit that changes a row of a
//!    table some feed covers puts, in the same atomic batch as the rows of that store, one
//!    entry: every covered row change of the commit that lives in the store, with the row
//!    before and after. Tables no feed covers write nothing.
//! 2. The entry's key is the commit's id, the first seqno of its range, big-endian: entries
//!    sort in commit order, and a commit's entries in several stores share the key. The
//!    value ends with the commit's visible seqno (the last of its range: what
//!    `Change::commit` reports): the range is allocated after the batch is built, so the
//!    value is finished then (`ChangeBody::finish`), by appending.
//! 4. The rows before and after are the bytes the fact family stores (`records.md`): the
//!    write has them already (the row it read, the row it puts), so logging costs no
//!    encoding. A laid-out record names a layout of its table, which is why a table a feed
//!    covers cannot be dropped.
//! 3. A reader at a published seqno sees every commit at or below it whole, and no commit
//!    later published can take a key below one it read (ranges are published whole and in
//!    order): reading in key order from a position never misses a commit.
//!
//! `FeedRegistry` is the in-memory half: which tables are covered (the writers' question,
//! answered without a lock when no feed exists), each feed's acknowledged position and
//! retention limit, the retained bytes, and the wake-ups of readers waiting for commits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use strata_planner::Value;

use crate::table::codec::format::{CHANGE_VERSION, CHANGE_VERSION_KEYED};
use crate::table::codec::record::RecordError;
use crate::table::codec::record_codec::{Reader, put_varint};

/// The most changes an entry may claim (a bound for a damaged count).
pub const MAX_CHANGES: u64 = 1 << 24;
const HAS_BEFORE: u8 = 1;
const HAS_AFTER: u8 = 2;
/// Version 2: the row after is a delta against the row before (both present).
const AFTER_DELTA: u8 = 4;

/// One row change as the log stores it: the records as the fact family stores them, decoded
/// with the table's layouts when delivered.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedChange {
    /// The table (its catalog id).
    pub table_id: u64,
    /// The row's primary key values as a version-1 entry stores them; empty from version 2,
    /// whose rows hold their key (the reader takes it from the row delivered).
    pub key: Vec<Value>,
    /// The row before the commit (`None`: it did not exist).
    pub before: Option<Vec<u8>>,
    /// The row after the commit (`None`: deleted).
    pub after: Option<Vec<u8>>,
}

/// One shard store's part of one commit's changes.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeEntry {
    /// The commit's visible seqno (the last of its range).
    pub commit: u64,
    /// The changes, in the order the commit made them.
    pub changes: Vec<LoggedChange>,
}

/// An entry's key: the commit's id.
pub fn change_key(commit_id: u64) -> [u8; 8] {
    commit_id.to_be_bytes()
}

/// The commit id an entry's key holds; `None` for a key of another length.
pub fn commit_id_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

impl ChangeEntry {
    /// The stored form (the current version, which does not store keys).
    pub fn encode(&self) -> Vec<u8> {
        let mut body = ChangeBody::default();
        for c in &self.changes {
            body.push(c.table_id, c.before.as_deref(), c.after.as_deref());
        }
        body.finish(self.commit)
    }

    /// Decodes an entry of either version, checking its version, trailer, count, flags and
    /// lengths. The records stay bytes; the table's layouts check them when they are
    /// delivered.
    pub fn decode(bytes: &[u8]) -> Result<ChangeEntry, RecordError> {
        if bytes.len() < 1 + TRAILER {
            return Err(RecordError::Truncated);
        }
        let (body, trailer) = bytes.split_at(bytes.len() - TRAILER);
        let mut count = [0; 4];
        count.copy_from_slice(&trailer[..4]);
        let count = u32::from_le_bytes(count);
        let mut commit = [0; 8];
        commit.copy_from_slice(&trailer[4..]);
        let commit = u64::from_le_bytes(commit);
        let mut r = Reader { bytes: body, at: 0 };
        let version = r.byte()?;
        if version != CHANGE_VERSION && version != CHANGE_VERSION_KEYED {
            return Err(RecordError::Version(version));
        }
        let keyed = version == CHANGE_VERSION_KEYED;
        // A change takes at least 3 bytes: a count the bytes cannot hold is damage.
        if u64::from(count) > MAX_CHANGES || count as usize > body.len() / 3 {
            return Err(RecordError::TooLong(u64::from(count)));
        }
        let mut changes = Vec::with_capacity(count as usize);
        while r.at < body.len() {
            let table_id = r.varint()?;
            let key = if keyed {
                let fields = r.varint()?;
                if fields > crate::table::codec::format::MAX_KEY_FIELDS as u64 {
                    return Err(RecordError::TooManyFields(fields));
                }
                (0..fields)
                    .map(|_| r.value())
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            let flags = r.byte()?;
            let known = if keyed {
                HAS_BEFORE | HAS_AFTER
            } else {
                HAS_BEFORE | HAS_AFTER | AFTER_DELTA
            };
            let delta = flags & AFTER_DELTA != 0;
            if flags & !known != 0
                || flags & (HAS_BEFORE | HAS_AFTER) == 0
                || (delta && flags & (HAS_BEFORE | HAS_AFTER) != HAS_BEFORE | HAS_AFTER)
            {
                return Err(RecordError::UnknownTag(flags));
            }
            fn len(r: &mut Reader<'_>) -> Result<usize, RecordError> {
                let len = r.varint()?;
                usize::try_from(len).map_err(|_| RecordError::TooLong(len))
            }
            let before = if flags & HAS_BEFORE != 0 {
                let n = len(&mut r)?;
                Some(r.take(n)?.to_vec())
            } else {
                None
            };
            let after = match (flags & HAS_AFTER != 0, &before) {
                (false, _) => None,
                (true, Some(before)) if delta => {
                    let prefix = len(&mut r)?;
                    let suffix = len(&mut r)?;
                    let middle = len(&mut r)?;
                    if prefix
                        .checked_add(suffix)
                        .is_none_or(|kept| kept > before.len())
                    {
                        return Err(RecordError::TooLong(prefix as u64));
                    }
                    let middle = r.take(middle)?;
                    let mut after = Vec::with_capacity(prefix + middle.len() + suffix);
                    after.extend_from_slice(&before[..prefix]);
                    after.extend_from_slice(middle);
                    after.extend_from_slice(&before[before.len() - suffix..]);
                    Some(after)
                }
                (true, _) => {
                    let n = len(&mut r)?;
                    Some(r.take(n)?.to_vec())
                }
            };
            changes.push(LoggedChange {
                table_id,
                key,
                before,
                after,
            });
            if changes.len() > count as usize {
                return Err(RecordError::TrailingBytes);
            }
        }
        if changes.len() != count as usize {
            return Err(RecordError::Truncated);
        }
        Ok(ChangeEntry { commit, changes })
    }
}

/// The bytes after an entry's changes: their count (`u32`) and the commit (`u64`), both
/// little-endian.
const TRAILER: usize = 12;

/// The changes of one commit in one store, encoded as the write builds them; finished into
/// an entry's value once the commit's seqno is known.
#[derive(Debug, Default)]
pub(crate) struct ChangeBody {
    count: u32,
    bytes: Vec<u8>,
}

impl ChangeBody {
    /// Adds a row change: the row before and after as the fact family stores them (the rows
    /// hold the key). An update logs the row after as the bytes that differ from the row
    /// before, between their common prefix and suffix (an update usually changes a few
    /// fields: the entry then holds one row and a few bytes, not two rows), as PostgreSQL
    /// logs an updated tuple.
    pub(crate) fn push(&mut self, table_id: u64, before: Option<&[u8]>, after: Option<&[u8]>) {
        let out = &mut self.bytes;
        if out.is_empty() {
            let rows = before
                .map_or(0, <[u8]>::len)
                .max(after.map_or(0, <[u8]>::len));
            out.reserve(rows + 32 + TRAILER);
            out.push(CHANGE_VERSION);
        }
        put_varint(out, table_id);
        let delta = before.is_some() && after.is_some();
        let flags = u8::from(before.is_some()) * HAS_BEFORE
            + u8::from(after.is_some()) * HAS_AFTER
            + u8::from(delta) * AFTER_DELTA;
        out.push(flags);
        if let Some(before) = before {
            put_varint(out, before.len() as u64);
            out.extend_from_slice(before);
        }
        match (before, after) {
            (Some(before), Some(after)) => {
                let prefix = before.iter().zip(after).take_while(|(a, b)| a == b).count();
                let suffix = before[prefix..]
                    .iter()
                    .rev()
                    .zip(after[prefix..].iter().rev())
                    .take_while(|(a, b)| a == b)
                    .count();
                let middle = &after[prefix..after.len() - suffix];
                put_varint(out, prefix as u64);
                put_varint(out, suffix as u64);
                put_varint(out, middle.len() as u64);
                out.extend_from_slice(middle);
            }
            (None, Some(after)) => {
                put_varint(out, after.len() as u64);
                out.extend_from_slice(after);
            }
            _ => {}
        }
        self.count += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entry's value for the commit whose visible seqno is `commit` (the body is moved
    /// out: a part is finished once).
    pub(crate) fn finish(&mut self, commit: u64) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.bytes);
        if out.is_empty() {
            out.push(CHANGE_VERSION);
        }
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&commit.to_le_bytes());
        out
    }
}

/// What a feed does when it falls more than its `max_retained_bytes` behind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnLag {
    /// The feed is marked lagging and stops holding changes back: the log is trimmed past
    /// it as the other feeds acknowledge, and its reader's next `poll` fails with
    /// `Error::FeedLagging` (the changes it missed are gone: drop it, and start a new one
    /// from a checkpoint). Writers never wait. The default.
    #[default]
    Release,
    /// The feed is marked lagging and keeps every change until it acknowledges them: nothing
    /// is lost, writers never wait, and the log grows while the consumer is away.
    Retain,
}

/// A feed's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeedOptions {
    /// How far behind (in bytes of change entries after its acknowledged position) the
    /// feed may fall before it is lagging. Default 1 GiB.
    pub max_retained_bytes: u64,
    /// What lagging does ([`OnLag`]).
    pub on_lag: OnLag,
}

impl Default for FeedOptions {
    fn default() -> Self {
        FeedOptions {
            max_retained_bytes: 1 << 30,
            on_lag: OnLag::Release,
        }
    }
}

impl FeedOptions {
    /// These options with `max_retained_bytes` set.
    pub fn max_retained_bytes(mut self, bytes: u64) -> Self {
        self.max_retained_bytes = bytes;
        self
    }

    /// These options with `on_lag` set.
    pub fn on_lag(mut self, on_lag: OnLag) -> Self {
        self.on_lag = on_lag;
        self
    }
}

/// One feed as the registry tracks it.
#[derive(Clone, Debug)]
pub(crate) struct FeedSlot {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) tables: BTreeSet<u64>,
    /// The commit id through which it has acknowledged everything (its start, at first).
    pub(crate) acked_id: u64,
    pub(crate) options: FeedOptions,
    /// Over its limit with `OnLag::Release`: no longer holds changes.
    pub(crate) released: bool,
    /// Over its limit (either policy).
    pub(crate) lagging: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The bytes of kept entries written under a run of commit ids.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// The highest commit id in it (ids arrive nearly in order).
    last: u64,
    bytes: u64,
}

/// What the kept entries hold back.
#[derive(Default)]
struct Retention {
    /// The kept entries' bytes by commit, oldest first, in buckets of up to a 64th of the
    /// smallest feed limit (a bucket per commit would grow by a node per write, and a lagging
    /// feed that retains keeps millions of commits): a feed's `behind` is exact as writes
    /// add to it, and an acknowledgement or a new feed's start inside a bucket counts the
    /// bucket as still held, overstating by at most that 64th until the next one passes it.
    buckets: std::collections::VecDeque<Bucket>,
    /// Feed id → bytes of kept entries after its acknowledged position.
    behind: BTreeMap<u64, u64>,
}

impl Retention {
    /// The bytes of buckets with commits after `id`.
    fn after(&self, id: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|b| b.last > id)
            .map(|b| b.bytes)
            .sum()
    }

    /// The bytes of buckets whose last commit is in `(from, through]`.
    fn between(&self, from: u64, through: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|b| b.last > from && b.last <= through)
            .map(|b| b.bytes)
            .sum()
    }

    /// Adds `bytes` written under commit `id`, to the newest bucket while it has room.
    fn add(&mut self, id: u64, bytes: u64, bucket_bytes: u64) {
        if let Some(b) = self.buckets.back_mut()
            && b.bytes < bucket_bytes
        {
            b.last = b.last.max(id);
            b.bytes += bytes;
            return;
        }
        self.buckets.push_back(Bucket { last: id, bytes });
    }
}

/// The feeds, for writers, readers and the trimmer (module docs).
#[derive(Default)]
pub(crate) struct FeedRegistry {
    /// Whether any feed exists: the writers' check when none does.
    any: AtomicBool,
    feeds: RwLock<Arc<Vec<FeedSlot>>>,
    /// Taken before `feeds` is written by an acknowledgement or a new feed, and by each
    /// commit's accounting, so the two never miss each other.
    retention: Mutex<Retention>,
    /// Bumped at every commit that wrote entries; readers wait on it.
    commits: Mutex<u64>,
    commits_cv: Condvar,
    /// Readers waiting on `commits_cv`: a commit wakes them only when there are any (a
    /// wake-up is a system call, a tenth of a write's time, measured).
    waiting: std::sync::atomic::AtomicUsize,
    /// The first commit id whose entries may still be in the log (every one below was
    /// trimmed).
    trimmed_from: std::sync::atomic::AtomicU64,
}

impl FeedRegistry {
    /// Whether table `id` is covered by a feed.
    pub(crate) fn covers(&self, table_id: u64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.slots().iter().any(|f| f.tables.contains(&table_id))
    }

    /// The feeds now.
    pub(crate) fn slots(&self) -> Arc<Vec<FeedSlot>> {
        Arc::clone(&self.feeds.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn replace(&self, f: impl FnOnce(&mut Vec<FeedSlot>)) {
        let mut feeds = self.feeds.write().unwrap_or_else(|p| p.into_inner());
        let mut next = (**feeds).clone();
        f(&mut next);
        self.any.store(!next.is_empty(), Ordering::Release);
        *feeds = Arc::new(next);
    }

    /// Adds a feed (at open, or created), holding back the kept entries after its start.
    pub(crate) fn add(&self, slot: FeedSlot) {
        let mut retention = lock(&self.retention);
        let behind = retention.after(slot.acked_id);
        retention.behind.insert(slot.id, behind);
        self.replace(|feeds| feeds.push(slot));
    }

    /// Removes feed `id`.
    pub(crate) fn remove(&self, id: u64) {
        let mut retention = lock(&self.retention);
        retention.behind.remove(&id);
        self.replace(|feeds| feeds.retain(|f| f.id != id));
        drop(retention);
        self.wake();
    }

    /// Moves feed `id`'s acknowledged position to commit id `through` (never back).
    pub(crate) fn acked(&self, id: u64, through: u64) {
        let mut retention = lock(&self.retention);
        let Some(old) = self.slots().iter().find(|f| f.id == id).map(|f| f.acked_id) else {
            return;
        };
        if through <= old {
            return;
        }
        let passed = retention.between(old, through);
        if let Some(behind) = retention.behind.get_mut(&id) {
            *behind = behind.saturating_sub(passed);
        }
        self.replace(|feeds| {
            for f in feeds.iter_mut().filter(|f| f.id == id) {
                f.acked_id = through;
            }
        });
    }

    /// Records `bytes` of entries written under commit `id`, marks the feeds it puts over
    /// their limit lagging, and wakes the readers.
    pub(crate) fn written(&self, id: u64, bytes: u64) {
        let mut retention = lock(&self.retention);
        let mut over = Vec::new();
        let mut smallest_limit = u64::MAX;
        {
            let feeds = self.feeds.read().unwrap_or_else(|p| p.into_inner());
            for f in feeds.iter() {
                smallest_limit = smallest_limit.min(f.options.max_retained_bytes);
                if f.acked_id >= id {
                    continue;
                }
                let behind = retention.behind.entry(f.id).or_insert(0);
                *behind += bytes;
                if !f.lagging && *behind > f.options.max_retained_bytes {
                    over.push(f.id);
                }
            }
        }
        retention.add(id, bytes, (smallest_limit / 64).max(1));
        if !over.is_empty() {
            self.replace(|feeds| {
                for f in feeds.iter_mut().filter(|f| over.contains(&f.id)) {
                    tracing::warn!(
                        feed = %f.name,
                        limit = f.options.max_retained_bytes,
                        "a change feed fell behind its retention limit"
                    );
                    f.lagging = true;
                    f.released = f.options.on_lag == OnLag::Release;
                }
            });
        }
        drop(retention);
        *lock(&self.commits) += 1;
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.commits_cv.notify_all();
        }
    }

    /// The bytes of kept entries after feed `id`'s acknowledged position.
    pub(crate) fn behind(&self, id: u64) -> u64 {
        lock(&self.retention).behind.get(&id).copied().unwrap_or(0)
    }

    /// The commit id through which every feed still holding changes has acknowledged
    /// (everything, with none): entries at or below it may go.
    pub(crate) fn trim_through(&self) -> u64 {
        self.slots()
            .iter()
            .filter(|f| !f.released)
            .map(|f| f.acked_id)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Forgets the bytes of commits at or below `id` (their entries were deleted).
    pub(crate) fn trimmed(&self, id: u64) {
        let mut retention = lock(&self.retention);
        while retention.buckets.front().is_some_and(|b| b.last <= id) {
            retention.buckets.pop_front();
        }
        self.trimmed_from
            .fetch_max(id.saturating_add(1), Ordering::AcqRel);
    }

    /// The first commit id whose entries may still be in the log.
    pub(crate) fn trimmed_from(&self) -> u64 {
        self.trimmed_from.load(Ordering::Acquire)
    }

    /// The count of commits that wrote entries so far.
    pub(crate) fn commits(&self) -> u64 {
        *lock(&self.commits)
    }

    /// Waits until the count of commits is past `seen`, or until `deadline`.
    pub(crate) fn wait_for_commit(&self, seen: u64, deadline: Instant) {
        let mut commits = lock(&self.commits);
        // Counted under the lock a committer takes before it reads the count: it either
        // bumped `commits` already (seen below) or will see this waiter.
        self.waiting.fetch_add(1, Ordering::AcqRel);
        while *commits == seen {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            commits = self
                .commits_cv
                .wait_timeout(commits, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }

    /// Wakes every waiting reader (the database is closing, or a feed was dropped).
    pub(crate) fn wake(&self) {
        *lock(&self.commits) += 1;
        self.commits_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::codec::record_codec::encode_value;

    /// A row change's rows before and after.
    type Rows<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

    fn entry(changes: Vec<Rows<'_>>) -> ChangeEntry {
        ChangeEntry {
            commit: 41,
            changes: changes
                .into_iter()
                .map(|(before, after)| LoggedChange {
                    table_id: 7,
                    key: Vec::new(),
                    before: before.map(<[u8]>::to_vec),
                    after: after.map(<[u8]>::to_vec),
                })
                .collect(),
        }
    }

    #[test]
    fn inserts_updates_and_deletes_round_trip() {
        let e = entry(vec![
            (None, Some(b"new row")),
            (Some(b"balance=10;id=3"), Some(b"balance=4;id=3")),
            (Some(b"abc"), Some(b"xyz")),
            (Some(b"same"), Some(b"same")),
            (Some(b""), Some(b"grown from nothing")),
            (Some(b"gone"), None),
        ]);
        assert_eq!(ChangeEntry::decode(&e.encode()), Ok(e));
    }

    #[test]
    fn an_update_logs_only_the_bytes_that_changed() {
        let before = [b'r'; 90];
        let mut after = before;
        after[40] = b's';
        let update = entry(vec![(Some(&before), Some(&after))]).encode();
        let insert = entry(vec![(None, Some(&after))]).encode();
        // The row before whole, then prefix, suffix and one byte: 4 bytes for the row after.
        assert_eq!(update.len(), insert.len() + 4);
    }

    #[test]
    fn version_one_entries_still_decode_with_their_keys() {
        // Change 1 of the format page's worked example, as version 1 wrote it.
        let mut v1 = vec![CHANGE_VERSION_KEYED, 7, 1];
        encode_value(&Value::Int(3), &mut v1);
        v1.push(HAS_BEFORE | HAS_AFTER);
        for row in [&b"before"[..], b"after"] {
            put_varint(&mut v1, row.len() as u64);
            v1.extend_from_slice(row);
        }
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&41u64.to_le_bytes());
        let decoded = ChangeEntry::decode(&v1).expect("version 1 decodes");
        assert_eq!(decoded.commit, 41);
        assert_eq!(decoded.changes[0].key, vec![Value::Int(3)]);
        assert_eq!(decoded.changes[0].before.as_deref(), Some(&b"before"[..]));
        assert_eq!(decoded.changes[0].after.as_deref(), Some(&b"after"[..]));
        // A delta flag is refused in version 1.
        let at = v1.len() - TRAILER - 14;
        assert_eq!(v1[at], HAS_BEFORE | HAS_AFTER);
        v1[at] |= AFTER_DELTA;
        assert!(ChangeEntry::decode(&v1).is_err());
    }

    fn slot(id: u64, limit: u64) -> FeedSlot {
        FeedSlot {
            id,
            name: format!("f{id}"),
            tables: BTreeSet::from([1]),
            acked_id: 0,
            options: FeedOptions::default().max_retained_bytes(limit),
            released: false,
            lagging: false,
        }
    }

    #[test]
    fn retention_is_bounded_and_close_to_exact() {
        let registry = FeedRegistry::default();
        // A 64 KiB limit: buckets of 1 KiB.
        registry.add(slot(1, 64 << 10));
        for id in 1..=10_000 {
            registry.written(id, 10);
        }
        let kept = lock(&registry.retention).buckets.len();
        assert!(
            kept <= 100,
            "100,000 bytes in 1 KiB buckets, not a node per commit: {kept}"
        );
        assert_eq!(registry.behind(1), 100_000, "writes add exactly");
        // An acknowledgement inside a bucket leaves at most that bucket's bytes counted.
        registry.acked(1, 5_000);
        let behind = registry.behind(1);
        assert!((50_000..=50_000 + 1_030).contains(&behind), "{behind}");
        // A new feed starting at commit 9,000 holds at most a bucket more than it should.
        let mut late = slot(2, 64 << 10);
        late.acked_id = 9_000;
        registry.add(late);
        let behind = registry.behind(2);
        assert!((10_000..=10_000 + 1_030).contains(&behind), "{behind}");
        // Everything acknowledged and trimmed: nothing held.
        registry.acked(1, 10_000);
        registry.acked(2, 10_000);
        registry.trimmed(registry.trim_through());
        assert_eq!((registry.behind(1), registry.behind(2)), (0, 0));
        assert!(lock(&registry.retention).buckets.is_empty());
    }

    #[test]
    fn a_small_limit_keeps_exact_counts() {
        let registry = FeedRegistry::default();
        registry.add(slot(1, 64));
        for id in 1..=50 {
            registry.written(id, 1);
        }
        registry.acked(1, 20);
        assert_eq!(registry.behind(1), 30);
        assert!(!registry.slots()[0].lagging);
        for id in 51..=100 {
            registry.written(id, 1);
        }
        assert!(
            registry.slots()[0].lagging,
            "80 bytes behind a 64-byte limit"
        );
    }

    #[test]
    fn damaged_deltas_are_refused() {
        let good = entry(vec![(Some(b"abcdef"), Some(b"abXdef"))]).encode();
        // version, table, flags, before_len, before[6], prefix, suffix, middle_len, middle.
        assert_eq!(&good[..4], &[CHANGE_VERSION, 7, 7, 6]);
        assert_eq!(&good[10..14], &[2, 3, 1, b'X']);
        assert!(ChangeEntry::decode(&good).is_ok());
        // A prefix and suffix longer than the row before together.
        let mut long = good.clone();
        long[11] = 5;
        assert!(ChangeEntry::decode(&long).is_err());
        // A delta with no row before.
        let mut lone = good.clone();
        lone[2] = HAS_AFTER | AFTER_DELTA;
        assert!(ChangeEntry::decode(&lone).is_err());
        // A middle past the end.
        let mut past = good;
        past[12] = 40;
        assert!(ChangeEntry::decode(&past).is_err());
    }
}
