//! The execution plan of a Strata table's scan: a Strata query (the conditions DataFusion
//! pushed down, the columns it reads, its `LIMIT`), planned by Strata when it runs, read at
//! the statement's snapshot or through its transaction when it has one
//! (`crate::session::StatementSnapshot`), its rows
//! streamed as record batches of [`crate::schema::BATCH_ROWS`] rows.
//!
//! `EXPLAIN` shows the query and the plan Strata chose for it when the scan was planned
//! (`StrataScan: table=… plan=index by_town rows≈… where=…`).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PhysicalExpr, PlanProperties,
    SendableRecordBatchStream,
};
use strata::{Db, Query, Record};

use crate::schema::{BATCH_ROWS, Batcher, Column, TableSchema};
use crate::session::StatementSnapshot;

/// Scans one Strata table.
pub struct StrataScan {
    db: Arc<Db>,
    table: Arc<TableSchema>,
    columns: Vec<Column>,
    query: Query,
    /// What the statement reads (a snapshot or a transaction), if it says.
    reads: Option<StatementSnapshot>,
    /// Strata's plan when the scan was planned, for `EXPLAIN`.
    chosen: String,
    properties: Arc<PlanProperties>,
}

impl std::fmt::Debug for StrataScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrataScan")
            .field("table", &self.table.table)
            .field("query", &self.query)
            .field("plan", &self.chosen)
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
        let plan = db
            .explain(&table.table, &query)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let chosen = match &plan.chosen.index {
            Some(index) => format!("index {index}"),
            None => plan.chosen.plan.replace('_', " "),
        };
        let chosen = format!(
            "{chosen} rows≈{}",
            strata::RowCount(plan.chosen.estimated_rows)
        );
        let schema = Batcher::new(&table, columns.clone()).schema();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
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
            chosen,
            properties,
        })
    }

    /// The Strata query it runs.
    pub fn query(&self) -> &Query {
        &self.query
    }
}

impl DisplayAs for StrataScan {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "StrataScan: table={} plan={}",
            self.table.table, self.chosen
        )?;
        let condition = self.query.condition();
        if !matches!(&condition, strata::Condition::All(cs) if cs.is_empty()) {
            write!(f, " where={condition}")?;
        }
        if let Some(limit) = self.query.limit {
            write!(f, " limit={limit}")?;
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

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
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
        let rows: Box<dyn Iterator<Item = strata::Result<Record>> + Send> = match &self.reads {
            Some(reads) => reads.rows(&self.db, &self.table.table, &self.query),
            None => self
                .db
                .query_owned(&self.table.table, &self.query)
                .map(|rows| Box::new(rows) as Box<dyn Iterator<Item = _> + Send>),
        }
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let batcher = Batcher::new(&self.table, self.columns.clone());
        let schema: SchemaRef = batcher.schema();
        let batches = Batches {
            rows: Some(rows),
            batcher,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(batches),
        )))
    }
}

/// A query's rows as record batches.
struct Batches {
    /// `None` once they have run out.
    rows: Option<Box<dyn Iterator<Item = strata::Result<Record>> + Send>>,
    batcher: Batcher,
}

impl Iterator for Batches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let rows = self.rows.as_mut()?;
        while self.batcher.rows() < BATCH_ROWS {
            match rows.next() {
                Some(Ok(record)) => {
                    if let Err(e) = self.batcher.add(&record) {
                        self.rows = None;
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => {
                    self.rows = None;
                    return Some(Err(DataFusionError::External(Box::new(e))));
                }
                None => {
                    self.rows = None;
                    break;
                }
            }
        }
        if self.batcher.rows() == 0 {
            return None;
        }
        Some(self.batcher.finish())
    }
}
