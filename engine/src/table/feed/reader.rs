//! A feed's reader: [`Feed::poll`] delivers changes in commit order, whole commits at a time;
//! [`Feed::ack`] makes a position durable (`docs/feeds.md`).
//!
//! A poll reads every shard store's change log at one snapshot, from the feed's position on
//! (after making every store's log durable through that snapshot: nothing delivered is lost
//! to a power cut),
//! merging the stores' entries by commit id (a commit's entries in several stores share it)
//! and, within a commit, in store order. A change's place in its commit (counting every
//! change of the commit, covered or not) is stable, so a position inside a commit resumes
//! exactly there.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata_planner::Value;

use crate::error::{Error, Result};
use crate::lsm::{Iter, ReadOptions, WriteBatch, WriteOptions};
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::format::CHANGES_CF;
use crate::table::codec::record::{Record, RecordError};
use crate::table::commit::change_log::{ChangeEntry, change_key, commit_id_of};
use crate::table::db::{Db, Table};
use crate::table::feed::{ACK_PREFIX, FeedAck, key};
use crate::table::write::key_values;

/// The most bytes of log entries one poll reads (it returns what it has when it gets there,
/// so a long stretch of commits the feed does not cover costs no more per call).
const POLL_BUDGET_BYTES: usize = 16 << 20;

/// Where a change is in its feed: what [`Feed::ack`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    feed: u64,
    commit_id: u64,
    index: u32,
    /// Whether it is the last change of its commit this feed delivers.
    last_of_commit: bool,
    commit: u64,
}

impl Position {
    /// The commit (the clock) of the change.
    pub fn commit(&self) -> u64 {
        self.commit
    }

    fn order(&self) -> (u64, u32) {
        (self.commit_id, self.index)
    }

    fn stored(&self) -> FeedAck {
        FeedAck {
            feed: self.feed,
            commit_id: self.commit_id,
            // A commit acknowledged to its last change is acknowledged whole.
            index: if self.last_of_commit {
                u32::MAX
            } else {
                self.index
            },
            commit: self.commit,
        }
    }
}

/// One row change a feed delivers.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Change {
    /// The table.
    pub table: String,
    /// The row's primary key values.
    pub key: Vec<Value>,
    /// The commit (the database's commit clock: a snapshot at it or later sees the change).
    pub commit: u64,
    /// The row before (`None` for an insert).
    pub before: Option<Record>,
    /// The row after (`None` for a delete).
    pub after: Option<Record>,
    /// Its position, to acknowledge it and everything before it.
    pub position: Position,
}

/// A reader of a durable feed ([`Db::feed`]). Dropping it loses nothing: a new reader
/// resumes after the last acknowledged position.
pub struct Feed<'d> {
    db: &'d Db,
    id: u64,
    name: String,
    tables: BTreeMap<u64, String>,
    /// The last position delivered (or acknowledged, before any delivery): `(commit id,
    /// index)`, `u32::MAX` for a whole commit.
    delivered: (u64, u32),
    /// The last position acknowledged.
    acked: (u64, u32),
}

impl Db {
    /// A reader of feed `name`, from its last acknowledged position. Fails with `NotFound`
    /// if there is no such feed.
    pub fn feed(&self, name: &str) -> Result<Feed<'_>> {
        let (def, ack) = self
            .shared
            .stored_feeds()?
            .into_iter()
            .find(|(d, _)| d.name == name)
            .ok_or_else(|| Error::NotFound(format!("feed {name:?}")))?;
        let at = (ack.commit_id, ack.index);
        Ok(Feed {
            db: self,
            id: def.id,
            name: def.name,
            tables: def.tables.into_iter().collect(),
            delivered: at,
            acked: at,
        })
    }
}

impl std::fmt::Debug for Feed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("name", &self.name)
            .field("delivered", &self.delivered)
            .field("acked", &self.acked)
            .finish_non_exhaustive()
    }
}

/// One store's entries from a position on, at a snapshot.
struct Source {
    store: usize,
    iter: Iter,
    head: Option<(u64, Bytes, Bytes)>,
}

impl Source {
    fn advance(&mut self) -> Result<()> {
        self.head = match self.iter.next() {
            None => None,
            Some(item) => {
                let (k, v) = item?;
                let id = commit_id_of(&k)
                    .ok_or_else(|| record_corrupt(CHANGES_CF, &k, RecordError::Truncated))?;
                Some((id, k, v))
            }
        };
        Ok(())
    }
}

