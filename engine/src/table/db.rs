//! `Db`: tables and index tables over one LSM store, and their catalog.
//!
//! 1. `open` opens the store, reads the catalog, drops column families no definition names (a
//!    crash between creating a family and recording it), and finishes any index backfill a
//!    crash interrupted.
//! 2. DDL (`create_table`, `create_index`, the drops) is serialised by one mutex; each change
//!    is one synced catalog write, ordered against the family's creation or removal so a
//!    crash never leaves a definition naming a family that is not there.
//! 3. Readers and writers take the table's current definition from an `RwLock`ed map of
//!    `Arc<Table>`s; a change publishes a new `Arc`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use strata_planner::{CostModel, IndexState, Projection, TableStats, Value};

use crate::error::{Corruption, Error, Result};
use crate::lsm::{ColumnFamily, Options, ReadOptions, Store, WriteBatch, WriteOptions};
use crate::table::catalog::{IndexDef, TableDef, fact_cf, index_cf, validate_field, validate_name};
use crate::table::entry::{corrupt, encode_primary_key, record_corrupt};
use crate::table::format::{
    CATALOG_CF, CATALOG_FORMAT, CATALOG_NEXT_ID, CATALOG_STATS_PREFIX, CATALOG_TABLE_PREFIX,
    FACT_CF_PREFIX, INDEX_CF_PREFIX, MAX_INDEXES,
};
use crate::table::record::Record;
use crate::table::write::Stripes;

/// A database of tables with index tables, over one LSM store. `Send + Sync`: share it
/// between threads by reference or in an `Arc`.
///
/// ```
/// use strata::{Db, Options, Projection, Query, Predicate, record};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.create_table("customers", &["id"])?;
/// db.create_index("customers", "by_town", &["town"], Projection::KeysOnly)?;
/// db.insert("customers", record! { "id" => 1, "name" => "Ada", "town" => "Redmond" })?;
/// db.insert("customers", record! { "id" => 2, "name" => "Bob", "town" => "Seattle" })?;
///
/// let query = Query::default().filter(Predicate::eq("town", "Redmond"));
/// let rows: Vec<_> = db.query("customers", &query)?.collect::<Result<_, _>>()?;
/// assert_eq!(rows.len(), 1);
/// assert_eq!(rows[0].get("name"), Some(&"Ada".into()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Db {
    pub(crate) store: Store,
    catalog: ColumnFamily,
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
    /// Serialises DDL. Writers never take it.
    ddl: Mutex<()>,
    /// Per-key locks for read-modify-write of a row and its index entries.
    pub(crate) stripes: Stripes,
    pub(crate) cost_model: CostModel,
}

/// A table's definition with its open column families.
pub(crate) struct Table {
    pub(crate) def: TableDef,
    pub(crate) fact: ColumnFamily,
    /// One per `def.indexes`, in the same order.
    pub(crate) indexes: Vec<ColumnFamily>,
    /// From the last `analyze`, if any.
    pub(crate) stats: Option<TableStats>,
}

impl Table {
    /// This table with `def` (and `indexes`, when given) in place of its own.
    fn with(&self, def: TableDef, indexes: Option<Vec<ColumnFamily>>) -> Table {
        Table {
            def,
            fact: self.fact.clone(),
            indexes: indexes.unwrap_or_else(|| self.indexes.clone()),
            stats: self.stats.clone(),
        }
    }

