//! `strata-sql`: Strata tables as Apache DataFusion tables, so SQL — joins, aggregates,
//! subqueries — runs over them, while Strata's own planner still chooses each table's access
//! path (primary key, index or scan) for the conditions DataFusion pushes down.
//!
//! - [`schema`]: the columns of a table, inferred from its rows and statistics, and the
//!   conversion of rows to Arrow record batches.
//! - [`filter`]: DataFusion expressions as Strata conditions, where their meaning is the same.
//! - [`scan`]: the execution plan that runs a Strata query and streams its rows.
//! - [`table`]: [`StrataTable`], the `TableProvider`.
//! - [`catalog`]: [`StrataCatalog`], every table of a database, live.
//! - [`session`]: [`SqlSession`], a ready session over one database.
//!
//! ```
//! use std::sync::Arc;
//! use strata::{Db, Options, TableBatch, TableOptions, record};
//! use strata_sql::SqlSession;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Arc::new(Db::open(dir.path(), Options::default())?);
//! db.create_table("people", ["id"], TableOptions::default())?;
//! let mut batch = TableBatch::new();
//! batch.insert(record! { "id" => 1, "town" => "Ely" });
//! batch.insert(record! { "id" => 2, "town" => "Rome" });
//! db.write("people", batch, Default::default())?;
//!
//! let session = SqlSession::new(Arc::clone(&db))?;
//! let batches = session.execute("SELECT id FROM people WHERE town = 'Rome'")?;
//! assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod catalog;
pub mod ddl;
pub mod dml;
pub mod fast;
pub mod filter;
pub mod limit;
pub mod prepared;
pub mod scan;
pub mod schema;
pub mod session;
pub mod shell;
pub mod table;
pub mod values;

pub use catalog::StrataCatalog;
pub use datafusion;
pub use prepared::{Prepared, RunPlan};
pub use session::{SMALL_STATEMENT_ROWS, SqlSession};
pub use table::StrataTable;

/// What can go wrong between SQL and Strata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database refused or failed.
    #[error(transparent)]
    Strata(#[from] strata::Error),
    /// DataFusion refused the statement (bad SQL, an unknown table or column, a type error)
    /// or failed running it.
    #[error(transparent)]
    Sql(#[from] datafusion::error::DataFusionError),
    /// A blocking call was made from inside an async runtime, where it would block the
    /// runtime's thread: use the async form there.
    #[error("a blocking SQL call from inside an async runtime: use `SqlSession::sql(..).await`")]
    InsideRuntime,
    /// The session's runtime could not be started.
    #[error("cannot start the SQL runtime: {0}")]
    Runtime(std::io::Error),
    /// A statement or form Strata's SQL does not take.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A statement that cannot run as written (a missing primary key, an unknown index,
    /// values that do not match the columns).
    #[error("{0}")]
    Invalid(String),
    /// `COMMIT` or `ROLLBACK` with no transaction open.
    #[error("no transaction is open (BEGIN starts one)")]
    NoTransaction,
    /// A statement failed inside a transaction, which was rolled back.
    #[error("{0}; the transaction was rolled back")]
    RolledBack(Box<Error>),
    /// A prepared statement run with the wrong number of parameters.
    #[error("the statement takes {expected} parameters, got {got}")]
    Params {
        /// Its parameters.
        expected: usize,
        /// The values given.
        got: usize,
    },
}

impl Error {
    /// Whether running the statement (or the transaction) again may succeed: a conflict
    /// with another commit.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Strata(e) => e.is_retryable(),
            Error::RolledBack(e) => e.is_retryable(),
            Error::Sql(datafusion::error::DataFusionError::External(e)) => e
                .downcast_ref::<strata::Error>()
                .is_some_and(strata::Error::is_retryable),
            _ => false,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
