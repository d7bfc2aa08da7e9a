//! Ingestion: sorted runs written straight into tables and added to the tree in one manifest
//! edit, for bulk loads (RocksDB's `SstFileWriter` and `IngestExternalFile`). A loaded entry
//! skips the log, the memtable and the flush that would copy it into a table anyway.
//!
//! [`Store::ingest`](crate::Store::ingest) takes one run of puts per column family:
//! 1. sorts each run and checks it: no key twice, keys and values within their limits;
//! 2. flushes every memtable that holds a key (or a tombstone) in a run's range, since a read
//!    looks at memtables before tables and would find that older version first;
//! 3. under the writer lock (no batch commits meanwhile), checks the memtables again, takes
//!    one new seqno for every entry, writes the tables (split at `target_table_bytes`, each
//!    through the family's property collector, synced, then the directory), the runs and the
//!    parts of a large run side by side on a few threads;
//! 4. installs them in one manifest edit, each at the deepest level where no table of that
//!    level or any above it meets its key range (the last level, for a range nothing else
//!    holds; level 0, newest, when something does), and publishes the seqno.
//!
//! Readers see all of an ingestion or none of it: the seqno is published after the edit, so
//! a snapshot taken before never sees the entries. A crash before the edit leaves stray
//! tables that the next open removes; after it, the entries are in the tree. Writers of the
//! store wait while the tables are written (step 3): the seqno must be fixed before the
//! entries are written, and no batch may take a later one and publish it first.

use std::sync::Arc;

use strata_sstable::{TableBuilder, ValueKind};

use crate::SeqNo;
use crate::batch::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::cf::{CfShared, ColumnFamily};
use crate::collect::Collecting;
use crate::edit::VersionEdit;
use crate::error::{Error, IoContext, IoOp, Result};
use crate::flush::open_table_at;
use crate::format::FileKind;
use crate::fs::WritableFile;
use crate::manifest::file_path;
use crate::memtable::{MemKey, UserKey};
use crate::store::Shared;
use crate::sync::lock;
use crate::version::{SuperVersion, TableFile};

/// Most threads an ingestion writes tables on.
/// TUNING: a run's tables are encoded and copied into the page cache on the CPU; beyond a few
/// threads the disk is the limit.
pub const INGEST_THREADS: usize = 4;

/// Fewest bytes of a run written as a part of its own (see [`IngestRun`]'s parts): smaller
/// parts would make many small tables for little gain.
pub const MIN_PART_BYTES: usize = 8 << 20;

/// One column family's entries for [`Store::ingest`](crate::Store::ingest): puts, pushed in
/// any order, held back to back in one buffer (a bulk load makes millions; one allocation
/// each would cost more than writing them).
#[derive(Clone, Debug)]
pub struct IngestRun {
    cf: ColumnFamily,
    /// Keys and values, back to back, in the order they were pushed.
    bytes: Vec<u8>,
    /// Per entry, in key order once sorted.
    spans: Vec<Span>,
    /// Every key was pushed above the one before it: the run is sorted, no key twice (a load
    /// of a file in key order, the common case, then needs no sort and no search for repeats).
    ascending: bool,
}

#[derive(Clone, Copy, Debug)]
struct Span {
    at: usize,
    key: usize,
    value: usize,
}

impl IngestRun {
    /// An empty run for `cf`.
    pub fn new(cf: ColumnFamily) -> Self {
        IngestRun {
            cf,
            bytes: Vec::new(),
            spans: Vec::new(),
            ascending: true,
        }
    }

    /// An empty run for `cf` with room for `bytes` of keys and values in `entries` entries
    /// (a loader that fills runs of one size reserves the last one's: no buffer grows and is
    /// copied, and fewer fresh pages are touched).
    pub fn with_capacity(cf: ColumnFamily, bytes: usize, entries: usize) -> Self {
        IngestRun {
            cf,
            bytes: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(entries),
            ascending: true,
        }
    }

