//! The db room: the handle and what it holds.
//!
//! - [`Db`], the handle users hold, and `Shared`, what it shares with its threads: the shard
//!   stores (shard store `n` holds shard `n` of every table with more than `n` shards), the
//!   published tables, and the parts the other rooms keep in it (the `commit` room's stripes,
//!   resolver, outbox tracker and state file; the `stats` room's sketches and counters).
//! - `Table`, one published definition with its open column families, statistics and caches
//!   (`reader_pool`: the row readers its queries' streams finished with).
//!   Readers and writers take a table's current definition from an `RwLock`ed map of
//!   `Arc<Table>`s; DDL publishes a new `Arc`.
//! - The handle's writes to the catalog (`catalog`: definitions, statistics, layouts), the
//!   shard stores' opening (`adopt`), and `changes` (rows changed since `analyze`, queued
//!   for the analyzer thread).
//!
//! Every room with an operation sits above this one and adds it to `Db` in its own `impl Db`;
//! opening and closing are the `open` room's. Uses `codec`, `catalog`, `stats` and `commit`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use strata_planner::{CostModel, Scope, TableInfo, TableStats, Value};

use crate::error::{CatalogCorruption, Corruption, Error, OutboxCorruption, Result};
use crate::lsm::Sequencer;
use crate::lsm::{ColumnFamily, Hooks, ReadOptions, Store};
use crate::table::catalog::covering::FastRowsCache;
use crate::table::catalog::entry::{encode_primary_key, record_corrupt};
use crate::table::catalog::{IndexDef, TableDef, index_cf};
use crate::table::codec::format::{
    CATALOG_CF, CATALOG_LAYOUT_PREFIX, CHANGES_CF, FACT_CF_PREFIX, INDEX_CF_PREFIX, OUTBOX_CF,
    RECORD_LAID_OUT, SHARD_DIR_PREFIX,
};
use crate::table::codec::key::decode_value;
use crate::table::codec::layouts::Layouts;
use crate::table::codec::record::Record;
use crate::table::codec::row_reader::RowReader;
use crate::table::commit::change_log::FeedRegistry;
use crate::table::commit::outbox::{Tracker, outbox_seq};
use crate::table::commit::resolver::Resolver;
use crate::table::db::options::Options;
use crate::table::db::reader_pool::ReaderPool;

use crate::table::stats::advice::Usage;
use crate::table::stats::order::AnalysisOrder;
use crate::table::stats::planning::{Planning, for_planning};
use crate::table::stats::sketch::{LiveStats, SketchFactory};

use crate::table::commit::stripes::Stripes;
use crate::table::commit::txn_state::TxnState;

pub(crate) mod catalog;
pub(crate) mod changes;
pub(crate) mod options;
pub(crate) mod reader_pool;

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
    pub(crate) shared: Arc<Shared>,
    pub(crate) indexer: Option<std::thread::JoinHandle<()>>,
    pub(crate) analyzer: Option<std::thread::JoinHandle<()>>,
    /// Dropped at close: disconnects `Shared::analyze_stop`.
    pub(crate) stop_analyzer: Option<crossbeam_channel::Sender<()>>,
}

