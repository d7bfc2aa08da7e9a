//! The resolver: what a committing transaction is checked against (`docs/transactions.md`
//! §3). Each commit admitted while a transaction is live records the keys it writes, per
//! shard store and family, at its commit seqno; a transaction's commit checks the keys and
//! key ranges it read ([`ReadRange`]) against those written after its snapshot, and takes
//! its seqnos in the same critical section. Serial, as FoundationDB's resolver is, in one
//! process.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{ConflictCause, Error, Result};
use crate::lsm::SeqNo;
use crate::lsm::Sequencer;
use crate::lsm::sync::lock_spinning;

/// Names a column family of a shard store, by their numbers, for an error a caller reads.
pub(crate) type FamilyNames<'a> = dyn Fn(u32, u32) -> String + 'a;

/// What a transaction read that another commit wrote since its snapshot.
#[derive(Debug)]
pub(crate) enum Conflict {
    /// A commit recorded without its keys is above the snapshot.
    Unchecked,
    /// `key` of family `cf` of store `store`: read as itself, or inside a `range` read.
    Key {
        store: u32,
        cf: u32,
        key: Vec<u8>,
        range: bool,
    },
}

impl Conflict {
    fn into_error(self, names: &FamilyNames<'_>) -> Error {
        Error::TransactionConflict(match self {
            Conflict::Unchecked => ConflictCause::Unchecked,
            Conflict::Key {
                store,
                cf,
                key,
                range,
            } => {
                let family = names(store, cf);
                if range {
                    ConflictCause::RangeRead { family, key }
                } else {
                    ConflictCause::KeyRead { family, key }
                }
            }
        })
    }
}

/// A key range `[lower, upper)` of one family of one shard store that a transaction read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadRange {
    store: u32,
    cf: u32,
    lower: Vec<u8>,
    /// `None`: to the end of the family.
    upper: Option<Vec<u8>>,
    /// A single key (`lower`), not a range.
    point: bool,
}

impl ReadRange {
    pub(crate) fn new(store: usize, cf: u32, lower: &[u8], upper: Option<&[u8]>) -> Self {
        ReadRange {
            store: store as u32,
            cf,
            lower: lower.to_vec(),
            upper: upper.map(<[u8]>::to_vec),
            point: false,
        }
    }

    pub(crate) fn key(store: usize, cf: u32, key: &[u8]) -> Self {
        ReadRange {
            point: true,
            ..ReadRange::new(store, cf, key, None)
        }
    }

    pub(crate) fn whole(store: usize, cf: u32) -> Self {
        ReadRange::new(store, cf, &[], None)
    }
}

/// The keys written to one family of one shard store, as the resolver keeps them: each
/// with its last commit seqno. Looked up by a borrowed key: a check clones nothing.
type WrittenKeys = BTreeMap<Vec<u8>, SeqNo>;

/// Written keys recorded beyond this many are trimmed (see [`ResolverState::trim`]): a small
/// map keeps each check's lookups few and cache-warm (two threads in transactions spent
/// 5 % of their time in the checks with up to 1,024).
const TRIM_AT: usize = 128;

/// What a committing transaction asks the resolver to check.
pub(crate) struct Validation<'a> {
    /// Its snapshot: a write above it to something it read is a conflict.
    pub(crate) snapshot: SeqNo,
    pub(crate) reads: &'a [ReadRange],
}

/// The keys written by recent commits, with their commit seqnos, while transactions are live
/// (FoundationDB's resolver, in one process).
#[derive(Debug, Default)]
pub(crate) struct Resolver {
    /// Live transactions: the lock-free check a plain write makes before gathering its keys.
    live_count: AtomicUsize,
    state: std::sync::Mutex<ResolverState>,
}

#[derive(Debug, Default)]
struct ResolverState {
    /// The seqno each live transaction registered at (the visible seqno then; its snapshot
    /// is at or above it), with a count: writes at or below the smallest conflict with no
    /// live transaction.
    live: BTreeMap<SeqNo, usize>,
    /// Each key written, while a transaction was live, by a commit that a live transaction,
    /// or one yet to begin, may not have seen: its last commit seqno. Kept down to the oldest
    /// live registration, or to the visible seqno when none is live (a transaction beginning
    /// later sees everything up to it; commits still in flight stay, so one beginning now
    /// need not wait for them).
    writes: BTreeMap<(u32, u32), WrittenKeys>,
    /// The keys in `writes`.
    written: usize,
    /// The last seqno of a commit recorded without its keys (it had none, or no other
    /// transaction was live): a transaction beginning while it is in flight waits for it, and
    /// a live one whose snapshot is below it and that read anything conflicts.
    barrier: SeqNo,
    /// `written` after the last trim: the next trim waits until it has doubled.
    trimmed_at: usize,
}

