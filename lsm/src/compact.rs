//! Leveled compaction: merging tables down the levels so reads touch few tables and old
//! versions and tombstones go away.
//!
//! The shape (LevelDB's, with RocksDB's defaults):
//! - Level 0 holds flushed memtables, newest first; they may overlap. Levels 1 and deeper are
//!   each one sorted run of tables that do not overlap.
//! - Level 1 is kept under `level1_bytes`, and each deeper level under `level_size_ratio`
//!   times the one above; the last level has no limit.
//!
//! Which compaction runs next (`pick`): each level gets a score, level 0 its table count over
//! `l0_compaction_trigger`, deeper levels their bytes over their target. The highest score of
//! at least 1 wins, over every family:
//! - a level-0 compaction takes every level-0 table (taking only some could move a newer
//!   version below an older one that stays) and the level-1 tables they overlap;
//! - a level-n compaction takes one table, the next after the level's compact pointer, and
//!   the level-(n+1) tables it overlaps. With none, the table just moves down (an edit, no
//!   I/O).
//!
//! Running one (`run`):
//! 1. merge the inputs in internal-key order;
//! 2. keep each version some reader can see ([`Retention`], as a flush does); drop a
//!    tombstone when every reader sees it and no deeper level can hold its key, since then
//!    there is nothing left for it to hide;
//! 3. write tables of about `target_table_bytes`, splitting only between user keys so levels
//!    stay non-overlapping by user key; each is checksummed block by block as it is written,
//!    synced, and opened back, which reads its footer, index and filter;
//! 4. sync the directory, then install: one manifest edit removes the inputs and adds the
//!    outputs, and the family's sources swap in the same step;
//! 5. delete the inputs (readers still holding them keep the open mapping).
//!
//! A crash before step 4's edit reaches the manifest leaves the old tables and stray outputs;
//! after it, the new tables and stray inputs. Open removes whatever the manifest does not
//! name. Tables being compacted are marked, so compactions on other threads (and
//! `compact_range`) pick disjoint inputs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use strata_sstable::{TableBuilder, ValueKind};

use crate::SeqNo;
use crate::cf::{CfShared, LevelIo};
use crate::collect::Collecting;
use crate::edit::VersionEdit;
use crate::error::{Error, IoContext, IoOp, Result};
use crate::flush::{Retention, open_table_at};
use crate::format::FileKind;
use crate::fs::WritableFile;
use crate::iter::merge::MergingIter;
use crate::iter::source::{AnySource, LevelSource, TableSource};
use crate::manifest::file_path;
use crate::store::{Shared, Versions};
use crate::sync::lock;
use crate::version::{SuperVersion, TableFile};

/// One compaction: inputs from `level` and `output_level`, output to `output_level`.
pub(crate) struct Compaction {
    cf: Arc<CfShared>,
    level: usize,
    output_level: usize,
    /// Tables from `level` (level 0: newest first).
    inputs: Vec<Arc<TableFile>>,
    /// Tables from `output_level` that overlap the inputs, in key order.
    overlapping: Vec<Arc<TableFile>>,
    /// The family's sources when the compaction was picked: what lies below `output_level`.
    version: Arc<SuperVersion>,
    /// Asked for by `compact_range`: always rewritten, never just moved, so what it may drop
    /// is dropped.
    manual: bool,
}

impl Compaction {
    fn all_inputs(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.inputs.iter().chain(&self.overlapping)
    }

    /// Marks the inputs as being compacted. REQUIRES: the versions lock, and no input marked.
    fn mark(&self) {
        for table in self.all_inputs() {
            table.compacting.store(true, Ordering::Release);
        }
    }

    fn unmark(&self) {
        for table in self.all_inputs() {
            table.compacting.store(false, Ordering::Release);
        }
    }

    fn is_trivial_move(&self) -> bool {
        !self.manual && self.level > 0 && self.inputs.len() == 1 && self.overlapping.is_empty()
    }
}

/// Unmarks a compaction's inputs however it ends.
struct Marked<'a>(&'a Compaction);

impl Drop for Marked<'_> {
    fn drop(&mut self) {
        self.0.unmark();
    }
}

