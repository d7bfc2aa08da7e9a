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
//!    the lock of the [`Resolver`](crate::table::commit::resolver::Resolver) (`commit/resolver.rs`), checks
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
use crate::lsm::{SeqNo, WriteOptions};
use crate::table::catalog::entry::encode_primary_key;
use crate::table::codec::record::Record;
use crate::table::commit::resolver::{ReadRange, Validation};
use crate::table::db::{Db, Table};
use crate::table::read::rows::{DbRef, ExecStats, Reading, Rows};
pub(crate) mod recovery;

use crate::table::read::snapshot::DbSnapshot;
use crate::table::write::{
    Parts, Planned, checked, display_key, planned_unique_values, shard_parts,
};

impl Db {
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
        let matches = |r: &Record| query.admits(&|f| r.value(f));
        let mut out = Vec::new();
        for row in stored.by_ref() {
            let row = row?;
            let pk = crate::table::catalog::entry::record_key(&t.def, &row)?;
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
            let covered = db.shared.feeds.covers(t.def.id);
            shard_parts(&t, &changes, &mut parts, true, covered)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transaction, committed, refused at admission, failing before it or rolled back,
    /// ends its registration with the resolver once: a registration left behind would keep
    /// every later commit recording its keys and hold back the trim, and one ended twice
    /// would wrap the live count, with the same effect.
    #[test]
    fn every_transaction_ends_its_registration_exactly_once() {
        use crate::table::codec::record::Record;
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), crate::table::db::options::Options::default()).expect("open");
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
        let taken = c.commit();
        assert!(
            matches!(&taken, Err(e @ Error::TransactionConflict(_)) if e.is_retryable()),
            "{taken:?}"
        );
        assert!(!db.shared.resolver.has_live(), "failed before admission");

        db.begin().expect("begin").rollback();
        assert!(!db.shared.resolver.has_live(), "rolled back");
    }
}
