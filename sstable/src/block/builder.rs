//! Builds one block. See the module documentation of `block` for the layout.

use crate::coding::put_varint;

/// Accumulates entries into one block.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    since_restart: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// REQUIRES: `restart_interval >= 1`.
    pub(crate) fn new(restart_interval: usize) -> Self {
        assert!(restart_interval >= 1);
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval,
            since_restart: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry. REQUIRES: it sorts after the previous entry (the table builder checks).
    pub(crate) fn add(&mut self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let shared = if self.since_restart == self.restart_interval || self.entries == 0 {
            self.restarts.push(self.offset_u32());
            self.since_restart = 0;
            0
        } else {
            common_prefix(&self.last_key, user_key)
        };
        let unshared = &user_key[shared..];
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, unshared.len() as u64);
        put_varint(&mut self.buf, value.len() as u64);
        put_varint(&mut self.buf, trailer);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
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
