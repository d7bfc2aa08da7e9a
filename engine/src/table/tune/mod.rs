//! The tuning room: keeping the planner's inputs true.
//!
//! - `analyze`: `Db::analyze` and the analyzer thread that runs it when a table has changed
//!   enough, gathering each field's distribution and each index's correlation.
//! - `advice`: `Db::index_advice` and `Db::index_usage`, from the counters in `stats`.
//!
//! Uses the rooms below it; nothing uses it but `open` (which starts the analyzer thread).

pub(crate) mod advice;
pub(crate) mod analyze;
