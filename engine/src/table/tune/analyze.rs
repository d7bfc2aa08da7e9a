//! `analyze`: a full pass over a table's rows through the planner's sketches.
//!
//! 1. Choose the columns: the primary-key fields, every indexed and included field, and the
//!    fields of the first rows (so predicates on unindexed fields are estimated too), at most
//!    [`MAX_ANALYZED_FIELDS`]; and the composite prefixes of the key and of every index.
//! 2. Feed every row of every shard (at one snapshot per shard) to a `TableStatsBuilder` (distinct counts, most common
//!    values, histograms, null fractions, widths).
//! 3. Store the result in the catalog; the planner uses it from then on. (Unless an analysis
//!    that began later, so read newer rows, stored its own first: `stats/order.rs`.)
//!
//! Auto-analyze: writes count the rows they change (`note_changes`); past the threshold a
//! table is queued for the analyzer thread (`run_analyzer`), which pauses between runs so it
//! takes at most a fifth of a core; `Db::wait_for_analyses` waits for the queue to empty.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::{Receiver, TryRecvError, select};

use strata_planner::{TableStats, TableStatsBuilder};

use crate::error::{Error, Result};
use crate::lsm::{ReadOptions, Snapshot};
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::row_reader::RowReader;
use crate::table::db::{Db, Shared, Table};
use crate::table::stats::correlation::{ORDER_SAMPLE_ROWS, OrderSample, combined};
use crate::table::stats::sketch::{MAX_ANALYZED_FIELDS, statistics_shape};

/// Rows between two looks at an auto-analysis's stop flag.
const STOP_CHECK_ROWS: usize = 4096;

/// Rows whose fields are added to the analysed columns.
const FIELD_DISCOVERY_ROWS: usize = 100;

/// After an auto-analyze run, the analyzer waits this many times the run's duration before the
/// next: at most one part in `ANALYZE_PAUSE + 1` of one core goes to auto-analyze.
/// TUNING: the share PostgreSQL's cost-based autovacuum delay aims at in spirit (it keeps
/// background maintenance from competing with the foreground); 4 measured here: a 1,000,000-row
/// import spent half its CPU time in back-to-back analyses without it (`docs/benchmarks.md`).
pub(crate) const ANALYZE_PAUSE: u32 = 4;

impl Db {
    /// Collects `table`'s statistics, stores them, and returns them. Should an analysis that
    /// began after this one (the analyzer thread's, which read newer rows) have stored its
    /// statistics first, those are kept and returned. (It also runs by itself after enough
    /// changes: `Options::auto_analyze`.)
    pub fn analyze(&self, table: &str) -> Result<TableStats> {
        self.shared.analyze_table(table, None)
    }
}

impl Shared {
    /// The analyzer thread: analyses the tables queued by `note_changes` until the queue
    /// closes. After each run it pauses [`ANALYZE_PAUSE`] times as long as the run took, so
    /// auto-analyze spends at most a fifth of one core: a table growing fast (an import) would
    /// otherwise be read whole again after every tenth of growth, about eleven times its size
    /// in all, on the cores the writer needs. The tables due meanwhile wait their turn.
    pub(crate) fn run_analyzer(&self, queued: &Receiver<String>) {
        let mut due: VecDeque<String> = VecDeque::new();
        let mut resume = Instant::now();
        loop {
            let pause = resume.saturating_duration_since(Instant::now());
            // A table queued (or the close) while idle or pausing; the pause's end as a timeout.
            let queued_table = if due.is_empty() {
                select! {
                    recv(queued) -> table => Some(table),
                    recv(self.analyze_stop) -> _ => return,
                }
            } else if !pause.is_zero() {
                select! {
                    recv(queued) -> table => Some(table),
                    recv(self.analyze_stop) -> _ => return,
                    default(pause) => None,
                }
            } else {
                None
            };
            match queued_table {
                Some(Ok(table)) => {
                    due.push_back(table);
                    continue;
                }
                Some(Err(_)) => return,
                None => {}
            }
            let Some(table) = due.pop_front() else {
                continue;
            };
            let started = Instant::now();
            match self.analyze_table(&table, Some(&self.analyze_stop)) {
                Ok(stats) => tracing::debug!(%table, rows = stats.row_count, "auto-analyze"),
                // Dropped meanwhile, or the database is closing.
                Err(e) if e.is_not_found() || e.is_closed() => {}
                Err(error) => tracing::warn!(%table, %error, "auto-analyze failed"),
            }
            self.analysis_finished(&table);
            resume = Instant::now() + started.elapsed() * ANALYZE_PAUSE;
        }
    }

