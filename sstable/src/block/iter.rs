//! Reads one block: checks its restart array, then seeks and iterates both ways, checking each
//! entry it reads against the one before.
//!
//! 1. `Block::new` checks the restart array: count, bounds, strictly increasing offsets.
//!    [`Block::check_restarts`] (on a block's first read) checks that each restart point
//!    starts an entry storing its whole key and that those keys ascend: what a seek's binary
//!    search relies on.
//! 2. A seek binary-searches the restart points (whose keys are stored whole) for the last one
//!    before the target, then scans forward.
//! 3. `prev` goes back to the restart point before the current entry and scans forward to the
//!    entry before it, as LevelDB does: entries only decode forwards.
//! 4. Every step forward checks the entry it reaches against the one it leaves: keys ascend
//!    in table order, and the step lands on the next restart point rather than past it. A
//!    block is thus checked as far as it is read — a scan, a compaction or `verify` reads all
//!    of it — and a read that reaches a misordered entry gets a `Corruption`, never the entry.
//!    A table checks a block whole on its eighth read ([`Block::validate`]), or marks it
//!    when a read went from its first entry past its last ([`BlockIter::read_whole`]: a
//!    scan), and its later reads ([`Block::entries_checked`]) compare nothing. (Checking the whole
//!    block on its first read cost a cold query of 30 rows a tenth of its time, for the one
//!    block of 4 KiB it read a kilobyte of; checking each step of a block read again and
//!    again cost a fetch-heavy query 5–9 %.)
//!
//! Every length is checked before a slice is taken; a malformed entry stops the iterator with
//! a `Corruption` kept in `status()`, never a panic.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::error::{BlockFault, Corruption};
use crate::format::ValueKind;
use crate::key::{compare, unpack_trailer};
use crate::table::prefetch;

/// A block whose restart array is checked. Cloning is cheap (the bytes are shared).
#[derive(Clone, Debug)]
pub(crate) struct Block {
    data: Bytes,
    /// Entries may share a prefix of the value before them (format version 2; see `block`).
    shares_values: bool,
    /// Where the entries end and the restart array begins.
    restarts_at: usize,
    restart_count: usize,
    /// Every entry has been checked ([`Block::validate`], on an earlier read): a step reads
    /// the next entry without comparing it with the one before.
    checked: bool,
}

impl Block {
    /// The block in `data`, laid out as format version 2 (`shares_values`) or 1.
    pub(crate) fn new(data: Bytes, shares_values: bool) -> Result<Block, Corruption> {
        let len = data.len();
        let count_at = len.checked_sub(4).ok_or(Corruption::MalformedBlock(
            BlockFault::ShorterThanRestartCount,
        ))?;
        let restart_count = read_u32(&data, count_at) as usize;
        let restarts_at = restart_count
            .checked_mul(4)
            .and_then(|bytes| count_at.checked_sub(bytes))
            .ok_or(Corruption::MalformedBlock(BlockFault::RestartArrayTooLarge))?;
        if restart_count == 0 && restarts_at != 0 {
            return Err(Corruption::MalformedBlock(
                BlockFault::EntriesWithoutRestarts,
            ));
        }
        let mut previous = None;
        for i in 0..restart_count {
            let restart = read_u32(&data, restarts_at + 4 * i) as usize;
            if restart >= restarts_at || previous.is_some_and(|p| restart <= p) {
                return Err(Corruption::MalformedBlock(BlockFault::RestartOutOfOrder));
            }
            if i == 0 && restart != 0 {
                return Err(Corruption::MalformedBlock(BlockFault::FirstRestartNotZero));
            }
            previous = Some(restart);
        }
        Ok(Block {
            data,
            shares_values,
            restarts_at,
            restart_count,
            checked: false,
        })
    }

    /// This block, known to pass [`Block::validate`] (it did on an earlier read of the same
    /// bytes): its reads check no entry against the one before.
    pub(crate) fn entries_checked(mut self) -> Block {
        self.checked = true;
        self
    }

    /// Whether [`Block::entries_checked`] said so.
    #[cfg(test)]
    pub(crate) fn is_entries_checked(&self) -> bool {
        self.checked
    }

