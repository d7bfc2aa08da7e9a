//! Opening a store: recovery.
//!
//! 1. Take the `LOCK` file; read `CURRENT` and replay the manifest it names (a new store gets
//!    a `default` family instead). File numbering resumes after every numbered file present.
//! 2. Open every table the manifest lists, checking that each exists with the recorded size.
//! 3. Replay the logs, oldest first, into fresh memtables: a family takes only records from
//!    logs at or after its log number (older ones are in its tables), and records of dropped
//!    families are skipped. Damage is handled by `Options::recovery_mode`; every log but the
//!    last was synced whole when the next was started, so damage in one is never a torn tail.
//! 4. Flush the recovered memtables to level-0 tables and write a new manifest (a snapshot
//!    edit) saying every family is flushed up to a new, empty log; point `CURRENT` at it.
//! 5. Delete what the new manifest does not reference: replayed logs, stray tables of
//!    unfinished flushes, old manifests, temporary files. Then create the new log.
//!
//! A crash anywhere in 4–5 leaves either the old manifest (and the old logs, replayed again)
//! or the new one (whose tables hold everything the old logs did).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use strata_sstable::BlockCache;
use strata_wal::{LogEnd, LogReader, LogWriter, RecoveryMode};

use crate::batch::{DecodedBatch, decode_batch};
use crate::cf::CfShared;
use crate::edit::{ManifestState, VersionEdit};
use crate::error::{
    BatchFault, Capacity, Corruption, Error, IoContext, IoOp, ManifestFault, Result,
};
use crate::flush::{TableSink, open_table_at};
use crate::format::{
    DEFAULT_CF_ID, DEFAULT_CF_NAME, FileKind, LOCK_FILE, MAX_LEVELS, parse_file_name,
};
use crate::fs::{FileLock, FileSystem};
use crate::hooks::Hooks;
use crate::manifest::{Manifest, current_manifest, file_path, log_number, read_manifest};
use crate::memtable::{MAX_ENTRIES, Memtable};
use crate::options::Options;
use crate::store::{Shared, Versions, WalState};
use crate::version::{SuperVersion, TableFile};

pub(crate) fn open(dir: &Path, options: Options, hooks: Hooks) -> Result<Shared> {
    options.validate()?;
    let opening = Opening {
        fs: Arc::clone(&options.fs),
        dir,
        options: &options,
        hooks: &hooks,
    };
    let (numbered, lock) = opening.lock_dir()?;

    // 1. The manifest.
    let mut state = match current_manifest(&opening.fs, dir)? {
        Some(number) => read_manifest(&opening.fs, dir, number)?,
        None => new_store_state(dir, &options, &numbered)?,
    };
    if let Some(max) = numbered.iter().map(|(_, n)| *n).max() {
        state.next_file_number = state.next_file_number.max(max.saturating_add(1));
    }

    // 2. The tables.
    let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
    let (mut levels, tables_seqno) = opening.open_tables(&state, &cache)?;

    // 3. The logs.
    let (memtables, logs_seqno) = opening.replay_logs(&state, &numbered)?;
    let last_seqno = state.last_seqno.max(tables_seqno).max(logs_seqno);

    // 4. Flush what was recovered; a new manifest.
    let new_log = state.next_file_number;
    state.next_file_number += 1;
    let mut edit = opening.flush_recovered(&mut state, &memtables, &cache, &mut levels)?;
    for id in state.cfs.keys() {
        edit.log_numbers.push((*id, new_log));
    }
    edit.last_seqno = Some(last_seqno);
    // The logs are replayed and will be removed: the close record has served.
    state.closed_log = None;
    // The edit is built here from a state that replayed cleanly: a refusal is our bug.
    state
        .apply(&edit)
        .map_err(|what| Error::Internal(format!("the open's own edit was refused: {what}")))?;
    let manifest_number = state.next_file_number;
    state.next_file_number += 1;
    let manifest = Manifest::create(&opening.fs, dir, manifest_number, &state)?;

    // 5. Strays, then the new log.
    remove_unreferenced(&opening.fs, dir, &numbered, &state, manifest_number);
    let log_path = file_path(dir, FileKind::Log, new_log);
    let log_file = opening
        .fs
        .create_log(&log_path)
        .at(IoOp::Create, &log_path)?;
    opening.fs.sync_dir(dir).at(IoOp::SyncDir, dir)?;

    let mut cfs = BTreeMap::new();
    for (id, cf) in &state.cfs {
        let version = SuperVersion::new(
            Arc::new(Memtable::new(
                new_log,
                crate::store::memtable_filter_bytes(&options, &hooks, &cf.name),
            )),
            levels
                .remove(id)
                .unwrap_or_else(|| vec![Vec::new(); MAX_LEVELS]),
        );
        cfs.insert(*id, Arc::new(CfShared::new(*id, cf.name.clone(), version)));
    }
    tracing::info!(dir = %dir.display(), last_seqno, families = cfs.len(), "store opened");
    Ok(Shared::new(
        options,
        hooks,
        dir.to_path_buf(),
        cache,
        last_seqno,
        WalState {
            log: LogWriter::new(log_file, log_number(new_log)),
            number: new_log,
        },
        Versions { state, manifest },
        cfs,
        lock,
    ))
}

