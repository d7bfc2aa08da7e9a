//! `DbSnapshot`: one seqno across every shard store, and reads at it.

use std::sync::Arc;

use strata_planner::{Query, Value};

use crate::error::Result;
use crate::lsm::{SeqNo, Snapshot};
use crate::table::catalog::entry::encode_primary_key;
use crate::table::codec::record::Record;
use crate::table::db::{Db, Table};
use crate::table::read::rows::{DbRef, OwnedRows, Reading, Rows};

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

    /// [`Db::query_at`] for a database shared behind an [`Arc`]: rows that hold a clone of
    /// the `Arc`, as [`Db::query_owned`]'s do, read as of `snapshot` (a SQL statement's scans
    /// all read at the statement's snapshot).
    pub fn query_owned_at(
        self: &Arc<Self>,
        snapshot: &DbSnapshot,
        table: &str,
        query: &Query,
    ) -> Result<OwnedRows> {
        let reading = Reading {
            at: Some(snapshot),
            record: false,
        };
        Db::query_with(DbRef::Shared(Arc::clone(self)), table, query, reading)
    }

    /// The record at `key` in `t`'s fact family as of `snapshot`.
    pub(crate) fn read_record_at(
        &self,
        t: &Table,
        key: &[u8],
        snapshot: &DbSnapshot,
    ) -> Result<Option<Record>> {
        let shard = &t.shards[t.fact_shard(key)];
        let bytes = shard.store.store.get_at(&shard.fact, key, snapshot.lsm())?;
        t.stored_row(shard, key, bytes.as_deref())
    }
}
