//! `strata-wal`: the write-ahead log format of Strata.
//!
//! A log is a sequence of 32 KiB blocks holding checksummed *fragments*; a record (one write
//! batch) is one fragment or a `First`/`Middle`/`Last` chain. Every fragment carries the log's
//! number, so stale bytes of a recycled file are never read as records, and [`LogWriter::sync`]
//! leaves *sync markers* that let a reader tell a torn tail from corruption before it. The
//! format is specified in `docs/formats/wal.md`.
//!
//! This crate is pure format code: [`LogWriter`] writes to any `io::Write`, [`LogReader`]
//! reads from a byte slice. It opens no files and starts no threads.
//!
//! ```
//! use strata_wal::{LogReader, LogWriter, RecoveryMode};
//!
//! let mut writer = LogWriter::new(Vec::new(), 7);
//! writer.add_record(b"first batch")?;
//! writer.add_record(&vec![42u8; 100_000])?; // spans four blocks
//! writer.sync(|_buffer| Ok(()))?; // for a file: |file| file.sync_data()
//! let log = writer.into_inner();
//!
//! let mut reader = LogReader::new(&log, 7, RecoveryMode::TolerateTornTail);
//! assert_eq!(&*reader.next_record()?.unwrap().data, b"first batch");
//! assert_eq!(reader.next_record()?.unwrap().data.len(), 100_000);
//! assert!(reader.next_record()?.is_none());
//! # Ok::<(), strata_wal::Error>(())
//! ```

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod error;
mod format;
mod fragment;
mod reader;
mod recovery;
mod writer;

pub use error::{Damage, Error, Result, SkippedRegion};
pub use format::{
    BLOCK_SIZE, FragmentType, HEADER_SIZE, MAX_FRAGMENT_PAYLOAD, MAX_RECORD_BYTES, PADDING_BELOW,
    RESERVED_ZERO_TYPE, SYNC_PAYLOAD_SIZE,
};
pub use fragment::peek_log_number;
pub use reader::{LogEnd, LogReader, Record};
pub use recovery::RecoveryMode;
pub use writer::LogWriter;
