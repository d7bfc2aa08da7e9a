//! The fast path: a single-table `SELECT` whose `WHERE`, `ORDER BY` and `LIMIT` Strata
//! evaluates whole runs straight through Strata's planner — DataFusion parses it and builds
//! its logical plan, but neither optimises nor executes it — and [`Prepared`] statements,
//! planned once and run many times.
//!
//! The shapes taken: `SELECT <columns> FROM t [WHERE <conditions>] [ORDER BY c [ASC|DESC]]
//! [LIMIT n]`, where every conjunct of the `WHERE` converts exactly ([`crate::filter`]) and
//! the `ORDER BY` is of one column that sorts the same in Strata as in SQL: not a float or
//! mixed column, and its NULLs where Strata puts them (first ascending, last descending —
//! always so for a primary-key field, which has no NULLs). Anything else, or a parameter
//! whose type makes a conjunct not convert, runs through DataFusion, with the same result.

use std::any::Any;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::source_as_provider;
use datafusion::execution::context::SessionContext;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, FetchType, LogicalPlan, SkipType, SortExpr, TableScan};
use datafusion::optimizer::push_down_filter::PushDownFilter;
use datafusion::optimizer::{Optimizer, OptimizerContext};
use datafusion::scalar::ScalarValue;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    Statement, Value as SqlValue, ValueWithSpan, VisitMut, VisitorMut,
};
use strata::{Db, Order, Query, Value};

use crate::filter::condition_of;
use crate::scan::sorts_like_sql;
use crate::schema::{Batcher, Column, TableSchema};
use crate::session::{SqlSession, StatementSnapshot};
use crate::table::StrataTable;
use crate::values::scalar_of;
use crate::{Error, Result};

/// Rows a fast query's first batch is sized for (it grows).
const FAST_BATCH: usize = 64;

/// A single-table query Strata answers alone.
#[derive(Clone, Debug)]
pub struct FastPlan {
    table: Arc<TableSchema>,
    /// The `WHERE`'s conjuncts (with placeholders, in a prepared statement).
    filters: Vec<Expr>,
    order: Option<Order>,
    limit: Option<u64>,
    /// The table's columns the result has, in order.
    columns: Arc<[Column]>,
    /// The fields read: `None` when the result has every column.
    projection: Option<Vec<String>>,
    /// The result's schema (its names as the statement gives them).
    schema: SchemaRef,
    /// A batcher a run left, for the next (a prepared statement's buffers outlive a run).
    spare: Spare,
}

/// A [`Batcher`] kept between runs, while its buffers are small.
#[derive(Default)]
struct Spare(Mutex<Option<Batcher>>);

/// The most a spare batcher's buffers may hold.
const SPARE_BYTES: usize = 1 << 20;

impl Spare {
    fn take(&self) -> Option<Batcher> {
        // A run racing another makes its own.
        self.0.try_lock().ok()?.take()
    }

    fn keep(&self, batcher: Batcher) {
        if batcher.capacity_bytes() <= SPARE_BYTES
            && let Ok(mut spare) = self.0.try_lock()
        {
            *spare = Some(batcher);
        }
    }
}

impl Clone for Spare {
    fn clone(&self) -> Spare {
        Spare::default()
    }
}

impl std::fmt::Debug for Spare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spare")
    }
}

