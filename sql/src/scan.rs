//! The execution plan of a Strata table's scan: a Strata query (the conditions DataFusion
//! pushed down, the columns it reads, its `LIMIT`), planned by Strata when it runs, read at
//! the statement's snapshot or through its transaction when it has one
//! (`crate::session::StatementSnapshot`), its rows streamed as record batches of
//! [`crate::schema::BATCH_ROWS`] rows (fewer when they hold [`crate::schema::BATCH_BYTES`] of
//! text).
//!
//! `EXPLAIN` shows the query and the plan Strata chose for it when the scan was planned
//! (`StrataScan: table=… plan=index by_town rows≈… where=…`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ScalarValue, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_expr::PhysicalSortExpr;
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::physical_plan::execution_plan::apply_expression_roots;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::sort_pushdown::SortOrderPushdownResult;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream,
};
use strata::{Db, Order, Query};

use crate::filter::{condition_with, conditions_of_physical};
use crate::schema::{Batcher, Column, ColumnType, TableSchema, arrow_schema};
use crate::session::{RowSource, StatementParams, StatementSnapshot};

/// Scans one Strata table.
pub struct StrataScan {
    db: Arc<Db>,
    table: Arc<TableSchema>,
    columns: Vec<Column>,
    query: Query,
    /// What the statement reads (a snapshot or a transaction), if it says.
    reads: Option<StatementSnapshot>,
    properties: Arc<PlanProperties>,
    /// Strata's plan and estimates, made when first asked for (`EXPLAIN`, join planning):
    /// DataFusion's optimizer makes several scans for each table it plans.
    estimate: OnceLock<Estimate>,
    /// The order its output is declared in (empty: none).
    ordering: Vec<PhysicalSortExpr>,
    /// Filters from above — a hash join's dynamic filter — read when the scan starts.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// A prepared statement's conjuncts with placeholders (`$1` …), which convert with
    /// values of their types: bound to [`StrataScan::params`] when the scan runs.
    deferred: Vec<Expr>,
    /// The values of the placeholders: those the plan was made with (for its estimates),
    /// then each run's ([`StrataScan::for_run`]).
    params: Option<Arc<StatementParams>>,
    metrics: ExecutionPlanMetricsSet,
}

impl std::fmt::Debug for StrataScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrataScan")
            .field("table", &self.table.table)
            .field("query", &self.query)
            .field("plan", &self.estimate.get().map(|e| &e.chosen))
            .finish()
    }
}

impl StrataScan {
    /// A scan of `table` running `query`, returning `columns`.
    pub fn new(
        db: Arc<Db>,
        table: Arc<TableSchema>,
        columns: Vec<Column>,
        query: Query,
        reads: Option<StatementSnapshot>,
    ) -> Result<StrataScan> {
        StrataScan::ordered(db, table, columns, query, reads, Vec::new())
    }

