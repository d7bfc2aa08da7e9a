//! Errors. Corruption carries where it was found and a structured reason, never a string.

use std::io;

/// Which part of a table a corruption was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Region {
    /// The fixed footer at the end of the file.
    Footer,
    /// The index block.
    Index,
    /// The bloom filter block.
    Filter,
    /// The properties block.
    Properties,
    /// A data block.
    Data,
}

/// What is wrong with the bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The file is shorter than a footer.
    #[error("file of {len} bytes is shorter than the footer")]
    TooShort {
        /// File length.
        len: usize,
    },
    /// The footer's magic number is wrong: not a Strata table, or truncated.
    #[error("bad magic number {found:#018x}")]
    BadMagic {
        /// The value found.
        found: u64,
    },
    /// A format version this reader does not know.
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    /// A stored checksum does not match.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// Stored value.
        stored: u32,
        /// Computed value.
        computed: u32,
    },
    /// A block handle points outside the file or at an impossible size.
    #[error("block handle {offset}+{size} outside the file")]
    BadHandle {
        /// Handle offset.
        offset: u64,
        /// Handle size.
        size: u64,
    },
    /// A compression byte this reader does not know.
    #[error("unknown compression type {0}")]
    UnknownCompression(u8),
    /// A compressed block did not decompress to its recorded size.
    #[error("block does not decompress")]
    Decompression,
    /// A block's structure (entries, restart array) is malformed.
    #[error("malformed block: {0}")]
    MalformedBlock(&'static str),
    /// Entries out of order, or a separator that does not match its block.
    #[error("keys out of order")]
    KeysOutOfOrder,
    /// The filter block is malformed.
    #[error("malformed filter")]
    MalformedFilter,
    /// The properties block is malformed or misses a required property.
    #[error("malformed properties: {0}")]
    MalformedProperties(&'static str),
}

/// The error type of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The table's bytes are damaged.
    #[error("table corruption in {region:?} at offset {offset}: {what}")]
    Corruption {
        /// The part of the table.
        region: Region,
        /// Byte offset of the block (or footer) in the file.
        offset: u64,
        /// What is wrong.
        what: Corruption,
    },
    /// Entries must be added in table order (user key ascending, then seqno descending), each
    /// `(user_key, seqno)` once. Nothing was written.
    #[error("entry out of order: each must follow the previous in (user key asc, seqno desc)")]
    OutOfOrder,
    /// A sequence number over 56 bits.
    #[error("seqno {0} exceeds the 56-bit limit")]
    SeqnoTooLarge(u64),
    /// An engine-defined property name that uses the format's reserved prefix.
    #[error("property name {0:?} uses the reserved prefix \"strata.\"")]
    ReservedPropertyName(String),
    /// A key or value larger than the format allows.
    #[error("{what} of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// "key" or "value".
        what: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A format version the builder cannot write (older than the oldest this build reads,
    /// newer than its own), or asked for after the first entry.
    #[error("cannot write table format version {0} here")]
    UnsupportedFormatVersion(u32),
    /// A builder whose writer failed refuses further work.
    #[error("the table builder failed earlier and accepts no more entries")]
    BuilderFailed,
    /// The underlying writer failed.
    #[error("table I/O failed: {0}")]
    Io(#[from] io::Error),
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn corruption(region: Region, offset: u64, what: Corruption) -> Error {
    Error::Corruption {
        region,
        offset,
        what,
    }
}
