//! `analyze`: a full pass over a table's rows through the planner's sketches.
//!
//! 1. Choose the columns: the primary-key fields, every indexed and included field, and the
//!    fields of the first rows (so predicates on unindexed fields are estimated too), at most
//!    [`MAX_ANALYZED_FIELDS`]; and the composite prefixes of the key and of every index.
//! 2. Feed every row of every shard (at one snapshot per shard) to a `TableStatsBuilder` (distinct counts, most common
//!    values, histograms, null fractions, widths).
//! 3. Store the result in the catalog; the planner uses it from then on.

use std::sync::atomic::{AtomicBool, Ordering};

use strata_planner::{TableStats, TableStatsBuilder};

use crate::error::{Error, Result};
use crate::lsm::ReadOptions;
use crate::table::db::{Db, Shared};
use crate::table::entry::record_corrupt;
use crate::table::record::Record;
use crate::table::sketch::statistics_shape;

/// Most fields `analyze` keeps statistics for.
pub const MAX_ANALYZED_FIELDS: usize = 64;

/// Rows between two looks at an auto-analysis's stop flag.
const STOP_CHECK_ROWS: usize = 4096;

/// Rows whose fields are added to the analysed columns.
const FIELD_DISCOVERY_ROWS: usize = 100;

impl Db {
    /// Collects `table`'s statistics, stores them, and returns them. (It also runs by itself
    /// after enough changes: `Options::auto_analyze`.)
    pub fn analyze(&self, table: &str) -> Result<TableStats> {
        self.analyze_table(table, None)
    }
}

impl Shared {
    /// Analyses `table`; with `stop`, gives up with [`Error::Closed`] once it is set (checked
    /// every [`STOP_CHECK_ROWS`] rows).
    pub(crate) fn analyze_table(
        &self,
        table: &str,
        stop: Option<&AtomicBool>,
    ) -> Result<TableStats> {
        let t = self.handle(table)?;
        // Changes from here on count towards the next analysis.
        t.changed.store(0, Ordering::Relaxed);
        let snapshots: Vec<_> = t.shards.iter().map(|s| s.store.store.snapshot()).collect();
        let (mut columns, prefixes) = statistics_shape(&t.def);
        let add = |f: &String, columns: &mut Vec<String>| {
            if !columns.contains(f) && columns.len() < MAX_ANALYZED_FIELDS {
                columns.push(f.clone());
            }
        };
        let read = |s: usize| ReadOptions::default().snapshot(&snapshots[s]);
        let first = &t.shards[0];
        let discovery = first.store.store.iter(&first.fact, read(0))?;
        for kv in discovery.take(FIELD_DISCOVERY_ROWS) {
            let (k, v) = kv?;
            let record =
                Record::decode(&v).map_err(|e| record_corrupt(first.fact.name(), &k, e))?;
            for (f, _) in record.iter() {
                add(&f.to_owned(), &mut columns);
            }
        }
        let mut builder = TableStatsBuilder::new(&columns, &prefixes);
        for (s, shard) in t.shards.iter().enumerate() {
            for (n, kv) in shard.store.store.iter(&shard.fact, read(s))?.enumerate() {
                if n % STOP_CHECK_ROWS == 0 && stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return Err(Error::Closed);
                }
                let (k, v) = kv?;
                let record =
                    Record::decode(&v).map_err(|e| record_corrupt(shard.fact.name(), &k, e))?;
                builder.add_row(|f| record.get(f), k.len() + v.len());
            }
        }
        let stats = builder.finish();
        self.put_stats(table, t.def.id, stats.clone())?;
        Ok(stats)
    }
}
