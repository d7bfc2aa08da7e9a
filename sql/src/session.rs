//! [`SqlSession`]: a DataFusion session over one Strata database, ready to run SQL — queries,
//! DDL, DML and transactions.
//!
//! Statements Strata answers itself: `CREATE TABLE`, `CREATE [UNIQUE] INDEX`, `DROP TABLE`,
//! `DROP INDEX`, `ANALYZE` ([`crate::ddl`]); `INSERT`, `INSERT OR REPLACE`, `UPDATE`,
//! `DELETE` ([`crate::dml`]); `BEGIN`, `COMMIT`, `ROLLBACK`. Everything else goes to
//! DataFusion, over Strata's tables; a single-table `SELECT` Strata evaluates whole takes the
//! fast path ([`crate::fast`]).
//!
//! Outside a transaction each statement reads one snapshot of the database and a DML
//! statement is its own transaction. Inside one (`BEGIN` … `COMMIT`), statements read the
//! transaction's snapshot with its own writes, and `COMMIT` fails with a retryable error
//! ([`Error::is_retryable`]) when another commit since `BEGIN` wrote what it read or wrote.
//! A statement that fails inside a transaction rolls the whole transaction back (the error
//! says so): Strata's transactions have no savepoints to undo one statement's writes.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::parser::{DFParser, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::Statement;
use strata::{Db, DbSnapshot, OwnedTransaction, RowRef, Value};

use crate::catalog::{SCHEMA, StrataCatalog};
use crate::fast::FastPlan;
use crate::limit::LimitIntoStrataScan;
use crate::prepared::Prepared;
use crate::table::StrataTable;
use crate::{Error, Result, ddl, dml};

/// The catalog's name in the session.
pub const CATALOG: &str = "strata";

/// The most rows Strata may expect a statement's scans to return, together, for DataFusion
/// to run it on one partition. Below it, the work a second core would take over costs less
/// than splitting it does (hash repartitioning, a second task, merging): a `GROUP BY` over
/// an index's thousand rows ran in 0.66× the time on one partition (`docs/benchmarks.md`).
pub const SMALL_STATEMENT_ROWS: f64 = 20_000.0;

/// Runs a logical plan through DataFusion: optimised, made physical — on one partition when
/// every table it reads is a Strata table whose scan Strata expects to return few rows
/// ([`SMALL_STATEMENT_ROWS`]) — and executed.
pub(crate) async fn run_plan(
    context: &SessionContext,
    plan: LogicalPlan,
) -> Result<Vec<RecordBatch>> {
    Ok(run_plan_with_plan(context, plan).await?.0)
}

/// [`run_plan`], with the physical plan it ran (and its metrics), if it made one (not for
/// DDL and `SET`).
pub(crate) async fn run_plan_with_plan(
    context: &SessionContext,
    plan: LogicalPlan,
) -> Result<(Vec<RecordBatch>, Option<Arc<dyn ExecutionPlan>>)> {
    if matches!(plan, LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)) {
        // DataFusion's own DDL and `SET`: its context runs them.
        let batches = context.execute_logical_plan(plan).await?.collect().await?;
        return Ok((batches, None));
    }
    let optimized = context.state().optimize(&plan)?;
    let (batches, physical) = run_optimized_plan(context, optimized).await?;
    Ok((batches, Some(physical)))
}

/// [`run_plan`] for a plan already optimised, with the physical plan it ran (and its
/// metrics).
pub(crate) async fn run_optimized_plan(
    context: &SessionContext,
    optimized: LogicalPlan,
) -> Result<(Vec<RecordBatch>, Arc<dyn ExecutionPlan>)> {
    let (physical, state) = physical_plan(context, &optimized, &[]).await?;
    let batches =
        datafusion::physical_plan::collect(Arc::clone(&physical), state.task_ctx()).await?;
    Ok((batches, physical))
}

