//! `verify` and `repair`: does every index hold exactly the entries its table's rows give?
//!
//! At one snapshot per shard store, for each `Ready` index:
//! 1. every fact row's expected entry is looked up: absent is *missing*; present with other
//!    bytes (an `Include`d or `All` payload that differs) is *stale*;
//! 2. every index entry's row is looked up: absent is *dangling*; present but giving a
//!    different entry key (the entry was left behind by an update), or sitting in another
//!    shard than its row's (local) or its leading value's (global), is *stale*.
//!
//! `repair` re-derives each reported entry from the row as it is now, under the row's key
//! stripe (as a writer would): it deletes entries the row does not give and puts the one it
//! does.

use std::collections::{BTreeMap, BTreeSet};

use strata_planner::{IndexState, Value};

use crate::error::Result;
use crate::lsm::{ReadOptions, Snapshot, WriteBatch, WriteOptions};
use crate::table::catalog::entry::{
    decode_entry, index_entry, key_corrupt, record_corrupt, same_entry_value,
};
use crate::table::codec::key::decode_key;
use crate::table::codec::record::Record;
use crate::table::db::{Db, Table};

/// What is wrong with one index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A row has no entry.
    Missing,
    /// An entry names a row that does not exist.
    Dangling,
    /// An entry does not match its row (old values, or an outdated payload).
    Stale,
}

/// One inconsistency.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Problem {
    /// What is wrong.
    pub kind: ProblemKind,
    /// The row's primary key.
    pub primary_key: Vec<Value>,
    /// The index entry's key (for a missing entry, the key it should have).
    #[serde(skip)]
    pub entry_key: Vec<u8>,
    /// The encoded primary key.
    #[serde(skip)]
    pub(crate) pk_bytes: Vec<u8>,
    /// The shard whose index family holds (or should hold) the entry.
    #[serde(skip)]
    pub(crate) index_shard: usize,
}

/// The check of one index.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IndexReport {
    /// The index.
    pub index: String,
    /// Its state; only `Ready` indexes are checked (the others are still being built).
    pub state: IndexState,
    /// Entries read.
    pub entries: u64,
    /// Every inconsistency found.
    pub problems: Vec<Problem>,
}

impl IndexReport {
    /// Problems of one kind.
    pub fn count(&self, kind: ProblemKind) -> usize {
        self.problems.iter().filter(|p| p.kind == kind).count()
    }
}

/// The check of a table.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct VerifyReport {
    /// The table.
    pub table: String,
    /// Rows in the fact family.
    pub rows: u64,
    /// One report per index.
    pub indexes: Vec<IndexReport>,
}

impl VerifyReport {
    /// Whether no index has a problem.
    pub fn is_clean(&self) -> bool {
        self.indexes.iter().all(|ix| ix.problems.is_empty())
    }

    /// Problems over all indexes.
    pub fn problem_count(&self) -> usize {
        self.indexes.iter().map(|ix| ix.problems.len()).sum()
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "table {}: {} rows", self.table, self.rows)?;
        for ix in &self.indexes {
            writeln!(
                f,
                "  index {} ({:?}): {} entries, {} missing, {} dangling, {} stale",
                ix.index,
                ix.state,
                ix.entries,
                ix.count(ProblemKind::Missing),
                ix.count(ProblemKind::Dangling),
                ix.count(ProblemKind::Stale)
            )?;
        }
        Ok(())
    }
}

/// What `repair` changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// Entries written.
    pub entries_put: u64,
    /// Entries deleted.
    pub entries_deleted: u64,
}

/// The record stored at `key` in fact shard `shard`.
fn decode_record(t: &Table, shard: usize, key: &[u8], bytes: &[u8]) -> Result<Record> {
    t.layouts
        .decode(bytes)
        .map_err(|e| record_corrupt(t.shards[shard].fact.name(), key, e))
}

