//! The two-level table iterator: a position in the index plus an iterator over that block.
//!
//! Bounds are on user keys: `lower` inclusive, `upper` exclusive. A damaged block stops the
//! iterator; `status()` then holds the error, so a scan can never silently skip data.

use crate::block::BlockIter;
use crate::error::Error;
use crate::format::{MAX_SEQNO, ValueKind};
use crate::table::Table;

/// Iterates a table's entries in table order (user key ascending, seqno descending), both
/// ways. Unpositioned when made: call a `seek*` method first.
pub struct TableIter {
    table: Table,
    block_number: usize,
    block: Option<BlockIter>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    error: Option<Error>,
    /// At an entry within the bounds: worked out once per move, as every accessor asks.
    valid: bool,
}

impl TableIter {
    pub(crate) fn new(table: Table) -> Self {
        TableIter {
            table,
            block_number: 0,
            block: None,
            lower: None,
            upper: None,
            error: None,
            valid: false,
        }
    }

    /// Restricts the iterator to user keys in `[lower, upper)`; `None` leaves a side open.
    pub fn with_bounds(mut self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Self {
        self.lower = lower.map(<[u8]>::to_vec);
        self.upper = upper.map(<[u8]>::to_vec);
        self.block = None;
        self.valid = false;
        self
    }

    /// Whether the iterator is at an entry (within the bounds).
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Works out [`TableIter::valid`] after a move.
    #[inline]
    fn settle(&mut self) {
        self.valid = self.at_entry();
    }

    #[inline]
    fn at_entry(&self) -> bool {
        let Some(block) = self.block.as_ref().filter(|b| b.valid()) else {
            return false;
        };
        let key = block.user_key();
        self.error.is_none()
            && self.lower.as_deref().is_none_or(|lower| key >= lower)
            && self.upper.as_deref().is_none_or(|upper| key < upper)
    }

    /// The error that stopped the iterator, if any. Check it when `valid()` turns false.
    #[inline]
    pub fn status(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    /// The current entry's user key. REQUIRES: `valid()`.
    #[inline]
    pub fn user_key(&self) -> &[u8] {
        self.current().user_key()
    }

    /// The current entry's user key, sequence number and kind, in one call. REQUIRES:
    /// `valid()`.
    #[inline]
    pub fn entry(&self) -> (&[u8], u64, ValueKind) {
        let block = self.current();
        (block.user_key(), block.seqno(), block.kind())
    }

    /// The current entry's sequence number. REQUIRES: `valid()`.
    #[inline]
    pub fn seqno(&self) -> u64 {
        self.current().seqno()
    }

    /// The current entry's kind. REQUIRES: `valid()`.
    #[inline]
    pub fn kind(&self) -> ValueKind {
        self.current().kind()
    }

    /// The current entry's value. REQUIRES: `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.current().value()
    }

    /// The current value as shared bytes (no copy for an uncompressed block).
    #[inline]
    pub fn value_bytes(&self) -> bytes::Bytes {
        self.current().value_bytes()
    }

    /// Positions at the first entry (at the lower bound, if one is set).
    pub fn seek_to_first(&mut self) {
        self.seek_to_first_unsettled();
        self.settle();
    }

    fn seek_to_first_unsettled(&mut self) {
        match self.lower.clone() {
            Some(lower) => self.seek_internal(&lower, MAX_SEQNO),
            None => {
                self.load_block(0, |iter| iter.seek_to_first());
                self.skip_forward();
            }
        }
    }

    /// Positions at the last entry (below the upper bound, if one is set).
    pub fn seek_to_last(&mut self) {
        self.seek_to_last_unsettled();
        self.settle();
    }

    fn seek_to_last_unsettled(&mut self) {
        if let Some(upper) = self.upper.clone() {
            self.seek_internal(&upper, MAX_SEQNO);
            if self.block.as_ref().is_some_and(|b| b.valid()) {
                return self.prev_unchecked();
            }
            if self.error.is_some() {
                return;
            }
        }
        let Some(last) = self.blocks().checked_sub(1) else {
            self.block = None;
            return;
        };
        self.load_block(last, |iter| iter.seek_to_last());
        self.skip_backward();
    }

    /// Positions at the first entry whose user key is at or after `user_key` (and at or
    /// after the lower bound).
    pub fn seek(&mut self, user_key: &[u8]) {
        let target = match self.lower.clone() {
            Some(lower) if lower.as_slice() > user_key => lower,
            _ => user_key.to_vec(),
        };
        self.seek_internal(&target, MAX_SEQNO);
        self.settle();
    }

    /// Positions at the first entry at or after `(user_key, seqno)` in table order: the newest
    /// version of `user_key` visible at snapshot `seqno`, if it has one.
    pub fn seek_at(&mut self, user_key: &[u8], seqno: u64) {
        self.seek_internal(user_key, seqno);
        self.settle();
    }

    /// Moves to the next entry. REQUIRES: `valid()`.
    #[inline]
    pub fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(block) = self.block.as_mut() {
            block.next();
            // The common step, to the next entry of the same block with no upper bound to
            // pass, settled here (a forward step from an entry at or above `lower` stays
            // there): a scan takes it for nearly every entry.
            if block.valid() && self.upper.is_none() && self.error.is_none() {
                self.valid = true;
                return;
            }
        }
        self.skip_forward();
        self.settle();
    }

