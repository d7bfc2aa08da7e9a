//! [`Prepared`] statements: planned once, run many times with parameters `$1`, `$2`, …
//!
//! A single-table `SELECT` Strata evaluates whole runs through the fast path
//! ([`crate::fast`]). Anything else through DataFusion is optimised once with its
//! placeholders; the conjuncts with placeholders right above a Strata scan move into it, and
//! the physical plan made at the first run is kept and renewed for each run when it can run
//! again (`Cached`). Other statements (DML) have their values written in and run as new.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
use datafusion::execution::TaskContext;
use datafusion::execution::context::SessionContext;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{Expr, Filter, LogicalPlan};
use datafusion::optimizer::push_down_filter::PushDownFilter;
use datafusion::optimizer::{Optimizer, OptimizerContext};
use datafusion::physical_expr::expressions::{DynamicFilterPhysicalExpr, lit};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::filter_pushdown::FilterPushdown;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::scalar_subquery::ScalarSubqueryExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::scalar::ScalarValue;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Statement, Value as SqlValue, ValueWithSpan, VisitMut, VisitorMut,
};
use strata::Value;

use crate::fast::FastPlan;
use crate::filter::{condition_with, converts_with_placeholders, has_placeholders};
use crate::scan::StrataScan;
use crate::schema::TableSchema;
use crate::session::{SqlSession, StatementParams, StatementSnapshot};
use crate::table::StrataTable;
use crate::values::{param, scalar_of};
use crate::{Error, Result};

/// A statement planned once, to run many times with parameters `$1`, `$2`, …
/// ([`SqlSession::prepare`]).
pub struct Prepared<'s> {
    session: &'s SqlSession,
    kind: PreparedKind,
    /// How many parameters it takes.
    params: usize,
}

enum PreparedKind {
    /// A query Strata answers alone; its logical plan for when a parameter's type sends it
    /// through DataFusion.
    Fast(Box<FastPlan>, LogicalPlan),
    /// A query through DataFusion: its logical plan made once, and the same optimised with
    /// its placeholders when DataFusion can.
    Planned(LogicalPlan, Option<Box<Optimized>>),
    /// Any other statement: its parameters are written into it and it runs as a new one.
    Statement(Box<Statement>),
}

