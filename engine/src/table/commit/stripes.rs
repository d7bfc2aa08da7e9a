//! Per-key lock stripes: the read-modify-write of a row and its index entries takes the
//! stripes of its keys, in stripe order, so two writers of one key take turns and two
//! batches cannot deadlock.

use std::sync::{Mutex, MutexGuard};

/// Number of key lock stripes.
/// TUNING: a power of two well above the writer threads of an embedded database, so two
/// writers of different keys rarely share one (RocksDB's point-lock manager uses 16 stripes
/// of hash maps; a plain mutex per stripe needs more of them).
const STRIPES: usize = 1024;

/// What [`Stripes::lock_all`] tells a test's observer.
#[cfg(test)]
pub(crate) const LOCK_ALL: &str = "lock_all begins";

/// Mutexes guarding the read-modify-write of a row and its index entries.
pub(crate) struct Stripes {
    locks: Vec<Mutex<()>>,
    /// Tests: told each time a `lock_all` begins (DDL waiting for the writers that read the
    /// old definition), so a test holding a stripe knows the DDL now waits for it.
    #[cfg(test)]
    pub(crate) on_lock_all: Mutex<Option<std::sync::mpsc::Sender<&'static str>>>,
}

impl Stripes {
    pub(crate) fn new() -> Self {
        Stripes {
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            #[cfg(test)]
            on_lock_all: Mutex::new(None),
        }
    }

    /// Locks every stripe, in order: no row of any table changes until they are dropped.
    pub(crate) fn lock_all(&self) -> Vec<MutexGuard<'_, ()>> {
        #[cfg(test)]
        if let Some(events) = self
            .on_lock_all
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            let _ = events.send(LOCK_ALL);
        }
        self.locks
            .iter()
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    /// Locks the stripes of `keys`, in stripe order.
    pub(crate) fn lock<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut ids: Vec<usize> = keys
            .into_iter()
            .map(|k| (crate::table::codec::format::shard_hash(k) % STRIPES as u64) as usize)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|i| self.locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }
}
