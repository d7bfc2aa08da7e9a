//! `strata` will hold the engine: the LSM store (file-system trait, memtables, column
//! families, atomic write batches with group commit over `strata-wal`, manifest, flush,
//! compaction, snapshots, iterators) and the table layer on top (records, order-preserving key
//! encoding, fact and index tables, sync and async index maintenance, shards), driven by
//! `strata-planner`.
//!
//! It is empty today: nothing here pretends to work. The LSM store arrives with its own issue
//! ("The LSM store"); see `docs/architecture.md` for the map.
