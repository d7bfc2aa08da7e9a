//! Statistics that keep up with the data: every table file of a fact family carries a sketch
//! of the rows it holds, and the planner merges the live files' sketches with the memtables'
//! exact counts (MyRocks keeps its index statistics in SSTable properties the same way).
//!
//! 1. **Collect.** The store calls `SketchFactory` for each table a flush or compaction
//!    writes. For a fact family it returns a collector that decodes each row's newest
//!    version in the file and feeds a small [`TableStatsBuilder`] (the fields the planner
//!    chooses access paths by — the primary-key, indexed and included fields — and the
//!    table's composite key and index prefixes), and counts the file's tombstones. Other
//!    fields are left to `analyze`: sketching every field made a flush ten times slower.
//!    The sketch is stored as the file's `table.stats` property (`docs/formats/stats.md`).
//! 2. **Merge.** `LiveStats` keeps, per table, the decoded sketch of each live file and
//!    the statistics made from merging them, rebuilt only when the set of live files changes
//!    (a flush or a compaction), never per query.
//! 3. **Count.** At plan time the row count is the files' rows less their tombstones, plus
//!    the memtables' entries less twice their tombstones (a tombstone is an entry and removes
//!    a row), from counts the store keeps as entries go in. A row rewritten in a newer file is
//!    counted in both until compaction merges them, as RocksDB's key estimate does.
//! 4. **Choose.** The distributions come from the last `analyze` while it is fresh (fewer
//!    changes since than the auto-analyze threshold, and the row count within it), else from
//!    the merged sketches, else from a stale `analyze`; either way the row count is the live
//!    one, and `collected_rows` says how many rows the distributions saw.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use strata_planner::{Projection, StatsError, TableStats, TableStatsBuilder};

use crate::error::Result;
use crate::lsm::collect::{CollectorFactory, PropertyCollector};
use crate::lsm::{ColumnFamily, Store};
use crate::table::catalog::TableDef;
use crate::table::codec::format::FACT_CF_PREFIX;
use crate::table::codec::layouts::{Layouts, NONE};
use crate::table::codec::record::RecordError;
use crate::table::codec::row_reader::RowReader;
use crate::table::stats::planning::for_planning;

/// Most fields `analyze` keeps statistics for (and a file's sketch collects).
pub const MAX_ANALYZED_FIELDS: usize = 64;

/// The table-file property holding a fact file's sketch.
pub const STATS_PROPERTY: &str = "table.stats";

/// The version byte [`FileSketch::encode`] writes.
pub const SKETCH_VERSION: u8 = 1;

/// Heavy-hitter counters per column in one file's sketch: a count is at most 1/513 of the
/// file's rows low, and merging files adds their errors.
pub const FILE_COUNTERS: usize = 512;

/// Sample rows per column in one file's sketch; merged in proportion to the files' rows.
pub const FILE_SAMPLE_ROWS: usize = 2048;

/// The largest decompressed sketch accepted (a corrupt length cannot make us allocate more).
pub const MAX_SKETCH_BYTES: usize = 64 << 20;

/// Why a table file's sketch does not encode or decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SketchError {
    /// No bytes at all.
    #[error("empty sketch")]
    Empty,
    /// A version this build does not read.
    #[error("sketch version {0}; this build reads {SKETCH_VERSION}")]
    Version(u8),
    /// The tombstone count is not a varint.
    #[error("bad tombstone count")]
    TombstoneCount,
    /// The rows do not decompress (or would exceed [`MAX_SKETCH_BYTES`]).
    #[error("sketch does not decompress")]
    Decompress,
    /// The rows' statistics builder does not encode or decode.
    #[error("sketch rows: {0}")]
    Rows(StatsError),
    /// The rows do not compress (nothing is stored then).
    #[error("sketch does not compress")]
    Compress,
}

/// One table file's sketch of its rows.
#[derive(Clone, Debug)]
pub struct FileSketch {
    /// Keys whose newest version in the file is a tombstone.
    pub tombstones: u64,
    /// The rows (newest version of each key whose newest version is a value).
    pub rows: TableStatsBuilder,
}

