//! [`StrataCatalog`]: every table of a Strata database, live, as a DataFusion catalog with one
//! schema, `public`. A table created or dropped through Strata is seen by the next statement;
//! each statement infers the columns of the tables it names afresh.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};
use strata::Db;

use crate::table::StrataTable;

/// The one schema's name.
pub const SCHEMA: &str = "public";

/// A Strata database as a DataFusion catalog:
/// `ctx.register_catalog("strata", Arc::new(StrataCatalog::new(db)))`.
#[derive(Debug)]
pub struct StrataCatalog {
    schema: Arc<StrataSchema>,
}

impl StrataCatalog {
    /// The catalog of `db`'s tables.
    pub fn new(db: Arc<Db>) -> StrataCatalog {
        StrataCatalog {
            schema: Arc::new(StrataSchema { db }),
        }
    }
}

impl CatalogProvider for StrataCatalog {
    fn schema_names(&self) -> Vec<String> {
        vec![SCHEMA.to_owned()]
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        (name == SCHEMA).then(|| Arc::clone(&self.schema) as Arc<dyn SchemaProvider>)
    }
}

/// The tables of a Strata database.
pub struct StrataSchema {
    db: Arc<Db>,
}

impl std::fmt::Debug for StrataSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrataSchema")
            .field("tables", &self.table_names())
            .finish()
    }
}

#[async_trait]
impl SchemaProvider for StrataSchema {
    fn table_names(&self) -> Vec<String> {
        self.db.tables().into_iter().map(|t| t.name).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        match StrataTable::new(Arc::clone(&self.db), name) {
            Ok(table) => Ok(Some(Arc::new(table))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.db.table(name).is_ok()
    }
}
