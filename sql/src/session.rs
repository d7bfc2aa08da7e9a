//! [`SqlSession`]: a DataFusion session over one Strata database, ready to run SQL.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::context::{SessionConfig, SessionContext};
use strata::Db;

use crate::catalog::{SCHEMA, StrataCatalog};
use crate::{Error, Result};

/// The catalog's name in the session.
pub const CATALOG: &str = "strata";

/// A SQL session over one database: its tables are the session's default schema
/// (`strata.public`), so `SELECT * FROM people` names a Strata table.
pub struct SqlSession {
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
        context.register_catalog(CATALOG, Arc::new(StrataCatalog::new(db)));
        Ok(SqlSession {
            context,
            runtime: std::sync::OnceLock::new(),
        })
    }

    /// The DataFusion context, to register more tables or functions.
    pub fn context(&self) -> &SessionContext {
        &self.context
    }

    /// Runs one statement and collects its result.
    pub async fn sql(&self, text: &str) -> Result<Vec<RecordBatch>> {
        let frame = self.context.sql(text).await?;
        Ok(frame.collect().await?)
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