/// Each family's levels of open tables, by family id.
type Levels = BTreeMap<u32, Vec<Vec<Arc<TableFile>>>>;

/// What every step of an open reads: the file system, the directory and the options.
struct Opening<'a> {
    fs: Arc<dyn FileSystem>,
    dir: &'a Path,
    options: &'a Options,
    hooks: &'a Hooks,
}

impl Opening<'_> {
    /// Creates the directory if asked to, takes its lock, and lists its numbered files.
    fn lock_dir(&self) -> Result<(Vec<(FileKind, u64)>, FileLock)> {
        let (fs, dir) = (&self.fs, self.dir);
        if self.options.create_if_missing {
            fs.create_dir_all(dir).at(IoOp::CreateDir, dir)?;
        }
        let names = match fs.list(dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotFound(format!(
                    "store directory {}",
                    dir.display()
                )));
            }
            Err(e) => return Err(Error::io(IoOp::List, dir, e)),
        };
        let lock_path = dir.join(LOCK_FILE);
        let lock = fs.lock(&lock_path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::WouldBlock {
                Error::Conflict(e.to_string())
            } else {
                Error::io(IoOp::Lock, &lock_path, e)
            }
        })?;
        let numbered = names.iter().filter_map(|n| parse_file_name(n)).collect();
        Ok((numbered, lock))
    }

    /// Opens every table the manifest lists; returns them by family and level (level 0
    /// newest first, deeper levels checked to be sorted runs), and their largest seqno.
    fn open_tables(&self, state: &ManifestState, cache: &Arc<BlockCache>) -> Result<(Levels, u64)> {
        let mut levels = Levels::new();
        let mut last_seqno = 0;
        for (id, cf) in &state.cfs {
            let mut cf_levels = Vec::with_capacity(MAX_LEVELS);
            for (level, metas) in cf.levels.iter().enumerate() {
                let mut tables = Vec::with_capacity(metas.len());
                for meta in metas {
                    let table = open_table_at(
                        &self.fs,
                        self.dir,
                        cache,
                        meta.number,
                        meta.file_size,
                        Some(meta.clone()),
                    )?;
                    last_seqno = last_seqno.max(meta.largest_seqno);
                    tables.push(Arc::new(table));
                }
                if level == 0 {
                    tables.reverse(); // newest first
                } else if !tables.is_empty() {
                    check_sorted_level(self.dir, self.options, &cf.name, level, &mut tables)?;
                }
                cf_levels.push(tables);
            }
            levels.insert(*id, cf_levels);
        }
        Ok((levels, last_seqno))
    }

    /// Replays the logs the families still need into one memtable per family; returns them
    /// and the largest seqno replayed.
    fn replay_logs(
        &self,
        state: &ManifestState,
        numbered: &[(FileKind, u64)],
    ) -> Result<(BTreeMap<u32, Memtable>, u64)> {
        let memtables: BTreeMap<u32, Memtable> = state
            .cfs
            .keys()
            .map(|id| (*id, Memtable::new(0, 0)))
            .collect();
        let logs = Opening::needed_logs(state, numbered);
        self.check_closed_log_if_needed(state)?;
        let mut last_seqno = 0;
        for (i, &number) in logs.iter().enumerate() {
            let is_last = i + 1 == logs.len();
            let replayed = self.replay_log(number, is_last, state, Into::Memtables(&memtables))?;
            last_seqno = last_seqno.max(replayed.last_seqno);
            if replayed.stop {
                break;
            }
        }
        Ok((memtables, last_seqno))
    }

    /// A log a clean close synced whole must be there whole: shorter, it was cut after the
    /// close, not torn by a crash.
    fn check_closed_log(&self, number: u64, size: u64) -> Result<()> {
        let path = file_path(self.dir, FileKind::Log, number);
        let actual = if self.fs.exists(&path).at(IoOp::Exists, &path)? {
            self.fs.read(&path).at(IoOp::Read, &path)?.len() as u64
        } else {
            0
        };
        if actual < size {
            return Err(Error::Corruption {
                file: path,
                offset: actual,
                what: Corruption::LogSize {
                    expected: size,
                    actual,
                },
            });
        }
        Ok(())
    }

    /// Writes each non-empty recovered memtable as a level-0 table (added to `levels`); returns
    /// the edit that records them.
    fn flush_recovered(
        &self,
        state: &mut ManifestState,
        memtables: &BTreeMap<u32, Memtable>,
        cache: &Arc<BlockCache>,
        levels: &mut Levels,
    ) -> Result<VersionEdit> {
        let sink = TableSink {
            fs: &self.fs,
            dir: self.dir,
            options: self.options.table.clone(),
            cache,
        };
        let mut edit = VersionEdit::default();
        for (id, mem) in memtables {
            if mem.is_empty() {
                continue;
            }
            let number = state.next_file_number;
            state.next_file_number += 1;
            let collector = match (&self.hooks.property_collector, state.cfs.get(id)) {
                (Some(factory), Some(cf)) => factory.collector(&cf.name),
                _ => None,
            };
            if let Some(table) = sink.write_table(number, mem, &[], collector)? {
                edit.added_tables.push((*id, 0, table.meta.clone()));
                if let Some(cf_levels) = levels.get_mut(id) {
                    cf_levels[0].insert(0, Arc::new(table));
                }
            }
        }
        Ok(edit)
    }

    /// The oldest log the families still need.
    fn oldest_needed(state: &ManifestState) -> u64 {
        state
            .cfs
            .values()
            .map(|cf| cf.log_number)
            .min()
            .unwrap_or(0)
    }

    /// The check of a cleanly closed log's size, when the replay needs that log.
    fn check_closed_log_if_needed(&self, state: &ManifestState) -> Result<()> {
        match state.closed_log {
            Some((number, size)) if number >= Opening::oldest_needed(state) => {
                self.check_closed_log(number, size)
            }
            _ => Ok(()),
        }
    }

    /// The logs the families still need, oldest first.
    fn needed_logs(state: &ManifestState, numbered: &[(FileKind, u64)]) -> Vec<u64> {
        let oldest_needed = Opening::oldest_needed(state);
        let mut logs: Vec<u64> = numbered
            .iter()
            .filter(|(kind, n)| *kind == FileKind::Log && *n >= oldest_needed)
            .map(|(_, n)| *n)
            .collect();
        logs.sort_unstable();
        logs
    }

    /// Replays log `number` into `memtables`, or only collects its transaction trailers.
    fn replay_log(
        &self,
        number: u64,
        is_last: bool,
        state: &ManifestState,
        into: Into<'_>,
    ) -> Result<Replayed> {
        let (memtables, mut trailers) = match into {
            Into::Memtables(m) => (Some(m), None),
            Into::Trailers(t) => (None, Some(t)),
        };
        let path = file_path(self.dir, FileKind::Log, number);
        let data = self.fs.read(&path).at(IoOp::Read, &path)?;
        let mode = self.options.recovery_mode;
        let mut reader = self.log_reader(&data, number, is_last, state);
        let mut replayed = Replayed {
            last_seqno: 0,
            stop: false,
        };
        while let Some(record) = reader
            .next_record()
            .map_err(|e| Error::log(path.clone(), e))?
        {
            let bytes = Bytes::copy_from_slice(&record.data);
            let batch = match decode_batch(&bytes) {
                Ok(batch) => batch,
                Err(what) => match mode {
                    RecoveryMode::SkipCorrupted => {
                        tracing::warn!(log = number, offset = record.offset, %what, "skipping an undecodable batch");
                        continue;
                    }
                    RecoveryMode::PointInTime => {
                        tracing::warn!(log = number, offset = record.offset, %what, "recovery stops at an undecodable batch");
                        replayed.stop = true;
                        return Ok(replayed);
                    }
                    _ => {
                        return Err(Error::Corruption {
                            file: path,
                            offset: record.offset,
                            what,
                        });
                    }
                },
            };
            if let Some(trailers) = trailers.as_deref_mut() {
                if !batch.entries.is_empty() {
                    replayed.last_seqno = replayed.last_seqno.max(batch.last_seqno());
                }
                if let Some(txn) = batch.txn {
                    trailers.insert(txn.id, txn.participants);
                }
                continue;
            }
            let Some(memtables) = memtables else {
                continue;
            };
            let first = batch.first_seqno;
            if self
                .hooks
                .drop_seqnos
                .iter()
                .any(|&(lo, hi)| (lo..=hi).contains(&first))
            {
                // Cut by the table layer: at or after a commit across stores that did not
                // reach every store (a batch never straddles two commits' ranges). Its
                // seqnos still count below.
                replayed.last_seqno = replayed.last_seqno.max(batch.last_seqno());
                continue;
            }
            self.insert_replayed(&batch, number, record.offset, state, memtables)?;
            if !batch.entries.is_empty() {
                replayed.last_seqno = replayed.last_seqno.max(batch.last_seqno());
            }
        }
        for skipped in reader.skipped() {
            tracing::warn!(log = number, offset = skipped.offset, len = skipped.len, reason = %skipped.reason, "log region not replayed");
        }
        if let Some(LogEnd::StoppedAtDamage { .. }) = reader.end() {
            replayed.stop = true;
        }
        Ok(replayed)
    }

    /// Inserts the entries of `batch` (at `offset` in log `number`) into the memtables of
    /// the families that still need them; an entry of a dropped family is skipped, one of a
    /// family the manifest never numbered is corruption.
    fn insert_replayed(
        &self,
        batch: &DecodedBatch,
        number: u64,
        offset: u64,
        state: &ManifestState,
        memtables: &BTreeMap<u32, Memtable>,
    ) -> Result<()> {
        for entry in &batch.entries {
            match state.cfs.get(&entry.cf_id) {
                Some(cf) if number >= cf.log_number => {
                    if let Some(mem) = memtables.get(&entry.cf_id)
                        && mem.insert(entry).is_err()
                    {
                        return Err(Error::Capacity {
                            what: Capacity::ReplayLimit,
                            family: entry.cf_id,
                            limit: MAX_ENTRIES,
                        });
                    }
                }
                Some(_) => {} // already in the family's tables
                None if entry.cf_id < state.next_cf_id => {} // a dropped family
                None => {
                    return Err(Error::Corruption {
                        file: file_path(self.dir, FileKind::Log, number),
                        offset,
                        what: Corruption::Batch(BatchFault::UnknownFamily),
                    });
                }
            }
        }
        Ok(())
    }

    /// A reader of log `number`'s bytes `data`: every log before the last was synced whole
    /// (the next was opened after), and so was the last if a clean close recorded its size,
    /// so damage inside them is damage, not a torn tail.
    fn log_reader<'d>(
        &self,
        data: &'d [u8],
        number: u64,
        is_last: bool,
        state: &ManifestState,
    ) -> LogReader<'d> {
        let reader = LogReader::new(data, log_number(number), self.options.recovery_mode);
        if !is_last {
            return reader.with_known_durable(data.len() as u64);
        } else if let Some((closed, size)) = state.closed_log
            && closed == number
        {
            // Synced whole by a clean close: damage inside is damage, not a torn tail.
            return reader.with_known_durable(size);
        }
        reader
    }
}

