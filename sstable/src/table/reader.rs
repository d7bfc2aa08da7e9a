//! Opens a table from bytes and answers point lookups.
//!
//! 1. `open` checks the footer (size, magic, version, checksum), reads and validates the
//!    properties block, and checks that the index and filter blocks lie within the file. The
//!    first lookup or scan reads, checksums and validates the filter and the index (decoded
//!    whole: its keys must ascend and its handles must tile the data region from offset 0,
//!    one per data block), so opening a store of many tables to read a few is cheap.
//! 2. A data block's checksum is verified on its first read; a bit per block remembers it.
//!    Uncompressed blocks are then read in place (zero-copy); compressed ones are decompressed
//!    into the shared [`BlockCache`].
//! 3. `get` asks the bloom filter, binary-searches the index for the first separator at or
//!    after the target, and seeks in that block (or, if the target falls in the gap after its
//!    last key, the next block's first entry).

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::block::{Block, BlockIter};
use crate::cache::BlockCache;
use crate::coding::Reader;
use crate::error::{BlockFault, Corruption, Error, PropertiesFault, Region, Result, corruption};
use crate::filter::BloomFilter;
use crate::format::{
    BLOCK_TRAILER_SIZE, CompressionType, FOOTER_CHECKSUM_AT, FOOTER_MAGIC_AT, FOOTER_SIZE,
    FOOTER_VERSION_AT, FORMAT_VERSION, MAGIC, MAX_BLOCK_BYTES, OLDEST_READABLE_VERSION,
    SHARED_VALUES_VERSION, ValueKind, masked_crc,
};
use crate::key::compare;
use crate::properties::TableProperties;
use crate::table::{BlockHandle, TableIter};

/// How many keys ahead [`Table::multi_get`] starts loading the restart array of the block a
/// key will need, then its restart entries, then the interval the key's seek will walk.
/// TUNING: each stage far enough behind the one before for its loads to have arrived (a
/// fetched row takes a few hundred nanoseconds, a load from memory about one hundred), the
/// last near enough that its lines are still cached when the key's turn comes. (12/8/4,
/// 16/10/4, 8/5/2 and 6/4/2 measured the same within the noise on spread fetches.)
const AHEAD_RESTART_ARRAY: usize = 12;
const AHEAD_RESTART_ENTRIES: usize = 8;
const AHEAD_INTERVAL: usize = 4;

/// How many entries [`Table::multi_get`] steps forward from where its last key left the
/// block's iterator before it seeks instead.
/// TUNING: ascending keys that are neighbours in the table (a clustered fetch: the rows an
/// index names for one date, written in the same days) are found in a step or two, where a
/// seek binary-searches the restart points and walks up to an interval; a key further on
/// costs at most these steps more than a seek would.
pub(crate) const MULTI_GET_STEPS: usize = 8;

/// The newest visible version of a key, as `get` returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its sequence number.
    pub seqno: u64,
    /// Put, or Delete (a tombstone: the key is deleted as of `seqno`).
    pub kind: ValueKind,
    /// The value; empty for a tombstone. Shares the table's bytes when the block is stored
    /// uncompressed.
    pub value: Bytes,
}

/// An entry [`Table::multi_get_each`] found, read where its block holds it.
pub struct FoundRef<'a> {
    iter: &'a BlockIter,
}

impl FoundRef<'_> {
    /// Its sequence number.
    pub fn seqno(&self) -> u64 {
        self.iter.seqno()
    }

    /// Put, or Delete.
    pub fn kind(&self) -> ValueKind {
        self.iter.kind()
    }

    /// The value, borrowed; empty for a tombstone.
    pub fn value(&self) -> &[u8] {
        self.iter.value()
    }

    /// The entry, its value sharing the table's bytes (as [`Table::get`] returns it).
    pub fn to_entry(&self) -> Entry {
        Entry {
            seqno: self.iter.seqno(),
            kind: self.iter.kind(),
            value: self.iter.value_bytes(),
        }
    }
}

/// The decoded index, as parallel arrays with the separator keys packed into one buffer: a
/// binary search over 30,000 blocks then touches a few compact arrays instead of chasing one
/// heap pointer per step.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// The first eight bytes of each separator as a big-endian number (zero-padded): a step
    /// of a search compares these, one cache line holding eight of them, and reads the key
    /// itself only when they are equal. (Comparing the keys cost two or three cache misses
    /// a step in a large table's index: `key_ends`, `keys`, `seqnos`.)
    heads: Vec<u64>,
    /// Separator user keys, back to back.
    keys: Vec<u8>,
    /// `key_ends[i]` is where separator `i` ends in `keys`.
    key_ends: Vec<usize>,
    seqnos: Vec<u64>,
    handles: Vec<BlockHandle>,
}

