//! The store: its shared state, and the public API over column families, writes and reads.
//!
//! Locks, always taken in this order (LevelDB's `REQUIRES:` style contracts are on the
//! methods): `writer` (the log, held by the commit leader and by anything that switches
//! memtables or changes the set of families) → `versions` (the manifest) → `cfs` → a family's
//! `current`. Readers take only `cfs` and `current`, each briefly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use bytes::Bytes;
use strata_sstable::{BlockCache, ValueKind};
use strata_wal::LogWriter;

use crate::SeqNo;
use crate::batch::WriteBatch;
use crate::cf::{CfShared, ColumnFamily};
use crate::commit::{GroupCommit, Request, Sequencer};
use crate::edit::ManifestState;
use crate::error::{Error, Result};
use crate::format::DEFAULT_CF_ID;
use crate::fs::{FileLock, FileSystem, WritableFile};
use crate::hooks::Hooks;
use crate::ingest::IngestRun;
use crate::iter::merge::MergingIter;
use crate::iter::source::{AnySource, LevelSource, MemSource, TableSource};
use crate::iter::{Cursor, Iter};
use crate::manifest::Manifest;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::snapshot::{Snapshot, SnapshotList};
use crate::stats::WriteStalls;
use crate::sync::lock;
use crate::version::{Lent, visible_value};

/// [`Shared::memtable_filter_bytes`], before the store's state exists (open).
pub(crate) fn memtable_filter_bytes(options: &Options, hooks: &Hooks, name: &str) -> usize {
    if hooks.scan_only_families.iter().any(|f| f == name) {
        0
    } else {
        options.memtable_filter_bytes()
    }
}

/// The log being written.
pub(crate) struct WalState {
    pub(crate) log: LogWriter<Box<dyn WritableFile>>,
    pub(crate) number: u64,
}

/// The manifest and the state its edits built.
pub(crate) struct Versions {
    pub(crate) state: ManifestState,
    pub(crate) manifest: Manifest,
}

impl Versions {
    /// Reserves a file number. It is recorded by the next edit; a crash before that leaves at
    /// most a stray file, and open starts numbering after every file it finds.
    pub(crate) fn reserve_file_number(&mut self) -> u64 {
        let number = self.state.next_file_number;
        self.state.next_file_number += 1;
        number
    }
}

/// What the background threads (flush, compaction) are asked to do.
#[derive(Debug, Default)]
pub(crate) struct BackgroundState {
    pub(crate) shutdown: bool,
    /// Bumped at every change the thread or a waiter may care about.
    pub(crate) epoch: u64,
}

/// State shared by the store handle and its flush thread.
pub(crate) struct Shared {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    /// What the layer above plugged in at open ([`Hooks`]).
    pub(crate) hooks: Hooks,
    pub(crate) cache: Arc<BlockCache>,
    pub(crate) commit: GroupCommit<WriteBatch, Result<SeqNo>>,
    pub(crate) seq: Arc<Sequencer>,
    pub(crate) writer: Mutex<WalState>,
    pub(crate) versions: Mutex<Versions>,
    pub(crate) cfs: RwLock<BTreeMap<u32, Arc<CfShared>>>,
    pub(crate) snapshots: Arc<SnapshotList>,
    /// Logs written before the current one and not yet deleted: number → bytes.
    pub(crate) old_logs: Mutex<BTreeMap<u64, u64>>,
    pub(crate) background: Mutex<BackgroundState>,
    pub(crate) background_cv: Condvar,
    pub(crate) stalls: Mutex<WriteStalls>,
    /// 0: writes flow; 1: slowed down; 2: stopped (see `Shared::throttle`).
    pub(crate) stall_state: std::sync::atomic::AtomicU8,
    failed: AtomicBool,
    failure: Mutex<Option<Error>>,
    pub(crate) _lock: FileLock,
}

