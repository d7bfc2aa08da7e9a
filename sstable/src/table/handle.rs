//! Block handles: where a stored block lies in the file (its trailer follows it).

use crate::coding::{Reader, put_varint};

/// Offset and stored size of a block, trailer excluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// The varint encoding used in index entries.
    pub(crate) fn encode_varint(&self, out: &mut Vec<u8>) {
        put_varint(out, self.offset);
        put_varint(out, self.size);
    }

    /// Decodes an index entry's value, which must be exactly one handle.
    pub(crate) fn decode_varint(bytes: &[u8]) -> Option<BlockHandle> {
        let mut reader = Reader::new(bytes);
        let handle = BlockHandle {
            offset: reader.varint()?,
            size: reader.varint()?,
        };
        reader.is_empty().then_some(handle)
    }

    /// The fixed 16-byte encoding used in the footer.
    pub(crate) fn encode_fixed(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..].copy_from_slice(&self.size.to_le_bytes());
        out
    }

    pub(crate) fn decode_fixed(bytes: &[u8; 16]) -> BlockHandle {
        let mut offset = [0u8; 8];
        let mut size = [0u8; 8];
        offset.copy_from_slice(&bytes[..8]);
        size.copy_from_slice(&bytes[8..]);
        BlockHandle {
            offset: u64::from_le_bytes(offset),
            size: u64::from_le_bytes(size),
        }
    }
}
