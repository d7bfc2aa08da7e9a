//! `Db`: tables and index tables over shard stores, their catalog, and the indexer thread.
//!
//! 1. `open` opens shard store 0 (the directory itself), reads the catalog from it, opens the
//!    other shard stores the tables need, drops in each the column families no definition
//!    names (a crash between creating a family and recording it), counts each store's outbox,
//!    starts the indexer, and finishes any index backfill a crash interrupted. Shard store `n`
//!    holds shard `n` of every table with more than `n` shards.
//! 2. DDL (`create_table`, `create_index`, the drops; in `schema.rs`) is serialised by one
//!    mutex; each change is one synced catalog write, ordered against the family's creation
//!    or removal so a crash never leaves a definition naming a family that is not there.
//! 3. Readers and writers take the table's current definition from an `RwLock`ed map of
//!    `Arc<Table>`s; a change publishes a new `Arc`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use strata_planner::{CostModel, IndexState, Scope, StatsError, TableStats, Value};

use crate::error::{CatalogCorruption, Corruption, Encoded, Error, OutboxCorruption, Result};
use crate::lsm::commit::Sequencer;
use crate::lsm::{ColumnFamily, ReadOptions, Store, WriteBatch, WriteOptions};
use crate::table::advice::Usage;
use crate::table::catalog::{IndexDef, TableDef, index_cf};
use crate::table::entry::{FastRowsCache, encode_primary_key, record_corrupt};
use crate::table::format::{
    CATALOG_CF, CATALOG_COST_MODEL, CATALOG_LAYOUT_PREFIX, CATALOG_NEXT_ID, CATALOG_STATS_PREFIX,
    CATALOG_TABLE_PREFIX, FACT_CF_PREFIX, INDEX_CF_PREFIX, OUTBOX_CF, RECORD_LAID_OUT,
    SHARD_DIR_PREFIX,
};
use crate::table::key::decode_value;
use crate::table::layouts::Layouts;
use crate::table::options::Options;
use crate::table::outbox::{Tracker, outbox_seq};
use crate::table::query::Planning;
use crate::table::record::{Record, RecordError};
use crate::table::resolver::Resolver;
use crate::table::sketch::{LiveStats, SketchFactory};
use crate::table::txn::Recovery;
use crate::table::txn_state::TxnState;
use crate::table::write::Stripes;

/// A database of tables with index tables, over one LSM store. `Send + Sync`: share it
/// between threads by reference or in an `Arc`.
///
/// ```
/// use strata::{Db, Options, Projection, Query, Predicate, record};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.create_table("customers", &["id"], strata::TableOptions::default())?;
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
    pub(super) shared: Arc<Shared>,
    indexer: Option<std::thread::JoinHandle<()>>,
    analyzer: Option<std::thread::JoinHandle<()>>,
}

/// What `Db` and its indexer thread share.
pub(crate) struct Shared {
    dir: PathBuf,
    pub(crate) options: Options,
    /// Shard store 0: the database directory, which also holds the catalog.
    pub(crate) main: Arc<ShardStore>,
    /// Every open shard store, by number (0 is `main`).
    pub(crate) shard_stores: RwLock<Vec<Arc<ShardStore>>>,
    catalog: ColumnFamily,
    pub(super) tables: RwLock<BTreeMap<String, Arc<Table>>>,
    /// Serialises DDL. Writers never take it.
    pub(super) ddl: Mutex<()>,
    /// The indexer holds it shared while it applies entries; dropping a table or an index
    /// holds it exclusively, so no family is dropped under the indexer's write.
    pub(crate) gate: RwLock<()>,
    /// Per-key locks for read-modify-write of a row and its index entries.
    pub(crate) stripes: Stripes,
    /// The planner's cost constants: the defaults, or what `calibrate` stored.
    pub(crate) cost_model: RwLock<CostModel>,
    /// Outbox numbers and the indexer's wake-ups.
    pub(crate) tracker: Tracker,
    /// Tables to analyze, for the analyzer thread; `None` once it is stopping.
    pub(crate) analyze_queue: Mutex<Option<std::sync::mpsc::Sender<String>>>,
    /// Tables queued or being analysed by it.
    pub(crate) analyze_queued: Mutex<BTreeSet<String>>,
    /// Signalled each time a table leaves `analyze_queued`.
    pub(crate) analyze_done: std::sync::Condvar,
    /// Set at close: an auto-analysis under way stops and is dropped.
    pub(crate) analyze_stop: std::sync::atomic::AtomicBool,
    /// Collects each fact table file's statistics sketch (`sketch.rs`).
    pub(super) sketches: Arc<SketchFactory>,
    /// Numbers the writes of every shard store: one commit order for the database.
    pub(crate) sequencer: Arc<Sequencer>,
    /// The keys recent commits wrote, for transactions to validate against (`txn.rs`).
    pub(crate) resolver: Resolver,
    /// The transaction state file's contents (`txn_state.rs`), rewritten under this lock.
    pub(crate) txn_state: Mutex<TxnState>,
}

