//! Writes a table to any `io::Write`.
//!
//! 1. Entries arrive in table order; each is checked against the previous one, so an
//!    out-of-order key is an error, never a silently unsorted table.
//! 2. Entries fill a data block until it reaches the target size; the block is compressed if
//!    that saves at least 1/8 and written with its trailer.
//! 3. A block's index entry is added when the next block's first key is known, so that the
//!    separator can be short (LevelDB's `FindShortestSeparator`).
//! 4. `finish` writes the filter, properties and index blocks, then the footer.

use std::io::Write;

use crate::block::BlockBuilder;
use crate::coding::put_varint;
use crate::error::{Error, Result};
use crate::filter::{self, hash64};
use crate::format::{
    CompressionType, FOOTER_SIZE, FORMAT_VERSION, MAGIC, MAX_SEQNO, OLDEST_READABLE_VERSION,
    RESERVED_PROPERTY_PREFIX, SHARED_VALUES_VERSION, ValueKind, masked_crc,
};
use crate::key::{compare, pack_trailer};
use crate::properties::TableProperties;
use crate::table::BlockHandle;

/// The largest user key a table accepts, in bytes (64 KiB).
pub const MAX_KEY_BYTES: usize = 64 * 1024;

/// The largest value a table accepts, in bytes (32 MiB): half of the largest block.
pub const MAX_VALUE_BYTES: usize = 32 * 1024 * 1024;

/// How data blocks are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Stored as is: reads are zero-copy.
    None,
    /// zstd at the given level (1 is fast; 3 is zstd's default). A block stays uncompressed
    /// when compression does not save at least 1/8 of it.
    Zstd {
        /// zstd compression level.
        level: i32,
    },
}

/// How a table is built.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Target size of an uncompressed data block (default 4096). A block is cut once it
    /// reaches it, so blocks may be a little larger, or much larger for one large entry.
    pub block_size_bytes: usize,
    /// A full key is stored every this many entries (default 16).
    pub restart_interval: usize,
    /// ... and at the first entry after this many bytes of entries since the last full key
    /// (default 512), so that a seek, which binary-searches the full keys and then walks
    /// the entries after one, walks a few large entries, not sixteen: a table's stored rows
    /// of a few hundred bytes get a full key every two to four rows; entries under ~32 bytes
    /// (most index entries) one every sixteen still. Any value reads the same; only the size
    /// (four bytes and a key's shared prefix a full key) and the walk change. Not applied
    /// with [`TableOptions::share_value_prefixes`], whose full keys store whole values.
    pub restart_bytes: usize,
    /// Data block compression (default none).
    pub compression: Compression,
    /// Bloom filter bits per distinct user key (default 10: about 1 % false positives).
    pub bloom_bits_per_key: u32,
    /// Store a value's prefix shared with the value before it once per restart interval
    /// (format version 2; default off). When a table's rows carried their names section
    /// (record version 2) this took the tables harness's files from 1.9 to 1.4 times
    /// SQLite's size, but a read then rebuilds each such value (a copy) where it read it in
    /// place, which cost queries about a tenth of their speed (`docs/benchmarks.md`, issue
    /// 45); rows stored by layout (version 3) share only their first bytes: a choice of
    /// space over time, as block compression is.
    pub share_value_prefixes: bool,
}

/// The default [`TableOptions::restart_bytes`].
/// TUNING: a seek walks ~260 instructions an entry after its binary search: at a full key every
/// sixteen of the customers table's ~200-byte rows (one or two a block), a random fetch's seek
/// walked 7.5 entries, ~3,000 instructions; at 512 bytes it walks 2.6, ~2,000 (the group of 30
/// customers 366,273 -> 356,970 instructions a query, a point query 28,293 -> 27,710,
/// callgrind), for 1.0 % more bytes in the table's files. Index entries (tens of bytes) rarely
/// reach it before sixteen entries: their files kept their size to the byte.
pub(crate) const RESTART_BYTES: usize = 512;

/// The byte bound on a data block's restart intervals: none when values share prefixes
/// (format version 2), where a restart point stores its whole value — a row's names section
/// again each time, which the sharing exists to store once an interval.
fn restart_bytes(options: &TableOptions, shares: bool) -> usize {
    if shares {
        usize::MAX
    } else {
        options.restart_bytes
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size_bytes: 4096,
            restart_interval: 16,
            restart_bytes: RESTART_BYTES,
            compression: Compression::None,
            bloom_bits_per_key: 10,
            share_value_prefixes: false,
        }
    }
}

/// What `finish` reports about the table it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// Total bytes written.
    pub file_size: u64,
    /// The properties stored in the table.
    pub properties: TableProperties,
}

