//! The memtable: a skip list ([`crate::skiplist`]) of internal keys.
//!
//! 1. Entries are keyed by `(user_key, seqno)`, ordered by user key ascending and then seqno
//!    descending, so the newest version of a key comes first, as in a table.
//! 2. Only the commit leader inserts (one thread at a time); readers run concurrently and see
//!    an entry once it is linked. Readers ignore entries newer than their snapshot, which is
//!    how a half-inserted batch stays invisible: its seqnos are above the published one.
//! 3. Values are copied into chunks the memtable allocates ([`ValueArena`]), not kept as
//!    slices of the batch buffers they came in (which held every batch's buffer for the
//!    memtable's life: one small allocation per write among the writer's short-lived ones,
//!    which fragmented the heap until `malloc` itself was a fifth of a multi-store commit's
//!    profile). A value over [`ARENA_LARGE_VALUE`] bytes still keeps its batch's buffer: it
//!    is most of that buffer. Keys of up to 30 bytes (most keys: a table's index entry of a
//!    short string and a 64-bit key is 23) are copied into the skip-list node, so searches
//!    compare without a pointer chase; longer keys get an allocation of their own.
//! 4. The size, used to decide when to seal the memtable, is the keys and values it holds plus
//!    the skip-list slots its entries use. The list's arenas grow by fixed segments and the
//!    values' by chunks, so the memory held is at most one segment (about half a MiB) and one
//!    chunk (at most 256 KiB) more.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use bytes::{Bytes, BytesMut};
use strata_sstable::{ValueKind, hash64};

use crate::SeqNo;
use crate::batch::BatchEntry;
use crate::memtable_filter::MemtableFilter;
use crate::memtable_index::{PointIndex, WALK};
use crate::skiplist::{self, Finger, Hint, Linked, Position, SkipList};
use crate::sync::core::{self as sync, Mutex, MutexGuard};

mod key;

use key::INLINE_KEY_BYTES;
pub(crate) use key::{MemKey, UserKey};

/// Where a batch's entries go, found by [`Memtable::place_each`] before the batch joined a group:
/// a hint per entry, in the memtable that was active for its family then. The memtables are
/// held, so a hint is never read against a memtable that reused a freed one's address.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    pub(crate) memtables: Vec<(u32, Arc<Memtable>)>,
    pub(crate) hints: Vec<Hint>,
}

impl Placed {
    /// Entry `at`'s hint, if it was placed in `mem` (family `cf`'s memtable now).
    pub(crate) fn hint(&self, at: usize, cf: u32, mem: &Memtable) -> Hint {
        let same = self
            .memtables
            .iter()
            .any(|(id, placed)| *id == cf && std::ptr::eq(placed.as_ref(), mem));
        match self.hints.get(at) {
            Some(hint) if same => *hint,
            _ => Hint::None,
        }
    }
}

/// One column family's memtable.
#[derive(Debug)]
pub(crate) struct Memtable {
    list: SkipList<MemKey, (ValueKind, Bytes)>,
    /// The user keys inserted, so most reads of a key not here skip the search.
    filter: MemtableFilter,
    /// Each user key's newest node, by hash, so most reads of a key here skip it too.
    index: PointIndex,
    /// Bytes of keys stored outside the list's slots, and of values.
    payload_bytes: AtomicUsize,
    /// Where inserted values are copied. Held by the inserting writer from the value's copy
    /// to the point index's update, which must not interleave with another insert's.
    writer: Mutex<ValueArena>,
    deletions: AtomicU64,
    /// The log file this memtable's first write went to: it holds none of the memtable's data
    /// before that file.
    first_log_number: u64,
}

/// The newest version of a key visible at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) seqno: SeqNo,
    pub(crate) kind: ValueKind,
    pub(crate) value: Bytes,
}

