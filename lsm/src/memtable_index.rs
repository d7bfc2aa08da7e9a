//! A memtable's point index: a direct-mapped table from a user key's hash to the skip-list
//! node holding the key's newest version, so a read of a key the memtable holds finds it in
//! two or three cache misses instead of a skip-list search (about twenty dependent ones in a
//! 64 MiB memtable: the top symbol of a read-modify-write transaction's profile, 24 %).
//! RocksDB's hash-linked-list memtable serves point reads by hash too, but gives up the
//! ordered skip list for it; this keeps the list and adds the table beside it.
//!
//! 1. One bucket (a node index, 4 bytes) per 4 bytes of the key filter's budget
//!    (`Options::memtable_filter_ratio`), a power of two, allocated at the first insert.
//!    A key's bucket is picked by the low half of its [`strata_sstable::hash64`] (the filter uses the high
//!    half).
//! 2. The inserting writer (one at a time: the memtable's writer lock is held from the skip
//!    list's insert to the bucket's store) stores a node's index in its key's bucket when the
//!    node is the first of its user key in the list, that is, when the entry before it holds
//!    another key. A node inserted behind a newer version of its key (a range of seqnos
//!    allocated earlier and written later) leaves the bucket as it is. So a bucket that names
//!    a node of key `k` names `k`'s first node: any later first node of `k` replaced it, and
//!    a node of another key that replaces it only sends `k`'s reads back to the search.
//! 3. A reader that finds a node of its own key walks level-0 links from it, past versions
//!    newer than its snapshot, while the key matches: every version of a key follows its
//!    first node in the list (newest first), so the walk finds what a search would. A version
//!    a reader may see was published after its insert (bucket store included) finished, and
//!    the reader loaded the published seqno (acquire) before the bucket, so no visible version
//!    sorts before the node the bucket gives it. The walk stops after [`WALK`] nodes (a long
//!    run of versions newer than an old snapshot) and the search takes over.
//! 4. A bucket naming another key, or none, says nothing: the filter and the search answer.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::skiplist::Position;

/// An empty bucket.
const EMPTY: u32 = u32::MAX;

/// Nodes a reader walks from a key's first node before it searches instead.
pub(crate) const WALK: usize = 4;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct PointIndex {
    /// Node indexes, [`EMPTY`] for none; empty until the first insert.
    buckets: OnceLock<Box<[AtomicU32]>>,
    /// `buckets.len() - 1` (a power of two less one); 0 with no buckets.
    mask: usize,
}

impl PointIndex {
    /// An index of about `bytes` bytes (rounded down to a power of two of buckets; under 64
    /// bytes: none).
    pub(crate) fn new(bytes: usize) -> Self {
        let buckets = bytes / size_of::<AtomicU32>();
        let mask = if buckets < 16 {
            0
        } else {
            (1usize << buckets.ilog2()) - 1
        };
        PointIndex {
            buckets: OnceLock::new(),
            mask,
        }
    }

    fn slot(&self, hash: u64) -> usize {
        (hash as usize) & self.mask
    }

    /// Records that `at` is now the first node of the key whose hash is `hash`. REQUIRES: the
    /// memtable's writer lock, and `at` linked.
    pub(crate) fn set(&self, hash: u64, at: Position) {
        if self.mask == 0 {
            return;
        }
        let buckets = self
            .buckets
            .get_or_init(|| (0..=self.mask).map(|_| AtomicU32::new(EMPTY)).collect());
        buckets[self.slot(hash)].store(at.index(), Ordering::Release);
    }

    /// The node last recorded for a key with hash `hash`, if any: a candidate, whose key the
    /// caller compares with its own.
    pub(crate) fn get(&self, hash: u64) -> Option<Position> {
        let buckets = self.buckets.get()?;
        let index = buckets[self.slot(hash)].load(Ordering::Acquire);
        (index != EMPTY).then(|| Position::from_index(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_the_last_node_set_for_its_hash() {
        let index = PointIndex::new(1024);
        assert_eq!(index.get(5), None, "nothing set yet");
        index.set(5, Position::from_index(7));
        index.set(6, Position::from_index(8));
        assert_eq!(index.get(5), Some(Position::from_index(7)));
        assert_eq!(index.get(6), Some(Position::from_index(8)));
        // 256 buckets: hash 5 + 256 shares hash 5's bucket and replaces it.
        index.set(5 + 256, Position::from_index(9));
        assert_eq!(index.get(5), Some(Position::from_index(9)));
    }

    #[test]
    fn without_budget_there_is_no_index() {
        let index = PointIndex::new(32);
        index.set(1, Position::from_index(1));
        assert_eq!(index.get(1), None);
    }
}