impl FastPlan {
    /// The fast plan of `plan`, if it has the shape.
    pub fn of(plan: &LogicalPlan) -> Option<FastPlan> {
        let schema: SchemaRef = Arc::new(plan.schema().as_arrow().clone());
        let mut node = plan;
        let mut limit = None;
        if let LogicalPlan::Limit(l) = node {
            if !matches!(l.get_skip_type().ok()?, SkipType::Literal(0)) {
                return None;
            }
            match l.get_fetch_type().ok()? {
                FetchType::Literal(n) => limit = n.map(|n| n as u64),
                FetchType::UnsupportedExpr => return None,
            }
            node = &l.input;
        }
        // `ORDER BY` a selected column sorts the projection's output …
        let mut sort: Option<&[SortExpr]> = None;
        if let LogicalPlan::Sort(s) = node {
            if s.fetch.is_some() {
                return None;
            }
            sort = Some(&s.expr);
            node = &s.input;
        }
        // The output's columns: the outermost projection's.
        let LogicalPlan::Projection(projection) = node else {
            return None;
        };
        let output: Vec<String> = projection
            .expr
            .iter()
            .map(column_name)
            .collect::<Option<_>>()?;
        node = &projection.input;
        // … one not selected sorts below it, over an inner projection that adds it.
        if sort.is_none()
            && let LogicalPlan::Sort(s) = node
        {
            if s.fetch.is_some() {
                return None;
            }
            sort = Some(&s.expr);
            node = &s.input;
            if let LogicalPlan::Projection(inner) = node {
                if inner.expr.iter().any(|e| column_name(e).is_none()) {
                    return None;
                }
                node = &inner.input;
            }
        }
        let mut filters = Vec::new();
        if let LogicalPlan::Filter(filter) = node {
            filters = split_conjunction(&filter.predicate)
                .into_iter()
                .cloned()
                .collect();
            if !filters.iter().all(plain) {
                return None;
            }
            node = &filter.input;
        }
        if let LogicalPlan::SubqueryAlias(alias) = node {
            node = &alias.input;
        }
        let LogicalPlan::TableScan(scan) = node else {
            return None;
        };
        let table = strata_table(scan)?;
        let columns: Vec<Column> = output
            .iter()
            .map(|name| table.column(name).cloned())
            .collect::<Option<_>>()?;
        let order = match sort {
            None => None,
            Some([one]) => Some(order_of(one, &table)?),
            Some(_) => return None,
        };
        let projection = if table.columns.iter().all(|c| columns.contains(c)) {
            None
        } else {
            let mut fields: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            for k in &table.primary_key {
                if !fields.contains(k) {
                    fields.push(k.clone());
                }
            }
            Some(fields)
        };
        Some(FastPlan {
            projection,
            columns: columns.into(),
            table,
            filters,
            order,
            limit,
            schema,
            spare: Spare::default(),
        })
    }

    /// Runs it with `params` for its placeholders (`$1` is `params[0]`), reading what
    /// `reads` says; `None` when a conjunct does not convert with these parameters (the
    /// statement then runs through DataFusion).
    pub fn run(
        &self,
        db: &Arc<Db>,
        reads: &StatementSnapshot,
        params: &[Value],
    ) -> Result<Option<Vec<RecordBatch>>> {
        let mut query = Query::default();
        for f in &self.filters {
            let bound = bind(f, params)?;
            let Some(condition) = condition_of(&bound, &self.table) else {
                return Ok(None);
            };
            query.add_condition(condition);
        }
        query.projection = self.projection.clone();
        query.order = self.order.clone();
        query.limit = self.limit;
        let rows = reads.rows(db, &self.table.table, &query)?;
        let expected = self
            .limit
            .map_or(FAST_BATCH, |l| (l as usize).min(FAST_BATCH));
        // Batches under the statement's names, straight away.
        let mut batcher = self.spare.take().unwrap_or_else(|| {
            Batcher::with_capacity(
                &self.table,
                Arc::clone(&self.columns),
                Arc::clone(&self.schema),
                expected,
            )
        });
        let mut batches = Vec::new();
        for row in rows {
            batcher.add(&row?)?;
            if batcher.full() {
                batches.push(batcher.finish()?);
            }
        }
        if batcher.rows() > 0 || batches.is_empty() {
            batches.push(batcher.finish()?);
        }
        self.spare.keep(batcher);
        Ok(Some(batches))
    }
}

/// Whether `expr` is built only of what [`condition_of`] may convert — columns, literals,
/// placeholders, comparisons, `AND`/`OR`/`NOT`, `BETWEEN`, `IN` lists, `IS NULL`, `LIKE` —
/// so a subquery or a function sends the statement through DataFusion from the start.
fn plain(expr: &Expr) -> bool {
    !expr
        .exists(|e| {
            Ok(!matches!(
                e,
                Expr::Column(_)
                    | Expr::Literal(..)
                    | Expr::Placeholder(_)
                    | Expr::BinaryExpr(_)
                    | Expr::Not(_)
                    | Expr::IsNull(_)
                    | Expr::IsNotNull(_)
                    | Expr::Between(_)
                    | Expr::InList(_)
                    | Expr::Like(_)
            ))
        })
        .unwrap_or(true)
}

