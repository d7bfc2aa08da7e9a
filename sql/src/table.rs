//! [`StrataTable`]: one Strata table as a DataFusion `TableProvider`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use strata::{Db, Query, Value};

use crate::filter::{condition_of, condition_with, has_placeholders};
use crate::scan::StrataScan;
use crate::schema::TableSchema;
use crate::session::{StatementParams, StatementSnapshot};

/// A Strata table as a DataFusion table. Filters Strata evaluates exactly
/// ([`crate::filter`]) are pushed down, with the columns read and the `LIMIT`; Strata's
/// planner chooses the access path for them when the scan runs.
pub struct StrataTable {
    db: Arc<Db>,
    schema: Arc<TableSchema>,
    arrow: SchemaRef,
}

impl std::fmt::Debug for StrataTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrataTable")
            .field("columns", &self.schema)
            .finish()
    }
}

impl StrataTable {
    /// `table` of `db`, its columns inferred from its rows and statistics
    /// ([`crate::schema`]).
    pub fn new(db: Arc<Db>, table: &str) -> strata::Result<StrataTable> {
        let schema = TableSchema::infer(&db, table)?;
        let arrow = schema.arrow();
        Ok(StrataTable {
            db,
            schema: Arc::new(schema),
            arrow,
        })
    }

    /// Its columns.
    pub fn columns(&self) -> &TableSchema {
        &self.schema
    }

    /// Its columns, shared.
    pub(crate) fn shared_columns(&self) -> Arc<TableSchema> {
        Arc::clone(&self.schema)
    }

    /// The Strata query of the filters DataFusion pushed down to a scan of it, `params` the
    /// values of their placeholders.
    fn query_of(&self, filters: &[Expr], params: &[Value]) -> Result<Query> {
        let mut query = Query::default();
        for f in filters {
            // DataFusion passes only the filters this table said it answers exactly; one
            // that does not convert would be a DataFusion change — refuse rather than
            // return rows it does not hold.
            let condition = condition_with(f, &self.schema, params).ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "a filter Strata cannot answer reached its scan: {f}"
                ))
            })?;
            query.add_condition(condition);
        }
        Ok(query)
    }

    /// The rows Strata expects a scan with `filters` and `limit` to return, `params` the
    /// values of their placeholders.
    pub(crate) fn estimated_rows(
        &self,
        filters: &[Expr],
        limit: Option<usize>,
        params: &[Value],
    ) -> Result<f64> {
        let mut query = self.query_of(filters, params)?;
        query.limit = limit.map(|l| l as u64);
        let plan = self
            .db
            .explain(&self.schema.table, &query)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(plan.chosen.estimated_rows)
    }
}

#[async_trait]
impl TableProvider for StrataTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.arrow)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match condition_of(f, &self.schema) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns = match projection {
            Some(indexes) => indexes
                .iter()
                .map(|&i| {
                    self.schema.columns.get(i).cloned().ok_or_else(|| {
                        DataFusionError::Internal(format!("no column {i} in {}", self.schema.table))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            None => self.schema.columns.clone(),
        };
        // A prepared statement's conjuncts with placeholders wait for each run's values.
        let (deferred, now): (Vec<Expr>, Vec<Expr>) =
            filters.iter().cloned().partition(has_placeholders);
        let mut query = self.query_of(&now, &[])?;
        if projection.is_some() {
            // The key too, so an error about a row can name it.
            let mut fields: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
            for k in &self.schema.primary_key {
                if !fields.contains(k) {
                    fields.push(k.clone());
                }
            }
            query.projection = Some(fields);
        }
        query.limit = limit.map(|l| l as u64);
        // The statement's snapshot when a `SqlSession` planned it; else the scan's own,
        // taken when it runs.
        let reads = state.config().get_extension::<StatementSnapshot>();
        let scan = StrataScan::new(
            Arc::clone(&self.db),
            Arc::clone(&self.schema),
            columns,
            query,
            reads.map(|r| r.as_ref().clone()),
        )?
        .with_deferred(deferred, state.config().get_extension::<StatementParams>());
        Ok(Arc::new(scan))
    }
}