/// The first chunk a memtable's values are copied into; each next one is twice the size of
/// the last, up to [`ARENA_MAX_CHUNK`], so a family written once holds 4 KiB, not a large
/// chunk, and a busy one allocates rarely.
const ARENA_FIRST_CHUNK: usize = 4 << 10;
const ARENA_MAX_CHUNK: usize = 256 << 10;
/// Values longer than this keep the batch buffer they came in (no copy): they are most of it.
pub(crate) const ARENA_LARGE_VALUE: usize = 8 << 10;

/// A memtable's values, copied into chunks that one `Bytes` handle per value shares, as
/// slices of the batch buffer shared it before: the chunk is freed when the memtable and
/// every value read from it are gone. Unlike the batch buffers, the chunks are few and large,
/// and a write's buffer is freed as soon as its entries are in.
#[derive(Debug)]
pub(crate) struct ValueArena {
    chunk: BytesMut,
    next_chunk: usize,
}

impl Default for ValueArena {
    fn default() -> Self {
        ValueArena {
            chunk: BytesMut::new(),
            next_chunk: ARENA_FIRST_CHUNK,
        }
    }
}

impl ValueArena {
    /// `value` as the memtable keeps it: a copy in the current chunk (a new one when it
    /// has no room), or `value` itself when it is empty or large.
    pub(crate) fn copy(&mut self, value: &Bytes) -> Bytes {
        if value.is_empty() || value.len() > ARENA_LARGE_VALUE {
            return value.clone();
        }
        if self.chunk.capacity() - self.chunk.len() < value.len() {
            // `value.len() <= ARENA_LARGE_VALUE < ARENA_FIRST_CHUNK * 2`: a fresh chunk
            // (at least 4 KiB, and 8 KiB from the second on) holds it.
            self.chunk = BytesMut::with_capacity(self.next_chunk.max(value.len()));
            self.next_chunk = (self.next_chunk * 2).min(ARENA_MAX_CHUNK);
        }
        self.chunk.extend_from_slice(value);
        self.chunk.split().freeze()
    }
}

/// How far a flush's walk of the memtable runs ahead of the entry it writes.
const FLUSH_AHEAD: usize = 8;

/// The memtable holds as many entries as its skip list can: [`skiplist::CAPACITY`].
pub(crate) const MAX_ENTRIES: u64 = skiplist::CAPACITY as u64;

impl Memtable {
    /// An empty memtable whose key filter takes `filter_bytes` (0: none).
    pub(crate) fn new(first_log_number: u64, filter_bytes: usize) -> Self {
        Memtable {
            list: SkipList::new(),
            filter: MemtableFilter::new(filter_bytes),
            index: PointIndex::new(filter_bytes),
            payload_bytes: AtomicUsize::new(0),
            writer: Mutex::new(ValueArena::default()),
            deletions: AtomicU64::new(0),
            first_log_number,
        }
    }

    /// Inserts one batch entry. The commit leader is the only inserter (the list serialises
    /// inserts anyway), and the entry's seqno is not yet published. Fails, inserting nothing,
    /// when the memtable holds [`MAX_ENTRIES`]; the write path seals it before that.
    pub(crate) fn insert(&self, entry: &BatchEntry) -> Result<(), skiplist::Full> {
        self.insert_hinted(entry, Hint::None)
    }

    /// [`Memtable::insert`] with what [`Memtable::place_each`] found for the entry's key.
    fn insert_hinted(&self, entry: &BatchEntry, hint: Hint) -> Result<(), skiplist::Full> {
        let mut values = sync::lock(&self.writer);
        let hash = hash64(&entry.key);
        let hint = self.hint_now(hash, entry, hint);
        let (key, value) = Self::list_entry(entry, &mut values);
        self.filter.insert_hash(hash);
        let linked = self.list.insert_hinted(key, value, hint)?;
        self.index_node(hash, &entry.key, linked);
        self.count(entry);
        Ok(())
    }

