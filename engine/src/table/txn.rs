//! Snapshots of the whole database and optimistic, serializable transactions
//! (`docs/transactions.md`).
//!
//! 1. Every shard store numbers its writes from the database's one sequencer, so a snapshot is
//!    one seqno across every table and shard ([`DbSnapshot`]), and a commit whose parts go to
//!    several stores is published at once ([`Db::commit_parts`]).
//! 2. A [`Transaction`] reads at a snapshot taken when it begins, buffers its writes, and
//!    records what it read: each key, and each key range a query read (a fact range, a sync
//!    index range, or the whole table for an async index).
//! 3. At commit it takes the stripes of the keys it writes, re-reads their rows, and, under
//!    the lock of the [`Resolver`](crate::table::resolver::Resolver) (`resolver.rs`), checks
//!    that no commit since its snapshot wrote a key it read or wrote, or a key inside a range
//!    it read; then it takes its commit's seqnos in the same critical section and records the
//!    keys it writes. Validation is serial; the writes are not.
//! 4. Every commit (transactions and plain writes alike) records its keys while a transaction
//!    is live, so a plain write conflicts with a transaction too. A write that did not gather
//!    its keys (no transaction was live when it started) raises a barrier instead: any live
//!    transaction whose snapshot is older and read anything fails its commit.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use strata_planner::{Query, Value};

use crate::error::{ConflictCause, Error, Result};
use crate::lsm::commit::Sequencer;
use crate::lsm::{SeqNo, Snapshot, WriteOptions};
use crate::table::db::{Db, Table, lock};
use crate::table::entry::{encode_primary_key, record_corrupt};
use crate::table::query::{DbRef, ExecStats, Reading, Rows};
use crate::table::record::Record;
use crate::table::resolver::{ReadRange, Validation};
use crate::table::txn_state::TxnState;
use crate::table::write::{
    Parts, Planned, checked, display_key, planned_unique_values, shard_parts,
};

/// A point-in-time view of every table and shard of a database: reads through it
/// ([`Db::get_at`], [`Db::query_at`]) see every write committed before it was taken and none
/// after, in every shard store at once. Cheap to take and to clone; the versions it sees are
/// kept until the last clone is dropped.
#[derive(Clone, Debug)]
pub struct DbSnapshot {
    snapshot: Snapshot,
    /// Each shard store's outbox floor, read before the snapshot.
    floors: Arc<[u64]>,
}

impl DbSnapshot {
    /// The commit seqno of the last write it sees.
    pub fn seqno(&self) -> SeqNo {
        self.snapshot.seqno()
    }

    pub(crate) fn lsm(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Shard store `store`'s outbox floor at the snapshot (0 for a store opened since).
    pub(crate) fn floor(&self, store: usize) -> u64 {
        self.floors.get(store).copied().unwrap_or(0)
    }
}

impl Db {
    /// A snapshot of every table and shard as of now.
    pub fn snapshot(&self) -> DbSnapshot {
        let floors = self.shared.tracker.floors().into();
        DbSnapshot {
            snapshot: self.shared.main.store.snapshot(),
            floors,
        }
    }

    /// The row of `table` whose primary key is `key`, as of `snapshot`.
    pub fn get_at(
        &self,
        snapshot: &DbSnapshot,
        table: &str,
        key: &[Value],
    ) -> Result<Option<Record>> {
        let t = self.shared.handle(table)?;
        let values: Vec<&Value> = key.iter().collect();
        let pk = encode_primary_key(&t.def, &values)?;
        self.read_record_at(&t, &pk, snapshot)
    }

    /// Runs `query` on `table` as of `snapshot`: [`Db::query`]'s rows, at that point in time.
    pub fn query_at(&self, snapshot: &DbSnapshot, table: &str, query: &Query) -> Result<Rows<'_>> {
        let reading = Reading {
            at: Some(snapshot),
            record: false,
        };
        Db::query_with(DbRef::Borrowed(self), table, query, reading)
    }

