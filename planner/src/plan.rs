//! Plan choice: enumerate the candidates, cost each, pick the cheapest; `explain` shows them
//! all.
//!
//! Candidates:
//! - the full scan (always);
//! - a primary-key lookup when every key field is bound by `=` or `IN`, or a primary-key
//!   range when a leading part of the key is bound (equalities, then optionally a range);
//! - each `Ready` index whose first field is bound: its leading fields by equalities,
//!   optionally a range on the next. It is covering when its entries carry every field the
//!   query reads (its fields, the primary key, and its `Include` list; `All` carries the
//!   record); otherwise each entry costs a fetch of the record, in index order or sorted by
//!   key, whichever is cheaper.
//!
//! Every candidate returns the same rows, so they share one row estimate; they differ in
//! what they read. A hint forces a candidate — an index hint may name an index the
//! predicates do not bind (it is then read whole) but not one that is not `Ready`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cost::CostModel;
use crate::field_map::FieldMap;
pub use crate::formula::Formula;
use crate::formula::RowCount;
use crate::observe::{Dive, Observations, bound_fields, with_extremes};
use crate::query::{
    Condition, Hint, IndexInfo, IndexState, Predicate, Projection, Query, Scope, TableInfo,
};
use crate::selectivity::{Constraints, Estimator, constraints};
use crate::stats::TableStats;

/// How a candidate reaches the rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Access {
    /// Read every row.
    FullScan,
    /// Look up `keys` primary keys.
    PrimaryKeyLookup {
        /// How many keys the `=` and `IN` predicates name.
        keys: u64,
    },
    /// Read a range of the primary key.
    PrimaryKeyRange {
        /// The key fields the range is built from.
        bound_fields: Vec<String>,
    },
    /// Read an index.
    Index {
        /// The index.
        index: String,
        /// The index fields the lookup is built from (empty: the whole index).
        bound_fields: Vec<String>,
        /// Whether the entries carry everything the query reads.
        covering: bool,
        /// How records are fetched when not covering.
        fetch: Fetch,
    },
    /// The rows of each member of an `OR`, read by the cheapest path for it, one member
    /// after another: a row is returned by the first member it satisfies (each part skips
    /// the rows of the parts before it), so none twice. Several parts may read one index
    /// (several key ranges of it).
    Union {
        /// The parts, in the order they are read.
        parts: Vec<UnionPart>,
    },
}

/// One member of an `OR` read on its own ([`Access::Union`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnionPart {
    /// The member: the rows this part returns satisfy it.
    pub condition: Condition,
    /// The predicates its access path binds: the query's predicates and the member's.
    pub predicates: Vec<Predicate>,
    /// How it reaches them (a primary-key or index path).
    pub access: Box<Access>,
    /// The index, for an index path.
    pub index: Option<String>,
    /// Rows or entries it reads.
    pub rows_read: f64,
    /// Rows of the query it returns (before the parts before it take theirs).
    pub estimated_rows: f64,
    /// Its estimated cost in microseconds.
    pub cost: f64,
}

/// What one part of a query's `WHERE` keeps, alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartEstimate {
    /// The part: the predicates on one field, or a condition with `OR`.
    pub part: String,
    /// The rows it keeps out of the table's.
    pub rows: f64,
}

/// How an index plan fetches records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fetch {
    /// Covering: no fetch.
    None,
    /// One point lookup per entry, in index order.
    InIndexOrder,
    /// The entries' keys sorted first, then fetched in key order.
    SortedByKey,
}

/// One costed way to run the query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// `scan`, `primary_key` or `index`.
    pub plan: &'static str,
    /// The index, for an index plan.
    pub index: Option<String>,
    /// The access path.
    pub access: Access,
    /// Rows or entries it reads (before any `LIMIT` stops it).
    pub rows_read: f64,
    /// Rows it returns (the same for every candidate).
    pub estimated_rows: f64,
    /// Estimated cost in microseconds.
    pub cost: f64,
    /// Whether it stops early for the query's `LIMIT`.
    pub stops_early: bool,
    /// The cost formula with its numbers.
    pub formula: Formula,
}

