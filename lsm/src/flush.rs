//! Flushing: the background thread that turns sealed memtables into level-0 tables.
//!
//! For each sealed memtable, oldest first within a family:
//! 1. reserve a file number and write the table (`NNNNNN.sst`), keeping every version some
//!    live snapshot can see and dropping the rest ([`Retention`]); sync it and its directory;
//! 2. open it (memory-mapped, through the shared block cache);
//! 3. append a version edit — the table added to level 0, the family's log number moved past
//!    the memtable — and sync the manifest;
//! 4. swap the family's sources: the table in, the memtable out, in one step;
//! 5. delete the logs no family needs any more.
//!
//! A crash before step 3 leaves a stray table that the next open removes; after it, the
//! memtable's data is in the table and no longer replayed from the log. A failure makes the
//! store read-only; reopening replays the logs, which still hold everything.

use std::sync::Arc;

use strata_sstable::{Table, TableBuilder};

use crate::collect::{Collecting, PropertyCollector};

use crate::SeqNo;
use crate::cf::CfShared;
use crate::edit::{TableMeta, VersionEdit};
use crate::error::{Error, IoContext, IoOp, Result};
use crate::format::FileKind;
use crate::fs::WritableFile;
use crate::manifest::file_path;
use crate::memtable::Memtable;
use crate::store::Shared;
use crate::sync::lock;
use crate::version::{Sealed, TableFile};

/// One step of the flush thread: flushes the oldest sealed memtable, if there is one, and
/// says whether it did anything.
pub(crate) fn step(shared: &Shared) -> bool {
    let Some((cf, sealed)) = next_job(shared) else {
        return false;
    };
    if let Err(error) = flush_memtable(shared, &cf, &sealed) {
        shared.fail(error);
    }
    shared.delete_obsolete_logs();
    true
}

/// The oldest sealed memtable of the family with the oldest one.
fn next_job(shared: &Shared) -> Option<(Arc<CfShared>, Sealed)> {
    shared
        .cfs_read()
        .values()
        .filter_map(|cf| Some((Arc::clone(cf), cf.current().sealed.first()?.clone())))
        .min_by_key(|(_, sealed)| sealed.mem.first_log_number())
}

/// Flushes one sealed memtable of `cf` (steps 1–5 of the module documentation).
pub(crate) fn flush_memtable(shared: &Shared, cf: &Arc<CfShared>, sealed: &Sealed) -> Result<()> {
    let started = std::time::Instant::now();
    if let Some(barrier) = &shared.hooks.flush_barrier {
        // Every entry of the sealed memtable was allocated before now: every commit up to
        // here must be durable in every store sharing the sequencer before any of it is in a
        // table and its log can go (`docs/transactions.md`, the flush rule).
        barrier.before_flush(shared.seq.allocated())?;
    }
    let number = lock(&shared.versions).reserve_file_number();
    let snapshots = shared.snapshots.retention_points(&shared.seq);
    let collector = shared
        .hooks
        .property_collector
        .as_ref()
        .and_then(|f| f.collector(&cf.name));
    let Some(table) =
        TableSink::of(shared, cf).write_table(number, &sealed.mem, &snapshots, collector)?
    else {
        return Ok(());
    };

    let mut versions = lock(&shared.versions);
    if cf.is_dropped() {
        drop(versions);
        let _ = shared.fs.remove_file(&table.path);
        return Ok(());
    }
    let edit = VersionEdit {
        added_tables: vec![(cf.id, 0, table.meta.clone())],
        log_numbers: vec![(cf.id, sealed.log_number_after)],
        // At or above every seqno the table holds (a commit allocated before the seal may not
        // be published yet): compactions may write a table's seqnos as 0, so the manifest,
        // not the tables, keeps the store's last seqno.
        last_seqno: Some(shared.seq.visible().max(table.meta.largest_seqno)),
        next_file_number: Some(versions.state.next_file_number),
        ..VersionEdit::default()
    };
    shared.log_edit(&mut versions, &edit)?;
    let table = Arc::new(table);
    cf.update(|version| {
        version.sealed.retain(|s| !Arc::ptr_eq(&s.mem, &sealed.mem));
        version.levels[0].insert(0, Arc::clone(&table));
    });
    drop(versions);
    cf.record_io(
        0,
        crate::cf::LevelIo {
            runs: 1,
            written: table.meta.file_size,
            micros: started.elapsed().as_micros() as u64,
            ..Default::default()
        },
    );
    tracing::debug!(cf = %cf.name, table = number, bytes = table.meta.file_size, "flushed a memtable");
    Ok(())
}

/// Where tables go and how they are built and opened.
pub(crate) struct TableSink<'a> {
    pub(crate) fs: &'a Arc<dyn crate::fs::FileSystem>,
    pub(crate) dir: &'a std::path::Path,
    pub(crate) options: strata_sstable::TableOptions,
    pub(crate) cache: &'a Arc<strata_sstable::BlockCache>,
}