/// Builds one table. See the module documentation.
pub struct TableBuilder<W: Write> {
    writer: W,
    options: TableOptions,
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// The last data block written, waiting for the next key to pick its separator.
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    last_seqno: u64,
    key_hashes: Vec<u64>,
    properties: TableProperties,
    failed: bool,
    scratch: Vec<u8>,
    /// The format version written: 2 with [`TableOptions::share_value_prefixes`], else 1
    /// (unless [`TableBuilder::format_version`] chose).
    version: u32,
}

impl<W: Write> TableBuilder<W> {
    /// A builder writing to `writer`. Options that make no sense (a zero block size or restart
    /// interval) are raised to 1.
    pub fn new(writer: W, mut options: TableOptions) -> Self {
        options.block_size_bytes = options.block_size_bytes.max(1);
        options.restart_interval = options.restart_interval.max(1);
        let shares = options.share_value_prefixes;
        TableBuilder {
            writer,
            data_block: BlockBuilder::new(options.restart_interval, shares)
                .with_restart_bytes(restart_bytes(&options, shares)),
            index_block: BlockBuilder::new(1, shares),
            options,
            offset: 0,
            pending_handle: None,
            last_key: Vec::new(),
            last_seqno: 0,
            key_hashes: Vec::new(),
            properties: TableProperties::default(),
            failed: false,
            scratch: Vec::new(),
            version: if shares {
                SHARED_VALUES_VERSION
            } else {
                OLDEST_READABLE_VERSION
            },
        }
    }