impl<'s> Prepared<'s> {
    pub(crate) async fn new(session: &'s SqlSession, text: &str) -> Result<Prepared<'s>> {
        let mut statements = DFParser::parse_sql(text)?;
        let (Some(statement), None) = (statements.pop_front(), statements.pop_front()) else {
            return Err(Error::Invalid("prepare one statement".into()));
        };
        if let DFStatement::Statement(s) = &statement
            && !matches!(s.as_ref(), Statement::Query(_) | Statement::Explain { .. })
        {
            let params = placeholders_in(s)?;
            return Ok(Prepared {
                session,
                kind: PreparedKind::Statement(s.clone()),
                params,
            });
        }
        let context = session.statement_context(session.reads());
        let plan = context.state().statement_to_plan(statement).await?;
        let params = plan.get_parameter_types()?.len();
        let kind = match FastPlan::of(&plan) {
            Some(fast) => PreparedKind::Fast(Box::new(fast), plan),
            None => {
                let optimized = optimized_with_placeholders(&context, &plan)
                    .and_then(|optimized| placeholders_into_scans(optimized).ok())
                    .map(|optimized| {
                        Box::new(Optimized {
                            deferred: deferred_of(&optimized),
                            plan: optimized,
                            physical: Mutex::new(Physical::Untried),
                        })
                    });
                PreparedKind::Planned(plan, optimized)
            }
        };
        Ok(Prepared {
            session,
            kind,
            params,
        })
    }

    /// How many parameters it takes.
    pub fn params(&self) -> usize {
        self.params
    }

    /// Whether it runs through Strata alone (when its parameters' types allow).
    pub fn is_fast(&self) -> bool {
        matches!(self.kind, PreparedKind::Fast(..))
    }

    /// Whether its physical plan was kept from its first run through DataFusion, to run again
    /// with each run's values and snapshot (false before the first run, for the fast path,
    /// and for plans that cannot run twice).
    pub fn reuses_plan(&self) -> bool {
        match &self.kind {
            PreparedKind::Planned(_, Some(optimized)) => matches!(
                *optimized.physical.lock().unwrap_or_else(|e| e.into_inner()),
                Physical::Cached(_)
            ),
            _ => false,
        }
    }

    /// Runs it with `params` (`$1` is `params[0]`), blocking.
    pub fn execute(&self, params: &[Value]) -> Result<Vec<RecordBatch>> {
        self.execute_with_plan(params).map(|(batches, _)| batches)
    }

    /// [`Prepared::execute`], with the physical plan the run ran through DataFusion and that
    /// run's metrics (each Strata scan's rows and `strata_time`, each operator's own): what
    /// `EXPLAIN ANALYZE` would show of that run, without running it again. A query, an
    /// `EXPLAIN` and a `COPY … TO` have one; `None` for a run of the fast path and for every
    /// other statement (DDL, DML, `ANALYZE`, transactions, `SET`/`RESET`, `SHOW`,
    /// `DESCRIBE`). The plan holds the run's snapshot (its rows' versions stay readable) for
    /// as long as it is kept.
    pub fn execute_with_plan(&self, params: &[Value]) -> Result<(Vec<RecordBatch>, RunPlan)> {
        if let PreparedKind::Fast(fast, _) = &self.kind {
            // No runtime needed: Strata alone.
            crate::session::check_params(self.params, params)?;
            if let Some(batches) = fast.run(self.session.db(), &self.session.reads(), params)? {
                return Ok((batches, None));
            }
        }
        self.session.block_on(self.run_with_plan(params))
    }

    /// Runs it with `params`.
    pub async fn run(&self, params: &[Value]) -> Result<Vec<RecordBatch>> {
        self.run_with_plan(params).await.map(|(batches, _)| batches)
    }

    /// [`Prepared::run`], with the physical plan of a run through DataFusion
    /// ([`Prepared::execute_with_plan`]).
    pub async fn run_with_plan(&self, params: &[Value]) -> Result<(Vec<RecordBatch>, RunPlan)> {
        crate::session::check_params(self.params, params)?;
        let session = self.session;
        match &self.kind {
            PreparedKind::Fast(fast, plan) => {
                let reads = session.reads();
                if let Some(batches) = fast.run(session.db(), &reads, params)? {
                    return Ok((batches, None));
                }
                self.through_datafusion(plan, reads, params).await
            }
            PreparedKind::Planned(plan, Some(optimized)) => {
                let reads = session.reads();
                if !optimized.converts(params) {
                    return self.through_datafusion(plan, reads, params).await;
                }
                if let Some(cached) = optimized.cached(session, &reads, params).await {
                    let physical = cached.for_run(reads, params)?;
                    let task = Arc::clone(&cached.task);
                    let batches =
                        datafusion::physical_plan::collect(Arc::clone(&physical), task).await?;
                    return Ok((batches, Some(physical)));
                }
                let context = session.statement_context(reads);
                let scalars: Vec<ScalarValue> = params.iter().map(scalar_of).collect();
                let bound = optimized.plan.clone().with_param_values(scalars)?;
                // The filters the parameters completed go down into the scans (Strata
                // answers `town = 'x'`, not `town = $1`); the rest of the optimiser ran once.
                let state = context.state();
                let pushed = Optimizer::with_rules(vec![Arc::new(PushDownFilter::new())])
                    .optimize(bound, &optimizer_context(&state), |_, _| {})?;
                let (batches, physical) =
                    crate::session::run_optimized_plan(&context, pushed).await?;
                Ok((batches, Some(physical)))
            }
            PreparedKind::Planned(plan, None) => {
                self.through_datafusion(plan, session.reads(), params).await
            }
            PreparedKind::Statement(statement) => {
                let mut statement = statement.clone();
                bind_statement(&mut statement, params)?;
                Ok((session.sql(&statement.to_string()).await?, None))
            }
        }
    }

    async fn through_datafusion(
        &self,
        plan: &LogicalPlan,
        reads: StatementSnapshot,
        params: &[Value],
    ) -> Result<(Vec<RecordBatch>, RunPlan)> {
        let context = self.session.statement_context(reads);
        let scalars: Vec<ScalarValue> = params.iter().map(scalar_of).collect();
        let plan = plan.clone().with_param_values(scalars)?;
        let (batches, physical) = crate::session::run_plan_with_plan(&context, plan).await?;
        Ok((batches, physical))
    }
}

/// The physical plan a prepared statement's run ran through DataFusion, with that run's
/// metrics ([`Prepared::execute_with_plan`]); `None` when the run did not go through it.
pub type RunPlan = Option<Arc<dyn ExecutionPlan>>;

/// A prepared statement's plan optimised with its placeholders, and the physical plan made
/// from it at the first run, kept when it can run again.
struct Optimized {
    plan: LogicalPlan,
    /// The conjuncts with placeholders its Strata scans took, with their tables: a run whose
    /// values make one not convert is planned again with them as literals.
    deferred: Vec<(Arc<TableSchema>, Vec<Expr>)>,
    physical: Mutex<Physical>,
}

enum Physical {
    /// Not made yet.
    Untried,
    Cached(Arc<Cached>),
    /// Its physical plan cannot run twice, or has placeholders where Strata does not take
    /// them: each run binds the values and plans.
    Planned,
}

/// A physical plan made once and run many times. Each run gets fresh scans reading the
/// run's snapshot with its values bound, every other node reset (a hash join's table, a
/// sort's), and a new dynamic filter for each hash join and sort, linked to the scans the
/// old one reached ([`Cached::for_run`]). Kept only for plans whose every leaf is a
/// Strata scan (or no table at all), whose only dynamic filters are hash joins' and sorts'
/// and that has no scalar subquery ([`reusable`]): a file scan or an aggregate keeps the
/// filter of the run before, and a scalar subquery's copies share one slot for its value.
struct Cached {
    plan: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
    config: Arc<ConfigOptions>,
}

impl Optimized {
    /// Whether `params` make every deferred conjunct convert.
    fn converts(&self, params: &[Value]) -> bool {
        self.deferred.iter().all(|(table, filters)| {
            filters
                .iter()
                .all(|f| condition_with(f, table, params).is_some())
        })
    }

