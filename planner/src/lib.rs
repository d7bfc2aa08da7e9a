//! `strata-planner`: Strata's cost-based planner. It decides, per query, between a full scan,
//! a primary-key lookup or range, and each index table, from statistics about the data, so a
//! low-selectivity index (a gender field) is passed over while the rare values of a skewed
//! field still use their index. It does no I/O and knows nothing of the engine: the table
//! layer hands it a [`Query`], a [`TableInfo`], [`TableStats`] and a [`CostModel`], and gets
//! a [`Plan`] back.
//!
//! - [`sketch`]: HyperLogLog, heavy hitters, reservoir sample, equi-depth histogram —
//!   mergeable, so per-shard or per-table-file statistics combine.
//! - [`stats`]: `TableStats` and `ColumnStats`, their builders, and their stored form.
//! - [`pattern`]: `LIKE` patterns: matching, their literal prefix as a key range.
//! - [`selectivity`]: the fraction of rows a predicate or conjunction keeps.
//! - [`field_map`]: what the planner knows of each field a query names.
//! - [`cost`]: the cost model, formulas written out beside the constants.
//! - [`plan`]: candidates, [`choose`], [`explain`].
//!
//! ```
//! use strata_planner::*;
//!
//! let table = TableInfo::new(
//!     "people",
//!     &["id"],
//!     vec![IndexInfo::new("by_gender", &["gender"], Projection::KeysOnly)],
//! );
//! let mut stats = TableStats { row_count: 1_000_000, avg_row_bytes: 120.0, ..Default::default() };
//! stats.columns.insert("gender".into(), ColumnStats {
//!     distinct: 2.0,
//!     most_common: vec![(Value::from("F"), 0.5), (Value::from("M"), 0.5)],
//!     ..Default::default()
//! });
//! let query = Query { predicates: vec![Predicate::eq("gender", "F")], ..Default::default() };
//! let plan = choose(&query, &table, &stats, &CostModel::default()).unwrap();
//! assert_eq!(plan.chosen.plan, "scan"); // half the table: fetching it by index costs more
//! ```

pub mod cost;
pub mod field_map;
mod formula;
pub mod observe;
pub mod pattern;
pub mod plan;
pub mod query;
pub mod selectivity;
pub mod sketch;
pub mod stats;
pub mod value;

pub use cost::CostModel;
pub use field_map::FieldMap;
pub use formula::RowCount;
pub use observe::{DIVE_LIMIT, Dive, Observations, Wanted, wanted, wanted_with_rows};
pub use plan::{
    Access, Candidate, Fetch, Formula, PartEstimate, Plan, PlanError, UnionPart, choose,
    choose_observed, choose_to_run, explain,
};
pub use query::{
    Condition, Consistency, FieldList, Hint, IndexInfo, IndexState, Op, Order, Predicate,
    Projection, Query, Scope, TableInfo,
};
pub use selectivity::Estimator;
pub use stats::{
    ColumnStats, JsonFault, JsonFaultKind, PrefixStats, StatsError, StatsFault, TableStats,
    TableStatsBuilder,
};
pub use value::{SqlLiteral, Value, ValueKind, WrongKind};
