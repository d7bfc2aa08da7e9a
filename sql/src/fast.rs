//! The fast path: a single-table `SELECT` whose `WHERE`, `ORDER BY` and `LIMIT` Strata
//! evaluates whole runs straight through Strata's planner — DataFusion parses it and builds
//! its logical plan, but neither optimises nor executes it (prepared statements:
//! [`crate::prepared`]).
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
use datafusion::common::tree_node::TreeNode;
use datafusion::datasource::source_as_provider;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, FetchType, LogicalPlan, SkipType, SortExpr, TableScan};
use strata::{Db, Order, Query, Value};

use crate::filter::condition_with;
use crate::scan::sorts_like_sql;
use crate::schema::{Batcher, Column, TableSchema};
use crate::session::StatementSnapshot;
use crate::table::StrataTable;
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
            let Some(condition) = condition_with(f, &self.table, params) else {
                return Ok(None);
            };
            query.add_condition(condition);
        }
        query.projection = self.projection.clone();
        query.order = self.order.clone();
        query.limit = self.limit;
        let mut rows = reads.rows(db, &self.table.table, &query)?;
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
        rows.for_each_ref(&mut |row| {
            batcher.add_ref(row).map_err(engine_error)?;
            if batcher.full() {
                batches.push(batcher.finish()?);
            }
            Ok(())
        })?;
        if batcher.rows() > 0 || batches.is_empty() {
            batches.push(batcher.finish()?);
        }
        self.spare.keep(batcher);
        Ok(Some(batches))
    }
}

/// `e`, or the engine's own error it wraps (a damaged stored value a lent row read), so the
/// fast path reports it as a run through the engine would.
fn engine_error(e: DataFusionError) -> Error {
    match e {
        DataFusionError::External(inner) => match inner.downcast::<strata::Error>() {
            Ok(engine) => Error::Strata(*engine),
            Err(other) => Error::Sql(DataFusionError::External(other)),
        },
        e => Error::Sql(e),
    }
}

/// Whether `expr` is built only of what [`condition_of`](crate::filter::condition_of) may convert — columns, literals,
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