    /// The cached physical plan, made now if this is the first run (its estimates — the
    /// partitions, the join's build side — from this run's values).
    async fn cached(
        &self,
        session: &SqlSession,
        reads: &StatementSnapshot,
        params: &[Value],
    ) -> Option<Arc<Cached>> {
        match &*self.physical.lock().unwrap_or_else(|e| e.into_inner()) {
            Physical::Cached(cached) => return Some(Arc::clone(cached)),
            Physical::Planned => return None,
            Physical::Untried => {}
        }
        let context = session.statement_context(reads.clone());
        context
            .state_ref()
            .write()
            .config_mut()
            .set_extension(Arc::new(StatementParams(params.to_vec())));
        let made = crate::session::physical_plan(&context, &self.plan, params)
            .await
            .ok()
            .filter(|(plan, _)| reusable(plan))
            .and_then(|(plan, state)| Cached::keep(session, plan, &state).ok())
            .map(Arc::new);
        *self.physical.lock().unwrap_or_else(|e| e.into_inner()) = match &made {
            Some(cached) => Physical::Cached(Arc::clone(cached)),
            None => Physical::Planned,
        };
        made
    }
}

impl Cached {
    /// `plan`, made in `state`, kept: its scans and its task's configuration hold no
    /// snapshot of the run that made it (each run brings its own).
    fn keep(
        session: &SqlSession,
        plan: Arc<dyn ExecutionPlan>,
        state: &SessionState,
    ) -> Result<Cached> {
        let plan = plan
            .transform_up(|node| {
                Ok(match node.downcast_ref::<StrataScan>() {
                    Some(scan) => {
                        Transformed::yes(Arc::new(scan.for_keeping()) as Arc<dyn ExecutionPlan>)
                    }
                    None => Transformed::no(node),
                })
            })?
            .data;
        // The session's own state (no statement's snapshot), with the plan's partitions.
        let mut base = session.context().state();
        base.config_mut().options_mut().execution.target_partitions =
            state.config().target_partitions();
        Ok(Cached {
            plan,
            task: base.task_ctx(),
            config: Arc::clone(state.config_options()),
        })
    }

    /// The plan for one run reading `reads` with `params`: renewed with each producer's new
    /// dynamic filter handed straight to the scans its old one reached ([`Cached::renewed`]),
    /// or, where that cannot be done, reset and linked by DataFusion's filter pushdown again —
    /// which also recomputes the properties of every node above a scan (a fifth of a small
    /// join's instructions).
    fn for_run(
        &self,
        reads: StatementSnapshot,
        params: &[Value],
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let params = Arc::new(StatementParams(params.to_vec()));
        if let Some(plan) = self.renewed(&reads, &params)? {
            return Ok(plan);
        }
        let fresh = Arc::clone(&self.plan)
            .transform_up(|node| {
                let fresh = match node.downcast_ref::<StrataScan>() {
                    Some(scan) => Arc::new(scan.for_run(reads.clone(), Arc::clone(&params))),
                    None => node.reset_state()?,
                };
                Ok(Transformed::yes(fresh))
            })?
            .data;
        Ok(FilterPushdown::new_post_optimization().optimize(fresh, &self.config)?)
    }