    /// [`StrataScan::new`], declaring `ordering` as its output's order (an `ORDER BY`
    /// Strata gives, in the terms it was asked in: a primary-key field's NULLs may be asked
    /// for either end) — or, when empty, the order of the query's `order` with Strata's
    /// NULLs.
    fn ordered(
        db: Arc<Db>,
        table: Arc<TableSchema>,
        columns: Vec<Column>,
        query: Query,
        reads: Option<StatementSnapshot>,
        ordering: Vec<PhysicalSortExpr>,
    ) -> Result<StrataScan> {
        let schema = arrow_schema(&columns);
        // The order Strata returns its rows in, declared only when the query asks for it.
        let ordering: Vec<PhysicalSortExpr> = match &query.order {
            Some(_) if !ordering.is_empty() => ordering,
            Some(order) => order
                .fields
                .iter()
                .filter_map(|f| {
                    let at = columns.iter().position(|c| &c.name == f)?;
                    Some(PhysicalSortExpr::new(
                        Arc::new(PhysicalColumn::new(f, at)),
                        SortOptions {
                            descending: order.descending,
                            // Strata: NULL first ascending, last descending.
                            nulls_first: !order.descending,
                        },
                    ))
                })
                .collect(),
            None => Vec::new(),
        };
        let declared = ordering.clone();
        let equivalences = if ordering.is_empty() {
            EquivalenceProperties::new(Arc::clone(&schema))
        } else {
            EquivalenceProperties::new_with_orderings(Arc::clone(&schema), [ordering])
        };
        let properties = Arc::new(PlanProperties::new(
            equivalences,
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Ok(StrataScan {
            db,
            table,
            columns,
            query,
            reads,
            properties,
            estimate: OnceLock::new(),
            ordering: declared,
            dynamic: Vec::new(),
            deferred: Vec::new(),
            params: None,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// This scan taking also `deferred`, conjuncts with placeholders, bound to `params`.
    pub(crate) fn with_deferred(
        mut self,
        deferred: Vec<Expr>,
        params: Option<Arc<StatementParams>>,
    ) -> StrataScan {
        self.deferred = deferred;
        self.params = params;
        self
    }

    /// The query it runs: its own, and its deferred conjuncts bound to its parameters.
    fn bound_query(&self) -> Result<Query> {
        let mut query = self.query.clone();
        if self.deferred.is_empty() {
            return Ok(query);
        }
        let params = self.params.as_ref().ok_or_else(|| {
            DataFusionError::Plan("a scan with parameters ($1 …) ran without their values".into())
        })?;
        for f in &self.deferred {
            let condition = condition_with(f, &self.table, &params.0).ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "the parameters make a filter Strata cannot answer: {f}"
                ))
            })?;
            query.add_condition(condition);
        }
        Ok(query)
    }

    /// This scan as a kept plan holds it between runs: reading no snapshot (one kept would
    /// hold the database's old versions for as long as the plan lives).
    pub(crate) fn for_keeping(&self) -> StrataScan {
        let mut scan = self.for_run_parts();
        scan.reads = None;
        scan.params = self.params.clone();
        scan.dynamic = self.dynamic.clone();
        scan
    }

    /// Whether it reads a snapshot or transaction of its own.
    #[cfg(test)]
    pub(crate) fn holds_reads(&self) -> bool {
        self.reads.is_some()
    }

    /// This scan for one run of a cached plan ([`crate::prepared::Prepared`]): reading `reads`,
    /// its placeholders bound to `params`, without the dynamic filters of the run before
    /// (the plan's filter pushdown gives it the new run's).
    pub(crate) fn for_run(
        &self,
        reads: StatementSnapshot,
        params: Arc<StatementParams>,
    ) -> StrataScan {
        let mut scan = self.for_run_parts();
        scan.reads = Some(reads);
        scan.params = Some(params);
        scan
    }

    /// This scan for one run as [`StrataScan::for_run`], each of its dynamic filters swapped
    /// for the new run's filter from the same producer (`renewed`, by the old filter's
    /// [`PhysicalExpr::expression_id`]), with this scan's columns. `None` when a filter has no
    /// renewal there: the caller links the run's filters by DataFusion's pushdown instead.
    pub(crate) fn for_run_renewed(
        &self,
        reads: StatementSnapshot,
        params: Arc<StatementParams>,
        renewed: &HashMap<u64, Arc<DynamicFilterPhysicalExpr>>,
    ) -> Option<StrataScan> {
        let mut scan = self.for_run(reads, params);
        for old in &self.dynamic {
            let new = renewed.get(&old.expression_id()?)?;
            let columns: Vec<_> = old.children().into_iter().cloned().collect();
            let new = Arc::clone(new) as Arc<dyn PhysicalExpr>;
            // Remapped only where the scan names the columns otherwise (a remapped filter
            // rewrites its expression on each read).
            let new = if new.children().into_iter().eq(columns.iter()) {
                new
            } else {
                new.with_new_children(columns).ok()?
            };
            scan.dynamic.push(new);
        }
        Some(scan)
    }

    /// A copy of this scan without its reads, parameters, dynamic filters or metrics.
    fn for_run_parts(&self) -> StrataScan {
        StrataScan {
            db: Arc::clone(&self.db),
            table: Arc::clone(&self.table),
            columns: self.columns.clone(),
            query: self.query.clone(),
            reads: None,
            properties: Arc::clone(&self.properties),
            estimate: self.estimate.clone(),
            ordering: self.ordering.clone(),
            dynamic: Vec::new(),
            deferred: self.deferred.clone(),
            params: None,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The Strata query it runs.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// Strata's plan for its query and what it expects it to return, made on first use.
    fn estimate(&self) -> Result<&Estimate> {
        if let Some(estimate) = self.estimate.get() {
            return Ok(estimate);
        }
        let strata_err = |e: strata::Error| DataFusionError::External(Box::new(e));
        let plan = self
            .db
            .explain(&self.table.table, &self.bound_query()?)
            .map_err(strata_err)?;
        let chosen = match &plan.chosen.index {
            Some(index) => format!("index {index}"),
            None => plan.chosen.plan.replace('_', " "),
        };
        let estimated = plan.chosen.estimated_rows;
        let (stats, _) = self
            .db
            .shared_planning_statistics(&self.table.table)
            .map_err(strata_err)?;
        let schema = self.properties.eq_properties.schema();
        let estimate = Estimate {
            chosen: format!("{chosen} rows≈{}", strata::RowCount(estimated)),
            statistics: Arc::new(statistics(schema, &self.columns, &stats, estimated)),
        };
        Ok(self.estimate.get_or_init(|| estimate))
    }

    /// This scan with `query` instead, its output in `ordering` (empty: the query's).
    fn with_query(&self, query: Query, ordering: Vec<PhysicalSortExpr>) -> Result<StrataScan> {
        Ok(StrataScan::ordered(
            Arc::clone(&self.db),
            Arc::clone(&self.table),
            self.columns.clone(),
            query,
            self.reads.clone(),
            ordering,
        )?
        .with_deferred(self.deferred.clone(), self.params.clone()))
    }
}

/// Strata's plan for a scan's query, as `EXPLAIN` shows it, and what the scan tells
/// DataFusion's join planning.
#[derive(Clone)]
struct Estimate {
    chosen: String,
    statistics: Arc<Statistics>,
}

/// What a scan tells DataFusion's join planning: Strata's estimate of its rows, and each
/// column's bounds, distinct values and NULLs from the table's statistics — all inexact.
fn statistics(
    schema: &SchemaRef,
    columns: &[Column],
    stats: &strata::TableStats,
    estimated: f64,
) -> Statistics {
    let rows = estimated.max(0.0).round() as usize;
    let mut statistics = Statistics::new_unknown(schema);
    statistics.num_rows = Precision::Inexact(rows);
    for (column, out) in columns.iter().zip(statistics.column_statistics.iter_mut()) {
        let Some(c) = stats.columns.get(&column.name) else {
            continue;
        };
        if column.mixed {
            continue;
        }
        let bound = |v: &Option<strata::Value>| match v.as_ref().map(|v| (column.kind, v)) {
            Some((ColumnType::Int, strata::Value::Int(i))) => {
                Precision::Inexact(ScalarValue::Int64(Some(*i)))
            }
            Some((ColumnType::Float, strata::Value::Float(f))) if f.is_finite() => {
                Precision::Inexact(ScalarValue::Float64(Some(*f)))
            }
            Some((ColumnType::Text, strata::Value::Str(s))) => {
                Precision::Inexact(ScalarValue::Utf8(Some(s.clone())))
            }
            _ => Precision::Absent,
        };
        out.min_value = bound(&c.min);
        out.max_value = bound(&c.max);
        out.distinct_count = Precision::Inexact((c.distinct.round() as usize).min(rows.max(1)));
        out.null_count = Precision::Inexact((c.null_fraction * rows as f64).round() as usize);
    }
    statistics
}

/// Whether Strata returns rows in the order SQL's `ORDER BY column` asks for: not a float or
/// mixed column (their orders differ: NaN, -0.0, kinds), and NULLs where Strata puts them
/// (first ascending, last descending) unless the column is a primary-key field, which has
/// none.
pub fn sorts_like_sql(
    table: &TableSchema,
    column: &str,
    descending: bool,
    nulls_first: bool,
) -> bool {
    let Some(c) = table.column(column) else {
        return false;
    };
    if c.mixed || c.kind == ColumnType::Float {
        return false;
    }
    nulls_first != descending || table.primary_key.iter().any(|k| k == column)
}

impl DisplayAs for StrataScan {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.estimate() {
            Ok(estimate) => write!(
                f,
                "StrataScan: table={} plan={}",
                self.table.table, estimate.chosen
            )?,
            Err(e) => write!(f, "StrataScan: table={} plan=({e})", self.table.table)?,
        }
        let condition = self.query.condition();
        if !matches!(&condition, strata::Condition::All(cs) if cs.is_empty()) {
            write!(f, " where={condition}")?;
        }
        if let Some(order) = &self.query.order {
            let direction = if order.descending { " desc" } else { "" };
            write!(f, " order={}{direction}", order.fields.join(","))?;
        }
        if let Some(limit) = self.query.limit {
            write!(f, " limit={limit}")?;
        }
        for filter in &self.deferred {
            write!(f, " and {filter}")?;
        }
        for filter in &self.dynamic {
            write!(f, " dynamic={filter}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for StrataScan {
    fn name(&self) -> &str {
        "StrataScan"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    /// Its dynamic filters: a hash join computes its filter only when it finds it in the
    /// probe side's expressions.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        apply_expression_roots(&self.dynamic, f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "a Strata scan has no children".into(),
            ))
        }
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::clone(&self.estimate()?.statistics))
    }

    fn fetch(&self) -> Option<usize> {
        self.query.limit.map(|l| l as usize)
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        let mut query = self.query.clone();
        query.limit = match (query.limit, limit) {
            (Some(a), Some(b)) => Some(a.min(b as u64)),
            (a, b) => a.or(b.map(|b| b as u64)),
        };
        Some(Arc::new(
            self.with_query(query, self.ordering.clone()).ok()?,
        ))
    }

    /// `ORDER BY` columns Strata sorts as SQL does ([`sorts_like_sql`]), all one direction,
    /// become the query's order: Strata reads an index or primary key in that order or
    /// sorts, and DataFusion's sort goes (its `LIMIT` with it, [`ExecutionPlan::with_fetch`]).
    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> Result<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        let Some(first) = order.first() else {
            return Ok(SortOrderPushdownResult::Unsupported);
        };
        let descending = first.options.descending;
        let mut fields = Vec::new();
        for sort in order {
            let Some(column) = sort.expr.downcast_ref::<PhysicalColumn>() else {
                return Ok(SortOrderPushdownResult::Unsupported);
            };
            let Some(c) = self.columns.get(column.index()) else {
                return Ok(SortOrderPushdownResult::Unsupported);
            };
            if sort.options.descending != descending
                || !sorts_like_sql(&self.table, &c.name, descending, sort.options.nulls_first)
            {
                return Ok(SortOrderPushdownResult::Unsupported);
            }
            fields.push(c.name.clone());
        }
        if self.query.order.is_some() || self.query.limit.is_some() {
            // A limit below the sort would keep the wrong rows.
            return Ok(SortOrderPushdownResult::Unsupported);
        }
        let mut query = self.query.clone();
        query.order = Some(Order { fields, descending });
        let mut scan = self.with_query(query, order.to_vec())?;
        scan.dynamic = self.dynamic.clone();
        Ok(SortOrderPushdownResult::Exact {
            inner: Arc::new(scan),
        })
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "a Strata scan has one partition, asked for {partition}"
            )));
        }
        let schema: SchemaRef = Arc::clone(self.properties.eq_properties.schema());
        let batcher = Batcher::with_capacity(
            &self.table,
            Arc::from(self.columns.clone()),
            Arc::clone(&schema),
            self.query
                .limit
                .map_or(FIRST_BATCH, |l| (l as usize).min(FIRST_BATCH)),
        );
        let (db, table, columns, reads) = (
            Arc::clone(&self.db),
            Arc::clone(&self.table),
            self.columns.clone(),
            self.reads.clone(),
        );
        let (mut query, dynamic) = (self.bound_query()?, self.dynamic.clone());
        // Opened at the first batch asked for, not now: a hash join asks for its probe side's
        // batches once its build side is read, when its dynamic filter holds the keys.
        let open: Opener = Box::new(move || {
            for filter in &dynamic {
                let now = snapshot_physical_expr(Arc::clone(filter))?;
                let mut conditions = Vec::new();
                conditions_of_physical(&now, &columns, &table, &mut conditions);
                for c in conditions {
                    query.add_condition(c);
                }
            }
            let rows = match &reads {
                Some(reads) => reads.rows(&db, &table.table, &query),
                None => db
                    .query_owned(&table.table, &query)
                    .map(|rows| Box::new(rows) as RowSource),
            };
            rows.map_err(|e| DataFusionError::External(Box::new(e)))
        });
        let output_rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let strata_time = MetricBuilder::new(&self.metrics).subset_time(STRATA_TIME, partition);
        let batches = Batches {
            open: Some(open),
            rows: None,
            batcher,
            output_rows,
            strata_time,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(batches),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    /// A hash join's dynamic filter (its build side's keys) reaching this probe-side scan is
    /// kept and read when the scan starts ([`conditions_of_physical`]): Strata then plans the
    /// keys as primary-key or index lookups. Every filter is reported as not pushed down —
    /// its owner keeps applying it — since Strata may evaluate only part of it.
    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let filters: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let mut propagation = FilterPushdownPropagation::with_parent_pushdown_result(vec![
                PushedDown::No;
                filters.len()
            ]);
        if phase != FilterPushdownPhase::Post || filters.is_empty() {
            return Ok(propagation);
        }
        let mut scan = self.with_query(self.query.clone(), self.ordering.clone())?;
        scan.dynamic = self.dynamic.clone();
        scan.dynamic.extend(filters);
        propagation = propagation.with_updated_node(Arc::new(scan) as Arc<dyn ExecutionPlan>);
        Ok(propagation)
    }
}

