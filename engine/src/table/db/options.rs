//! Options for opening a database: the table layer's own, and the store's for every shard.

use strata_lsm::Options as StoreOptions;

use crate::error::{Error, Result};

/// Options for [`crate::Db::open`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The options of every shard store (file system, memtable and cache sizes, compaction,
    /// recovery mode, …), used as given. What the table layer plugs into each store (its
    /// sequencer, sketch collector, record upgrade, replay cuts and flush barrier) are the
    /// store's [`Hooks`](crate::lsm::Hooks), not options.
    pub store: StoreOptions,
    /// Where shard store `n` (from 1) lives is `shard_dirs[n - 1]`
    /// when given, else the database directory's `shard-<n>` (default: none given). Shard 0 is
    /// the database directory. Give the same list at every open.
    pub shard_dirs: Vec<std::path::PathBuf>,
    /// Once this many outbox entries wait for the indexer, writes to tables with
    /// async indexes wait until it is below again (default 100 000; at least 1), as a table
    /// whose global index cannot keep up is throttled. `Db::index_lag` counts the waits.
    pub max_pending_index_entries: u64,
    /// `analyze` runs by itself, on a background thread, once the rows changed
    /// since a table's last analysis exceed `auto_analyze_scale` × its analysed row count +
    /// `auto_analyze_rows` (default on, 0.1 and 50: PostgreSQL's autovacuum analyze defaults).
    /// The count of changes is kept in memory, so it starts again at open. The analyzer pauses
    /// four times a run's duration before the next, and close abandons a run under way.
    pub auto_analyze: bool,
    /// See [`Options::auto_analyze`] (default 0.1; finite, at least 0).
    pub auto_analyze_scale: f64,
    /// See [`Options::auto_analyze`] (default 50).
    pub auto_analyze_rows: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            store: StoreOptions::default(),
            shard_dirs: Vec::new(),
            max_pending_index_entries: 100_000,
            auto_analyze: true,
            auto_analyze_scale: 0.1,
            auto_analyze_rows: 50,
        }
    }
}

impl Options {
    /// Checks the table layer's options (the store checks its own at open).
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_pending_index_entries == 0 {
            return Err(Error::InvalidArgument(
                "max_pending_index_entries must be at least 1".into(),
            ));
        }
        if !(self.auto_analyze_scale.is_finite() && self.auto_analyze_scale >= 0.0) {
            return Err(Error::InvalidArgument(format!(
                "auto_analyze_scale must be a finite number of at least 0, got {}",
                self.auto_analyze_scale
            )));
        }
        Ok(())
    }
}

impl From<StoreOptions> for Options {
    /// The table layer's defaults over these store options.
    fn from(store: StoreOptions) -> Self {
        Options {
            store,
            ..Options::default()
        }
    }
}