    /// Checks what a seek's binary search relies on and `new` cannot check cheaply: each
    /// restart point starts an entry that stores its whole key (`shared` = 0), and those keys
    /// strictly ascend in table order. A table runs this once per block, when it first
    /// verifies the block's checksum; the entries between restart points are checked as they
    /// are read (see the module's notes).
    pub(crate) fn check_restarts(&self) -> Result<(), Corruption> {
        let mut previous: Option<(&[u8], u64)> = None;
        for index in 0..self.restart_count {
            let (key, seqno) = self.restart_key(index)?;
            if let Some((before, before_seqno)) = previous
                && compare(before, before_seqno, key, seqno).is_ge()
            {
                return Err(Corruption::KeysOutOfOrder);
            }
            previous = Some((key, seqno));
        }
        Ok(())
    }

    /// The whole key and sequence number of the entry at restart point `index`, read where
    /// they lie.
    #[inline]
    fn restart_key(&self, index: usize) -> Result<(&[u8], u64), Corruption> {
        const BAD: Corruption = Corruption::MalformedBlock(BlockFault::EntryOutOfBounds);
        let entries = &self.data[..self.restarts_at];
        let input = entries.get(self.restart(index)..).ok_or(BAD)?;
        let (shared, at) = varint_at(input, 0).ok_or(BAD)?;
        let (unshared, at) = varint_at(input, at).ok_or(BAD)?;
        let (value_field, at) = varint_at(input, at).ok_or(BAD)?;
        let (trailer, at) = varint_at(input, at).ok_or(BAD)?;
        if self.shares_values && value_field & 1 == 1 {
            return Err(Corruption::MalformedBlock(BlockFault::RestartSharesValue));
        }
        if shared != 0 {
            return Err(Corruption::MalformedBlock(BlockFault::SharedKeyTooLong));
        }
        let end = usize::try_from(unshared)
            .ok()
            .and_then(|n| at.checked_add(n))
            .ok_or(BAD)?;
        let key = input.get(at..end).ok_or(BAD)?;
        // Its value within the entries too: what a full read of the entry checks, so that a
        // search reading restart keys alone accepts exactly the restart points it would.
        let value_len = if self.shares_values {
            value_field >> 1
        } else {
            value_field
        };
        usize::try_from(value_len)
            .ok()
            .and_then(|n| end.checked_add(n))
            .filter(|&value_end| value_end <= input.len())
            .ok_or(BAD)?;
        let (seqno, _) = unpack_trailer(trailer)
            .ok_or(Corruption::MalformedBlock(BlockFault::UnknownValueKind))?;
        Ok((key, seqno))
    }

    /// Checks the whole block: its restart points, then every entry, read in order. What a
    /// read of every entry checks; for the fuzz targets and tests.
    pub(crate) fn validate(&self) -> Result<(), Corruption> {
        self.check_restarts()?;
        let mut iter = self.iter();
        iter.seek_to_first();
        while iter.valid() {
            iter.next();
        }
        match iter.status {
            Some(what) => Err(what),
            None => Ok(()),
        }
    }

    fn restart(&self, index: usize) -> usize {
        read_u32(&self.data, self.restarts_at + 4 * index) as usize
    }

    /// The block's bytes.
    pub(crate) fn bytes(&self) -> &Bytes {
        &self.data
    }

    pub(crate) fn iter(&self) -> BlockIter {
        self.iter_with(Vec::new())
    }

    /// [`Block::iter`], building its keys in `buffer` (another iterator's, from
    /// [`BlockIter::into_key_buffer`]): a table read that crosses blocks allocates its key
    /// buffer once, not once a block (growing it each time).
    pub(crate) fn iter_with(&self, mut buffer: Vec<u8>) -> BlockIter {
        buffer.clear();
        if buffer.capacity() == 0 {
            // Most keys fit: no growing from 8 to 16 to 32 bytes.
            buffer.reserve(KEY_BUFFER);
        }
        BlockIter {
            block: self.clone(),
            current: self.restarts_at,
            next: self.restarts_at,
            boundary: self.restarts_at,
            boundary_index: self.restart_count,
            from_first: false,
            key: buffer,
            seqno: 0,
            kind: ValueKind::Put,
            value: (0, 0),
            value_built: Vec::new(),
            value_is_built: false,
            value_len: 0,
            defer: false,
            deferred: Vec::new(),
            base_built: false,
            status: None,
        }
    }
}

/// The key buffer a block iterator starts with.
/// TUNING: index and fact keys are mostly tens of bytes.
const KEY_BUFFER: usize = 64;

fn read_u32(data: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&data[at..at + 4]);
    u32::from_le_bytes(word)
}

