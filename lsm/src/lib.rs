//! `strata-lsm`: Strata's key-value store, an LSM tree of column families over one
//! write-ahead log. It knows nothing of tables; the `strata` crate builds them on it.
//!
//! ```
//! use strata_lsm::{Options, ReadOptions, Store};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path(), Options::default())?;
//! let cf = store.default_cf();
//! store.put(&cf, b"apple", b"red")?;
//! store.put(&cf, b"pear", b"green")?;
//! let before = store.snapshot();
//! store.delete(&cf, b"apple")?;
//!
//! assert_eq!(store.get(&cf, b"apple")?, None);
//! assert_eq!(store.get_at(&cf, b"apple", &before)?.as_deref(), Some(&b"red"[..]));
//! let keys: Vec<_> = store
//!     .iter(&cf, ReadOptions::default().snapshot(&before))?
//!     .rev()
//!     .map(|kv| kv.map(|(k, _)| k))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(keys, [&b"pear"[..], &b"apple"[..]]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - Writes: a [`WriteBatch`] is committed atomically through group commit ([`commit`]):
//!   one log record per batch, one contiguous seqno range, published only once every entry is
//!   in its memtable (`write.rs`).
//! - Memtables are sealed when full and flushed to level-0 tables by a background thread
//!   (`flush.rs`); every change to the set of tables is a version edit in the manifest
//!   (`edit.rs`, `manifest.rs`). Bulk loads can skip both: [`Store::ingest`] writes sorted
//!   runs straight into tables (`ingest.rs`).
//! - Reads see a `SuperVersion` (`version.rs`) of memtables and tables; iterators merge them
//!   (`iter/`: sources, the merge, the cursor). Opening replays the manifest and the logs
//!   (`open.rs`); compaction (`compact.rs`) and the background threads (`background.rs`) keep
//!   the levels in shape.
//! - [`Store::checkpoint`] (and, for a layer holding several stores at one point,
//!   [`Store::hold_writes`]) copies a running store into an openable directory, hard-linking
//!   its immutable files (`checkpoint.rs`).
//! - All file I/O goes through [`fs::FileSystem`]: [`fs::OsFs`] for real use and
//!   [`fs::SimFs`] for crash and fault tests.
//!
//! The on-disk formats are in `docs/formats/` (`wal.md`, `sstable.md`, `batch.md`,
//! `manifest.md`).

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod error;
pub mod fs;

pub(crate) mod background;
pub(crate) mod batch;
pub(crate) mod cf;
pub mod checkpoint;
pub mod collect;
// The group commit queue, public for the loom models (`tests/loom.rs`); its `Sequencer` is
// the crate's API, re-exported at the root.
#[doc(hidden)]
pub mod commit;
pub(crate) mod compact;
pub(crate) mod edit;
pub(crate) mod flush;
pub(crate) mod format;
pub mod hooks;
pub(crate) mod ingest;
pub(crate) mod iter;
pub(crate) mod manifest;
pub(crate) mod memtable;
mod memtable_filter;
mod memtable_index;
pub(crate) mod open;
pub(crate) mod options;
#[doc(hidden)]
pub mod skiplist;
pub(crate) mod snapshot;
pub(crate) mod stats;
pub(crate) mod store;
/// The synchronisation primitives the store's concurrency core is built on (`std`'s, or
/// `loom`'s under `--cfg loom`), for a layer above whose own core must be checked by loom
/// models too (the table layer's outbox tracker), and [`sync::lock_spinning`].
pub mod sync;
pub(crate) mod version;
pub(crate) mod write;

/// A sequence number: every put or delete gets the next one; a snapshot is one.
pub type SeqNo = u64;

pub use batch::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES, WriteBatch};
pub use cf::ColumnFamily;
pub use checkpoint::{Capture, CheckpointFiles, WriteHold};
pub use commit::Sequencer;
pub use error::{BatchFault, Capacity, Corruption, Error, IoContext, IoOp, ManifestFault, Result};
pub use hooks::{FlushBarrier, Hooks};
pub use ingest::{INGEST_THREADS, IngestRun, MIN_PART_BYTES};
pub use iter::{Cursor, Iter};
pub use open::LoggedTransactions;
pub use options::{Options, ReadOptions, WriteOptions, prefix_successor};
pub use snapshot::Snapshot;
pub use stats::{CfSizes, CfStats, CollectedTable, LevelStats, WriteStalls};
pub use store::Store;
/// The byte codings the store's formats use (varints, keys compared a word at a time), for
/// the layers above, which encode their own keys and values with them.
pub use strata_sstable::coding;
/// The write-ahead log's format and reader, for tools that read a store's log files.
pub use strata_wal as wal;
pub use strata_wal::RecoveryMode;

/// Decoders of the engine's own formats, for the fuzz targets. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use super::batch::{
        BatchEntry, DecodedBatch, TransactionTrailer, decode_batch, encode_batch,
    };
    pub use super::edit::{CfMeta, ManifestState, TableMeta, VersionEdit};
    pub use super::format::MAX_FILE_NUMBER;
    pub use strata_sstable::{MAX_SEQNO, ValueKind};
}