/// `optimized` made physical — on one partition when every table it reads is a Strata
/// table whose scan Strata expects to return few rows ([`SMALL_STATEMENT_ROWS`]), `params`
/// the values of its placeholders for those estimates — with the state it was planned in.
pub(crate) async fn physical_plan(
    context: &SessionContext,
    optimized: &LogicalPlan,
    params: &[Value],
) -> Result<(Arc<dyn ExecutionPlan>, SessionState)> {
    let mut state = context.state();
    if expected_rows(optimized, params).is_some_and(|rows| rows <= SMALL_STATEMENT_ROWS) {
        state.config_mut().options_mut().execution.target_partitions = 1;
    }
    let physical = state
        .query_planner()
        .create_physical_plan(optimized, &state)
        .await?;
    Ok((physical, state))
}

/// The rows Strata expects the scans of `plan` (its subqueries' too) to return together,
/// `params` the values of its placeholders; `None` when it reads anything but Strata tables
/// or an estimate fails.
fn expected_rows(plan: &LogicalPlan, params: &[Value]) -> Option<f64> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut rows = Some(0.0);
    let walked = plan.apply_with_subqueries(|node| {
        let LogicalPlan::TableScan(scan) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let estimate = datafusion::datasource::source_as_provider(&scan.source)
            .ok()
            .and_then(|provider| {
                let any: &dyn std::any::Any = provider.as_ref();
                let table = any.downcast_ref::<StrataTable>()?;
                table.estimated_rows(&scan.filters, scan.fetch, params).ok()
            });
        rows = rows.zip(estimate).map(|(a, b)| a + b);
        Ok(if rows.is_some() {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    walked.ok().and(rows)
}

/// An open transaction shared by a session and the scans of its statements; `None` once it
/// has committed or rolled back.
pub type SharedTransaction = Arc<Mutex<Option<OwnedTransaction>>>;

/// A SQL session over one database: its tables are the session's default schema
/// (`strata.public`), so `SELECT * FROM people` names a Strata table.
pub struct SqlSession {
    db: Arc<Db>,
    context: SessionContext,
    /// Runs [`SqlSession::execute`]'s statements (started on first use).
    runtime: std::sync::OnceLock<tokio::runtime::Runtime>,
    /// The transaction `BEGIN` opened, if any.
    transaction: Mutex<Option<SharedTransaction>>,
}

impl SqlSession {
    /// A session over `db`.
    pub fn new(db: Arc<Db>) -> Result<SqlSession> {
        // No round-robin repartitioning after a scan: a Strata scan is one ordered stream,
        // and spreading its batches over threads would stop an `ORDER BY … LIMIT` it
        // answers in order from ending its read early (hash repartitioning for joins and
        // aggregates stays).
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(CATALOG, SCHEMA)
            .with_information_schema(true)
            .with_round_robin_repartition(false);
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(LimitIntoStrataScan))
            .build();
        let context = SessionContext::new_with_state(state);
        context.register_catalog(CATALOG, Arc::new(StrataCatalog::new(Arc::clone(&db))));
        Ok(SqlSession {
            db,
            context,
            runtime: std::sync::OnceLock::new(),
            transaction: Mutex::new(None),
        })
    }

    /// The database.
    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }

    /// The DataFusion context, to register more tables or functions.
    pub fn context(&self) -> &SessionContext {
        &self.context
    }

    /// Whether a transaction is open (`BEGIN` without its `COMMIT` or `ROLLBACK` yet).
    pub fn in_transaction(&self) -> bool {
        self.open_transaction().is_some()
    }

    fn open_transaction(&self) -> Option<SharedTransaction> {
        self.transaction
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A context for one statement: its scans read `reads`.
    pub(crate) fn statement_context(&self, reads: StatementSnapshot) -> SessionContext {
        let mut state = self.context.state();
        state.config_mut().set_extension(Arc::new(reads));
        SessionContext::new_with_state(state)
    }

    /// What a statement begun now reads: the open transaction, or a snapshot taken now.
    pub(crate) fn reads(&self) -> StatementSnapshot {
        match self.open_transaction() {
            Some(tx) => StatementSnapshot::transaction(&self.db, tx),
            None => StatementSnapshot::new(&self.db),
        }
    }

    /// Plans one query, reading the database as of now (or the open transaction): every
    /// table it names, however many times (a self-join), is read at one snapshot taken
    /// here, whenever the result is collected.
    pub async fn dataframe(&self, text: &str) -> Result<DataFrame> {
        let context = self.statement_context(self.reads());
        Ok(context.sql(text).await?)
    }

    /// Runs the statements of `text` (separated by `;`) one after another and returns the
    /// last one's result; the first that fails stops the rest. DDL returns no batches, DML
    /// one batch of one row: `count`, the rows it wrote.
    pub async fn sql(&self, text: &str) -> Result<Vec<RecordBatch>> {
        let statements = DFParser::parse_sql(text)?;
        let mut last = Vec::new();
        for statement in statements {
            last = self.run(statement).await?;
        }
        Ok(last)
    }

    /// [`SqlSession::sql`], blocking; not from inside an async runtime
    /// ([`Error::InsideRuntime`]).
    pub fn execute(&self, text: &str) -> Result<Vec<RecordBatch>> {
        self.block_on(self.sql(text))
    }

    /// Prepares one statement with parameters `$1`, `$2`, …, to run many times
    /// ([`Prepared::execute`]). A single-table `SELECT` Strata evaluates whole runs straight
    /// through Strata's planner; anything else through DataFusion, optimised here once and
    /// made physical at its first run, that plan kept for the runs after when it can run
    /// again ([`Prepared::reuses_plan`]).
    pub fn prepare(&self, text: &str) -> Result<Prepared<'_>> {
        self.block_on(Prepared::new(self, text))
    }

    /// Runs `future` on the session's runtime.
    pub(crate) fn block_on<T>(&self, future: impl Future<Output = Result<T>>) -> Result<T> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(Error::InsideRuntime);
        }
        let runtime = match self.runtime.get() {
            Some(runtime) => runtime,
            None => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("strata-sql")
                    .enable_all()
                    .build()
                    .map_err(Error::Runtime)?;
                self.runtime.get_or_init(|| runtime)
            }
        };
        runtime.block_on(future)
    }

    async fn run(&self, statement: DFStatement) -> Result<Vec<RecordBatch>> {
        let DFStatement::Statement(sql) = &statement else {
            return self.query(statement).await;
        };
        match sql.as_ref() {
            Statement::StartTransaction { .. } => self.begin().map(|()| Vec::new()),
            Statement::Commit { .. } => self.commit().map(|()| Vec::new()),
            Statement::Rollback { savepoint, .. } => {
                if savepoint.is_some() {
                    return Err(Error::Unsupported("savepoints".into()));
                }
                self.rollback().map(|()| Vec::new())
            }
            Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::Analyze(_) => {
                if self.in_transaction() {
                    return Err(Error::Unsupported(
                        "DDL inside a transaction (COMMIT or ROLLBACK first)".into(),
                    ));
                }
                ddl::run(&self.db, sql).map(|()| Vec::new())
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                let count = self.write(sql).await?;
                Ok(vec![count_batch(count)?])
            }
            _ => self.query(statement).await,
        }
    }

    /// Runs a query (or any statement DataFusion handles) at the statement's reads.
    async fn query(&self, statement: DFStatement) -> Result<Vec<RecordBatch>> {
        let reads = self.reads();
        let context = self.statement_context(reads.clone());
        let plan = context.state().statement_to_plan(statement).await?;
        self.collect(&context, reads, plan).await
    }

    /// Runs a planned statement: through Strata alone when it can ([`crate::fast`]), else
    /// through DataFusion's optimizer and executor.
    pub(crate) async fn collect(
        &self,
        context: &SessionContext,
        reads: StatementSnapshot,
        plan: LogicalPlan,
    ) -> Result<Vec<RecordBatch>> {
        if let Some(fast) = FastPlan::of(&plan)
            && let Some(batches) = fast.run(&self.db, &reads, &[])?
        {
            return Ok(batches);
        }
        run_plan(context, plan).await
    }

    /// Runs a DML statement in the open transaction, or in one of its own committed at its
    /// end; returns the rows written.
    async fn write(&self, statement: &Statement) -> Result<u64> {
        let (tx, implicit) = match self.open_transaction() {
            Some(tx) => (tx, false),
            None => (Arc::new(Mutex::new(Some(self.db.begin_owned()?))), true),
        };
        let context =
            self.statement_context(StatementSnapshot::transaction(&self.db, Arc::clone(&tx)));
        let result = dml::run(&self.db, &context, &tx, statement).await;
        match (result, implicit) {
            (Ok(count), true) => {
                take(&tx)?.commit()?;
                Ok(count)
            }
            (Ok(count), false) => Ok(count),
            (Err(e), true) => Err(e),
            (Err(e), false) => {
                // Its writes so far are in the transaction and cannot be taken out alone.
                self.end_transaction();
                Err(Error::RolledBack(Box::new(e)))
            }
        }
    }

    fn begin(&self) -> Result<()> {
        let mut open = self.transaction.lock().unwrap_or_else(|e| e.into_inner());
        if open.is_some() {
            return Err(Error::Unsupported(
                "a transaction inside a transaction (COMMIT or ROLLBACK first)".into(),
            ));
        }
        *open = Some(Arc::new(Mutex::new(Some(self.db.begin_owned()?))));
        Ok(())
    }

    fn commit(&self) -> Result<()> {
        let tx = self.end_transaction().ok_or(Error::NoTransaction)?;
        take(&tx)?.commit()?;
        Ok(())
    }

    fn rollback(&self) -> Result<()> {
        let tx = self.end_transaction().ok_or(Error::NoTransaction)?;
        take(&tx)?.rollback();
        Ok(())
    }

    /// Closes the session's transaction, returning it.
    fn end_transaction(&self) -> Option<SharedTransaction> {
        self.transaction
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// The transaction out of its cell, for its commit or rollback.
fn take(tx: &SharedTransaction) -> Result<OwnedTransaction> {
    tx.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or(Error::NoTransaction)
}

/// A DML statement's result: one row, the rows it wrote (DataFusion's `count`).
fn count_batch(count: u64) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(vec![count]))])
        .map_err(|e| Error::Sql(e.into()))
}

