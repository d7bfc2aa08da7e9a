//! Merges sources into one ordered stream of internal keys, both ways (LevelDB's
//! `MergingIterator`).
//!
//! 1. Forward, the current entry is the smallest among the sources' current entries; backward,
//!    the largest. Sources are few (memtables plus level-0 tables plus one per level), so a
//!    linear scan finds it.
//! 2. Switching direction repositions every other source relative to the current key: going
//!    forward, each sits at its first entry after the key; going backward, at its last before.
//! 3. Internal keys are unique across sources (a seqno is in exactly one), so ties never occur.
//! 4. A step moves only the current source, so the others keep their order: the current one
//!    stays current while it still comes before the runner-up (the best of the others, found
//!    by the last scan). A scan of a long run from one source costs one comparison a step.
//! 5. A source that fails becomes invalid, and sources become invalid only when they move:
//!    each scan checks the invalid ones for an error and keeps the first, so `status()` costs
//!    nothing per step.

use std::cmp::Ordering;

use bytes::Bytes;
use strata_sstable::{TableIter, ValueKind};

use crate::SeqNo;
use crate::error::{Error, Result};
use crate::iter::source::{AnySource, Source};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// The merged view of several sources.
pub(crate) struct MergingIter {
    sources: Vec<AnySource>,
    current: Option<usize>,
    /// The best valid source other than `current`, as of the last scan.
    runner_up: Option<usize>,
    direction: Direction,
    /// The first error a source hit.
    error: Option<Error>,
}

/// Internal-key order: user key ascending, then seqno descending.
#[inline]
fn compare(a: &AnySource, b: &AnySource) -> Ordering {
    a.user_key()
        .cmp(b.user_key())
        .then_with(|| b.seqno().cmp(&a.seqno()))
}

impl MergingIter {
    pub(crate) fn new(sources: Vec<AnySource>) -> Self {
        MergingIter {
            sources,
            current: None,
            runner_up: None,
            direction: Direction::Forward,
            error: None,
        }
    }