/// One shard store: an LSM store holding shard `number` of every table with more than
/// `number` shards, and its outbox.
pub(crate) struct ShardStore {
    pub(crate) number: usize,
    pub(crate) store: Store,
    pub(crate) outbox: ColumnFamily,
}

/// A table's definition with its open column families.
pub(crate) struct Table {
    pub(crate) def: TableDef,
    /// One per shard.
    pub(crate) shards: Vec<TableShard>,
    /// From the last `analyze`, if any.
    pub(crate) stats: Option<TableStats>,
    /// Rows changed since the last `analyze` began (kept across republished definitions).
    pub(crate) changed: Arc<AtomicU64>,
    /// The live table files' statistics sketches, merged (kept across republished
    /// definitions).
    pub(crate) live: Arc<LiveStats>,
    /// What each index earned and cost (kept across republished definitions).
    pub(crate) usage: Arc<Usage>,
    /// What planning needs of this definition and these statistics, built on first use.
    pub(crate) planning: OnceLock<Planning>,
    /// The field names of the first row a query read, shared: the next queries' readers
    /// start from them, so a query of one row allocates no names (rows mostly have the
    /// same fields).
    pub(crate) row_layout: OnceLock<Arc<[Arc<str>]>>,
    /// The fast rows of this definition's last covering reads (see [`FastRowsCache`]).
    pub(crate) fast_rows: Arc<FastRowsCache>,
    /// The layouts its rows are stored by (kept across republished definitions).
    pub(crate) layouts: Arc<Layouts>,
}

/// A table's families in one shard store.
#[derive(Clone)]
pub(crate) struct TableShard {
    pub(crate) store: Arc<ShardStore>,
    pub(crate) fact: ColumnFamily,
    /// One per `def.indexes`, in the same order: local indexes hold this shard's rows'
    /// entries, global ones the entries whose leading value hashes here.
    pub(crate) indexes: Vec<ColumnFamily>,
}

impl Table {
    /// Table `def` on `shards`, with its statistics (if analysed) and the layouts its rows
    /// are stored by; nothing counted or cached yet.
    pub(super) fn new(
        def: TableDef,
        shards: Vec<TableShard>,
        stats: Option<TableStats>,
        layouts: Arc<Layouts>,
    ) -> Table {
        Table {
            def,
            shards,
            stats,
            changed: Arc::default(),
            live: Arc::default(),
            usage: Arc::default(),
            planning: OnceLock::new(),
            row_layout: OnceLock::new(),
            fast_rows: Arc::default(),
            layouts,
        }
    }

    /// This table with `def` (and `shards`, when given) in place of its own: what it counted
    /// and learnt is kept, what it planned and cached is not.
    pub(super) fn with(&self, def: TableDef, shards: Option<Vec<TableShard>>) -> Table {
        Table {
            changed: Arc::clone(&self.changed),
            live: Arc::clone(&self.live),
            usage: Arc::clone(&self.usage),
            ..Table::new(
                def,
                shards.unwrap_or_else(|| self.shards.clone()),
                self.stats.clone(),
                Arc::clone(&self.layouts),
            )
        }
    }

    pub(crate) fn index(&self, name: &str) -> Result<(usize, &IndexDef)> {
        self.def
            .indexes
            .iter()
            .position(|ix| ix.name == name)
            .map(|i| (i, &self.def.indexes[i]))
            .ok_or_else(|| Error::NotFound(format!("index {name:?} on table {:?}", self.def.name)))
    }

    /// The shard holding the row whose encoded primary key is `pk`.
    pub(crate) fn fact_shard(&self, pk: &[u8]) -> usize {
        crate::table::format::shard_of(pk, self.shards.len())
    }

