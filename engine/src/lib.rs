//! `strata`: the engine. It will hold the LSM store (memtables, column families, atomic write
//! batches with group commit over `strata-wal`, manifest, flush, compaction, snapshots,
//! iterators over `strata-sstable` tables) and the table layer on top (records, order-preserving
//! key encoding, fact and index tables, index maintenance, shards), driven by `strata-planner`.
//!
//! Built so far: [`fs`], the one trait all file I/O goes through, with a real implementation
//! ([`fs::OsFs`]) and a simulated one for crash and fault tests ([`fs::SimFs`]). The store
//! itself arrives with the rest of the LSM store's issue; see `docs/architecture.md`.

#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod fs;
