//! What a reader sees of one column family: its memtables and tables, as one immutable value.
//!
//! A [`SuperVersion`] (RocksDB's name) is swapped whole whenever a memtable is sealed or a flush
//! installs a table, so a reader that took one sees a consistent set of sources for as long as
//! it holds it: a sealed memtable and the table it was flushed to are never both in one, nor
//! neither.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use strata_sstable::{FoundRef, Table, ValueKind};

use crate::SeqNo;
use crate::edit::TableMeta;
use crate::error::{Error, Result};
use crate::memtable::{Found, Memtable};
use crate::skiplist::Finger;

/// An open table and what the manifest says of it.
#[derive(Debug)]
pub(crate) struct TableFile {
    pub(crate) meta: TableMeta,
    pub(crate) table: Table,
    pub(crate) path: std::path::PathBuf,
    /// Set while a compaction has it as input, so no other compaction picks it. Changed only
    /// under the versions lock.
    pub(crate) compacting: AtomicBool,
}

impl TableFile {
    pub(crate) fn new(meta: TableMeta, table: Table, path: std::path::PathBuf) -> Self {
        TableFile {
            meta,
            table,
            path,
            compacting: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::Acquire)
    }

    /// Whether the table's key range meets `[lower, upper]` (`None`: unbounded).
    pub(crate) fn overlaps(&self, lower: Option<&[u8]>, upper: Option<&[u8]>) -> bool {
        lower.is_none_or(|lower| &self.meta.largest_key[..] >= lower)
            && upper.is_none_or(|upper| &self.meta.smallest_key[..] <= upper)
    }

    pub(crate) fn may_hold(&self, key: &[u8]) -> bool {
        key >= &self.meta.smallest_key[..] && key <= &self.meta.largest_key[..]
    }

    /// The newest version of `key` visible at `snapshot` here; `likely`: the key is expected
    /// here (the last level), so its block starts loading before the filter is asked
    /// ([`strata_sstable::Table::get_likely`]).
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo, likely: bool) -> Result<Option<Found>> {
        let entry = if likely {
            self.table.get_likely(key, snapshot)
        } else {
            self.table.get(key, snapshot)
        };
        let entry = entry.map_err(|e| Error::table(self.path.clone(), &e))?;
        Ok(entry.map(found))
    }

    /// [`TableFile::get`] for each of `keys`, in one pass over the table, each version found
    /// lent to `each` with its key's place (see [`strata_sstable::Table::multi_get_each`]).
    pub(crate) fn multi_get_each(
        &self,
        keys: &[&[u8]],
        snapshot: SeqNo,
        filter: bool,
        each: impl FnMut(usize, FoundRef<'_>),
    ) -> Result<()> {
        self.table
            .multi_get_each(keys, snapshot, filter, each)
            .map_err(|e| Error::table(self.path.clone(), &e))
    }
}

/// A version [`SuperVersion::multi_get_each`] found, where its memtable or table holds it.
pub(crate) enum Lent<'a> {
    Memtable(&'a Found),
    Table(FoundRef<'a>),
}

impl Lent<'_> {
    pub(crate) fn kind(&self) -> ValueKind {
        match self {
            Lent::Memtable(f) => f.kind,
            Lent::Table(f) => f.kind(),
        }
    }

    pub(crate) fn value(&self) -> &[u8] {
        match self {
            Lent::Memtable(f) => &f.value,
            Lent::Table(f) => f.value(),
        }
    }

    /// The value as shared bytes: no copy for one a table stores whole.
    pub(crate) fn to_bytes(&self) -> Bytes {
        match self {
            Lent::Memtable(f) => f.value.clone(),
            Lent::Table(f) => f.to_entry().value,
        }
    }
}

fn found(entry: strata_sstable::Entry) -> Found {
    Found {
        seqno: entry.seqno,
        kind: entry.kind,
        value: entry.value,
    }
}

/// A memtable waiting to be flushed.
#[derive(Clone, Debug)]
pub(crate) struct Sealed {
    pub(crate) mem: Arc<Memtable>,
    /// The log the next memtable started in: once this one is flushed, the family's data in
    /// earlier logs is all in tables.
    pub(crate) log_number_after: u64,
}

/// One column family's sources, newest first within each kind.
#[derive(Clone, Debug)]
pub(crate) struct SuperVersion {
    pub(crate) active: Arc<Memtable>,
    /// Sealed memtables, oldest first.
    pub(crate) sealed: Vec<Sealed>,
    /// Tables per level. Level 0 is newest first and may overlap; deeper levels are in key
    /// order and do not.
    pub(crate) levels: Vec<Vec<Arc<TableFile>>>,
}