impl FileSketch {
    /// `version:u8 tombstones:varint zstd(rows in the planner's stored form)`; an error if
    /// the rows do not encode or compress (the file is then written without a sketch).
    pub fn encode(&self) -> std::result::Result<Vec<u8>, SketchError> {
        let mut out = vec![SKETCH_VERSION];
        strata_lsm::coding::put_varint(&mut out, self.tombstones);
        let json = self.rows.encode().map_err(SketchError::Rows)?;
        let compressed = zstd::bulk::compress(&json, 3).map_err(|_| SketchError::Compress)?;
        out.extend_from_slice(&compressed);
        Ok(out)
    }

    /// Reads what [`Self::encode`] wrote. Anything else is an error, never a panic.
    pub fn decode(bytes: &[u8]) -> std::result::Result<FileSketch, SketchError> {
        let (&version, rest) = bytes.split_first().ok_or(SketchError::Empty)?;
        if version != SKETCH_VERSION {
            return Err(SketchError::Version(version));
        }
        let (tombstones, used) =
            strata_lsm::coding::get_varint(rest).ok_or(SketchError::TombstoneCount)?;
        let json = zstd::bulk::decompress(&rest[used..], MAX_SKETCH_BYTES)
            .map_err(|_| SketchError::Decompress)?;
        let rows = TableStatsBuilder::decode(&json).map_err(SketchError::Rows)?;
        Ok(FileSketch { tombstones, rows })
    }
}

/// Columns and composite prefixes.
pub(crate) type Shape = (Vec<String>, Vec<Vec<String>>);

/// The columns and composite prefixes statistics are kept for, apart from fields found in
/// the rows: the primary-key fields, every indexed and included field; the key's and each
/// index's composite prefixes.
pub(crate) fn statistics_shape(def: &TableDef) -> Shape {
    let mut columns: Vec<String> = Vec::new();
    let mut add = |f: &String| {
        if !columns.contains(f) && columns.len() < MAX_ANALYZED_FIELDS {
            columns.push(f.clone());
        }
    };
    let mut prefixes: BTreeSet<Vec<String>> = BTreeSet::new();
    for f in &def.primary_key {
        add(f);
    }
    for n in 2..=def.primary_key.len() {
        prefixes.insert(def.primary_key[..n].to_vec());
    }
    for ix in &def.indexes {
        ix.fields.iter().for_each(&mut add);
        if let Projection::Include(extra) = &ix.projection {
            extra.iter().for_each(&mut add);
        }
        for n in 2..=ix.fields.len() {
            prefixes.insert(ix.fields[..n].to_vec());
        }
    }
    // Declared groups, as an index's fields; fields given a target.
    for group in &def.statistics.groups {
        group.iter().for_each(&mut add);
        for n in 2..=group.len() {
            prefixes.insert(group[..n].to_vec());
        }
    }
    def.statistics.targets.keys().for_each(&mut add);
    (columns, prefixes.into_iter().collect())
}

/// Makes the collectors of fact families; knows each table's shape from the catalog.
#[derive(Debug, Default)]
pub(crate) struct SketchFactory {
    /// Fact family name → (columns, prefixes), and the layouts its rows are stored by.
    shapes: RwLock<HashMap<String, (Shape, Arc<Layouts>)>>,
}

impl SketchFactory {
    /// Remembers `def`'s shape and its rows' `layouts` for the collectors of its fact family.
    pub(crate) fn learn(&self, def: &TableDef, layouts: &Arc<Layouts>) {
        let mut shapes = self.shapes.write().unwrap_or_else(|p| p.into_inner());
        shapes.insert(def.fact_cf(), (statistics_shape(def), Arc::clone(layouts)));
    }

    /// The layouts of the rows of fact family `cf`, if its table is known.
    pub(crate) fn layouts_of(&self, cf: &str) -> Option<Arc<Layouts>> {
        let shapes = self.shapes.read().unwrap_or_else(|p| p.into_inner());
        shapes.get(cf).map(|(_, layouts)| Arc::clone(layouts))
    }