impl Index {
    pub(crate) fn len(&self) -> usize {
        self.handles.len()
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    pub(crate) fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// The first block whose separator is at or after `(user_key, seqno)`: the only block
    /// that can hold the first entry at or after it, unless it falls after that block's last
    /// key (then it is the next block's first entry).
    pub(crate) fn search(&self, user_key: &[u8], seqno: u64) -> usize {
        let head = head(user_key);
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if self.below(mid, head, user_key, seqno) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Whether separator `i` is before `(user_key, seqno)`, whose head is `head`. Heads keep
    /// the keys' order (a zero-padded prefix of a shorter key sorts as the key does), so
    /// unequal heads decide.
    #[inline]
    fn below(&self, i: usize, head: u64, user_key: &[u8], seqno: u64) -> bool {
        match self.heads[i].cmp(&head) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => compare(self.key(i), self.seqnos[i], user_key, seqno).is_lt(),
        }
    }

    /// [`Index::search`] for a key known to be at or after the one whose answer was `from`
    /// (keys asked in ascending order): gallops from `from`, so a run of nearby keys costs a
    /// few comparisons each instead of a search of the whole index.
    pub(crate) fn search_from(&self, user_key: &[u8], seqno: u64, from: usize) -> usize {
        let head = head(user_key);
        let below = |i: usize| self.below(i, head, user_key, seqno);
        let len = self.len();
        let mut low = from.min(len);
        let mut step = 1;
        // The answer is in [low, high].
        let mut high = len;
        while low < len {
            let probe = (low + step - 1).min(len - 1);
            if below(probe) {
                low = probe + 1;
                step *= 2;
            } else {
                high = probe;
                break;
            }
        }
        while low < high {
            let mid = low + (high - low) / 2;
            if below(mid) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    fn push(&mut self, key: &[u8], seqno: u64, handle: BlockHandle) {
        self.heads.push(head(key));
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.seqnos.push(seqno);
        self.handles.push(handle);
    }

    /// The offset just past the last data block (0 for a table without one).
    pub(crate) fn data_end(&self) -> u64 {
        self.handles.last().map_or(0, |h| {
            h.offset + h.size + crate::format::BLOCK_TRAILER_SIZE as u64
        })
    }

    fn last(&self) -> Option<(&[u8], u64)> {
        let i = self.len().checked_sub(1)?;
        Some((self.key(i), self.seqnos[i]))
    }
}

/// The first eight bytes of `key`, zero-padded, as a big-endian number: `head(a) < head(b)`
/// implies `a < b`.
#[inline]
fn head(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

/// An open table. Cloning is cheap; clones share the bytes, index and filter.
#[derive(Clone, Debug)]
pub struct Table {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    data: Bytes,
    id: u64,
    cache: Option<Arc<BlockCache>>,
    properties: TableProperties,
    index_handle: BlockHandle,
    filter_handle: BlockHandle,
    /// Where the data blocks end: the first meta block.
    data_end: u64,
    /// The table's blocks share value prefixes (format version 2 and later).
    shares_values: bool,
    /// The index and the filter, read and validated on first use.
    loaded: OnceLock<Loaded>,
}

/// What a table reads on its first lookup or scan, not at open: a process that opens a store
/// of many tables to read a few keys does not pay for checksumming and decoding every
/// table's index and filter.
#[derive(Debug)]
struct Loaded {
    index: Index,
    filter: BloomFilter,
    /// One bit per data block: its checksum has been verified and its restart points checked.
    verified: Vec<AtomicU64>,
    /// One bit per data block: all its entries have been checked (on its
    /// [`WHOLE_CHECK_READ`]th read), so its reads need not check them again.
    whole: Vec<AtomicU64>,
    /// Per data block, how many reads it has had since its first, up to [`WHOLE_CHECK_READ`].
    reads: Box<[AtomicU8]>,
}

/// The read of a data block on which all its entries are checked at once, so that its later
/// reads step without comparing (reads before it check each entry they step to).
/// TUNING: a block read again and again (a hot range, a small table) is soon checked whole,
/// while a block of a large table that random fetches read once or twice — most of its blocks
/// — never pays for walking entries no read asked for. Checking on the second read cost a
/// scattered fetch of ten orders out of 1.05M a seventh of its time (the walk's cache misses,
/// issue 45); checking each step of a block read again and again cost a fetch-heavy query
/// 5–9 % (issue 25, tenth session).
pub(crate) const WHOLE_CHECK_READ: u8 = 8;

impl Table {
    /// Opens a table over its whole file, validating the footer and the properties, and the
    /// bounds of the index and filter blocks. The index and the filter themselves are read,
    /// checksummed and validated on the table's first lookup or scan, whose error a damaged
    /// one then is. `id` names the table in the shared `cache` (the engine passes the file
    /// number); tables sharing a cache must have distinct ids.
    pub fn open(data: Bytes, id: u64, cache: Option<Arc<BlockCache>>) -> Result<Table> {
        let footer_at = data.len().checked_sub(FOOTER_SIZE).ok_or_else(|| {
            corruption(Region::Footer, 0, Corruption::TooShort { len: data.len() })
        })?;
        let footer = &data[footer_at..];
        let fail = |what| corruption(Region::Footer, footer_at as u64, what);
        let magic = u64::from_le_bytes(array(&footer[FOOTER_MAGIC_AT..]));
        if magic != MAGIC {
            return Err(fail(Corruption::BadMagic { found: magic }));
        }
        let stored = u32::from_le_bytes(array(&footer[FOOTER_CHECKSUM_AT..]));
        let computed = masked_crc(&[&footer[..FOOTER_CHECKSUM_AT]]);
        if stored != computed {
            return Err(fail(Corruption::ChecksumMismatch { stored, computed }));
        }
        let version = u32::from_le_bytes(array(&footer[FOOTER_VERSION_AT..]));
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(fail(Corruption::UnsupportedVersion(version)));
        }
        let index_handle = BlockHandle::decode_fixed(&array(&footer[0..]));
        let filter_handle = BlockHandle::decode_fixed(&array(&footer[16..]));
        let properties_handle = BlockHandle::decode_fixed(&array(&footer[32..]));

        let body = data.slice(..footer_at);
        let properties_block = read_block(&body, properties_handle, Region::Properties)?;
        let properties = TableProperties::decode(&properties_block)
            .map_err(|what| corruption(Region::Properties, properties_handle.offset, what))?;
        stored_block(&body, filter_handle, Region::Filter)?;
        stored_block(&body, index_handle, Region::Index)?;
        let data_end = filter_handle
            .offset
            .min(properties_handle.offset)
            .min(index_handle.offset);
        Ok(Table {
            inner: Arc::new(Inner {
                data: body,
                id,
                cache,
                properties,
                index_handle,
                filter_handle,
                data_end,
                shares_values: version >= SHARED_VALUES_VERSION,
                loaded: OnceLock::new(),
            }),
        })
    }

    /// The index and the filter, read and validated on first use (an error is not kept: the
    /// next call reads again).
    fn loaded(&self) -> Result<&Loaded> {
        let inner = &*self.inner;
        if let Some(loaded) = inner.loaded.get() {
            return Ok(loaded);
        }
        let filter_block = read_block(&inner.data, inner.filter_handle, Region::Filter)?;
        let filter = BloomFilter::new(filter_block)
            .map_err(|what| corruption(Region::Filter, inner.filter_handle.offset, what))?;
        let index_block = read_block(&inner.data, inner.index_handle, Region::Index)?;
        let index = decode_index(
            index_block,
            inner.index_handle.offset,
            inner.data_end,
            inner.shares_values,
        )?;
        if index.len() as u64 != inner.properties.data_blocks {
            let what = Corruption::MalformedProperties(PropertiesFault::DataBlockCount);
            return Err(corruption(Region::Index, inner.index_handle.offset, what));
        }
        let bits = || {
            (0..index.len().div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        let (verified, whole) = (bits(), bits());
        let reads = (0..index.len()).map(|_| AtomicU8::new(0)).collect();
        Ok(inner.loaded.get_or_init(|| Loaded {
            index,
            filter,
            verified,
            whole,
            reads,
        }))
    }

    /// What the table holds, from its properties block.
    pub fn properties(&self) -> &TableProperties {
        &self.inner.properties
    }

    /// The newest version of `user_key` with a seqno at most `snapshot_seqno`, tombstones
    /// included; `None` when the table has no visible version. Consults the bloom filter first.
    pub fn get(&self, user_key: &[u8], snapshot_seqno: u64) -> Result<Option<Entry>> {
        let loaded = self.loaded()?;
        if !loaded.filter.may_contain(user_key) {
            return Ok(None);
        }
        let first = loaded.index.search(user_key, snapshot_seqno);
        self.get_from(&loaded.index, first, user_key, snapshot_seqno)
    }

    /// [`Table::get`] for a key likely to be here: in the last level of a tree, where a key
    /// not found above is if it is anywhere. The block that would hold it starts loading (its
    /// restart array, read first) before the filter is asked, so that the filter's probes,
    /// each a load from anywhere in it, and the block's first loads overlap instead of
    /// following one another. A key the filter rules out costs an index search and a load
    /// it did not need.
    pub fn get_likely(&self, user_key: &[u8], snapshot_seqno: u64) -> Result<Option<Entry>> {
        let loaded = self.loaded()?;
        let first = loaded.index.search(user_key, snapshot_seqno);
        if first < loaded.index.len() {
            self.touch(&loaded.index, first);
        }
        if !loaded.filter.may_contain(user_key) {
            return Ok(None);
        }
        self.get_from(&loaded.index, first, user_key, snapshot_seqno)
    }

    /// The newest visible version of `user_key`, looked for from data block `first` on.
    fn get_from(
        &self,
        index: &Index,
        first: usize,
        user_key: &[u8],
        snapshot_seqno: u64,
    ) -> Result<Option<Entry>> {
        // At most two blocks: the target may lie after the first one's last key.
        for block_number in first..index.len().min(first + 2) {
            let block = self.data_block(block_number)?;
            if let Some(found) = self.seek_in(block_number, &block, user_key, snapshot_seqno)? {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// What [`Table::get`] returns for each of `keys`, in one pass over the table: fastest
    /// when the keys ascend (repeats are fine). The filter and the index are asked for every
    /// key first; then each data block is read once for the run of keys it may hold, and the
    /// blocks of the keys a few places ahead (eight) are prefetched, so their loads
    /// from memory overlap instead of each lookup waiting for its own.
    pub fn multi_get(&self, keys: &[&[u8]], snapshot_seqno: u64) -> Result<Vec<Option<Entry>>> {
        self.multi_get_with(keys, snapshot_seqno, true)
    }

    /// [`Table::multi_get`], asking the filter first only with `filter`. A caller that expects
    /// the keys to be here (the last level of a tree, where a key not found above must be if
    /// it is anywhere) skips it: for a hit the filter only costs its probes, one random load
    /// each (RocksDB's `optimize_filters_for_hits` drops the last level's filters for this).
    pub fn multi_get_with(
        &self,
        keys: &[&[u8]],
        snapshot_seqno: u64,
        filter: bool,
    ) -> Result<Vec<Option<Entry>>> {
        let mut out = vec![None; keys.len()];
        self.multi_get_each(keys, snapshot_seqno, filter, |i, found| {
            out[i] = Some(found.to_entry());
        })?;
        Ok(out)
    }

    /// [`Table::multi_get_with`], each entry found lent to `each` with the place of its key
    /// in `keys`, where its block holds it: a caller that only reads the value (a query
    /// building the rows it fetched) neither takes a reference on the block per key nor
    /// moves entries through a vector. Keys not found here are not reported.
    pub fn multi_get_each(
        &self,
        keys: &[&[u8]],
        snapshot_seqno: u64,
        filter: bool,
        mut each: impl FnMut(usize, FoundRef<'_>),
    ) -> Result<()> {
        let loaded = self.loaded()?;
        let index = &loaded.index;
        let ascending = keys.windows(2).all(|w| w[0] <= w[1]);
        let mut last = 0;
        let blocks: Vec<Option<usize>> = keys
            .iter()
            .map(|key| {
                if filter && !loaded.filter.may_contain(key) {
                    return None;
                }
                let b = if ascending {
                    index.search_from(key, snapshot_seqno, last)
                } else {
                    index.search(key, snapshot_seqno)
                };
                last = b;
                // Its handle is read when its loads are started, a few keys on: a large
                // table's handles do not stay cached.
                let found = index.handles.get(b)?;
                prefetch(found);
                Some(b)
            })
            .collect();
        // The lines each seek will read are loaded ahead of it, in three stages a key apart
        // from one another (see `block::hint`): a block's restart array, then its restart
        // entries, then the interval a key's walk will read. Each is asked once a block, for
        // the first key in it: keys close together share blocks, and the keys after the
        // first step forward from it through lines the processor is already streaming in
        // (asking again for every key cost a tenth of a clustered fetch).
        let mut staged: [Option<usize>; 3] = [None; 3];
        // Where the interval stage's search ended, for the seek of the key it was made for:
        // `(key's position, restart point)`, by the key's position modulo its length.
        let mut hints = [(usize::MAX, 0usize); AHEAD_INTERVAL + 1];
        let mut stage = |i: usize, hints: &mut [(usize, usize); AHEAD_INTERVAL + 1]| {
            if let Some(&Some(b)) = blocks.get(i.wrapping_add(AHEAD_RESTART_ARRAY))
                && staged[0] != Some(b)
            {
                staged[0] = Some(b);
                self.touch(index, b);
            }
            if let Some(&Some(b)) = blocks.get(i.wrapping_add(AHEAD_RESTART_ENTRIES))
                && staged[1] != Some(b)
                && let Some(data) = self.stored_unchecked(index, b)
            {
                staged[1] = Some(b);
                crate::block::touch_restart_entries(data);
            }
            if let (Some(&Some(b)), Some(key)) = (
                blocks.get(i.wrapping_add(AHEAD_INTERVAL)),
                keys.get(i.wrapping_add(AHEAD_INTERVAL)),
            ) && staged[2] != Some(b)
                && let Some(data) = self.stored_unchecked(index, b)
            {
                staged[2] = Some(b);
                if let Some(low) = crate::block::touch_interval(data, key, snapshot_seqno) {
                    let at = i.wrapping_add(AHEAD_INTERVAL);
                    hints[at % hints.len()] = (at, low);
                }
            }
        };
        // The stages of the first keys: `stage(i)` runs each stage for the key it is ahead of
        // `i`, so the positions before the first key (wrapping below zero) prime them.
        for before in (1..=AHEAD_RESTART_ARRAY).rev() {
            stage(0usize.wrapping_sub(before), &mut hints);
        }
        // The block read last and an iterator where the last key left it, kept for the next
        // keys in it: ascending keys close together step forward instead of seeking.
        let mut current: Option<(usize, BlockIter)> = None;
        for (i, (key, first)) in keys.iter().zip(&blocks).enumerate() {
            stage(i, &mut hints);
            let Some(first) = *first else {
                continue;
            };
            let hint = hints[i % hints.len()];
            let hint = (hint.0 == i).then_some(hint.1);
            for block_number in first..index.len().min(first + 2) {
                let iter = match &mut current {
                    Some((n, iter)) if *n == block_number => {
                        if !(ascending && step_to(iter, key, snapshot_seqno)) {
                            let hint = hint.filter(|_| block_number == first);
                            iter.seek_hinted(key, snapshot_seqno, hint);
                        }
                        iter
                    }
                    slot => {
                        let mut iter = self.data_block(block_number)?.iter();
                        // The hint was found in the first block's bytes.
                        let hint = hint.filter(|_| block_number == first);
                        iter.seek_hinted(key, snapshot_seqno, hint);
                        &mut slot.insert((block_number, iter)).1
                    }
                };
                match self.answer(block_number, iter, key)? {
                    // Off the block's end: the key may be in the next one.
                    None => continue,
                    Some(true) => each(i, FoundRef { iter }),
                    Some(false) => {}
                }
                break;
            }
        }
        Ok(())
    }

    /// What a block iterator positioned by a seek for `user_key` says of it: `None` when it
    /// ran off the block's end (the key may be in the next block), else whether it holds the
    /// newest visible version of the key.
    fn answer(
        &self,
        block_number: usize,
        iter: &BlockIter,
        user_key: &[u8],
    ) -> Result<Option<bool>> {
        if let Some(what) = iter.status() {
            return Err(self.block_corruption(block_number, what.clone()));
        }
        if !iter.valid() {
            return Ok(None);
        }
        Ok(Some(
            crate::coding::compare_keys(iter.user_key(), user_key).is_eq(),
        ))
    }

    /// Asks the processor to start loading the end of data block `number` (its restart
    /// array and trailer) into its cache, without waiting for it.
    fn touch(&self, index: &Index, number: usize) {
        let handle = index.handle(number);
        let (Ok(start), Ok(size)) = (usize::try_from(handle.offset), usize::try_from(handle.size))
        else {
            return;
        };
        // The block and its compression byte.
        if let Some(block) = start
            .checked_add(size)
            .and_then(|end| self.inner.data.get(start..=end))
        {
            crate::block::touch_restart_array(block);
        }
    }

    /// Data block `number`'s bytes as stored, when stored uncompressed; not checked against
    /// its checksum, so only for prefetch hints (see `block::hint`).
    fn stored_unchecked(&self, index: &Index, number: usize) -> Option<&[u8]> {
        let handle = index.handle(number);
        let start = usize::try_from(handle.offset).ok()?;
        let end = start.checked_add(usize::try_from(handle.size).ok()?)?;
        let data = &self.inner.data;
        (*data.get(end)? == CompressionType::None as u8).then(|| &data[start..end])
    }

    /// Seeks `user_key` in data block `block_number`: `Some(answer)` when the block decides
    /// it, `None` when the key may be in the next block (it falls after this one's last key).
    fn seek_in(
        &self,
        block_number: usize,
        block: &Block,
        user_key: &[u8],
        snapshot_seqno: u64,
    ) -> Result<Option<Option<Entry>>> {
        let mut iter = block.iter();
        iter.seek(user_key, snapshot_seqno);
        Ok(self
            .answer(block_number, &iter, user_key)?
            .map(|here| here.then(|| FoundRef { iter: &iter }.to_entry())))
    }

    /// An iterator over all entries, unpositioned; see [`TableIter`].
    pub fn iter(&self) -> TableIter {
        TableIter::new(self.clone())
    }

    /// The file offset where entries with user keys at or after `user_key` begin, to block
    /// granularity, read from the index alone: the difference between two offsets estimates
    /// the bytes a key range takes. Past the last key it is the end of the data blocks.
    pub fn approximate_offset(&self, user_key: &[u8]) -> u64 {
        let Ok(loaded) = self.loaded() else {
            // A damaged index estimates nothing; reading the table reports it.
            return 0;
        };
        let index = &loaded.index;
        let block = index.search(user_key, crate::format::MAX_SEQNO);
        if block < index.len() {
            index.handle(block).offset
        } else {
            index.data_end()
        }
    }

    /// The user keys of the index's separators, ascending: one per data block, each at or after
    /// its block's last key and before the next block's first, so they cut the table into
    /// pieces of about a block each. A compaction picks its split points from them. Empty for
    /// a table whose index cannot be read (reading the table reports that).
    pub fn block_separators(&self) -> Vec<&[u8]> {
        self.loaded().map_or_else(
            |_| Vec::new(),
            |loaded| {
                (0..loaded.index.len())
                    .map(|i| loaded.index.key(i))
                    .collect()
            },
        )
    }

    /// The offset just past the last data block: where the index, filter and properties begin.
    pub fn data_end_offset(&self) -> u64 {
        self.inner.data_end
    }

    /// `false` if the filter proves `user_key` absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        // A damaged filter proves nothing; reading the key reports it.
        self.loaded()
            .map_or(true, |loaded| loaded.filter.may_contain(user_key))
    }

    pub(crate) fn index(&self) -> Result<&Index> {
        self.loaded().map(|loaded| &loaded.index)
    }

    /// Data block `number`. On its first read its checksum is verified and its restart
    /// points checked, and its entries are checked as they are read, as on its next reads; on
    /// its [`WHOLE_CHECK_READ`]th read all its entries are checked at once, and its reads from
    /// then on check none (see `docs/formats/sstable.md`). A block read a few times — a query
    /// over a table file no one has read yet, random fetches over a large table — never pays
    /// for the entries it does not read; one read often pays once.
    /// Compressed blocks are decompressed on each cache miss, their checks kept with them.
    pub(crate) fn data_block(&self, number: usize) -> Result<Block> {
        let inner = &*self.inner;
        let loaded = self.loaded()?;
        let handle = loaded.index.handle(number);
        let (word, bit) = (number / 64, 1u64 << (number % 64));
        let verified = loaded.verified[word].load(AtomicOrdering::Relaxed) & bit != 0;
        let whole = loaded.whole[word].load(AtomicOrdering::Relaxed) & bit != 0;
        let (stored, kind) = stored_block(&inner.data, handle, Region::Data)?;
        let fail = |what| corruption(Region::Data, handle.offset, what);
        let to_block = |bytes| Block::new(bytes, inner.shares_values).map_err(fail);
        // The checks a read owes, by what the reads before it checked.
        let checked = |block: Block| {
            if whole {
                return Ok(block.entries_checked());
            }
            if verified {
                // Reads racing here may both check the block, or count one read less: either
                // is harmless.
                let reads = &loaded.reads[number];
                let read = reads.load(AtomicOrdering::Relaxed).saturating_add(1);
                reads.store(read, AtomicOrdering::Relaxed);
                if read + 1 < WHOLE_CHECK_READ {
                    // Restart points were checked on the first read; entries as they are read.
                    return Ok(block);
                }
                block.validate().map_err(fail)?;
                loaded.whole[word].fetch_or(bit, AtomicOrdering::Relaxed);
                return Ok(block.entries_checked());
            }
            block.check_restarts().map_err(fail)?;
            Ok::<Block, Error>(block)
        };
        if !verified {
            verify_block(&inner.data, handle, Region::Data)?;
        }
        let block = match kind {
            CompressionType::None => checked(to_block(stored)?)?,
            CompressionType::Zstd => match inner
                .cache
                .as_ref()
                .and_then(|c| c.get(inner.id, handle.offset))
            {
                // A cached block was checked as the bits say when it was read.
                Some(bytes) if whole => to_block(bytes)?.entries_checked(),
                Some(bytes) => checked(to_block(bytes)?)?,
                None => {
                    let block = checked(to_block(decompress(&stored, handle, Region::Data)?)?)?;
                    if let Some(cache) = &inner.cache {
                        cache.insert(inner.id, handle.offset, block.bytes().clone());
                    }
                    block
                }
            },
        };
        if !verified {
            loaded.verified[word].fetch_or(bit, AtomicOrdering::Relaxed);
        }
        Ok(block)
    }

    /// Remembers that data block `number` passed a check of all its entries (a read of
    /// all of them, each step checked): its reads from now on check none.
    pub(crate) fn mark_whole(&self, number: usize) {
        if let Ok(loaded) = self.loaded()
            && let Some(word) = loaded.whole.get(number / 64)
        {
            word.fetch_or(1u64 << (number % 64), AtomicOrdering::Relaxed);
        }
    }

    pub(crate) fn block_corruption(&self, number: usize, what: Corruption) -> Error {
        let offset = self.loaded().map_or(self.inner.index_handle.offset, |l| {
            l.index.handle(number).offset
        });
        corruption(Region::Data, offset, what)
    }
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

/// The stored bytes of a block and its compression, with the handle checked against the file.
fn stored_block(
    body: &Bytes,
    handle: BlockHandle,
    region: Region,
) -> Result<(Bytes, CompressionType)> {
    let bad_handle = || {
        let what = Corruption::BadHandle {
            offset: handle.offset,
            size: handle.size,
        };
        corruption(region, handle.offset, what)
    };
    let start = usize::try_from(handle.offset).map_err(|_| bad_handle())?;
    let size = usize::try_from(handle.size).map_err(|_| bad_handle())?;
    let end = start.checked_add(size).ok_or_else(bad_handle)?;
    let trailer_end = end.checked_add(BLOCK_TRAILER_SIZE).ok_or_else(bad_handle)?;
    if trailer_end > body.len() || size > MAX_BLOCK_BYTES {
        return Err(bad_handle());
    }
    let kind_byte = body[end];
    let kind = CompressionType::from_byte(kind_byte).ok_or_else(|| {
        corruption(
            region,
            handle.offset,
            Corruption::UnknownCompression(kind_byte),
        )
    })?;
    Ok((body.slice(start..end), kind))
}

fn verify_block(body: &Bytes, handle: BlockHandle, region: Region) -> Result<()> {
    // `stored_block` has checked the bounds.
    let start = handle.offset as usize;
    let end = start + handle.size as usize;
    let stored = u32::from_le_bytes(array(&body[end + 1..]));
    let computed = masked_crc(&[&body[start..end + 1]]);
    if stored != computed {
        let what = Corruption::ChecksumMismatch { stored, computed };
        return Err(corruption(region, handle.offset, what));
    }
    Ok(())
}

/// Reads, verifies and decompresses a meta block (index, filter, properties).
fn read_block(body: &Bytes, handle: BlockHandle, region: Region) -> Result<Bytes> {
    let (stored, kind) = stored_block(body, handle, region)?;
    verify_block(body, handle, region)?;
    match kind {
        CompressionType::None => Ok(stored),
        CompressionType::Zstd => decompress(&stored, handle, region),
    }
}

fn decompress(stored: &[u8], handle: BlockHandle, region: Region) -> Result<Bytes> {
    let fail = || corruption(region, handle.offset, Corruption::Decompression);
    let mut reader = Reader::new(stored);
    let raw_len = reader.len().ok_or_else(fail)?;
    if raw_len > MAX_BLOCK_BYTES {
        return Err(fail());
    }
    let frame = &stored[reader.pos()..];
    let raw = zstd::bulk::decompress(frame, raw_len).map_err(|_| fail())?;
    if raw.len() != raw_len {
        return Err(fail());
    }
    Ok(Bytes::from(raw))
}

/// Decodes the whole index: keys strictly ascending, handles tiling `[0, data_end)`.
fn decode_index(block: Bytes, offset: u64, data_end: u64, shares_values: bool) -> Result<Index> {
    let fail = |what| corruption(Region::Index, offset, what);
    let block = Block::new(block, shares_values).map_err(fail)?;
    let mut iter = block.iter();
    iter.seek_to_first();
    let mut entries = Index::default();
    let mut next_offset = 0u64;
    while iter.valid() {
        let handle = BlockHandle::decode_varint(iter.value()).ok_or(fail(
            Corruption::MalformedBlock(BlockFault::IndexValueNotHandle),
        ))?;
        if handle.offset != next_offset {
            return Err(fail(Corruption::BadHandle {
                offset: handle.offset,
                size: handle.size,
            }));
        }
        next_offset = handle
            .offset
            .checked_add(handle.size)
            .and_then(|end| end.checked_add(BLOCK_TRAILER_SIZE as u64))
            .ok_or(fail(Corruption::BadHandle {
                offset: handle.offset,
                size: handle.size,
            }))?;
        if let Some((key, seqno)) = entries.last()
            && compare(key, seqno, iter.user_key(), iter.seqno()).is_ge()
        {
            return Err(fail(Corruption::KeysOutOfOrder));
        }
        entries.push(iter.user_key(), iter.seqno(), handle);
        iter.next();
    }
    if let Some(what) = iter.status() {
        return Err(fail(what.clone()));
    }
    if next_offset != data_end {
        return Err(fail(Corruption::BadHandle {
            offset: next_offset,
            size: 0,
        }));
    }
    Ok(entries)
}

/// A hint to start loading the cache line holding the start of `value` (for the engine's
/// memtable flush too, hence public: one `unsafe` block in the workspace for it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[expect(
    unsafe_code,
    reason = "the prefetch intrinsic needs a target feature, so calling it is unsafe in Rust"
)]
pub fn prefetch<T: ?Sized>(value: &T) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: a prefetch is a hint that reads nothing architecturally and cannot fault, and
    // `value` is a valid reference anyway; SSE, which it needs, is part of every x86-64.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast()) }
}

/// A hint to start loading the cache line holding the start of `value` (none on this target).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn prefetch<T: ?Sized>(_value: &T) {}

#[cfg(test)]
mod tests;

/// Moves `iter`, valid at an entry before `(user_key, seqno)` in table order, forward to the
/// first entry at or after it, in at most [`MULTI_GET_STEPS`] steps: what a seek for it would
/// find. False, with `iter` wherever it stopped, when it was not before the target, or the
/// steps ran out, or it became invalid (the caller seeks).
fn step_to(iter: &mut BlockIter, user_key: &[u8], seqno: u64) -> bool {
    if !iter.valid() || compare(iter.user_key(), iter.seqno(), user_key, seqno).is_ge() {
        return false;
    }
    for _ in 0..MULTI_GET_STEPS {
        iter.next();
        if !iter.valid() {
            // Off the block's end: every entry left was before the target, so a seek would
            // end there too. (Or a corruption, kept in the status the caller checks.)
            return true;
        }
        if compare(iter.user_key(), iter.seqno(), user_key, seqno).is_ge() {
            return true;
        }
    }
    false
}