    /// The shard holding entry `key` of index `ix` for a row of shard `fact_shard`: the row's
    /// own for a local index, the one its leading value hashes to for a global one.
    pub(crate) fn entry_shard(&self, ix: &IndexDef, fact_shard: usize, key: &[u8]) -> usize {
        if ix.scope == Scope::Local || self.shards.len() == 1 {
            return fact_shard;
        }
        crate::table::format::shard_of(leading_value(key), self.shards.len())
    }

    /// Whether any index is maintained through the outbox.
    pub(crate) fn has_async(&self) -> bool {
        self.def.indexes.iter().any(IndexDef::is_async)
    }
}

/// The encoded leading value of an index key (the whole key if it does not decode, which
/// cannot happen for a key the table layer built).
pub(crate) fn leading_value(key: &[u8]) -> &[u8] {
    match decode_value(key) {
        Ok((_, used)) => &key[..used],
        Err(_) => key,
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere cannot leave the unit value inconsistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The catalog key of layout `number` of the table whose id is `table_id`.
pub(crate) fn layout_key(table_id: u64, number: u32) -> String {
    format!("{CATALOG_LAYOUT_PREFIX}{table_id}/{number}")
}

/// The table id and layout number of a layout's catalog key, after its prefix; `None` for
/// anything else than two decimal numbers (the shortest form: the key is rebuilt from them).
fn parse_layout_key(rest: &str) -> Option<(u64, u32)> {
    let (table, number) = rest.split_once('/')?;
    let (table, number) = (table.parse::<u64>().ok()?, number.parse::<u32>().ok()?);
    (format!("{table}/{number}") == rest).then_some((table, number))
}

fn catalog_corrupt(key: &[u8], what: CatalogCorruption) -> Error {
    Error::corrupt(CATALOG_CF, key, Corruption::Catalog(what))
}

/// A background thread that could not be started.
fn spawn_error(e: std::io::Error) -> Error {
    crate::lsm::Error::io(crate::lsm::IoOp::Spawn, Path::new(""), e).into()
}

/// Family `name` of `store`, created if it is not there.
/// An index's family, set to write its tables without a bloom filter: index entries are read
/// by ranges (a seek, which a filter never answers), and a filter took 1.25 bytes of an entry
/// of about ten (`docs/benchmarks.md`, issue 45). `verify`'s lookups of single entries read a
/// block instead.
pub(crate) fn index_family(cf: ColumnFamily) -> ColumnFamily {
    cf.set_bloom_bits_per_key(0);
    cf
}

fn family_or_create(store: &Store, name: &str) -> Result<ColumnFamily> {
    match store.cf(name) {
        Ok(cf) => Ok(cf),
        Err(crate::lsm::Error::NotFound(_)) => Ok(store.create_column_family(name)?),
        Err(e) => Err(e.into()),
    }
}

/// The families shard store `number` must hold for `defs`.
fn wanted_families<'d>(
    defs: impl Iterator<Item = &'d TableDef>,
    number: usize,
) -> BTreeSet<String> {
    defs.filter(|d| d.shards as usize > number)
        .flat_map(|d| {
            std::iter::once(d.fact_cf())
                .chain(d.indexes.iter().map(|ix| index_cf(&d.name, &ix.name)))
        })
        .collect()
}

impl Db {
    /// Opens (or, with `options.create_if_missing`, creates) the database in `dir`: decides
    /// where recovery cuts every store's replay, opens the main store and reads the catalog,
    /// opens every shard store and table, starts the indexer and the analyzer, and resumes
    /// the index backfills a crash interrupted.
    pub fn open(dir: impl AsRef<Path>, mut options: Options) -> Result<Db> {
        let dir = dir.as_ref().to_path_buf();
        let sketches = Arc::new(SketchFactory::default());
        options.validate()?;
        options.store.property_collector = Some(Arc::clone(&sketches) as _);
        options.store.value_upgrade = Some(Arc::new(crate::table::upgrade::RecordUpgrade {
            tables: Arc::clone(&sketches),
        }));
        // Every shard store numbers its writes from one sequencer: a seqno is one commit
        // timestamp across the database (`docs/transactions.md` §1).
        let sequencer = Arc::new(Sequencer::shared(0));
        options.store.sequencer = Some(Arc::clone(&sequencer));
        // Where every store's replay is cut (after a commit across shard stores that did not
        // reach every store), decided before any store opens (`txn.rs`).
        let (recovery, barrier) = Recovery::resolve(&dir, &options, &sequencer)?;
        options.store.drop_seqnos = Arc::new(recovery.state.cut.clone());
        options.store.flush_barrier = Some(Arc::clone(&barrier) as _);
        let main = Arc::new(open_shard_store(&dir, &options, 0)?);
        let catalog = family_or_create(&main.store, CATALOG_CF)?;
        let mut read = read_catalog(&main.store, &catalog)?;
        let layouts = table_layouts(&read.defs, std::mem::take(&mut read.layouts))?;
        let shared = Shared {
            dir,
            options,
            main: Arc::clone(&main),
            shard_stores: RwLock::new(vec![Arc::clone(&main)]),
            catalog,
            tables: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(()),
            gate: RwLock::new(()),
            stripes: Stripes::new(),
            cost_model: RwLock::new(read.cost_model),
            tracker: Tracker::new(),
            analyze_queue: Mutex::new(None),
            analyze_queued: Mutex::new(BTreeSet::new()),
            analyze_done: std::sync::Condvar::new(),
            analyze_stop: std::sync::atomic::AtomicBool::new(false),
            sketches,
            sequencer,
            resolver: Resolver::default(),
            txn_state: Mutex::new(recovery.state.clone()),
        };
        for def in read.defs.values() {
            shared.sketches.learn(def, &layouts[&def.id]);
        }
        shared.adopt(&main, read.defs.values())?;
        let most = read
            .defs
            .values()
            .map(|d| d.shards as usize)
            .max()
            .unwrap_or(1);
        shared.open_shard_stores(most, read.defs.values())?;
        let tables = shared.open_tables(read.defs, read.stats, &layouts)?;
        *shared.tables.write().unwrap_or_else(|p| p.into_inner()) = tables;

        let shared = Arc::new(shared);
        barrier.attach(&shared);
        recovery.opened(&shared)?;
        let db = Db::start(shared)?;
        for table in read.reanalyze {
            db.shared.queue_analyze(&table);
        }
        db.resume_backfills()?;
        Ok(db)
    }

    /// The database over `shared`, its indexer and analyzer threads started.
    fn start(shared: Arc<Shared>) -> Result<Db> {
        let indexer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("strata-indexer".into())
                .spawn(move || shared.run_indexer())
                .map_err(spawn_error)?
        };
        let (queue, queued) = std::sync::mpsc::channel::<String>();
        *lock(&shared.analyze_queue) = Some(queue);
        let analyzer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("strata-analyze".into())
                .spawn(move || shared.run_analyzer(&queued))
                .map_err(spawn_error)?
        };
        Ok(Db {
            shared,
            indexer: Some(indexer),
            analyzer: Some(analyzer),
        })
    }

    /// Finishes the index backfills a crash interrupted (indexes not yet `Ready`).
    fn resume_backfills(&self) -> Result<()> {
        let unfinished: Vec<(String, String)> = self
            .shared
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
            let _ddl = lock(&self.shared.ddl);
            for (table, index) in unfinished {
                tracing::info!(%table, %index, "resuming an interrupted index backfill");
                self.backfill(&table, &index)?;
            }
        }
        Ok(())
    }

    /// Shard store 0, the database directory's own store: it holds the catalog and shard 0 of
    /// every table (for statistics, flushes and compaction).
    pub fn store(&self) -> &Store {
        &self.shared.main.store
    }

    /// Runs `f` on every open shard store, in shard order (for flushes, compaction and
    /// statistics of sharded tables).
    pub fn for_each_store(&self, mut f: impl FnMut(usize, &Store) -> Result<()>) -> Result<()> {
        for s in self.shared.stores() {
            f(s.number, &s.store)?;
        }
        Ok(())
    }

    /// The definitions of every table, by name.
    pub fn tables(&self) -> Vec<TableDef> {
        self.shared
            .read_tables()
            .values()
            .map(|t| t.def.clone())
            .collect()
    }

    /// The definition of table `name`.
    pub fn table(&self, name: &str) -> Result<TableDef> {
        Ok(self.shared.handle(name)?.def.clone())
    }

    /// The row layouts of `table`: what decodes its stored rows (version 3, which name a
    /// layout instead of their fields) for a reader of its fact families' raw bytes
    /// ([`Layouts::decode`]).
    pub fn row_layouts(&self, table: &str) -> Result<Arc<Layouts>> {
        Ok(Arc::clone(&self.shared.handle(table)?.layouts))
    }

    /// The statistics of the last [`Db::analyze`] of `table`, if any.
    pub fn table_stats(&self, table: &str) -> Result<Option<TableStats>> {
        Ok(self.shared.handle(table)?.stats.clone())
    }

    /// Flushes every family of every shard store.
    pub fn flush(&self) -> Result<()> {
        self.for_each_store(|_, store| Ok(store.flush_all()?))
    }

    /// Compacts `table`'s fact and index families in every shard to one sorted run each, and
    /// returns when done: old versions and tombstones are gone, and the table files' sketches
    /// count each row once.
    ///
    /// Rows stored with their names (written before row layouts, or by an older build) have
    /// their layouts added first, so the compaction stores every row by its layout.
    pub fn compact(&self, table: &str) -> Result<()> {
        let t = self.shared.handle(table)?;
        for shard in &t.shards {
            let store = &shard.store.store;
            for kv in store.iter(&shard.fact, ReadOptions::default())? {
                let (k, v) = kv?;
                if v.first() == Some(&RECORD_LAID_OUT) {
                    continue;
                }
                let record =
                    Record::decode(&v).map_err(|e| record_corrupt(shard.fact.name(), &k, e))?;
                self.shared.row_head(&t, &record)?;
            }
        }
        for shard in &t.shards {
            let store = &shard.store.store;
            for cf in std::iter::once(&shard.fact).chain(&shard.indexes) {
                store.compact_range(cf, ..)?;
            }
        }
        Ok(())
    }

    fn stop_indexer(&mut self) {
        self.shared.tracker.stop();
        if let Some(indexer) = self.indexer.take()
            && indexer.join().is_err()
        {
            tracing::error!("the indexer thread panicked");
        }
        // Closing the queue ends the analyzer; an auto-analysis under way is abandoned rather
        // than waited for (a large table takes seconds, and the next open counts anew).
        self.shared.analyze_stop.store(true, Ordering::Relaxed);
        lock(&self.shared.analyze_queue).take();
        if let Some(analyzer) = self.analyzer.take()
            && analyzer.join().is_err()
        {
            tracing::error!("the analyzer thread panicked");
        }
    }

    /// Closes the database, reporting the final log syncs. Outbox entries not yet applied stay
    /// in their shards and are applied after the next open.
    pub fn close(mut self) -> Result<()> {
        self.stop_indexer();
        let shared = Arc::clone(&self.shared);
        drop(self);
        let Ok(shared) = Arc::try_unwrap(shared) else {
            return Ok(()); // unreachable: the indexer was the only other owner
        };
        let Shared {
            main,
            shard_stores,
            tables,
            ..
        } = shared;
        drop(tables);
        drop(main);
        let mut result = Ok(());
        for s in shard_stores.into_inner().unwrap_or_else(|p| p.into_inner()) {
            if let Ok(s) = Arc::try_unwrap(s) {
                let closed = s.store.close();
                if result.is_ok() {
                    result = closed.map_err(Error::from);
                }
            }
        }
        result
    }

    /// The row of `table` whose primary key is `key` (one value per key field).
    pub fn get(&self, table: &str, key: &[Value]) -> Result<Option<Record>> {
        let t = self.shared.handle(table)?;
        let values: Vec<&Value> = key.iter().collect();
        let pk = encode_primary_key(&t.def, &values)?;
        self.shared.read_record(&t, &pk)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        self.stop_indexer();
    }
}

