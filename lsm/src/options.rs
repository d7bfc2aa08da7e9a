//! Options for opening a store, writing and reading.

use std::sync::Arc;

use bytes::Bytes;
use strata_sstable::TableOptions;
use strata_wal::RecoveryMode;

use crate::fs::{FileSystem, OsFs};
use crate::snapshot::Snapshot;

/// The largest `max_group_bytes` allowed (256 MiB).
pub const MAX_GROUP_BYTES: usize = 256 << 20;

// One group (the leader's batch, up to MAX_BATCH_BYTES, plus followers up to max_group_bytes)
// must fit in an empty memtable. An encoded entry takes at least 3 bytes (kind, family, key
// length). (Loom builds use a small arena.)
#[cfg(not(loom))]
const _: () = assert!(
    crate::memtable::MAX_ENTRIES > ((crate::batch::MAX_BATCH_BYTES + MAX_GROUP_BYTES) / 3) as u64
);

/// How a store is opened and run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The file system all I/O goes through (default: the real one).
    pub fs: Arc<dyn FileSystem>,
    /// Create the store when the directory holds none (default true).
    pub create_if_missing: bool,
    /// A family's memtable is sealed and flushed once it holds about this many bytes
    /// (default 64 MiB, as RocksDB's `write_buffer_size`).
    pub write_buffer_bytes: usize,
    /// When the logs not yet deletable exceed this many bytes, the families whose unflushed
    /// data keeps the oldest one alive are flushed, so an idle family cannot pin logs forever
    /// (default 256 MiB, four memtables' worth, like RocksDB's `max_total_wal_size` default).
    pub max_total_wal_bytes: u64,
    /// The manifest is rewritten as one snapshot edit once it exceeds this size (default 4 MiB).
    pub manifest_rewrite_bytes: u64,
    /// Each memtable keeps a bloom filter of its keys this fraction of `write_buffer_bytes` in
    /// size (default 1/64: 1 MiB for 64 MiB memtables, ~20 bits per key of 100-byte values),
    /// allocated at its first write, so a read of a key it lacks skips the skip-list search;
    /// and a point index of the same size (hash → the key's newest entry), so most reads of a
    /// key it holds skip the search too. 0 turns both off; at most 0.25. Neither is counted
    /// in the memtable's size.
    pub memtable_filter_ratio: f64,
    /// Capacity of the block cache shared by every table (default 64 MiB).
    pub block_cache_bytes: usize,
    /// Most bytes of batches one group commit takes (default 1 MiB, as LevelDB).
    pub max_group_bytes: usize,
    /// How tables are built.
    pub table: TableOptions,
    /// What to do with damage found in the logs at open (default
    /// [`RecoveryMode::TolerateTornTail`]: a torn tail is dropped, damage to synced data stops
    /// the open).
    pub recovery_mode: RecoveryMode,
    /// Levels per column family, 2 to 16 (default 7, as RocksDB). Level 0 holds flushed
    /// memtables, which may overlap; each deeper level is one sorted run.
    pub num_levels: usize,
    /// Level 0 is compacted into level 1 once it holds this many tables (default 4).
    pub l0_compaction_trigger: usize,
    /// The size level 1 is kept under (default 256 MiB, as RocksDB's
    /// `max_bytes_for_level_base`); level n+1 may hold `level_size_ratio` times level n.
    pub level1_bytes: u64,
    /// The growth factor between levels (default 10).
    pub level_size_ratio: u64,
    /// Compaction splits its output into tables of about this size (default 64 MiB); a key's
    /// versions are never split between two tables.
    pub target_table_bytes: u64,
    /// Threads running compactions, besides the flush thread (default 1; at least 1).
    pub compaction_threads: usize,
    /// Threads one `compact_range` step may merge with, each a key range of the input
    /// (default 2; at least 1; inputs under a quarter of `target_table_bytes` take one). Background compactions take one
    /// each: they share the cores with the writes.
    pub max_subcompactions: usize,
    /// Writes are delayed (by `slowdown_delay` per group commit) while a family they write has
    /// this many level-0 tables (default 20, as RocksDB)...
    pub l0_slowdown_trigger: usize,
    /// ...and stop until compaction catches up at this many (default 36, as RocksDB).
    pub l0_stop_trigger: usize,
    /// Writes stop while a family they write has this many sealed memtables waiting for the
    /// flush thread, and are delayed at one fewer (default 4).
    pub max_sealed_memtables: usize,
    /// How long a delayed write group waits (default 1 ms, as LevelDB).
    pub slowdown_delay: std::time::Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fs: Arc::new(OsFs),
            create_if_missing: true,
            write_buffer_bytes: 64 << 20,
            max_total_wal_bytes: 256 << 20,
            manifest_rewrite_bytes: 4 << 20,
            memtable_filter_ratio: 1.0 / 64.0,
            block_cache_bytes: 64 << 20,
            max_group_bytes: 1 << 20,
            table: TableOptions::default(),
            recovery_mode: RecoveryMode::default(),
            num_levels: 7,
            l0_compaction_trigger: 4,
            level1_bytes: 256 << 20,
            level_size_ratio: 10,
            target_table_bytes: 64 << 20,
            compaction_threads: 1,
            max_subcompactions: 2,
            l0_slowdown_trigger: 20,
            l0_stop_trigger: 36,
            max_sealed_memtables: 4,
            slowdown_delay: std::time::Duration::from_millis(1),
        }
    }
}

