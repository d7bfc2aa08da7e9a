//! The memtable's keys: a user key (inline up to 30 bytes) and a seqno, in internal order
//! (user key ascending, then seqno descending: the newest version of a key first).

use std::cmp::Ordering;

use bytes::Bytes;

use crate::SeqNo;
#[cfg(doc)]
use crate::skiplist;

/// A memtable key: `(user_key, seqno)` in internal order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemKey {
    pub(crate) user_key: UserKey,
    pub(crate) seqno: SeqNo,
}

impl Ord for MemKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.user_key
            .cmp(&other.user_key)
            .then_with(|| other.seqno.cmp(&self.seqno))
    }
}

/// Keys up to this long are stored in the skip list node itself: 30 bytes keep a `MemKey` at
/// 40 bytes, so a search step reads one cache line (see [`skiplist::search_bytes`]).
pub(super) const INLINE_KEY_BYTES: usize = 30;

/// A user key as the memtable holds it: inside the skip-list node when it is short (as most
/// keys are), so a search compares keys without following a pointer into another allocation
/// (a cache miss per comparison, which dominated insert profiles); a longer key in an
/// allocation of its own. (Not a slice of a shared buffer, as values are: a `Bytes` handle is
/// 32 bytes where a box is 16, and those 16 bytes hold 8 more bytes of inline key.)
#[derive(Clone)]
pub(crate) enum UserKey {
    Inline {
        len: u8,
        bytes: [u8; INLINE_KEY_BYTES],
    },
    Boxed(Box<[u8]>),
}

impl UserKey {
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
            UserKey::Boxed(key.into())
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            UserKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            UserKey::Boxed(bytes) => bytes,
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

impl Ord for UserKey {
    /// Bytewise order. Two inline keys compare as big-endian integers over their zero-padded
    /// bytes, then by length: no call into `memcmp` on the search path. The padding cannot
    /// mislead: where the padded bytes are equal, the shorter key is a prefix of the longer
    /// one (followed only by zeros), which bytewise order also puts first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (
                UserKey::Inline { len, bytes },
                UserKey::Inline {
                    len: other_len,
                    bytes: other_bytes,
                },
            ) => padded_words(bytes)
                .cmp(&padded_words(other_bytes))
                .then(len.cmp(other_len)),
            _ => self.as_slice().cmp(other.as_slice()),
        }
    }
}

impl PartialOrd for UserKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

const _: () = assert!(
    INLINE_KEY_BYTES == 30,
    "padded_words reads exactly 30 bytes"
);
const _: () = assert!(size_of::<MemKey>() == 40);
// Loom's atomics are larger than std's.
#[cfg(not(loom))]
const _: () =
    assert!(crate::skiplist::search_bytes::<MemKey, (strata_sstable::ValueKind, Bytes)>() <= 64);

/// The inline bytes as big-endian words, compared in order: bytes 0-15, then 14-29
/// (overlapping by two bytes that the first word already found equal).
#[inline]
fn padded_words(bytes: &[u8; INLINE_KEY_BYTES]) -> (u128, u128) {
    let mut first = [0u8; 16];
    let mut second = [0u8; 16];
    first.copy_from_slice(&bytes[..16]);
    second.copy_from_slice(&bytes[14..30]);
    (u128::from_be_bytes(first), u128::from_be_bytes(second))
}

impl std::fmt::Debug for UserKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UserKey")
            .field(&Bytes::copy_from_slice(self.as_slice()))
            .finish()
    }
}

impl PartialOrd for MemKey {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