/// What the catalog holds, read at open.
struct CatalogContents {
    defs: BTreeMap<String, TableDef>,
    stats: BTreeMap<String, TableStats>,
    /// Tables whose statistics an earlier build stored with a lost float: analysed again.
    reanalyze: Vec<String>,
    cost_model: CostModel,
    /// Each table's row layouts' names sections, by table id and layout number.
    layouts: BTreeMap<u64, BTreeMap<u32, Vec<u8>>>,
}

/// Reads every entry of the catalog family `catalog` of the main store; a key it does not
/// know, or an entry that does not decode, is corruption.
fn read_catalog(store: &Store, catalog: &ColumnFamily) -> Result<CatalogContents> {
    let mut read = CatalogContents {
        defs: BTreeMap::new(),
        stats: BTreeMap::new(),
        reanalyze: Vec::new(),
        cost_model: CostModel::default(),
        layouts: BTreeMap::new(),
    };
    for kv in store.iter(catalog, ReadOptions::default())? {
        let (k, v) = kv?;
        let key = std::str::from_utf8(&k)
            .map_err(|_| catalog_corrupt(&k, CatalogCorruption::KeyNotUtf8))?;
        if let Some(name) = key.strip_prefix(CATALOG_TABLE_PREFIX) {
            let def = TableDef::decode(&v).map_err(|e| catalog_corrupt(&k, e))?;
            if def.name != name {
                let defined = def.name;
                return Err(catalog_corrupt(
                    &k,
                    CatalogCorruption::NameMismatch { defined },
                ));
            }
            read.defs.insert(def.name.clone(), def);
        } else if let Some(name) = key.strip_prefix(CATALOG_STATS_PREFIX) {
            match TableStats::decode(&v) {
                Ok(s) => {
                    read.stats.insert(name.to_owned(), s);
                }
                // An earlier build stored a NaN or an infinity as null: the statistics are
                // unknown, not corrupt. The table plans without them until the analysis
                // queued at open replaces them.
                Err(StatsError::LostFloat) => {
                    tracing::warn!(
                        table = name,
                        "statistics with a lost float; analysing again"
                    );
                    read.reanalyze.push(name.to_owned());
                }
                Err(e) => return Err(catalog_corrupt(&k, CatalogCorruption::Statistics(e))),
            }
        } else if let Some(rest) = key.strip_prefix(CATALOG_LAYOUT_PREFIX) {
            let (table, number) = parse_layout_key(rest).ok_or_else(|| {
                catalog_corrupt(&k, CatalogCorruption::Layout(RecordError::UnknownLayout(0)))
            })?;
            read.layouts
                .entry(table)
                .or_default()
                .insert(number, v.to_vec());
        } else if key == CATALOG_COST_MODEL {
            read.cost_model = serde_json::from_slice::<CostModel>(&v)
                .ok()
                .filter(CostModel::is_valid)
                .ok_or_else(|| catalog_corrupt(&k, CatalogCorruption::CostModel))?;
        } else if key != CATALOG_NEXT_ID {
            return Err(catalog_corrupt(&k, CatalogCorruption::UnknownKey));
        }
    }
    Ok(read)
}