    /// Analyses `table`; with `stop`, gives up with [`Error::Closed`] once it is disconnected
    /// (checked every [`STOP_CHECK_ROWS`] rows). Returns the statistics stored: its own, or,
    /// when an analysis that began after it (so read newer rows) stored its own first, those
    /// (`AnalysisOrder`).
    pub(crate) fn analyze_table(
        &self,
        table: &str,
        stop: Option<&Receiver<()>>,
    ) -> Result<TableStats> {
        let order = Arc::clone(&self.handle(table)?.analyses);
        // The definition is read with the ticket: an analysis with a later ticket also reads a
        // definition at least as new (one republished in between, a new index's prefixes).
        let (ticket, started) = order.start(|| {
            let t = self.handle(table)?;
            if !Arc::ptr_eq(&t.analyses, &order) {
                return Err(Error::NotFound(format!(
                    "table {table:?} (dropped while analysed)"
                )));
            }
            // Changes from here on count towards the next analysis.
            t.changed.store(0, Ordering::Relaxed);
            let snapshots: Vec<Snapshot> =
                t.shards.iter().map(|s| s.store.store.snapshot()).collect();
            Ok((t, snapshots))
        });
        let (t, snapshots) = started?;
        let stats = self.collect_stats(&t, &snapshots, stop)?;
        self.put_stats(table, t.def.id, stats, ticket)
    }

    /// The statistics of `t`'s rows at `snapshots` (one per shard); with `stop`, gives up with
    /// [`Error::Closed`] once it is disconnected.
    fn collect_stats(
        &self,
        t: &Table,
        snapshots: &[Snapshot],
        stop: Option<&Receiver<()>>,
    ) -> Result<TableStats> {
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
            let record = t
                .layouts
                .decode(&v)
                .map_err(|e| record_corrupt(first.fact.name(), &k, e))?;
            for (f, _) in record.iter() {
                add(&f.to_owned(), &mut columns);
            }
        }
        let mut builder =
            TableStatsBuilder::new(&columns, &prefixes).with_targets(&t.def.statistics.targets);
        // Each row's analysed fields are read where they lie, not built into a record.
        let analysed: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut reader = RowReader::new(&analysed, Some(Vec::new())).with_layouts(&t.layouts);
        // The leading field of each index: how its order follows the key's, per shard.
        let mut leading: Vec<&str> = Vec::new();
        for index in &t.def.indexes {
            if let Some(f) = index.fields.first()
                && !leading.contains(&f.as_str())
                && analysed.contains(&f.as_str())
            {
                leading.push(f);
            }
        }
        let mut orders: Vec<Vec<(f64, u64)>> = vec![Vec::new(); leading.len()];
        for (s, shard) in t.shards.iter().enumerate() {
            let mut samples: Vec<OrderSample> = (0..leading.len())
                .map(|i| OrderSample::new(ORDER_SAMPLE_ROWS, (s * 64 + i) as u64))
                .collect();
            for (n, kv) in shard.store.store.iter(&shard.fact, read(s))?.enumerate() {
                if n % STOP_CHECK_ROWS == 0
                    && stop.is_some_and(|s| s.try_recv() == Err(TryRecvError::Disconnected))
                {
                    return Err(Error::Closed);
                }
                let (k, v) = kv?;
                reader
                    .test(&v)
                    .map_err(|e| record_corrupt(shard.fact.name(), &k, e))?;
                let reader = &reader;
                builder.add_row(|f| Some(reader.value_of(f)), k.len() + v.len());
                for (sample, f) in samples.iter_mut().zip(&leading) {
                    sample.add(n as u64, reader.value_of(f));
                }
            }
            for (sample, order) in samples.into_iter().zip(&mut orders) {
                let seen = sample.seen();
                if let Some(r) = sample.correlation() {
                    order.push((r, seen));
                }
            }
        }
        let mut stats = builder.finish();
        for (f, order) in leading.iter().zip(&orders) {
            if let (Some(column), Some(r)) = (stats.columns.get_mut(*f), combined(order)) {
                column.correlation = r;
            }
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use crate::record;

    use super::*;

    /// An analysis that read older rows and finishes after a newer one (the analyzer
    /// thread's, queued mid-load, against a caller's `analyze` after the load) leaves the
    /// newer statistics in place: before, the last to finish was stored, and a query planned
    /// after `analyze` could be planned on the older rows' statistics.
    #[test]
    fn an_analysis_of_older_rows_finishing_last_does_not_replace_a_newer_one() -> Result<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let options = crate::Options {
            auto_analyze: false,
            ..crate::Options::default()
        };
        let db = Db::open(dir.path(), options)?;
        db.create_table("t", ["id"], crate::TableOptions::default())?;
        for id in 0..100i64 {
            db.insert("t", record! { "id" => id })?;
        }
        // The older analysis takes its ticket and snapshots here, then is overtaken.
        let t = db.shared.handle("t")?;
        let (ticket, snapshots): (u64, Vec<Snapshot>) = t
            .analyses
            .start(|| t.shards.iter().map(|s| s.store.store.snapshot()).collect());
        for id in 100..250i64 {
            db.insert("t", record! { "id" => id })?;
        }
        assert_eq!(db.analyze("t")?.row_count, 250);
        let older = db.shared.collect_stats(&t, &snapshots, None)?;
        assert_eq!(older.row_count, 100);
        let kept = db.shared.put_stats("t", t.def.id, older, ticket)?;
        assert_eq!(kept.row_count, 250, "the newer statistics are returned");
        let now = db.shared.handle("t")?;
        assert_eq!(
            now.stats.as_ref().map(|s| s.row_count),
            Some(250),
            "the older rows' statistics are not stored"
        );
        Ok(())
    }
}