/// An iterator over one block's entries. Invalid (`!valid()`) before the first positioning
/// call, after running off either end, and after a corruption.
pub(crate) struct BlockIter {
    block: Block,
    /// Offset of the current entry; `restarts_at` when invalid.
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    /// Offset of the first restart point after the current entry (`restarts_at` past the
    /// last one): a step forward must land on it, not past it.
    boundary: usize,
    /// That restart point's index (`restart_count` past the last one).
    boundary_index: usize,
    /// Positioned at the first entry and moved only forwards since, each step checked: a
    /// read that runs off the end this way has checked the whole block
    /// ([`BlockIter::read_whole`]).
    from_first: bool,
    key: Vec<u8>,
    seqno: u64,
    kind: ValueKind,
    /// Where the current value lies in the block, unless it shares a prefix with the value
    /// before it: then it is rebuilt in `value_built` (`value_is_built`).
    value: (usize, usize),
    value_built: Vec<u8>,
    value_is_built: bool,
    /// The current value's length (whole, rebuilt or deferred).
    value_len: usize,
    /// While a seek walks from a restart point to its target, the shared values it steps over
    /// are not rebuilt: their `(shared, suffix start, suffix end)` wait here, and the target's
    /// value is assembled from them once ([`BlockIter::settle`]), copying only its own bytes.
    defer: bool,
    deferred: Vec<(usize, usize, usize)>,
    /// Whether the value before the first deferred one was rebuilt (else it lies at `value`).
    base_built: bool,
    status: Option<Corruption>,
}

impl BlockIter {
    /// This iterator's key buffer, for the next block's ([`Block::iter_with`]).
    pub(crate) fn into_key_buffer(self) -> Vec<u8> {
        self.key
    }

    #[inline]
    pub(crate) fn valid(&self) -> bool {
        self.current < self.block.restarts_at && self.status.is_none()
    }

    /// The corruption that stopped this iterator, if any.
    pub(crate) fn status(&self) -> Option<&Corruption> {
        self.status.as_ref()
    }

    #[inline]
    pub(crate) fn user_key(&self) -> &[u8] {
        &self.key
    }

    #[inline]
    pub(crate) fn seqno(&self) -> u64 {
        self.seqno
    }