    /// Begins an optimistic, serializable transaction: it reads at a snapshot taken now, sees
    /// its own writes, and commits them all at once, or fails with an error whose
    /// [`Error::is_retryable`] is true when another commit since its snapshot wrote what it
    /// read or wrote.
    pub fn begin(&self) -> Result<Transaction<'_>> {
        Db::begin_with(DbRef::Borrowed(self))
    }

    /// [`Db::begin`] for a database shared behind an [`Arc`]: the transaction holds a clone
    /// of the `Arc` instead of a borrow, so it is `'static` and [`Send`] — it can move into a
    /// spawned thread or an async task. The database stays open while it lives.
    pub fn begin_owned(self: &Arc<Self>) -> Result<OwnedTransaction> {
        Db::begin_with(DbRef::Shared(Arc::clone(self)))
    }

    fn begin_with(db: DbRef<'_>) -> Result<Transaction<'_>> {
        let (began, barrier) = db.shared.resolver.begin(&db.shared.sequencer);
        // A commit without its keys recorded must be in the snapshot.
        if barrier > began && !db.shared.sequencer.wait_visible(barrier) {
            db.shared.resolver.end(began, &db.shared.sequencer);
            return Err(Error::CommitIncomplete);
        }
        Ok(Transaction {
            snapshot: db.snapshot(),
            db,
            began,
            handles: Vec::new(),
            tables: BTreeMap::new(),
            reads: Vec::new(),
            read_rows: HashMap::new(),
            done: false,
        })
    }

    /// The record at `key` in `t`'s fact family as of `snapshot`.
    pub(crate) fn read_record_at(
        &self,
        t: &Table,
        key: &[u8],
        snapshot: &DbSnapshot,
    ) -> Result<Option<Record>> {
        let shard = &t.shards[t.fact_shard(key)];
        match shard.store.store.get_at(&shard.fact, key, snapshot.lsm())? {
            None => Ok(None),
            Some(bytes) => t
                .layouts
                .decode(&bytes)
                .map(Some)
                .map_err(|e| record_corrupt(shard.fact.name(), key, e)),
        }
    }
}

/// A transaction's writes to one table.
struct TableWrites {
    /// The table's definition when the transaction first wrote it: a table dropped and
    /// recreated since fails the commit.
    table: Arc<Table>,
    /// The mutations, checked and encoded, in order, replayed at commit against the rows as
    /// they are then.
    mutations: Vec<Planned>,
    /// Each written key's last mutation, by its index in `mutations`: its record is the
    /// key's row after the transaction's writes (`None`: deleted). Each mutation writes a
    /// whole row, so the row is not copied a second time.
    rows: HashMap<Vec<u8>, usize>,
}

impl TableWrites {
    /// The row at `pk` after the transaction's writes, if it wrote `pk` (`Some(None)`:
    /// deleted).
    fn row(&self, pk: &[u8]) -> Option<&Option<Record>> {
        let &at = self.rows.get(pk)?;
        self.mutations.get(at).map(|m| &m.record)
    }
}

/// An optimistic, serializable transaction over any tables and shards ([`Db::begin`]).
///
/// Reads see the snapshot taken at `begin` plus the transaction's own writes. Nothing is
/// written before [`Transaction::commit`]; dropping an uncommitted transaction rolls it back.
pub struct Transaction<'db> {
    db: DbRef<'db>,
    snapshot: DbSnapshot,
    /// The visible seqno when it began (its registration with the resolver).
    began: SeqNo,
    /// The tables it has used, as first looked up ([`Transaction::with_table`]).
    handles: Vec<Arc<Table>>,
    tables: BTreeMap<String, TableWrites>,
    reads: Vec<ReadRange>,
    /// Rows read by key at the snapshot, by table id and key: at commit they are the rows'
    /// current state (or the validation fails), so they are not read again, and a written
    /// key among them is not checked twice.
    read_rows: HashMap<u64, HashMap<Vec<u8>, Option<Record>>>,
    done: bool,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("snapshot", &self.snapshot.seqno())
            .field("tables", &self.tables.keys().collect::<Vec<_>>())
            .field("reads", &self.reads.len())
            .finish_non_exhaustive()
    }
}

