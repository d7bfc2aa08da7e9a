//! A memtable's point index: a direct-mapped table from a user key's hash to the skip-list
//! node holding the key's newest version, so a read of a key the memtable holds finds it in
//! two or three cache misses instead of a skip-list search (about twenty dependent ones in a
//! 64 MiB memtable: the top symbol of a read-modify-write transaction's profile, 24 %).
//! RocksDB's hash-linked-list memtable serves point reads by hash too, but gives up the
//! ordered skip list for it; this keeps the list and adds the table beside it.
//!
//! 1. Sets of [`WAYS`] slots, one cache line each, as many as the key filter's budget
//!    (`Options::memtable_filter_ratio`) holds (a power of two), allocated at the first
//!    insert. A slot holds a node index and a tag, the high half of the key's
//!    [`strata_sstable::hash64`]; the low half picks the set. A key's slot is the one in its
//!    set with its tag: a read loads one line and, unless two keys of a set share a 32-bit
//!    tag, compares one node's key. (A first version was direct-mapped, one 4-byte node
//!    index per bucket: with 100,000 keys in 262,144 buckets, 17 % of the keys lost their
//!    bucket to another, and their reads and writes went back to searching the list.)
//! 2. The inserting writer (one at a time: the memtable's writer lock is held from the skip
//!    list's insert to the slot's store) stores a node's index in its key's slot when the
//!    node is the first of its user key in the list, that is, when the entry before it holds
//!    another key: the slot with the key's tag, else an empty one, else the one naming the
//!    oldest node (the smallest index: nodes are numbered as they are inserted). A node
//!    inserted behind a newer version of its key (a range of seqnos allocated earlier and
//!    written later) leaves the set as it is. So a slot that names a node of key `k` names
//!    `k`'s first node: any later first node of `k` replaced it (a set holds one slot per
//!    tag), and another key that takes the slot only sends `k`'s reads back to the search.
//! 3. A reader that finds a node of its own key walks level-0 links from it, past versions
//!    newer than its snapshot, while the key matches: every version of a key follows its
//!    first node in the list (newest first), so the walk finds what a search would. A version
//!    a reader may see was published after its insert (bucket store included) finished, and
//!    the reader loaded the published seqno (acquire) before the bucket, so no visible version
//!    sorts before the node the bucket gives it. The walk stops after [`WALK`] nodes (a long
//!    run of versions newer than an old snapshot) and the search takes over.
//! 4. A slot naming another key, or none, says nothing: the filter and the search answer.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::skiplist::Position;

/// Slots per set: 8 slots of 8 bytes, one cache line.
pub(crate) const WAYS: usize = 8;

/// An empty slot: no node has index `u32::MAX`.
const EMPTY: u64 = u64::MAX;

/// Nodes a reader walks from a key's first node before it searches instead.
pub(crate) const WALK: usize = 4;

/// One set of slots, each `tag << 32 | node index`, on its own cache line.
#[repr(C, align(64))]
#[derive(Debug)]
struct Set([AtomicU64; WAYS]);

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct PointIndex {
    /// Empty until the first insert.
    sets: OnceLock<Box<[Set]>>,
    /// The number of sets less one (a power of two less one); no sets when `None`.
    mask: Option<usize>,
}

fn tag(hash: u64) -> u64 {
    hash >> 32
}

fn node(slot: u64) -> u32 {
    slot as u32
}

impl PointIndex {
    /// An index of about `bytes` bytes (rounded down to a power of two of sets; under two
    /// sets, 128 bytes: none).
    pub(crate) fn new(bytes: usize) -> Self {
        let sets = bytes / size_of::<Set>();
        let mask = (sets >= 2).then(|| (1usize << sets.ilog2()) - 1);
        PointIndex {
            sets: OnceLock::new(),
            mask,
        }
    }

    fn set_of(sets: &[Set], mask: usize, hash: u64) -> &Set {
        &sets[(hash as usize) & mask]
    }

    /// Records that `at` is now the first node of the key whose hash is `hash`. REQUIRES: the
    /// memtable's writer lock, and `at` linked.
    pub(crate) fn set(&self, hash: u64, at: Position) {
        let Some(mask) = self.mask else {
            return;
        };
        let sets = self.sets.get_or_init(|| {
            (0..=mask)
                .map(|_| Set(std::array::from_fn(|_| AtomicU64::new(EMPTY))))
                .collect()
        });
        let set = Self::set_of(sets, mask, hash);
        let tag = tag(hash);
        // Only this writer stores slots: relaxed loads see its own stores.
        let slots: [u64; WAYS] = std::array::from_fn(|i| set.0[i].load(Ordering::Relaxed));
        let way = slots
            .iter()
            .position(|&slot| slot != EMPTY && slot >> 32 == tag)
            .or_else(|| slots.iter().position(|&slot| slot == EMPTY))
            .unwrap_or_else(|| {
                (0..WAYS)
                    .min_by_key(|&i| node(slots[i]))
                    .unwrap_or_default()
            });
        set.0[way].store(tag << 32 | u64::from(at.index()), Ordering::Release);
    }

    /// The node last recorded for a key with hash `hash`, if any: a candidate, whose key the
    /// caller compares with its own.
    pub(crate) fn get(&self, hash: u64) -> Option<Position> {
        let sets = self.sets.get()?;
        let set = Self::set_of(sets, self.mask?, hash);
        let tag = tag(hash);
        set.0.iter().find_map(|slot| {
            let slot = slot.load(Ordering::Acquire);
            (slot != EMPTY && slot >> 32 == tag).then(|| Position::from_index(node(slot)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hash in set `set` with tag `tag`.
    fn hash(tag: u64, set: u64) -> u64 {
        tag << 32 | set
    }

    #[test]
    fn a_key_keeps_its_slot_until_its_set_overflows() {
        let index = PointIndex::new(4096);
        assert_eq!(index.get(hash(1, 5)), None, "nothing set yet");
        index.set(hash(1, 5), Position::from_index(7));
        index.set(hash(2, 6), Position::from_index(8));
        assert_eq!(index.get(hash(1, 5)), Some(Position::from_index(7)));
        assert_eq!(index.get(hash(2, 6)), Some(Position::from_index(8)));
        // A newer first node of the same key replaces its slot.
        index.set(hash(1, 5), Position::from_index(9));
        assert_eq!(index.get(hash(1, 5)), Some(Position::from_index(9)));
        // Seven more keys in set 5 (64 sets: 5 + 64 is set 5 too) fill it; each is kept.
        for k in 0..7u32 {
            index.set(
                hash(10 + u64::from(k), 5 + 64),
                Position::from_index(100 + k),
            );
        }
        assert_eq!(index.get(hash(1, 5)), Some(Position::from_index(9)));
        for k in 0..7u32 {
            assert_eq!(
                index.get(hash(10 + u64::from(k), 5)),
                Some(Position::from_index(100 + k))
            );
        }
        // A ninth key takes the slot of the oldest node, key 1's (node 9).
        index.set(hash(30, 5), Position::from_index(200));
        assert_eq!(index.get(hash(1, 5)), None, "evicted");
        assert_eq!(index.get(hash(30, 5)), Some(Position::from_index(200)));
        assert_eq!(index.get(hash(10, 5)), Some(Position::from_index(100)));
    }

    #[test]
    fn without_budget_there_is_no_index() {
        let index = PointIndex::new(64);
        index.set(1, Position::from_index(1));
        assert_eq!(index.get(1), None);
    }
}