/// What `Db` and its indexer thread share.
pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    /// What each shard store is opened with: the shared sequencer, the sketch collector, the
    /// record upgrade, the recovery's replay cuts and the flush barrier.
    pub(crate) hooks: Hooks,
    /// Shard store 0: the database directory, which also holds the catalog.
    pub(crate) main: Arc<ShardStore>,
    /// Every open shard store, by number (0 is `main`).
    pub(crate) shard_stores: RwLock<Vec<Arc<ShardStore>>>,
    pub(crate) catalog: ColumnFamily,
    pub(crate) tables: RwLock<BTreeMap<String, Arc<Table>>>,
    /// Serialises DDL. Writers never take it.
    pub(crate) ddl: Mutex<()>,
    /// The indexer holds it shared while it applies entries; dropping a table or an index
    /// holds it exclusively, so no family is dropped under the indexer's write.
    pub(crate) gate: RwLock<()>,
    /// Per-key locks for read-modify-write of a row and its index entries.
    pub(crate) stripes: Stripes,
    /// The planner's cost constants: the defaults, or what `calibrate` stored.
    pub(crate) cost_model: RwLock<CostModel>,
    /// Outbox numbers and the indexer's wake-ups.
    pub(crate) tracker: Tracker,
    /// Tables to analyze, for the analyzer thread (a send fails once it has stopped).
    pub(crate) analyze_queue: crossbeam_channel::Sender<String>,
    /// Tables queued or being analysed by it.
    pub(crate) analyze_queued: Mutex<BTreeSet<String>>,
    /// Signalled each time a table leaves `analyze_queued`.
    pub(crate) analyze_done: std::sync::Condvar,
    /// Disconnected at close (the handle drops its sender): the analyzer thread stops, and an
    /// auto-analysis under way stops and is dropped.
    pub(crate) analyze_stop: crossbeam_channel::Receiver<()>,
    /// Collects each fact table file's statistics sketch (`stats/sketch.rs`).
    pub(crate) sketches: Arc<SketchFactory>,
    /// Numbers the writes of every shard store: one commit order for the database.
    pub(crate) sequencer: Arc<Sequencer>,
    /// The keys recent commits wrote, for transactions to validate against (`commit/resolver.rs`).
    pub(crate) resolver: Resolver,
    /// The transaction state file's contents (`commit/txn_state.rs`), rewritten under this lock.
    pub(crate) txn_state: Mutex<TxnState>,
    /// The change feeds: which tables write the change log, retention, waiting readers.
    pub(crate) feeds: FeedRegistry,
    /// The family of the database's own store holding the feeds' definitions and positions.
    pub(crate) feed_defs: ColumnFamily,
}

/// One shard store: an LSM store holding shard `number` of every table with more than
/// `number` shards, and its outbox.
pub(crate) struct ShardStore {
    pub(crate) number: usize,
    pub(crate) store: Store,
    pub(crate) outbox: ColumnFamily,
    /// The change log (`commit/change_log.rs`).
    pub(crate) changes: ColumnFamily,
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
    /// Which of its analyses' statistics may be stored (kept across republished
    /// definitions).
    pub(crate) analyses: Arc<AnalysisOrder>,
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
    /// Row readers its queries' streams finished with.
    pub(crate) readers: ReaderPool,
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
    pub(crate) fn new(
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
            analyses: Arc::default(),
            planning: OnceLock::new(),
            row_layout: OnceLock::new(),
            fast_rows: Arc::default(),
            layouts,
            readers: ReaderPool::default(),
        }
    }

    /// This table with `def` (and `shards`, when given) in place of its own: what it counted
    /// and learnt is kept, what it planned and cached is not.
    pub(crate) fn with(&self, def: TableDef, shards: Option<Vec<TableShard>>) -> Table {
        Table {
            changed: Arc::clone(&self.changed),
            live: Arc::clone(&self.live),
            usage: Arc::clone(&self.usage),
            analyses: Arc::clone(&self.analyses),
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
        crate::table::codec::format::shard_of(pk, self.shards.len())
    }

    /// The shard holding entry `key` of index `ix` for a row of shard `fact_shard`: the row's
    /// own for a local index, the one its leading value hashes to for a global one.
    pub(crate) fn entry_shard(&self, ix: &IndexDef, fact_shard: usize, key: &[u8]) -> usize {
        if ix.scope == Scope::Local || self.shards.len() == 1 {
            return fact_shard;
        }
        crate::table::codec::format::shard_of(leading_value(key), self.shards.len())
    }

    /// Whether any index is maintained through the outbox.
    pub(crate) fn has_async(&self) -> bool {
        self.def.indexes.iter().any(IndexDef::is_async)
    }

    /// The record stored at `key` in `shard`'s fact family, if any bytes are there.
    pub(crate) fn stored_row(
        &self,
        shard: &TableShard,
        key: &[u8],
        bytes: Option<&[u8]>,
    ) -> Result<Option<Record>> {
        bytes
            .map(|b| self.layouts.decode(b))
            .transpose()
            .map_err(|e| record_corrupt(shard.fact.name(), key, e))
    }
}

impl Table {
    /// The planner's view of this table, built once per published definition.
    pub(crate) fn planning(&self) -> &Planning {
        self.planning.get_or_init(|| Planning {
            info: self.def.planner_info(),
            key_only: TableInfo {
                indexes: Vec::new(),
                ..self.def.planner_info()
            },
            analyzed: self
                .stats
                .as_ref()
                .map(|s| Arc::new(for_planning(s.clone()))),
        })
    }

