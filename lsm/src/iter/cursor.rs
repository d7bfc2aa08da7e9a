//! The user's view of a column family: one visible value per key, as of a snapshot, within
//! bounds (LevelDB's `DBIter`).
//!
//! Forward, the cursor sits on the merged stream's newest visible version of a key and skips
//! the older versions and every version of a deleted key. Backward, the merged stream yields a
//! key's versions oldest first, so the cursor walks all of them, remembers the newest visible
//! one in `saved`, and stops on reaching the previous key. A failed source stops the cursor:
//! `valid()` turns false and `status()` holds the error, so a damaged table never makes
//! deleted keys reappear or live keys vanish silently.

use bytes::Bytes;
use strata_sstable::ValueKind;

use crate::SeqNo;
use crate::error::{Error, Result};
use crate::iter::merge::MergingIter;
use crate::snapshot::Snapshot;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// A positioned, bidirectional iterator over a column family, like RocksDB's iterator:
/// `seek*`, then `next`/`prev` while `valid()`. When `valid()` turns false, check `status()`.
///
/// It holds the memtables and tables it started with, so it sees one consistent state however
/// long it lives; hold it briefly, since those cannot be freed meanwhile.
pub struct Cursor {
    iter: MergingIter,
    snapshot: SeqNo,
    lower: Option<Bytes>,
    upper: Option<Bytes>,
    direction: Direction,
    valid: bool,
    /// The current key, either way (forward, copied when the cursor stops at it: the merged
    /// stream's key would cost a walk down the sources each time it is asked for); while
    /// `find_next` passes deleted keys, the last one passed.
    saved_key: Vec<u8>,
    /// Backward: the current value.
    saved_value: Bytes,
    error: Option<Error>,
    /// Keeps the versions this cursor reads registered for as long as it lives.
    _snapshot: Option<Snapshot>,
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("snapshot", &self.snapshot)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl Cursor {
    pub(crate) fn new(
        iter: MergingIter,
        snapshot: SeqNo,
        lower: Option<Bytes>,
        upper: Option<Bytes>,
        pin: Option<Snapshot>,
    ) -> Self {
        Cursor {
            _snapshot: pin,
            iter,
            snapshot,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            // Most keys fit: no growing from 8 to 16 to 32 bytes.
            saved_key: Vec::with_capacity(64),
            saved_value: Bytes::new(),
            error: None,
        }
    }

    /// Whether the cursor is at a key.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The error that stopped the cursor, if any.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    /// The current key. REQUIRES: `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        assert!(self.valid, "Cursor::key on an invalid cursor");
        &self.saved_key
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> Bytes {
        assert!(self.valid, "Cursor::value on an invalid cursor");
        match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Backward => self.saved_value.clone(),
        }
    }

    /// The current value, borrowed until the cursor moves: for a reader that looks at each
    /// value in place (a scan testing rows) rather than keeping it. REQUIRES: `valid()`.
    #[inline]
    pub fn value_ref(&self) -> &[u8] {
        assert!(self.valid, "Cursor::value_ref on an invalid cursor");
        match self.direction {
            Direction::Forward => self.iter.value_ref(),
            Direction::Backward => &self.saved_value,
        }
    }

