//! `strata-sstable`: Strata's sorted, immutable table format.
//!
//! A table holds *internal keys* `(user_key, seqno, kind)` with values, ordered by user key
//! ascending and then by seqno descending, so the newest version of a key comes first. It is
//! written once by a [`TableBuilder`] to any `io::Write` and read by [`Table`] from
//! `bytes::Bytes` (which the engine backs with a memory map). The format, with a byte table
//! and a worked example, is `docs/formats/sstable.md`.
//!
//! This crate is pure format code: no file paths, no threads.
//!
//! ```
//! use strata_sstable::{Table, TableBuilder, TableOptions, ValueKind};
//!
//! let mut file = Vec::new();
//! let mut builder = TableBuilder::new(&mut file, TableOptions::default());
//! builder.add(b"apple", 7, ValueKind::Put, b"red")?;
//! builder.add(b"apple", 3, ValueKind::Put, b"green")?;
//! builder.add(b"pear", 5, ValueKind::Delete, b"")?;
//! builder.finish()?;
//!
//! let table = Table::open(file.into(), 1, None)?;
//! assert_eq!(&table.get(b"apple", 10)?.unwrap().value[..], b"red");
//! assert_eq!(&table.get(b"apple", 5)?.unwrap().value[..], b"green"); // an older snapshot
//! assert_eq!(table.get(b"pear", 10)?.unwrap().kind, ValueKind::Delete);
//! assert!(table.get(b"plum", 10)?.is_none());
//! # Ok::<(), strata_sstable::Error>(())
//! ```

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod block;
mod cache;
pub mod coding;
mod error;
mod filter;
mod format;
#[doc(hidden)]
pub mod fuzzing;
mod key;
mod properties;
mod table;

pub use cache::BlockCache;
pub use error::{BlockFault, Corruption, Error, PropertiesFault, Region, Result};
pub use filter::hash64;
pub use format::{
    BLOCK_TRAILER_SIZE, CompressionType, FOOTER_SIZE, FORMAT_VERSION, MAGIC, MAX_BLOCK_BYTES,
    MAX_SEQNO, OLDEST_READABLE_VERSION, RESERVED_PROPERTY_PREFIX, ValueKind,
};
pub use key::InternalKey;
pub use properties::TableProperties;
pub use table::{
    Compression, Entry, FoundRef, Table, TableBuilder, TableInfo, TableIter, TableOptions,
};
pub use table::{MAX_KEY_BYTES, MAX_VALUE_BYTES, prefetch};