impl Options {
    /// The size of each memtable's key filter, in bytes.
    pub(crate) fn memtable_filter_bytes(&self) -> usize {
        // The ratio was validated (0 to 0.25, so not NaN): the product fits.
        (self.write_buffer_bytes as f64 * self.memtable_filter_ratio) as usize
    }

    /// Checks the options that must be consistent with each other.
    pub(crate) fn validate(&self) -> crate::error::Result<()> {
        let invalid = |what: String| Err(crate::error::Error::InvalidArgument(what));
        if !(0.0..=0.25).contains(&self.memtable_filter_ratio) {
            return invalid(format!(
                "memtable_filter_ratio must be 0 to 0.25, got {}",
                self.memtable_filter_ratio
            ));
        }
        if !(2..=crate::format::MAX_LEVELS).contains(&self.num_levels) {
            return invalid(format!(
                "num_levels must be 2 to {}, got {}",
                crate::format::MAX_LEVELS,
                self.num_levels
            ));
        }
        if self.l0_compaction_trigger == 0
            || self.compaction_threads == 0
            || self.max_subcompactions == 0
        {
            return invalid(
                "l0_compaction_trigger, compaction_threads and max_subcompactions must be at \
                 least 1"
                    .into(),
            );
        }
        if self.level_size_ratio < 2 || self.level1_bytes == 0 || self.target_table_bytes == 0 {
            return invalid(
                "level_size_ratio must be at least 2, level1_bytes and target_table_bytes above 0"
                    .into(),
            );
        }
        if self.l0_slowdown_trigger > self.l0_stop_trigger
            || self.l0_stop_trigger <= self.l0_compaction_trigger
        {
            return invalid(format!(
                "need l0_compaction_trigger ({}) < l0_stop_trigger ({}) and \
                 l0_slowdown_trigger ({}) <= l0_stop_trigger",
                self.l0_compaction_trigger, self.l0_stop_trigger, self.l0_slowdown_trigger
            ));
        }
        // A group's entries must fit in one empty memtable: at 3 bytes or more per entry, the
        // largest batch plus this budget stays under the memtable's capacity.
        if self.max_group_bytes > MAX_GROUP_BYTES {
            return invalid(format!(
                "max_group_bytes must be at most {MAX_GROUP_BYTES}, got {}",
                self.max_group_bytes
            ));
        }
        if self.max_sealed_memtables == 0 {
            return invalid("max_sealed_memtables must be at least 1".into());
        }
        Ok(())
    }
}

/// How one write is committed.
///
/// The default is `sync: false`, as in RocksDB, LevelDB and fjall: the write is in the
/// operating system's page cache when `write` returns, so it survives the process crashing or
/// being killed, but not a power failure or kernel crash until a later synced write (or
/// [`crate::Store::sync_wal`]) covers it. Group commit makes `sync: true` cheap when many
/// threads write at once; a single thread pays one `fdatasync` per write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Return only once the write is on stable storage.
    pub sync: bool,
}

impl WriteOptions {
    /// `sync: true`.
    pub fn synced() -> Self {
        WriteOptions { sync: true }
    }
}

/// How an iterator reads: at which snapshot, within which bounds.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    pub(crate) snapshot: Option<Snapshot>,
    pub(crate) lower: Option<Bytes>,
    pub(crate) upper: Option<Bytes>,
}

impl ReadOptions {
    /// Read as of `snapshot` (default: the latest state when the iterator is made).
    pub fn snapshot(mut self, snapshot: &Snapshot) -> Self {
        self.snapshot = Some(snapshot.clone());
        self
    }

    /// Only keys at or after `key`.
    pub fn lower_bound(mut self, key: &[u8]) -> Self {
        self.lower = Some(Bytes::copy_from_slice(key));
        self
    }

    /// Only keys before `key`.
    pub fn upper_bound(mut self, key: &[u8]) -> Self {
        self.upper = Some(Bytes::copy_from_slice(key));
        self
    }

    /// Only keys starting with `prefix`.
    pub fn prefix(mut self, prefix: &[u8]) -> Self {
        self.lower = Some(Bytes::copy_from_slice(prefix));
        self.upper = prefix_successor(prefix).map(Bytes::from);
        self
    }
}

/// The smallest key greater than every key starting with `prefix`; `None` when there is none
/// (the prefix is empty or all 0xff).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_successor;

    #[test]
    fn prefix_successor_bounds_every_key_with_the_prefix() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
