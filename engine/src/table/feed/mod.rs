//! The feed room: durable change feeds over the change log (`docs/feeds.md`).
//!
//! - A feed is named, covers a set of tables, and starts at the commit point it was created
//!   at: every commit after it that changes a covered row has its changes in the change log
//!   (`commit/change_log.rs`), written in the commit's own batch.
//! - Its definition and acknowledged position live in the database's own store, family
//!   `sys/feeds` (`docs/formats/changes.md`): `d/<name>` the definition, `a/<name>` the
//!   position, `next` the next feed id. An acknowledgement is a synced write: a reopened
//!   feed resumes after it.
//! - The log is trimmed, store by store, through the commit every feed still holding changes
//!   has acknowledged (`trim`); a feed over its `max_retained_bytes` is lagging
//!   ([`OnLag`]).
//! - [`reader`]: [`Feed`](reader::Feed), its `poll` and `ack`.
//!
//! Uses `codec`, `commit` (the log format and the registry) and `db`.

pub mod reader;

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::lsm::{ReadOptions, WriteBatch, WriteOptions};
use crate::table::codec::format::FEEDS_CF;
use crate::table::codec::record::RecordError;
use crate::table::codec::record_codec::{Reader, put_varint};
use crate::table::commit::change_log::{FeedOptions, FeedSlot, OnLag, change_key, commit_id_of};
use crate::table::db::{Db, Shared, lock};

const DEF_PREFIX: &[u8] = b"d/";
const ACK_PREFIX: &[u8] = b"a/";
const NEXT_ID: &[u8] = b"next";
const FEED_VERSION: u8 = 1;
/// The longest feed name.
pub const MAX_FEED_NAME: usize = 255;

/// A feed's definition as stored (`d/<name>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedDef {
    /// Its id: never reused, so a position names the feed it came from.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// The tables it covers: `(catalog id, name)`.
    pub tables: Vec<(u64, String)>,
    /// The commit id it starts after.
    pub start: u64,
    /// Its retention limit, in bytes.
    pub max_retained_bytes: u64,
    /// Whether it keeps changes past the limit ([`OnLag::Retain`]).
    pub retain: bool,
    /// Whether it fell past its limit and gave up its changes.
    pub released: bool,
}

impl FeedDef {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![FEED_VERSION];
        put_varint(&mut out, self.id);
        put_bytes(&mut out, self.name.as_bytes());
        put_varint(&mut out, self.start);
        put_varint(&mut out, self.max_retained_bytes);
        out.push(u8::from(self.retain) | (u8::from(self.released) << 1));
        put_varint(&mut out, self.tables.len() as u64);
        for (id, name) in &self.tables {
            put_varint(&mut out, *id);
            put_bytes(&mut out, name.as_bytes());
        }
        out
    }

    /// Decodes a definition, checking its version, flags, counts and text.
    pub fn decode(bytes: &[u8]) -> std::result::Result<FeedDef, RecordError> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.byte()?;
        if version != FEED_VERSION {
            return Err(RecordError::Version(version));
        }
        let id = r.varint()?;
        let name = text(&mut r)?;
        let start = r.varint()?;
        let max_retained_bytes = r.varint()?;
        let flags = r.byte()?;
        if flags > 3 {
            return Err(RecordError::UnknownTag(flags));
        }
        let count = r.varint()?;
        if count > (bytes.len() / 2) as u64 {
            return Err(RecordError::TooLong(count));
        }
        let tables = (0..count)
            .map(|_| Ok((r.varint()?, text(&mut r)?)))
            .collect::<std::result::Result<Vec<_>, RecordError>>()?;
        if r.at != bytes.len() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(FeedDef {
            id,
            name,
            tables,
            start,
            max_retained_bytes,
            retain: flags & 1 != 0,
            released: flags & 2 != 0,
        })
    }
}

/// A feed's acknowledged position as stored (`a/<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeedAck {
    /// The feed's id.
    pub feed: u64,
    /// The commit id of the last change acknowledged (the start, before any).
    pub commit_id: u64,
    /// Its place in the commit (`u32::MAX`: the whole commit).
    pub index: u32,
    /// The commit's seqno (the commit clock), for reports.
    pub commit: u64,
}