    /// To the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek(&lower),
            None => {
                self.direction = Direction::Forward;
                self.iter.seek_to_first();
                self.find_next(false);
            }
        }
    }

    /// To the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Backward;
        match self.upper.clone() {
            Some(upper) => self.iter.seek_for_prev(&upper),
            None => self.iter.seek_to_last(),
        }
        self.find_prev();
    }

    /// To the first key at or after `key`.
    pub fn seek(&mut self, key: &[u8]) {
        let key = match &self.lower {
            Some(lower) if key < &lower[..] => lower.clone(),
            _ => Bytes::copy_from_slice(key),
        };
        self.direction = Direction::Forward;
        self.iter.seek(&key, self.snapshot);
        self.find_next(false);
    }

    /// To the last key at or before `key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.direction = Direction::Backward;
        self.iter.seek_for_prev(key);
        self.find_prev();
    }

    /// To the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward && self.next_alone() {
            return;
        }
        if self.direction == Direction::Backward {
            // The merged stream is just before the current key's versions: step into them,
            // then skip them like any passed key.
            self.direction = Direction::Forward;
            if self.iter.valid() {
                self.iter.next();
            } else {
                self.iter.seek_to_first();
            }
        } else {
            // `saved_key` holds the current key: its older versions are skipped.
            self.iter.next();
        }
        self.find_next(true);
    }

    /// To the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // Back past every version of the current key (in `saved_key`).
            loop {
                self.iter.prev();
                if !self.iter.valid() || self.iter.user_key() < &self.saved_key[..] {
                    break;
                }
            }
            self.direction = Direction::Backward;
        }
        self.find_prev();
    }

    /// Forward, while the merge has one source left and it reads a table (a scan of
    /// compacted data, an index's entries): steps that table's iterator directly, as
    /// [`Cursor::find_next`] would the merge, and hands over to the merge when the table
    /// runs out. False, having done nothing, when there is no such source. (Stepping through
    /// the merge and its sources was ~100 of a filtered scan's ~1,000 instructions a row.)
    #[inline]
    fn next_alone(&mut self) -> bool {
        let Some(table) = self.iter.sole_table() else {
            return false;
        };
        loop {
            table.next();
            if !table.valid() {
                break;
            }
            let (key, seqno, kind) = table.entry();
            if self
                .upper
                .as_deref()
                .is_some_and(|upper| !below(key, upper))
            {
                self.valid = false;
                return true;
            }
            // `saved_key` holds the current key or the last deleted one passed: older
            // versions of either are hidden.
            if seqno <= self.snapshot && !same_key(&self.saved_key, key) {
                self.saved_key.clear();
                self.saved_key.extend_from_slice(key);
                if kind == ValueKind::Put {
                    return true;
                }
            }
        }
        self.iter.after_sole_steps();
        self.find_next(true);
        true
    }

    /// Forward: stops at the next visible put at or after the merged stream's position,
    /// skipping versions of deleted keys and, when `skip`, of the key in `saved_key` (which
    /// then holds the last deleted key passed: no allocation per step).
    fn find_next(&mut self, skip: bool) {
        let mut hiding = skip;
        self.valid = false;
        while self.iter.valid() {
            if self.iter.failed() {
                self.check_sources();
                return;
            }
            let (key, seqno, kind) = self.iter.entry();
            if self
                .upper
                .as_deref()
                .is_some_and(|upper| !below(key, upper))
            {
                return;
            }
            if seqno <= self.snapshot && !(hiding && same_key(&self.saved_key, key)) {
                match kind {
                    ValueKind::Delete => {
                        hiding = true;
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(key);
                    }
                    ValueKind::Put => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(key);
                        self.valid = true;
                        return;
                    }
                }
            }
            self.iter.next();
        }
        self.check_sources();
    }

    /// Backward: walks the versions of the key before the merged stream's position (oldest
    /// first), keeping the newest visible one, and stops at the key before it.
    fn find_prev(&mut self) {
        let mut newest_kind = ValueKind::Delete;
        self.saved_key.clear();
        self.saved_value = Bytes::new();
        while self.iter.valid() {
            if self.check_sources() {
                self.valid = false;
                return;
            }
            let key = self.iter.user_key();
            if self.lower.as_deref().is_some_and(|lower| key < lower) {
                break;
            }
            let in_range = self.upper.as_deref().is_none_or(|upper| key < upper);
            if in_range && self.iter.seqno() <= self.snapshot {
                if newest_kind == ValueKind::Put && key < &self.saved_key[..] {
                    break; // the previous key: `saved` holds the answer
                }
                newest_kind = self.iter.kind();
                match newest_kind {
                    ValueKind::Delete => {
                        self.saved_key.clear();
                        self.saved_value = Bytes::new();
                    }
                    ValueKind::Put => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(key);
                        self.saved_value = self.iter.value();
                    }
                }
            }
            self.iter.prev();
        }
        if self.check_sources() {
            self.valid = false;
            return;
        }
        self.valid = newest_kind == ValueKind::Put;
        if !self.valid {
            self.saved_key.clear();
        }
    }

    /// Records a source's failure; true if there is one.
    fn check_sources(&mut self) -> bool {
        if self.error.is_none()
            && let Err(error) = self.iter.status()
        {
            self.error = Some(error);
        }
        self.error.is_some()
    }
}

