//! What a store reports about itself: write stalls, per-family counts and sizes, level
//! statistics, tables' collected properties, range sizes, logs and snapshots. Split from
//! `store.rs`; every method reads one version (or one counter) and changes nothing.

use crate::cf::ColumnFamily;
use crate::error::Result;
use crate::store::Store;
use crate::sync::lock;
use crate::version::SuperVersion;

/// How long writers were held back (RocksDB's write stalls), since the store was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStalls {
    /// Write groups delayed by `Options::slowdown_delay` because level 0 or the sealed
    /// memtables were near their limit.
    pub slowdowns: u64,
    /// Write groups that stopped until background work caught up.
    pub stops: u64,
    /// Total time writers spent delayed or stopped.
    pub stalled: std::time::Duration,
}

/// One level of a column family: what it holds, and what flushes and compactions wrote to it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    /// Tables in the level.
    pub tables: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Flushes (level 0) or compactions (deeper levels) that wrote into the level.
    pub compactions: u64,
    /// Bytes those compactions read from the level above.
    pub read_from_above: u64,
    /// Bytes they read from this level (the tables they rewrote).
    pub read_from_level: u64,
    /// Bytes written into the level.
    pub written: u64,
    /// `written / read_from_above`: bytes written here per byte brought down (RocksDB's
    /// per-level "W-Amp"); 0 when nothing came down yet, 1 at level 0.
    pub write_amplification: f64,
    /// Time those flushes or compactions took.
    pub time: std::time::Duration,
}

/// One live table as [`Store::collected`] reports it.
#[derive(Clone, Debug)]
pub struct CollectedTable {
    /// The table's file number.
    pub number: u64,
    /// Entries, all versions and tombstones included.
    pub entries: u64,
    /// Tombstones.
    pub deletions: u64,
    /// The property asked for, if the table has it.
    pub property: Option<Vec<u8>>,
}

/// Counts for one column family, exact where cheap, for callers like a query planner.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CfStats {
    /// Stored entries, tombstones included, over memtables and tables. Every version of a key
    /// counts until compaction removes it, so this is an upper bound on live keys.
    pub entries: u64,
    /// Stored tombstones.
    pub deletions: u64,
    /// Estimated memtable bytes (active and sealed).
    pub memtable_bytes: u64,
    /// Memtables sealed and waiting for a flush.
    pub sealed_memtables: usize,
    /// Number of tables in each level.
    pub tables_per_level: Vec<usize>,
    /// Total size of the tables in bytes.
    pub table_bytes: u64,
    /// Per level, down to the deepest the store is configured with (`Options::num_levels`).
    pub levels: Vec<LevelStats>,
    /// Bytes flushed from memtables into level 0.
    pub flushed_bytes: u64,
    /// Every byte written into tables (flushes and compactions) per byte flushed: how many
    /// times, on average, data was written after the log.
    pub write_amplification: f64,
}

/// A column family's entries and bytes, in memtables and in tables ([`Store::sizes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfSizes {
    /// Entries in the memtables (active and sealed), tombstones included.
    pub memtable_entries: u64,
    /// Tombstones in the memtables.
    pub memtable_deletions: u64,
    /// Estimated memtable bytes.
    pub memtable_bytes: u64,
    /// Entries in the tables, tombstones and every version included.
    pub table_entries: u64,
    /// Tombstones in the tables.
    pub table_deletions: u64,
    /// Total size of the tables in bytes.
    pub table_bytes: u64,
}

/// What the memtables and tables of `version` hold.
fn sizes_of(version: &SuperVersion) -> CfSizes {
    let mut sizes = CfSizes::default();
    for mem in version.memtables() {
        sizes.memtable_entries += mem.entries();
        sizes.memtable_deletions += mem.deletions();
        sizes.memtable_bytes += mem.approximate_bytes() as u64;
    }
    for table in version.tables() {
        let properties = table.table.properties();
        sizes.table_entries += properties.entries;
        sizes.table_deletions += properties.deletions;
        sizes.table_bytes += table.meta.file_size;
    }
    sizes
}

impl Store {
    /// How long writers have been held back because flushes or compactions fell behind.
    pub fn write_stalls(&self) -> WriteStalls {
        *lock(&self.shared.stalls)
    }

