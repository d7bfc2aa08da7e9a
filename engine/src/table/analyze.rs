//! `analyze`: a full pass over a table's rows through the planner's sketches.
//!
//! 1. Choose the columns: the primary-key fields, every indexed and included field, and the
//!    fields of the first rows (so predicates on unindexed fields are estimated too), at most
//!    [`MAX_ANALYZED_FIELDS`]; and the composite prefixes of the key and of every index.
//! 2. Feed every row of every shard (at one snapshot per shard) to a `TableStatsBuilder` (distinct counts, most common
//!    values, histograms, null fractions, widths).
//! 3. Store the result in the catalog; the planner uses it from then on.
//!
//! Auto-analyze: writes count the rows they change (`note_changes`); past the threshold a
//! table is queued for the analyzer thread (`run_analyzer`), which pauses between runs so it
//! takes at most a fifth of a core; `Db::wait_for_analyses` waits for the queue to empty.

use std::sync::atomic::{AtomicBool, Ordering};

use strata_planner::{TableStats, TableStatsBuilder};

use crate::error::{Error, Result};
use crate::lsm::ReadOptions;
use crate::table::correlation::{ORDER_SAMPLE_ROWS, OrderSample, combined};
use crate::table::db::{Db, Shared, Table, lock};
use crate::table::entry::record_corrupt;
use crate::table::row_reader::RowReader;
use crate::table::sketch::statistics_shape;

/// Most fields `analyze` keeps statistics for.
pub const MAX_ANALYZED_FIELDS: usize = 64;

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
    /// Waits until every analysis that auto-analyze has queued so far has run. A write that
    /// passes the auto-analyze threshold queues its table before it returns, so after this a
    /// caller sees the statistics of every analysis its writes asked for.
    pub fn wait_for_analyses(&self) {
        let mut queued = lock(&self.shared.analyze_queued);
        while !queued.is_empty() {
            queued = self
                .shared
                .analyze_done
                .wait(queued)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Collects `table`'s statistics, stores them, and returns them. (It also runs by itself
    /// after enough changes: `Options::auto_analyze`.)
    pub fn analyze(&self, table: &str) -> Result<TableStats> {
        self.shared.analyze_table(table, None)
    }
}

impl Shared {
    /// Counts `rows` changed rows of `t` and queues it for the analyzer once they pass the
    /// auto-analyze threshold.
    pub(crate) fn note_changes(&self, t: &Table, rows: u64) {
        if rows == 0 {
            return;
        }
        self.count_changes(t, rows);
        self.analyze_if_due(t);
    }

    /// Counts `rows` changed rows of `t` without queueing it: a bulk load counts each run as
    /// it lands (the planner asks whether the last analysis is still fresh) and queues the
    /// table once, when it ends, rather than have it read whole while it grows.
    pub(crate) fn count_changes(&self, t: &Table, rows: u64) {
        t.changed.fetch_add(rows, Ordering::Relaxed);
    }

    /// Queues `t` for the analyzer if its changes have passed the auto-analyze threshold.
    pub(crate) fn analyze_if_due(&self, t: &Table) {
        if !self.options.auto_analyze {
            return;
        }
        let changed = t.changed.load(Ordering::Relaxed);
        let base = t.stats.as_ref().map_or(0, |s| s.row_count);
        if changed == 0 || (changed as f64) < self.analyze_threshold(base) {
            return;
        }
        self.queue_analyze(&t.def.name);
    }

    /// Queues `table` for the analyzer thread, unless it is queued already.
    pub(crate) fn queue_analyze(&self, table: &str) {
        if !lock(&self.analyze_queued).insert(table.to_owned()) {
            return; // queued already
        }
        let sent = lock(&self.analyze_queue)
            .as_ref()
            .is_some_and(|queue| queue.send(table.to_owned()).is_ok());
        if !sent {
            // The database is closing: nothing will run it.
            self.analysis_finished(table);
        }
    }

    /// Takes `table` off the analyzer's list and wakes [`Db::wait_for_analyses`].
    fn analysis_finished(&self, table: &str) {
        lock(&self.analyze_queued).remove(table);
        self.analyze_done.notify_all();
    }

    /// Changed rows after which a table analysed at `rows` rows is due for analysis again.
    pub(crate) fn analyze_threshold(&self, rows: u64) -> f64 {
        self.options.auto_analyze_scale * rows as f64 + self.options.auto_analyze_rows as f64
    }

    /// The analyzer thread: analyses the tables queued by `note_changes` until the queue
    /// closes. After each run it pauses [`ANALYZE_PAUSE`] times as long as the run took, so
    /// auto-analyze spends at most a fifth of one core: a table growing fast (an import) would
    /// otherwise be read whole again after every tenth of growth, about eleven times its size
    /// in all, on the cores the writer needs. The tables due meanwhile wait their turn.
    pub(crate) fn run_analyzer(&self, queued: &std::sync::mpsc::Receiver<String>) {
        use std::sync::mpsc::RecvTimeoutError;
        let mut due: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let mut resume = std::time::Instant::now();
        loop {
            if due.is_empty() {
                match queued.recv() {
                    Ok(table) => due.push_back(table),
                    Err(_) => return,
                }
            }
            while let Some(wait) = resume
                .checked_duration_since(std::time::Instant::now())
                .filter(|d| !d.is_zero())
            {
                match queued.recv_timeout(wait) {
                    Ok(table) => due.push_back(table),
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            let Some(table) = due.pop_front() else {
                continue;
            };
            let started = std::time::Instant::now();
            match self.analyze_table(&table, Some(&self.analyze_stop)) {
                Ok(stats) => tracing::debug!(%table, rows = stats.row_count, "auto-analyze"),
                // Dropped meanwhile, or the database is closing.
                Err(e) if e.is_not_found() || e.is_closed() => {}
                Err(error) => tracing::warn!(%table, %error, "auto-analyze failed"),
            }
            self.analysis_finished(&table);
            resume = std::time::Instant::now() + started.elapsed() * ANALYZE_PAUSE;
        }
    }

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
            let record = t
                .layouts
                .decode(&v)
                .map_err(|e| record_corrupt(first.fact.name(), &k, e))?;
            for (f, _) in record.iter() {
                add(&f.to_owned(), &mut columns);
            }
        }
        let mut builder = TableStatsBuilder::new(&columns, &prefixes);
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
                if n % STOP_CHECK_ROWS == 0 && stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
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
        self.put_stats(table, t.def.id, stats.clone())?;
        Ok(stats)
    }
}