    pub(crate) fn index(&self, name: &str) -> Result<(usize, &IndexDef, &ColumnFamily)> {
        self.def
            .indexes
            .iter()
            .position(|ix| ix.name == name)
            .map(|i| (i, &self.def.indexes[i], &self.indexes[i]))
            .ok_or_else(|| Error::NotFound(format!("index {name:?} on table {:?}", self.def.name)))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave the unit value inconsistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn catalog_corrupt(what: String) -> Error {
    corrupt(CATALOG_CF, Corruption::Catalog(what))
}

impl Db {
    /// Opens (or, with `options.create_if_missing`, creates) the database in `dir`.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        let store = Store::open(dir, options)?;
        let catalog = match store.cf(CATALOG_CF) {
            Ok(cf) => cf,
            Err(Error::NotFound(_)) => store.create_column_family(CATALOG_CF)?,
            Err(e) => return Err(e),
        };
        let mut defs = BTreeMap::new();
        let mut stats = BTreeMap::new();
        for kv in store.iter(&catalog, ReadOptions::default())? {
            let (k, v) = kv?;
            let key = std::str::from_utf8(&k)
                .map_err(|_| catalog_corrupt("a key is not UTF-8".into()))?;
            if let Some(name) = key.strip_prefix(CATALOG_TABLE_PREFIX) {
                let def =
                    TableDef::decode(&v).map_err(|e| catalog_corrupt(format!("{key}: {e}")))?;
                if def.name != name {
                    return Err(catalog_corrupt(format!(
                        "{key} defines table {:?}",
                        def.name
                    )));
                }
                defs.insert(def.name.clone(), def);
            } else if let Some(name) = key.strip_prefix(CATALOG_STATS_PREFIX) {
                let s =
                    TableStats::decode(&v).map_err(|e| catalog_corrupt(format!("{key}: {e}")))?;
                stats.insert(name.to_owned(), s);
            } else if key != CATALOG_NEXT_ID {
                return Err(catalog_corrupt(format!("unknown key {key:?}")));
            }
        }

        // Families no definition names were being created or dropped at a crash.
        let wanted: BTreeSet<String> = defs
            .values()
            .flat_map(|d| {
                std::iter::once(d.fact_cf())
                    .chain(d.indexes.iter().map(|ix| index_cf(&d.name, &ix.name)))
            })
            .collect();
        for name in store.column_families() {
            let ours = name.starts_with(FACT_CF_PREFIX) || name.starts_with(INDEX_CF_PREFIX);
            if ours && !wanted.contains(&name) {
                tracing::info!(family = %name, "dropping a column family no table names");
                store.drop_column_family(&store.cf(&name)?)?;
            }
        }

        let family = |name: &str| {
            store.cf(name).map_err(|_| {
                catalog_corrupt(format!(
                    "column family {name:?} the catalog names is missing"
                ))
            })
        };
        let mut tables = BTreeMap::new();
        for (name, def) in defs {
            let fact = family(&def.fact_cf())?;
            let indexes = def
                .indexes
                .iter()
                .map(|ix| family(&index_cf(&def.name, &ix.name)))
                .collect::<Result<Vec<_>>>()?;
            let table = Table {
                stats: stats.remove(&name),
                def,
                fact,
                indexes,
            };
            tables.insert(name, Arc::new(table));
        }
        let db = Db {
            store,
            catalog,
            tables: RwLock::new(tables),
            ddl: Mutex::new(()),
            stripes: Stripes::new(),
            cost_model: CostModel::default(),
        };
        // Finish what a crash interrupted.
        let unfinished: Vec<(String, String)> = db
            .read_tables()
            .values()
            .flat_map(|t| {
                t.def
                    .indexes
                    .iter()
                    .filter(|ix| ix.state != IndexState::Ready)
                    .map(|ix| (t.def.name.clone(), ix.name.clone()))
            })
            .collect();
        if !unfinished.is_empty() {
            let _ddl = lock(&db.ddl);
            for (table, index) in unfinished {
                tracing::info!(%table, %index, "resuming an interrupted index backfill");
                db.backfill(&table, &index)?;
            }
        }
        Ok(db)
    }

    /// The underlying key-value store (for statistics, flushes and compaction).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Closes the database, reporting the final log sync.
    pub fn close(self) -> Result<()> {
        self.store.close()
    }

    fn read_tables(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Table>>> {
        self.tables.read().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, table: Table) {
        let mut tables = self.tables.write().unwrap_or_else(|p| p.into_inner());
        tables.insert(table.def.name.clone(), Arc::new(table));
    }

    /// The current state of table `name`.
    pub(crate) fn handle(&self, name: &str) -> Result<Arc<Table>> {
        self.read_tables()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("table {name:?}")))
    }

    /// The definitions of every table, by name.
    pub fn tables(&self) -> Vec<TableDef> {
        self.read_tables().values().map(|t| t.def.clone()).collect()
    }

    /// The definition of table `name`.
    pub fn table(&self, name: &str) -> Result<TableDef> {
        Ok(self.handle(name)?.def.clone())
    }

    /// The statistics of the last [`Db::analyze`] of `table`, if any.
    pub fn table_stats(&self, table: &str) -> Result<Option<TableStats>> {
        Ok(self.handle(table)?.stats.clone())
    }

    /// Writes catalog changes, synced.
    fn write_catalog(&self, puts: &[(String, Vec<u8>)], deletes: &[String]) -> Result<()> {
        let mut batch = WriteBatch::new();
        for (k, v) in puts {
            batch.put(&self.catalog, k.as_bytes(), v)?;
        }
        for k in deletes {
            batch.delete(&self.catalog, k.as_bytes())?;
        }
        self.store.write(batch, WriteOptions::synced()).map(drop)
    }

