//! The on-disk numbers of the table format, in one place. The specification, with a byte table
//! and a worked example, is `docs/formats/sstable.md`.
//!
//! These numbers are append-only: a retired value stays here, reserved, and is never reused.

/// Magic number at the very end of every table file: "STRATAST" read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"STRATAST");

/// The newest format version, written in the footer. Readers refuse versions they do not know.
/// - 1: every entry stores its value whole. What a builder writes by default.
/// - 2: an entry's value may share a prefix with the value before it (`block`'s layout),
///   written when `TableOptions::share_value_prefixes` is on. Both are read; compaction
///   writes whichever the store's options say, so a store moves between them as it compacts.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format version this build still reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// The first format version whose blocks share value prefixes.
pub(crate) const SHARED_VALUES_VERSION: u32 = 2;

const _: () = assert!(OLDEST_READABLE_VERSION <= SHARED_VALUES_VERSION);
const _: () = assert!(SHARED_VALUES_VERSION <= FORMAT_VERSION);

/// Size of the fixed footer at the end of the file, in bytes:
///
/// | offset | size | field |
/// |---:|---:|---|
/// | 0 | 16 | index block handle (offset u64, size u64) |
/// | 16 | 16 | filter block handle |
/// | 32 | 16 | properties block handle |
/// | 48 | 4 | format version |
/// | 52 | 4 | masked CRC-32 of bytes 0..52 |
/// | 56 | 8 | magic |
pub const FOOTER_SIZE: usize = 64;
pub(crate) const FOOTER_VERSION_AT: usize = 48;
pub(crate) const FOOTER_CHECKSUM_AT: usize = 52;
pub(crate) const FOOTER_MAGIC_AT: usize = 56;

/// Every stored block is followed by a trailer: compression type (1 byte) and a masked CRC-32
/// (4 bytes) of the stored block bytes followed by the compression byte.
pub const BLOCK_TRAILER_SIZE: usize = 5;

/// How a stored block is compressed (trailer byte 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as is; read without copying.
    None = 0,
    /// `varint(uncompressed length) ‖ zstd frame`.
    Zstd = 1,
}

impl CompressionType {
    /// Decodes a trailer byte; `None` for values this version does not know.
    pub fn from_byte(byte: u8) -> Option<CompressionType> {
        match byte {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Zstd),
            _ => None,
        }
    }
}

/// What an entry records about its user key. Byte 0 is reserved, never written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ValueKind {
    /// The key has this value.
    Put = 1,
    /// The key was deleted (a tombstone); the value is empty.
    Delete = 2,
}

impl ValueKind {
    /// Decodes a kind byte; `None` for 0 and values this version does not know.
    pub fn from_byte(byte: u8) -> Option<ValueKind> {
        match byte {
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Delete),
            _ => None,
        }
    }
}

/// Sequence numbers are 56 bits: an entry's trailer packs `seqno << 8 | kind` into a u64.
pub const MAX_SEQNO: u64 = (1 << 56) - 1;

/// The largest block the reader will decompress or accept, in bytes (64 MiB). Bounds what a
/// damaged or hostile table can make the reader allocate.
pub const MAX_BLOCK_BYTES: usize = 64 * 1024 * 1024;

/// Prefix of the property names the table format itself writes; engine-defined properties
/// may not use it.
pub const RESERVED_PROPERTY_PREFIX: &str = "strata.";

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masked CRC-32 (the same masking as the WAL): rotate right by 15, add a constant.
pub(crate) fn masked_crc(parts: &[&[u8]]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().rotate_right(15).wrapping_add(MASK_DELTA)
}

const _: () = assert!(FOOTER_MAGIC_AT + 8 == FOOTER_SIZE);
const _: () = assert!(FOOTER_CHECKSUM_AT + 4 == FOOTER_MAGIC_AT);
const _: () = assert!(FOOTER_VERSION_AT + 4 == FOOTER_CHECKSUM_AT);
const _: () = assert!(FOOTER_VERSION_AT == 3 * 16);
const _: () = assert!(MAX_SEQNO.leading_zeros() == 8);