    /// Inserts the entries, each into its memtable, as [`Memtable::insert`] would one after
    /// another, with the skip-list searches interleaved ([`SkipList::insert_each`]); a
    /// memtable may take several. Each entry comes with what [`Memtable::place_each`] found for
    /// it in that memtable, or [`Hint::None`]. On `Full` some entries may be inserted and
    /// others not: the caller fails the store, as after a failed `insert`.
    pub(crate) fn insert_each(
        entries: &[(&Memtable, &BatchEntry, Hint)],
    ) -> Result<(), skiplist::Full> {
        if let [(mem, entry, hint)] = entries {
            return mem.insert_hinted(entry, *hint);
        }
        // Interleaving pays for itself only when two searches overlap their cache misses; with
        // at most one entry searching (a row whose other entries are placed or appended: a
        // fact entry and its change-log record), one insert after another does the same work
        // without the wave's bookkeeping (its vectors and locks cost 0.4 µs a write, measured
        // in `feed_write`).
        let searching = entries
            .iter()
            .filter(|(mem, entry, hint)| mem.likely_searches(entry, *hint))
            .count();
        if searching <= 1 {
            for (mem, entry, hint) in entries {
                mem.insert_hinted(entry, *hint)?;
            }
            return Ok(());
        }
        // Each memtable's writer lock once, in address order (as the lists take theirs).
        let address = |mem: &Memtable| std::ptr::from_ref(mem) as usize;
        let mut memtables: Vec<&Memtable> = entries.iter().map(|(mem, _, _)| *mem).collect();
        memtables.sort_by_key(|mem| address(mem));
        memtables.dedup_by_key(|mem| address(mem));
        let mut guards: Vec<MutexGuard<'_, ValueArena>> = memtables
            .iter()
            .map(|mem| sync::lock(&mem.writer))
            .collect();
        let hashes: Vec<u64> = entries.iter().map(|(_, e, _)| hash64(&e.key)).collect();
        let mut inserts = Vec::with_capacity(entries.len());
        for ((mem, entry, hint), &hash) in entries.iter().zip(&hashes) {
            let at = memtables
                .binary_search_by_key(&address(mem), |m| address(m))
                .unwrap_or_default();
            let hint = mem.hint_now(hash, entry, *hint);
            let (key, value) = Self::list_entry(entry, &mut guards[at]);
            mem.filter.insert_hash(hash);
            inserts.push(((&mem.list, key, value), hint));
        }
        let linked = SkipList::insert_each_hinted(inserts)?;
        // In the order given, which is each list's order of linking: a key's newest node is
        // indexed last.
        for (((mem, entry, _), linked), hash) in entries.iter().zip(linked).zip(hashes) {
            mem.index_node(hash, &entry.key, linked);
            mem.count(entry);
        }
        drop(guards);
        Ok(())
    }

    /// Whether inserting `entry` with `hint` will probably search the list: not when the hint
    /// places it, when the point index knows the key (a new version goes before its newest),
    /// or when the key is above every entry (an append from the last splice). A guess read
    /// without the writer lock, which only chooses how [`Memtable::insert_each`] proceeds.
    fn likely_searches(&self, entry: &BatchEntry, hint: Hint) -> bool {
        if hint != Hint::None {
            return false;
        }
        if let Some(at) = self.index.get(hash64(&entry.key))
            && self.list.entry(at).0.user_key.as_slice() == entry.key.as_ref()
        {
            return false;
        }
        let key = MemKey {
            user_key: UserKey::copy(&entry.key),
            seqno: entry.seqno,
        };
        !self.list.is_above_last(&key)
    }

    fn list_entry(entry: &BatchEntry, values: &mut ValueArena) -> (MemKey, (ValueKind, Bytes)) {
        let key = MemKey {
            user_key: UserKey::copy(&entry.key),
            seqno: entry.seqno,
        };
        (key, (entry.kind, values.copy(&entry.value)))
    }