/// The table column an output expression is, if it is one (possibly renamed).
fn column_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Column(c) => Some(c.name.clone()),
        Expr::Alias(alias) => match alias.expr.as_ref() {
            Expr::Column(c) => Some(c.name.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The columns of the Strata table a logical scan reads, if it is a plain one.
fn strata_table(scan: &TableScan) -> Option<Arc<TableSchema>> {
    if !scan.filters.is_empty() || scan.fetch.is_some() {
        return None;
    }
    let provider = source_as_provider(&scan.source).ok()?;
    let any: &dyn Any = provider.as_ref();
    Some(any.downcast_ref::<StrataTable>()?.shared_columns())
}

/// Strata's order for one `ORDER BY` term, if it sorts the same as SQL's.
fn order_of(sort: &SortExpr, table: &TableSchema) -> Option<Order> {
    let Expr::Column(c) = &sort.expr else {
        return None;
    };
    sorts_like_sql(table, &c.name, !sort.asc, sort.nulls_first).then(|| Order {
        fields: vec![c.name.clone()],
        descending: !sort.asc,
    })
}

/// `expr` with its placeholders replaced by `params`' values.
fn bind(expr: &Expr, params: &[Value]) -> Result<Expr> {
    if params.is_empty() {
        return Ok(expr.clone());
    }
    let bound = expr.clone().transform(|e| match e {
        Expr::Placeholder(p) => {
            let v = param(&p.id, params)
                .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?;
            Ok(Transformed::yes(Expr::Literal(scalar_of(v), None)))
        }
        other => Ok(Transformed::no(other)),
    })?;
    Ok(bound.data)
}

/// The value of placeholder `id` (`$1` …).
fn param<'p>(id: &str, params: &'p [Value]) -> Result<&'p Value> {
    id.strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| params.get(i))
        .ok_or_else(|| Error::Invalid(format!("no value for the parameter {id}")))
}

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
    /// its placeholders when DataFusion can (each run then binds the parameters and only
    /// pushes down the filters they complete).
    Planned(LogicalPlan, Option<LogicalPlan>),
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
                let optimized = optimized_with_placeholders(&context, &plan);
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

    /// Runs it with `params` (`$1` is `params[0]`), blocking.
    pub fn execute(&self, params: &[Value]) -> Result<Vec<RecordBatch>> {
        if let PreparedKind::Fast(fast, _) = &self.kind {
            // No runtime needed: Strata alone.
            crate::session::check_params(self.params, params)?;
            if let Some(batches) = fast.run(self.session.db(), &self.session.reads(), params)? {
                return Ok(batches);
            }
        }
        self.session.block_on(self.run(params))
    }

    /// Runs it with `params`.
    pub async fn run(&self, params: &[Value]) -> Result<Vec<RecordBatch>> {
        crate::session::check_params(self.params, params)?;
        let session = self.session;
        match &self.kind {
            PreparedKind::Fast(fast, plan) => {
                let reads = session.reads();
                if let Some(batches) = fast.run(session.db(), &reads, params)? {
                    return Ok(batches);
                }
                self.through_datafusion(plan, reads, params).await
            }
            PreparedKind::Planned(_, Some(optimized)) => {
                let context = session.statement_context(session.reads());
                let scalars: Vec<ScalarValue> = params.iter().map(scalar_of).collect();
                let bound = optimized.clone().with_param_values(scalars)?;
                // The filters the parameters completed go down into the scans (Strata
                // answers `town = 'x'`, not `town = $1`); the rest of the optimiser ran once.
                let state = context.state();
                let pushed = Optimizer::with_rules(vec![Arc::new(PushDownFilter::new())])
                    .optimize(bound, &optimizer_context(&state), |_, _| {})?;
                crate::session::run_optimized(&context, pushed).await
            }
            PreparedKind::Planned(plan, None) => {
                self.through_datafusion(plan, session.reads(), params).await
            }
            PreparedKind::Statement(statement) => {
                let mut statement = statement.clone();
                bind_statement(&mut statement, params)?;
                session.sql(&statement.to_string()).await
            }
        }
    }

    async fn through_datafusion(
        &self,
        plan: &LogicalPlan,
        reads: StatementSnapshot,
        params: &[Value],
    ) -> Result<Vec<RecordBatch>> {
        let context = self.session.statement_context(reads);
        let scalars: Vec<ScalarValue> = params.iter().map(scalar_of).collect();
        let plan = plan.clone().with_param_values(scalars)?;
        crate::session::run_plan(&context, plan).await
    }
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
