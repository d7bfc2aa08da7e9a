//! The open room: opening a database and closing it.
//!
//! `Db::open` reads the catalog, opens the tables and their shard stores, starts the indexer
//! and analyzer threads and resumes interrupted backfills; `Db::close` (and `Drop`) stops the
//! threads and closes the stores. `upgrade` is the hook that rewrites old records as
//! compaction copies them. The top room: it uses every other and nothing uses it.

pub(crate) mod upgrade;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use strata_planner::{CostModel, IndexState, StatsError, TableStats};

use crate::error::{CatalogCorruption, Error, Result};
use crate::lsm::Sequencer;
use crate::lsm::{ColumnFamily, Hooks, ReadOptions, Store};
use crate::table::catalog::{TableDef, index_cf};
use crate::table::codec::format::{
    CATALOG_CF, CATALOG_COST_MODEL, CATALOG_LAYOUT_PREFIX, CATALOG_NEXT_ID, CATALOG_STATS_PREFIX,
    CATALOG_TABLE_PREFIX, CHANGES_CF, FEEDS_CF,
};
use crate::table::codec::layouts::Layouts;
use crate::table::codec::record::RecordError;
use crate::table::commit::change_log::FeedRegistry;
use crate::table::commit::outbox::Tracker;
use crate::table::commit::resolver::Resolver;
use crate::table::db::options::Options;
use crate::table::stats::sketch::SketchFactory;

use crate::table::commit::stripes::Stripes;

use crate::table::db::{
    Db, Shared, Table, TableShard, catalog_corrupt, family_or_create, index_family, layout_key,
    lock, open_shard_store,
};
use crate::table::txn::recovery::Recovery;

impl Db {
    /// Opens (or, with `options.create_if_missing`, creates) the database in `dir`: decides
    /// where recovery cuts every store's replay, opens the main store and reads the catalog,
    /// opens every shard store and table, starts the indexer and the analyzer, and resumes
    /// the index backfills a crash interrupted.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        let dir = dir.as_ref().to_path_buf();
        let sketches = Arc::new(SketchFactory::default());
        options.validate()?;
        let property_collector = Some(Arc::clone(&sketches) as _);
        let value_upgrade = Some(Arc::new(crate::table::open::upgrade::RecordUpgrade {
            tables: Arc::clone(&sketches),
        }) as _);
        // Every shard store numbers its writes from one sequencer: a seqno is one commit
        // timestamp across the database (`docs/transactions.md` §1).
        let sequencer = Arc::new(Sequencer::shared(0));
        // Where every store's replay is cut (after a commit across shard stores that did not
        // reach every store), decided before any store opens (`txn/recovery.rs`).
        let (recovery, barrier) = Recovery::resolve(&dir, &options, &sequencer)?;
        // What every shard store takes part in (the store's extension point).
        let hooks = Hooks {
            sequencer: Some(Arc::clone(&sequencer)),
            property_collector,
            value_upgrade,
            drop_seqnos: Arc::new(recovery.state.cut.clone()),
            flush_barrier: Some(Arc::clone(&barrier) as _),
            // The change log is only ever iterated (`commit/change_log.rs`).
            scan_only_families: Arc::new(vec![CHANGES_CF.to_string()]),
        };
        let main = Arc::new(open_shard_store(&dir, &options, &hooks, 0)?);
        let catalog = family_or_create(&main.store, CATALOG_CF)?;
        let feed_defs = family_or_create(&main.store, FEEDS_CF)?;
        let mut read = read_catalog(&main.store, &catalog)?;
        let layouts = table_layouts(&read.defs, std::mem::take(&mut read.layouts))?;
        let (queue, queued) = crossbeam_channel::unbounded::<String>();
        let (stop_analyzer, stopped) = crossbeam_channel::bounded::<()>(0);
        let shared = Shared {
            dir,
            options,
            hooks,
            main: Arc::clone(&main),
            shard_stores: RwLock::new(vec![Arc::clone(&main)]),
            catalog,
            tables: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(()),
            gate: RwLock::new(()),
            stripes: Stripes::new(),
            cost_model: RwLock::new(read.cost_model),
            tracker: Tracker::new(),
            analyze_queue: queue,
            analyze_queued: Mutex::new(BTreeSet::new()),
            analyze_done: std::sync::Condvar::new(),
            analyze_stop: stopped,
            sketches,
            sequencer,
            resolver: Resolver::default(),
            txn_state: Mutex::new(recovery.state.clone()),
            feeds: FeedRegistry::default(),
            feed_defs,
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
        shared.load_feeds()?;

        let shared = Arc::new(shared);
        barrier.attach(&shared);
        recovery.opened(&shared)?;
        let db = Db::start(shared, queued, stop_analyzer)?;
        for table in read.reanalyze {
            db.shared.queue_analyze(&table);
        }
        db.resume_backfills()?;
        Ok(db)
    }

    /// The database over `shared`, its indexer and analyzer threads started (the analyzer
    /// takes `queued`, the receiving end of `shared.analyze_queue`; dropping `stop_analyzer`
    /// stops it).
    fn start(
        shared: Arc<Shared>,
        queued: crossbeam_channel::Receiver<String>,
        stop_analyzer: crossbeam_channel::Sender<()>,
    ) -> Result<Db> {
        let indexer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("strata-indexer".into())
                .spawn(move || shared.run_indexer())
                .map_err(spawn_error)?
        };
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
            stop_analyzer: Some(stop_analyzer),
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

    fn stop_indexer(&mut self) {
        self.shared.tracker.stop();
        if let Some(indexer) = self.indexer.take()
            && indexer.join().is_err()
        {
            tracing::error!("the indexer thread panicked");
        }
        // Closing the queue ends the analyzer; an auto-analysis under way is abandoned rather
        // than waited for (a large table takes seconds, and the next open counts anew).
        drop(self.stop_analyzer.take());
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

/// The table id and layout number of a layout's catalog key, after its prefix; `None` for
/// anything else than two decimal numbers (the shortest form: the key is rebuilt from them).
fn parse_layout_key(rest: &str) -> Option<(u64, u32)> {
    let (table, number) = rest.split_once('/')?;
    let (table, number) = (table.parse::<u64>().ok()?, number.parse::<u32>().ok()?);
    (format!("{table}/{number}") == rest).then_some((table, number))
}

/// A background thread that could not be started.
fn spawn_error(e: std::io::Error) -> Error {
    crate::lsm::Error::io(crate::lsm::IoOp::Spawn, Path::new(""), e).into()
}
