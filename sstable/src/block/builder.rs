//! Builds one block. See the module documentation of `block` for the layout.

use crate::coding::put_varint;

/// The shortest prefix a value shares with the value before it that a block with shared
/// values stores as shared; a shorter one is stored whole.
/// TUNING: a shared value is rebuilt (copied) on each read while a whole one is read where it
/// lies, so sharing a few bytes is not worth the copy; a stored row's names section (the
/// reason values share, `docs/formats/records.md`) is tens to hundreds of bytes.
pub(crate) const MIN_SHARED_VALUE: usize = 16;

/// Accumulates entries into one block.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    since_restart: usize,
    /// Bytes of entries after which the next entry is a restart point, even before
    /// `restart_interval` entries.
    restart_bytes: usize,
    last_key: Vec<u8>,
    /// Values may share a prefix with the value before them (format version 2).
    share_values: bool,
    last_value: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// REQUIRES: `restart_interval >= 1`. `share_values`: the block layout of format version
    /// 2, whose entries may store only what their value adds to the previous value's prefix.
    pub(crate) fn new(restart_interval: usize, share_values: bool) -> Self {
        assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval,
            since_restart: 0,
            restart_bytes: usize::MAX,
            last_key: Vec::new(),
            share_values,
            last_value: Vec::new(),
            entries: 0,
        }
    }

    /// Also makes an entry a restart point once the entries since the last one take
    /// `bytes` or more (at least 1), so that a seek's walk from a restart point stays short
    /// where entries are large (see [`TableOptions::restart_bytes`](crate::TableOptions)).
    pub(crate) fn with_restart_bytes(mut self, bytes: usize) -> Self {
        self.restart_bytes = bytes.max(1);
        self
    }

    /// Appends an entry. REQUIRES: it sorts after the previous entry (the table builder checks).
    pub(crate) fn add(&mut self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let since = self.restarts.last().map_or(0, |&at| at as usize);
        let restart = self.since_restart == self.restart_interval
            || self.entries == 0
            || self.buf.len() - since >= self.restart_bytes;
        let shared = if restart {
            self.restarts.push(self.offset_u32());
            self.since_restart = 0;
            0
        } else {
            common_prefix(&self.last_key, user_key)
        };
        let unshared = &user_key[shared..];
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, unshared.len() as u64);
        let value_shared = if self.share_values {
            // A restart point's value is whole: a seek starts there with no value before it.
            let common = if restart {
                0
            } else {
                common_prefix(&self.last_value, value)
            };
            let value_shared = if common >= MIN_SHARED_VALUE {
                common
            } else {
                0
            };
            let rest = (value.len() - value_shared) as u64;
            if value_shared > 0 {
                put_varint(&mut self.buf, rest << 1 | 1);
                put_varint(&mut self.buf, value_shared as u64);
            } else {
                put_varint(&mut self.buf, rest << 1);
            }
            self.last_value.clear();
            self.last_value.extend_from_slice(value);
            value_shared
        } else {
            put_varint(&mut self.buf, value.len() as u64);
            0
        };
        put_varint(&mut self.buf, trailer);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(&value[value_shared..]);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// The size the block will have once finished, in bytes.
    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends the restart array and returns the finished block; `reset` before reuse.
    pub(crate) fn finish(&mut self) -> &[u8] {
        for &restart in &self.restarts {
            self.buf.extend_from_slice(&restart.to_le_bytes());
        }
        let count = u32::try_from(self.restarts.len()).expect("restart count fits in u32");
        self.buf.extend_from_slice(&count.to_le_bytes());
        &self.buf
    }

    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        self.last_value.clear();
        self.entries = 0;
    }

    fn offset_u32(&self) -> u32 {
        // The table builder cuts blocks long before 4 GiB; keys and values are limited.
        u32::try_from(self.buf.len()).expect("a block stays under 4 GiB")
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