impl FeedAck {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![FEED_VERSION];
        for n in [
            self.feed,
            self.commit_id,
            u64::from(self.index),
            self.commit,
        ] {
            put_varint(&mut out, n);
        }
        out
    }

    /// Decodes a position.
    pub fn decode(bytes: &[u8]) -> std::result::Result<FeedAck, RecordError> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.byte()?;
        if version != FEED_VERSION {
            return Err(RecordError::Version(version));
        }
        let (feed, commit_id, index, commit) = (r.varint()?, r.varint()?, r.varint()?, r.varint()?);
        let index = u32::try_from(index).map_err(|_| RecordError::TooLong(index))?;
        if r.at != bytes.len() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(FeedAck {
            feed,
            commit_id,
            index,
            commit,
        })
    }

    /// The commit id through which every change is acknowledged.
    pub(crate) fn through(&self) -> u64 {
        if self.index == u32::MAX {
            self.commit_id
        } else {
            self.commit_id.saturating_sub(1)
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn text(r: &mut Reader<'_>) -> std::result::Result<String, RecordError> {
    let len = r.varint()?;
    let len = usize::try_from(len).map_err(|_| RecordError::TooLong(len))?;
    let bytes = r.take(len)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| RecordError::NotUtf8)
}

fn key(prefix: &[u8], name: &str) -> Vec<u8> {
    [prefix, name.as_bytes()].concat()
}

/// A feed as [`Db::feeds`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeedInfo {
    /// Its name.
    pub name: String,
    /// The tables it covers.
    pub tables: Vec<String>,
    /// The commit (clock) of the last change it acknowledged, or where it started.
    pub acked_commit: u64,
    /// The bytes of change log entries after its acknowledged position, kept for it.
    pub retained_bytes: u64,
    /// Commits (seqnos of the clock) between its acknowledged position and now.
    pub lag: u64,
    /// Whether it is keeping up.
    pub state: FeedState,
}

/// Whether a feed is keeping up ([`FeedInfo::state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeedState {
    /// Within its retention limit.
    Active,
    /// Over its limit, keeping every change ([`OnLag::Retain`]).
    Lagging,
    /// Over its limit and released ([`OnLag::Release`]): changes were trimmed past it, and
    /// its reader fails with [`Error::FeedLagging`].
    Released,
}

impl Shared {
    /// The feeds' definitions and positions, from `sys/feeds`.
    fn stored_feeds(&self) -> Result<Vec<(FeedDef, FeedAck)>> {
        let store = &self.main.store;
        let mut defs = Vec::new();
        let options = ReadOptions::default().prefix(DEF_PREFIX);
        for item in store.iter(&self.feed_defs, options)? {
            let (k, v) = item?;
            let corrupt = |e| crate::table::catalog::entry::record_corrupt(FEEDS_CF, &k, e);
            let def = FeedDef::decode(&v).map_err(corrupt)?;
            let ack_bytes = store.get(&self.feed_defs, &key(ACK_PREFIX, &def.name))?;
            let ack = match ack_bytes {
                Some(bytes) => FeedAck::decode(&bytes).map_err(corrupt)?,
                None => return Err(corrupt(RecordError::Truncated)),
            };
            defs.push((def, ack));
        }
        Ok(defs)
    }

    /// Loads the feeds into the registry and the change log's sizes into its accounting
    /// (at open), then trims what every feed has acknowledged.
    pub(crate) fn load_feeds(&self) -> Result<()> {
        for (def, ack) in self.stored_feeds()? {
            self.feeds.add(slot(&def, &ack));
        }
        for store in self.stores() {
            for item in store.store.iter(&store.changes, ReadOptions::default())? {
                let (k, v) = item?;
                if let Some(id) = commit_id_of(&k) {
                    self.feeds.written(id, v.len() as u64);
                }
            }
        }
        self.trim()
    }

    /// Deletes the change log entries every feed still holding changes has acknowledged
    /// (every entry, with no feed), in every store.
    pub(crate) fn trim(&self) -> Result<()> {
        let through = self.feeds.trim_through().min(self.sequencer.visible());
        let from = self.feeds.trimmed_from();
        if through < from {
            return Ok(());
        }
        // A released feed is recorded as such before the changes it gave up are gone.
        for slot in self.feeds.slots().iter().filter(|f| f.released) {
            self.store_released(&slot.name)?;
        }
        for store in self.stores() {
            let upper = change_key(through.saturating_add(1));
            let lower = change_key(from);
            let options = ReadOptions::default()
                .lower_bound(&lower)
                .upper_bound(&upper);
            let mut batch = WriteBatch::new();
            for item in store.store.iter(&store.changes, options)? {
                let (k, _) = item?;
                batch.delete(&store.changes, &k)?;
                if batch.len() >= 4096 {
                    store
                        .store
                        .write(std::mem::take(&mut batch), WriteOptions::default())?;
                }
            }
            if !batch.is_empty() {
                store.store.write(batch, WriteOptions::default())?;
            }
        }
        self.feeds.trimmed(through);
        Ok(())
    }

    /// Persists `def` (marked released) after the registry released it.
    fn store_released(&self, name: &str) -> Result<()> {
        let Some((mut def, _)) = self
            .stored_feeds()?
            .into_iter()
            .find(|(d, _)| d.name == name)
        else {
            return Ok(());
        };
        if def.released {
            return Ok(());
        }
        def.released = true;
        let mut batch = WriteBatch::new();
        batch.put(&self.feed_defs, &key(DEF_PREFIX, name), &def.encode())?;
        self.main.store.write(batch, WriteOptions::synced())?;
        Ok(())
    }
}