/// Whether `a` and `b` are the same key. Neighbouring keys mostly differ in their first or
/// last eight bytes (a counter, a sequence; an encoded number differs near its front and
/// ends in a constant type tag), so those are compared as two words before calling the byte
/// comparison, which a key of at most 16 bytes never needs. (Comparing the last byte alone
/// left every table key ending in a type tag to `memcmp`: 5 % of a filtered scan.)
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        // Two overlapping four-byte words (a short key is a compact number or a short text:
        // a `memcmp` call for its four to seven bytes was ~20 of a filtered scan's ~1,000
        // instructions an entry), or the bytes themselves below four.
        let half = |k: &[u8], at: usize| {
            k.get(at..at + 4)
                .map(|w| u32::from_ne_bytes(w.try_into().unwrap_or([0; 4])))
        };
        return if n < 4 {
            a.iter().zip(b).all(|(x, y)| x == y)
        } else {
            half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4)
        };
    }
    let word = |k: &[u8], at: usize| {
        k.get(at..at + 8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
    };
    word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8) && (n <= 16 || a == b)
}

/// Whether `key` sorts before `bound`, byte by byte (`key < bound`): what a bounded cursor
/// asks at every step. Compared eight bytes at a time as big-endian words, in line: an
/// index's keys share a long prefix with the bound, and the call to `memcmp` that slice order
/// makes was 12 % of a covering read's time (`perf record -e cpu-clock`).
#[inline]
fn below(key: &[u8], bound: &[u8]) -> bool {
    let n = key.len().min(bound.len());
    let word = |k: &[u8], at: usize| {
        k.get(at..at + 8)
            .map(|w| u64::from_be_bytes(w.try_into().unwrap_or([0; 8])))
    };
    let mut at = 0;
    while at + 8 <= n {
        let (a, b) = (word(key, at), word(bound, at));
        if a != b {
            return a < b;
        }
        at += 8;
    }
    for (a, b) in key[at..n].iter().zip(&bound[at..n]) {
        if a != b {
            return a < b;
        }
    }
    key.len() < bound.len()
}

/// An iterator over `(key, value)` pairs of a column family, in key order, from either end
/// (`.rev()` works). Yields an error once, and then nothing, if a source fails.
pub struct Iter {
    front: Cursor,
    back: Cursor,
    /// The last key each end yielded; the ends stop when they meet.
    front_key: Option<Vec<u8>>,
    back_key: Option<Vec<u8>>,
    done: bool,
}

impl std::fmt::Debug for Iter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter").field("done", &self.done).finish()
    }
}

impl Iter {
    pub(crate) fn new(front: Cursor, back: Cursor) -> Self {
        Iter {
            front,
            back,
            front_key: None,
            back_key: None,
            done: false,
        }
    }

    fn take(&mut self, forward: bool) -> Option<Result<(Bytes, Bytes)>> {
        if self.done {
            return None;
        }
        let (cursor, first_step) = if forward {
            (&mut self.front, self.front_key.is_none())
        } else {
            (&mut self.back, self.back_key.is_none())
        };
        if first_step {
            if forward {
                cursor.seek_to_first();
            } else {
                cursor.seek_to_last();
            }
        } else if forward {
            cursor.next();
        } else {
            cursor.prev();
        }
        if let Err(error) = cursor.status() {
            self.done = true;
            return Some(Err(error));
        }
        if !cursor.valid() {
            self.done = true;
            return None;
        }
        let key = cursor.key().to_vec();
        let met = if forward {
            self.back_key
                .as_deref()
                .is_some_and(|back| key[..] >= *back)
        } else {
            self.front_key
                .as_deref()
                .is_some_and(|front| key[..] <= *front)
        };
        if met {
            self.done = true;
            return None;
        }
        let value = cursor.value();
        if forward {
            self.front_key = Some(key.clone());
        } else {
            self.back_key = Some(key.clone());
        }
        Some(Ok((Bytes::from(key), value)))
    }
}

impl Iterator for Iter {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.take(true)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.take(false)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{below, same_key};

    #[test]
    fn below_is_byte_order_at_every_length_and_place_of_difference() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(!below(&a, &a), "length {n}");
            for at in 0..n {
                for delta in [1u8, 0x80] {
                    let mut b = a.clone();
                    b[at] = b[at].wrapping_add(delta);
                    assert_eq!(below(&a, &b), a < b, "length {n}, differing at {at}");
                    assert_eq!(below(&b, &a), b < a, "length {n}, differing at {at}");
                }
                assert!(below(&a[..at], &a), "a prefix sorts first");
                assert!(!below(&a, &a[..at]));
            }
        }
    }

    #[test]
    fn same_key_is_byte_equality_at_every_length_and_place_of_difference() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(same_key(&a, &a.clone()), "length {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 1;
                assert!(!same_key(&a, &b), "length {n}, differing at {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_key(&a, &longer), "length {n} against {}", n + 1);
        }
    }
}