/// Level `level`'s size target (levels 1 and deeper).
fn target_bytes(options: &crate::Options, level: usize) -> u64 {
    let mut target = options.level1_bytes;
    for _ in 1..level {
        target = target.saturating_mul(options.level_size_ratio);
    }
    target
}

fn level_bytes(tables: &[Arc<TableFile>]) -> u64 {
    tables.iter().map(|t| t.meta.file_size).sum()
}

/// The range `[smallest, largest]` the tables cover.
fn key_range(tables: &[Arc<TableFile>]) -> Option<(&[u8], &[u8])> {
    let smallest = tables.iter().map(|t| &t.meta.smallest_key[..]).min()?;
    let largest = tables.iter().map(|t| &t.meta.largest_key[..]).max()?;
    Some((smallest, largest))
}

/// The tables of a sorted level that meet `[lower, upper]`.
fn overlapping(tables: &[Arc<TableFile>], lower: &[u8], upper: &[u8]) -> Vec<Arc<TableFile>> {
    tables
        .iter()
        .filter(|t| t.overlaps(Some(lower), Some(upper)))
        .cloned()
        .collect()
}

/// The compaction scores of one family's levels (all but the last), as `(score, level)`;
/// `pick` ranks them across families.
fn scores(options: &crate::Options, version: &SuperVersion) -> Vec<(f64, usize)> {
    let last = options.num_levels - 1;
    (0..last)
        .map(|level| {
            let score = if level == 0 {
                version.levels[0].len() as f64 / options.l0_compaction_trigger as f64
            } else {
                level_bytes(&version.levels[level]) as f64 / target_bytes(options, level) as f64
            };
            (score, level)
        })
        .collect()
}

/// A compaction of `level` in `version`, if one can run without touching a table another
/// compaction holds. REQUIRES: the versions lock.
fn build(cf: &Arc<CfShared>, version: &Arc<SuperVersion>, level: usize) -> Option<Compaction> {
    let output_level = level + 1;
    let (inputs, overlapping) = if level == 0 {
        let inputs = version.levels[0].clone();
        let (lower, upper) = key_range(&inputs)?;
        let next = overlapping(&version.levels[1], lower, upper);
        (inputs, next)
    } else {
        let tables = &version.levels[level];
        let pointer = lock(&cf.compact_pointer)[level].clone();
        let start = pointer.map_or(0, |p| {
            tables.partition_point(|t| t.meta.smallest_key <= p) % tables.len().max(1)
        });
        // Round the level from the pointer; the first table whose compaction is free wins.
        let mut found = None;
        for i in 0..tables.len() {
            let table = &tables[(start + i) % tables.len()];
            if table.is_compacting() {
                continue;
            }
            let next = overlapping(
                &version.levels[output_level],
                &table.meta.smallest_key,
                &table.meta.largest_key,
            );
            if next.iter().all(|t| !t.is_compacting()) {
                found = Some((vec![Arc::clone(table)], next));
                break;
            }
        }
        let (inputs, next) = found?;
        lock(&cf.compact_pointer)[level] = Some(inputs[0].meta.largest_key.clone());
        (inputs, next)
    };
    if inputs.is_empty() || inputs.iter().chain(&overlapping).any(|t| t.is_compacting()) {
        return None;
    }
    Some(Compaction {
        cf: Arc::clone(cf),
        level,
        output_level,
        inputs,
        overlapping,
        version: Arc::clone(version),
        manual: false,
    })
}