    /// Writes format `version` (one this build reads: [`OLDEST_READABLE_VERSION`] to
    /// [`FORMAT_VERSION`]) whatever [`TableOptions::share_value_prefixes`] says: version 2
    /// shares value prefixes, version 1 does not. For tests of reading what either writes.
    /// Call it before the first `add`.
    pub fn format_version(mut self, version: u32) -> Result<Self> {
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version)
            || self.properties.entries != 0
        {
            return Err(Error::UnsupportedFormatVersion(version));
        }
        let shares = version >= SHARED_VALUES_VERSION;
        self.data_block = BlockBuilder::new(self.options.restart_interval, shares)
            .with_restart_bytes(restart_bytes(&self.options, shares));
        self.index_block = BlockBuilder::new(1, shares);
        self.version = version;
        Ok(self)
    }

    /// Adds an engine-defined property, stored in the properties block. Names starting with
    /// `strata.` are reserved for the format.
    pub fn add_property(&mut self, name: &str, value: &[u8]) -> Result<()> {
        if name.starts_with(RESERVED_PROPERTY_PREFIX) {
            return Err(Error::ReservedPropertyName(name.to_owned()));
        }
        self.properties.user.insert(name.to_owned(), value.to_vec());
        Ok(())
    }

    /// Adds an entry. It must sort after the previous one: user key ascending, then seqno
    /// descending. For a `Delete`, the value should be empty (it is stored as given).
    pub fn add(
        &mut self,
        user_key: &[u8],
        seqno: u64,
        kind: ValueKind,
        value: &[u8],
    ) -> Result<()> {
        if self.failed {
            return Err(Error::BuilderFailed);
        }
        if seqno > MAX_SEQNO {
            return Err(Error::SeqnoTooLarge(seqno));
        }
        check_size("key", user_key.len(), MAX_KEY_BYTES)?;
        check_size("value", value.len(), MAX_VALUE_BYTES)?;
        let first = self.properties.entries == 0;
        if !first && compare(&self.last_key, self.last_seqno, user_key, seqno).is_ge() {
            return Err(Error::OutOfOrder);
        }
        if let Some(handle) = self.pending_handle.take() {
            let separator = shortest_separator(&self.last_key, user_key);
            let seqno = if separator == self.last_key {
                self.last_seqno
            } else {
                MAX_SEQNO
            };
            self.add_index_entry(&separator, seqno, handle);
        }
        if self.options.bloom_bits_per_key > 0 && (first || self.last_key != user_key) {
            self.key_hashes.push(hash64(user_key));
        }
        self.data_block
            .add(user_key, pack_trailer(seqno, kind), value);
        self.record_stats(user_key, seqno, kind, value);
        if self.data_block.estimated_size() >= self.options.block_size_bytes {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Writes the rest of the table and flushes the writer; returns what was written.
    pub fn finish(mut self) -> Result<TableInfo> {
        if self.failed {
            return Err(Error::BuilderFailed);
        }
        self.flush_data_block()?;
        if let Some(handle) = self.pending_handle.take() {
            let (key, seqno) = (self.last_key.clone(), self.last_seqno);
            self.add_index_entry(&key, seqno, handle);
        }
        let filter = filter::build(&self.key_hashes, self.options.bloom_bits_per_key);
        let filter_handle = self.write_block(&filter, false)?;
        let properties_block = self.properties.encode();
        let properties_handle = self.write_block(&properties_block, false)?;
        let index = self.index_block.finish().to_vec();
        let index_handle = self.write_block(&index, false)?;

        let mut footer = [0u8; FOOTER_SIZE];
        footer[0..16].copy_from_slice(&index_handle.encode_fixed());
        footer[16..32].copy_from_slice(&filter_handle.encode_fixed());
        footer[32..48].copy_from_slice(&properties_handle.encode_fixed());
        footer[48..52].copy_from_slice(&self.version.to_le_bytes());
        let checksum = masked_crc(&[&footer[..52]]);
        footer[52..56].copy_from_slice(&checksum.to_le_bytes());
        footer[56..64].copy_from_slice(&MAGIC.to_le_bytes());
        self.write_all(&footer)?;
        self.writer.flush()?;
        Ok(TableInfo {
            file_size: self.offset,
            properties: self.properties,
        })
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.properties.entries
    }

    /// Bytes written so far (the current data block not included).
    pub fn file_size(&self) -> u64 {
        self.offset
    }

    fn record_stats(&mut self, user_key: &[u8], seqno: u64, kind: ValueKind, value: &[u8]) {
        let p = &mut self.properties;
        if p.entries == 0 {
            p.smallest_key = user_key.to_vec();
            p.smallest_seqno = seqno;
            p.largest_seqno = seqno;
        }
        p.entries += 1;
        p.deletions += u64::from(kind == ValueKind::Delete);
        p.raw_key_bytes += user_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seqno = p.smallest_seqno.min(seqno);
        p.largest_seqno = p.largest_seqno.max(seqno);
        if self.last_key != user_key || p.entries == 1 {
            self.last_key.clear();
            self.last_key.extend_from_slice(user_key);
            p.largest_key.clone_from(&self.last_key);
        }
        self.last_seqno = seqno;
    }

    fn add_index_entry(&mut self, key: &[u8], seqno: u64, handle: BlockHandle) {
        self.scratch.clear();
        handle.encode_varint(&mut self.scratch);
        self.index_block
            .add(key, pack_trailer(seqno, ValueKind::Put), &self.scratch);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let block = self.data_block.finish().to_vec();
        let compress = self.options.compression != Compression::None;
        let handle = self.write_block(&block, compress)?;
        self.data_block.reset();
        self.pending_handle = Some(handle);
        self.properties.data_blocks += 1;
        Ok(())
    }

    /// Writes a block and its trailer, compressed when asked and when that saves 1/8.
    fn write_block(&mut self, raw: &[u8], compress: bool) -> Result<BlockHandle> {
        let compressed = match (compress, self.options.compression) {
            (true, Compression::Zstd { level }) => {
                let frame = zstd::bulk::compress(raw, level)?;
                let mut stored = Vec::with_capacity(frame.len() + 5);
                put_varint(&mut stored, raw.len() as u64);
                stored.extend_from_slice(&frame);
                (stored.len() <= raw.len() - raw.len() / 8).then_some(stored)
            }
            _ => None,
        };
        let (stored, kind) = match &compressed {
            Some(stored) => (stored.as_slice(), CompressionType::Zstd),
            None => (raw, CompressionType::None),
        };
        let handle = BlockHandle {
            offset: self.offset,
            size: stored.len() as u64,
        };
        let kind_byte = [kind as u8];
        let checksum = masked_crc(&[stored, &kind_byte]);
        let mut trailer = [0u8; 5];
        trailer[0] = kind as u8;
        trailer[1..].copy_from_slice(&checksum.to_le_bytes());
        self.write_all(stored)?;
        self.write_all(&trailer)?;
        Ok(handle)
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(error) = self.writer.write_all(bytes) {
            self.failed = true;
            return Err(Error::Io(error));
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

fn check_size(what: &'static str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::TooLarge { what, len, max });
    }
    Ok(())
}

/// A short user key `s` with `last <= s < next`, or `last` itself when none is shorter.
/// REQUIRES: `last <= next`.
fn shortest_separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let shared = last.iter().zip(next).take_while(|(a, b)| a == b).count();
    if shared < last.len() && shared < next.len() {
        let byte = last[shared];
        if byte < 0xff && byte + 1 < next[shared] {
            let mut separator = last[..=shared].to_vec();
            separator[shared] += 1;
            return separator;
        }
    }
    last.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_short_and_between() {
        assert_eq!(shortest_separator(b"abcdef", b"abzzz"), b"abd");
        assert_eq!(shortest_separator(b"abc", b"abd"), b"abc"); // no room between
        assert_eq!(shortest_separator(b"ab", b"abc"), b"ab"); // a prefix
        assert_eq!(shortest_separator(b"a\xff", b"b"), b"a\xff");
        assert_eq!(shortest_separator(b"same", b"same"), b"same");
        for (last, next) in [(&b"apple"[..], &b"banana"[..]), (b"k001", b"k100")] {
            let s = shortest_separator(last, next);
            assert!(last <= s.as_slice() && s.as_slice() < next);
        }
    }
}