/// A transaction of [`Db::begin_owned`]: `'static` and [`Send`].
pub type OwnedTransaction = Transaction<'static>;

/// The rows of [`Transaction::query`]: the stored rows at the transaction's snapshot with its
/// own writes applied.
pub struct TxRows<'a> {
    rows: TxSource<'a>,
    stats: ExecStats,
}

enum TxSource<'a> {
    /// No own writes in the table: the stored rows, as they are read.
    Stored(Box<Rows<'a>>),
    /// Own writes merged in: every row, merged, ordered, limited and projected.
    Merged(std::vec::IntoIter<Record>),
}

impl TxRows<'_> {
    /// What reading them did: for rows merged with the transaction's own writes, what the
    /// stored read did (it was read whole before the first row was returned).
    pub fn stats(&self) -> &ExecStats {
        match &self.rows {
            TxSource::Stored(rows) => rows.stats(),
            TxSource::Merged(_) => &self.stats,
        }
    }
}

impl Iterator for TxRows<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        match &mut self.rows {
            TxSource::Stored(rows) => rows.next(),
            TxSource::Merged(rows) => rows.next().map(Ok),
        }
    }
}

impl std::fmt::Debug for TxRows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxRows")
            .field("merged", &matches!(self.rows, TxSource::Merged(_)))
            .finish_non_exhaustive()
    }
}

impl<'db> Transaction<'db> {
    /// The snapshot it reads at.
    pub fn snapshot(&self) -> &DbSnapshot {
        &self.snapshot
    }

    fn check_open(&self) -> Result<()> {
        if self.done {
            return Err(Error::InvalidArgument(
                "the transaction has already committed or rolled back".into(),
            ));
        }
        Ok(())
    }

    /// The row of `table` with primary key `key`: the transaction's own write of it if any,
    /// else the row at its snapshot.
    pub fn get(&mut self, table: &str, key: &[Value]) -> Result<Option<Record>> {
        self.check_open()?;
        self.with_table(table, |tx, t| {
            let values: Vec<&Value> = key.iter().collect();
            let pk = encode_primary_key(&t.def, &values)?;
            tx.read_row(t, &pk)
        })
    }