    /// The plan for one run with every node reset and every dynamic filter made anew: one new
    /// filter for each a hash join or sort produces, put in the producer and, with each scan's
    /// columns, in every scan the old one reached — what the filter pushdown would link, since
    /// the kept plan's links are the pushdown's own. `None` when a scan holds a filter no
    /// hash join or sort of the plan produced, or a producer is of another kind.
    fn renewed(
        &self,
        reads: &StatementSnapshot,
        params: &Arc<StatementParams>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let mut renewed: HashMap<u64, Arc<DynamicFilterPhysicalExpr>> = HashMap::new();
        let mut known = true;
        self.plan.apply(|node| {
            let produced = node.dynamic_expressions_produced();
            // One filter a node, which the walk below puts back in it.
            known &= produced.len() <= 1;
            for old in produced {
                // The columns the producer makes its filter over, as DataFusion does: the
                // join's probe-side keys, the sort's expressions.
                let columns: Vec<_> = if let Some(join) = node.downcast_ref::<HashJoinExec>() {
                    join.on()
                        .iter()
                        .map(|(_, probe)| Arc::clone(probe))
                        .collect()
                } else if let Some(sort) = node.downcast_ref::<SortExec>() {
                    sort.expr().iter().map(|e| Arc::clone(&e.expr)).collect()
                } else {
                    known = false;
                    continue;
                };
                let Some(id) = old.expression_id() else {
                    known = false;
                    continue;
                };
                renewed.insert(
                    id,
                    Arc::new(DynamicFilterPhysicalExpr::new(columns, lit(true))),
                );
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        if !known {
            return Ok(None);
        }
        let mut linked = true;
        let plan = Arc::clone(&self.plan)
            .transform_up(|node| {
                if let Some(scan) = node.downcast_ref::<StrataScan>() {
                    let fresh = scan.for_run_renewed(reads.clone(), Arc::clone(params), &renewed);
                    linked &= fresh.is_some();
                    let fresh =
                        fresh.unwrap_or_else(|| scan.for_run(reads.clone(), Arc::clone(params)));
                    return Ok(Transformed::yes(Arc::new(fresh) as Arc<dyn ExecutionPlan>));
                }
                let new = node
                    .dynamic_expressions_produced()
                    .first()
                    .and_then(|old| old.expression_id())
                    .and_then(|id| renewed.get(&id))
                    .cloned();
                let reset = Arc::clone(&node).reset_state()?;
                let fresh: Arc<dyn ExecutionPlan> = match new {
                    None => reset,
                    Some(new) => {
                        if let Some(join) = reset.downcast_ref::<HashJoinExec>() {
                            Arc::new(join.builder().build()?.with_dynamic_filter_expr(new)?)
                        } else if let Some(sort) = reset.downcast_ref::<SortExec>() {
                            Arc::new(sort.clone().with_dynamic_filter_expr(new)?)
                        } else {
                            linked = false;
                            reset
                        }
                    }
                };
                Ok(Transformed::yes(fresh))
            })?
            .data;
        Ok(linked.then_some(plan))
    }
}

/// Whether a physical plan may run again after [`Cached::for_run`] renews it.
fn reusable(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut reusable = true;
    let _ = plan.apply(|node| {
        let leaf = node.children().is_empty();
        let fresh_leaf =
            node.is::<StrataScan>() || node.is::<EmptyExec>() || node.is::<PlaceholderRowExec>();
        let resets_filters = node.dynamic_expressions_produced().is_empty()
            || node.is::<HashJoinExec>()
            || node.is::<SortExec>();
        // A scalar subquery's reset empties and reuses one slot for its value, which every
        // run's copy shares: two runs at once would read each other's.
        let shares_state = node.is::<ScalarSubqueryExec>();
        reusable = (!leaf || fresh_leaf) && resets_filters && !shares_state;
        Ok(match reusable {
            true => TreeNodeRecursion::Continue,
            false => TreeNodeRecursion::Stop,
        })
    });
    reusable
}

/// `plan` with the conjuncts with placeholders of each filter right above a Strata table's
/// scan moved into the scan, where they convert for values of their types
/// ([`converts_with_placeholders`]): the scan binds them to each run's values. Done here, for
/// a prepared statement's plan alone, and not by the table's answer to DataFusion's filter
/// pushdown: DataFusion's own `PREPARE` re-optimises a plan once its values are in, and
/// simplifies `flag = true` to `flag`, which Strata does not take.
fn placeholders_into_scans(plan: LogicalPlan) -> Result<LogicalPlan> {
    let moved = plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Filter(filter) = &node else {
            return Ok(Transformed::no(node));
        };
        let LogicalPlan::TableScan(scan) = filter.input.as_ref() else {
            return Ok(Transformed::no(node));
        };
        let Some(table) = source_as_provider(&scan.source).ok().and_then(|p| {
            (p.as_ref() as &dyn Any)
                .downcast_ref::<StrataTable>()
                .map(StrataTable::shared_columns)
        }) else {
            return Ok(Transformed::no(node));
        };
        let (taken, kept): (Vec<Expr>, Vec<Expr>) = split_conjunction(&filter.predicate)
            .into_iter()
            .cloned()
            .partition(|c| has_placeholders(c) && converts_with_placeholders(c, &table));
        if taken.is_empty() {
            return Ok(Transformed::no(node));
        }
        let mut scan = scan.clone();
        scan.filters.extend(taken);
        let scan = LogicalPlan::TableScan(scan);
        Ok(Transformed::yes(match conjunction(kept) {
            Some(predicate) => LogicalPlan::Filter(Filter::try_new(predicate, Arc::new(scan))?),
            None => scan,
        }))
    })?;
    Ok(moved.data)
}

/// The conjuncts with placeholders the Strata scans of `plan` took, with their tables.
fn deferred_of(plan: &LogicalPlan) -> Vec<(Arc<TableSchema>, Vec<Expr>)> {
    let mut deferred = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && let Ok(provider) = source_as_provider(&scan.source)
            && let Some(table) = (provider.as_ref() as &dyn Any).downcast_ref::<StrataTable>()
        {
            let filters: Vec<Expr> = scan
                .filters
                .iter()
                .filter(|f| has_placeholders(f))
                .cloned()
                .collect();
            if !filters.is_empty() {
                deferred.push((table.shared_columns(), filters));
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    deferred
}

/// `plan` analysed and optimised with its placeholders, as DataFusion's own `PREPARE` does
/// (functions of the statement's time, such as `now()`, left to each run); `None` for what
/// is not a plain query, or when DataFusion cannot.
fn optimized_with_placeholders(
    context: &SessionContext,
    plan: &LogicalPlan,
) -> Option<LogicalPlan> {
    if matches!(
        plan,
        LogicalPlan::Explain(_)
            | LogicalPlan::Analyze(_)
            | LogicalPlan::Ddl(_)
            | LogicalPlan::Dml(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Copy(_)
            | LogicalPlan::DescribeTable(_)
    ) {
        return None;
    }
    let state = context.state();
    let analyzed = state
        .analyzer()
        .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
        .ok()?;
    state
        .optimizer()
        .optimize(analyzed, &optimizer_context(&state), |_, _| {})
        .ok()
}

/// The optimiser's context for a prepared statement: the session's options, no fixed time.
fn optimizer_context(state: &SessionState) -> OptimizerContext {
    OptimizerContext::new_with_config_options(Arc::clone(state.config_options()))
        .without_query_execution_start_time()
}

/// The placeholders (`$1` …) of a statement: the highest number.
fn placeholders_in(statement: &Statement) -> Result<usize> {
    struct Count(usize, Option<String>);
    impl VisitorMut for Count {
        type Break = ();
        fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> std::ops::ControlFlow<()> {
            if let SqlValue::Placeholder(p) = &value.value {
                match p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) if n >= 1 => self.0 = self.0.max(n),
                    _ => self.1 = Some(p.clone()),
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut count = Count(0, None);
    let _ = statement.clone().visit(&mut count);
    match count.1 {
        Some(bad) => Err(Error::Invalid(format!(
            "the parameter {bad}: parameters are $1, $2, …"
        ))),
        None => Ok(count.0),
    }
}

/// Writes `params` into `statement`'s placeholders as literals.
fn bind_statement(statement: &mut Statement, params: &[Value]) -> Result<()> {
    struct Bind<'p>(&'p [Value], Option<Error>);
    impl VisitorMut for Bind<'_> {
        type Break = ();
        fn pre_visit_value(&mut self, value: &mut ValueWithSpan) -> std::ops::ControlFlow<()> {
            if let SqlValue::Placeholder(p) = &value.value {
                match param(p, self.0) {
                    Ok(v) => value.value = sql_value(v),
                    Err(e) => {
                        self.1 = Some(e);
                        return std::ops::ControlFlow::Break(());
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut bind = Bind(params, None);
    let _ = statement.visit(&mut bind);
    match bind.1 {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `v` as a SQL literal.
fn sql_value(v: &Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Boolean(*b),
        Value::Int(i) => SqlValue::Number(i.to_string(), false),
        Value::Float(f) if f.is_finite() => SqlValue::Number(format!("{f:?}"), false),
        Value::Float(f) => SqlValue::SingleQuotedString(f.to_string()),
        Value::Str(s) => SqlValue::SingleQuotedString(s.clone()),
        Value::Bytes(b) => {
            SqlValue::HexStringLiteral(b.iter().map(|x| format!("{x:02x}")).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::displayable;
    use strata::{Db, Options};

    use super::*;

    /// Each run of a kept join plan links a new dynamic filter from its hash join to its probe
    /// scan, holding that run's keys — not none (the reset alone drops the join's filter, and
    /// the probe side would be read whole) and not the kept plan's beside it — without
    /// running DataFusion's filter pushdown again.
    #[test]
    fn each_run_of_a_kept_join_gives_its_probe_scan_that_runs_keys() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
        let session = SqlSession::new(Arc::clone(&db)).unwrap();
        session
            .execute("CREATE TABLE people (id BIGINT PRIMARY KEY, town VARCHAR)")
            .unwrap();
        session
            .execute("CREATE TABLE visits (id BIGINT PRIMARY KEY, person BIGINT)")
            .unwrap();
        let people: Vec<String> = (0..100).map(|i| format!("({i}, 'T{}')", i % 7)).collect();
        let visits: Vec<String> = (0..300).map(|i| format!("({i}, {})", i % 100)).collect();
        session
            .execute(&format!("INSERT INTO people VALUES {}", people.join(", ")))
            .unwrap();
        session
            .execute(&format!("INSERT INTO visits VALUES {}", visits.join(", ")))
            .unwrap();
        session
            .execute("CREATE INDEX by_person ON visits (person)")
            .unwrap();
        let join = session
            .prepare(
                "SELECT p.id, v.id FROM people p JOIN visits v ON v.person = p.id \
                 WHERE p.town = $1 AND p.id < $2",
            )
            .unwrap();
        join.execute(&[Value::from("T1"), Value::Int(20)]).unwrap();
        let PreparedKind::Planned(_, Some(optimized)) = &join.kind else {
            panic!("not planned through DataFusion");
        };
        let Physical::Cached(cached) = &*optimized.physical.lock().unwrap() else {
            panic!("the plan was not kept");
        };
        // The kept plan holds no run's snapshot.
        let mut scans = 0;
        cached
            .plan
            .apply(|node| {
                if let Some(scan) = node.downcast_ref::<StrataScan>() {
                    assert!(!scan.holds_reads());
                    scans += 1;
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .unwrap();
        assert_eq!(scans, 2);
        assert!(
            cached
                .task
                .session_config()
                .get_extension::<StatementSnapshot>()
                .is_none()
        );
        let params = [Value::from("T4"), Value::Int(30)];
        // Linked straight, not by DataFusion's filter pushdown run again.
        let bound = Arc::new(StatementParams(params.to_vec()));
        assert!(cached.renewed(&session.reads(), &bound).unwrap().is_some());
        let run = cached.for_run(session.reads(), &params).unwrap();
        let batches = session
            .block_on(async {
                Ok(
                    datafusion::physical_plan::collect(Arc::clone(&run), Arc::clone(&cached.task))
                        .await?,
                )
            })
            .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 12);
        let shown = displayable(run.as_ref()).indent(true).to_string();
        assert_eq!(shown.matches("dynamic=").count(), 1, "{shown}");
        assert!(shown.contains("IN (SET) ([4, 11, 18, 25])"), "{shown}");
    }
}
