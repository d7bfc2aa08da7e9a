//! Counting each table's changed rows and queueing a table for the analyzer thread (in the
//! `tune` room) once they pass the auto-analyze threshold: the write paths' side of
//! auto-analyze, and [`Db::wait_for_analyses`].

use std::sync::atomic::Ordering;

use crate::table::db::{Db, Shared, Table, lock};

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
        let sent = self.analyze_queue.send(table.to_owned()).is_ok();
        if !sent {
            // The database is closing: nothing will run it.
            self.analysis_finished(table);
        }
    }

    /// Takes `table` off the analyzer's list and wakes [`Db::wait_for_analyses`].
    pub(crate) fn analysis_finished(&self, table: &str) {
        lock(&self.analyze_queued).remove(table);
        self.analyze_done.notify_all();
    }

    /// Changed rows after which a table analysed at `rows` rows is due for analysis again.
    pub(crate) fn analyze_threshold(&self, rows: u64) -> f64 {
        self.options.auto_analyze_scale * rows as f64 + self.options.auto_analyze_rows as f64
    }
}