    /// Runs `f` with table `name` as the transaction first looked it up: the database's
    /// table map is read (a shared lock and a shared count, both contended between threads)
    /// once per table and transaction, not once per call. The commit reads the definition
    /// again and fails on a table dropped and recreated since.
    fn with_table<R>(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Self, &Arc<Table>) -> Result<R>,
    ) -> Result<R> {
        let at = match self.handles.iter().position(|t| t.def.name == name) {
            Some(at) => at,
            None => {
                self.handles.push(self.db.shared.handle(name)?);
                self.handles.len() - 1
            }
        };
        let handles = std::mem::take(&mut self.handles);
        let result = f(self, &handles[at]);
        self.handles = handles;
        result
    }

    /// The row at encoded key `pk`, recorded as read unless the transaction wrote it.
    fn read_row(&mut self, t: &Table, pk: &[u8]) -> Result<Option<Record>> {
        if let Some(own) = self.tables.get(&t.def.name)
            && own.table.def.id == t.def.id
            && let Some(row) = own.row(pk)
        {
            return Ok(row.clone());
        }
        let shard = &t.shards[t.fact_shard(pk)];
        self.reads
            .push(ReadRange::key(shard.store.number, shard.fact.id(), pk));
        let row = self.db.read_record_at(t, pk, &self.snapshot)?;
        self.read_rows
            .entry(t.def.id)
            .or_default()
            .insert(pk.to_vec(), row.clone());
        Ok(row)
    }

    /// The rows of `query` on `table` at the transaction's snapshot with its own writes
    /// applied: a row it wrote replaces the stored one (and is kept only if it matches), a
    /// row it deleted is gone. The key ranges the query read count as read.
    pub fn query(&mut self, table: &str, query: &Query) -> Result<TxRows<'db>> {
        self.check_open()?;
        let own = self
            .tables
            .get(table)
            .filter(|w| !w.rows.is_empty())
            .map(|w| {
                let rows: HashMap<Vec<u8>, Option<Record>> = w
                    .rows
                    .keys()
                    .map(|pk| (pk.clone(), w.row(pk).cloned().flatten()))
                    .collect();
                (Arc::clone(&w.table), rows)
            });
        let reading = Reading {
            at: Some(&self.snapshot),
            record: true,
        };
        let Some((t, rows)) = own else {
            let mut stored = Db::query_with(self.db.clone(), table, query, reading)?;
            self.reads.extend(stored.take_read_ranges());
            return Ok(TxRows {
                rows: TxSource::Stored(Box::new(stored)),
                stats: ExecStats::default(),
            });
        };
        // Own writes: read whole stored rows, unlimited, then merge, order, limit, project.
        let mut whole = query.clone();
        whole.projection = None;
        whole.limit = None;
        let mut stored = Db::query_with(self.db.clone(), table, &whole, reading)?;
        self.reads.extend(stored.take_read_ranges());
        let matches = |r: &Record| {
            query
                .predicates
                .iter()
                .all(|p| p.matches(r.value(&p.field)))
        };
        let mut out = Vec::new();
        for row in stored.by_ref() {
            let row = row?;
            let pk = crate::table::entry::record_key(&t.def, &row)?;
            if !rows.contains_key(&pk) {
                out.push(row);
            }
        }
        out.extend(rows.into_values().flatten().filter(|r| matches(r)));
        if let Some(order) = &query.order {
            out.sort_by(|a, b| {
                let o = order
                    .fields
                    .iter()
                    .map(|f| a.value(f).cmp(b.value(f)))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal);
                if order.descending { o.reverse() } else { o }
            });
        }
        if let Some(limit) = query.limit {
            out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        if let Some(fields) = &query.projection {
            out = out.into_iter().map(|r| r.project(fields)).collect();
        }
        Ok(TxRows {
            rows: TxSource::Merged(out.into_iter()),
            stats: stored.stats().clone(),
        })
    }

    /// Inserts `record` into `table`; fails (not retryably) if a row with its key exists at
    /// the snapshot or was written by the transaction, and then changes nothing.
    pub fn insert(&mut self, table: &str, record: Record) -> Result<()> {
        self.check_open()?;
        self.with_table(table, |tx, t| {
            let (pk, record, encoded) = checked(&tx.db.shared, t, record)?;
            if tx.read_row(t, &pk)?.is_some() {
                return Err(Error::Conflict(format!(
                    "table {table:?} has a row with key {}",
                    display_key(t, Some(&record))
                )));
            }
            tx.buffer(t, pk, Some((record, encoded)), true);
            Ok(())
        })
    }

    /// Inserts or replaces `record` in `table`.
    pub fn upsert(&mut self, table: &str, record: Record) -> Result<()> {
        self.check_open()?;
        self.with_table(table, |tx, t| {
            let (pk, record, encoded) = checked(&tx.db.shared, t, record)?;
            tx.buffer(t, pk, Some((record, encoded)), false);
            Ok(())
        })
    }

    /// Deletes the row of `table` whose primary key is `key`, if there is one.
    pub fn delete(&mut self, table: &str, key: &[Value]) -> Result<()> {
        self.check_open()?;
        self.with_table(table, |tx, t| {
            let values: Vec<&Value> = key.iter().collect();
            let pk = encode_primary_key(&t.def, &values)?;
            tx.buffer(t, pk, None, false);
            Ok(())
        })
    }

    /// Buffers a write of `pk`: the row and its encoding (`None`: a delete).
    fn buffer(
        &mut self,
        t: &Arc<Table>,
        pk: Vec<u8>,
        row: Option<(Record, Vec<u8>)>,
        insert: bool,
    ) {
        // The name is cloned only for a table's first write.
        let writes = if let Some(writes) = self.tables.get_mut(&t.def.name) {
            writes
        } else {
            self.tables
                .entry(t.def.name.clone())
                .or_insert_with(|| TableWrites {
                    table: Arc::clone(t),
                    mutations: Vec::new(),
                    rows: HashMap::new(),
                })
        };
        let (record, encoded) = match row {
            Some((record, encoded)) => (Some(record), encoded),
            None => (None, Vec::new()),
        };
        writes.rows.insert(pk.clone(), writes.mutations.len());
        writes.mutations.push(Planned {
            key: pk,
            record,
            encoded,
            insert,
        });
    }

    /// Commits with the default [`WriteOptions`].
    pub fn commit(self) -> Result<()> {
        self.commit_with(WriteOptions::default())
    }

    /// Commits every write, atomically across tables and shards, if nothing it read or wrote
    /// was written by another commit since its snapshot; else fails with a retryable
    /// [`Error::TransactionConflict`] and writes nothing. A read-only transaction always
    /// commits.
    pub fn commit_with(mut self, options: WriteOptions) -> Result<()> {
        self.check_open()?;
        self.done = true;
        let tables = std::mem::take(&mut self.tables);
        if tables.is_empty() {
            return Ok(());
        }
        let db = &*self.db.clone();
        // 1. Check and encode, before any lock.
        let mut planned = Vec::with_capacity(tables.len());
        for (name, writes) in tables {
            let t = writes.table;
            // A written key counts as read: a write to it since the snapshot is a conflict.
            // One read by key is already in the reads.
            let read = self.read_rows.get(&t.def.id);
            for pk in writes.rows.keys() {
                if read.is_some_and(|read| read.contains_key(pk)) {
                    continue;
                }
                let shard = &t.shards[t.fact_shard(pk)];
                self.reads
                    .push(ReadRange::key(shard.store.number, shard.fact.id(), pk));
            }
            planned.push((name, t.def.id, writes.mutations));
        }
        // 2. Lock every written key's stripe and its new unique values', then re-read the
        // definitions.
        let mut values = Vec::new();
        for (name, _, p) in &planned {
            if let Ok(t) = db.shared.handle(name) {
                values.extend(planned_unique_values(&t.def, p));
            }
        }
        let keys = planned
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|p| p.key.as_slice()))
            .chain(values.iter().map(Vec::as_slice));
        let _guards = db.shared.stripes.lock(keys);
        let mut parts = Parts::new();
        let mut changed = Vec::new();
        for (name, id, planned) in planned {
            let t = db.shared.handle(&name)?;
            if t.def.id != id {
                return Err(Error::Conflict(format!(
                    "table {name:?} was dropped and recreated during the transaction"
                )));
            }
            // 3. The rows as they are now, with the mutations applied. An insert whose key
            // is taken now was free at the snapshot: a concurrent commit, so retryable.
            let read_rows = &mut self.read_rows;
            let mut known = |pk: &[u8]| read_rows.get_mut(&id).and_then(|rows| rows.remove(pk));
            let changes = db
                .overlay_knowing(&t, planned, &mut known)?
                .map_err(|taken| {
                    Error::TransactionConflict(ConflictCause::KeyTaken {
                        table: t.def.name.clone(),
                        key: taken.0,
                    })
                })?;
            db.check_unique(&t, &changes)?;
            // Always gathered: a transaction that begins before this one allocates needs
            // them, and the barrier a commit without them raises fails such a transaction
            // whatever it read (with two threads in transactions that measured 600 retries
            // per 200,000 commits instead of 5). The resolver records them only when
            // another transaction is live.
            shard_parts(&t, &changes, &mut parts, true)?;
            changed.push((t, changes.iter().filter(|c| c.changes_anything()).count()));
        }
        // 4. Validate, allocate and write.
        let validation = Validation {
            snapshot: self.snapshot.seqno(),
            reads: &self.reads,
        };
        let wrote = db.commit_parts(parts, options, Some(&validation))?;
        for (t, n) in changed {
            db.shared.note_changes(&t, n as u64);
        }
        if options.sync {
            db.sync_after(&wrote)?;
        }
        Ok(())
    }

    /// Drops every write; the same as dropping the transaction.
    pub fn rollback(mut self) {
        self.done = true;
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        self.db
            .shared
            .resolver
            .end(self.began, &self.db.shared.sequencer);
    }
}