    /// This run's buffers, emptied, as a run for `cf`: a loader that fills run after run
    /// reuses the memory the last one touched instead of faulting in fresh pages (a 64 MiB
    /// buffer is 16,384 page faults; they were most of an import's, all on its main thread).
    pub fn recycle(mut self, cf: ColumnFamily) -> IngestRun {
        self.bytes.clear();
        self.spans.clear();
        self.ascending = true;
        self.cf = cf;
        self
    }

    /// The bytes its buffer holds without growing.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The family it goes to.
    pub fn cf(&self) -> &ColumnFamily {
        &self.cf
    }

    /// Adds `key` = `value`.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        if self.ascending
            && let Some(last) = self.spans.last()
        {
            self.ascending = key > &self.bytes[last.at..last.at + last.key];
        }
        self.spans.push(Span {
            at: self.bytes.len(),
            key: key.len(),
            value: value.len(),
        });
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The run cut into at most `ways` ranges of entries of about equal bytes, in order; a
    /// run under twice [`MIN_PART_BYTES`] is one range.
    fn parts(&self, ways: usize) -> Vec<std::ops::Range<usize>> {
        let ways = ways.min(self.bytes.len() / MIN_PART_BYTES).max(1);
        let mut parts = Vec::with_capacity(ways);
        let (mut start, mut sum) = (0, 0);
        for (i, span) in self.spans.iter().enumerate() {
            sum += span.key + span.value;
            if sum * ways >= self.bytes.len() * (parts.len() + 1) && parts.len() + 1 < ways {
                parts.push(start..i + 1);
                start = i + 1;
            }
        }
        if start < self.spans.len() {
            parts.push(start..self.spans.len());
        }
        parts
    }

    /// Puts the entries in key order (equal keys next to each other).
    pub fn sort(&mut self) {
        if self.ascending {
            return;
        }
        let bytes = &self.bytes;
        self.spans
            .sort_unstable_by(|a, b| bytes[a.at..a.at + a.key].cmp(&bytes[b.at..b.at + b.key]));
    }

    /// The place of the first entry whose key is the one before it (in key order once
    /// sorted, else in push order), if any.
    pub fn first_repeat(&self) -> Option<usize> {
        if self.ascending {
            return None;
        }
        (1..self.len()).find(|&i| self.get(i - 1).0 == self.get(i).0)
    }

    /// Entry `i` (in key order once sorted, else in push order).
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let s = self.spans[i];
        (
            &self.bytes[s.at..s.at + s.key],
            &self.bytes[s.at + s.key..s.at + s.key + s.value],
        )
    }

    /// The entries (in key order once sorted, else in push order).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.spans.len()).map(|i| self.get(i))
    }

    /// The entries in the order they were pushed, sorted or not.
    pub fn in_push_order(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut spans = self.spans.clone();
        spans.sort_unstable_by_key(|s| s.at);
        spans.into_iter().map(|s| {
            (
                &self.bytes[s.at..s.at + s.key],
                &self.bytes[s.at + s.key..s.at + s.key + s.value],
            )
        })
    }

    fn range(&self) -> Option<(&[u8], &[u8])> {
        let last = self.spans.len().checked_sub(1)?;
        Some((self.get(0).0, self.get(last).0))
    }
}

/// Whether a memtable of `cf` holds any version of a key in `[lower, upper]`.
fn memtables_meet(cf: &CfShared, lower: &[u8], upper: &[u8]) -> bool {
    let probe = MemKey {
        user_key: UserKey::copy(lower),
        seqno: SeqNo::MAX,
    };
    cf.current().memtables().any(|mem| {
        mem.seek(&probe)
            .is_some_and(|at| mem.entry(at).0.user_key.as_slice() <= upper)
    })
}