    /// Where writes of `keys` (each with its memtable) will go, found before the writer
    /// takes its turn in the group commit, so that two writers' searches run at once and the
    /// leader only links: the key's newest version if the point index knows it (a new
    /// version goes right before it); nothing for a key above every entry (an append goes in
    /// from the last insert's splice); otherwise its predecessors, searched for as a reader
    /// would, the searches taking turns ([`SkipList::locate_each`]). Any of these may be
    /// stale by the insert: the list checks a `Before` hint and walks right from `Located`
    /// predecessors. Valid only for those memtables, which the caller keeps alive.
    pub(crate) fn place_each(keys: &[(&Memtable, &[u8])]) -> Vec<Hint> {
        let mut hints = Vec::with_capacity(keys.len());
        let mut searches = Vec::new();
        for (at, (mem, key)) in keys.iter().enumerate() {
            if let Some(newest) = mem.index.get(hash64(key))
                && mem.list.entry(newest).0.user_key.as_slice() == *key
            {
                hints.push(Hint::Before(newest));
                continue;
            }
            hints.push(Hint::None);
            // The key's first possible version: every version of it sorts at or after this.
            let first = MemKey {
                user_key: UserKey::copy(key),
                seqno: SeqNo::MAX,
            };
            if !mem.list.is_above_last(&first) {
                searches.push((at, &mem.list, first));
            }
        }
        if !searches.is_empty() {
            let lookups: Vec<_> = searches.iter().map(|(_, list, key)| (*list, key)).collect();
            for ((at, _, _), located) in searches.iter().zip(SkipList::locate_each(&lookups)) {
                hints[*at] = Hint::Located(located);
            }
        }
        hints
    }

    /// The hint to insert `entry` with: the one [`Memtable::place_each`] found, or failing that
    /// the node the point index names now, if it is an older version of the key (a version
    /// inserted behind a newer one, out of order, is searched for). The list checks the
    /// place. REQUIRES: the writer lock.
    fn hint_now(&self, hash: u64, entry: &BatchEntry, placed: Hint) -> Hint {
        if placed != Hint::None {
            return placed;
        }
        let Some(at) = self.index.get(hash) else {
            return Hint::None;
        };
        let newest = self.list.entry(at).0;
        if newest.user_key.as_slice() == entry.key.as_ref() && newest.seqno < entry.seqno {
            Hint::Before(at)
        } else {
            Hint::None
        }
    }

    /// Points the index at a node just linked if it is its key's first (the newest version:
    /// the entry before it holds another key). REQUIRES: the writer lock, held since before
    /// the node was inserted.
    fn index_node(&self, hash: u64, key: &[u8], linked: Linked) {
        let first = linked
            .after
            .is_none_or(|before| self.list.entry(before).0.user_key.as_slice() != key);
        if first {
            self.index.set(hash, linked.at);
        }
    }

    /// Counts an inserted entry in the size and the deletions.
    fn count(&self, entry: &BatchEntry) {
        let outside = if entry.key.len() > INLINE_KEY_BYTES {
            entry.key.len()
        } else {
            0
        };
        if entry.kind == ValueKind::Delete {
            self.deletions.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.payload_bytes
            .fetch_add(outside + entry.value.len(), AtomicOrdering::Relaxed);
    }

    /// The newest version of `key` with a seqno at or below `snapshot`.
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo) -> Option<Found> {
        let hash = hash64(key);
        if let Some(answer) = self.get_indexed(key, hash, snapshot) {
            return answer;
        }
        if !self.filter.may_hold_hash(hash) {
            return None;
        }
        let probe = MemKey {
            user_key: UserKey::copy(key),
            seqno: snapshot,
        };
        self.found(&probe, self.list.seek(&probe)?)
    }

    /// [`Memtable::get`] for the next of a run of ascending keys, searching from where
    /// `finger`'s last search ended.
    pub(crate) fn get_near(
        &self,
        key: &[u8],
        snapshot: SeqNo,
        finger: &mut Finger,
    ) -> Option<Found> {
        let hash = hash64(key);
        if let Some(answer) = self.get_indexed(key, hash, snapshot) {
            return answer;
        }
        if !self.filter.may_hold_hash(hash) {
            return None;
        }
        let probe = MemKey {
            user_key: UserKey::copy(key),
            seqno: snapshot,
        };
        self.found(&probe, self.list.seek_near(&probe, finger)?)
    }