/// What an open decided about the commits across stores found in the logs, before any store
/// opened (`docs/transactions.md` §2, the replay rule).
pub(crate) struct Recovery {
    /// The state written before the stores open: `cut` is what every store's replay drops.
    pub(crate) state: TxnState,
    /// The shard stores whose directories were scanned.
    scanned: std::collections::BTreeSet<usize>,
}

impl Recovery {
    /// Scans the logs of every shard store the database has (without opening any). A commit
    /// across stores is complete if every store it names holds its part, or if its id is at
    /// or below the state file's `complete_through` (its other parts went into tables after
    /// all were durable). If one is not, every store's logs are cut at it: the range from its
    /// id to the last seqno any log holds is dropped everywhere. Records the decision durably
    /// (with `complete_through` raised past every commit kept) before any store replays, and
    /// returns it with the flush barrier the stores will use.
    pub(crate) fn resolve(
        dir: &std::path::Path,
        options: &crate::table::Options,
        sequencer: &Arc<Sequencer>,
    ) -> Result<(Recovery, Arc<CommitBarrier>)> {
        let fs = Arc::clone(&options.store.fs);
        let barrier = Arc::new(CommitBarrier {
            shared: std::sync::OnceLock::new(),
            sequencer: Arc::clone(sequencer),
        });
        let mut state = TxnState::read(fs.as_ref(), dir)?;
        // Every store there may be: the database's own, the configured shard directories, the
        // `shard-<n>` directories present, and any a logged commit names.
        let mut to_scan: std::collections::BTreeSet<usize> =
            (0..=options.shard_dirs.len()).collect();
        if let Ok(names) = fs.list(dir) {
            for name in names {
                if let Some(n) = name
                    .strip_prefix(crate::table::format::SHARD_DIR_PREFIX)
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    to_scan.insert(n);
                }
            }
        }
        let mut scanned = std::collections::BTreeSet::new();
        // id → (participants, stores holding a part)
        let mut found: BTreeMap<u64, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
        let mut last_logged = 0;
        while let Some(n) = to_scan.pop_first() {
            if !scanned.insert(n) {
                continue;
            }
            let path = crate::table::db::shard_path(dir, options, n);
            let logged = crate::lsm::Store::logged_transactions(&path, &options.store)?;
            last_logged = last_logged.max(logged.last_seqno);
            for (id, participants) in logged.transactions {
                for &p in &participants {
                    if !scanned.contains(&(p as usize)) {
                        to_scan.insert(p as usize);
                    }
                }
                let entry = found
                    .entry(id)
                    .or_insert_with(|| (participants, Vec::new()));
                entry.1.push(n as u32);
            }
        }
        let before = state.clone();
        let cut_at = found.iter().find_map(|(&id, (participants, holders))| {
            let complete =
                participants.iter().all(|p| holders.contains(p)) || id <= before.complete_through;
            let already_cut = before.cut.iter().any(|&(lo, hi)| (lo..=hi).contains(&id));
            (!complete && !already_cut).then_some((id, participants, holders))
        });
        if let Some((id, participants, holders)) = cut_at {
            tracing::warn!(
                id,
                ?participants,
                ?holders,
                through = last_logged,
                "a commit across shard stores did not reach all of them: every store's logs \
                 are cut there"
            );
            state.cut.push((id, last_logged.max(id)));
            state.complete_through = state.complete_through.max(id - 1);
        } else if let Some(&last) = found.keys().next_back() {
            state.complete_through = state.complete_through.max(last);
        }
        if state != before {
            TxnState::write(&state, fs.as_ref(), dir)?;
        }
        Ok((Recovery { state, scanned }, barrier))
    }

    /// After every store opened: if every store scanned is open, each replayed its logs
    /// without the cut ranges into tables, and the ranges need no remembering.
    pub(crate) fn opened(&self, shared: &crate::table::db::Shared) -> Result<()> {
        let open: Vec<usize> = shared.stores().iter().map(|s| s.number).collect();
        let mut state = lock(&shared.txn_state);
        if state.cut.is_empty() || self.scanned.iter().any(|n| !open.contains(n)) {
            return Ok(());
        }
        let mut next = state.clone();
        next.cut.clear();
        next.write(shared.options.store.fs.as_ref(), shared.dir())?;
        *state = next;
        Ok(())
    }
}

