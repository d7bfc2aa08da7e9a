//! The on-disk numbers of the log format, in one place. The byte-level specification, with a
//! grammar and a worked example, is `docs/formats/wal.md`.
//!
//! These numbers are append-only: a tag that is retired stays here, reserved, with a comment
//! saying so, and is never reused for something else.

/// Size of a log block in bytes. A fragment never crosses a block boundary, so every block
/// starts with a fragment header: that is what lets a reader resynchronise after damage.
///
/// 32 KiB is LevelDB's choice; it keeps the padding lost at block ends below 0.04 % and bounds
/// what one damaged region can take with it.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a fragment header in bytes:
///
/// | offset | size | field                                                   |
/// |-------:|-----:|---------------------------------------------------------|
/// | 0      | 4    | masked CRC-32 of bytes 4..11 of the header and the payload |
/// | 4      | 2    | payload length, little-endian                            |
/// | 6      | 1    | fragment type ([`FragmentType`])                         |
/// | 7      | 4    | log number, little-endian                                |
pub const HEADER_SIZE: usize = 11;

/// Offsets of the header fields.
pub(crate) const CHECKSUM_AT: usize = 0;
pub(crate) const LENGTH_AT: usize = 4;
pub(crate) const TYPE_AT: usize = 6;
pub(crate) const LOG_NUMBER_AT: usize = 7;

/// The largest payload one fragment can carry: a whole block less its header.
pub const MAX_FRAGMENT_PAYLOAD: usize = BLOCK_SIZE - HEADER_SIZE;

/// The largest record the writer accepts and the reader assembles, in bytes (64 MiB).
///
/// A record is one write batch; the engine's batch limit sits below this. The bound is what
/// stops a damaged or hostile log from making the reader assemble an unbounded record.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Size of a sync marker's payload: the durable offset it attests, `u64` little-endian.
pub const SYNC_PAYLOAD_SIZE: usize = 8;

/// The kind of a fragment, stored in header byte 6.
///
/// A record that fits in the rest of the current block is written as one `Full` fragment;
/// a longer one as `First`, zero or more `Middle`, and `Last`. `Sync` is not part of any record:
/// it is the writer's attestation that every byte before the offset it carries was durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FragmentType {
    /// A whole record in one fragment.
    Full = 1,
    /// The first fragment of a record that spans blocks.
    First = 2,
    /// An inner fragment of a record that spans blocks.
    Middle = 3,
    /// The last fragment of a record that spans blocks.
    Last = 4,
    /// A sync marker: the payload is the `u64` offset up to which the log was durable when the
    /// marker was written (the end of the previous completed sync).
    Sync = 5,
}

/// A block remainder shorter than this many bytes may be zero padding: the writer pads when a
/// header no longer fits, or when a sync marker (header and payload) no longer fits. A reader
/// takes an all-zero remainder of this size as padding, not as zero-filled damage.
pub const PADDING_BELOW: usize = HEADER_SIZE + SYNC_PAYLOAD_SIZE;

/// Type byte 0 is reserved and never written: zero-filled space (a preallocated or recycled
/// file, a trailer, a sector the kernel zeroed) must never read as a fragment.
pub const RESERVED_ZERO_TYPE: u8 = 0;

impl FragmentType {
    /// Decodes a type byte; `None` for 0 and for every value this version does not know.
    pub fn from_byte(byte: u8) -> Option<FragmentType> {
        match byte {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            5 => Some(FragmentType::Sync),
            _ => None,
        }
    }
}

/// Offset within a block where the current block ends, given an absolute log offset.
pub(crate) fn block_remaining(offset: u64) -> usize {
    // The remainder is < BLOCK_SIZE, so the narrowing is exact.
    BLOCK_SIZE - (offset % BLOCK_SIZE as u64) as usize
}

/// CRC-32 masking, as LevelDB does it: storing the CRC of data that itself contains CRCs (a log
/// of logs, a record holding an SSTable footer) makes accidental matches likelier, so the
/// stored value is rotated and offset.
const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC-32 for storage.
pub(crate) fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Computes the masked checksum stored in a header: CRC-32 over header bytes 4..11 (length,
/// type, log number) followed by the payload.
pub(crate) fn fragment_checksum(header_tail: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(header_tail);
    hasher.update(payload);
    mask_crc(hasher.finalize())
}

const _: () = assert!(HEADER_SIZE == LOG_NUMBER_AT + 4);
const _: () = assert!(CHECKSUM_AT + 4 == LENGTH_AT && LENGTH_AT + 2 == TYPE_AT);
const _: () = assert!(TYPE_AT + 1 == LOG_NUMBER_AT);
// The length field is a u16: a fragment payload must fit in it.
const _: () = assert!(MAX_FRAGMENT_PAYLOAD <= u16::MAX as usize);
// A sync marker must fit in a fresh block.
const _: () = assert!(HEADER_SIZE + SYNC_PAYLOAD_SIZE <= BLOCK_SIZE);
// The reserved zero type is not a valid fragment type.
const _: () = assert!(RESERVED_ZERO_TYPE != FragmentType::Full as u8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_bytes_round_trip_and_zero_is_reserved() {
        for t in [
            FragmentType::Full,
            FragmentType::First,
            FragmentType::Middle,
            FragmentType::Last,
            FragmentType::Sync,
        ] {
            assert_eq!(FragmentType::from_byte(t as u8), Some(t));
        }
        assert_eq!(FragmentType::from_byte(RESERVED_ZERO_TYPE), None);
        assert_eq!(FragmentType::from_byte(6), None);
        assert_eq!(FragmentType::from_byte(0xff), None);
    }

    #[test]
    fn masking_changes_the_value_and_is_a_bijection_on_samples() {
        let samples = [0u32, 1, 0xdead_beef, u32::MAX];
        for crc in samples {
            assert_ne!(mask_crc(crc), crc);
        }
        let masked: std::collections::HashSet<u32> = samples.iter().map(|&c| mask_crc(c)).collect();
        assert_eq!(masked.len(), samples.len());
    }

    #[test]
    fn block_remaining_counts_to_the_boundary() {
        assert_eq!(block_remaining(0), BLOCK_SIZE);
        assert_eq!(block_remaining(1), BLOCK_SIZE - 1);
        assert_eq!(block_remaining(BLOCK_SIZE as u64 - 1), 1);
        assert_eq!(block_remaining(BLOCK_SIZE as u64), BLOCK_SIZE);
    }
}