    /// [`Memtable::get`] through the point index (see [`crate::memtable_index`]): `None` when
    /// the index cannot tell (its bucket names another key, or the key's versions newer than
    /// `snapshot` run past [`WALK`] nodes), else the answer.
    fn get_indexed(&self, key: &[u8], hash: u64, snapshot: SeqNo) -> Option<Option<Found>> {
        let mut at = self.index.get(hash)?;
        for step in 0..WALK {
            let (found, (kind, value)) = self.list.entry(at);
            if found.user_key.as_slice() != key {
                // The bucket names another key (step 0), or the walk went past this key's
                // versions, all newer than `snapshot`.
                return (step > 0).then_some(None);
            }
            if found.seqno <= snapshot {
                return Some(Some(Found {
                    seqno: found.seqno,
                    kind: *kind,
                    value: value.clone(),
                }));
            }
            match self.list.next_entry(at) {
                Some(next) => at = next,
                None => return Some(None),
            }
        }
        None
    }

    fn found(&self, probe: &MemKey, at: Position) -> Option<Found> {
        let key = probe.user_key.as_slice();
        let (found, (kind, value)) = self.list.entry(at);
        if found.user_key.as_slice() != key {
            return None;
        }
        Some(Found {
            seqno: found.seqno,
            kind: *kind,
            value: value.clone(),
        })
    }

    /// The entry at `position`.
    pub(crate) fn entry(&self, position: Position) -> (&MemKey, ValueKind, &Bytes) {
        let (key, (kind, value)) = self.list.entry(position);
        (key, *kind, value)
    }

    pub(crate) fn first(&self) -> Option<Position> {
        self.list.first()
    }

    pub(crate) fn last(&self) -> Option<Position> {
        self.list.last()
    }

    /// The first entry at or after `key` in internal order.
    pub(crate) fn seek(&self, key: &MemKey) -> Option<Position> {
        self.list.seek(key)
    }

    /// The last entry before `key` in internal order.
    pub(crate) fn seek_before(&self, key: &MemKey) -> Option<Position> {
        self.list.seek_before(key)
    }

    /// The entry after `position`.
    pub(crate) fn next(&self, position: Position) -> Option<Position> {
        self.list.next_entry(position)
    }

    /// The entry before `position`: a search, as the list has no backward links.
    pub(crate) fn prev(&self, position: Position) -> Option<Position> {
        self.list.seek_before(self.list.entry(position).0)
    }

    /// Every entry in internal order, for a flush.
    ///
    /// The walk runs [`FLUSH_AHEAD`] entries ahead of `f`: nodes inserted in random order sit
    /// in random places, and so do their values (in arena chunks, in insertion order), so each
    /// entry is two cache misses, which `f` used to wait for one after the other. The entry
    /// at the head of the walk is prefetched as it is reached, and its value halfway down the
    /// window, so `f` finds both loaded. (The walk itself is a chain of dependent loads, one
    /// a node: it runs beside `f`'s work instead of before it.)
    pub(crate) fn for_each(&self, mut f: impl FnMut(&MemKey, ValueKind, &Bytes) -> bool) {
        let mut window: std::collections::VecDeque<Position> =
            std::collections::VecDeque::with_capacity(FLUSH_AHEAD);
        let mut ended = false;
        loop {
            // The link of the window's last entry is read one turn after that entry was
            // prefetched: `f`'s work on the front entry runs while it loads.
            while window.len() < FLUSH_AHEAD && !ended {
                let next = match window.back() {
                    Some(&last) => self.list.next_entry(last),
                    None => self.list.first(),
                };
                match next {
                    Some(position) => {
                        self.list.prefetch(position);
                        window.push_back(position);
                    }
                    None => ended = true,
                }
            }
            let Some(position) = window.pop_front() else {
                return;
            };
            if let Some(&middle) = window.get(FLUSH_AHEAD / 2) {
                let (_, (_, value)) = self.list.entry(middle);
                if let Some(first) = value.first() {
                    strata_sstable::prefetch(first);
                }
            }
            let (key, (kind, value)) = self.list.entry(position);
            if !f(key, *kind, value) {
                return;
            }
        }
    }

