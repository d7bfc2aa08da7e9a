//! The DDL room: creating and dropping tables and indexes, and building a new index from
//! the table's rows (`backfill`). One mutex serialises them; each change is one synced
//! catalog write, ordered against the families' creation or removal so that a crash never
//! leaves a definition naming a family that is not there.

pub(crate) mod backfill;

use std::sync::Arc;

use strata_planner::{FieldList, IndexState, Projection};

use crate::error::{Error, Result};
use crate::lsm::ColumnFamily;
use crate::table::catalog::columns::check_row;
use crate::table::catalog::{
    ColumnDef, IndexDef, IndexOptions, StatisticsOptions, TableDef, TableOptions, fact_cf,
    index_cf, validate_field, validate_name,
};
use crate::table::codec::format::{
    CATALOG_NEXT_ID, CATALOG_STATS_PREFIX, CATALOG_TABLE_PREFIX, MAX_INDEXES,
};
use crate::table::db::{Db, ShardStore, Table, TableShard, index_family, layout_key, lock};

impl Db {
    /// Creates table `name` whose rows are identified by `primary_key` (one or more fields),
    /// with `options` (its shards).
    ///
    /// ```
    /// # use strata::{Db, Options, TableOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open(dir.path(), Options::default())?;
    /// db.create_table("customers", ["id"], TableOptions::default())?;
    /// db.create_table("orders", ["customer", "number"], TableOptions::default().shards(4))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_table(
        &self,
        name: &str,
        primary_key: impl FieldList,
        options: TableOptions,
    ) -> Result<()> {
        let primary_key = primary_key.into_fields();
        let shards = options.shards;
        let _ddl = lock(&self.shared.ddl);
        validate_name("table", name)?;
        if self.shared.read_tables().contains_key(name) {
            return Err(Error::Conflict(format!("table {name:?} exists")));
        }
        let id = self.shared.next_id()?;
        let mut def = TableDef {
            format: 1,
            id,
            name: name.to_owned(),
            primary_key,
            shards,
            indexes: Vec::new(),
            keys: crate::table::codec::key::KeyFormat::NEWEST.number(),
            statistics: StatisticsOptions::default(),
            columns: options.columns,
        };
        def.format = def.needed_format();
        def.validate()?;
        let defs = self.tables();
        self.shared
            .open_shard_stores(shards as usize, defs.iter())?;
        // A family left by a crash before its table was recorded was dropped when its store
        // was opened; one dropped by `drop_table` is gone.
        let mut table_shards = Vec::with_capacity(shards as usize);
        for store in &self.shared.stores()[..shards as usize] {
            table_shards.push(TableShard {
                store: Arc::clone(store),
                fact: store.store.create_column_family(&fact_cf(name))?,
                indexes: Vec::new(),
            });
        }
        self.shared.write_catalog(
            &[
                (format!("{CATALOG_TABLE_PREFIX}{name}"), def.encode()?),
                (
                    CATALOG_NEXT_ID.to_owned(),
                    (id + 1).to_string().into_bytes(),
                ),
            ],
            &[],
        )?;
        self.shared
            .publish(Table::new(def, table_shards, None, Arc::default()));
        Ok(())
    }

    /// Drops table `name`, its indexes and its statistics. Its outbox entries not yet applied
    /// are discarded by the indexer. Fails with `Conflict` while a change feed covers it
    /// (drop the feed first).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = lock(&self.shared.ddl);
        let table = self.shared.handle(name)?;
        // A feed's log entries hold rows in the table's layouts, which go with it.
        if let Some(feed) = self
            .shared
            .feeds
            .slots()
            .iter()
            .find(|f| f.tables.contains(&table.def.id))
        {
            return Err(Error::Conflict(format!(
                "change feed {:?} covers table {name:?}: drop the feed first",
                feed.name
            )));
        }
        // A layout a writer adds after this is left behind, and ignored at open: table ids
        // are never reused.
        let mut deletes = vec![
            format!("{CATALOG_TABLE_PREFIX}{name}"),
            format!("{CATALOG_STATS_PREFIX}{name}"),
        ];
        deletes.extend((0..table.layouts.len() as u32).map(|n| layout_key(table.def.id, n)));
        self.shared.write_catalog(&[], &deletes)?;
        self.shared
            .tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.shared.sketches.forget(&table.def);
        // As for an index: writers that found the table commit before its families go.
        drop(self.shared.stripes.lock_all());
        let _gate = self.shared.gate.write().unwrap_or_else(|p| p.into_inner());
        for shard in &table.shards {
            shard.store.store.drop_column_family(&shard.fact)?;
            for cf in &shard.indexes {
                shard.store.store.drop_column_family(cf)?;
            }
        }
        Ok(())
    }

    /// Creates a local, synchronously maintained index `name` on `table` over `fields` (a
    /// composite index when several), whose entries carry `projection`. On a populated table
    /// it backfills: new writes maintain the index from the start (`WriteOnly`), existing
    /// rows are added (`Backfilling`), and only then is it planned (`Ready`). Returns when it
    /// is ready.
    ///
    /// `options` chooses the projection, the scope (a global index is partitioned across the
    /// table's shards by the hash of its leading field, and on more than one shard must be
    /// async), the maintenance and uniqueness; a [`Projection`] alone means a local, sync
    /// index with it.
    ///
    /// ```
    /// # use strata::{Db, IndexOptions, Options, Projection, TableOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Db::open(dir.path(), Options::default())?;
    /// # db.create_table("customers", ["id"], TableOptions::default())?;
    /// db.create_index("customers", "by_town", ["town"], Projection::KeysOnly)?;
    /// db.create_index("customers", "by_email", ["email"], IndexOptions::local().unique())?;
    /// db.create_index("customers", "by_age", ["age"], IndexOptions::local().include(["name"]))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_index(
        &self,
        table: &str,
        name: &str,
        fields: impl FieldList,
        options: impl Into<IndexOptions>,
    ) -> Result<()> {
        let fields = fields.into_fields();
        let options = options.into();
        let projection = options.projection.clone();
        let _ddl = lock(&self.shared.ddl);
        let current = self.shared.handle(table)?;
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
        let id = self.shared.next_id()?;
        let mut def = current.def.clone();
        def.indexes.push(IndexDef {
            id,
            name: name.to_owned(),
            fields,
            projection,
            state: IndexState::WriteOnly,
            scope: options.scope,
            maintenance: options.maintenance,
            unique: options.unique,
        });
        def.validate()?;
        let mut shards = current.shards.clone();
        for shard in &mut shards {
            shard.indexes.push(index_family(
                shard
                    .store
                    .store
                    .create_column_family(&index_cf(table, name))?,
            ));
        }
        self.shared.write_catalog(
            &[
                (format!("{CATALOG_TABLE_PREFIX}{table}"), def.encode()?),
                (
                    CATALOG_NEXT_ID.to_owned(),
                    (id + 1).to_string().into_bytes(),
                ),
            ],
            &[],
        )?;
        self.shared.publish(current.with(def, Some(shards)));
        self.backfill(table, name)
    }

    /// Sets what `analyze` gathers for `table` beyond its defaults ([`StatisticsOptions`]:
    /// field groups, per-field targets), replacing what was set before; the next `analyze`
    /// gathers it. Durable, like every catalog change. A table with options is written in
    /// catalog format 4 (a build that reads format 3 refuses it with a clear error rather
    /// than drop the options); setting empty options writes it in its old format again.
    pub fn set_statistics(&self, table: &str, options: StatisticsOptions) -> Result<()> {
        options.validate()?;
        let _ddl = lock(&self.shared.ddl);
        let current = self.shared.handle(table)?;
        let mut def = current.def.clone();
        def.statistics = options;
        def.format = def.needed_format();
        def.validate()?;
        self.rewrite_definition(&current, def)
    }

    /// Declares `table`'s columns ([`ColumnDef`]; empty: none), replacing what was declared:
    /// every later write is held to them. The rows already stored are checked first (a
    /// scan), and a row that does not fit is an error naming its key and changes nothing.
    /// Rows written by others while the rows are checked are not: declare columns of a table
    /// no one else is writing (`strata import` does, on the table it loaded). Durable; a
    /// table with columns is written in catalog format 5.
    pub fn set_columns(&self, table: &str, columns: Vec<ColumnDef>) -> Result<()> {
        let _ddl = lock(&self.shared.ddl);
        let current = self.shared.handle(table)?;
        let mut def = current.def.clone();
        def.columns = columns;
        def.format = def.needed_format();
        def.validate()?;
        if !def.columns.is_empty() {
            for row in self.query(table, &strata_planner::Query::default())? {
                let row = row?;
                check_row(table, &def.columns, &row).map_err(|e| {
                    let key: Vec<String> = def
                        .primary_key
                        .iter()
                        .map(|k| row.value(k).sql_literal().to_string())
                        .collect();
                    Error::InvalidArgument(format!(
                        "the row with key ({}) does not fit the columns: {e}",
                        key.join(", ")
                    ))
                })?;
            }
        }
        self.rewrite_definition(&current, def)
    }

    /// Writes `def` as the definition of the table `current` holds, its shards unchanged,
    /// and publishes it. REQUIRES: the DDL lock is held.
    fn rewrite_definition(&self, current: &Table, def: TableDef) -> Result<()> {
        self.shared.write_catalog(
            &[(format!("{CATALOG_TABLE_PREFIX}{}", def.name), def.encode()?)],
            &[],
        )?;
        self.shared.publish(current.with(def, None));
        Ok(())
    }

    /// Sets index `index`'s state, durably, and publishes it.
    /// REQUIRES: the DDL lock is held.
    pub(crate) fn set_index_state(
        &self,
        table: &str,
        index: &str,
        state: IndexState,
    ) -> Result<()> {
        let current = self.shared.handle(table)?;
        let (i, _) = current.index(index)?;
        let mut def = current.def.clone();
        def.indexes[i].state = state;
        self.rewrite_definition(&current, def)
    }

    /// Drops index `index` of `table`. Its outbox entries not yet applied are discarded by
    /// the indexer.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        let _ddl = lock(&self.shared.ddl);
        self.drop_index_locked(table, index)
    }

    /// [`Db::drop_index`]. REQUIRES: the DDL lock is held.
    pub(crate) fn drop_index_locked(&self, table: &str, index: &str) -> Result<()> {
        let current = self.shared.handle(table)?;
        let (i, _) = current.index(index)?;
        let mut def = current.def.clone();
        def.indexes.remove(i);
        let mut shards = current.shards.clone();
        let dropped: Vec<(Arc<ShardStore>, ColumnFamily)> = shards
            .iter_mut()
            .map(|s| (Arc::clone(&s.store), s.indexes.remove(i)))
            .collect();
        self.shared.write_catalog(
            &[(format!("{CATALOG_TABLE_PREFIX}{table}"), def.encode()?)],
            &[],
        )?;
        self.shared.publish(current.with(def, Some(shards)));
        // A writer that read the old definition may still be committing entries to these
        // families: let each finish (they hold their keys' stripes) before the families go.
        drop(self.shared.stripes.lock_all());
        let _gate = self.shared.gate.write().unwrap_or_else(|p| p.into_inner());
        for (store, cf) in dropped {
            store.store.drop_column_family(&cf)?;
        }
        Ok(())
    }
}