fn slot(def: &FeedDef, ack: &FeedAck) -> FeedSlot {
    FeedSlot {
        id: def.id,
        name: def.name.clone(),
        tables: def
            .tables
            .iter()
            .map(|(id, _)| *id)
            .collect::<BTreeSet<_>>(),
        acked_id: ack.through(),
        options: FeedOptions::default()
            .max_retained_bytes(def.max_retained_bytes)
            .on_lag(if def.retain {
                OnLag::Retain
            } else {
                OnLag::Release
            }),
        released: def.released,
        lagging: def.released,
    }
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_FEED_NAME || name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "feed name {name:?}: 1 to {MAX_FEED_NAME} bytes, no control characters"
        )));
    }
    Ok(())
}

impl Db {
    /// Creates the durable feed `name` over `tables`, with the default [`FeedOptions`]: it
    /// delivers every change to a row of those tables committed after now
    /// ([`Db::feed`]). Fails with `Conflict` if a feed of that name exists, `NotFound` for a
    /// table that does not.
    pub fn create_feed<S: AsRef<str>>(&self, name: &str, tables: &[S]) -> Result<()> {
        self.create_feed_with(name, tables, FeedOptions::default())
    }

    /// [`Db::create_feed`] with `options`.
    pub fn create_feed_with<S: AsRef<str>>(
        &self,
        name: &str,
        tables: &[S],
        options: FeedOptions,
    ) -> Result<()> {
        check_name(name)?;
        if tables.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "feed {name:?} needs at least one table"
            )));
        }
        let _ddl = lock(&self.shared.ddl);
        let shared = &self.shared;
        if shared.feeds.slots().iter().any(|f| f.name == name) {
            return Err(Error::Conflict(format!("feed {name:?} exists")));
        }
        let mut covered: Vec<(u64, String)> = Vec::new();
        for table in tables {
            let t = shared.handle(table.as_ref())?;
            if !covered.iter().any(|(id, _)| *id == t.def.id) {
                covered.push((t.def.id, t.def.name.clone()));
            }
        }
        let store = &shared.main.store;
        let id = match store.get(&shared.feed_defs, NEXT_ID)? {
            Some(bytes) => {
                let mut r = Reader {
                    bytes: &bytes,
                    at: 0,
                };
                r.varint().map_err(|e| {
                    crate::table::catalog::entry::record_corrupt(FEEDS_CF, NEXT_ID, e)
                })?
            }
            None => 1,
        };
        // No row changes while the feed comes in: every commit before the start wrote
        // without it, every commit after sees it.
        let _all = shared.stripes.lock_all();
        let start = shared.sequencer.visible();
        let def = FeedDef {
            id,
            name: name.to_string(),
            tables: covered,
            start,
            max_retained_bytes: options.max_retained_bytes,
            retain: options.on_lag == OnLag::Retain,
            released: false,
        };
        let ack = FeedAck {
            feed: id,
            commit_id: start,
            index: u32::MAX,
            commit: start,
        };
        let mut next = Vec::new();
        put_varint(&mut next, id + 1);
        let mut batch = WriteBatch::new();
        batch.put(&shared.feed_defs, &key(DEF_PREFIX, name), &def.encode())?;
        batch.put(&shared.feed_defs, &key(ACK_PREFIX, name), &ack.encode())?;
        batch.put(&shared.feed_defs, NEXT_ID, &next)?;
        store.write(batch, WriteOptions::synced())?;
        shared.feeds.add(slot(&def, &ack));
        Ok(())
    }

    /// Drops feed `name`: its position is forgotten and the changes only it held are
    /// trimmed. Fails with `NotFound` if there is no such feed.
    pub fn drop_feed(&self, name: &str) -> Result<()> {
        let _ddl = lock(&self.shared.ddl);
        let shared = &self.shared;
        let Some(id) = shared
            .feeds
            .slots()
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.id)
        else {
            return Err(Error::NotFound(format!("feed {name:?}")));
        };
        let mut batch = WriteBatch::new();
        batch.delete(&shared.feed_defs, &key(DEF_PREFIX, name))?;
        batch.delete(&shared.feed_defs, &key(ACK_PREFIX, name))?;
        shared.main.store.write(batch, WriteOptions::synced())?;
        shared.feeds.remove(id);
        shared.trim()
    }

    /// Every feed: its tables, acknowledged commit, retained bytes, lag and state.
    pub fn feeds(&self) -> Result<Vec<FeedInfo>> {
        let shared = &self.shared;
        let slots = shared.feeds.slots();
        let now = shared.sequencer.visible();
        let mut out = Vec::new();
        for (def, ack) in shared.stored_feeds()? {
            let Some(slot) = slots.iter().find(|s| s.id == def.id) else {
                continue;
            };
            let state = match (slot.released, slot.lagging) {
                (true, _) => FeedState::Released,
                (false, true) => FeedState::Lagging,
                _ => FeedState::Active,
            };
            if slot.released && !def.released {
                shared.store_released(&def.name)?;
            }
            out.push(FeedInfo {
                name: def.name,
                tables: def.tables.into_iter().map(|(_, n)| n).collect(),
                acked_commit: ack.commit,
                retained_bytes: shared.feeds.behind(def.id),
                lag: now.saturating_sub(ack.commit),
                state,
            });
        }
        Ok(out)
    }
}