    /// The memory the memtable's entries use: keys and values outside the list, and their
    /// slots in the list.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.payload_bytes.load(AtomicOrdering::Relaxed) + self.list.used_bytes()
    }

    pub(crate) fn entries(&self) -> u64 {
        self.list.len() as u64
    }

    pub(crate) fn deletions(&self) -> u64 {
        self.deletions.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn first_log_number(&self) -> u64 {
        self.first_log_number
    }

    /// Entries with user keys in `[lower, upper)` and their bytes (key and value), by walking
    /// them: exact, and cheap for the memtable sizes the engine allows.
    pub(crate) fn range_bytes(&self, lower: &[u8], upper: Option<&[u8]>) -> u64 {
        let start = MemKey {
            user_key: UserKey::copy(lower),
            seqno: SeqNo::MAX,
        };
        let mut bytes = 0u64;
        for (key, (_, value)) in self.list.iter_from(self.list.seek(&start)) {
            if upper.is_some_and(|upper| key.user_key[..] >= *upper) {
                break;
            }
            bytes += (key.user_key.len() + value.len()) as u64;
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// Keys drawn from few byte values (zeros included), so prefixes and padding-like tails
    /// are common, on both sides of the inline limit; and arbitrary ones.
    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8)], 0..40),
            proptest::collection::vec(any::<u8>(), 0..48),
        ]
    }

    proptest! {
        #[test]
        fn user_keys_order_as_their_bytes(a in key(), b in key()) {
            let (ua, ub) = (UserKey::copy(&a), UserKey::copy(&b));
            prop_assert_eq!(ua.cmp(&ub), a.cmp(&b));
            prop_assert_eq!(ua == ub, a == b);
        }
    }

    #[test]
    fn zero_padding_does_not_confuse_prefixes() {
        let order = [
            &b""[..],
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"a\0\x01",
            b"a\x01",
            b"b",
            &[b'c'; INLINE_KEY_BYTES],
            &[b'c'; INLINE_KEY_BYTES + 1],
            &[b'd'; INLINE_KEY_BYTES - 1],
        ];
        for pair in order.windows(2) {
            assert_eq!(
                UserKey::copy(pair[0]).cmp(&UserKey::copy(pair[1])),
                Ordering::Less,
                "{:?} < {:?}",
                pair[0],
                pair[1]
            );
        }
    }

    #[test]
    fn for_each_walks_every_entry_in_order_and_stops_when_asked() {
        for count in [0u64, 1, 3, FLUSH_AHEAD as u64, FLUSH_AHEAD as u64 + 1, 500] {
            let mem = Memtable::new(1, 1024);
            // Inserted out of order, as a random fill does.
            for i in 0..count {
                let k = (i * 7_919) % count.max(1);
                let entry = BatchEntry {
                    cf_id: 0,
                    seqno: i + 1,
                    kind: ValueKind::Put,
                    key: Bytes::from(format!("key{k:05}")),
                    value: Bytes::from(format!("value{k}")),
                };
                mem.insert(&entry).expect("room");
            }
            let mut seen = Vec::new();
            mem.for_each(|key, _, value| {
                seen.push((key.user_key.to_vec(), value.clone()));
                true
            });
            let want: Vec<(Vec<u8>, Bytes)> = (0..count)
                .map(|k| {
                    (
                        format!("key{k:05}").into_bytes(),
                        Bytes::from(format!("value{k}")),
                    )
                })
                .collect();
            assert_eq!(seen, want, "{count} entries");
            let mut calls = 0;
            mem.for_each(|_, _, _| {
                calls += 1;
                calls < 2
            });
            assert_eq!(calls, count.min(2), "stops after the first false");
        }
    }

    /// Whether `part` lies inside `whole`'s memory.
    fn inside(part: &Bytes, whole: &Bytes) -> bool {
        let (start, end) = (
            whole.as_ptr() as usize,
            whole.as_ptr() as usize + whole.len(),
        );
        (start..end).contains(&(part.as_ptr() as usize))
    }

    #[test]
    fn small_values_are_copied_out_of_their_batch_and_large_ones_are_not() {
        let mem = Memtable::new(1, 1024);
        let small = Bytes::from(vec![7u8; 100]);
        let large = Bytes::from(vec![9u8; ARENA_LARGE_VALUE + 1]);
        // Many small values: the arena moves to new, larger chunks and keeps every value.
        for i in 0..2_000u64 {
            let value = if i == 1_000 { &large } else { &small };
            let entry = BatchEntry {
                cf_id: 0,
                seqno: i + 1,
                kind: ValueKind::Put,
                key: Bytes::from(format!("key{i:05}")),
                value: value.clone(),
            };
            mem.insert(&entry).expect("room");
        }
        let mut seen = 0;
        mem.for_each(|key, _, value| {
            let large_one = key.user_key.as_slice() == b"key01000";
            if large_one {
                assert_eq!(value, &large);
                assert!(inside(value, &large), "a large value is not copied");
            } else {
                assert_eq!(value, &small);
                assert!(
                    !inside(value, &small),
                    "a small value must not keep its batch's buffer alive"
                );
            }
            seen += 1;
            true
        });
        assert_eq!(seen, 2_000);
    }

    #[test]
    fn the_arena_grows_its_chunks_up_to_the_limit() {
        let mut arena = ValueArena::default();
        let value = Bytes::from(vec![1u8; 1_000]);
        let mut chunks: Vec<usize> = Vec::new();
        let mut last_end = 0usize;
        for _ in 0..2_000 {
            let copy = arena.copy(&value);
            assert_eq!(copy, value);
            if copy.as_ptr() as usize != last_end {
                chunks.push(arena.chunk.capacity() + copy.len());
            }
            last_end = copy.as_ptr() as usize + copy.len();
        }
        assert_eq!(chunks[0], ARENA_FIRST_CHUNK);
        assert_eq!(chunks[1], ARENA_FIRST_CHUNK * 2);
        assert!(chunks.iter().all(|&c| c <= ARENA_MAX_CHUNK));
        assert_eq!(*chunks.last().expect("chunks"), ARENA_MAX_CHUNK);
    }

    #[test]
    fn a_memtable_returns_the_newest_visible_version() {
        let mem = Memtable::new(1, 1024);
        let put = |key: &str, seqno, value: &str| BatchEntry {
            cf_id: 0,
            seqno,
            kind: ValueKind::Put,
            key: Bytes::copy_from_slice(key.as_bytes()),
            value: Bytes::copy_from_slice(value.as_bytes()),
        };
        mem.insert(&put("k", 1, "one")).expect("room");
        mem.insert(&put("k", 3, "three")).expect("room");
        mem.insert(&put("j", 2, "other")).expect("room");
        let value = |snapshot| mem.get(b"k", snapshot).map(|found| found.value);
        assert_eq!(value(0), None);
        assert_eq!(value(1).as_deref(), Some(&b"one"[..]));
        assert_eq!(value(2).as_deref(), Some(&b"one"[..]));
        assert_eq!(value(9).as_deref(), Some(&b"three"[..]));
        assert_eq!(mem.get(b"kk", 9), None);
        assert_eq!(mem.entries(), 3);
    }

    /// One write of the point-index model: key (few, so versions pile up and sets are
    /// shared), whether it is a delete, and where its seqno falls in the shuffled order.
    fn writes() -> impl Strategy<Value = Vec<(u8, bool)>> {
        proptest::collection::vec((0u8..12, proptest::bool::weighted(0.2)), 1..120)
    }

    proptest! {
        /// Reads through the point index answer as the search does, at every snapshot, with
        /// seqnos inserted out of order (a range allocated earlier and written later, as a
        /// commit across stores does) and with sets shared by more keys than they hold.
        /// Without the "first node of its key" rule, a version inserted behind a newer one
        /// would take the slot and hide the newer one. Inserts placed by hints, the index's
        /// and [`Memtable::place_each`]'s (stale ones among them), build the same list as
        /// searched ones.
        #[test]
        fn reads_through_the_point_index_match_the_search(
            writes in writes(),
            shuffle in proptest::collection::vec(any::<u32>(), 120),
            // 128 bytes: 2 sets of 8 slots for 12 keys, which overflow; 4096: 64 sets.
            index_bytes in prop_oneof![Just(128usize), Just(4096usize)],
        ) {
            let mem = Memtable::new(1, index_bytes);
            let plain = Memtable::new(1, 0);
            // Seqnos 1..=n, inserted in an order shuffled within windows of 4.
            let n = writes.len();
            let mut order: Vec<usize> = (0..n).collect();
            for chunk in order.chunks_mut(4) {
                chunk.sort_by_key(|&i| shuffle[i]);
            }
            let mut model: BTreeMap<(u8, u64), Option<u64>> = BTreeMap::new();
            // Each insert but the first is placed before the one ahead of it goes in (as a
            // writer places its batch while another's group goes in), so its hint may be
            // stale: a newer version now sits before the node it names, or new entries lie
            // between its located predecessors and its place.
            let mut placed = Hint::None;
            for (turn, &i) in order.iter().enumerate() {
                let (key, delete) = writes[i];
                let seqno = i as u64 + 1;
                let entry = BatchEntry {
                    cf_id: 0,
                    seqno,
                    kind: if delete { ValueKind::Delete } else { ValueKind::Put },
                    key: Bytes::from(vec![b'k', key]),
                    value: if delete { Bytes::new() } else { Bytes::from(seqno.to_le_bytes().to_vec()) },
                };
                let next = order.get(turn + 1).map(|&n| [b'k', writes[n].0]);
                let hint = std::mem::replace(
                    &mut placed,
                    next.map_or(Hint::None, |next| Memtable::place_each(&[(&mem, &next)])[0]),
                );
                Memtable::insert_each(&[(&mem, &entry, hint)]).expect("room");
                plain.insert(&entry).expect("room");
                model.insert((key, seqno), (!delete).then_some(seqno));
            }
            let entries = |mem: &Memtable| {
                let mut all = Vec::new();
                mem.for_each(|key, kind, _| {
                    all.push((key.user_key.as_slice().to_vec(), key.seqno, kind));
                    true
                });
                all
            };
            prop_assert_eq!(entries(&mem), entries(&plain));
            for key in 0u8..13 {
                for snapshot in 0..=n as u64 + 1 {
                    let want = model
                        .range((key, 0)..=(key, snapshot))
                        .next_back()
                        .map(|(&(_, seqno), value)| (seqno, *value));
                    let got = mem.get(&[b'k', key], snapshot).map(|f| {
                        let value = (f.kind == ValueKind::Put)
                            .then(|| u64::from_le_bytes(f.value[..].try_into().expect("8 bytes")));
                        (f.seqno, value)
                    });
                    prop_assert_eq!(got, want, "key {} at {}", key, snapshot);
                    prop_assert_eq!(
                        plain.get(&[b'k', key], snapshot).map(|f| f.seqno),
                        want.map(|(seqno, _)| seqno)
                    );
                }
            }
        }
    }

    #[test]
    fn a_key_read_far_behind_its_versions_is_still_found() {
        let mem = Memtable::new(1, 4096);
        for seqno in 1..=(WALK as u64 * 3) {
            let entry = BatchEntry {
                cf_id: 0,
                seqno,
                kind: ValueKind::Put,
                key: Bytes::from_static(b"k"),
                value: Bytes::from(seqno.to_le_bytes().to_vec()),
            };
            mem.insert(&entry).expect("room");
        }
        for snapshot in 1..=(WALK as u64 * 3) {
            assert_eq!(mem.get(b"k", snapshot).map(|f| f.seqno), Some(snapshot));
        }
        assert_eq!(mem.get(b"k", 0), None);
    }
}
