//! Snapshots: a sequence number a reader sees the store as of, registered so that flushes (and
//! compactions) keep every version it can see.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::SeqNo;
use crate::sync::lock;

/// The live snapshots' seqnos, with a count each.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// The live snapshots' seqnos, ascending.
    pub(crate) fn seqnos(&self) -> Vec<SeqNo> {
        lock(&self.live).keys().copied().collect()
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
    pub(crate) fn register(list: &Arc<SnapshotList>, seqno: SeqNo) -> Snapshot {
        *lock(&list.live).entry(seqno).or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(Registered {
                seqno,
                list: Arc::clone(list),
            }),
        }
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
