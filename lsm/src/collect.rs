//! Property collectors: the owner of a store learns what flushes and compactions write,
//! and keeps a summary of it in each table's properties block (RocksDB's
//! `TablePropertiesCollector`; MyRocks keeps its index statistics this way).
//!
//! 1. [`Hooks::property_collector`](crate::Hooks::property_collector) names a factory;
//!    for each table a flush or compaction writes, the factory is asked for a collector for
//!    the table's column family (`None`: nothing to collect for that family).
//! 2. The collector sees, in key order, the newest version the table keeps of each user key:
//!    a value or a tombstone. Older versions kept for snapshots are not shown, so a summary
//!    counts each key once per table.
//! 3. What it returns from `finish` is stored as engine-defined properties of the table, read
//!    back with [`Store::collected`](crate::Store::collected).

use strata_sstable::ValueKind;

/// Sees the entries of one table being written.
pub trait PropertyCollector: Send {
    /// One user key's newest version in the table: `value` is `None` for a tombstone.
    fn add(&mut self, key: &[u8], value: Option<&[u8]>);
    /// The properties to store, as `(name, bytes)`. Names must not start with `strata.`
    /// (the table format's own); such names are dropped.
    fn finish(self: Box<Self>) -> Vec<(String, Vec<u8>)>;
}

/// Rewrites values into their owner's newer format as compaction copies them: how the owner
/// of a store (the table layer, for its records) migrates what older versions wrote without a
/// pass of its own. Compaction asks for every live value it writes; older versions kept for
/// snapshots are rewritten alike, so an upgrade must read the same to the owner as the value
/// it replaces.
pub trait ValueUpgrade: Send + Sync + std::fmt::Debug {
    /// `value`, of column family `cf` (its name), in the newer format; `None` to keep it as it
    /// is (already current, not the owner's, or not understood: a value that does not decode
    /// is copied unchanged, never lost).
    fn upgrade(&self, cf: &str, value: &[u8]) -> Option<Vec<u8>>;
}

/// Makes a collector per table written.
pub trait CollectorFactory: Send + Sync + std::fmt::Debug {
    /// A collector for a table of column family `cf` (its name), or `None`.
    fn collector(&self, cf: &str) -> Option<Box<dyn PropertyCollector>>;
}

/// Feeds a table builder's entries to a collector, newest version of each key only.
pub(crate) struct Collecting {
    collector: Option<Box<dyn PropertyCollector>>,
    last_key: Vec<u8>,
    any: bool,
}

impl Collecting {
    pub(crate) fn new(collector: Option<Box<dyn PropertyCollector>>) -> Self {
        Collecting {
            collector,
            last_key: Vec::new(),
            any: false,
        }
    }

    /// An entry the table keeps; entries arrive in internal-key order (a key's versions
    /// newest first).
    pub(crate) fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) {
        let Some(collector) = self.collector.as_mut() else {
            return;
        };
        if self.any && self.last_key == key {
            return;
        }
        self.any = true;
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        let value = (kind != ValueKind::Delete).then_some(value);
        collector.add(key, value);
    }

    /// The collected properties, to be added to the table.
    pub(crate) fn finish(self) -> Vec<(String, Vec<u8>)> {
        match self.collector {
            None => Vec::new(),
            Some(c) => c
                .finish()
                .into_iter()
                .filter(|(name, _)| !name.starts_with("strata."))
                .collect(),
        }
    }
}