    /// Forgets table `def`.
    pub(crate) fn forget(&self, def: &TableDef) {
        let mut shapes = self.shapes.write().unwrap_or_else(|p| p.into_inner());
        shapes.remove(&def.fact_cf());
    }
}

impl CollectorFactory for SketchFactory {
    fn collector(&self, cf: &str) -> Option<Box<dyn PropertyCollector>> {
        if !cf.starts_with(FACT_CF_PREFIX) {
            return None;
        }
        // A table not known yet (a flush during open, before the catalog is read) gets a
        // sketch of its counts only.
        let known = self.layouts_of(cf).is_some();
        let ((columns, prefixes), layouts) = self
            .shapes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(cf)
            .cloned()
            .unwrap_or_else(|| (Shape::default(), Arc::clone(&NONE)));
        let mut wanted: Vec<String> = columns
            .iter()
            .chain(prefixes.iter().flatten())
            .cloned()
            .collect();
        wanted.sort();
        wanted.dedup();
        let tested: Vec<&str> = wanted.iter().map(String::as_str).collect();
        Some(Box::new(SketchCollector {
            counts_only: !known,
            tombstones: 0,
            reader: RowReader::new(&tested, Some(Vec::new())).with_layouts(&layouts),
            rows: TableStatsBuilder::with_limits(
                &columns,
                &prefixes,
                FILE_COUNTERS,
                FILE_SAMPLE_ROWS,
            )
            .without_group_counts(),
        }))
    }
}

struct SketchCollector {
    /// Its table is not known yet (a flush while the database opens, before the catalog is
    /// read): rows are counted, not read (their layouts are not known either).
    counts_only: bool,
    tombstones: u64,
    /// Reads the fields sketched (and only those) of each row: a file's rows share a layout,
    /// so a row costs one comparison of its names and one decode per sketched field.
    reader: RowReader,
    rows: TableStatsBuilder,
}

impl PropertyCollector for SketchCollector {
    fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        let Some(value) = value else {
            self.tombstones += 1;
            return;
        };
        // A record that does not decode is `verify`'s business; statistics skip it.
        match self.reader.test(value) {
            Ok(()) => {}
            Err(RecordError::UnknownLayout(_)) if self.counts_only => self.reader.clear_tested(),
            Err(_) => return,
        }
        let reader = &self.reader;
        self.rows
            .add_row(|f| Some(reader.value_of(f)), key.len() + value.len());
    }

    fn finish(self: Box<Self>) -> Vec<(String, Vec<u8>)> {
        let sketch = FileSketch {
            tombstones: self.tombstones,
            rows: self.rows,
        };
        match sketch.encode() {
            Ok(bytes) => vec![(STATS_PROPERTY.to_owned(), bytes)],
            // The file is still written; its rows count as unsketched (as a file written
            // before sketches were kept) until compaction rewrites it.
            Err(why) => {
                tracing::warn!(%why, "a table file's statistics sketch was not stored");
                Vec::new()
            }
        }
    }
}

/// The sketches of a table's live files, merged.
#[derive(Default)]
pub(crate) struct LiveStats {
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    /// The live files' numbers, per shard, the merge was made from.
    files: Vec<Vec<u64>>,
    /// Decoded sketches by (shard, file number); `None`: the file has none.
    sketches: HashMap<(usize, u64), Option<Arc<FileSketch>>>,
    merged: Option<Arc<Merged>>,
}

/// Statistics from the merged sketches of a table's live files.
pub(crate) struct Merged {
    /// Distributions and counts; `row_count` is the files' rows less their tombstones
    /// (`collected_rows` fixed for planning: see `for_planning`).
    pub(crate) stats: Arc<TableStats>,
    /// Rows the sketches saw (tombstones not subtracted).
    pub(crate) sketched_rows: u64,
    /// Entries less twice the tombstones of the live files without a sketch (written before
    /// sketches were kept, or whose sketch does not decode).
    pub(crate) unsketched_rows: i64,
}