/// Rows a scan's first batch is sized for (its builders grow).
const FIRST_BATCH: usize = 256;

/// The metric of the time a scan spends in Strata (planning, reading, building batches):
/// the rest of a statement's time is DataFusion's.
pub const STRATA_TIME: &str = "strata_time";

/// Opens a scan's rows.
type Opener = Box<dyn FnOnce() -> Result<RowSource> + Send>;

/// A query's rows as record batches.
struct Batches {
    /// Opens the rows at the first batch (`None` once it has).
    open: Option<Opener>,
    /// `None` before they are opened and once they have run out.
    rows: Option<RowSource>,
    batcher: Batcher,
    output_rows: Count,
    strata_time: Time,
}

impl Iterator for Batches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let _timer = self.strata_time.timer();
        if let Some(open) = self.open.take() {
            match open() {
                Ok(rows) => self.rows = Some(rows),
                Err(e) => return Some(Err(e)),
            }
        }
        let rows = self.rows.as_mut()?;
        while !self.batcher.full() {
            match rows.next_ref() {
                Ok(Some(row)) => {
                    if let Err(e) = self.batcher.add_ref(&row) {
                        self.rows = None;
                        return Some(Err(e));
                    }
                }
                Err(e) => {
                    self.rows = None;
                    return Some(Err(DataFusionError::External(Box::new(e))));
                }
                Ok(None) => {
                    self.rows = None;
                    break;
                }
            }
        }
        if self.batcher.rows() == 0 {
            return None;
        }
        self.output_rows.add(self.batcher.rows());
        Some(self.batcher.finish())
    }
}