impl ResolverState {
    /// The first conflict of `v`: a key it read written after its snapshot.
    fn conflict(&self, v: &Validation<'_>) -> Option<Conflict> {
        if self.barrier > v.snapshot && !v.reads.is_empty() {
            return Some(Conflict::Unchecked);
        }
        for r in v.reads {
            let Some(written) = self.writes.get(&(r.store, r.cf)) else {
                continue;
            };
            if r.point {
                if written
                    .get(r.lower.as_slice())
                    .is_some_and(|&at| at > v.snapshot)
                {
                    return Some(Conflict::Key {
                        store: r.store,
                        cf: r.cf,
                        key: r.lower.clone(),
                        range: false,
                    });
                }
                continue;
            }
            let upper = match &r.upper {
                Some(upper) => Bound::Excluded(upper.as_slice()),
                None => Bound::Unbounded,
            };
            let newer = written
                .range::<[u8], _>((Bound::Included(r.lower.as_slice()), upper))
                .find(|(_, at)| **at > v.snapshot);
            if let Some((key, _)) = newer {
                return Some(Conflict::Key {
                    store: r.store,
                    cf: r.cf,
                    key: key.to_vec(),
                    range: true,
                });
            }
        }
        None
    }

    /// Drops what no live transaction, nor one beginning later, can conflict with: writes at
    /// or below the oldest live registration, or below `visible` (a later transaction's
    /// snapshot is at or above it) when none is live.
    fn trim(&mut self, visible: SeqNo) {
        if self.written < TRIM_AT || self.written < 2 * self.trimmed_at {
            return;
        }
        let floor = match self.live.keys().next() {
            Some(&oldest) => oldest.min(visible),
            None => visible,
        };
        self.writes.retain(|_, written| {
            written.retain(|_, at| *at > floor);
            !written.is_empty()
        });
        self.written = self.writes.values().map(BTreeMap::len).sum();
        self.trimmed_at = self.written;
    }

    /// Records that `key` of family `cf` of store `store` was written at `last`.
    fn record(&mut self, store: u32, cf: u32, key: Vec<u8>, last: SeqNo) {
        let written = self.writes.entry((store, cf)).or_default();
        if written.insert(key, last).is_none() {
            self.written += 1;
        }
    }
}

impl Resolver {
    /// Whether a transaction is live: a plain write gathers the keys it writes if so.
    pub(crate) fn has_live(&self) -> bool {
        self.live_count.load(Ordering::SeqCst) > 0
    }

    /// Registers a transaction beginning now. Returns the seqno it registered at (the
    /// visible one: its snapshot must be at or above it) and the seqno its snapshot must
    /// reach: a commit recorded without its keys and not yet visible must be in it, as its
    /// keys cannot be checked. Commits in flight with their keys recorded (admitted while
    /// another transaction was live, as under concurrent transactions) need no wait: a write
    /// of theirs above the snapshot to something the transaction reads is a conflict.
    pub(crate) fn begin(&self, sequencer: &Sequencer) -> (SeqNo, SeqNo) {
        let mut state = lock_spinning(&self.state);
        self.live_count.fetch_add(1, Ordering::SeqCst);
        let at = sequencer.visible();
        *state.live.entry(at).or_insert(0) += 1;
        (at, state.barrier)
    }

    /// Unregisters a transaction that registered at `at`.
    pub(crate) fn end(&self, at: SeqNo, sequencer: &Sequencer) {
        let mut state = lock_spinning(&self.state);
        if let Some(count) = state.live.get_mut(&at) {
            *count -= 1;
            if *count == 0 {
                state.live.remove(&at);
            }
        }
        self.live_count.fetch_sub(1, Ordering::SeqCst);
        state.trim(sequencer.visible());
    }

    /// Validates `v` alone (a transaction whose writes change nothing).
    pub(crate) fn validate(&self, v: &Validation<'_>, names: &FamilyNames<'_>) -> Result<()> {
        match lock_spinning(&self.state).conflict(v) {
            Some(conflict) => Err(conflict.into_error(names)),
            None => Ok(()),
        }
    }

