//! The store's extension point for a layer built on it: what the table layer (`strata::Db`)
//! plugs into each shard store, and what any other layer may plug in the same way.
//!
//! [`Options`](crate::Options) say how a store runs; [`Hooks`] say what a layer above takes
//! part in: the numbering of writes, what each table file records, how values are rewritten
//! as compaction copies them, which logged writes a replay drops, and what must happen
//! before a flush. A store opened with [`Store::open`](crate::Store::open) has none;
//! [`Store::open_with`](crate::Store::open_with) takes them. They are kept apart from the
//! options so that a database's options (`strata::Options::store`) hold nothing its open
//! would overwrite.

use std::sync::Arc;

use crate::commit::Sequencer;
use crate::error::Result;

/// What a layer above plugs into a store at open ([`Store::open_with`](crate::Store::open_with)).
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    /// A sequencer shared with other stores ([`Sequencer::shared`]), so their seqnos are one
    /// commit order and one snapshot number covers them all (the table layer's shard
    /// stores). `None` (the default): the store numbers its own writes.
    pub sequencer: Option<Arc<Sequencer>>,
    /// Summarises what each flush and compaction writes into the table's properties
    /// ([`crate::collect`]; default none). The table layer's keeps each fact table file's
    /// statistics sketch.
    pub property_collector: Option<Arc<dyn crate::collect::CollectorFactory>>,
    /// Rewrites values into a newer format as compaction copies them
    /// ([`crate::collect::ValueUpgrade`]; default none). The table layer's rewrites records
    /// of an older version.
    pub value_upgrade: Option<Arc<dyn crate::collect::ValueUpgrade>>,
    /// Seqno ranges (inclusive) whose batches the log replay at open drops: the table layer's
    /// cut after a commit across stores that did not reach every store
    /// ([`crate::Store::logged_transactions`]). Default none.
    pub drop_seqnos: Arc<Vec<(u64, u64)>>,
    /// Called before every flush, with a seqno at or above every entry of the memtable about
    /// to be written to a table (after which its log may go): the table layer makes every
    /// commit up to it durable in every store first, so no table ever holds what a
    /// recovery might have to cut. Default none.
    pub flush_barrier: Option<Arc<dyn FlushBarrier>>,
    /// Families the layer above never reads by key, only by iterating (the table layer's
    /// change log): their memtables keep no point index and no key filter, which a write
    /// would otherwise update for every new key on cold cache lines. Reads by key still
    /// work, by searching. Default none.
    pub scan_only_families: Arc<Vec<String>>,
}

/// What a store asks of the table layer before each flush.
pub trait FlushBarrier: Send + Sync + std::fmt::Debug {
    /// Makes every commit whose range ends at or below `through` durable in every store that
    /// shares the store's sequencer. An error fails the flush, and with it the store (as any
    /// failed flush does: writes are refused until it is reopened).
    fn before_flush(&self, through: u64) -> Result<()>;
}