/// Where a log's batches go.
enum Into<'a> {
    /// Replayed into the recovered memtables.
    Memtables(&'a BTreeMap<u32, Memtable>),
    /// Only their transaction trailers collected: id → participants.
    Trailers(&'a mut BTreeMap<u64, Vec<u32>>),
}

/// The commits across stores whose parts the logs of the store in `dir` hold, as the next open
/// would replay them: id → participant stores (see [`crate::Store::logged_transactions`]).
pub(crate) fn logged_transactions(dir: &Path, options: &Options) -> Result<LoggedTransactions> {
    let opening = Opening {
        fs: Arc::clone(&options.fs),
        dir,
        options,
        hooks: &Hooks::default(),
    };
    let mut logged = LoggedTransactions::default();
    let names = match opening.fs.list(dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(logged),
        Err(e) => return Err(Error::io(IoOp::List, dir, e)),
    };
    let numbered: Vec<(FileKind, u64)> = names.iter().filter_map(|n| parse_file_name(n)).collect();
    let Some(number) = current_manifest(&opening.fs, dir)? else {
        return Ok(logged);
    };
    let state = read_manifest(&opening.fs, dir, number)?;
    let logs = Opening::needed_logs(&state, &numbered);
    // The check an open makes before it replays, so a scan fails as the open would.
    opening.check_closed_log_if_needed(&state)?;
    for (i, &number) in logs.iter().enumerate() {
        let is_last = i + 1 == logs.len();
        let into = Into::Trailers(&mut logged.transactions);
        let scanned = opening.replay_log(number, is_last, &state, into)?;
        logged.last_seqno = logged.last_seqno.max(scanned.last_seqno);
        if scanned.stop {
            break;
        }
    }
    Ok(logged)
}

/// What the logs of a store hold of commits across stores ([`crate::Store::logged_transactions`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoggedTransactions {
    /// Each commit across stores with a part in the logs: id → the stores holding its parts.
    pub transactions: BTreeMap<u64, Vec<u32>>,
    /// The largest seqno of any batch the logs hold (0: none).
    pub last_seqno: u64,
}

