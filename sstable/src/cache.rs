//! A bounded cache of decompressed blocks, shared by every table of a store.
//!
//! 1. Keys are `(table id, block offset)`; values are the decompressed bytes.
//! 2. The cache is split into 16 shards, each with its own lock and its own share of the
//!    capacity, so readers of different blocks rarely contend.
//! 3. Each shard evicts least-recently-used blocks until it is within its share. A block larger
//!    than a shard's share is not cached.
//!
//! Uncompressed blocks are not cached: they are read in place from the table's bytes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

/// Shard count. 16 keeps lock contention low for a few dozen reader threads.
const SHARDS: usize = 16;

type Key = (u64, u64);

/// A bounded, sharded LRU cache of decompressed blocks.
#[derive(Debug)]
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    capacity_bytes: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug, Default)]
struct Shard {
    capacity_bytes: usize,
    used_bytes: usize,
    clock: u64,
    blocks: HashMap<Key, (Bytes, u64)>,
    /// Last-use tick → key, oldest first.
    by_age: BTreeMap<u64, Key>,
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of decompressed blocks.
    pub fn new(capacity_bytes: usize) -> Self {
        let share = capacity_bytes / SHARDS;
        BlockCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        capacity_bytes: share,
                        ..Shard::default()
                    })
                })
                .collect(),
            capacity_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The configured capacity.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Bytes of blocks held now.
    pub fn usage_bytes(&self) -> usize {
        self.shards.iter().map(|s| lock(s).used_bytes).sum()
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    pub(crate) fn get(&self, table: u64, offset: u64) -> Option<Bytes> {
        let found = lock(self.shard(table, offset)).touch((table, offset));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    pub(crate) fn insert(&self, table: u64, offset: u64, block: Bytes) {
        lock(self.shard(table, offset)).insert((table, offset), block);
    }

    fn shard(&self, table: u64, offset: u64) -> &Mutex<Shard> {
        let mixed = (table ^ offset.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        &self.shards[(mixed >> 60) as usize % SHARDS]
    }
}

/// Locks a shard. A panic while holding the lock cannot leave a shard inconsistent in a way
/// that matters (it is a cache), so a poisoned lock is used as is.
fn lock(shard: &Mutex<Shard>) -> std::sync::MutexGuard<'_, Shard> {
    shard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shard {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn touch(&mut self, key: Key) -> Option<Bytes> {
        let now = self.tick();
        let (bytes, used) = self.blocks.get_mut(&key)?;
        self.by_age.remove(used);
        *used = now;
        self.by_age.insert(now, key);
        Some(bytes.clone())
    }

    fn insert(&mut self, key: Key, block: Bytes) {
        if block.len() > self.capacity_bytes || self.blocks.contains_key(&key) {
            return;
        }
        let now = self.tick();
        self.used_bytes += block.len();
        self.blocks.insert(key, (block, now));
        self.by_age.insert(now, key);
        while self.used_bytes > self.capacity_bytes {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            if let Some((bytes, _)) = self.blocks.remove(&oldest) {
                self.used_bytes -= bytes.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_within_capacity_and_evicts_the_least_recently_used() {
        let cache = BlockCache::new(16 * 1000);
        for offset in 0..1000u64 {
            cache.insert(1, offset * 4096, Bytes::from(vec![0u8; 100]));
            assert!(cache.usage_bytes() <= cache.capacity_bytes());
        }
        assert!(
            cache.usage_bytes() > cache.capacity_bytes() / 2,
            "the cache is used"
        );
        // The most recent block is there; the oldest is gone.
        assert!(cache.get(1, 999 * 4096).is_some());
        assert!(cache.get(1, 0).is_none());
        assert_eq!((cache.hits(), cache.misses()), (1, 1));
    }

    #[test]
    fn a_block_larger_than_a_shard_is_not_cached() {
        let cache = BlockCache::new(1600);
        cache.insert(1, 0, Bytes::from(vec![0u8; 101]));
        assert!(cache.get(1, 0).is_none());
        assert_eq!(cache.usage_bytes(), 0);
    }
}
