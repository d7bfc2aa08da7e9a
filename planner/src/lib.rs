//! `strata-planner` will hold Strata's cost-based planner: per-table statistics (row counts,
//! NDV sketches, most-common values, equi-depth histograms), selectivity estimation, a cost
//! model in calibrated microseconds, the choice between full scans, primary-key ranges and
//! index lookups, `EXPLAIN`, and an index advisor. It does no I/O.
//!
//! It is empty today: nothing here pretends to work. It arrives with its own issue ("The
//! cost-based planner").