/// The most urgent compaction over every family, marked. REQUIRES: the versions lock.
fn pick(shared: &Shared, _versions: &Versions) -> Option<Compaction> {
    let mut candidates: Vec<(f64, usize, Arc<CfShared>, Arc<SuperVersion>)> = Vec::new();
    for cf in shared.cfs_read().values() {
        let version = cf.current();
        for (score, level) in scores(&shared.options, &version) {
            if score >= 1.0 {
                candidates.push((score, level, Arc::clone(cf), Arc::clone(&version)));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
    let compaction = candidates
        .iter()
        .find_map(|(_, level, cf, version)| build(cf, version, *level))?;
    compaction.mark();
    Some(compaction)
}

/// One step of a compaction thread: runs the most urgent compaction, if any is due, and says
/// whether it did anything.
pub(crate) fn step(shared: &Shared) -> bool {
    let compaction = {
        let versions = lock(&shared.versions);
        pick(shared, &versions)
    };
    let Some(compaction) = compaction else {
        return false;
    };
    match execute(shared, &compaction) {
        Ok(()) | Err(Error::Closed) => {}
        Err(error) => {
            shared.fail(error);
        }
    }
    true
}

/// Runs a marked compaction and installs its result; unmarks it however it ends.
/// `Err(Closed)` when the store began closing meanwhile (nothing changed).
fn execute(shared: &Shared, compaction: &Compaction) -> Result<()> {
    let _marked = Marked(compaction);
    let started = Instant::now();
    if compaction.is_trivial_move() {
        return move_down(shared, compaction);
    }
    let outputs = match write_outputs(shared, compaction) {
        Ok(outputs) => outputs,
        Err((error, written)) => {
            for number in written {
                let _ = shared
                    .fs
                    .remove_file(&file_path(&shared.dir, FileKind::Table, number));
            }
            return Err(error);
        }
    };
    // 4. Install.
    let Some(outputs) = install(shared, compaction, outputs)? else {
        return Ok(()); // the family was dropped meanwhile
    };
    // 5. The inputs go.
    finish(shared, compaction, &outputs, started);
    Ok(())
}

/// A compaction of one table into a level where nothing overlaps it: the table moves down,
/// unrewritten (one manifest edit).
fn move_down(shared: &Shared, compaction: &Compaction) -> Result<()> {
    let cf = &compaction.cf;
    let table = &compaction.inputs[0];
    let edit = VersionEdit {
        removed_tables: vec![(cf.id, compaction.level as u32, table.meta.number)],
        added_tables: vec![(cf.id, compaction.output_level as u32, table.meta.clone())],
        ..VersionEdit::default()
    };
    let mut versions = lock(&shared.versions);
    if cf.is_dropped() {
        return Ok(());
    }
    shared.log_edit(&mut versions, &edit)?;
    cf.update(|version| {
        version.levels[compaction.level].retain(|t| !Arc::ptr_eq(t, table));
        insert_sorted(
            &mut version.levels[compaction.output_level],
            Arc::clone(table),
        );
    });
    tracing::debug!(cf = %cf.name, table = table.meta.number, from = compaction.level, "moved a table down a level");
    Ok(())
}

/// Step 4 of [`execute`]: one manifest edit swaps the inputs for `outputs`, then the column
/// family's version does. A family dropped meanwhile (`None`), or a store that went
/// read-only (its error), removes the outputs instead.
fn install(
    shared: &Shared,
    compaction: &Compaction,
    outputs: Vec<TableFile>,
) -> Result<Option<Vec<Arc<TableFile>>>> {
    let cf = &compaction.cf;
    let mut versions = lock(&shared.versions);
    if cf.is_dropped() || shared.check_writable().is_err() {
        drop(versions);
        for table in &outputs {
            let _ = shared.fs.remove_file(&table.path);
        }
        shared.check_writable()?;
        return Ok(None);
    }
    let mut edit = VersionEdit {
        next_file_number: Some(versions.state.next_file_number),
        // The outputs may write seqno 0 where the inputs held the store's largest seqno: the
        // manifest keeps it (a store flushed by an older build may not have recorded it).
        last_seqno: compaction.all_inputs().map(|t| t.meta.largest_seqno).max(),
        ..VersionEdit::default()
    };
    for table in &compaction.inputs {
        edit.removed_tables
            .push((cf.id, compaction.level as u32, table.meta.number));
    }
    for table in &compaction.overlapping {
        edit.removed_tables
            .push((cf.id, compaction.output_level as u32, table.meta.number));
    }
    for table in &outputs {
        edit.added_tables
            .push((cf.id, compaction.output_level as u32, table.meta.clone()));
    }
    if let Err(error) = shared.log_edit(&mut versions, &edit) {
        drop(versions);
        // The edit may or may not be in the manifest; the store is read-only now and the
        // next open keeps whichever set of tables the manifest names.
        return Err(error);
    }
    let outputs: Vec<Arc<TableFile>> = outputs.into_iter().map(Arc::new).collect();
    cf.update(|version| {
        let is_input = |t: &Arc<TableFile>| compaction.all_inputs().any(|i| Arc::ptr_eq(i, t));
        version.levels[compaction.level].retain(|t| !is_input(t));
        version.levels[compaction.output_level].retain(|t| !is_input(t));
        for table in &outputs {
            insert_sorted(
                &mut version.levels[compaction.output_level],
                Arc::clone(table),
            );
        }
    });
    drop(versions);

    Ok(Some(outputs))
}

/// Step 5 of [`execute`]: removes the inputs' files and records the compaction's I/O.
fn finish(shared: &Shared, compaction: &Compaction, outputs: &[Arc<TableFile>], started: Instant) {
    let cf = &compaction.cf;
    for table in compaction.all_inputs() {
        if let Err(error) = shared.fs.remove_file(&table.path) {
            tracing::warn!(%error, path = %table.path.display(), "removing a compacted table; the next open will");
        }
    }
    let (read_upper, read_same) = if compaction.level == compaction.output_level {
        (0, level_bytes(&compaction.inputs))
    } else {
        (
            level_bytes(&compaction.inputs),
            level_bytes(&compaction.overlapping),
        )
    };
    let io = LevelIo {
        runs: 1,
        read_upper,
        read_same,
        written: outputs.iter().map(|t| t.meta.file_size).sum(),
        micros: started.elapsed().as_micros() as u64,
    };
    cf.record_io(compaction.output_level, io);
    tracing::debug!(
        cf = %cf.name,
        level = compaction.level,
        inputs = compaction.inputs.len() + compaction.overlapping.len(),
        outputs = outputs.len(),
        read = io.read_upper + io.read_same,
        written = io.written,
        "compacted"
    );
}

/// Inserts `table` into a sorted level at its place by key.
fn insert_sorted(level: &mut Vec<Arc<TableFile>>, table: Arc<TableFile>) {
    let at = level.partition_point(|t| t.meta.smallest_key < table.meta.smallest_key);
    level.insert(at, table);
}

/// Whether a level below `output_level` may hold `key`.
struct Below<'a> {
    levels: &'a [Vec<Arc<TableFile>>],
}

impl Below<'_> {
    /// Whether no level below holds anything: the output is the family's bottom.
    fn is_empty(&self) -> bool {
        self.levels.iter().all(Vec::is_empty)
    }

    fn may_hold(&self, key: &[u8]) -> bool {
        self.levels.iter().any(|tables| {
            let at = tables.partition_point(|t| &t.meta.largest_key[..] < key);
            tables.get(at).is_some_and(|t| t.may_hold(key))
        })
    }
}

/// Steps 1–3: merges the inputs into new tables, each synced, then syncs the directory. On
/// failure, the error and the numbers of the files already created.
///
/// A manual compaction of enough data is cut into key ranges merged in parallel, one thread
/// each (`Options::max_subcompactions`; RocksDB calls them subcompactions): the caller of
/// `compact_range` waits for it, and one merge keeps one core busy. A range holds whole user
/// keys, so each range's retention sees every version of its keys.
fn write_outputs(
    shared: &Shared,
    compaction: &Compaction,
) -> std::result::Result<Vec<TableFile>, (Error, Vec<u64>)> {
    let parts = if compaction.manual {
        shared.options.max_subcompactions
    } else {
        1
    };
    let splits = split_keys(compaction, parts, shared.options.target_table_bytes);
    let snapshots = shared.snapshots.retention_points(&shared.seq);
    let below = Below {
        levels: compaction
            .version
            .levels
            .get(compaction.output_level + 1..)
            .unwrap_or(&[]),
    };
    let bounds: Vec<KeyRange<'_>> = (0..=splits.len())
        .map(|i| {
            let lower = i.checked_sub(1).map(|j| &splits[j][..]);
            (lower, splits.get(i).map(|k| &k[..]))
        })
        .collect();
    let results: Vec<PartResult> = if bounds.len() == 1 {
        vec![write_part(
            shared, compaction, None, None, &snapshots, &below,
        )]
    } else {
        std::thread::scope(|scope| {
            let running: Vec<_> = bounds
                .iter()
                .map(|&(lower, upper)| {
                    let (snapshots, below) = (&snapshots, &below);
                    scope.spawn(move || {
                        write_part(shared, compaction, lower, upper, snapshots, below)
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|part| {
                    part.join().unwrap_or_else(|_| {
                        Err((
                            Error::Internal("a subcompaction thread panicked".into()),
                            Vec::new(),
                        ))
                    })
                })
                .collect()
        })
    };
    let mut written = Vec::new();
    let mut numbers = Vec::new();
    let mut failed = None;
    for result in results {
        match result {
            Ok(part) => {
                numbers.extend(part.iter().map(|(number, _)| *number));
                written.extend(part);
            }
            Err((error, created)) => {
                numbers.extend(created);
                failed.get_or_insert(error);
            }
        }
    }
    if let Some(error) = failed {
        return Err((error, numbers));
    }
    if let Err(error) = shared.fs.sync_dir(&shared.dir) {
        return Err((Error::io(IoOp::SyncDir, &shared.dir, error), numbers));
    }
    let mut tables = Vec::with_capacity(written.len());
    for (number, size) in written {
        match open_table_at(&shared.fs, &shared.dir, &shared.cache, number, size, None) {
            Ok(table) => tables.push(table),
            Err(error) => return Err((error, numbers)),
        }
    }
    Ok(tables)
}

/// `[lower, upper)` in user keys; `None` is unbounded.
type KeyRange<'k> = (Option<&'k [u8]>, Option<&'k [u8]>);

/// A range's tables, `(number, size)` in key order; or the error and the files it created.
type PartResult = std::result::Result<Vec<(u64, u64)>, (Error, Vec<u64>)>;

/// Up to `parts - 1` user keys that cut the compaction's input into ranges of about equal
/// bytes, ascending: the median points of every input table's block separators (each stands
/// for about a block of data). None when the input is under a quarter of `target_bytes` (a
/// thread would cost more than it saves) or has too few blocks.
fn split_keys(compaction: &Compaction, parts: usize, target_bytes: u64) -> Vec<Vec<u8>> {
    let bytes: u64 = compaction.all_inputs().map(|t| t.meta.file_size).sum();
    if parts < 2 || bytes < target_bytes / 4 {
        return Vec::new();
    }
    let mut separators: Vec<&[u8]> = compaction
        .all_inputs()
        .flat_map(|t| t.table.block_separators())
        .collect();
    if separators.len() < parts * 16 {
        return Vec::new();
    }
    separators.sort_unstable();
    let mut splits: Vec<Vec<u8>> = Vec::with_capacity(parts - 1);
    for i in 1..parts {
        let key = separators[separators.len() * i / parts];
        if splits.last().is_none_or(|last| &last[..] < key) {
            splits.push(key.to_vec());
        }
    }
    splits
}

/// Merges the inputs' entries with user keys in `[lower, upper)` into new tables.
fn write_part(
    shared: &Shared,
    compaction: &Compaction,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    snapshots: &[SeqNo],
    below: &Below<'_>,
) -> PartResult {
    let mut sources: Vec<AnySource> = Vec::new();
    if compaction.level == 0 {
        for table in &compaction.inputs {
            sources.push(AnySource::Table(TableSource::new(
                table.table.iter(),
                table.path.clone(),
            )));
        }
    } else {
        sources.push(AnySource::Level(LevelSource::new(
            compaction.inputs.clone(),
        )));
    }
    sources.push(AnySource::Level(LevelSource::new(
        compaction.overlapping.clone(),
    )));
    let mut merged = MergingIter::new(sources);
    match lower {
        // The newest version of `lower` is its first entry.
        Some(lower) => merged.seek(lower, SeqNo::MAX),
        None => merged.seek_to_first(),
    }
    let mut retention = Retention::new(snapshots);
    let mut numbers = Vec::new();
    let mut written = Vec::new();
    while merged.valid() && upper.is_none_or(|upper| merged.user_key() < upper) {
        let number = lock(&shared.versions).reserve_file_number();
        numbers.push(number);
        let collector = shared
            .hooks
            .property_collector
            .as_ref()
            .and_then(|f| f.collector(&compaction.cf.name));
        let collecting = Collecting::new(collector);
        match write_one(
            shared,
            &compaction.cf,
            number,
            upper,
            &mut merged,
            &mut retention,
            below,
            collecting,
        ) {
            Ok(Some(size)) => written.push((number, size)),
            Ok(None) => {
                let _ = shared
                    .fs
                    .remove_file(&file_path(&shared.dir, FileKind::Table, number));
                numbers.pop();
            }
            Err(error) => return Err((error, numbers)),
        }
    }
    if let Err(error) = merged.status() {
        return Err((error, numbers));
    }
    Ok(written)
}

/// Writes table `number` from the merge until it reaches the target size at a user-key
/// boundary, the merge reaches `upper`, or it ends; syncs it and returns its size. `None` if
/// every entry it read was dropped.
#[expect(
    clippy::too_many_arguments,
    reason = "one table of one range: what it reads, keeps and writes are all separate"
)]
fn write_one(
    shared: &Shared,
    cf: &CfShared,
    number: u64,
    upper: Option<&[u8]>,
    merged: &mut MergingIter,
    retention: &mut Retention<'_>,
    below: &Below<'_>,
    mut collecting: Collecting,
) -> Result<Option<u64>> {
    let path = file_path(&shared.dir, FileKind::Table, number);
    let table_error = |e| Error::table(path.clone(), &e);
    let mut file: Box<dyn WritableFile> = shared.fs.create(&path).at(IoOp::Create, &path)?;
    let mut builder = TableBuilder::new(&mut file, cf.table_options(&shared.options.table));
    let target = shared.options.target_table_bytes;
    let mut last_key: Vec<u8> = Vec::new();
    let mut seen = 0u32;
    let bottom = below.is_empty();
    while merged.valid() {
        seen = seen.wrapping_add(1);
        if seen.is_multiple_of(4096) && shared.shutting_down() {
            return Err(Error::Closed);
        }
        let key = merged.user_key();
        if upper.is_some_and(|upper| key >= upper) {
            break;
        }
        // Split only where the user key changes, and before the entry is looked at, so the
        // retention state sees every entry exactly once.
        if builder.entries() > 0 && builder.file_size() >= target && key != &last_key[..] {
            break;
        }
        let seqno = merged.seqno();
        let kind = merged.kind();
        let keep = retention.keep(key, seqno)
            && !(kind == ValueKind::Delete && retention.in_oldest_stripe() && !below.may_hold(key));
        if keep {
            let value = merged.value();
            let upgraded = match (&shared.hooks.value_upgrade, kind) {
                (Some(upgrade), ValueKind::Put) => upgrade.upgrade(&cf.name, &value),
                _ => None,
            };
            let value = upgraded.as_deref().unwrap_or(&value);
            // The last version of a key at the bottom that every reader sees (no snapshot is
            // older) is written with seqno 0: nothing older exists to tell it from, and the
            // entry's trailer shrinks from 3–5 bytes to 1 (RocksDB does the same). The store's
            // last seqno is the manifest's, never a table's, so none is lost.
            let seqno = if bottom && kind == ValueKind::Put && retention.in_oldest_stripe() {
                0
            } else {
                seqno
            };
            builder.add(key, seqno, kind, value).map_err(table_error)?;
            collecting.add(key, kind, value);
            last_key.clear();
            last_key.extend_from_slice(key);
        }
        merged.next();
    }
    merged.status()?;
    if builder.entries() == 0 {
        return Ok(None);
    }
    for (name, value) in collecting.finish() {
        builder.add_property(&name, &value).map_err(table_error)?;
    }
    let info = builder.finish().map_err(table_error)?;
    file.sync_data().at(IoOp::Sync, &path)?;
    drop(file);
    Ok(Some(info.file_size))
}

impl Shared {
    /// Compacts every table of `cf` holding keys in `[lower, upper]` (`None`: unbounded)
    /// down to the deepest level that holds data (at least level 1), after flushing the
    /// family's memtable. Waits for automatic compactions holding the tables it needs.
    pub(crate) fn compact_range(
        &self,
        cf: &Arc<CfShared>,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Result<()> {
        self.seal_and_wait(&[cf.id])?;
        let deepest = {
            let version = cf.current();
            (1..self.options.num_levels)
                .rev()
                .find(|&level| !version.levels[level].is_empty())
                .unwrap_or(1)
        };
        for level in 0..deepest {
            loop {
                cf.check_live()?;
                self.check_writable()?;
                let picked = {
                    let _versions = lock(&self.versions);
                    manual(cf, level, lower, upper)
                };
                if self.run_manual(picked)? {
                    break;
                }
            }
        }
        // The deepest level's tables that hold tombstones are rewritten in place, one by
        // one: a tombstone there has nothing left to hide unless a snapshot still needs it.
        let candidates: Vec<u64> = {
            let version = cf.current();
            bottom_level(&version).map_or_else(Vec::new, |level| {
                version.levels[level]
                    .iter()
                    .filter(|t| t.overlaps(lower, upper) && t.table.properties().deletions > 0)
                    .map(|t| t.meta.number)
                    .collect()
            })
        };
        for number in candidates {
            loop {
                cf.check_live()?;
                self.check_writable()?;
                let picked = {
                    let _versions = lock(&self.versions);
                    rewrite_in_place(cf, number)
                };
                if self.run_manual(picked)? {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Runs a manual compaction; `true` when this step is done (ran, or had nothing to do),
    /// `false` after waiting for a busy input.
    fn run_manual(&self, picked: Manual) -> Result<bool> {
        if self.shutting_down() {
            return Err(Error::Closed);
        }
        match picked {
            Manual::Nothing => Ok(true),
            Manual::Busy => {
                self.wait_background(std::time::Duration::from_millis(50));
                Ok(false)
            }
            Manual::Ready(compaction) => {
                let result = execute(self, &compaction);
                self.wake_background();
                result.map(|()| true)
            }
        }
    }

    /// Sleeps until the background epoch changes or `timeout` passes.
    pub(crate) fn wait_background(&self, timeout: std::time::Duration) {
        let state = lock(&self.background);
        if state.shutdown {
            return;
        }
        let epoch = state.epoch;
        let _ = self
            .background_cv
            .wait_timeout_while(state, timeout, |s| !s.shutdown && s.epoch == epoch);
    }
}

enum Manual {
    Nothing,
    Busy,
    Ready(Compaction),
}

/// The manual compaction of `level`'s tables in `[lower, upper]` into the level below,
/// marked. REQUIRES: the versions lock.
fn manual(cf: &Arc<CfShared>, level: usize, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Manual {
    let version = cf.current();
    let tables = &version.levels[level];
    let inputs: Vec<Arc<TableFile>> = if level == 0 {
        // All of level 0 or none of it: see the module documentation.
        if tables.iter().any(|t| t.overlaps(lower, upper)) {
            tables.clone()
        } else {
            Vec::new()
        }
    } else {
        tables
            .iter()
            .filter(|t| t.overlaps(lower, upper))
            .cloned()
            .collect()
    };
    let Some((smallest, largest)) = key_range(&inputs) else {
        return Manual::Nothing;
    };
    let next = overlapping(&version.levels[level + 1], smallest, largest);
    if inputs.iter().chain(&next).any(|t| t.is_compacting()) {
        return Manual::Busy;
    }
    let compaction = Compaction {
        cf: Arc::clone(cf),
        level,
        output_level: level + 1,
        inputs,
        overlapping: next,
        version: Arc::clone(&version),
        manual: true,
    };
    compaction.mark();
    Manual::Ready(compaction)
}

/// The deepest level holding tables.
fn bottom_level(version: &SuperVersion) -> Option<usize> {
    (1..version.levels.len())
        .rev()
        .find(|&level| !version.levels[level].is_empty())
}

/// Table `number` of the deepest level, to rewrite in place, marked; `Nothing` if it is no
/// longer there. REQUIRES: the versions lock.
fn rewrite_in_place(cf: &Arc<CfShared>, number: u64) -> Manual {
    let version = cf.current();
    let Some(level) = bottom_level(&version) else {
        return Manual::Nothing;
    };
    let Some(table) = version.levels[level]
        .iter()
        .find(|t| t.meta.number == number)
    else {
        return Manual::Nothing;
    };
    if table.is_compacting() {
        return Manual::Busy;
    }
    let compaction = Compaction {
        cf: Arc::clone(cf),
        level,
        output_level: level,
        inputs: vec![Arc::clone(table)],
        overlapping: Vec::new(),
        version: Arc::clone(&version),
        manual: true,
    };
    compaction.mark();
    Manual::Ready(compaction)
}