impl LiveStats {
    /// The merged statistics of `t`'s live files, rebuilt when the files changed.
    /// Whether the files' sketches have been merged (since open or the last change of files).
    #[cfg(test)]
    pub(crate) fn is_merged(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merged
            .is_some()
    }

    pub(crate) fn merged<'t, F>(&self, table: &str, facts: F) -> Result<Arc<Merged>>
    where
        F: Iterator<Item = (&'t Store, &'t ColumnFamily)> + Clone,
    {
        let mut files = Vec::new();
        for (store, fact) in facts.clone() {
            files.push(store.table_numbers(fact)?);
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(merged) = &state.merged
            && state.files == files
        {
            return Ok(Arc::clone(merged));
        }
        let mut builder = TableStatsBuilder::new(&[], &[]);
        let (mut tombstones, mut unsketched) = (0u64, 0i64);
        let mut sketches = HashMap::new();
        for (s, (store, fact)) in facts.enumerate() {
            let live = store.collected(fact, STATS_PROPERTY)?;
            for file in live {
                let number = file.number;
                let sketch = match state.sketches.remove(&(s, number)) {
                    Some(known) => known,
                    None => file.property.and_then(|b| match FileSketch::decode(&b) {
                        Ok(sketch) => Some(Arc::new(sketch)),
                        Err(why) => {
                            tracing::warn!(
                                table, shard = s, file = number, %why,
                                "a table file's statistics sketch is unreadable; ignored"
                            );
                            None
                        }
                    }),
                };
                match &sketch {
                    Some(sketch) => {
                        builder.merge(&sketch.rows);
                        tombstones += sketch.tombstones;
                    }
                    None => unsketched += file.entries as i64 - 2 * file.deletions as i64,
                }
                sketches.insert((s, number), sketch);
            }
        }
        let sketched_rows = builder.rows();
        let mut stats = builder.finish();
        stats.row_count = sketched_rows.saturating_sub(tombstones);
        let merged = Arc::new(Merged {
            stats: Arc::new(for_planning(stats)),
            sketched_rows,
            unsketched_rows: unsketched,
        });
        state.files = files;
        state.sketches = sketches;
        state.merged = Some(Arc::clone(&merged));
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use strata_planner::{Predicate, Projection, Query};

    use crate::lsm::WriteOptions;
    use crate::table::codec::record::Record;
    use crate::table::db::Db;
    use crate::table::db::options::Options;
    use crate::table::write::TableBatch;

    #[test]
    fn a_fresh_analysis_plans_without_merging_the_files_sketches() {
        let dir = tempfile::tempdir().expect("dir");
        let options = || Options {
            auto_analyze: false,
            ..Options::default()
        };
        let db = Db::open(dir.path(), options()).expect("open");
        db.create_table("t", ["id"], crate::TableOptions::default())
            .expect("table");
        db.create_index("t", "by_k", ["k"], Projection::KeysOnly)
            .expect("index");
        let mut batch = TableBatch::new();
        for id in 0..2_000i64 {
            let mut r = Record::new();
            r.set("id", id);
            r.set("k", id % 50);
            batch.insert(r);
        }
        db.write("t", batch, WriteOptions::default())
            .expect("write");
        db.flush().expect("flush");
        let query = Query::default().filter(Predicate::eq("k", 7));
        let count = |db: &Db| db.query("t", &query).expect("query").count();

        // Never analysed: the sketches are the statistics.
        assert_eq!(count(&db), 40);
        assert!(db.shared.handle("t").expect("table").live.is_merged());
        db.analyze("t").expect("analyze");
        db.close().expect("close");

        // Analysed and unchanged since: the analysis answers, no sketch is decoded.
        let db = Db::open(dir.path(), options()).expect("reopen");
        assert_eq!(count(&db), 40);
        let stats = db.planning_statistics("t").expect("statistics");
        assert_eq!(stats.row_count, 2_000);
        assert!(!db.shared.handle("t").expect("table").live.is_merged());
        db.close().expect("close");
    }
}