impl SuperVersion {
    pub(crate) fn new(active: Arc<Memtable>, levels: Vec<Vec<Arc<TableFile>>>) -> Self {
        SuperVersion {
            active,
            sealed: Vec::new(),
            levels,
        }
    }

    /// The memtables, newest first.
    pub(crate) fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> {
        std::iter::once(&self.active).chain(self.sealed.iter().rev().map(|s| &s.mem))
    }

    /// Every table, level by level.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.levels.iter().flatten()
    }

    /// The newest version of `key` visible at `snapshot`: memtables, then level 0 newest first,
    /// then the one table per deeper level whose range holds the key.
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo) -> Result<Option<Found>> {
        for mem in self.memtables() {
            if let Some(found) = mem.get(key, snapshot) {
                return Ok(Some(found));
            }
        }
        // A key not found above the last level holding tables is there if anywhere.
        let last = self.levels.iter().rposition(|tables| !tables.is_empty());
        for (level, tables) in self.levels.iter().enumerate() {
            let candidates: &[Arc<TableFile>] = if level == 0 {
                tables
            } else {
                let at = tables.partition_point(|t| &t.meta.largest_key[..] < key);
                tables.get(at..at + 1).unwrap_or(&[])
            };
            let likely = level > 0 && Some(level) == last;
            for table in candidates.iter().filter(|t| t.may_hold(key)) {
                if let Some(found) = table.get(key, snapshot, likely)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// [`SuperVersion::get`] for each of `keys`, which must ascend: every memtable is asked
    /// per key, and then each table that may hold some of the keys still unanswered is read
    /// once for all of them (level 0 newest first, then level by level), so a run of keys
    /// walks each level's tables in order instead of searching every level again per key.
    /// Each key's newest visible version (a put or a tombstone) is lent to `each` with the
    /// key's place in `keys`, once; keys with none are not reported.
    pub(crate) fn multi_get_each(
        &self,
        keys: &[&[u8]],
        snapshot: SeqNo,
        mut each: impl FnMut(usize, Lent<'_>),
    ) -> Result<()> {
        debug_assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        let mut open: Vec<usize> = Vec::with_capacity(keys.len());
        // An empty memtable (the active one of a store that is only read) is not asked.
        let mems: Vec<&Arc<Memtable>> = self.memtables().filter(|m| !m.is_empty()).collect();
        // The keys ascend: each memtable's search starts where its last one ended.
        let mut fingers = vec![Finger::default(); mems.len()];
        for (i, key) in keys.iter().enumerate() {
            let found_in = mems
                .iter()
                .zip(fingers.iter_mut())
                .find_map(|(mem, finger)| mem.get_near(key, snapshot, finger));
            match found_in {
                Some(f) => each(i, Lent::Memtable(&f)),
                None => open.push(i),
            }
        }
        let mut answered = vec![false; keys.len()];
        let mut asked: Vec<&[u8]> = Vec::with_capacity(open.len());
        let mut asked_at: Vec<usize> = Vec::with_capacity(open.len());
        // A key still open at the deepest level holding tables is there or nowhere: its table
        // is read without asking the filter (a fetch by a key an index named is a hit).
        let deepest = self.levels.iter().rposition(|l| !l.is_empty());
        for (level, tables) in self.levels.iter().enumerate() {
            let filter = level == 0 || Some(level) != deepest;
            if open.is_empty() {
                break;
            }
            // Level 0 tables overlap: each is asked for every open key it may hold, newest
            // first. Deeper levels do not: each open key meets at most one table there.
            let mut at = 0;
            for table in tables {
                asked.clear();
                asked_at.clear();
                if level == 0 {
                    at = 0;
                }
                while let Some(&i) = open.get(at) {
                    if keys[i] > &table.meta.largest_key[..] {
                        break;
                    }
                    if keys[i] >= &table.meta.smallest_key[..] {
                        asked.push(keys[i]);
                        asked_at.push(i);
                    }
                    at += 1;
                }
                if asked.is_empty() {
                    continue;
                }
                table.multi_get_each(&asked, snapshot, filter, |j, found| {
                    let i = asked_at[j];
                    answered[i] = true;
                    each(i, Lent::Table(found));
                })?;
                if level == 0 {
                    open.retain(|&i| !answered[i]);
                }
            }
            open.retain(|&i| !answered[i]);
        }
        Ok(())
    }

    /// The oldest log this family's unflushed data may be in.
    pub(crate) fn oldest_unflushed_log(&self) -> u64 {
        self.sealed
            .first()
            .map_or(self.active.first_log_number(), |s| s.mem.first_log_number())
    }
}

/// Whether a found version means the key is present.
pub(crate) fn visible_value(found: Option<Found>) -> Option<Bytes> {
    found.and_then(|f| (f.kind == ValueKind::Put).then_some(f.value))
}
