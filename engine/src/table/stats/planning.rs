//! What planning needs of one published table definition and its statistics, built on
//! first use and shared by every query planned on it.

use std::sync::Arc;

use strata_planner::{TableInfo, TableStats};

/// A table's planner view, shared by every query planned on one published table
/// (`Table::planning`).
pub(crate) struct Planning {
    /// The definition as the planner sees it.
    pub(crate) info: TableInfo,
    /// The same without its indexes: what a primary-key equality is planned on.
    pub(crate) key_only: TableInfo,
    /// The last `analyze`, ready to plan with (`collected_rows` fixed, so the live row count
    /// can replace `row_count` without copying the distributions).
    pub(crate) analyzed: Option<Arc<TableStats>>,
}

/// `stats` with `collected_rows` fixed to what the distributions saw, so that replacing
/// `row_count` with a live count keeps it.
pub(crate) fn for_planning(mut stats: TableStats) -> TableStats {
    if !stats.columns.is_empty() {
        stats.collected_rows = stats.collected_rows();
    }
    stats
}
