//! Snapshots: a sequence number a reader sees the store as of, registered so that flushes (and
//! compactions) keep every version it can see.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::SeqNo;
use crate::commit::Sequencer;
use crate::sync::lock;

/// The live snapshots' seqnos, with a count each.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
    /// The largest published seqno a flush or compaction has kept versions for (read and
    /// written under `live`'s lock): below it, versions another snapshot did not need may be
    /// gone, and the bottom level's oldest versions carry seqno 0, so a snapshot there is
    /// refused unless one is live at that very seqno.
    floor: std::sync::atomic::AtomicU64,
}

impl SnapshotList {
    /// What a flush or compaction must keep versions for, ascending: the live snapshots'
    /// seqnos and, last, the published seqno, read under the list's lock. A snapshot
    /// registered later is at or above that seqno ([`Snapshot::register_now`] reads it under
    /// the same lock), and every version above it is kept ([`crate::flush::Retention`]), so
    /// it loses nothing; with a shared sequencer, versions above it may not be published yet.
    pub(crate) fn retention_points(&self, seq: &Sequencer) -> Vec<SeqNo> {
        let live = lock(&self.live);
        let mut points: Vec<SeqNo> = live.keys().copied().collect();
        let published = seq.visible();
        if points.last().is_none_or(|&last| last < published) {
            points.push(published);
        }
        self.floor
            .fetch_max(published, std::sync::atomic::Ordering::Relaxed);
        points
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.live).values().sum()
    }
}

/// A consistent, read-only view of the store as of one moment. Reads through it see every
/// write committed before it was taken and none after. Cheap to clone; the versions it sees are
/// kept until the last clone is dropped.
#[derive(Clone, Debug)]
pub struct Snapshot {
    inner: Arc<Registered>,
}

#[derive(Debug)]
struct Registered {
    seqno: SeqNo,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    /// A snapshot at the published seqno of `seq`, read under the list's lock.
    pub(crate) fn register_now(list: &Arc<SnapshotList>, seq: &Sequencer) -> Snapshot {
        let mut live = lock(&list.live);
        let seqno = seq.visible();
        *live.entry(seqno).or_insert(0) += 1;
        drop(live);
        Snapshot {
            inner: Arc::new(Registered {
                seqno,
                list: Arc::clone(list),
            }),
        }
    }

    /// A snapshot at `seqno`, or `None` when a flush or compaction may already have dropped
    /// or renumbered versions it would see (`seqno` is below the newest point one kept
    /// versions for, and no snapshot is live there).
    pub(crate) fn register(list: &Arc<SnapshotList>, seqno: SeqNo) -> Option<Snapshot> {
        let mut live = lock(&list.live);
        let floor = list.floor.load(std::sync::atomic::Ordering::Relaxed);
        if seqno < floor && !live.contains_key(&seqno) {
            return None;
        }
        *live.entry(seqno).or_insert(0) += 1;
        drop(live);
        Some(Snapshot {
            inner: Arc::new(Registered {
                seqno,
                list: Arc::clone(list),
            }),
        })
    }

    /// The sequence number of the last write this snapshot sees.
    pub fn seqno(&self) -> SeqNo {
        self.inner.seqno
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut live = lock(&self.list.live);
        if let Some(count) = live.get_mut(&self.seqno) {
            *count -= 1;
            if *count == 0 {
                live.remove(&self.seqno);
            }
        }
    }
}