impl Db {
    /// Checks every `Ready` index of `table` against its rows. A table with async indexes
    /// first waits for the indexer to apply what was written before the call
    /// ([`Db::wait_for_indexes`]); the check then reads each shard store at one snapshot,
    /// so for async indexes, writes racing with it can show as problems.
    pub fn verify(&self, table: &str) -> Result<VerifyReport> {
        if self.shared.handle(table)?.has_async() {
            self.wait_for_indexes()?;
        }
        let t = self.shared.handle(table)?;
        let snapshots: Vec<Snapshot> = t.shards.iter().map(|s| s.store.store.snapshot()).collect();
        let at = |s: usize| ReadOptions::default().snapshot(&snapshots[s]);
        let mut rows = 0u64;
        for (s, shard) in t.shards.iter().enumerate() {
            for kv in shard.store.store.iter(&shard.fact, at(s))? {
                kv?;
                rows += 1;
            }
        }
        let mut reports = Vec::new();
        for (i, ix) in t.def.indexes.iter().enumerate() {
            let mut report = IndexReport {
                index: ix.name.clone(),
                state: ix.state,
                entries: 0,
                problems: Vec::new(),
            };
            if ix.state != IndexState::Ready {
                reports.push(report);
                continue;
            }
            // 1. Rows to entries.
            for (s, shard) in t.shards.iter().enumerate() {
                for kv in shard.store.store.iter(&shard.fact, at(s))? {
                    let (pk, value) = kv?;
                    let record = decode_record(&t, s, &pk, &value)?;
                    let (k, v) = index_entry(t.def.key_format(), ix, s, &pk, &record)?;
                    let target = t.entry_shard(ix, s, &k);
                    let holder = &t.shards[target];
                    let problem = match holder.store.store.get_at(
                        &holder.indexes[i],
                        &k,
                        &snapshots[target],
                    )? {
                        None => Some(ProblemKind::Missing),
                        Some(found) if !same_entry_value(&found, &v) => Some(ProblemKind::Stale),
                        Some(_) => None,
                    };
                    if let Some(kind) = problem {
                        let primary_key = decode_key(&pk, t.def.primary_key.len())
                            .map_err(|e| key_corrupt(shard.fact.name(), &pk, e))?;
                        report.problems.push(Problem {
                            kind,
                            primary_key,
                            entry_key: k,
                            pk_bytes: pk.to_vec(),
                            index_shard: target,
                        });
                    }
                }
            }
            // 2. Entries to rows.
            for (u, shard) in t.shards.iter().enumerate() {
                let cf = &shard.indexes[i];
                for kv in shard.store.store.iter(cf, at(u))? {
                    let (k, v) = kv?;
                    report.entries += 1;
                    let entry = decode_entry(&t.def, ix, cf.name(), &k, &v)?;
                    let f = t.fact_shard(&entry.pk_bytes);
                    let holder = &t.shards[f];
                    let kind = match holder.store.store.get_at(
                        &holder.fact,
                        &entry.pk_bytes,
                        &snapshots[f],
                    )? {
                        None => Some(ProblemKind::Dangling),
                        Some(bytes) => {
                            let record = decode_record(&t, f, &entry.pk_bytes, &bytes)?;
                            let (expected, _) =
                                index_entry(t.def.key_format(), ix, f, &entry.pk_bytes, &record)?;
                            let misplaced =
                                entry.shard != f as u64 || t.entry_shard(ix, f, &k) != u;
                            (expected[..] != k[..] || misplaced).then_some(ProblemKind::Stale)
                        }
                    };
                    if let Some(kind) = kind {
                        report.problems.push(Problem {
                            kind,
                            primary_key: entry.primary_key,
                            entry_key: k.to_vec(),
                            pk_bytes: entry.pk_bytes,
                            index_shard: u,
                        });
                    }
                }
            }
            reports.push(report);
        }
        Ok(VerifyReport {
            table: table.to_owned(),
            rows,
            indexes: reports,
        })
    }

    /// Verifies `table` and fixes every problem found: each affected entry is re-derived from
    /// its row as it is now, under the row's lock, so concurrent writers are safe. (For an
    /// async index, an outbox entry written after the check is applied after the repair, in
    /// order, so it still ends at the row's state.)
    pub fn repair(&self, table: &str) -> Result<RepairReport> {
        let report = self.verify(table)?;
        let mut done = RepairReport::default();
        for ixr in &report.indexes {
            for chunk in ixr.problems.chunks(256) {
                let _guards = self
                    .shared
                    .stripes
                    .lock(chunk.iter().map(|p| p.pk_bytes.as_slice()));
                let t = self.shared.handle(table)?;
                let Ok((i, ix)) = t.index(&ixr.index) else {
                    break; // dropped meanwhile: nothing to repair
                };
                let mut batches: BTreeMap<usize, WriteBatch> = BTreeMap::new();
                let mut read_from = BTreeSet::new();
                for p in chunk {
                    let f = t.fact_shard(&p.pk_bytes);
                    read_from.insert(f);
                    let expected = match self.shared.read_record(&t, &p.pk_bytes)? {
                        Some(record) => {
                            let (k, v) =
                                index_entry(t.def.key_format(), ix, f, &p.pk_bytes, &record)?;
                            let target = t.entry_shard(ix, f, &k);
                            Some((k, v, target))
                        }
                        None => None,
                    };
                    let keep = expected.as_ref().is_some_and(|(k, _, target)| {
                        *k == p.entry_key && *target == p.index_shard
                    });
                    if !keep && p.kind != ProblemKind::Missing {
                        batches
                            .entry(p.index_shard)
                            .or_default()
                            .delete(&t.shards[p.index_shard].indexes[i], &p.entry_key)?;
                        done.entries_deleted += 1;
                    }
                    if let Some((k, v, target)) = expected {
                        batches.entry(target).or_default().put(
                            &t.shards[target].indexes[i],
                            &k,
                            &v,
                        )?;
                        done.entries_put += 1;
                    }
                }
                // Entries follow the rows as read; those rows must be durable before an entry
                // derived from them is, in another store.
                if batches
                    .keys()
                    .any(|target| read_from.iter().any(|f| f != target))
                {
                    for &f in &read_from {
                        t.shards[f].store.store.sync_wal()?;
                    }
                }
                for (target, wb) in batches {
                    t.shards[target]
                        .store
                        .store
                        .write(wb, WriteOptions::synced())?;
                }
            }
        }
        Ok(done)
    }
}