/// The names the table layer had before options became arguments, kept for one release.
impl Db {
    /// Creates a table with `shards` shards.
    #[deprecated(
        since = "0.2.0",
        note = "use `create_table(name, key, TableOptions::default().shards(n))`"
    )]
    pub fn create_sharded_table(
        &self,
        name: &str,
        primary_key: &[&str],
        shards: u32,
    ) -> Result<()> {
        self.create_table(name, primary_key, TableOptions::default().shards(shards))
    }

    /// Creates an index with `projection` and `options`.
    #[deprecated(
        since = "0.2.0",
        note = "use `create_index(table, name, fields, options.projection(projection))`"
    )]
    pub fn create_index_with(
        &self,
        table: &str,
        name: &str,
        fields: &[&str],
        projection: Projection,
        options: IndexOptions,
    ) -> Result<()> {
        self.create_index(table, name, fields, options.projection(projection))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use strata_planner::{Projection, Value};

    use crate::lsm::WriteOptions;
    use crate::table::codec::record::Record;
    use crate::table::commit::stripes::LOCK_ALL;
    use crate::table::db::Db;
    use crate::table::db::options::Options;
    use crate::table::write::{TableBatch, plan};

    fn row(id: i64, v: i64, w: i64) -> Record {
        let mut r = Record::new();
        r.set("id", Value::Int(id));
        r.set("v", Value::Int(v));
        r.set("w", Value::Int(w));
        r
    }

    /// A writer that read the definition before an index was dropped commits with it, before
    /// the index's families go. Had they gone first, this batch (a row in shard 0 whose entry
    /// does not change, a row in shard 1 whose entry does) would put its first part in and
    /// fail its second, and the database would refuse every write until reopened. The writer
    /// is held (its stripes taken, the old definition read) until the drop has begun waiting
    /// for every stripe (the stripes tell the test), then commits.
    #[test]
    fn a_writer_that_read_the_definition_before_an_index_drop_is_waited_for() {
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), Options::default()).expect("open");
        db.create_table("t", ["id"], crate::TableOptions::default().shards(2))
            .expect("table");
        for id in 0..20 {
            db.insert("t", row(id, 0, 0)).expect("insert");
        }
        db.create_index("t", "by_v", ["v"], Projection::KeysOnly)
            .expect("index");
        let stale = db.shared.handle("t").expect("table");
        let shard_of = |id: i64| {
            let mut batch = TableBatch::new();
            batch.upsert(row(id, 0, 0));
            stale.fact_shard(&plan(&db.shared, &stale, batch).expect("plan")[0].key)
        };
        let a = (0..20)
            .find(|&id| shard_of(id) == 0)
            .expect("a row in shard 0");
        let b = (0..20)
            .find(|&id| shard_of(id) == 1)
            .expect("a row in shard 1");
        let mut batch = TableBatch::new();
        batch.upsert(row(a, 0, 1));
        batch.upsert(row(b, 1, 1));
        let planned = plan(&db.shared, &stale, batch).expect("plan");
        let guards = db
            .shared
            .stripes
            .lock(planned.iter().map(|p| p.key.as_slice()));
        let (events, observed) = mpsc::channel();
        *db.shared.stripes.on_lock_all.lock().expect("observer") = Some(events.clone());
        let db = &db;
        std::thread::scope(|s| {
            let dropping = s.spawn(move || {
                let dropped = db.drop_index("t", "by_v");
                let _ = events.send("the drop returned");
                dropped.expect("drop index")
            });
            assert_eq!(
                observed.recv().expect("an event"),
                LOCK_ALL,
                "the index's families went without waiting for the writer"
            );
            db.write_locked(&stale, planned, WriteOptions::default())
                .expect("the stale writer commits");
            drop(guards);
            dropping.join().expect("dropping thread");
        });
        db.insert("t", row(100, 0, 0))
            .expect("the database still writes");
        for id in [a, b] {
            let got = db.get("t", &[Value::Int(id)]).expect("get").expect("row");
            assert_eq!(got.get("w"), Some(&Value::Int(1)));
        }
        assert!(db.verify("t").expect("verify").is_clean());
    }
}