    #[inline]
    pub(crate) fn valid(&self) -> bool {
        self.current.is_some()
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.sources.iter_mut().for_each(|s| s.seek_to_first());
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    pub(crate) fn seek_to_last(&mut self) {
        self.sources.iter_mut().for_each(|s| s.seek_to_last());
        self.direction = Direction::Backward;
        self.find_largest();
    }

    pub(crate) fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        self.sources.iter_mut().for_each(|s| s.seek(key, seqno));
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    pub(crate) fn seek_for_prev(&mut self, key: &[u8]) {
        self.sources.iter_mut().for_each(|s| s.seek_for_prev(key));
        self.direction = Direction::Backward;
        self.find_largest();
    }

    /// REQUIRES: `valid()`.
    pub(crate) fn next(&mut self) {
        let Some(current) = self.current else { return };
        if self.direction == Direction::Backward {
            let (key, seqno) = (self.user_key().to_vec(), self.seqno());
            for (i, source) in self.sources.iter_mut().enumerate() {
                if i != current {
                    // The first entry after (key, seqno): seqno is unique to `current`, so
                    // seeking to it lands strictly after.
                    source.seek(&key, seqno);
                }
            }
            self.direction = Direction::Forward;
            self.sources[current].next();
            // Every other source moved too.
            return self.find_smallest();
        }
        let moved = &mut self.sources[current];
        moved.next();
        // One source, or one far ahead of the rest: nothing to compare.
        if self.runner_up.is_none() && moved.valid() {
            return;
        }
        self.after_step(current, Ordering::Less);
    }

    /// REQUIRES: `valid()`.
    pub(crate) fn prev(&mut self) {
        let Some(current) = self.current else { return };
        if self.direction == Direction::Forward {
            let (key, seqno) = (self.user_key().to_vec(), self.seqno());
            for (i, source) in self.sources.iter_mut().enumerate() {
                if i != current {
                    source.seek(&key, seqno);
                    if source.valid() {
                        source.prev();
                    } else if source.status().is_ok() {
                        source.seek_to_last();
                    }
                }
            }
            self.direction = Direction::Backward;
            self.sources[current].prev();
            // Every other source moved too.
            return self.find_largest();
        }
        self.sources[current].prev();
        self.after_step(current, Ordering::Greater);
    }

    /// Forward, when one source is left (the others ran out, or there were none) and it reads
    /// a table: that table's iterator, for a caller to step directly, without this merge
    /// between each step. Call [`MergingIter::after_sole_steps`] once it is invalid.
    #[inline]
    pub(crate) fn sole_table(&mut self) -> Option<&mut TableIter> {
        if self.runner_up.is_some() || self.direction != Direction::Forward || self.error.is_some()
        {
            return None;
        }
        let current = self.current?;
        self.sources[current].table_iter()
    }

    /// After the iterator [`MergingIter::sole_table`] gave was stepped: its source moves on
    /// (a level to its next table) and the merge sees where it is, keeping its error.
    pub(crate) fn after_sole_steps(&mut self) {
        if let Some(current) = self.current {
            self.sources[current].after_table_steps();
            self.after_step(current, Ordering::Less);
        }
    }

    /// After source `current` alone moved: it stays current while it is valid and still
    /// comes (`wanted`: `Less` forward, `Greater` backward) before the runner-up.
    #[inline(never)]
    fn after_step(&mut self, current: usize, wanted: Ordering) {
        let moved = &self.sources[current];
        if moved.valid() {
            match self.runner_up {
                None => return,
                Some(r) if compare(moved, &self.sources[r]) == wanted => return,
                Some(_) => {}
            }
        }
        self.pick(wanted);
    }

    fn find_smallest(&mut self) {
        self.pick(Ordering::Less);
    }

    fn find_largest(&mut self) {
        self.pick(Ordering::Greater);
    }

    /// Scans every source for the best and the runner-up, and keeps the first error of an
    /// invalid one.
    fn pick(&mut self, wanted: Ordering) {
        let mut best: Option<usize> = None;
        let mut runner_up: Option<usize> = None;
        for (i, source) in self.sources.iter().enumerate() {
            if !source.valid() {
                if self.error.is_none()
                    && let Err(e) = source.status()
                {
                    self.error = Some(e);
                }
                continue;
            }
            let before = |other: Option<usize>| {
                other.is_none_or(|o| compare(source, &self.sources[o]) == wanted)
            };
            if before(best) {
                runner_up = best;
                best = Some(i);
            } else if before(runner_up) {
                runner_up = Some(i);
            }
        }
        self.current = best;
        self.runner_up = runner_up;
    }

    #[inline]
    fn source(&self) -> &AnySource {
        &self.sources[self.current.expect("REQUIRES: valid()")]
    }

    pub(crate) fn user_key(&self) -> &[u8] {
        self.source().user_key()
    }

    pub(crate) fn seqno(&self) -> SeqNo {
        self.source().seqno()
    }

    pub(crate) fn kind(&self) -> ValueKind {
        self.source().kind()
    }

    /// The current entry's user key, seqno and kind. REQUIRES: `valid()`.
    #[inline]
    pub(crate) fn entry(&self) -> (&[u8], SeqNo, ValueKind) {
        self.source().entry()
    }

    /// Whether a source has failed: the merged stream must stop there.
    #[inline]
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some()
    }

    pub(crate) fn value(&self) -> Bytes {
        self.source().value()
    }

    #[inline]
    pub(crate) fn value_ref(&self) -> &[u8] {
        self.source().value_ref()
    }

    /// The first error any source hit. A source that fails becomes invalid, so an iterator
    /// that ends must be checked with this before its end is trusted.
    pub(crate) fn status(&self) -> Result<()> {
        match &self.error {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }
}