/// The flush rule (`docs/transactions.md` §2): before a store writes parts of commits across
/// stores into a table, every part of those commits is made durable in its own store, and
/// the state file records that every commit up to the published seqno is complete.
#[derive(Debug)]
pub(crate) struct CommitBarrier {
    shared: std::sync::OnceLock<std::sync::Weak<crate::table::db::Shared>>,
    sequencer: Arc<Sequencer>,
}

impl CommitBarrier {
    pub(crate) fn attach(&self, shared: &Arc<crate::table::db::Shared>) {
        let _ = self.shared.set(Arc::downgrade(shared));
    }
}

impl crate::lsm::FlushBarrier for CommitBarrier {
    fn before_flush(&self, through: u64) -> crate::lsm::Result<()> {
        let failed = || crate::lsm::Error::ReadOnly(Box::new(crate::lsm::Error::FlushRefused));
        let Some(shared) = self.shared.get().and_then(std::sync::Weak::upgrade) else {
            // The database is closing (or still opening, when nothing is in flight): every
            // store syncs its log as it closes.
            return Ok(());
        };
        let stores = shared.stores();
        if stores.len() < 2 {
            // One store: its own log order is the commit order; nothing to coordinate.
            return Ok(());
        }
        // Every commit up to `through` is then wholly written...
        if !self.sequencer.wait_visible(through) {
            return Err(failed());
        }
        let published = self.sequencer.visible();
        // ... and durable, in every store ...
        for store in stores {
            store.store.sync_wal()?;
        }
        // ... which a later recovery learns from the state file.
        let mut state = lock(&shared.txn_state);
        if state.complete_through < published {
            let mut next = state.clone();
            next.complete_through = published;
            next.write(shared.options.store.fs.as_ref(), shared.dir())
                .map_err(|e| match e {
                    Error::Store(e) => e,
                    other => crate::lsm::Error::Internal(other.to_string()),
                })?;
            *state = next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transaction, committed, refused at admission, failing before it or rolled back,
    /// ends its registration with the resolver once: a registration left behind would keep
    /// every later commit recording its keys and hold back the trim, and one ended twice
    /// would wrap the live count, with the same effect.
    #[test]
    fn every_transaction_ends_its_registration_exactly_once() {
        use crate::table::record::Record;
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), crate::table::options::Options::default()).expect("open");
        db.create_table("t", ["k"], crate::TableOptions::default())
            .expect("table");
        let row = |k: i64, v: i64| {
            let mut r = Record::new();
            r.set("k", crate::Value::Int(k));
            r.set("v", crate::Value::Int(v));
            r
        };
        db.insert("t", row(1, 0)).expect("insert");
        let key = [crate::Value::Int(1)];

        let mut tx = db.begin().expect("begin");
        tx.get("t", &key).expect("get");
        tx.upsert("t", row(1, 1)).expect("upsert");
        tx.commit().expect("commit");
        assert!(!db.shared.resolver.has_live(), "committed");

        // Two read the row; the second to commit conflicts at admission.
        let mut a = db.begin().expect("begin");
        let mut b = db.begin().expect("begin");
        a.get("t", &key).expect("get");
        b.get("t", &key).expect("get");
        a.upsert("t", row(1, 2)).expect("upsert");
        b.upsert("t", row(1, 3)).expect("upsert");
        a.commit().expect("commit");
        assert!(db.shared.resolver.has_live(), "b is still live");
        let refused = b.commit().expect_err("a wrote what b read");
        assert!(refused.is_retryable());
        assert!(!db.shared.resolver.has_live(), "refused");

        // An insert of a key taken since the snapshot fails before admission.
        let mut c = db.begin().expect("begin");
        db.insert("t", row(2, 0)).expect("insert");
        c.insert("t", row(2, 1)).expect("buffered");
        assert!(c.commit().is_err());
        assert!(!db.shared.resolver.has_live(), "failed before admission");

        db.begin().expect("begin").rollback();
        assert!(!db.shared.resolver.has_live(), "rolled back");
    }
}