/// The deepest level a table of `[lower, upper]` can go to in `version`: no table of that
/// level or any above it may meet the range (a read stops at the first version it finds,
/// level by level), and while a compaction runs in the family only level 0 is safe (its
/// outputs could land across the range in the level below).
fn placement(version: &SuperVersion, num_levels: usize, lower: &[u8], upper: &[u8]) -> usize {
    if version.tables().any(|t| t.is_compacting()) {
        return 0;
    }
    let mut level = 0;
    for (l, tables) in version.levels.iter().enumerate().take(num_levels) {
        if tables.iter().any(|t| t.overlaps(Some(lower), Some(upper))) {
            break;
        }
        level = l;
    }
    level
}

impl Shared {
    /// See the module documentation. `runs` is left holding the non-empty runs, written or
    /// not, for a caller that reuses their buffers ([`IngestRun::recycle`]).
    pub(crate) fn ingest(&self, runs: &mut Vec<IngestRun>) -> Result<SeqNo> {
        runs.retain(|r| !r.is_empty());
        for run in runs.iter_mut() {
            run.sort();
        }
        check_runs(runs)?;
        if runs.is_empty() {
            return Ok(self.seq.visible());
        }

        // 2. Memtables that hold keys in a run's range go to tables first.
        let busy: Vec<u32> = runs
            .iter()
            .filter_map(|r| {
                let (lower, upper) = r.range()?;
                memtables_meet(&r.cf.shared, lower, upper).then_some(r.cf.id())
            })
            .collect();
        if !busy.is_empty() {
            self.seal_and_wait(&busy)?;
        }

        // 3. No batch commits from here to the publish.
        let _writer = lock(&self.writer);
        self.check_writable()?;
        for run in runs.iter() {
            run.cf.shared.check_live()?;
            let Some((lower, upper)) = run.range() else {
                continue;
            };
            if memtables_meet(&run.cf.shared, lower, upper) {
                return Err(Error::Conflict(format!(
                    "column family {:?}: keys in the ingested range were written during the \
                     ingestion",
                    run.cf.name()
                )));
            }
        }
        // Published below, after the install; nothing else allocates meanwhile.
        let seqno = self
            .seq
            .allocate(1)
            .ok_or_else(crate::write::sequencer_failed)?;
        let mut written: Vec<(Arc<CfShared>, Arc<TableFile>)> = Vec::new();
        let outcome = self.write_runs(runs, seqno, &mut written);
        // From here a failure leaves the seqno unused: publishing it shows nothing.
        if let Err(error) = outcome.and_then(|()| {
            self.fs
                .sync_dir(&self.dir)
                .map_err(|e| Error::io(IoOp::SyncDir, &self.dir, e))
        }) {
            for (_, table) in &written {
                let _ = self.fs.remove_file(&table.path);
            }
            self.seq.publish_range(seqno, seqno);
            return Err(error);
        }

        // 4. Install, then publish.
        self.install_ingested(&written, seqno)?;
        // Every seqno below this one of this store was published by its leader before it let
        // go of the writer lock, which this thread holds (a shared sequencer publishes it
        // after the other stores' older ranges).
        self.seq.publish_range(seqno, seqno);
        self.wake_background();
        tracing::debug!(
            tables = written.len(),
            seqno,
            "ingested sorted runs as tables"
        );
        Ok(seqno)
    }