    #[inline]
    pub(crate) fn kind(&self) -> ValueKind {
        self.kind
    }

    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.deferred.is_empty(), "a walk left its values unsettled");
        if self.value_is_built {
            return &self.value_built;
        }
        &self.block.data[self.value.0..self.value.1]
    }

    /// The value as shared bytes: no copy for a value stored whole, a copy of one rebuilt
    /// from a shared prefix.
    pub(crate) fn value_bytes(&self) -> Bytes {
        if self.value_is_built {
            return Bytes::copy_from_slice(&self.value_built);
        }
        self.block.data.slice(self.value.0..self.value.1)
    }

    pub(crate) fn seek_to_first(&mut self) {
        if self.block.restart_count == 0 {
            return self.invalidate();
        }
        self.seek_to_restart(0);
        self.from_first = true;
    }

    /// Whether this iterator read every entry of its block, from the first to past the last,
    /// checking each step, without finding a fault: the block passes [`Block::validate`] (a
    /// table remembers it, and its later reads check nothing).
    pub(crate) fn read_whole(&self) -> bool {
        self.from_first
            && !self.block.checked
            && self.status.is_none()
            && self.current == self.block.restarts_at
            && self.next == self.block.restarts_at
    }

    pub(crate) fn seek_to_last(&mut self) {
        if self.block.restart_count == 0 {
            return self.invalidate();
        }
        self.seek_to_restart(self.block.restart_count - 1);
        self.defer = true;
        while self.valid() && self.next < self.block.restarts_at {
            self.advance();
        }
        self.settle();
    }

    #[inline]
    pub(crate) fn next(&mut self) {
        debug_assert!(self.valid());
        self.advance();
    }

    pub(crate) fn prev(&mut self) {
        debug_assert!(self.valid());
        let target = self.current;
        // The last restart point strictly before the current entry.
        let mut index = self.block.restart_count;
        while index > 0 && self.block.restart(index - 1) >= target {
            index -= 1;
        }
        if index == 0 {
            return self.invalidate(); // the current entry was the first
        }
        self.seek_to_restart(index - 1);
        self.defer = true;
        while self.valid() && self.next < target {
            self.advance();
        }
        self.settle();
    }

    /// Positions at the first entry at or after `(user_key, seqno)` in table order.
    pub(crate) fn seek(&mut self, user_key: &[u8], seqno: u64) {
        self.seek_from(0, self.block.restart_count, user_key, seqno);
    }

    /// [`BlockIter::seek`], told where its binary search would end: `hint`, the restart
    /// point a search of the block's bytes before they were checked found
    /// ([`super::touch_interval`]). Trusted only once its two neighbouring restart keys
    /// bracket the target as the search's would (the restart point's key before it, or it is
    /// the first; the next one's not before it, or it is the last): restart keys increase
    /// (`Block::check_restarts`), so those two comparisons stand for the search's. Else, or
    /// when either key does not read, the search runs from scratch. (The search compared
    /// ~6 restart keys of a block of rows, ~840 instructions of a lookup, callgrind.) Returns
    /// whether the hint was taken.
    pub(crate) fn seek_hinted(&mut self, user_key: &[u8], seqno: u64, hint: Option<usize>) -> bool {
        let count = self.block.restart_count;
        let before = |index: usize| {
            self.block
                .restart_key(index)
                .ok()
                .map(|(key, at)| compare(key, at, user_key, seqno) == Ordering::Less)
        };
        let bracketed = hint.filter(|&low| {
            low < count
                && (low == 0 || before(low) == Some(true))
                && (low + 1 == count || before(low + 1) == Some(false))
        });
        match bracketed {
            Some(low) => self.seek_from(low, low + 1, user_key, seqno),
            None => self.seek(user_key, seqno),
        }
        bracketed.is_some()
    }

    /// [`BlockIter::seek`], its binary search begun between restart points `low` (the first,
    /// or one whose key is before the target) and `high` (the count, or one whose key is
    /// not).
    fn seek_from(&mut self, mut low: usize, mut high: usize, user_key: &[u8], seqno: u64) {
        // Binary search: the last restart whose key is before the target.
        // Each restart point's key is compared where it lies, the iterator untouched (moving
        // it to each was ~230 instructions a restart point, callgrind); one that does not
        // parse is read the full way, which reports the damage.
        while high - low > 1 {
            let mid = (low + high) / 2;
            let order = match self.block.restart_key(mid) {
                Ok((key, at)) => compare(key, at, user_key, seqno),
                Err(_) => {
                    self.seek_to_restart(mid);
                    if !self.valid() {
                        return;
                    }
                    compare(&self.key, self.seqno, user_key, seqno)
                }
            };
            match order {
                Ordering::Less => low = mid,
                _ => high = mid,
            }
        }
        if self.block.restart_count == 0 {
            return self.invalidate();
        }
        // The entries from this restart to the next are read one after another, each found
        // from the one before: start loading all their lines now, so that their cache misses
        // overlap instead of following each other.
        let (from, to) = (
            self.block.restart(low),
            if low + 1 < self.block.restart_count {
                self.block.restart(low + 1)
            } else {
                self.block.restarts_at
            },
        );
        // In bounds: `Block::new` checked that restarts increase and stay below the restart
        // array, which lies inside the block.
        let ahead = &self.block.data[from..to];
        for byte in ahead.iter().step_by(64) {
            prefetch(byte);
        }
        self.seek_to_restart(low);
        self.defer = true;
        while self.valid() && compare(&self.key, self.seqno, user_key, seqno) == Ordering::Less {
            self.advance();
        }
        self.settle();
    }

    /// Ends a walk begun with `defer`: the current value, if its entry and those before it
    /// back to a whole (or rebuilt) value share prefixes, is assembled from their suffixes,
    /// newest first, each giving the bytes the later ones did not.
    fn settle(&mut self) {
        self.defer = false;
        let Some(&(shared, from, to)) = self.deferred.last() else {
            return;
        };
        // Pieces of the value, last first: this entry's suffix, then the part of each earlier
        // suffix that the later entries kept, then a prefix of the base. Every length was
        // checked as the entries were decoded (a value shares at most the one before it).
        let mut pieces: [(usize, usize); 2] = [(from, to), (0, 0)];
        let mut more: Vec<(usize, usize)> = Vec::new();
        let mut need = shared;
        for &(shared, from, _) in self.deferred[..self.deferred.len() - 1].iter().rev() {
            if need > shared {
                let piece = (from, from + (need - shared));
                if pieces[1] == (0, 0) {
                    pieces[1] = piece;
                } else {
                    more.push(piece);
                }
                need = shared;
            }
        }
        if self.base_built {
            self.value_built.truncate(need);
        } else {
            let at = self.value.0;
            self.value_built.clear();
            self.value_built
                .extend_from_slice(&self.block.data[at..at + need]);
        }
        for &(from, to) in more
            .iter()
            .rev()
            .chain(pieces[1..].iter())
            .chain(&pieces[..1])
        {
            self.value_built
                .extend_from_slice(&self.block.data[from..to]);
        }
        self.value_is_built = true;
        self.deferred.clear();
    }

    fn seek_to_restart(&mut self, index: usize) {
        self.from_first = false;
        self.key.clear();
        // Nor has it a value before it to share.
        self.value = (0, 0);
        self.value_is_built = false;
        self.value_len = 0;
        self.deferred.clear();
        let offset = self.block.restart(index);
        self.boundary_index = index + 1;
        self.boundary = self.restart_or_end(index + 1);
        // A restart entry shares nothing (the key buffer is empty): it needs no predecessor.
        match self.decode_entry(offset) {
            Ok(()) => self.current = offset,
            Err(what) => self.fail(what),
        }
    }

    /// The offset of restart point `index`, or where the entries end past the last.
    #[inline]
    fn restart_or_end(&self, index: usize) -> usize {
        if index < self.block.restart_count {
            self.block.restart(index)
        } else {
            self.block.restarts_at
        }
    }

    /// Steps to the entry after the current one, checking it against the current one unless
    /// the whole block was checked before.
    #[inline]
    fn advance(&mut self) {
        let offset = self.next;
        if self.block.checked {
            if offset >= self.block.restarts_at {
                return self.invalidate();
            }
            return match self.decode_entry(offset) {
                Ok(()) => self.current = offset,
                Err(what) => self.fail(what),
            };
        }
        if offset > self.boundary {
            return self.fail(Corruption::MalformedBlock(BlockFault::RestartInsideEntry));
        }
        if offset >= self.block.restarts_at {
            return self.invalidate();
        }
        let restart = offset == self.boundary;
        let before = self.seqno;
        match self.decode_parts::<true>(offset, restart) {
            // The key before against this one: user keys ascending, a key's versions by
            // descending sequence number.
            Ok(order) if order.then(self.seqno.cmp(&before)).is_lt() => {
                self.current = offset;
                if restart {
                    self.boundary_index += 1;
                    self.boundary = self.restart_or_end(self.boundary_index);
                }
            }
            Ok(_) => self.fail(Corruption::KeysOutOfOrder),
            Err(what) => self.fail(what),
        }
    }

    fn invalidate(&mut self) {
        self.current = self.block.restarts_at;
        self.next = self.block.restarts_at;
    }

    #[cold]
    fn fail(&mut self, what: Corruption) {
        self.status = Some(what);
        self.invalidate();
    }

    // In line in `advance` and the table iterator's step: a call per entry was ~18 of a
    // filtered scan's ~950 instructions a row (callgrind).
    #[inline]
    fn decode_entry(&mut self, offset: usize) -> Result<(), Corruption> {
        self.decode_parts::<false>(offset, false).map(|_| ())
    }

    /// Decodes the entry at `offset`, whose predecessor's key is in `self.key`. `ORDERED`:
    /// also gives the order of that key and this one — found from the bytes after the shared
    /// prefix alone, before the key is rebuilt (a copy and a whole-key comparison per entry
    /// were half the cost of checking a block) — and a `restart` entry must share nothing.
    #[inline(always)]
    fn decode_parts<const ORDERED: bool>(
        &mut self,
        offset: usize,
        restart: bool,
    ) -> Result<Ordering, Corruption> {
        const BAD: Corruption = Corruption::MalformedBlock(BlockFault::EntryOutOfBounds);
        let entries = &self.block.data[..self.block.restarts_at];
        let input = entries.get(offset..).ok_or(BAD)?;
        // Four varints, read where they lie (a scan decodes every entry: a `Reader` per
        // entry and a call per varint were a fifth of a table scan's instructions).
        let (shared, at) = varint_at(input, 0).ok_or(BAD)?;
        let (unshared, at) = varint_at(input, at).ok_or(BAD)?;
        let (value_len, at) = length_at(input, at).ok_or(BAD)?;
        let (value_len, value_shared, at) = if !self.block.shares_values {
            (value_len, 0, at)
        } else if value_len & 1 == 0 {
            (value_len >> 1, 0, at)
        } else {
            let (value_shared, at) = varint_at(input, at).ok_or(BAD)?;
            (value_len >> 1, value_shared, at)
        };
        let (trailer, at) = varint_at(input, at).ok_or(BAD)?;
        let shared = usize::try_from(shared).map_err(|_| BAD)?;
        let shareable = if ORDERED && restart {
            0
        } else {
            self.key.len()
        };
        if shared > shareable {
            return Err(Corruption::MalformedBlock(BlockFault::SharedKeyTooLong));
        }
        let suffix_end = usize::try_from(unshared)
            .ok()
            .and_then(|n| at.checked_add(n))
            .ok_or(BAD)?;
        let suffix = input.get(at..suffix_end).ok_or(BAD)?;
        let value_end = usize::try_from(value_len)
            .ok()
            .and_then(|n| suffix_end.checked_add(n))
            .filter(|&end| end <= input.len())
            .ok_or(BAD)?;
        let (seqno, kind) = unpack_trailer(trailer)
            .ok_or(Corruption::MalformedBlock(BlockFault::UnknownValueKind))?;
        // The keys agree on the shared prefix: the rest decides, most often its first byte
        // (a `memcmp` call per entry was a fifth of checking a block).
        let order = if ORDERED {
            let rest = &self.key[shared..];
            match (rest.first(), suffix.first()) {
                (Some(a), Some(b)) if a != b => a.cmp(b),
                _ => rest.cmp(suffix),
            }
        } else {
            Ordering::Equal
        };
        let (from, to) = (offset + suffix_end, offset + value_end);
        if value_shared == 0 {
            self.value = (from, to);
            self.value_is_built = false;
            self.deferred.clear();
            self.value_len = to - from;
        } else {
            // The value before is whole in the block, rebuilt in the buffer, or deferred: its
            // prefix is kept (or copied) and this entry's suffix appended, now or when the
            // walk settles. A restart point has no value before it (`seek_to_restart` empties
            // it), so its sharing fails here too.
            const LONGER: Corruption = Corruption::MalformedBlock(BlockFault::SharedValueTooLong);
            let value_shared = usize::try_from(value_shared).map_err(|_| LONGER)?;
            if (ORDERED && restart) || value_shared > self.value_len {
                return Err(LONGER);
            }
            if self.defer {
                if self.deferred.is_empty() {
                    self.base_built = self.value_is_built;
                }
                self.deferred.push((value_shared, from, to));
            } else if self.value_is_built {
                self.value_built.truncate(value_shared);
                self.value_built
                    .extend_from_slice(&self.block.data[from..to]);
            } else {
                let at = self.value.0;
                self.value_built.clear();
                self.value_built
                    .extend_from_slice(&self.block.data[at..at + value_shared]);
                self.value_built
                    .extend_from_slice(&self.block.data[from..to]);
            }
            self.value_is_built = true;
            self.value_len = value_shared + (to - from);
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(suffix);
        self.seqno = seqno;
        self.kind = kind;
        self.next = offset + value_end;
        Ok(order)
    }
}