/// What a statement's scans read, kept in the statement's session configuration for them
/// to find ([`SqlSession::dataframe`]): a snapshot of the database, or a transaction.
#[derive(Clone)]
pub struct StatementSnapshot {
    /// The database it is a snapshot of (its address: a scan of another database ignores it).
    db: usize,
    reads: Reads,
}

#[derive(Clone)]
enum Reads {
    Snapshot(DbSnapshot),
    Transaction(SharedTransaction),
}

impl std::fmt::Debug for StatementSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reads = match &self.reads {
            Reads::Snapshot(s) => format!("snapshot {}", s.seqno()),
            Reads::Transaction(_) => "a transaction".to_owned(),
        };
        f.debug_struct("StatementSnapshot")
            .field("reads", &reads)
            .finish()
    }
}

impl StatementSnapshot {
    /// A snapshot of `db` as of now.
    pub fn new(db: &Arc<Db>) -> StatementSnapshot {
        StatementSnapshot {
            db: Arc::as_ptr(db) as usize,
            reads: Reads::Snapshot(db.snapshot()),
        }
    }

    /// Reads through `tx`, a transaction of `db`.
    pub fn transaction(db: &Arc<Db>, tx: SharedTransaction) -> StatementSnapshot {
        StatementSnapshot {
            db: Arc::as_ptr(db) as usize,
            reads: Reads::Transaction(tx),
        }
    }

