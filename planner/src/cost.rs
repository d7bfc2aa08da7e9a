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
//! ```
//!
//! `LIMIT L` scales the row-dependent part of a plan that can stop early (one that produces
//! rows in the requested order, or no order was asked, and does not sort its fetches) by
//! `min(1, L / R)`: with the matching rows spread evenly, the scan meets its `L`-th match
//! after `N · L / R` rows (PostgreSQL scales a plan's run cost the same way in
//! `costsize.c`). A plan that must sort reads everything and pays `sort(R)`.

use serde::{Deserialize, Serialize};

/// Cost constants. The engine ships these defaults and may calibrate them on its machine.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Positioning an iterator: one seek into a table's levels.
    /// TUNING: seekrandom (a seek plus 10 nexts) ran at 316,684/s in the comparison
    /// (docs/benchmarks.md): about 3 µs.
    pub seek_us: f64,
    /// Reading one row in key order, apart from its bytes.
    /// TUNING: readseq ran 7.8M rows/s of 116 bytes: 0.128 µs a row, split 0.09 per row and
    /// 0.0003 per byte (so width matters, as PostgreSQL's per-page cost makes it matter).
    pub scan_row_us: f64,
    /// Reading one byte in key order.
    /// TUNING: see `scan_row_us`.
    pub scan_byte_us: f64,
    /// Reading one index entry, apart from its bytes: the same machinery as a scan.
    /// TUNING: equal to `scan_row_us`, as PostgreSQL's `cpu_index_tuple_cost` (0.005) is of
    /// the order of its `cpu_tuple_cost` (0.01).
    pub index_entry_us: f64,
    /// Fetching one record by primary key, in no particular order.
    /// TUNING: readrandom ran 231,732/s before compaction and 750,666/s after: 4.3 and
    /// 1.3 µs; 2 µs sits between.
    pub fetch_us: f64,
    /// Fetching one record when the keys are sorted first: consecutive fetches share blocks.
    /// TUNING: half of `fetch_us`; PostgreSQL's `random_page_cost` / `seq_page_cost` is 4,
    /// but our random reads hit memory-mapped tables, not a disk head.
    pub sorted_fetch_us: f64,
    /// Evaluating one predicate on one row.
    /// TUNING: PostgreSQL's `cpu_operator_cost` (0.0025) is a quarter of its per-row cost;
    /// 0.02 µs is a quarter of `scan_row_us`.
    pub filter_us: f64,
    /// Sorting, per row per comparison level (`n · log2 n` comparisons).
    /// TUNING: PostgreSQL charges `2 · cpu_operator_cost` per comparison; 0.01 µs.
    pub sort_row_us: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            seek_us: 3.0,
            scan_row_us: 0.09,
            scan_byte_us: 0.0003,
            index_entry_us: 0.09,
            fetch_us: 2.0,
            sorted_fetch_us: 1.0,
            filter_us: 0.02,
            sort_row_us: 0.01,
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

    /// Whether every constant is finite and non-negative (what `choose` requires).
    pub fn is_valid(&self) -> bool {
        [
            self.seek_us,
            self.scan_row_us,
            self.scan_byte_us,
            self.index_entry_us,
            self.fetch_us,
            self.sorted_fetch_us,
            self.filter_us,
            self.sort_row_us,
        ]
        .iter()
        .all(|c| c.is_finite() && *c >= 0.0)
    }
}