impl Shared {
    #[expect(
        clippy::too_many_arguments,
        reason = "called once, by open, with each part of the recovered state"
    )]
    pub(crate) fn new(
        options: Options,
        hooks: Hooks,
        dir: PathBuf,
        cache: Arc<BlockCache>,
        last_seqno: SeqNo,
        wal: WalState,
        versions: Versions,
        cfs: BTreeMap<u32, Arc<CfShared>>,
        lock: FileLock,
    ) -> Shared {
        let seq = match &hooks.sequencer {
            Some(shared) => {
                shared.advance_to(last_seqno);
                Arc::clone(shared)
            }
            None => Arc::new(Sequencer::new(last_seqno)),
        };
        Shared {
            fs: Arc::clone(&options.fs),
            dir,
            commit: GroupCommit::new(options.max_group_bytes),
            options,
            hooks,
            cache,
            snapshots: Arc::clone(&seq.snapshots),
            seq,
            writer: Mutex::new(wal),
            versions: Mutex::new(versions),
            cfs: RwLock::new(cfs),
            old_logs: Mutex::new(BTreeMap::new()),
            background: Mutex::new(BackgroundState::default()),
            background_cv: Condvar::new(),
            stalls: Mutex::new(WriteStalls::default()),
            stall_state: std::sync::atomic::AtomicU8::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            _lock: lock,
        }
    }

    /// Makes `error` the store's sticky failure (the first one wins) and returns it.
    pub(crate) fn fail(&self, error: Error) -> Error {
        let mut failure = lock(&self.failure);
        if failure.is_none() {
            tracing::error!(%error, "store refuses further writes until reopened");
            *failure = Some(error.clone());
        }
        self.failed.store(true, Ordering::Release);
        drop(failure);
        self.wake_background();
        error
    }

    /// `ReadOnly` once a write, sync or flush has failed.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        let cause = lock(&self.failure).clone().unwrap_or(Error::Closed);
        Err(Error::ReadOnly(Box::new(cause)))
    }

    /// Tells the background threads (and anyone waiting for them) to stop.
    pub(crate) fn shut_down_background(&self) {
        let mut state = lock(&self.background);
        state.shutdown = true;
        state.epoch += 1;
        drop(state);
        self.background_cv.notify_all();
    }

    /// Whether the store is closing.
    pub(crate) fn shutting_down(&self) -> bool {
        lock(&self.background).shutdown
    }

    pub(crate) fn wake_background(&self) {
        lock(&self.background).epoch += 1;
        self.background_cv.notify_all();
    }

    /// The key filter and point index budget of a memtable of family `name`: none for a
    /// family the layer above only iterates ([`Hooks::scan_only_families`]).
    pub(crate) fn memtable_filter_bytes(&self, name: &str) -> usize {
        memtable_filter_bytes(&self.options, &self.hooks, name)
    }

    pub(crate) fn cfs_read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<u32, Arc<CfShared>>> {
        self.cfs.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn cfs_write(
        &self,
    ) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u32, Arc<CfShared>>> {
        self.cfs.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// An embedded, crash-safe key-value store: an LSM tree of column families over one write-ahead
/// log. `Send + Sync`: share it between threads with an `Arc`.
///
/// ```
/// use strata_lsm::{Options, Store, WriteBatch, WriteOptions};
///
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), Options::default())?;
/// let users = store.create_column_family("users")?;
///
/// let mut batch = WriteBatch::new();
/// batch.put(&users, b"u1", b"ada")?;
/// batch.put(&store.default_cf(), b"count", b"1")?;
/// store.write(batch, WriteOptions::synced())?; // both or neither, even across a crash
///
/// assert_eq!(store.get(&users, b"u1")?.as_deref(), Some(&b"ada"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    pub(crate) shared: Arc<Shared>,
    /// The background threads; empty once closed.
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the store in `dir`, recovering every write the log holds. See
    /// `Options::recovery_mode` for what happens to damaged logs. Fails with
    /// [`Error::Conflict`] if another `Store`, in this process or another, has `dir` open.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Store> {
        Store::open_with(dir, options, Hooks::default())
    }

    /// [`Store::open`] with what a layer above plugs in ([`Hooks`]: a shared sequencer, a
    /// property collector, a value upgrade, replay cuts, a flush barrier). The table layer
    /// opens each shard store this way.
    pub fn open_with(dir: impl AsRef<Path>, options: Options, hooks: Hooks) -> Result<Store> {
        let shared = Arc::new(crate::open::open(dir.as_ref(), options, hooks)?);
        let workers = crate::background::spawn(&shared)?;
        Ok(Store { shared, workers })
    }

    /// The `default` family, which every store has.
    pub fn default_cf(&self) -> ColumnFamily {
        self.cf_by_id(DEFAULT_CF_ID)
            .expect("the default column family cannot be dropped")
    }

    /// The family called `name`.
    pub fn cf(&self, name: &str) -> Result<ColumnFamily> {
        self.shared
            .cfs_read()
            .values()
            .find(|cf| cf.name == name)
            .map(|cf| ColumnFamily {
                shared: Arc::clone(cf),
            })
            .ok_or_else(|| Error::NotFound(format!("column family {name:?}")))
    }

    fn cf_by_id(&self, id: u32) -> Option<ColumnFamily> {
        self.shared.cfs_read().get(&id).map(|cf| ColumnFamily {
            shared: Arc::clone(cf),
        })
    }

    /// The names of the live families, `default` first.
    pub fn column_families(&self) -> Vec<String> {
        self.shared
            .cfs_read()
            .values()
            .map(|cf| cf.name.clone())
            .collect()
    }

    /// Creates a family, durably, and returns its handle.
    pub fn create_column_family(&self, name: &str) -> Result<ColumnFamily> {
        let shared = self.shared.create_cf(name)?;
        Ok(ColumnFamily { shared })
    }

    /// Drops a family, durably: its data is deleted and its handles stop working. The
    /// `default` family cannot be dropped.
    pub fn drop_column_family(&self, cf: &ColumnFamily) -> Result<()> {
        self.shared.drop_cf(&cf.shared)
    }

    /// Sets `key` to `value` (with the default [`WriteOptions`]).
    pub fn put(&self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::with_capacity(16 + key.len() + value.len());
        batch.put(cf, key, value)?;
        self.write(batch, WriteOptions::default()).map(drop)
    }

    /// Deletes `key` (with the default [`WriteOptions`]).
    pub fn delete(&self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::with_capacity(16 + key.len());
        batch.delete(cf, key)?;
        self.write(batch, WriteOptions::default()).map(drop)
    }

    /// Commits `batch` atomically and returns the sequence number of its last operation (the
    /// store's current seqno for an empty batch, which writes nothing).
    ///
    /// Concurrent calls share log appends and syncs (group commit). After a failed log write
    /// or sync every later write fails with [`Error::ReadOnly`] until the store is reopened.
    pub fn write(&self, batch: WriteBatch, options: WriteOptions) -> Result<SeqNo> {
        self.shared.check_writable()?;
        if batch.is_empty() {
            return Ok(self.shared.seq.visible());
        }
        self.throttle(&batch);
        let mut batch = batch;
        self.place(&mut batch);
        let bytes = batch.encoded_bytes();
        let request = Request {
            item: batch,
            sync: options.sync,
        };
        let last = self
            .shared
            .commit
            .commit(request, bytes, |group| self.shared.lead(group))?;
        // With a shared sequencer another store may still be inserting an older range: the
        // write is done when a reader can see it.
        if !self.shared.seq.wait_visible(last) {
            return Err(crate::write::sequencer_failed());
        }
        Ok(last)
    }

    /// Commits `batch` with the seqnos from `first` on, which the caller allocated from the
    /// store's shared sequencer ([`Hooks::sequencer`]) and publishes itself, with
    /// [`Sequencer::publish_range`], once every part written under its range is in: one part
    /// of a transaction over several stores. Returns the batch's last seqno, not yet
    /// visible. Fails with `InvalidArgument` on a store without a shared sequencer or an
    /// empty batch; on any other failure the caller's range will never be complete, so it
    /// must fail the sequencer ([`Sequencer::fail`]) unless it finds the part written.
    pub fn write_assigned(
        &self,
        mut batch: WriteBatch,
        options: WriteOptions,
        first: SeqNo,
    ) -> Result<SeqNo> {
        if !self.shared.seq.is_shared() || batch.is_empty() {
            return Err(Error::InvalidArgument(
                "write_assigned needs a shared sequencer and a non-empty batch".into(),
            ));
        }
        self.shared.check_writable()?;
        batch.assigned = Some(first);
        self.place(&mut batch);
        let bytes = batch.encoded_bytes();
        let request = Request {
            item: batch,
            sync: options.sync,
        };
        self.shared
            .commit
            .commit(request, bytes, |group| self.shared.lead(group))
    }

    /// The commits across stores (batches with a transaction trailer) whose parts the logs of
    /// the store in `dir` hold, as an open with `options` would replay them (id → the stores
    /// holding its parts), and the largest seqno the logs hold. Reads without opening (the table layer scans every shard store
    /// before opening any, to find the commits that did not reach all of their stores and
    /// cut every store's replay there with [`Hooks::drop_seqnos`]). Empty for a directory
    /// without a store.
    pub fn logged_transactions(
        dir: impl AsRef<Path>,
        options: &Options,
    ) -> Result<crate::open::LoggedTransactions> {
        crate::open::logged_transactions(dir.as_ref(), options)
    }

    /// Finds, for a small batch, where its entries go in the memtables, when a group commit
    /// leader is at work (the writer would wait for it): the next leader then links them
    /// without searching, and several writers' searches run at once instead of one after
    /// another under the writer lock. [`Store::write`] and [`Store::write_assigned`] do it
    /// as they join a group. It changes no entry: a memtable switched before the write only
    /// makes the hints go unused.
    pub(crate) fn place(&self, batch: &mut WriteBatch) {
        self.shared.place(batch);
    }

    /// Waits while a family `batch` writes is at a write-stall threshold (slowed down once,
    /// or stopped until the background threads catch up), as [`Store::write`] does first. A
    /// caller of [`Store::write_assigned`], which does not wait, calls it before allocating
    /// the range.
    pub fn throttle(&self, batch: &WriteBatch) {
        let mut ids = [0u32; 4];
        let mut n = 0;
        for id in batch.column_families() {
            if n == ids.len() {
                // Many families: an allocation is nothing beside such a batch.
                let all: Vec<u32> = batch.column_families().collect();
                return self.shared.throttle(&all);
            }
            ids[n] = id;
            n += 1;
        }
        self.shared.throttle(&ids[..n]);
    }

    /// The sequencer numbering this store's writes (shared, when the store was opened with
    /// [`Hooks::sequencer`]).
    pub fn sequencer(&self) -> &Arc<Sequencer> {
        &self.shared.seq
    }

    /// Makes every write so far durable.
    pub fn sync_wal(&self) -> Result<()> {
        self.shared.check_writable()?;
        let mut wal = lock(&self.shared.writer);
        if wal.log.durable_offset() == wal.log.offset() {
            return Ok(()); // nothing written since the last sync
        }
        let synced = wal.log.sync(|file| file.sync_data());
        let path = self.shared.log_path(wal.number);
        synced
            .map(drop)
            .map_err(|e| self.shared.fail(Error::log(path, e)))
    }

    /// The value of `key`, as of now.
    pub fn get(&self, cf: &ColumnFamily, key: &[u8]) -> Result<Option<Bytes>> {
        let seqno = self.shared.seq.visible();
        self.get_at_seqno(cf, key, seqno)
    }

    /// The value of `key` as of `snapshot`.
    pub fn get_at(
        &self,
        cf: &ColumnFamily,
        key: &[u8],
        snapshot: &Snapshot,
    ) -> Result<Option<Bytes>> {
        self.get_at_seqno(cf, key, snapshot.seqno())
    }

    /// The values of `keys` as of `snapshot`, in the order given: what [`Store::get_at`]
    /// returns for each, found in one pass per level. Keys are looked up in ascending order
    /// (sorted here when they are not), so a run of keys reads each table once, each of its
    /// blocks once, and overlaps the memory loads of the blocks it is about to need: a query
    /// fetching the rows an index read names is the caller this is for.
    pub fn multi_get_at<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        keys: &[K],
        snapshot: &Snapshot,
    ) -> Result<Vec<Option<Bytes>>> {
        let mut out = vec![None; keys.len()];
        self.multi_get_lent(cf, keys, snapshot, |i, found| {
            out[i] = Some(found.to_bytes());
        })?;
        Ok(out)
    }

    /// [`Store::multi_get_at`], each value found lent to `each` with its key's place in
    /// `keys`, where the table or memtable holds it: a caller that only reads the values
    /// (a query building the rows it fetched) takes no reference and moves nothing per key.
    /// Keys without a value at the snapshot are not reported; a key given twice is reported
    /// at both places.
    pub fn multi_get_each_at<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        keys: &[K],
        snapshot: &Snapshot,
        mut each: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        self.multi_get_lent(cf, keys, snapshot, |i, found| each(i, found.value()))
    }

    /// The visible puts among `keys` at `snapshot`, lent to `each` (for the two above).
    fn multi_get_lent<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        keys: &[K],
        snapshot: &Snapshot,
        mut each: impl FnMut(usize, Lent<'_>),
    ) -> Result<()> {
        cf.shared.check_live()?;
        let version = cf.shared.current();
        let seqno = snapshot.seqno();
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        if keys.windows(2).all(|w| w[0] <= w[1]) {
            return version.multi_get_each(&keys, seqno, |i, found| {
                if found.kind() == ValueKind::Put {
                    each(i, found);
                }
            });
        }
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| keys[i]);
        let sorted: Vec<&[u8]> = order.iter().map(|&i| keys[i]).collect();
        version.multi_get_each(&sorted, seqno, |j, found| {
            if found.kind() == ValueKind::Put {
                each(order[j], found);
            }
        })
    }

    fn get_at_seqno(&self, cf: &ColumnFamily, key: &[u8], seqno: SeqNo) -> Result<Option<Bytes>> {
        // The seqno is read before the sources: every entry at or below it is reachable from
        // any sources taken afterwards.
        cf.shared.check_live()?;
        let version = cf.shared.current();
        Ok(visible_value(version.get(key, seqno)?))
    }

    /// A snapshot of the store as of now. Reads through it ignore later writes; the versions it
    /// sees are kept while it lives.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::register_now(&self.shared.snapshots, &self.shared.seq)
    }

    /// A snapshot at `seqno`, which must be published ([`Sequencer::visible`] of a shared
    /// sequencer, read by the caller). A later seqno is refused, and so is an earlier one than
    /// a flush or compaction has already kept versions for (unless a snapshot is live at that
    /// very seqno): the versions it would see may be gone, or written with seqno 0 at the
    /// bottom level.
    pub fn snapshot_at(&self, seqno: SeqNo) -> Result<Snapshot> {
        if seqno > self.shared.seq.visible() {
            return Err(Error::InvalidArgument(format!(
                "snapshot at {seqno}, above the last published seqno {}",
                self.shared.seq.visible()
            )));
        }
        Snapshot::register(&self.shared.snapshots, seqno).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "snapshot at {seqno}: older than what flushes and compactions have kept; take \
                 snapshots as you read the seqno, or keep one live to hold it"
            ))
        })
    }

    /// The sequence number of the last write visible to readers.
    pub fn last_seqno(&self) -> SeqNo {
        self.shared.seq.visible()
    }

    /// A positioned iterator over `cf` (call a `seek*` method first).
    pub fn cursor(&self, cf: &ColumnFamily, options: ReadOptions) -> Result<Cursor> {
        let seqno = options
            .snapshot
            .as_ref()
            .map_or_else(|| self.shared.seq.visible(), Snapshot::seqno);
        cf.shared.check_live()?;
        let version = cf.shared.current();
        // At most a source per memtable, level-0 table and deeper level: one allocation
        // (growing it source by source was ~1,300 instructions of a short query).
        let most = version.memtables().count()
            + version.levels.first().map_or(0, Vec::len)
            + version.levels.len().saturating_sub(1);
        let mut sources: Vec<AnySource> = Vec::with_capacity(most);
        for mem in version.memtables() {
            sources.push(AnySource::Mem(MemSource::new(Arc::clone(mem))));
        }
        // Level 0 tables one by one (they overlap); each deeper level as one source.
        let lower = options.lower.as_deref();
        // The upper bound is exclusive; `overlaps` takes an inclusive one, which only errs
        // toward including a table whose smallest key equals the bound.
        let upper = options.upper.as_deref();
        for (level, tables) in version.levels.iter().enumerate() {
            let tables = tables.iter().filter(|t| t.overlaps(lower, upper));
            if level == 0 {
                for table in tables {
                    sources.push(AnySource::Table(TableSource::new(
                        table.table.iter(),
                        table.path.clone(),
                    )));
                }
            } else {
                let tables: Vec<_> = tables.cloned().collect();
                if !tables.is_empty() {
                    sources.push(AnySource::Level(LevelSource::new(tables)));
                }
            }
        }
        Ok(Cursor::new(
            MergingIter::new(sources),
            seqno,
            options.lower,
            options.upper,
            options.snapshot,
        ))
    }

    /// An iterator over `(key, value)` of `cf` in key order; `.rev()` for descending.
    pub fn iter(&self, cf: &ColumnFamily, options: ReadOptions) -> Result<Iter> {
        let snapshot = match options.snapshot.clone() {
            Some(snapshot) => snapshot,
            None => self.snapshot(),
        };
        let options = options.snapshot(&snapshot);
        Ok(Iter::new(
            self.cursor(cf, options.clone())?,
            self.cursor(cf, options)?,
        ))
    }

    /// Adds `runs` (one family's puts each, in any order) as new tables, in one
    /// manifest edit and at one new seqno, which it returns: readers see all of them or none.
    /// The entries skip the log and the memtables (a bulk load's fast path). Memtables that
    /// hold keys in a run's range are flushed first; each table goes to the deepest level
    /// where nothing above it meets its range. Writers of the store wait while the tables are
    /// written. Fails, adding nothing, on a key twice in a run, two runs of one family that
    /// meet, an entry over its limit, or a dropped family. See `ingest.rs`.
    pub fn ingest(&self, mut runs: Vec<IngestRun>) -> Result<SeqNo> {
        self.shared.ingest(&mut runs)
    }

    /// [`Store::ingest`], leaving `runs` with the runs it was given that were not empty —
    /// written when it succeeds — so their buffers can be reused
    /// ([`IngestRun::recycle`]).
    pub fn ingest_reusing(&self, runs: &mut Vec<IngestRun>) -> Result<SeqNo> {
        self.shared.ingest(runs)
    }

    /// Seals `cf`'s memtable (if it holds anything) and waits until every sealed memtable of
    /// the family is in a table.
    pub fn flush(&self, cf: &ColumnFamily) -> Result<()> {
        cf.shared.check_live()?;
        self.shared.seal_and_wait(&[cf.shared.id])
    }

    /// [`Store::flush`] for every family.
    pub fn flush_all(&self) -> Result<()> {
        let ids: Vec<u32> = self.shared.cfs_read().keys().copied().collect();
        self.shared.seal_and_wait(&ids)
    }

    /// Compacts every table of `cf` that holds keys in `range` down to the deepest level that
    /// has data, after flushing the family's memtable, and returns when done: versions no
    /// live snapshot needs and tombstones with nothing left to hide are gone, and the range
    /// reads from one sorted run. Tables are rewritten whole, so keys just outside the range
    /// may be compacted too. `store.compact_range(&cf, ..)` compacts everything.
    pub fn compact_range<'k>(
        &self,
        cf: &ColumnFamily,
        range: impl std::ops::RangeBounds<&'k [u8]>,
    ) -> Result<()> {
        use std::ops::Bound;
        cf.shared.check_live()?;
        let bound = |b: Bound<&&'k [u8]>| match b {
            Bound::Included(key) | Bound::Excluded(key) => Some(*key),
            Bound::Unbounded => None,
        };
        self.shared.compact_range(
            &cf.shared,
            bound(range.start_bound()),
            bound(range.end_bound()),
        )
    }

    /// Stops the flush thread and syncs the log, reporting a failure to do so. Dropping the
    /// store does the same, ignoring failures.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if self.workers.is_empty() {
            return Ok(()); // already closed
        }
        self.shared.shut_down_background();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        if self.shared.check_writable().is_err() {
            return Ok(()); // nothing more may be written; reopening recovers
        }
        let mut wal = lock(&self.shared.writer);
        let path = self.shared.log_path(wal.number);
        wal.log
            .sync(|file| file.sync_data())
            .map(drop)
            .map_err(|e| Error::log(path.clone(), e))?;
        wal.log
            .get_mut()
            .finish()
            .map_err(|e| Error::log(path, strata_wal::Error::Io(e)))?;
        // Record that the log is whole at this size, so the next open can tell a log cut
        // short after the close from a crash's torn tail.
        let edit = crate::edit::VersionEdit {
            closed_log: Some((wal.number, wal.log.offset())),
            ..Default::default()
        };
        let mut versions = lock(&self.shared.versions);
        self.shared.log_edit(&mut versions, &edit)
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(error) = self.shutdown() {
            tracing::warn!(%error, "syncing the log at close failed");
        }
    }
}