    /// The snapshot, if it is one of `db`.
    pub fn of(&self, db: &Arc<Db>) -> Option<&DbSnapshot> {
        match &self.reads {
            Reads::Snapshot(s) if self.db == Arc::as_ptr(db) as usize => Some(s),
            _ => None,
        }
    }

    /// The transaction, if it is one of `db`.
    pub fn transaction_of(&self, db: &Arc<Db>) -> Option<&SharedTransaction> {
        match &self.reads {
            Reads::Transaction(tx) if self.db == Arc::as_ptr(db) as usize => Some(tx),
            _ => None,
        }
    }

    /// The rows of `query` on `table` as this statement reads them.
    pub fn rows(
        &self,
        db: &Arc<Db>,
        table: &str,
        query: &strata::Query,
    ) -> strata::Result<RowSource> {
        if let Some(tx) = self.transaction_of(db) {
            let mut cell = tx.lock().unwrap_or_else(|e| e.into_inner());
            let tx = cell.as_mut().ok_or_else(|| {
                strata::Error::InvalidArgument(
                    "the transaction has already committed or rolled back".into(),
                )
            })?;
            // The transaction's rows borrow it; they are read whole while it is locked.
            let rows: Vec<strata::Result<strata::Record>> = tx.query(table, query)?.collect();
            return Ok(Box::new(ReadWhole {
                rows: rows.into_iter(),
                held: strata::Record::default(),
            }));
        }
        Ok(Box::new(match self.of(db) {
            Some(at) => db.query_owned_at(at, table, query)?,
            None => db.query_owned(table, query)?,
        }))
    }
}

