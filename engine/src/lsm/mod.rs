//! The key-value layer: an LSM tree of column families over one write-ahead log.
//!
//! - Writes: a [`WriteBatch`] is committed atomically through group commit ([`commit`]):
//!   one log record per batch, one contiguous seqno range, published only once every entry is
//!   in its memtable (`write.rs`).
//! - Memtables are sealed when full and flushed to level-0 tables by a background thread
//!   (`flush.rs`); every change to the set of tables is a version edit in the manifest
//!   (`edit.rs`, `manifest.rs`).
//! - Reads see a `SuperVersion` (`version.rs`) of memtables and tables; iterators merge them
//!   (`iter.rs`). Opening replays the manifest and the logs (`open.rs`).
//!
//! The on-disk formats are in `docs/formats/` (`wal.md`, `sstable.md`, `batch.md`,
//! `manifest.md`).

pub(crate) mod background;
pub(crate) mod batch;
pub(crate) mod cf;
pub mod collect;
#[doc(hidden)]
pub mod commit;
pub(crate) mod compact;
pub(crate) mod edit;
pub(crate) mod flush;
pub(crate) mod format;
pub(crate) mod iter;
pub(crate) mod manifest;
pub(crate) mod memtable;
pub(crate) mod open;
pub(crate) mod options;
#[doc(hidden)]
pub mod skiplist;
pub(crate) mod snapshot;
pub(crate) mod store;
pub(crate) mod sync;
pub(crate) mod version;
pub(crate) mod write;

/// A sequence number: every put or delete gets the next one; a snapshot is one.
pub type SeqNo = u64;

pub use batch::{MAX_BATCH_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES, WriteBatch};
pub use cf::ColumnFamily;
pub use iter::{Cursor, Iter};
pub use options::{Options, ReadOptions, WriteOptions};
pub use snapshot::Snapshot;
pub use store::{CfStats, CollectedTable, LevelStats, Store, WriteStalls};

/// Decoders of the engine's own formats, for the fuzz targets. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use super::batch::{BatchEntry, DecodedBatch, decode_batch, encode_batch};
    pub use super::edit::{CfMeta, ManifestState, TableMeta, VersionEdit};
    pub use super::format::MAX_FILE_NUMBER;
}