/// The varint at `at` in `input` and the offset after it; `None` if it runs past the end or
/// is malformed. One-byte varints (most lengths) are read inline.
#[inline(always)]
fn varint_at(input: &[u8], at: usize) -> Option<(u64, usize)> {
    let byte = *input.get(at)?;
    if byte < 0x80 {
        return Some((u64::from(byte), at + 1));
    }
    // Two to eight bytes (a value length, an entry's sequence number) read as one word, where
    // eight bytes are there to read.
    word_varint_at(input, at).or_else(|| long_varint_at(input, at))
}

/// The varint at `at` read as one word: `None` unless eight bytes are there to read and the
/// varint ends within them.
#[inline(always)]
fn word_varint_at(input: &[u8], at: usize) -> Option<(u64, usize)> {
    let word = u64::from_le_bytes(input.get(at..at + 8)?.try_into().ok()?);
    let stops = !word & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    let used = (stops.trailing_zeros() / 8 + 1) as usize;
    Some((crate::coding::gather_7bit(word, used), at + used))
}

/// [`varint_at`] without a branch on its first byte where eight bytes are there to read: for a
/// value's length, which is one byte or two as its row is under or over 128 bytes. Rows of a
/// table whose lengths straddle 128 made that branch a coin toss the processor lost half the
/// time (a tenth of a scan's table stepping, `perf record -e cpu-clock`).
#[inline(always)]
fn length_at(input: &[u8], at: usize) -> Option<(u64, usize)> {
    word_varint_at(input, at).or_else(|| varint_at(input, at))
}

#[inline(never)]
fn long_varint_at(input: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, used) = crate::coding::get_varint(input.get(at..)?)?;
    Some((value, at + used))
}

#[cfg(test)]
mod tests;
