//! The cost model, in microseconds on the machine the constants were measured on.
//!
//! The formulas, for a table of `N` rows of `B` bytes on `S` shards, a result of `R` rows,
//! and `P` predicates:
//!
//! ```text
//! full scan      = S · seek + N · (scan_row + B · scan_byte + P · filter)
//! pk lookup      = K · fetch                                     (K keys from = / IN)
//! pk range       = seeks · seek + n · (scan_row + B · scan_byte + P · filter)
//! index          = seeks · seek + E · (index_entry + W · scan_byte)     (E entries of W bytes)
//!                  + E · P' · filter                                    (covering: no fetch)
//!                  + min(E · (fetch + B · scan_byte),                   (otherwise)
//!                        E · (sorted_fetch + B · scan_byte) + sort(E))
//! sort(n)        = sort_row · n · log2(n)
//! every plan     + R · row                                       (decoding what it returns)
//! ```
//!
//! `scan_row` is what a row costs when the filters reject it; `fetch` finds and reads a
//! record without decoding it. The decoding of returned rows is the same whichever plan is
//! chosen, so keeping it apart matters for calibration: a scan measured by returning every row
//! would charge the decoding to all `N` rows, not to `R`.
//!
//! A plan that provides a descending `ORDER BY` reads its rows or entries backwards, which
//! costs `backward_read` times the forward read (the fetches cost the same either way).
//!
//! `LIMIT L` scales the row-dependent part of a plan that can stop early (one that produces
//! rows in the requested order, or no order was asked, and does not sort its fetches) by
//! `min(1, L / R)`: with the matching rows spread evenly, the scan meets its `L`-th match
//! after `N · L / R` rows (PostgreSQL scales a plan's run cost the same way in
//! `costsize.c`). A plan that must sort reads everything and pays `sort(R)`.

use serde::{Deserialize, Serialize};

/// Cost constants. The engine ships these defaults and may calibrate them on its machine.
///
/// TUNING (all of them): the table layer's own costs, from `Db::calibrate` on the
/// development machine (two runs of the regret harness, `docs/benchmarks.md`, rounded
/// between them). Earlier defaults came from the raw key-value comparison benchmark, whose
/// scan reads 0.1 µs a row; a table scan also decodes every record, about 0.7 µs, and with
/// the old constants a `LIMIT` query chose a scan 7.5× slower than its index.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Positioning an iterator: one seek into a table's levels, with the query's set-up.
    /// TUNING: 10.8 and 12.2 µs measured (one-entry covering lookups less the entry).
    pub seek_us: f64,
    /// Reading one row in key order, decoding it included, apart from its bytes.
    /// TUNING: 0.57 and 0.92 µs measured (full scans of 40- and 440-byte rows).
    pub scan_row_us: f64,
    /// Reading one byte in key order.
    /// TUNING: 0.0005 and 0 µs measured (the width barely shows next to the decoding); the
    /// raw store's 0.0003 is kept, so width still counts.
    pub scan_byte_us: f64,
    /// Reading one index entry, apart from its bytes.
    /// TUNING: 0.70 and 1.21 µs measured (a covering read of a whole index).
    pub index_entry_us: f64,
    /// Fetching one record by primary key, in no particular order.
    /// TUNING: 2.22 and 1.78 µs measured (point reads in scattered key order).
    pub fetch_us: f64,
    /// Fetching one record when the keys are sorted first: consecutive fetches share blocks.
    /// TUNING: 1.64 and 1.11 µs measured (the same reads in key order).
    pub sorted_fetch_us: f64,
    /// Decoding one returned row into the record the caller gets, whatever the plan (a scan's
    /// `scan_row_us` covers a row its filters reject, which is never decoded whole).
    /// Statistics stored before it existed read it as 0: their `scan_row_us` and
    /// `fetch_us` were measured with the decoding included.
    #[serde(default)]
    pub row_us: f64,
    /// Evaluating one predicate on one row.
    /// TUNING: 0.11 and 0.18 µs measured (a scan with four predicates less a plain one).
    pub filter_us: f64,
    /// Sorting, per row per comparison level (`n · log2 n` comparisons).
    /// TUNING: 0.18 and 0.16 µs measured (a scan sorted on another field less a plain one).
    pub sort_row_us: f64,
    /// How much a row or entry read backwards costs, as a multiple of reading it forwards:
    /// a reverse cursor steps back past every version of a key and re-seeks its sources.
    /// TUNING: 1.40 measured through `Db::query` (1,000,000 rows of about 30 bytes, one
    /// compacted run, `ORDER BY k` forward 311 ms against `ORDER BY k DESC` 435 ms, medians
    /// of five alternating rounds); `calibrate` keeps the default. Statistics stored
    /// before it existed read as the default.
    #[serde(default = "default_backward_read")]
    pub backward_read: f64,
}

fn default_backward_read() -> f64 {
    1.4
}

impl Default for CostModel {
    fn default() -> Self {
        // The medians of three `calibrate` runs on the regret harness's machine, 2026-11-24
        // (`docs/benchmarks.md`): the engine's scans, entries and fetches had become two to
        // eight times cheaper than the constants measured on 2026-11-21, fetches least, so the
        // old ones made a fetch look cheap beside a scan.
        CostModel {
            seek_us: 4.35,
            scan_row_us: 0.038,
            scan_byte_us: 0.000125,
            index_entry_us: 0.049,
            fetch_us: 0.74,
            sorted_fetch_us: 0.59,
            row_us: 0.095,
            filter_us: 0.006,
            sort_row_us: 0.044,
            backward_read: default_backward_read(),
        }
    }
}

impl CostModel {
    /// `sort(n) = sort_row · n · log2(n)`.
    pub fn sort(&self, rows: f64) -> f64 {
        if rows <= 1.0 {
            return 0.0;
        }
        self.sort_row_us * rows * rows.log2()
    }

    /// Sorting `rows` for the first `limit` of them (`None`: all): [`CostModel::sort`] when
    /// the limit keeps them all, else a selection of the first `limit` (about two
    /// comparisons a row) and a sort of those, `sort_row · (2n + k · log2(k))`, as the
    /// executor does.
    pub fn top(&self, rows: f64, limit: Option<u64>) -> f64 {
        match limit.map(|l| l as f64) {
            Some(k) if k < rows => {
                let sorted = if k > 1.0 { k * k.log2() } else { 0.0 };
                self.sort_row_us * (2.0 * rows + sorted)
            }
            _ => self.sort(rows),
        }
    }

    /// Whether every constant is finite and non-negative (what `choose` requires).
    pub fn is_valid(&self) -> bool {
        [
            self.seek_us,
            self.scan_row_us,
            self.scan_byte_us,
            self.index_entry_us,
            self.fetch_us,
            self.sorted_fetch_us,
            self.row_us,
            self.filter_us,
            self.sort_row_us,
            self.backward_read,
        ]
        .iter()
        .all(|c| c.is_finite() && *c >= 0.0)
    }
}