    /// Counts for `cf`.
    pub fn stats(&self, cf: &ColumnFamily) -> Result<CfStats> {
        cf.shared.check_live()?;
        let version = cf.shared.current();
        let mut stats = CfStats {
            sealed_memtables: version.sealed.len(),
            tables_per_level: version.levels.iter().map(Vec::len).collect(),
            ..CfStats::default()
        };
        while stats.tables_per_level.last() == Some(&0) {
            stats.tables_per_level.pop();
        }
        let sizes = sizes_of(&version);
        stats.entries = sizes.memtable_entries + sizes.table_entries;
        stats.deletions = sizes.memtable_deletions + sizes.table_deletions;
        stats.memtable_bytes = sizes.memtable_bytes;
        stats.table_bytes = sizes.table_bytes;
        let io = lock(&cf.shared.io).clone();
        let mut total_written = 0;
        for (level, tables) in version
            .levels
            .iter()
            .enumerate()
            .take(self.shared.options.num_levels)
        {
            let io = io[level];
            total_written += io.written;
            let write_amplification = if level == 0 && io.written > 0 {
                1.0
            } else if level == 0 {
                0.0
            } else if io.read_upper > 0 {
                io.written as f64 / io.read_upper as f64
            } else {
                0.0
            };
            stats.levels.push(LevelStats {
                tables: tables.len(),
                bytes: tables.iter().map(|t| t.meta.file_size).sum(),
                compactions: io.runs,
                read_from_above: io.read_upper,
                read_from_level: io.read_same,
                written: io.written,
                write_amplification,
                time: std::time::Duration::from_micros(io.micros),
            });
        }
        stats.flushed_bytes = io[0].written;
        if stats.flushed_bytes > 0 {
            stats.write_amplification = total_written as f64 / stats.flushed_bytes as f64;
        }
        Ok(stats)
    }

    /// For each live table of `cf`: its number, counts, and engine-defined property `name`
    /// (from [`Hooks::property_collector`](crate::Hooks::property_collector)). Newest
    /// tables first within level 0, then level by level.
    pub fn collected(&self, cf: &ColumnFamily, name: &str) -> Result<Vec<CollectedTable>> {
        cf.shared.check_live()?;
        let version = cf.shared.current();
        Ok(version
            .tables()
            .map(|t| {
                let p = t.table.properties();
                CollectedTable {
                    number: t.meta.number,
                    entries: p.entries,
                    deletions: p.deletions,
                    property: p.user.get(name).cloned(),
                }
            })
            .collect())
    }

    /// The numbers of `cf`'s live tables, in the order [`Store::collected`] lists them: what
    /// a cache of collected properties is keyed by.
    pub fn table_numbers(&self, cf: &ColumnFamily) -> Result<Vec<u64>> {
        cf.shared.check_live()?;
        Ok(cf
            .shared
            .current()
            .tables()
            .map(|t| t.meta.number)
            .collect())
    }

    /// What `cf` holds, counted from one version without locks or allocation (what a query's
    /// planning asks on every query; [`Store::stats`] gathers much more).
    pub fn sizes(&self, cf: &ColumnFamily) -> Result<CfSizes> {
        cf.shared.check_live()?;
        Ok(sizes_of(&cf.shared.current()))
    }

    /// What `cf`'s memtables (the active one and those waiting for a flush) hold: entries,
    /// tombstones among them, and bytes. Exact, and cheap: the counts are kept as entries go in.
    pub fn memtable_counts(&self, cf: &ColumnFamily) -> Result<(u64, u64, u64)> {
        cf.shared.check_live()?;
        let version = cf.shared.current();
        let (mut entries, mut deletions, mut bytes) = (0, 0, 0);
        for mem in version.memtables() {
            entries += mem.entries();
            deletions += mem.deletions();
            bytes += mem.approximate_bytes() as u64;
        }
        Ok((entries, deletions, bytes))
    }

    /// Approximately how many bytes `cf` stores for keys in `[lower, upper)` (`None`: no upper
    /// bound): exact for memtables (keys and values), and for tables the span of data blocks
    /// the range covers, read from each table's index without touching its data.
    pub fn approximate_range_bytes(
        &self,
        cf: &ColumnFamily,
        lower: &[u8],
        upper: Option<&[u8]>,
    ) -> Result<u64> {
        cf.shared.check_live()?;
        let version = cf.shared.current();
        let mut bytes = 0;
        for mem in version.memtables() {
            bytes += mem.range_bytes(lower, upper);
        }
        for table in version.tables() {
            let start = table.table.approximate_offset(lower);
            let end = upper.map_or_else(
                || table.table.data_end_offset(),
                |u| table.table.approximate_offset(u),
            );
            bytes += end.saturating_sub(start);
        }
        Ok(bytes)
    }

    /// The numbers of the log files not yet deleted, oldest first (the last is being written).
    pub fn log_numbers(&self) -> Vec<u64> {
        let current = lock(&self.shared.writer).number;
        let mut numbers: Vec<u64> = lock(&self.shared.old_logs).keys().copied().collect();
        numbers.push(current);
        numbers
    }

    /// How many snapshots are alive.
    pub fn live_snapshots(&self) -> usize {
        self.shared.snapshots.len()
    }
}