    /// Keeps `reader`'s field names as the table's row layout, if none is kept yet (after a
    /// query read a row: the next queries' readers start from them).
    pub(crate) fn share_row_layout(&self, reader: &RowReader) {
        if self.row_layout.get().is_none() {
            let _ = self.row_layout.set(reader.layout().into());
        }
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

pub(crate) fn catalog_corrupt(key: &[u8], what: CatalogCorruption) -> Error {
    Error::corrupt(CATALOG_CF, key, Corruption::Catalog(what))
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

pub(crate) fn family_or_create(store: &Store, name: &str) -> Result<ColumnFamily> {
    match store.cf(name) {
        Ok(cf) => Ok(cf),
        Err(crate::lsm::Error::NotFound(_)) => Ok(store.create_column_family(name)?),
        Err(e) => Err(e.into()),
    }
}

/// The families shard store `number` must hold for `defs`.
pub(crate) fn wanted_families<'d>(
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
    /// The cost constants the planner uses.
    pub fn cost_model(&self) -> CostModel {
        *self
            .shared
            .cost_model
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The escape hatch: shard store 0, the database directory's own key-value store, raw.
    /// It holds the catalog and shard 0 of every table. Reading it, its statistics, flushing
    /// or compacting it are safe; **a write through it bypasses the table layer** — no index
    /// maintenance, no outbox, no unique check, no transaction validation — and can leave
    /// indexes that `verify` reports. Other shards: [`Db::for_each_store`].
    pub fn raw_store(&self) -> &Store {
        &self.shared.main.store
    }

    /// [`Db::raw_store`], under the name that did not say what it hands out.
    #[deprecated(
        since = "0.2.0",
        note = "renamed raw_store: writes through it skip indexes"
    )]
    pub fn store(&self) -> &Store {
        self.raw_store()
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

    /// The row of `table` whose primary key is `key` (one value per key field).
    pub fn get(&self, table: &str, key: &[Value]) -> Result<Option<Record>> {
        let t = self.shared.handle(table)?;
        let values: Vec<&Value> = key.iter().collect();
        let pk = encode_primary_key(&t.def, &values)?;
        self.shared.read_record(&t, &pk)
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
pub(crate) fn open_shard_store(
    dir: &Path,
    options: &Options,
    hooks: &Hooks,
    number: usize,
) -> Result<ShardStore> {
    let path = shard_path(dir, options, number);
    let store = Store::open_with(&path, options.store.clone(), hooks.clone())?;
    let outbox = family_or_create(&store, OUTBOX_CF)?;
    let changes = family_or_create(&store, CHANGES_CF)?;
    Ok(ShardStore {
        number,
        store,
        outbox,
        changes,
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
    pub(crate) fn open_shard_stores<'d>(
        &self,
        count: usize,
        defs: impl Iterator<Item = &'d TableDef> + Clone,
    ) -> Result<()> {
        loop {
            let have = self.stores().len();
            if have >= count {
                return Ok(());
            }
            let store = Arc::new(open_shard_store(
                &self.dir,
                &self.options,
                &self.hooks,
                have,
            )?);
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
    pub(crate) fn adopt<'d>(
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

    pub(crate) fn publish(&self, table: Table) {
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

    /// The database directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The current record at `key` in `t`'s fact family.
    pub(crate) fn read_record(&self, t: &Table, key: &[u8]) -> Result<Option<Record>> {
        let shard = &t.shards[t.fact_shard(key)];
        let bytes = shard.store.store.get(&shard.fact, key)?;
        t.stored_row(shard, key, bytes.as_deref())
    }

    /// [`Shared::read_record`], with the bytes the fact family stores.
    pub(crate) fn read_record_stored(
        &self,
        t: &Table,
        key: &[u8],
    ) -> Result<(Option<Record>, Option<bytes::Bytes>)> {
        let shard = &t.shards[t.fact_shard(key)];
        let bytes = shard.store.store.get(&shard.fact, key)?;
        Ok((t.stored_row(shard, key, bytes.as_deref())?, bytes))
    }
}