    /// Moves to the previous entry. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        debug_assert!(self.valid());
        self.prev_unchecked();
        self.settle();
    }

    fn prev_unchecked(&mut self) {
        if let Some(block) = self.block.as_mut() {
            block.prev();
        }
        self.skip_backward();
    }

    #[inline]
    fn current(&self) -> &BlockIter {
        assert!(self.valid(), "TableIter used while not valid");
        self.block.as_ref().expect("valid implies a block")
    }

    /// The table's data blocks; none, with the error kept, if its index does not read.
    fn blocks(&mut self) -> usize {
        match self.table.index() {
            Ok(index) => index.len(),
            Err(error) => {
                self.error.get_or_insert(error);
                0
            }
        }
    }

    fn seek_internal(&mut self, user_key: &[u8], seqno: u64) {
        let number = match self.table.index() {
            Ok(index) => index.search(user_key, seqno),
            Err(error) => {
                self.error.get_or_insert(error);
                self.block = None;
                return;
            }
        };
        if number >= self.blocks() {
            self.block = None;
            return;
        }
        self.load_block(number, |iter| iter.seek(user_key, seqno));
        self.skip_forward();
    }

    /// Loads data block `number` and positions within it with `position`.
    fn load_block(&mut self, number: usize, position: impl FnOnce(&mut BlockIter)) {
        // The key buffer of the block left is the next one's: a scan allocates it once.
        let buffer = self.block.take().map(BlockIter::into_key_buffer);
        if self.error.is_some() || number >= self.blocks() {
            return;
        }
        match self.table.data_block(number) {
            Ok(block) => {
                let mut iter = block.iter_with(buffer.unwrap_or_default());
                position(&mut iter);
                self.block_number = number;
                self.block = Some(iter);
                self.check_block_status();
            }
            Err(error) => self.error = Some(error),
        }
    }

    fn check_block_status(&mut self) {
        if let Some(what) = self.block.as_ref().and_then(|b| b.status()) {
            self.error = Some(self.table.block_corruption(self.block_number, what.clone()));
            self.block = None;
        }
    }

    /// While the block iterator ran off its end, moves to the next block's first entry.
    fn skip_forward(&mut self) {
        self.check_block_status();
        while self.block.as_ref().is_some_and(|b| !b.valid()) {
            if self.block.as_ref().is_some_and(BlockIter::read_whole) {
                // Read from its first entry past its last, each step checked: the block's
                // later reads need check nothing.
                self.table.mark_whole(self.block_number);
            }
            let next = self.block_number + 1;
            if next >= self.blocks() {
                self.block = None;
                return;
            }
            self.load_block(next, |iter| iter.seek_to_first());
        }
    }

    /// While the block iterator ran off its start, moves to the previous block's last entry.
    fn skip_backward(&mut self) {
        self.check_block_status();
        while self.block.as_ref().is_some_and(|b| !b.valid()) {
            let Some(previous) = self.block_number.checked_sub(1) else {
                self.block = None;
                return;
            };
            self.load_block(previous, |iter| iter.seek_to_last());
        }
    }
}