/// The chosen plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// The winner.
    pub chosen: Candidate,
    /// Every candidate considered, cheapest first (the winner among them).
    pub candidates: Vec<Candidate>,
    /// Why the winner won (empty for a plan made only to run: [`choose_to_run`], and the
    /// plans `Db::query` runs).
    pub reason: String,
    /// What was read from the indexes to sharpen the estimates (dives, true extremes).
    pub observed: Observations,
    /// What each part of the `WHERE` keeps alone (empty for a plan made only to run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub estimates: Vec<PartEstimate>,
}

/// The planner could not plan the query.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A hint names an index the table does not have.
    #[error("no index named {0:?}")]
    UnknownIndex(String),
    /// A hint names an index that is not `Ready`.
    #[error("index {0:?} is not ready (still being built)")]
    IndexNotReady(String),
    /// A union hint on a query with no `OR` whose every member binds the primary key or an
    /// index.
    #[error(
        "no union to force: the query has no OR whose every member binds the primary key or a ready index"
    )]
    NoUnion,
    /// The cost constants are negative or not finite.
    #[error("cost constants must be finite and non-negative")]
    InvalidCostModel,
}

/// Plans `query` over `table` with its statistics and cost constants.
pub fn choose(
    query: &Query,
    table: &TableInfo,
    stats: &TableStats,
    model: &CostModel,
) -> Result<Plan, PlanError> {
    choose_observed(query, table, stats, model, &Observations::default())
}

/// [`choose`], with what the engine read from the indexes where the statistics were too
/// coarse ([`crate::observe`]): true extremes extend the statistics, and a dive's count
/// replaces an index's estimated entries (a lower bound when the dive stopped early) and
/// bounds the result.
pub fn choose_observed(
    query: &Query,
    table: &TableInfo,
    stats: &TableStats,
    model: &CostModel,
    observed: &Observations,
) -> Result<Plan, PlanError> {
    plan_with(query, table, stats, model, observed, true)
}

/// [`choose_observed`] for a plan that is run, not shown: the same choice, with an empty
/// [`Plan::reason`] and empty cost formulas (formatting the reason's numbers was ~7,000 of
/// the ~105,000 instructions of a covering query of ~30 rows, and recording the formulas'
/// terms ~9 allocations).
pub fn choose_to_run(
    query: &Query,
    table: &TableInfo,
    stats: &TableStats,
    model: &CostModel,
    observed: &Observations,
) -> Result<Plan, PlanError> {
    plan_with(query, table, stats, model, observed, false)
}

fn plan_with(
    query: &Query,
    table: &TableInfo,
    stats: &TableStats,
    model: &CostModel,
    observed: &Observations,
    reasoned: bool,
) -> Result<Plan, PlanError> {
    if !model.is_valid() {
        return Err(PlanError::InvalidCostModel);
    }
    let rows = observed.rows.unwrap_or(stats.row_count);
    let extended;
    let stats = if observed.extremes.is_empty() {
        stats
    } else {
        let mut counted = stats.clone();
        counted.row_count = rows;
        extended = with_extremes(&counted, &observed.extremes);
        &extended
    };
    let mut planner = Planner::new(query, table, stats, rows, model, reasoned);
    planner.apply_dives(&observed.dives);
    let planner = planner;
    let mut candidates = Vec::with_capacity(table.indexes.len() + 2);
    candidates.push(planner.full_scan());
    candidates.extend(planner.primary_key());
    let forced = match &query.hint {
        Some(Hint::Index(name)) => {
            let index = table
                .indexes
                .iter()
                .find(|i| &i.name == name)
                .ok_or_else(|| PlanError::UnknownIndex(name.clone()))?;
            if index.state != IndexState::Ready {
                return Err(PlanError::IndexNotReady(name.clone()));
            }
            Some(name.clone())
        }
        _ => None,
    };
    for index in table
        .indexes
        .iter()
        .filter(|i| i.state == IndexState::Ready)
    {
        let hinted = forced.as_deref() == Some(index.name.as_str());
        candidates.extend(planner.index(index, hinted));
    }
    if matches!(query.hint, None | Some(Hint::Union)) {
        candidates.extend(planner.unions());
    }
    candidates.sort_by(|a, b| a.cost.total_cmp(&b.cost));

    let pick = match (&query.hint, &forced) {
        (Some(Hint::Scan), _) => candidates.iter().position(|c| c.plan == "scan"),
        (Some(Hint::Union), _) => Some(
            candidates
                .iter()
                .position(|c| c.plan == "union")
                .ok_or(PlanError::NoUnion)?,
        ),
        (_, Some(name)) => candidates
            .iter()
            .position(|c| c.index.as_deref() == Some(name.as_str())),
        _ => Some(0),
    }
    .unwrap_or(0);
    let chosen = candidates[pick].clone();
    let reason = if !reasoned {
        String::new()
    } else if query.hint.is_some() {
        format!("forced by a hint ({})", describe(&chosen))
    } else {
        match candidates.get(1) {
            Some(next) => format!(
                "{} costs {:.1} µs, the least; next: {} at {:.1} µs ({:.1}×)",
                describe(&chosen),
                chosen.cost,
                describe(next),
                next.cost,
                if chosen.cost > 0.0 {
                    next.cost / chosen.cost
                } else {
                    f64::INFINITY
                }
            ),
            None => format!("{} is the only candidate", describe(&chosen)),
        }
    };
    let estimates = if reasoned {
        planner.estimates()
    } else {
        Vec::new()
    };
    Ok(Plan {
        chosen,
        candidates,
        reason,
        observed: observed.clone(),
        estimates,
    })
}