/// Each defined table's layouts, numbered 0, 1, 2, … (those of a table no longer defined
/// were added by a write racing its drop: nothing reads them). Known before any store opens:
/// a flush during its recovery sketches rows stored by them.
fn table_layouts(
    defs: &BTreeMap<String, TableDef>,
    mut layouts: BTreeMap<u64, BTreeMap<u32, Vec<u8>>>,
) -> Result<BTreeMap<u64, Arc<Layouts>>> {
    let mut table_layouts = BTreeMap::new();
    for def in defs.values() {
        let sections = layouts.remove(&def.id).unwrap_or_default();
        // The first number missing below the highest, if any.
        let gap = (0u32..).zip(sections.keys()).find(|(n, k)| n != *k);
        let of_table = match gap {
            None => Layouts::from_sections(sections.into_values()),
            Some((missing, _)) => Err(RecordError::UnknownLayout(u64::from(missing))),
        }
        .map_err(|e| {
            catalog_corrupt(
                layout_key(def.id, 0).as_bytes(),
                CatalogCorruption::Layout(e),
            )
        })?;
        table_layouts.insert(def.id, Arc::new(of_table));
    }
    Ok(table_layouts)
}

impl Shared {
    /// Every table of `defs` on its open shard stores' families, with its statistics and
    /// layouts. A family the catalog names that a store lacks is corruption.
    fn open_tables(
        &self,
        defs: BTreeMap<String, TableDef>,
        mut stats: BTreeMap<String, TableStats>,
        layouts: &BTreeMap<u64, Arc<Layouts>>,
    ) -> Result<BTreeMap<String, Arc<Table>>> {
        let family = |store: &Store, name: &str| {
            store
                .cf(name)
                .map_err(|_| catalog_corrupt(&[], CatalogCorruption::MissingFamily(name.into())))
        };
        let stores = self.stores();
        let mut tables = BTreeMap::new();
        for (name, def) in defs {
            let mut shards = Vec::with_capacity(def.shards as usize);
            for shard_store in &stores[..def.shards as usize] {
                let store = &shard_store.store;
                shards.push(TableShard {
                    store: Arc::clone(shard_store),
                    fact: family(store, &def.fact_cf())?,
                    indexes: def
                        .indexes
                        .iter()
                        .map(|ix| family(store, &index_cf(&def.name, &ix.name)).map(index_family))
                        .collect::<Result<Vec<_>>>()?,
                });
            }
            let of_table = Arc::clone(&layouts[&def.id]);
            let table = Table::new(def, shards, stats.remove(&name), of_table);
            tables.insert(name, Arc::new(table));
        }
        Ok(tables)
    }
}

