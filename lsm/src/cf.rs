//! Column families: named key spaces sharing the store's log, each with its own memtables and
//! tables.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::format::MAX_CF_NAME_BYTES;
use crate::sync::lock;
use crate::version::SuperVersion;

/// A handle to a column family: cheap to clone, valid until the family is dropped (then
/// operations through it fail with [`Error::NotFound`]). Use it only with the store that gave
/// it out.
#[derive(Clone)]
pub struct ColumnFamily {
    pub(crate) shared: Arc<CfShared>,
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnFamily")
            .field("id", &self.shared.id)
            .field("name", &self.shared.name)
            .finish()
    }
}

impl ColumnFamily {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Its id, unique in the store and never reused.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// Sets the bloom filter bits per key of the tables this family writes from now on
    /// (flushes, compactions, ingests), in place of the store's
    /// [`strata_sstable::TableOptions::bloom_bits_per_key`]. 0 writes no real filter (a table
    /// carries an 8-byte one that answers "maybe" to every key): for a family read only by
    /// ranges, which a filter never helps. Kept in memory only: set it after every open.
    pub fn set_bloom_bits_per_key(&self, bits: u32) {
        self.shared.bloom_bits.store(bits, Ordering::Relaxed);
    }
}

pub(crate) struct CfShared {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// REQUIRES for replacing it: the writer lock (memtable switch) or the versions lock
    /// (flush install); readers clone the `Arc` and let go.
    current: Mutex<Arc<SuperVersion>>,
    /// The current sources' level-0 tables (high half) and sealed memtables (low half), for
    /// the write path's back-pressure check without the lock and the shared count of
    /// `current` (both bounce between writing threads' cores).
    counts: AtomicU64,
    dropped: AtomicBool,
    /// Bytes flushed and compacted, per level.
    pub(crate) io: Mutex<Vec<LevelIo>>,
    /// Per level, the largest key of the last table an automatic compaction took from it: the
    /// next one starts after it, so every part of a level gets its turn (LevelDB's
    /// `compact_pointer_`). Kept in memory only.
    pub(crate) compact_pointer: Mutex<Vec<Option<Vec<u8>>>>,
    /// [`ColumnFamily::set_bloom_bits_per_key`]; `u32::MAX`: the store's.
    bloom_bits: AtomicU32,
}

/// What flushes and compactions did to one level.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LevelIo {
    /// Compactions (or, for level 0, flushes) that wrote into the level.
    pub(crate) runs: u64,
    /// Bytes read from the level above by compactions into this level (for level 0: 0).
    pub(crate) read_upper: u64,
    /// Bytes read from this level by compactions into it from above.
    pub(crate) read_same: u64,
    /// Bytes written into the level.
    pub(crate) written: u64,
    /// Time spent, in microseconds.
    pub(crate) micros: u64,
}

impl CfShared {
    pub(crate) fn new(id: u32, name: String, version: SuperVersion) -> Self {
        CfShared {
            id,
            name,
            counts: AtomicU64::new(counts_of(&version)),
            current: Mutex::new(Arc::new(version)),
            dropped: AtomicBool::new(false),
            io: Mutex::new(vec![LevelIo::default(); crate::format::MAX_LEVELS]),
            compact_pointer: Mutex::new(vec![None; crate::format::MAX_LEVELS]),
            bloom_bits: AtomicU32::new(u32::MAX),
        }
    }

    /// The options its tables are written with: the store's `base`, with the family's
    /// filter setting.
    pub(crate) fn table_options(
        &self,
        base: &strata_sstable::TableOptions,
    ) -> strata_sstable::TableOptions {
        let mut options = base.clone();
        match self.bloom_bits.load(Ordering::Relaxed) {
            u32::MAX => {}
            bits => options.bloom_bits_per_key = bits,
        }
        options
    }

    /// The current sources.
    pub(crate) fn current(&self) -> Arc<SuperVersion> {
        Arc::clone(&lock(&self.current))
    }

    /// Replaces the sources with `change` applied to them.
    pub(crate) fn update(&self, change: impl FnOnce(&mut SuperVersion)) {
        let mut current = lock(&self.current);
        let mut next = SuperVersion::clone(&current);
        change(&mut next);
        self.counts.store(counts_of(&next), Ordering::Release);
        *current = Arc::new(next);
    }

    /// The current sources' level-0 tables and sealed memtables, as of the last update.
    pub(crate) fn l0_and_sealed(&self) -> (usize, usize) {
        let counts = self.counts.load(Ordering::Acquire);
        (
            (counts >> 32) as usize,
            (counts & u64::from(u32::MAX)) as usize,
        )
    }

    /// Adds one flush or compaction's counts to `level`.
    pub(crate) fn record_io(&self, level: usize, io: LevelIo) {
        if let Some(total) = lock(&self.io).get_mut(level) {
            total.runs += io.runs;
            total.read_upper += io.read_upper;
            total.read_same += io.read_same;
            total.written += io.written;
            total.micros += io.micros;
        }
    }

    pub(crate) fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }

    /// `NotFound` if the family was dropped.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.is_dropped() {
            return Err(Error::NotFound(format!(
                "column family {:?} was dropped",
                self.name
            )));
        }
        Ok(())
    }
}

/// `version`'s level-0 tables and sealed memtables, packed for [`CfShared::l0_and_sealed`].
fn counts_of(version: &SuperVersion) -> u64 {
    let l0 = version.levels.first().map_or(0, Vec::len);
    let clamp = |n: usize| {
        u64::try_from(n)
            .unwrap_or(u64::MAX)
            .min(u64::from(u32::MAX))
    };
    clamp(l0) << 32 | clamp(version.sealed.len())
}

/// Checks a new family's name: 1 to 255 bytes of printable characters.
pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_CF_NAME_BYTES {
        return Err(Error::InvalidArgument(format!(
            "column family name must be 1 to {MAX_CF_NAME_BYTES} bytes, got {}",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "column family name {name:?} contains a control character"
        )));
    }
    Ok(())
}
