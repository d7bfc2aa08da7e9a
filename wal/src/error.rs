//! Errors and damage reports. Corruption is its own variant with a structured reason, never an
//! `io::Error` and never a string (STYLE.md #3).

use std::io;

/// What is wrong with a region of a log. Carried by [`Error::Corruption`] and by every
/// [`SkippedRegion`] report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// The stored checksum does not match the fragment's header and payload.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The masked checksum stored in the header.
        stored: u32,
        /// The masked checksum computed over the bytes read.
        computed: u32,
    },
    /// The header's payload length runs past the end of its block, which the writer never does.
    #[error("payload length {length} runs past the block end ({room} bytes of room)")]
    LengthPastBlock {
        /// The payload length in the header.
        length: usize,
        /// How many payload bytes the block had room for.
        room: usize,
    },
    /// The input ends inside a fragment header or payload.
    #[error("the log ends inside a fragment")]
    Truncated,
    /// A header of all zero bytes: preallocated, recycled or zeroed space.
    #[error("zero-filled space where a fragment header was expected")]
    ZeroFilled,
    /// A checksummed fragment whose type byte this version does not know.
    #[error("unknown fragment type {0}")]
    UnknownType(u8),
    /// A checksummed fragment written for another log file: stale bytes of a recycled or older
    /// file, never records of this one.
    #[error("fragment belongs to log {found}, not this log")]
    OtherLog {
        /// The log number in the fragment's header.
        found: u32,
    },
    /// A `Middle` or `Last` fragment with no `First` before it.
    #[error("record continuation without a start")]
    OrphanFragment,
    /// A `First` fragment whose record never reached its `Last`.
    #[error("record started but never finished")]
    IncompleteRecord,
    /// The padding at the end of a block, too short for a header, is not all zero.
    #[error("non-zero bytes in block-end padding")]
    NonZeroPadding,
    /// A sync marker whose payload has the wrong size or attests an offset past its own start.
    #[error("malformed sync marker")]
    BadSyncMarker,
    /// An assembled record exceeds [`crate::MAX_RECORD_BYTES`].
    #[error("record longer than the {} byte limit", crate::MAX_RECORD_BYTES)]
    RecordTooLarge,
    /// The log is shorter than the offset the caller knows to have been durable.
    #[error("the log is shorter than its known durable length {known_durable}")]
    ShorterThanDurable {
        /// The durable length the caller supplied.
        known_durable: u64,
    },
}

/// A region of the log that the reader did not return as records, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRegion {
    /// Byte offset where the region starts.
    pub offset: u64,
    /// Length of the region in bytes.
    pub len: u64,
    /// What was wrong at its start.
    pub reason: Damage,
}

/// The error type of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log is damaged where the recovery mode does not allow it.
    #[error("log corruption at offset {offset}: {reason}")]
    Corruption {
        /// Byte offset where the damage starts.
        offset: u64,
        /// What is wrong there.
        reason: Damage,
    },
    /// A record handed to the writer is larger than [`crate::MAX_RECORD_BYTES`]. Nothing was
    /// written, and the writer stays usable.
    #[error("record of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// The record's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The underlying writer failed.
    #[error("log I/O failed: {0}")]
    Io(#[from] io::Error),
    /// An earlier write or sync failed at `offset`, so how much of the log reached the file is
    /// unknown; the writer refuses further work. Open a new log.
    #[error("the log writer failed at offset {offset} and accepts no more writes")]
    Poisoned {
        /// The log offset at which the failed operation started.
        offset: u64,
    },
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