/// The directory of shard store `number` of the database in `dir`.
pub(crate) fn shard_path(dir: &Path, options: &Options, number: usize) -> PathBuf {
    if number == 0 {
        dir.to_path_buf()
    } else {
        match options.shard_dirs.get(number - 1) {
            Some(p) => p.clone(),
            None => dir.join(format!("{SHARD_DIR_PREFIX}{number}")),
        }
    }
}

/// Opens shard store `number` of the database in `dir`, with its outbox family.
fn open_shard_store(dir: &Path, options: &Options, number: usize) -> Result<ShardStore> {
    let path = shard_path(dir, options, number);
    let store = Store::open(&path, options.store.clone())?;
    let outbox = family_or_create(&store, OUTBOX_CF)?;
    Ok(ShardStore {
        number,
        store,
        outbox,
    })
}

impl Shared {
    /// Every open shard store, by number.
    pub(crate) fn stores(&self) -> Vec<Arc<ShardStore>> {
        self.shard_stores
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Opens shard stores up to `count` (exclusive) that are not open yet.
    pub(super) fn open_shard_stores<'d>(
        &self,
        count: usize,
        defs: impl Iterator<Item = &'d TableDef> + Clone,
    ) -> Result<()> {
        loop {
            let have = self.stores().len();
            if have >= count {
                return Ok(());
            }
            let store = Arc::new(open_shard_store(&self.dir, &self.options, have)?);
            self.adopt(&store, defs.clone())?;
            self.shard_stores
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .push(store);
        }
    }