    /// Step 4 of [`Shared::ingest`]: places each written table at the lowest level it fits
    /// (seen against the tables placed before it) and installs them all in one manifest edit.
    /// On failure the seqno is published unused. REQUIRES: the writer lock.
    fn install_ingested(
        &self,
        written: &[(Arc<CfShared>, Arc<TableFile>)],
        seqno: SeqNo,
    ) -> Result<()> {
        let mut versions = lock(&self.versions);
        if let Some((cf, _)) = written.iter().find(|(cf, _)| cf.is_dropped()) {
            let error = Error::NotFound(format!("column family {:?} was dropped", cf.name));
            drop(versions);
            for (_, table) in written {
                let _ = self.fs.remove_file(&table.path);
            }
            self.seq.publish_range(seqno, seqno);
            return Err(error);
        }
        let mut edit = VersionEdit {
            last_seqno: Some(seqno),
            next_file_number: Some(versions.state.next_file_number),
            ..VersionEdit::default()
        };
        // Each table's level, seen against the tables placed before it.
        let mut placed: Vec<(usize, Arc<TableFile>)> = Vec::with_capacity(written.len());
        let mut views: Vec<(u32, SuperVersion)> = Vec::new();
        for (cf, table) in written {
            let view = match views.iter_mut().find(|(id, _)| *id == cf.id) {
                Some((_, view)) => view,
                None => {
                    views.push((cf.id, SuperVersion::clone(&cf.current())));
                    &mut views.last_mut().expect("just pushed").1
                }
            };
            let (lower, upper) = (&table.meta.smallest_key, &table.meta.largest_key);
            let level = placement(view, self.options.num_levels, lower, upper);
            insert_at(&mut view.levels[level], level, Arc::clone(table));
            edit.added_tables
                .push((cf.id, level as u32, table.meta.clone()));
            placed.push((level, Arc::clone(table)));
        }
        if let Err(error) = self.log_edit(&mut versions, &edit) {
            self.seq.publish_range(seqno, seqno);
            return Err(error);
        }
        for ((cf, _), (level, table)) in written.iter().zip(placed) {
            cf.update(|version| insert_at(&mut version.levels[level], level, table));
        }
        drop(versions);
        Ok(())
    }

    /// Writes each run as tables of about `target_table_bytes`, every entry at `seqno`;
    /// pushes each table to `written` once it is open, in run order and key order within a
    /// run. A table that fails is removed here; the caller removes those in `written`.
    ///
    /// The runs' parts are written side by side on up to [`INGEST_THREADS`] threads (one
    /// part when there are no more cores): each run of the families of a table and its indexes
    /// is a part, and a large run is cut into parts of about equal bytes, each its own
    /// tables (they do not overlap, so they go to the same level).
    fn write_runs(
        &self,
        runs: &[IngestRun],
        seqno: SeqNo,
        written: &mut Vec<(Arc<CfShared>, Arc<TableFile>)>,
    ) -> Result<()> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, INGEST_THREADS);
        let parts: Vec<(usize, std::ops::Range<usize>)> = runs
            .iter()
            .enumerate()
            .flat_map(|(r, run)| run.parts(threads).into_iter().map(move |part| (r, part)))
            .collect();
        let write_part = |&(r, ref range): &(usize, std::ops::Range<usize>)| {
            let run = &runs[r];
            let mut tables = Vec::new();
            let mut entries = range.clone().map(|i| run.get(i)).peekable();
            while entries.peek().is_some() {
                let number = lock(&self.versions).reserve_file_number();
                let path = file_path(&self.dir, FileKind::Table, number);
                let table = self
                    .write_table(&path, &run.cf.shared, &mut entries, seqno)
                    .and_then(|size| {
                        open_table_at(&self.fs, &self.dir, &self.cache, number, size, None)
                    });
                match table {
                    Ok(table) => tables.push(Arc::new(table)),
                    Err(error) => {
                        let _ = self.fs.remove_file(&path);
                        return (tables, Err(error));
                    }
                }
            }
            (tables, Ok(()))
        };
        let done: Vec<(Vec<Arc<TableFile>>, Result<()>)> = if threads == 1 || parts.len() == 1 {
            parts.iter().map(write_part).collect()
        } else {
            // Each thread takes the next part not taken; the results go back in part order.
            let next = std::sync::atomic::AtomicUsize::new(0);
            let slots: Vec<std::sync::Mutex<Option<_>>> =
                parts.iter().map(|_| std::sync::Mutex::new(None)).collect();
            std::thread::scope(|scope| {
                for _ in 0..threads.min(parts.len()) {
                    scope.spawn(|| {
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(part) = parts.get(i) else { return };
                            *lock(&slots[i]) = Some(write_part(part));
                        }
                    });
                }
            });
            slots
                .into_iter()
                .map(|slot| {
                    slot.into_inner()
                        .unwrap_or_else(|p| p.into_inner())
                        .unwrap_or_else(|| {
                            (
                                Vec::new(),
                                Err(Error::Internal("an ingest part was not written".into())),
                            )
                        })
                })
                .collect()
        };
        let mut first_error = Ok(());
        for ((r, _), (tables, outcome)) in parts.iter().zip(done) {
            let cf = &runs[*r].cf.shared;
            written.extend(tables.into_iter().map(|t| (Arc::clone(cf), t)));
            if first_error.is_ok() {
                first_error = outcome;
            }
        }
        first_error
    }

    fn write_table<'e>(
        &self,
        path: &std::path::Path,
        cf: &CfShared,
        entries: &mut std::iter::Peekable<impl Iterator<Item = (&'e [u8], &'e [u8])>>,
        seqno: SeqNo,
    ) -> Result<u64> {
        let table_error = |e| Error::table(path.to_owned(), &e);
        let mut file: Box<dyn WritableFile> = self.fs.create(path).at(IoOp::Create, path)?;
        let mut builder = TableBuilder::new(&mut file, cf.table_options(&self.options.table));
        let collector = self
            .hooks
            .property_collector
            .as_ref()
            .and_then(|f| f.collector(&cf.name));
        let mut collecting = Collecting::new(collector);
        let target = self.options.target_table_bytes;
        while let Some((key, value)) =
            entries.next_if(|_| builder.entries() == 0 || builder.file_size() < target)
        {
            builder
                .add(key, seqno, ValueKind::Put, value)
                .map_err(table_error)?;
            collecting.add(key, ValueKind::Put, value);
        }
        for (name, value) in collecting.finish() {
            builder.add_property(&name, &value).map_err(table_error)?;
        }
        let info = builder.finish().map_err(table_error)?;
        file.sync_data().at(IoOp::Sync, path)?;
        Ok(info.file_size)
    }
}