    /// Validates `reads` (for a transaction), allocates `total` seqnos for a commit whose
    /// parts are `parts` (each shard store's number and the keys it writes, if gathered) and,
    /// while another transaction is live, records the keys they write at the commit's last
    /// seqno (taking them from the parts: nothing is copied under the lock); otherwise, or
    /// for a part without its keys, raises the barrier. Returns the first seqno.
    pub(crate) fn admit<'p>(
        &self,
        sequencer: &Sequencer,
        parts: impl Iterator<Item = (usize, &'p mut Option<Vec<(u32, Vec<u8>)>>)>,
        total: u64,
        reads: Option<&Validation<'_>>,
        names: &FamilyNames<'_>,
    ) -> Result<SeqNo> {
        let mut state = lock_spinning(&self.state);
        if let Some(v) = reads
            && let Some(conflict) = state.conflict(v)
        {
            return Err(conflict.into_error(names));
        }
        let first = sequencer.allocate(total).ok_or(Error::CommitIncomplete)?;
        let last = first + total - 1;
        // The keys, if another transaction is live: it may have read them below this
        // commit. If none is, a transaction beginning before this commit is visible waits
        // for it instead (the barrier), so a lone writer records nothing.
        let others = state.live.values().sum::<usize>() - usize::from(reads.is_some());
        for (store, keys) in parts {
            match keys {
                Some(keys) if others > 0 => {
                    for (cf, key) in keys.drain(..) {
                        state.record(store as u32, cf, key, last);
                    }
                }
                _ => state.barrier = state.barrier.max(last),
            }
        }
        state.trim(sequencer.visible());
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit admitted while a transaction was live records its keys; one that begins
    /// while that commit is still in flight registers below it without waiting, so the keys
    /// must outlive every transaction live at the commit: a trim with none live keeps what
    /// is above the visible seqno. (Trimming everything when none was live, as before
    /// transactions stopped waiting at `begin`, loses the conflict.)
    #[test]
    fn keys_of_a_commit_in_flight_survive_a_trim_and_conflict_with_a_later_snapshot() {
        let mut state = ResolverState::default();
        // Commits long visible, enough for a trim to run.
        for i in 0..2_000u32 {
            state.record(0, 1, i.to_be_bytes().to_vec(), u64::from(i % 10) + 1);
        }
        // In flight: seqno 12, visible 10.
        state.record(0, 1, b"k".to_vec(), 12);
        state.trim(10);
        assert_eq!(state.written, 1, "only the commit in flight is kept");
        // A transaction registered now reads at 10 and read "k".
        let reads = [ReadRange::key(0, 1, b"k")];
        let v = Validation {
            snapshot: 10,
            reads: &reads,
        };
        assert!(state.conflict(&v).is_some());
        // One that began after the commit was visible does not conflict.
        let later = Validation {
            snapshot: 12,
            reads: &reads,
        };
        assert!(state.conflict(&later).is_none());
    }

    /// A range read conflicts with a write inside it, up to its end or, open-ended, to the
    /// end of its family, and not with writes outside it or in another family or store.
    #[test]
    fn a_range_read_conflicts_with_writes_in_it_and_only_those() {
        let mut state = ResolverState::default();
        state.record(0, 1, b"b".to_vec(), 5);
        state.record(0, 2, b"m".to_vec(), 5);
        state.record(1, 1, b"m".to_vec(), 5);
        let conflicts = |range: ReadRange| {
            let reads = [range];
            state
                .conflict(&Validation {
                    snapshot: 4,
                    reads: &reads,
                })
                .is_some()
        };
        assert!(conflicts(ReadRange::new(0, 1, b"a", Some(b"c"))));
        assert!(
            conflicts(ReadRange::new(0, 1, b"b", Some(b"c"))),
            "lower bound included"
        );
        assert!(
            !conflicts(ReadRange::new(0, 1, b"a", Some(b"b"))),
            "upper bound excluded"
        );
        assert!(
            !conflicts(ReadRange::new(0, 1, b"c", None)),
            "past the write"
        );
        assert!(
            conflicts(ReadRange::new(0, 2, b"c", None)),
            "open-ended, same family"
        );
        assert!(
            !conflicts(ReadRange::new(0, 3, b"", None)),
            "another family"
        );
        assert!(conflicts(ReadRange::whole(1, 1)));
        assert!(!conflicts(ReadRange::whole(2, 1)), "another store");
        assert!(conflicts(ReadRange::key(0, 1, b"b")));
        assert!(!conflicts(ReadRange::key(0, 1, b"bb")));
    }
}