impl TableSink<'_> {
    fn of<'s>(shared: &'s Shared, cf: &CfShared) -> TableSink<'s> {
        TableSink {
            fs: &shared.fs,
            dir: &shared.dir,
            options: cf.table_options(&shared.options.table),
            cache: &shared.cache,
        }
    }

    /// Writes memtable `mem` to table `number`, synced (file and directory), and opens it;
    /// `collector` sees what it keeps. `None` if the memtable is empty.
    pub(crate) fn write_table(
        &self,
        number: u64,
        mem: &Memtable,
        snapshots: &[SeqNo],
        collector: Option<Box<dyn PropertyCollector>>,
    ) -> Result<Option<TableFile>> {
        let path = file_path(self.dir, FileKind::Table, number);
        let table_error = |e| Error::table(path.clone(), &e);
        let mut file: Box<dyn WritableFile> = self.fs.create(&path).at(IoOp::Create, &path)?;
        let mut builder = TableBuilder::new(&mut file, self.options.clone());
        let mut retention = Retention::new(snapshots);
        let mut collecting = Collecting::new(collector);
        let mut failed = Ok(());
        mem.for_each(|key, kind, value| {
            if retention.keep(&key.user_key, key.seqno) {
                failed = builder.add(&key.user_key, key.seqno, kind, value);
                collecting.add(key.user_key.as_slice(), kind, value);
            }
            failed.is_ok()
        });
        failed.map_err(table_error)?;
        if builder.entries() == 0 {
            drop(builder);
            drop(file);
            let _ = self.fs.remove_file(&path);
            return Ok(None);
        }
        for (name, value) in collecting.finish() {
            builder.add_property(&name, &value).map_err(table_error)?;
        }
        let info = builder.finish().map_err(table_error)?;
        file.sync_data().at(IoOp::Sync, &path)?;
        drop(file);
        self.fs.sync_dir(self.dir).at(IoOp::SyncDir, self.dir)?;
        Ok(Some(open_table_at(
            self.fs,
            self.dir,
            self.cache,
            number,
            info.file_size,
            None,
        )?))
    }
}

/// Opens table `number`, checking its size against `file_size`; `meta` is filled from the
/// table's properties when `None`.
pub(crate) fn open_table_at(
    fs: &Arc<dyn crate::fs::FileSystem>,
    dir: &std::path::Path,
    cache: &Arc<strata_sstable::BlockCache>,
    number: u64,
    file_size: u64,
    meta: Option<TableMeta>,
) -> Result<TableFile> {
    let path = file_path(dir, FileKind::Table, number);
    let bytes = crate::manifest::read_listed(fs, &path)?;
    if bytes.len() as u64 != file_size {
        return Err(Error::Corruption {
            file: path,
            offset: 0,
            what: crate::error::Corruption::TableSize {
                expected: file_size,
                actual: bytes.len() as u64,
            },
        });
    }
    let table = Table::open(bytes, number, Some(Arc::clone(cache)))
        .map_err(|e| Error::table(path.clone(), &e))?;
    let meta = meta.unwrap_or_else(|| {
        let p = table.properties();
        TableMeta {
            number,
            file_size,
            smallest_key: p.smallest_key.clone(),
            largest_key: p.largest_key.clone(),
            smallest_seqno: p.smallest_seqno,
            largest_seqno: p.largest_seqno,
        }
    });
    Ok(TableFile::new(meta, table, path))
}

/// Which versions of a key a flush keeps: walking a key's versions newest first, a version is
/// kept when it is the newest one some reader can see — the newest overall (for readers
/// without a snapshot) or the newest at or below a live snapshot. Tombstones are kept like
/// values: older tables may hold what they delete.
///
/// Every version above the last point (the published seqno, [`SnapshotList::retention_points`])
/// is kept: with a sequencer shared by several stores such a version may not be published
/// yet, and a reader that will see it may need the one before it too.
///
/// [`SnapshotList::retention_points`]: crate::snapshot::SnapshotList::retention_points
pub(crate) struct Retention<'a> {
    /// Live snapshot seqnos, then the published seqno, ascending.
    snapshots: &'a [SeqNo],
    key: Vec<u8>,
    /// The snapshot "stripe" of the last kept version of `key`: the index of the smallest
    /// point at or above its seqno; above the last point, every seqno is a stripe of its own.
    stripe: Option<u64>,
}

impl<'a> Retention<'a> {
    pub(crate) fn new(snapshots: &'a [SeqNo]) -> Self {
        Retention {
            snapshots,
            key: Vec::new(),
            stripe: None,
        }
    }

    /// Whether to keep version `seqno` of `key`. REQUIRES: calls in internal-key order.
    /// Whether the last kept version is visible to every reader that can see any version of
    /// its key (no live snapshot is older than it): then nothing older is needed, and a
    /// tombstone there may go once nothing below holds the key.
    pub(crate) fn in_oldest_stripe(&self) -> bool {
        self.stripe == Some(0)
    }

    pub(crate) fn keep(&mut self, key: &[u8], seqno: SeqNo) -> bool {
        let stripe = match self.snapshots.last() {
            Some(&top) if seqno > top => self.snapshots.len() as u64 + (seqno - top),
            _ => self.snapshots.partition_point(|&s| s < seqno) as u64,
        };
        if self.key != key {
            self.key.clear();
            self.key.extend_from_slice(key);
            self.stripe = Some(stripe);
            return true;
        }
        // Same key, older version: needed only if no newer version is visible to the same
        // readers, that is, if it falls in a different stripe.
        if self.stripe == Some(stripe) {
            return false;
        }
        self.stripe = Some(stripe);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Retention;

    #[test]
    fn retention_keeps_the_newest_version_per_snapshot_stripe() {
        // Versions of one key, newest first: 9, 7, 5, 3, 1. Snapshots at 4 and 7.
        let snapshots = [4, 7];
        let mut retention = Retention::new(&snapshots);
        let kept: Vec<u64> = [9, 7, 5, 3, 1]
            .into_iter()
            .filter(|&s| retention.keep(b"k", s))
            .collect();
        // 9: the newest. 7: newest visible at snapshot 7. 3: newest visible at snapshot 4.
        assert_eq!(kept, vec![9, 7, 3]);
        assert!(retention.keep(b"l", 2), "a new key starts over");

        let mut none = Retention::new(&[]);
        let kept: Vec<u64> = [9, 7, 5]
            .into_iter()
            .filter(|&s| none.keep(b"k", s))
            .collect();
        assert_eq!(kept, vec![9]);
    }
}