    /// Drops the families of a newly opened store that no definition names (a crash between
    /// creating a family and recording it, or between forgetting one and dropping it), and
    /// registers its outbox with the tracker.
    fn adopt<'d>(
        &self,
        shard: &ShardStore,
        defs: impl Iterator<Item = &'d TableDef>,
    ) -> Result<()> {
        let store = &shard.store;
        let wanted = wanted_families(defs, shard.number);
        for name in store.column_families() {
            let ours = name.starts_with(FACT_CF_PREFIX) || name.starts_with(INDEX_CF_PREFIX);
            if ours && !wanted.contains(&name) {
                tracing::info!(family = %name, shard = shard.number, "dropping a column family no table names");
                store.drop_column_family(&store.cf(&name)?)?;
            }
        }
        let (mut first, mut last, mut pending) = (None, None, 0u64);
        for kv in store.iter(&shard.outbox, ReadOptions::default())? {
            let (k, _) = kv?;
            let seq = outbox_seq(&k).ok_or_else(|| {
                let len = k.len();
                Error::corrupt(
                    OUTBOX_CF,
                    &k,
                    Corruption::Outbox(OutboxCorruption::KeyLength { len }),
                )
            })?;
            first.get_or_insert(seq);
            last = Some(seq);
            pending += 1;
        }
        let next = match last {
            None => 0,
            Some(l) => l.checked_add(1).ok_or_else(|| {
                let key = l.to_be_bytes();
                Error::corrupt(
                    OUTBOX_CF,
                    &key,
                    Corruption::Outbox(OutboxCorruption::LastNumber),
                )
            })?,
        };
        self.tracker
            .add_shard(shard.number, first.unwrap_or(next), next, pending);
        Ok(())
    }

    pub(crate) fn read_tables(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Table>>> {
        self.tables.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn publish(&self, table: Table) {
        self.sketches.learn(&table.def, &table.layouts);
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

    /// The table whose id is `id`, if it still exists.
    pub(crate) fn handle_by_id(&self, id: u64) -> Option<Arc<Table>> {
        self.read_tables()
            .values()
            .find(|t| t.def.id == id)
            .cloned()
    }

    /// The stored form of `record`, a row of `t`: version 3, by its layout, the layout added
    /// to the catalog (a synced write, before the row's) if the table does not have it yet.
    pub(crate) fn encode_row(&self, t: &Table, record: &Record) -> Result<Vec<u8>> {
        t.layouts.encode(record, |number, section| {
            self.persist_layout(t, number, section)
        })
    }

    /// The head of `record`'s stored form as a row of `t` ([`Shared::encode_row`]): version
    /// and layout number, or version and names where the table's layouts are full.
    pub(crate) fn row_head(&self, t: &Table, record: &Record) -> Result<Vec<u8>> {
        let head = t.layouts.head_for(record, |number, section| {
            self.persist_layout(t, number, section)
        })?;
        Ok(head.unwrap_or_else(|| record.head()))
    }

    /// Makes layout `number` of table `t` durable in the catalog.
    fn persist_layout(&self, t: &Table, number: u32, section: &[u8]) -> Result<()> {
        self.write_catalog(&[(layout_key(t.def.id, number), section.to_vec())], &[])
    }

    /// Writes catalog changes, synced.
    pub(super) fn write_catalog(
        &self,
        puts: &[(String, Vec<u8>)],
        deletes: &[String],
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        for (k, v) in puts {
            batch.put(&self.catalog, k.as_bytes(), v)?;
        }
        for k in deletes {
            batch.delete(&self.catalog, k.as_bytes())?;
        }
        self.main.store.write(batch, WriteOptions::synced())?;
        Ok(())
    }

    /// The next table or index id.
    pub(super) fn next_id(&self) -> Result<u64> {
        let stored = match self
            .main
            .store
            .get(&self.catalog, CATALOG_NEXT_ID.as_bytes())?
        {
            Some(v) => std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| {
                    catalog_corrupt(CATALOG_NEXT_ID.as_bytes(), CatalogCorruption::NextId)
                })?,
            None => 1,
        };
        let used = self
            .read_tables()
            .values()
            .flat_map(|t| std::iter::once(t.def.id).chain(t.def.indexes.iter().map(|ix| ix.id)))
            .max()
            .map_or(1, |m| m + 1);
        Ok(stored.max(used))
    }

    /// The database directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores `model` in the catalog and plans with it from now on; returns it as stored
    /// (as the catalog reads it back, so the constants are the same after reopen to the bit).
    pub(crate) fn store_cost_model(&self, model: CostModel) -> Result<CostModel> {
        let _ddl = lock(&self.ddl);
        let bad = |e: serde_json::Error| Error::InvalidArgument(format!("cost constants: {e}"));
        let bytes = serde_json::to_vec(&model).map_err(bad)?;
        let stored: CostModel = serde_json::from_slice(&bytes).map_err(bad)?;
        self.write_catalog(&[(CATALOG_COST_MODEL.to_owned(), bytes)], &[])?;
        *self.cost_model.write().unwrap_or_else(|p| p.into_inner()) = stored;
        Ok(stored)
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
            &[(
                format!("{CATALOG_STATS_PREFIX}{table}"),
                stats.encode().map_err(|e| Error::Encode {
                    what: Encoded::Statistics,
                    reason: match e {
                        strata_planner::StatsError::Encode(fault) => fault,
                        // `encode` fails only as above; any other kind reads as its data.
                        _ => strata_planner::JsonFault {
                            kind: strata_planner::JsonFaultKind::Data,
                            line: 0,
                            column: 0,
                        },
                    },
                })?,
            )],
            &[],
        )?;
        let mut table = current.with(current.def.clone(), None);
        table.stats = Some(stats);
        self.publish(table);
        Ok(())
    }

    /// The current record at `key` in `t`'s fact family.
    pub(crate) fn read_record(&self, t: &Table, key: &[u8]) -> Result<Option<Record>> {
        let shard = &t.shards[t.fact_shard(key)];
        match shard.store.store.get(&shard.fact, key)? {
            None => Ok(None),
            Some(bytes) => t
                .layouts
                .decode(&bytes)
                .map(Some)
                .map_err(|e| record_corrupt(shard.fact.name(), key, e)),
        }
    }
}