impl Feed<'_> {
    /// The feed's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Up to about `max` changes after the last delivered, in commit order, whole commits
    /// at a time (a commit larger than `max` comes whole); waits up to `timeout` for a
    /// commit when there is none. Fails with [`Error::FeedLagging`] once the feed fell past
    /// its retention limit and gave up its changes, and `NotFound` once it is dropped.
    pub fn poll(&mut self, max: usize, timeout: Duration) -> Result<Vec<Change>> {
        let deadline = Instant::now() + timeout;
        loop {
            let registry = &self.db.shared.feeds;
            match registry.slots().iter().find(|f| f.id == self.id) {
                None => return Err(Error::NotFound(format!("feed {:?}", self.name))),
                Some(slot) if slot.released => {
                    return Err(Error::FeedLagging(self.name.clone()));
                }
                Some(_) => {}
            }
            let seen = registry.commits();
            let (changes, more) = self.read(max.max(1))?;
            if !changes.is_empty() || more || Instant::now() >= deadline {
                return Ok(changes);
            }
            registry.wait_for_commit(seen, deadline);
        }
    }

    /// One pass over the stores' logs; also whether it stopped at its budget with more to
    /// read.
    fn read(&mut self, max: usize) -> Result<(Vec<Change>, bool)> {
        let shared = &self.db.shared;
        let snapshot = shared.main.store.snapshot();
        // Every commit the snapshot sees is logged; made durable before it is delivered, a
        // change a consumer saw is never taken back by a power cut. (A store with nothing
        // unsynced skips the sync.)
        for store in shared.stores() {
            store.store.sync_wal()?;
        }
        let (from_id, from_index) = self.delivered;
        let lower = change_key(from_id);
        let mut sources = Vec::new();
        for store in shared.stores() {
            let options = ReadOptions::default()
                .snapshot(&snapshot)
                .lower_bound(&lower);
            let mut source = Source {
                store: store.number,
                iter: store.store.iter(&store.changes, options)?,
                head: None,
            };
            source.advance()?;
            sources.push(source);
        }
        let mut out: Vec<Change> = Vec::new();
        let mut open: BTreeMap<u64, Arc<Table>> = BTreeMap::new();
        let mut budget = POLL_BUDGET_BYTES;
        // (commit id, changes counted in it so far)
        let mut current: Option<(u64, u32)> = None;
        let mut scanned: Option<u64> = None;
        let more = loop {
            let Some(next) = sources
                .iter_mut()
                .filter(|s| s.head.is_some())
                .min_by_key(|s| s.head.as_ref().map(|(id, _, _)| (*id, s.store)))
            else {
                break false;
            };
            let Some((id, k, v)) = next.head.take() else {
                break false;
            };
            let new_commit = current.is_none_or(|(c, _)| c != id);
            let read_some = budget < POLL_BUDGET_BYTES;
            if new_commit && (out.len() >= max || (read_some && budget < v.len())) {
                next.head = Some((id, k, v));
                break true;
            }
            next.advance()?;
            budget = budget.saturating_sub(v.len());
            if new_commit {
                // The last commit read is whole: the next poll starts after it.
                if let Some((done, _)) = current {
                    scanned = Some(done);
                }
                current = Some((id, 0));
            }
            let entry = ChangeEntry::decode(&v).map_err(|e| record_corrupt(CHANGES_CF, &k, e))?;
            for logged in entry.changes {
                let Some((_, index)) = current.as_mut() else {
                    break;
                };
                let at = *index;
                *index += 1;
                if id == from_id && (from_index == u32::MAX || at <= from_index) {
                    continue; // delivered before
                }
                let Some(table) = self.tables.get(&logged.table_id) else {
                    continue;
                };
                // The rows are as the fact family stores them: the table's layouts decode
                // them (a covered table cannot be dropped, so it is there).
                let t = match open.get(&logged.table_id) {
                    Some(t) => Arc::clone(t),
                    None => {
                        let t = shared.handle_by_id(logged.table_id).ok_or_else(|| {
                            Error::NotFound(format!(
                                "table {table:?} (id {}), which feed {:?} covers",
                                logged.table_id, self.name
                            ))
                        })?;
                        open.insert(logged.table_id, Arc::clone(&t));
                        t
                    }
                };
                let decode = |bytes: Option<Vec<u8>>| {
                    bytes
                        .map(|b| t.layouts.decode(&b))
                        .transpose()
                        .map_err(|e| record_corrupt(CHANGES_CF, &k, e))
                };
                let before = decode(logged.before)?;
                let after = decode(logged.after)?;
                // A version-2 entry leaves the key to the row (after, or before a delete).
                let key = if logged.key.is_empty() {
                    key_values(&t, after.as_ref().or(before.as_ref()))
                } else {
                    logged.key
                };
                out.push(Change {
                    table: table.clone(),
                    key,
                    commit: entry.commit,
                    before,
                    after,
                    position: Position {
                        feed: self.id,
                        commit_id: id,
                        index: at,
                        last_of_commit: false,
                        commit: entry.commit,
                    },
                });
            }
        };
        if let Some((id, _)) = current {
            scanned = Some(id);
        }
        // The last change of each commit delivered acknowledges the commit whole.
        let mut i = out.len();
        while i > 0 {
            i -= 1;
            let is_last = out
                .get(i + 1)
                .is_none_or(|n| n.position.commit_id != out[i].position.commit_id);
            out[i].position.last_of_commit = is_last;
        }
        if let Some(id) = scanned
            && id >= self.delivered.0
        {
            self.delivered = (id, u32::MAX);
        }
        Ok((out, more))
    }

    /// Acknowledges `position` and every change before it, durably: a reader opened after a
    /// crash resumes after it, and the log may trim what every feed has acknowledged. An
    /// older position than the last acknowledged does nothing. Fails with `InvalidArgument`
    /// for a position of another feed or one not delivered yet.
    pub fn ack(&mut self, position: Position) -> Result<()> {
        if position.feed != self.id {
            return Err(Error::InvalidArgument(format!(
                "a position of another feed acknowledged on feed {:?}",
                self.name
            )));
        }
        let stored = position.stored();
        let at = (stored.commit_id, stored.index);
        if position.order() > self.delivered {
            return Err(Error::InvalidArgument(format!(
                "feed {:?}: a position not delivered yet",
                self.name
            )));
        }
        if at <= self.acked {
            return Ok(());
        }
        let shared = &self.db.shared;
        let mut batch = WriteBatch::new();
        batch.put(
            &shared.feed_defs,
            &key(ACK_PREFIX, &self.name),
            &stored.encode(),
        )?;
        shared.main.store.write(batch, WriteOptions::synced())?;
        self.acked = at;
        shared.feeds.acked(self.id, stored.through());
        shared.trim()
    }
}
