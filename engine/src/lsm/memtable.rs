//! The memtable: a concurrent skip list (`crossbeam-skiplist`) of internal keys.
//!
//! 1. Entries are keyed by `(user_key, seqno)`, ordered by user key ascending and then seqno
//!    descending, so the newest version of a key comes first, as in a table.
//! 2. Only the commit leader inserts (one thread at a time); readers run concurrently and see
//!    an entry once it is linked. Readers ignore entries newer than their snapshot, which is
//!    how a half-inserted batch stays invisible: its seqnos are above the published one.
//! 3. Values, and keys over 30 bytes, are slices of the batch buffer they came in; shorter
//!    keys are copied into the skip-list node, so searches compare without a pointer chase.
//! 4. The size is an estimate (key + value + a fixed per-entry overhead) used to decide when to
//!    seal the memtable.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use strata_sstable::ValueKind;

use crate::lsm::SeqNo;
use crate::lsm::batch::BatchEntry;

/// Estimated bytes a skip-list node costs beyond its key and value: the node, its tower of
/// pointers and two `Bytes` handles.
/// TUNING: measured roughly with a counting allocator for 16-byte keys; only the flush trigger
/// depends on it.
const ENTRY_OVERHEAD_BYTES: usize = 96;

/// A memtable key: `(user_key, seqno)` in internal order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemKey {
    pub(crate) user_key: UserKey,
    pub(crate) seqno: SeqNo,
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.user_key
            .as_slice()
            .cmp(other.user_key.as_slice())
            .then_with(|| other.seqno.cmp(&self.seqno))
    }
}

/// Keys up to this long are stored in the skip list node itself.
const INLINE_KEY_BYTES: usize = 30;

/// A user key as the memtable holds it: inside the skip-list node when it is short (as most
/// keys are), so a search compares keys without following a pointer into another allocation
/// (a cache miss per comparison, which dominated insert profiles); longer keys share the
/// batch buffer they came in.
#[derive(Clone)]
pub(crate) enum UserKey {
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_BYTES],
    },
    Shared(Bytes),
}

impl UserKey {
    /// The key of a batch entry: copied inline when short, else a handle on the buffer.
    pub(crate) fn from_bytes(key: &Bytes) -> Self {
        if key.len() <= INLINE_KEY_BYTES {
            UserKey::copy(key)
        } else {
            UserKey::Shared(key.clone())
        }
    }

    /// A copy of `key` (no allocation when short).
    pub(crate) fn copy(key: &[u8]) -> Self {
        if key.len() <= INLINE_KEY_BYTES {
            let mut bytes = [0u8; INLINE_KEY_BYTES];
            bytes[..key.len()].copy_from_slice(key);
            UserKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            UserKey::Shared(Bytes::copy_from_slice(key))
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            UserKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            UserKey::Shared(bytes) => bytes,
        }
    }
}

impl std::ops::Deref for UserKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for UserKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for UserKey {}

impl std::fmt::Debug for UserKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UserKey")
            .field(&Bytes::copy_from_slice(self.as_slice()))
            .finish()
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One column family's memtable.
#[derive(Debug)]
pub(crate) struct Memtable {
    map: SkipMap<MemKey, (ValueKind, Bytes)>,
    approximate_bytes: AtomicUsize,
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

impl Memtable {
    pub(crate) fn new(first_log_number: u64) -> Self {
        Memtable {
            map: SkipMap::new(),
            approximate_bytes: AtomicUsize::new(0),
            deletions: AtomicU64::new(0),
            first_log_number,
        }
    }

    /// Inserts one batch entry. REQUIRES: the caller is the commit leader (one inserter at a
    /// time), and the entry's seqno is not yet published.
    pub(crate) fn insert(&self, entry: &BatchEntry) {
        let size = entry.key.len() + entry.value.len() + ENTRY_OVERHEAD_BYTES;
        if entry.kind == ValueKind::Delete {
            self.deletions.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.map.insert(
            MemKey {
                user_key: UserKey::from_bytes(&entry.key),
                seqno: entry.seqno,
            },
            (entry.kind, entry.value.clone()),
        );
        self.approximate_bytes
            .fetch_add(size, AtomicOrdering::Relaxed);
    }

    /// The newest version of `key` with a seqno at or below `snapshot`.
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo) -> Option<Found> {
        let probe = MemKey {
            user_key: UserKey::copy(key),
            seqno: snapshot,
        };
        let entry = self.map.lower_bound(Bound::Included(&probe))?;
        if entry.key().user_key.as_slice() != key {
            return None;
        }
        let (kind, value) = entry.value();
        Some(Found {
            seqno: entry.key().seqno,
            kind: *kind,
            value: value.clone(),
        })
    }

    /// The first entry strictly after `after` (or the first of all), in internal order.
    pub(crate) fn next_after(&self, after: Bound<&MemKey>) -> Option<(MemKey, ValueKind, Bytes)> {
        let entry = self.map.lower_bound(after)?;
        let (kind, value) = entry.value();
        Some((entry.key().clone(), *kind, value.clone()))
    }

    /// The last entry strictly before `before` (or the last of all), in internal order.
    pub(crate) fn prev_before(&self, before: Bound<&MemKey>) -> Option<(MemKey, ValueKind, Bytes)> {
        let entry = self.map.upper_bound(before)?;
        let (kind, value) = entry.value();
        Some((entry.key().clone(), *kind, value.clone()))
    }

    /// Every entry in internal order, for a flush.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&MemKey, ValueKind, &Bytes) -> bool) {
        for entry in self.map.iter() {
            let (kind, value) = entry.value();
            if !f(entry.key(), *kind, value) {
                break;
            }
        }
    }

    pub(crate) fn approximate_bytes(&self) -> usize {
        self.approximate_bytes.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn entries(&self) -> u64 {
        self.map.len() as u64
    }

    pub(crate) fn deletions(&self) -> u64 {
        self.deletions.load(AtomicOrdering::Relaxed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn first_log_number(&self) -> u64 {
        self.first_log_number
    }

    /// Entries with user keys in `[lower, upper)` and their estimated bytes, by walking them:
    /// exact, and cheap for the memtable sizes the engine allows.
    pub(crate) fn range_bytes(&self, lower: &[u8], upper: Option<&[u8]>) -> u64 {
        let start = MemKey {
            user_key: UserKey::copy(lower),
            seqno: SeqNo::MAX,
        };
        let mut bytes = 0u64;
        for entry in self.map.range(start..) {
            if upper.is_some_and(|upper| entry.key().user_key[..] >= *upper) {
                break;
            }
            bytes += (entry.key().user_key.len() + entry.value().1.len()) as u64;
        }
        bytes
    }
}