/// The values of a prepared statement's placeholders (`$1` is the first), kept in the
/// configuration its plan is made with: its scans' estimates bind them.
#[derive(Debug)]
pub struct StatementParams(pub Vec<Value>);

/// The rows of a scan, as Strata reads them.
pub type RowSource = Box<dyn ReadRows>;

/// Rows lent one at a time ([`strata::Rows::next_ref`], or to a visitor,
/// [`strata::Rows::for_each_ref`]): a row fetched through an index is lent where it lies, and
/// the batcher copies its values straight into a batch's buffers.
pub trait ReadRows: Send {
    /// Lends the next row; `Ok(None)` at the end.
    fn next_ref(&mut self) -> strata::Result<Option<RowRef<'_>>>;

    /// Lends each row left to `f` in turn, until the rows end or `f` fails (its error is
    /// returned). A query's rows ([`strata::Rows::for_each_ref`]) fetched as a walk of their
    /// table are lent where the walk finds them.
    fn for_each_ref(&mut self, f: &mut dyn FnMut(&RowRef<'_>) -> Result<()>) -> Result<()> {
        while let Some(row) = self.next_ref()? {
            f(&row)?;
        }
        Ok(())
    }
}

impl ReadRows for strata::OwnedRows {
    fn next_ref(&mut self) -> strata::Result<Option<RowRef<'_>>> {
        strata::Rows::next_ref(self)
    }

    fn for_each_ref(&mut self, f: &mut dyn FnMut(&RowRef<'_>) -> Result<()>) -> Result<()> {
        strata::Rows::for_each_ref(self, f)
    }
}

/// A transaction's rows, read whole while it was locked, each lent in turn.
pub struct ReadWhole {
    rows: std::vec::IntoIter<strata::Result<strata::Record>>,
    held: strata::Record,
}

impl ReadRows for ReadWhole {
    fn next_ref(&mut self) -> strata::Result<Option<RowRef<'_>>> {
        match self.rows.next() {
            Some(next) => {
                self.held = next?;
                Ok(Some(RowRef::from(&self.held)))
            }
            None => Ok(None),
        }
    }
}

/// The parameters of a prepared statement, checked against the count it expects.
pub(crate) fn check_params(expected: usize, params: &[Value]) -> Result<()> {
    if params.len() != expected {
        return Err(Error::Params {
            expected,
            got: params.len(),
        });
    }
    Ok(())
}