/// Inserts `table` into level `level`: level 0 at the front (newest first), deeper levels at
/// their place by key.
fn insert_at(tables: &mut Vec<Arc<TableFile>>, level: usize, table: Arc<TableFile>) {
    if level == 0 {
        tables.insert(0, table);
    } else {
        let at = tables.partition_point(|t| t.meta.smallest_key < table.meta.smallest_key);
        tables.insert(at, table);
    }
}

/// Step 1: every key and value within its limit, no key twice within a run, and no two runs
/// of one family meeting (they share one seqno, so a key in both would have two values at
/// once). REQUIRES: each run sorted.
fn check_runs(runs: &[IngestRun]) -> Result<()> {
    for run in runs {
        for (key, value) in run.iter() {
            if key.len() > MAX_KEY_BYTES {
                return Err(Error::TooLarge {
                    what: "key",
                    len: key.len(),
                    max: MAX_KEY_BYTES,
                });
            }
            if value.len() > MAX_VALUE_BYTES {
                return Err(Error::TooLarge {
                    what: "value",
                    len: value.len(),
                    max: MAX_VALUE_BYTES,
                });
            }
        }
        if run.first_repeat().is_some() {
            return Err(Error::InvalidArgument(format!(
                "column family {:?}: an ingested run holds a key twice",
                run.cf.name()
            )));
        }
    }
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let (Some((a_lo, a_hi)), Some((b_lo, b_hi))) = (a.range(), b.range()) else {
                continue;
            };
            if a.cf.id() == b.cf.id() && a_lo <= b_hi && b_lo <= a_hi {
                return Err(Error::InvalidArgument(format!(
                    "column family {:?}: two ingested runs meet",
                    a.cf.name()
                )));
            }
        }
    }
    Ok(())
}