    fn next_id(&self) -> Result<u64> {
        let stored = match self.store.get(&self.catalog, CATALOG_NEXT_ID.as_bytes())? {
            Some(v) => std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| catalog_corrupt("next_id is not a number".into()))?,
            None => 1,
        };
        let used = self.read_tables().values().map(|t| t.def.id + 1).max();
        Ok(stored.max(used.unwrap_or(1)))
    }

    /// Creates table `name` whose rows are identified by `primary_key` (one or more fields).
    pub fn create_table(&self, name: &str, primary_key: &[&str]) -> Result<()> {
        let _ddl = lock(&self.ddl);
        validate_name("table", name)?;
        if self.read_tables().contains_key(name) {
            return Err(Error::Conflict(format!("table {name:?} exists")));
        }
        let id = self.next_id()?;
        let def = TableDef {
            format: CATALOG_FORMAT,
            id,
            name: name.to_owned(),
            primary_key: primary_key.iter().map(|f| f.to_string()).collect(),
            indexes: Vec::new(),
        };
        def.validate()?;
        // A family left by a crash before its table was recorded would have been dropped at
        // open; one dropped by `drop_table` is gone.
        let fact = self.store.create_column_family(&fact_cf(name))?;
        self.write_catalog(
            &[
                (format!("{CATALOG_TABLE_PREFIX}{name}"), def.encode()),
                (
                    CATALOG_NEXT_ID.to_owned(),
                    (id + 1).to_string().into_bytes(),
                ),
            ],
            &[],
        )?;
        self.publish(Table {
            def,
            fact,
            indexes: Vec::new(),
            stats: None,
        });
        Ok(())
    }

    /// Drops table `name`, its indexes and its statistics.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = lock(&self.ddl);
        let table = self.handle(name)?;
        self.write_catalog(
            &[],
            &[
                format!("{CATALOG_TABLE_PREFIX}{name}"),
                format!("{CATALOG_STATS_PREFIX}{name}"),
            ],
        )?;
        self.tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.store.drop_column_family(&table.fact)?;
        for cf in &table.indexes {
            self.store.drop_column_family(cf)?;
        }
        Ok(())
    }

    /// Creates index `name` on `table` over `fields` (a composite index when several), whose
    /// entries carry `projection`. On a populated table it backfills: new writes maintain the
    /// index from the start (`WriteOnly`), existing rows are added (`Backfilling`), and only
    /// then is it planned (`Ready`). Returns when it is ready.
    pub fn create_index(
        &self,
        table: &str,
        name: &str,
        fields: &[&str],
        projection: Projection,
    ) -> Result<()> {
        let _ddl = lock(&self.ddl);
        let current = self.handle(table)?;
        validate_name("index", name)?;
        if current.def.indexes.iter().any(|ix| ix.name == name) {
            return Err(Error::Conflict(format!(
                "index {name:?} on table {table:?} exists"
            )));
        }
        if current.def.indexes.len() >= MAX_INDEXES {
            return Err(Error::InvalidArgument(format!(
                "table {table:?} has {MAX_INDEXES} indexes, the most it may have"
            )));
        }
        if let Projection::Include(extra) = &projection {
            for f in extra {
                validate_field(f)?;
            }
        }
        let mut def = current.def.clone();
        def.indexes.push(IndexDef {
            name: name.to_owned(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            projection,
            state: IndexState::WriteOnly,
        });
        def.validate()?;
        let cf = self.store.create_column_family(&index_cf(table, name))?;
        self.write_catalog(
            &[(format!("{CATALOG_TABLE_PREFIX}{table}"), def.encode())],
            &[],
        )?;
        let mut indexes = current.indexes.clone();
        indexes.push(cf);
        self.publish(current.with(def, Some(indexes)));
        self.backfill(table, name)
    }

    /// Sets index `index`'s state, durably, and publishes it.
    /// REQUIRES: the DDL lock is held.
    pub(crate) fn set_index_state(
        &self,
        table: &str,
        index: &str,
        state: IndexState,
    ) -> Result<()> {
        let current = self.handle(table)?;
        let (i, _, _) = current.index(index)?;
        let mut def = current.def.clone();
        def.indexes[i].state = state;
        self.write_catalog(
            &[(format!("{CATALOG_TABLE_PREFIX}{table}"), def.encode())],
            &[],
        )?;
        self.publish(current.with(def, None));
        Ok(())
    }

    /// Drops index `index` of `table`.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _ddl = lock(&self.ddl);
        let current = self.handle(table)?;
        let (i, _, _) = current.index(index)?;
        let mut def = current.def.clone();
        def.indexes.remove(i);
        let mut indexes = current.indexes.clone();
        let cf = indexes.remove(i);
        self.write_catalog(
            &[(format!("{CATALOG_TABLE_PREFIX}{table}"), def.encode())],
            &[],
        )?;
        self.publish(current.with(def, Some(indexes)));
        self.store.drop_column_family(&cf)
    }

    /// Stores `stats` as `table`'s statistics and plans with them from now on.
    pub(crate) fn put_stats(&self, table: &str, id: u64, stats: TableStats) -> Result<()> {
        let _ddl = lock(&self.ddl);
        let current = self.handle(table)?;
        if current.def.id != id {
            return Err(Error::NotFound(format!(
                "table {table:?} (dropped while analysed)"
            )));
        }
        self.write_catalog(
            &[(format!("{CATALOG_STATS_PREFIX}{table}"), stats.encode())],
            &[],
        )?;
        let mut table = current.with(current.def.clone(), None);
        table.stats = Some(stats);
        self.publish(table);
        Ok(())
    }

    /// The row of `table` whose primary key is `key` (one value per key field).
    pub fn get(&self, table: &str, key: &[Value]) -> Result<Option<Record>> {
        let t = self.handle(table)?;
        let values: Vec<&Value> = key.iter().collect();
        let pk = encode_primary_key(&t.def, &values)?;
        match self.store.get(&t.fact, &pk)? {
            None => Ok(None),
            Some(bytes) => Record::decode(&bytes)
                .map(Some)
                .map_err(|e| record_corrupt(t.fact.name(), e)),
        }
    }
}
