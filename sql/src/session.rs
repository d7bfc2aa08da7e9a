//! [`SqlSession`]: a DataFusion session over one Strata database, ready to run SQL.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::execution::context::{SessionConfig, SessionContext};
use strata::{Db, DbSnapshot};

use crate::catalog::{SCHEMA, StrataCatalog};
use crate::{Error, Result};

/// The catalog's name in the session.
pub const CATALOG: &str = "strata";

/// A SQL session over one database: its tables are the session's default schema
/// (`strata.public`), so `SELECT * FROM people` names a Strata table.
pub struct SqlSession {
    db: Arc<Db>,
    context: SessionContext,
    /// Runs [`SqlSession::execute`]'s statements (started on first use).
    runtime: std::sync::OnceLock<tokio::runtime::Runtime>,
}

impl SqlSession {
    /// A session over `db`.
    pub fn new(db: Arc<Db>) -> Result<SqlSession> {
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(CATALOG, SCHEMA)
            .with_information_schema(true);
        let context = SessionContext::new_with_config(config);
        context.register_catalog(CATALOG, Arc::new(StrataCatalog::new(Arc::clone(&db))));
        Ok(SqlSession {
            db,
            context,
            runtime: std::sync::OnceLock::new(),
        })
    }

    /// The DataFusion context, to register more tables or functions.
    pub fn context(&self) -> &SessionContext {
        &self.context
    }

    /// Plans one statement, reading the database as of now: every table it names, however
    /// many times (a self-join), is read at one snapshot taken here, whenever the result is
    /// collected.
    pub async fn dataframe(&self, text: &str) -> Result<DataFrame> {
        let mut state = self.context.state();
        state
            .config_mut()
            .set_extension(Arc::new(StatementSnapshot::new(&self.db)));
        let context = SessionContext::new_with_state(state);
        Ok(context.sql(text).await?)
    }

    /// Runs one statement and collects its result ([`SqlSession::dataframe`]).
    pub async fn sql(&self, text: &str) -> Result<Vec<RecordBatch>> {
        Ok(self.dataframe(text).await?.collect().await?)
    }

    /// [`SqlSession::sql`], blocking; not from inside an async runtime
    /// ([`Error::InsideRuntime`]).
    pub fn execute(&self, text: &str) -> Result<Vec<RecordBatch>> {
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
        runtime.block_on(self.sql(text))
    }
}

/// The snapshot a statement reads its database at, kept in the statement's session
/// configuration for the scans to find ([`SqlSession::dataframe`]).
#[derive(Debug)]
pub struct StatementSnapshot {
    /// The database it is a snapshot of (its address: a scan of another database ignores it).
    db: usize,
    snapshot: DbSnapshot,
}

impl StatementSnapshot {
    /// A snapshot of `db` as of now.
    pub fn new(db: &Arc<Db>) -> StatementSnapshot {
        StatementSnapshot {
            db: Arc::as_ptr(db) as usize,
            snapshot: db.snapshot(),
        }
    }

    /// The snapshot, if it is one of `db`.
    pub fn of(&self, db: &Arc<Db>) -> Option<&DbSnapshot> {
        (self.db == Arc::as_ptr(db) as usize).then_some(&self.snapshot)
    }
}