/// [`choose`], rendered as text: every candidate, cheapest first, and why the winner won.
pub fn explain(
    query: &Query,
    table: &TableInfo,
    stats: &TableStats,
    model: &CostModel,
) -> Result<String, PlanError> {
    Ok(choose(query, table, stats, model)?.to_string())
}

fn describe(c: &Candidate) -> String {
    match (&c.index, &c.access) {
        (Some(index), _) => format!("index {index}"),
        (None, Access::Union { parts }) => format!("union of {} parts", parts.len()),
        (None, _) => c.plan.replace('_', " "),
    }
}

fn describe_part(p: &UnionPart) -> String {
    match &p.index {
        Some(index) => format!("index {index}"),
        None => "primary key".to_owned(),
    }
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "plan: {}", describe(&self.chosen))?;
        writeln!(
            f,
            "estimated rows: {}",
            RowCount(self.chosen.estimated_rows)
        )?;
        writeln!(f, "why: {}", self.reason)?;
        for e in &self.estimates {
            writeln!(f, "estimate: {} keeps {} rows", e.part, RowCount(e.rows))?;
        }
        for (index, dive) in &self.observed.dives {
            let how = if dive.complete { "all" } else { "at least" };
            writeln!(
                f,
                "dive: index {index} has {how} {} entries in range",
                dive.entries
            )?;
        }
        for (field, (min, max)) in &self.observed.extremes {
            writeln!(
                f,
                "extremes: {field} runs from {min:?} to {max:?} (read from an index)"
            )?;
        }
        writeln!(f, "candidates:")?;
        for c in &self.candidates {
            let mark = if c == &self.chosen { "*" } else { " " };
            writeln!(
                f,
                " {mark} {:<24} reads {:>12}  cost {:>12.1} µs{}",
                describe(c),
                RowCount(c.rows_read),
                c.cost,
                if c.stops_early {
                    "  (stops at LIMIT)"
                } else {
                    ""
                }
            )?;
            writeln!(f, "     {}", c.formula)?;
            if let Access::Union { parts } = &c.access {
                for (i, p) in parts.iter().enumerate() {
                    writeln!(
                        f,
                        "     part {}: {} by {}: reads {}, keeps {}, cost {:.1} µs",
                        i + 1,
                        p.condition,
                        describe_part(p),
                        RowCount(p.rows_read),
                        RowCount(p.estimated_rows),
                        p.cost
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// What every candidate needs.
struct Planner<'a> {
    query: &'a Query,
    table: &'a TableInfo,
    model: &'a CostModel,
    estimator: Estimator<'a>,
    by_field: Constraints<'a>,
    rows: f64,
    row_bytes: f64,
    shards: f64,
    /// Rows the query returns, before LIMIT.
    result: f64,
    stats: &'a TableStats,
    /// Each constrained field's own selectivity.
    single: FieldMap<'a, f64>,
    /// Dives, by index.
    dives: BTreeMap<String, Dive>,
    /// Whether candidates record their cost formulas (a plan that is shown).
    reasoned: bool,
    /// What each of the query's conditions keeps (empty for a union's part).
    each_condition: Vec<f64>,
}

/// A finite, non-negative number (statistics written by hand may hold anything).
fn sane(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}

impl<'a> Planner<'a> {
    fn new(
        query: &'a Query,
        table: &'a TableInfo,
        stats: &'a TableStats,
        rows: u64,
        model: &'a CostModel,
        reasoned: bool,
    ) -> Self {
        let estimator = Estimator::new(stats);
        let each: Vec<f64> = query
            .conditions
            .iter()
            .map(|c| estimator.condition(c))
            .collect();
        let mut planner = Planner::with_conditions(
            query,
            table,
            stats,
            rows,
            model,
            reasoned,
            each.iter().product(),
        );
        planner.each_condition = each;
        planner
    }

    /// A planner for one part of a union: `query`'s conditions are tested (their fields read,
    /// their predicates counted) but not estimated again — the part's result is what its
    /// own predicates keep — and no formula is recorded (a part shows its numbers only).
    fn part(
        query: &'a Query,
        table: &'a TableInfo,
        stats: &'a TableStats,
        rows: u64,
        model: &'a CostModel,
    ) -> Self {
        Planner::with_conditions(query, table, stats, rows, model, false, 1.0)
    }

    fn with_conditions(
        query: &'a Query,
        table: &'a TableInfo,
        stats: &'a TableStats,
        rows: u64,
        model: &'a CostModel,
        reasoned: bool,
        conditions: f64,
    ) -> Self {
        let estimator = Estimator::new(stats);
        let by_field = constraints(&query.predicates);
        let rows = rows as f64;
        let single = estimator.singles(&by_field);
        let result = rows * estimator.combine(&by_field, &single) * conditions;
        Planner {
            query,
            table,
            model,
            estimator,
            by_field,
            rows,
            row_bytes: sane(stats.avg_row_bytes),
            shards: f64::from(table.shards.max(1)),
            result: sane(result),
            stats,
            single,
            dives: BTreeMap::new(),
            reasoned,
            each_condition: Vec::new(),
        }
    }

    /// An empty formula: recording its terms when the plan is shown.
    fn formula(&self) -> Formula {
        if self.reasoned {
            Formula::default()
        } else {
            Formula::unrecorded()
        }
    }

    /// The entries a dive says the range of `bound` holds. A complete dive counted them.
    /// One that stopped early is a lower bound: with statistics for every bound field, the
    /// larger of it and their estimate; without, the geometric mean of it and the rows,
    /// which is off by at most the square root of their ratio whatever the truth in between.
    fn dived_entries(&self, bound: &[String], dive: &Dive, estimated: f64) -> f64 {
        let counted = dive.entries as f64;
        if dive.complete {
            return counted;
        }
        let known = bound.iter().all(|f| self.stats.columns.contains_key(f));
        if known {
            estimated.max(counted)
        } else {
            estimated.max((counted * self.rows.max(counted)).sqrt())
        }
    }

    /// Takes the dives in: each bounds the result (every matching row has an entry in the
    /// range a dive counted), and one that stopped early raises it when the statistics
    /// promised fewer entries than it found.
    fn apply_dives(&mut self, dives: &BTreeMap<String, Dive>) {
        for (name, dive) in dives {
            let Some(index) = self.table.indexes.iter().find(|i| &i.name == name) else {
                continue;
            };
            let bound = bound_fields(&index.fields, &self.by_field);
            if bound.is_empty() {
                continue;
            }
            let estimated = self.rows * self.selectivity_of(&bound);
            let counted = self.dived_entries(&bound, dive, estimated);
            if dive.complete {
                self.result = self.result.min(counted);
            } else if estimated < counted && estimated > 0.0 {
                self.result = (self.result * counted / estimated).min(self.rows.max(counted));
            } else if estimated <= 0.0 {
                self.result = self.result.max(counted.min(self.rows));
            }
            self.dives.insert(name.clone(), *dive);
        }
        self.result = sane(self.result);
    }

    /// How much of a fetch through an index on `fields` is a step along the table rather than
    /// a point read: the squared correlation of its leading field with the key order (as
    /// PostgreSQL interpolates between its best and worst index I/O), 0 without statistics.
    fn clustering(&self, fields: &[String]) -> f64 {
        fields
            .first()
            .and_then(|f| self.stats.columns.get(f))
            .map_or(0.0, |c| {
                let r = if c.correlation.is_finite() {
                    c.correlation.clamp(-1.0, 1.0)
                } else {
                    0.0
                };
                r * r
            })
    }

    fn width(&self, field: &str) -> f64 {
        self.stats
            .columns
            .get(field)
            .map_or(8.0, |c| sane(c.avg_width))
    }

    /// `min(1, L / R)` when a LIMIT lets a plan stop early.
    fn limit_fraction(&self) -> Option<f64> {
        let limit = self.query.limit? as f64;
        Some(if self.result <= limit {
            1.0
        } else {
            limit / self.result
        })
    }

    /// Whether rows in `order_fields` order satisfy the query's ORDER BY, given the fields
    /// bound to a single value (which are constant in the result).
    fn provides_order(&self, order_fields: &[String]) -> bool {
        let Some(order) = &self.query.order else {
            return true;
        };
        let constant = |f: &String| {
            self.by_field
                .get(f)
                .is_some_and(|c| c.key_values().is_some_and(|v| v.len() == 1))
        };
        let mut available = order_fields.iter().filter(|f| !constant(f));
        order
            .fields
            .iter()
            .filter(|f| !constant(f))
            .all(|f| available.next() == Some(f))
    }

    /// Applies LIMIT and ORDER to a plan whose row-dependent cost is `run` and fixed cost
    /// `setup`: the final cost, and whether it stops early. Every plan also decodes the
    /// rows it returns (`row_us` each), counted here with the run.
    fn finish(&self, setup: f64, run: f64, ordered: bool, can_stop: bool) -> (f64, bool, Formula) {
        let row_us = self.model.row_us;
        let (run, produced) = if row_us > 0.0 {
            (
                run + self.result * row_us,
                self.formula()
                    .text(" + ")
                    .number(self.result, 0)
                    .text(" rows out × ")
                    .number(row_us, 3),
            )
        } else {
            (run, self.formula())
        };
        let (cost, stops_early, tail) = self.limit_and_order(setup, run, ordered, can_stop);
        (cost, stops_early, produced.then(tail))
    }

    fn limit_and_order(
        &self,
        setup: f64,
        run: f64,
        ordered: bool,
        can_stop: bool,
    ) -> (f64, bool, Formula) {
        if !ordered {
            let sort = self.model.top(self.result, self.query.limit);
            return (
                sane(setup + run + sort),
                false,
                self.formula()
                    .text(" + sort(")
                    .number(self.result, 0)
                    .text(") ")
                    .number(sort, 1),
            );
        }
        match self.limit_fraction() {
            Some(f) if can_stop && f < 1.0 => (
                sane(setup + run * f),
                true,
                self.formula().text(", run × LIMIT/rows ").scientific(f),
            ),
            _ => (sane(setup + run), false, self.formula()),
        }
    }

    /// The factor a read in `ordered` order costs: [`CostModel::backward_read`] when that
    /// order serves a descending `ORDER BY` (the executor reads backwards), else 1.
    fn direction(&self, ordered: bool) -> f64 {
        let descending = self.query.order.as_ref().is_some_and(|o| o.descending);
        if ordered && descending {
            self.model.backward_read
        } else {
            1.0
        }
    }

    fn scan_row_cost(&self) -> f64 {
        let m = self.model;
        m.scan_row_us + self.row_bytes * m.scan_byte_us + self.tests() * m.filter_us
    }

    /// How many predicates a row is tested on: the query's, and those of its conditions.
    fn tests(&self) -> f64 {
        let mut n = self.query.predicates.len();
        for c in &self.query.conditions {
            c.each_predicate(&mut |_| n += 1);
        }
        n as f64
    }

    /// Whether the query's `ORDER BY` is one `fields` provide (not only the absence of one).
    fn ordered_by(&self, fields: &[String]) -> bool {
        self.query
            .order
            .as_ref()
            .is_some_and(|o| !o.fields.is_empty())
            && self.provides_order(fields)
    }

    fn full_scan(&self) -> Candidate {
        let setup = self.shards * self.model.seek_us;
        let ordered = self.provides_order(&self.table.primary_key);
        let per_row = self.scan_row_cost() * self.direction(ordered);
        let run = self.rows * per_row;
        let (cost, stops_early, tail) = self.finish(setup, run, ordered, true);
        Candidate {
            plan: "scan",
            index: None,
            access: Access::FullScan,
            rows_read: self.rows,
            estimated_rows: self.result,
            cost,
            stops_early,
            formula: self
                .formula()
                .reads(
                    self.shards,
                    self.model.seek_us,
                    self.rows,
                    " rows × ",
                    per_row,
                )
                .then(tail),
        }
    }

    /// The leading fields of `fields` bound by equalities, then the next one if it has a
    /// range: `(bound fields, seeks)`, seeks being the product of the equality set sizes.
    fn bound_prefix(&self, fields: &[String]) -> (Vec<String>, f64, bool) {
        let mut bound = Vec::new();
        let mut seeks = 1.0f64;
        let mut ranged = false;
        for field in fields {
            let Some(c) = self.by_field.get(field) else {
                break;
            };
            if let Some(values) = c.key_values() {
                seeks *= values.len() as f64;
                bound.push(field.clone());
                continue;
            }
            if c.binds_range() {
                bound.push(field.clone());
                ranged = true;
            }
            break;
        }
        (bound, seeks, ranged)
    }

    /// The selectivity of the constraints on `fields` alone.
    fn selectivity_of(&self, fields: &[String]) -> f64 {
        let subset: FieldMap<'_, f64> = self
            .single
            .iter()
            .filter(|(f, _)| fields.iter().any(|b| b == f))
            .map(|(f, s)| (f, *s))
            .collect();
        self.estimator.combine(&self.by_field, &subset)
    }

    fn primary_key(&self) -> Option<Candidate> {
        let key = &self.table.primary_key;
        let (bound, seeks, ranged) = self.bound_prefix(key);
        if bound.is_empty() {
            return None;
        }
        let m = self.model;
        if bound.len() == key.len() && !ranged {
            // Point lookups: one fetch per key; each fetch is as good as a seek.
            let keys = seeks.min(1e12);
            let cost = sane(keys * m.fetch_us);
            let (cost, stops_early, tail) = if self.provides_order(key) {
                self.finish(0.0, cost, true, true)
            } else {
                self.finish(0.0, cost, false, false)
            };
            return Some(Candidate {
                plan: "primary_key",
                index: None,
                access: Access::PrimaryKeyLookup { keys: keys as u64 },
                rows_read: keys,
                estimated_rows: self.result,
                cost,
                stops_early,
                formula: self
                    .formula()
                    .number(keys, 0)
                    .text(" keys × fetch ")
                    .number(m.fetch_us, 1)
                    .then(tail),
            });
        }
        let read = self.rows * self.selectivity_of(&bound);
        let setup = seeks * m.seek_us;
        let ordered = self.provides_order(key);
        let per_row = self.scan_row_cost() * self.direction(ordered);
        let run = read * per_row;
        let (cost, stops_early, tail) = self.finish(setup, run, ordered, true);
        Some(Candidate {
            plan: "primary_key",
            index: None,
            access: Access::PrimaryKeyRange {
                bound_fields: bound,
            },
            rows_read: read,
            estimated_rows: self.result,
            cost,
            stops_early,
            formula: self
                .formula()
                .reads(seeks, m.seek_us, read, " rows × ", per_row)
                .then(tail),
        })
    }

    /// The fields an index entry carries; `None`: the whole record.
    fn carried<'i>(
        &'i self,
        index: &'i IndexInfo,
    ) -> Option<impl Iterator<Item = &'i String> + Clone> {
        let extra: &[String] = match &index.projection {
            Projection::All => return None,
            Projection::Include(extra) => extra,
            Projection::KeysOnly => &[],
        };
        Some(
            index
                .fields
                .iter()
                .chain(&self.table.primary_key)
                .chain(extra),
        )
    }

    fn index(&self, index: &IndexInfo, hinted: bool) -> Option<Candidate> {
        let (bound, seeks, _) = self.bound_prefix(&index.fields);
        // An index no predicate binds is read whole when it gives the query's order (read
        // in order, filtered, stopped at the LIMIT), or when a hint names it.
        if bound.is_empty() && !hinted && !self.ordered_by(&index.fields) {
            return None;
        }
        let m = self.model;
        let estimated = sane(self.rows * self.selectivity_of(&bound));
        let entries = match self.dives.get(&index.name) {
            Some(d) => self.dived_entries(&bound, d, estimated),
            None => estimated,
        };
        let shard_seeks = match index.scope {
            Scope::Local => self.shards,
            // Partitioned by the hash of the leading value: each `=`/`IN` value of it lives in
            // one shard; a range over it is in all of them.
            Scope::Global => {
                let leading_values = index
                    .fields
                    .first()
                    .and_then(|f| self.by_field.get(f))
                    .is_some_and(|c| c.key_values().is_some());
                if leading_values { 1.0 } else { self.shards }
            }
        };
        let seeks = (seeks * shard_seeks).min(1e12);
        let carried = self.carried(index);
        let entry_bytes = match carried.clone() {
            None => self.row_bytes,
            Some(fields) => fields.map(|f| self.width(f)).sum::<f64>() + 8.0,
        };
        let covering = match carried {
            None => true,
            Some(fields) => {
                let reads_all = self.query.projection.is_none();
                !reads_all
                    && self
                        .query
                        .projection
                        .iter()
                        .flatten()
                        .map(String::as_str)
                        .chain(self.query.tested_fields())
                        .all(|f| fields.clone().any(|c| c == f))
            }
        };
        let residual = self
            .query
            .predicates
            .iter()
            .filter(|p| !bound.contains(&p.field))
            .count() as f64
            + (self.tests() - self.query.predicates.len() as f64);
        let setup = seeks * m.seek_us;
        let ordered = self.provides_order(&index.fields);
        // In index order (covering, or fetching as the entries come), backwards for a
        // descending order; fetches sorted by key read the entries forwards.
        let forward_entry = m.index_entry_us + entry_bytes * m.scan_byte_us;
        let per_entry = forward_entry * self.direction(ordered);
        let read = entries * per_entry;
        let (cost, stops_early, fetch, tail) = if covering {
            let run = read + entries * residual * m.filter_us;
            let (cost, stops, tail) = self.finish(setup, run, ordered, true);
            (cost, stops, Fetch::None, tail)
        } else {
            // A fetch also reads the record's bytes, as a scan does. Rows whose key order
            // follows the index's (clustering c, from the leading field's correlation) are
            // fetched as a step from the row before: a scan's row, plus finding its key (an
            // entry's read) — measured 0.09 µs on `orders` against 0.074 + 0.053 here:
            //   fetch' = c · (scan_row + index_entry) + (1 − c) · fetch   (sorted likewise)
            let record = self.row_bytes * m.scan_byte_us;
            let clustering = self.clustering(&index.fields);
            let stepped = m.scan_row_us + m.index_entry_us;
            let step = |point: f64| clustering * stepped + (1.0 - clustering) * point;
            let (fetch_us, sorted_fetch_us) = (step(m.fetch_us), step(m.sorted_fetch_us));
            let in_order = self.finish(setup, read + entries * (fetch_us + record), ordered, true);
            let sort_keys = m.sort(entries);
            let sorted = self.finish(
                setup,
                entries * forward_entry + entries * (sorted_fetch_us + record) + sort_keys,
                // Fetching in key order gives up the index order.
                self.provides_order(&self.table.primary_key),
                false,
            );
            if in_order.0 <= sorted.0 {
                let formula = self
                    .formula()
                    .text(" + ")
                    .number(entries, 0)
                    .text(" fetches × ")
                    .number(fetch_us + record, 3)
                    .clustered(clustering)
                    .then(in_order.2);
                (in_order.0, in_order.1, Fetch::InIndexOrder, formula)
            } else {
                let formula = self
                    .formula()
                    .text(" + sort keys ")
                    .number(sort_keys, 1)
                    .text(" + ")
                    .number(entries, 0)
                    .text(" sorted fetches × ")
                    .number(sorted_fetch_us + record, 3)
                    .clustered(clustering)
                    .then(sorted.2);
                (sorted.0, sorted.1, Fetch::SortedByKey, formula)
            }
        };
        let per_entry = if fetch == Fetch::SortedByKey {
            forward_entry
        } else {
            per_entry
        };
        Some(Candidate {
            plan: "index",
            index: Some(index.name.clone()),
            access: Access::Index {
                index: index.name.clone(),
                bound_fields: bound,
                covering,
                fetch,
            },
            rows_read: entries,
            estimated_rows: self.result,
            cost,
            stops_early,
            formula: self
                .formula()
                .reads(seeks, m.seek_us, entries, " entries × ", per_entry)
                .text(" (")
                .number(entry_bytes, 0)
                .text(if covering { " B), covering" } else { " B)" })
                .then(tail),
        })
    }

    /// The unions: for each `OR` among the query's conditions (the first
    /// [`MAX_UNIONS`]), its members each read by their cheapest primary-key or index path,
    /// when every member has one.
    fn unions(&self) -> Vec<Candidate> {
        self.query
            .conditions
            .iter()
            .take(MAX_UNIONS)
            .filter_map(|c| match c {
                Condition::Any(members) if (1..=MAX_UNION_PARTS).contains(&members.len()) => {
                    self.union(members)
                }
                _ => None,
            })
            .collect()
    }

    fn union(&self, members: &[Condition]) -> Option<Candidate> {
        let m = self.model;
        let rows = self.rows as u64;
        let mut parts = Vec::with_capacity(members.len());
        let (mut run, mut read) = (0.0, 0.0);
        for member in members {
            let predicates: Vec<Predicate> = self
                .query
                .predicates
                .iter()
                .chain(member.conjuncts())
                .cloned()
                .collect();
            // The part's path, costed as a query of its own: the query's predicates and the
            // member's, testing the conditions as the query does.
            let sub = Query {
                predicates,
                conditions: self.query.conditions.clone(),
                projection: self.query.projection.clone(),
                ..Query::default()
            };
            let planner = Planner::part(&sub, self.table, self.stats, rows, m);
            let best = planner
                .primary_key()
                .into_iter()
                .chain(
                    self.table
                        .indexes
                        .iter()
                        .filter(|i| i.state == IndexState::Ready)
                        .filter_map(|i| planner.index(i, false)),
                )
                .min_by(|a, b| a.cost.total_cmp(&b.cost))?;
            // Its rows are counted out once, by the union.
            let cost = sane(best.cost - planner.result * m.row_us);
            // The part's predicates are the query's and the member's top level: what they
            // keep, times the member's nested conditions.
            let nested: f64 = match member {
                Condition::All(cs) => cs
                    .iter()
                    .filter(|c| !matches!(c, Condition::Is(_)))
                    .map(|c| self.estimator.condition(c))
                    .product(),
                _ => 1.0,
            };
            run += cost;
            read += best.rows_read;
            parts.push(UnionPart {
                condition: member.clone(),
                predicates: sub.predicates.clone(),
                access: Box::new(best.access),
                index: best.index,
                rows_read: best.rows_read,
                estimated_rows: sane(planner.result * nested),
                cost,
            });
        }
        let ordered = self.query.order.is_none();
        let (cost, stops_early, tail) = self.finish(0.0, run, ordered, true);
        Some(Candidate {
            plan: "union",
            index: None,
            access: Access::Union { parts },
            rows_read: read,
            estimated_rows: self.result,
            cost,
            stops_early,
            formula: self.formula().text("parts ").number(run, 1).then(tail),
        })
    }

    /// What each part of the `WHERE` keeps alone: the predicates on each field, and each
    /// condition.
    fn estimates(&self) -> Vec<PartEstimate> {
        let mut out = Vec::new();
        for (field, sel) in self.single.iter() {
            let part: Vec<String> = self
                .query
                .predicates
                .iter()
                .filter(|p| p.field == field)
                .map(ToString::to_string)
                .collect();
            out.push(PartEstimate {
                part: part.join(" AND "),
                rows: sane(self.rows * sel),
            });
        }
        for (c, sel) in self.query.conditions.iter().zip(&self.each_condition) {
            out.push(PartEstimate {
                part: format!("({c})"),
                rows: sane(self.rows * sel),
            });
        }
        out
    }
}

/// The most `OR`s of one query costed as unions.
const MAX_UNIONS: usize = 4;
/// The most members an `OR` read as a union may have (each is planned as a query).
const MAX_UNION_PARTS: usize = 64;
