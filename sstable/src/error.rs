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
    MalformedBlock(BlockFault),
    /// Entries out of order, or a separator that does not match its block.
    #[error("keys out of order")]
    KeysOutOfOrder,
    /// The filter block is malformed.
    #[error("malformed filter")]
    MalformedFilter,
    /// The properties block is malformed or misses a required property.
    #[error("malformed properties: {0}")]
    MalformedProperties(PropertiesFault),
}

/// What is wrong with a block's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockFault {
    /// Fewer than the four bytes of the restart count.
    #[error("shorter than its restart count")]
    ShorterThanRestartCount,
    /// The restart array would begin before the block does.
    #[error("restart array larger than the block")]
    RestartArrayTooLarge,
    /// Entries but no restart point.
    #[error("entries without restart points")]
    EntriesWithoutRestarts,
    /// Restart points that do not ascend, or point past the entries.
    #[error("restart point out of order or bounds")]
    RestartOutOfOrder,
    /// The first restart point is not the first entry.
    #[error("first restart point is not 0")]
    FirstRestartNotZero,
    /// A restart point falls inside an entry.
    #[error("restart point inside an entry")]
    RestartInsideEntry,
    /// An entry runs past the block, or its lengths do not add up.
    #[error("entry runs past the block or has bad lengths")]
    EntryOutOfBounds,
    /// An entry shares more of the previous key than the previous key has.
    #[error("shared prefix longer than the previous key")]
    SharedKeyTooLong,
    /// An entry shares more of the previous value than the previous value has.
    #[error("shared value prefix longer than the previous value")]
    SharedValueTooLong,
    /// A restart point's value shares a prefix (it must be whole).
    #[error("a restart point's value shares a prefix")]
    RestartSharesValue,
    /// An entry's trailer names a value kind this reader does not know.
    #[error("unknown value kind")]
    UnknownValueKind,
    /// An index block entry's value does not decode as a block handle.
    #[error("index value is not a block handle")]
    IndexValueNotHandle,
}

/// What is wrong with a table's properties block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PropertiesFault {
    /// The property count does not decode.
    #[error("count")]
    Count,
    /// A name's length does not decode or runs past the block.
    #[error("name length")]
    NameLength,
    /// A name runs past the block.
    #[error("name")]
    Name,
    /// A value's length does not decode or runs past the block.
    #[error("value length")]
    ValueLength,
    /// A value runs past the block.
    #[error("value")]
    Value,
    /// Names must strictly ascend.
    #[error("names not strictly ascending")]
    NamesNotAscending,
    /// A name is not UTF-8.
    #[error("name is not UTF-8")]
    NameNotUtf8,
    /// Bytes after the last property.
    #[error("trailing bytes")]
    TrailingBytes,
    /// A property every table carries is missing.
    #[error("missing property {property}")]
    Missing {
        /// The property's name (`strata.` and one of the format's names).
        property: &'static str,
    },
    /// A numeric property is not one varint.
    #[error("property {property} is not a number")]
    NotANumber {
        /// The property's name.
        property: &'static str,
    },
    /// The data block count disagrees with the index's.
    #[error("data block count disagrees with index")]
    DataBlockCount,
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