/// Puts a deeper level in key order and checks what reads rely on: it is within
/// `num_levels`, and its tables do not overlap.
fn check_sorted_level(
    dir: &Path,
    options: &Options,
    cf: &str,
    level: usize,
    tables: &mut [Arc<TableFile>],
) -> Result<()> {
    if level >= options.num_levels {
        return Err(Error::InvalidArgument(format!(
            "column family {cf:?} has tables in level {level}; open with num_levels above {level}"
        )));
    }
    tables.sort_by(|a, b| a.meta.smallest_key.cmp(&b.meta.smallest_key));
    for pair in tables.windows(2) {
        if pair[0].meta.largest_key >= pair[1].meta.smallest_key {
            return Err(Error::Corruption {
                file: dir.join(crate::format::CURRENT_FILE),
                offset: 0,
                what: Corruption::Manifest(ManifestFault::TablesOverlap),
            });
        }
    }
    Ok(())
}

/// The state of a store being created: a `default` family and nothing else. Refuses a
/// directory that holds logs or tables but no `CURRENT`: that is someone's data, not ours to
/// overwrite. (Manifests alone are what a creation interrupted before `CURRENT` leaves.)
fn new_store_state(
    dir: &Path,
    options: &Options,
    numbered: &[(FileKind, u64)],
) -> Result<ManifestState> {
    if numbered
        .iter()
        .any(|(kind, _)| matches!(kind, FileKind::Log | FileKind::Table))
    {
        return Err(Error::Corruption {
            file: dir.join(crate::format::CURRENT_FILE),
            offset: 0,
            what: Corruption::Missing,
        });
    }
    if !options.create_if_missing {
        return Err(Error::NotFound(format!("no store in {}", dir.display())));
    }
    let mut state = ManifestState::empty();
    let edit = VersionEdit {
        created_cfs: vec![(DEFAULT_CF_ID, DEFAULT_CF_NAME.to_owned())],
        ..VersionEdit::default()
    };
    state
        .apply(&edit)
        .map_err(|what| Error::Internal(format!("a new store's first edit: {what}")))?;
    Ok(state)
}

struct Replayed {
    last_seqno: u64,
    /// Stop replaying: point-in-time recovery met damage.
    stop: bool,
}

/// Removes numbered files the new manifest does not reference. Failures are only logged:
/// a leftover is removed at the next open.
fn remove_unreferenced(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    numbered: &[(FileKind, u64)],
    state: &ManifestState,
    manifest_number: u64,
) {
    let live_tables: std::collections::HashSet<u64> = state
        .cfs
        .values()
        .flat_map(|cf| cf.levels.iter().flatten().map(|t| t.number))
        .collect();
    for &(kind, number) in numbered {
        let stray = match kind {
            FileKind::Log | FileKind::Temp => true,
            FileKind::Table => !live_tables.contains(&number),
            FileKind::Manifest => number != manifest_number,
        };
        if stray {
            let path = file_path(dir, kind, number);
            if let Err(error) = fs.remove_file(&path) {
                tracing::warn!(%error, path = %path.display(), "removing an unreferenced file");
            }
        }
    }
}
