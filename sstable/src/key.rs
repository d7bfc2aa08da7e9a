//! Internal keys: `(user_key, seqno, kind)`, ordered by user key ascending (bytewise) and then
//! by sequence number descending, so the newest version of a key comes first. The ordering is
//! the format's own: keys are stored as separate fields and compared as a tuple, never as
//! concatenated bytes under a custom comparator.

use std::cmp::Ordering;

use crate::format::{MAX_SEQNO, ValueKind};

/// A borrowed internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InternalKey<'a> {
    /// The caller's key.
    pub user_key: &'a [u8],
    /// Sequence number, at most [`MAX_SEQNO`].
    pub seqno: u64,
    /// Put or Delete.
    pub kind: ValueKind,
}

impl InternalKey<'_> {
    /// The ordering of the format: user key ascending, then seqno descending. Two entries of
    /// one table never share `(user_key, seqno)`, so the kind never decides.
    pub fn cmp_order(&self, other: &InternalKey<'_>) -> Ordering {
        compare(self.user_key, self.seqno, other.user_key, other.seqno)
    }
}

/// Compares `(a_key, a_seqno)` with `(b_key, b_seqno)` in table order.
pub(crate) fn compare(a_key: &[u8], a_seqno: u64, b_key: &[u8], b_seqno: u64) -> Ordering {
    crate::coding::compare_keys(a_key, b_key).then(b_seqno.cmp(&a_seqno))
}

/// Packs seqno and kind into an entry trailer: `seqno << 8 | kind`.
pub(crate) fn pack_trailer(seqno: u64, kind: ValueKind) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno << 8) | u64::from(kind as u8)
}

/// Unpacks an entry trailer; `None` for an unknown kind byte.
pub(crate) fn unpack_trailer(trailer: u64) -> Option<(u64, ValueKind)> {
    let kind = ValueKind::from_byte((trailer & 0xff) as u8)?;
    Some((trailer >> 8, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first_within_a_user_key() {
        assert_eq!(compare(b"a", 5, b"a", 3), Ordering::Less);
        assert_eq!(compare(b"a", 3, b"b", 9), Ordering::Less);
        assert_eq!(compare(b"ab", 0, b"a", 9), Ordering::Greater);
        assert_eq!(compare(b"a", 4, b"a", 4), Ordering::Equal);
    }

    #[test]
    fn trailers_round_trip() {
        for (seqno, kind) in [
            (0, ValueKind::Put),
            (MAX_SEQNO, ValueKind::Delete),
            (77, ValueKind::Put),
        ] {
            assert_eq!(
                unpack_trailer(pack_trailer(seqno, kind)),
                Some((seqno, kind))
            );
        }
        assert_eq!(unpack_trailer(5 << 8), None);
    }
}
