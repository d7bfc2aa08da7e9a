//! The write path: what the group commit leader does, memtable switches, and the changes to the
//! set of column families.
//!
//! The leader, holding the writer lock (REQUIRES for everything in this file that takes a
//! `&mut WalState`):
//! 1. checks that the store has not failed and that every family a batch names exists; a batch
//!    naming a dropped family fails alone;
//! 2. makes room: seals the memtables of the group's families that reached
//!    `write_buffer_bytes`, and, when the logs outgrow `max_total_wal_bytes`, the memtables
//!    that keep the oldest log alive; sealing switches to a new log;
//! 3. allocates each batch its seqno range and appends it to the log as one record, then
//!    flushes the group to the OS, or syncs it if any member asked;
//! 4. inserts the entries into the memtables and publishes the group's last seqno.
//!
//! A failure in step 3 fails the whole group and makes the store read-only (sticky): after a
//! failed write or `fdatasync` nothing after the last successful sync can be trusted to be in
//! the file (the PostgreSQL "fsyncgate" lesson), so only a reopen, which replays the log, is
//! safe.

use std::sync::Arc;

use bytes::Bytes;
use strata_wal::LogWriter;

use crate::SeqNo;
use crate::batch::{BatchEntry, DecodedBatch, WriteBatch, decode_batch};
use crate::cf::{CfShared, validate_name};
use crate::commit::Request;
use crate::edit::VersionEdit;
use crate::error::{Capacity, Corruption, Error, IoContext, IoOp, Result};
use crate::format::{DEFAULT_CF_ID, FileKind};
use crate::manifest::{file_path, log_number};
use crate::memtable::{MAX_ENTRIES, Memtable, Placed};
use crate::skiplist::Hint;
use crate::store::{Shared, WalState};
use crate::sync::lock;
use crate::version::{Sealed, SuperVersion};

/// A group of at most this many entries goes into the memtables in one interleaved wave
/// (see [`Shared::commit_accepted`]'s step 4).
const ONE_WAVE_ENTRIES: usize = 16;

impl Shared {
    pub(crate) fn log_path(&self, number: u64) -> std::path::PathBuf {
        file_path(&self.dir, FileKind::Log, number)
    }

    /// Commits one group; one result per request, in order.
    pub(crate) fn lead(&self, group: Vec<Request<WriteBatch>>) -> Vec<Result<SeqNo>> {
        let mut touched: Vec<u32> = group
            .iter()
            .flat_map(|request| request.item.column_families())
            .collect();
        touched.sort_unstable();
        touched.dedup();

        let mut wal = lock(&self.writer);
        let mut results: Vec<Result<SeqNo>> = Vec::with_capacity(group.len());
        if let Err(error) = self.check_writable() {
            return group.iter().map(|_| Err(error.clone())).collect();
        }

        // 1. Every family a batch names must be live.
        let mut accepted = Vec::with_capacity(group.len());
        {
            let cfs = self.cfs_read();
            let mut dropped = false;
            for (i, request) in group.into_iter().enumerate() {
                let missing = request
                    .item
                    .column_families()
                    .find(|id| !cfs.contains_key(id));
                match missing {
                    Some(id) => {
                        dropped = true;
                        results.push(Err(Error::NotFound(format!(
                            "column family id {id} (dropped)"
                        ))));
                    }
                    None => {
                        results.push(Ok(0));
                        accepted.push((i, request));
                    }
                }
            }
            if dropped {
                touched.retain(|id| cfs.contains_key(id));
            }
        }
        if accepted.is_empty() {
            return results;
        }

        // 2-4: room, the log, the memtables. A failure there makes the store read-only and
        // is every request's answer.
        match self.commit_accepted(&mut wal, &touched, accepted) {
            Ok(seqnos) => {
                for (i, last) in seqnos {
                    results[i] = Ok(last);
                }
                results
            }
            Err(error) => {
                let error = self.fail(error);
                results.into_iter().map(|_| Err(error.clone())).collect()
            }
        }
    }

    /// Steps 2 to 4 of [`Self::lead`] for the `accepted` requests (by their index in the
    /// group): makes room in the memtables of `touched`, appends each batch to the log (and
    /// syncs it if any asks), and inserts the entries. Returns each request's last seqno; the
    /// caller publishes them. REQUIRES: the writer lock (`wal`).
    fn commit_accepted(
        &self,
        wal: &mut WalState,
        touched: &[u32],
        accepted: Vec<(usize, Request<WriteBatch>)>,
    ) -> Result<Vec<(usize, SeqNo)>> {
        // 2. Room in the memtables.
        let entries: u64 = accepted.iter().map(|(_, r)| r.item.len() as u64).sum();
        self.make_room(wal, touched, entries)?;
        // 3. The log.
        let (range, sealed) = self.log_group(wal, accepted)?;
        // 4. The memtables.
        let batches = self.insert_group(wal.number, touched, sealed)?;
        if let Some((first, n)) = range {
            self.seq.publish_range(first, first + n - 1);
        }
        Ok(batches
            .iter()
            .map(|(i, batch, _)| (*i, batch.last_seqno()))
            .collect())
    }

    /// Step 3 of a group's commit: numbers the group's batches and writes them to the log,
    /// synced if any asked for it. The group's own batches take one range of seqnos
    /// (returned, for the caller to publish once the memtables hold them); a batch whose
    /// range its caller allocated (a part of a transaction over several stores) keeps it,
    /// and its caller publishes it. Returns each batch's sealed bytes with its placement.
    #[allow(clippy::type_complexity)]
    fn log_group(
        &self,
        wal: &mut WalState,
        accepted: Vec<(usize, Request<WriteBatch>)>,
    ) -> Result<(
        Option<(SeqNo, u64)>,
        Vec<(usize, Bytes, Option<Box<Placed>>)>,
    )> {
        let sync = accepted.iter().any(|(_, r)| r.sync);
        let own: u64 = accepted
            .iter()
            .filter(|(_, r)| r.item.assigned.is_none())
            .map(|(_, r)| r.item.len() as u64)
            .sum();
        let range = match own {
            0 => None,
            n => Some((self.allocate(n)?, n)),
        };
        let mut next = range.map_or(0, |(first, _)| first);
        let mut sealed = Vec::with_capacity(accepted.len());
        let log_error = |e| Error::log(self.log_path(wal.number), e);
        let written = (|| {
            for (i, mut request) in accepted {
                let placed = request.item.placed.take();
                let first = match request.item.assigned {
                    Some(first) => first,
                    None => {
                        next += request.item.len() as u64;
                        next - request.item.len() as u64
                    }
                };
                let bytes = request.item.seal(first);
                wal.log.add_record(&bytes).map_err(log_error)?;
                sealed.push((i, bytes, placed));
            }
            if sync {
                wal.log.sync(|file| file.sync_data()).map_err(log_error)?;
            } else {
                wal.log.flush().map_err(log_error)?;
            }
            Ok(())
        })();
        if let Err(error) = written {
            if range.is_some() && self.seq.is_shared() {
                // The range will never be inserted: nothing after it may be published.
                self.seq.fail();
            }
            return Err(error);
        }
        Ok((range, sealed))
    }

    /// Step 4 of a group's commit: decodes each sealed batch and inserts its entries into
    /// the active memtables of the families it touches (`make_room` made room for all).
    #[allow(clippy::type_complexity)]
    fn insert_group(
        &self,
        log_number: u64,
        touched: &[u32],
        sealed: Vec<(usize, Bytes, Option<Box<Placed>>)>,
    ) -> Result<Vec<(usize, DecodedBatch, Option<Box<Placed>>)>> {
        let cfs = self.cfs_read();
        let memtables: Vec<(u32, Arc<Memtable>)> = touched
            .iter()
            .filter_map(|id| Some((*id, Arc::clone(&cfs.get(id)?.current().active))))
            .collect();
        drop(cfs);
        let mut batches = Vec::with_capacity(sealed.len());
        for (i, bytes, placed) in sealed {
            // Our own encoding failing to decode is a bug, reported rather than hidden.
            let batch = decode_batch(&bytes).map_err(|what| Error::Corruption {
                file: self.log_path(log_number),
                offset: 0,
                what,
            })?;
            batches.push((i, batch, placed));
        }
        // Entries go in in waves, each wave's searches interleaved (`Memtable::insert_each`).
        // A small group (a transaction's few rows, a few writers' single puts) is one wave:
        // its searches are cold and independent. A larger one goes in waves of distinct
        // memtables (a row and its index entries are one wave), so that a memtable's run of
        // ascending keys (a bulk load) keeps the search from the last insert's splice. The
        // order of inserts does not matter: every entry has its own seqno, and none is
        // visible before the group is published.
        let entries = batches
            .iter()
            .map(|(_, batch, _)| batch.entries.len())
            .sum::<usize>();
        let one_wave = entries <= ONE_WAVE_ENTRIES;
        let mut wave: Vec<(&Memtable, &BatchEntry, Hint)> = Vec::new();
        let full = |wave: &[(&Memtable, &BatchEntry, Hint)]| Error::Capacity {
            what: Capacity::MemtableFull,
            family: wave.first().map_or(0, |(_, entry, _)| entry.cf_id),
            limit: MAX_ENTRIES,
        };
        let each = batches.iter().flat_map(|(_, batch, placed)| {
            batch
                .entries
                .iter()
                .enumerate()
                .map(move |(at, entry)| (at, entry, placed))
        });
        for (at, entry, placed) in each {
            let Some((_, mem)) = memtables.iter().find(|(id, _)| *id == entry.cf_id) else {
                continue;
            };
            if !one_wave && wave.iter().any(|(m, _, _)| std::ptr::eq(*m, mem.as_ref())) {
                // `make_room` sealed every memtable that could not take the whole group.
                Memtable::insert_each(&wave).map_err(|_| full(&wave))?;
                wave.clear();
            }
            let hint = placed
                .as_ref()
                .map_or(Hint::None, |placed| placed.hint(at, entry.cf_id, mem));
            wave.push((mem, entry, hint));
        }
        Memtable::insert_each(&wave).map_err(|_| full(&wave))?;
        Ok(batches)
    }

    /// Finds where a small batch's entries go in the active memtables
    /// ([`Memtable::place_each`]) before the writer joins a group, when a leader is at work
    /// (the writer would wait for it anyway), so that the next leader links them without
    /// searching: with several writers, their searches run while another's group goes in
    /// instead of one after another under the writer lock. With no leader at work the writer
    /// leads at once and searches as it inserts: placing first would only add the lookups
    /// (7 % of a one-thread read-modify-write transaction, measured). A larger batch (a bulk
    /// load) is left to the leader's waves, whose splice serves ascending runs. A memtable
    /// switched meanwhile only loses the hints.
    pub(crate) fn place(&self, batch: &mut WriteBatch) {
        if batch.is_empty() || batch.len() > ONE_WAVE_ENTRIES || !self.commit.busy() {
            return;
        }
        let memtables: Vec<(u32, Arc<Memtable>)> = {
            let cfs = self.cfs_read();
            batch
                .column_families()
                .filter_map(|id| Some((id, Arc::clone(&cfs.get(&id)?.current().active))))
                .collect()
        };
        let mut keys: Vec<(&Memtable, &[u8])> = Vec::with_capacity(batch.len());
        for (cf, key) in batch.keys() {
            match memtables.iter().find(|(id, _)| *id == cf) {
                Some((_, mem)) => keys.push((mem, key)),
                // A dropped family: the leader fails the batch.
                None => return,
            }
        }
        let hints = Memtable::place_each(&keys);
        drop(keys);
        batch.placed = Some(Box::new(Placed { memtables, hints }));
    }

    /// Allocates `count` seqnos for the group; fails once a shared sequencer has failed.
    fn allocate(&self, count: u64) -> Result<SeqNo> {
        self.seq.allocate(count).ok_or_else(sequencer_failed)
    }

    /// Back-pressure, for each writer before it joins a group (so a leader never waits, and
    /// a part of a commit across stores, whose range is already allocated, is never held up
    /// behind a stalled write): while a family in `ids` has too many level-0 tables or sealed
    /// memtables, delays the write once by `slowdown_delay`, or stops it until the background
    /// threads bring the counts under the stop thresholds. A stop ends by itself when they
    /// catch up, when the store fails, or when it closes; it re-checks at least every 100 ms,
    /// so a missed wake-up costs latency, never a hang.
    pub(crate) fn throttle(&self, ids: &[u32]) {
        if self.pressure(ids).is_none() {
            self.stall_state(0, "");
            return;
        }
        let started = std::time::Instant::now();
        let mut slowed = false;
        let mut stopped = false;
        while let Some((stop, reason)) = self.pressure(ids) {
            if !stop {
                if !slowed && !stopped {
                    slowed = true;
                    self.stall_state(1, reason);
                    std::thread::sleep(self.options.slowdown_delay);
                }
                break;
            }
            if !stopped {
                stopped = true;
                self.stall_state(2, reason);
            }
            if self.check_writable().is_err() || self.shutting_down() {
                break;
            }
            self.wait_background(std::time::Duration::from_millis(100));
        }
        if !slowed && !stopped {
            self.stall_state(0, "");
            return;
        }
        let mut stalls = lock(&self.stalls);
        if stopped {
            stalls.stops += 1;
        } else {
            stalls.slowdowns += 1;
        }
        stalls.stalled += started.elapsed();
    }

    /// `(stop, reason)` when a family in `ids` is at a stop or slowdown threshold.
    fn pressure(&self, ids: &[u32]) -> Option<(bool, &'static str)> {
        let options = &self.options;
        let cfs = self.cfs_read();
        let mut slow = None;
        for cf in ids.iter().filter_map(|id| cfs.get(id)) {
            let (l0, sealed) = cf.l0_and_sealed();
            if l0 >= options.l0_stop_trigger {
                return Some((true, "level-0 tables at l0_stop_trigger"));
            }
            if sealed >= options.max_sealed_memtables {
                return Some((true, "sealed memtables at max_sealed_memtables"));
            }
            if l0 >= options.l0_slowdown_trigger {
                slow = Some((false, "level-0 tables at l0_slowdown_trigger"));
            } else if options.max_sealed_memtables > 1 && sealed + 1 >= options.max_sealed_memtables
            {
                slow = Some((false, "sealed memtables one short of max_sealed_memtables"));
            }
        }
        slow
    }

    /// Records the stall state (0 none, 1 slowing, 2 stopped) and traces each change.
    fn stall_state(&self, state: u8, reason: &str) {
        use std::sync::atomic::Ordering;
        if self.stall_state.load(Ordering::Relaxed) == state {
            return;
        }
        let before = self.stall_state.swap(state, Ordering::AcqRel);
        if before == state {
            return;
        }
        match state {
            2 => tracing::warn!(reason, "writes stopped until compaction catches up"),
            1 => tracing::info!(reason, "writes slowed down"),
            _ => tracing::info!("writes no longer stalled"),
        }
    }

    /// Seals what must be sealed before a write of `entries` entries to `touched`: memtables
    /// at `write_buffer_bytes`, or without room for the entries. REQUIRES: the writer lock.
    fn make_room(&self, wal: &mut WalState, touched: &[u32], entries: u64) -> Result<()> {
        let limit = self.options.write_buffer_bytes;
        let mut to_seal: Vec<u32> = {
            let cfs = self.cfs_read();
            touched
                .iter()
                .copied()
                .filter(|id| {
                    cfs.get(id).is_some_and(|cf| {
                        let active = &cf.current().active;
                        active.approximate_bytes() >= limit
                            || active.entries() + entries > MAX_ENTRIES
                    })
                })
                .collect()
        };
        // The logs' budget: flush whoever keeps the oldest one alive.
        let (oldest, old_bytes) = {
            let old = lock(&self.old_logs);
            (old.keys().next().copied(), old.values().sum::<u64>())
        };
        if let Some(oldest) = oldest
            && old_bytes + wal.log.offset() > self.options.max_total_wal_bytes
        {
            for cf in self.cfs_read().values() {
                let version = cf.current();
                if version.sealed.is_empty()
                    && !version.active.is_empty()
                    && version.active.first_log_number() <= oldest
                {
                    to_seal.push(cf.id);
                }
            }
        }
        if to_seal.is_empty() {
            return Ok(());
        }
        to_seal.sort_unstable();
        to_seal.dedup();
        self.switch_memtables(wal, &to_seal)
    }

    /// Seals the non-empty memtables of `ids` and starts a new log; every family whose
    /// memtable is empty gets a fresh one that starts in the new log, so it pins no old log.
    /// REQUIRES: the writer lock.
    pub(crate) fn switch_memtables(&self, wal: &mut WalState, ids: &[u32]) -> Result<()> {
        let new_number = lock(&self.versions).reserve_file_number();
        let old_path = self.log_path(wal.number);
        // The old log is made durable whole, so at recovery every log but the last is known
        // to be complete: damage in it is corruption, not a torn tail.
        wal.log
            .sync(|file| file.sync_data())
            .map_err(|e| Error::log(old_path.clone(), e))?;
        // ... and ends at its last record (space reserved past it is given back) before the
        // next log exists: a log that is not the last must hold no torn-tail zeros.
        wal.log
            .get_mut()
            .finish()
            .map_err(|e| Error::log(old_path, strata_wal::Error::Io(e)))?;
        let path = self.log_path(new_number);
        let file = self.fs.create_log(&path).at(IoOp::Create, &path)?;
        self.fs.sync_dir(&self.dir).at(IoOp::SyncDir, &self.dir)?;
        let old = std::mem::replace(
            wal,
            WalState {
                log: LogWriter::new(file, log_number(new_number)),
                number: new_number,
            },
        );
        lock(&self.old_logs).insert(old.number, old.log.offset());

        for cf in self.cfs_read().values() {
            let filter_bytes = self.memtable_filter_bytes(&cf.name);
            let seal = ids.contains(&cf.id);
            cf.update(|version| {
                if version.active.is_empty() {
                    version.active = Arc::new(Memtable::new(new_number, filter_bytes));
                } else if seal {
                    let sealed = std::mem::replace(
                        &mut version.active,
                        Arc::new(Memtable::new(new_number, filter_bytes)),
                    );
                    version.sealed.push(Sealed {
                        mem: sealed,
                        log_number_after: new_number,
                    });
                }
            });
        }
        self.wake_background();
        Ok(())
    }

    /// Seals the memtables of `ids` and waits until no family in `ids` has a sealed memtable.
    pub(crate) fn seal_and_wait(&self, ids: &[u32]) -> Result<()> {
        self.check_writable()?;
        {
            let mut wal = lock(&self.writer);
            let any = {
                let cfs = self.cfs_read();
                ids.iter().any(|id| {
                    cfs.get(id)
                        .is_some_and(|cf| !cf.current().active.is_empty())
                })
            };
            if any {
                self.switch_memtables(&mut wal, ids)
                    .map_err(|error| self.fail(error))?;
            }
        }
        let mut flush = lock(&self.background);
        loop {
            self.check_writable()?;
            let pending = {
                let cfs = self.cfs_read();
                ids.iter().any(|id| {
                    cfs.get(id)
                        .is_some_and(|cf| !cf.current().sealed.is_empty())
                })
            };
            if !pending {
                return Ok(());
            }
            if flush.shutdown {
                return Err(crate::error::Error::Closed);
            }
            flush = self
                .background_cv
                .wait(flush)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Creates a family. Takes the writer lock, so no batch is being applied meanwhile.
    pub(crate) fn create_cf(&self, name: &str) -> Result<Arc<CfShared>> {
        validate_name(name)?;
        self.check_writable()?;
        let wal = lock(&self.writer);
        let mut versions = lock(&self.versions);
        if versions.state.cf_id(name).is_some() {
            return Err(Error::Conflict(format!(
                "column family {name:?} exists already"
            )));
        }
        let id = versions.state.next_cf_id;
        // Ids are never reused; 2^32 families in one store's life is a limit, not a wrap.
        let next_id = id.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument("this store has used every column family id".into())
        })?;
        let edit = VersionEdit {
            created_cfs: vec![(id, name.to_owned())],
            log_numbers: vec![(id, wal.number)],
            next_cf_id: Some(next_id),
            ..VersionEdit::default()
        };
        self.log_edit(&mut versions, &edit)?;
        let cf = Arc::new(CfShared::new(
            id,
            name.to_owned(),
            SuperVersion::new(
                Arc::new(Memtable::new(wal.number, self.memtable_filter_bytes(name))),
                vec![Vec::new(); crate::format::MAX_LEVELS],
            ),
        ));
        self.cfs_write().insert(id, Arc::clone(&cf));
        Ok(cf)
    }

    /// Drops a family and deletes its tables. Its entries in the logs are ignored from now on
    /// (the manifest no longer knows its id) and go when the logs do.
    pub(crate) fn drop_cf(&self, cf: &Arc<CfShared>) -> Result<()> {
        if cf.id == DEFAULT_CF_ID {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".into(),
            ));
        }
        cf.check_live()?;
        self.check_writable()?;
        let _wal = lock(&self.writer);
        let mut versions = lock(&self.versions);
        if !versions.state.cfs.contains_key(&cf.id) {
            return Err(Error::NotFound(format!("column family {:?}", cf.name)));
        }
        let edit = VersionEdit {
            dropped_cfs: vec![cf.id],
            ..VersionEdit::default()
        };
        self.log_edit(&mut versions, &edit)?;
        cf.mark_dropped();
        self.cfs_write().remove(&cf.id);
        drop(versions);
        drop(_wal);
        for table in cf.current().tables() {
            if let Err(error) = self.fs.remove_file(&table.path) {
                tracing::warn!(%error, path = %table.path.display(), "removing a dropped family's table");
            }
        }
        self.wake_background();
        self.delete_obsolete_logs();
        Ok(())
    }

    /// Appends `edit` to the manifest and applies it; rewrites the manifest when it has grown
    /// past its limit. A failure makes the store read-only. REQUIRES: the versions lock.
    pub(crate) fn log_edit(
        &self,
        versions: &mut crate::store::Versions,
        edit: &VersionEdit,
    ) -> Result<()> {
        let mut next = versions.state.clone();
        next.apply(edit).map_err(|what| {
            self.fail(Error::Corruption {
                file: self.dir.join(crate::format::CURRENT_FILE),
                offset: 0,
                what: Corruption::Manifest(what),
            })
        })?;
        let path = file_path(&self.dir, FileKind::Manifest, versions.manifest.number());
        versions
            .manifest
            .append(&path, edit)
            .map_err(|error| self.fail(error))?;
        versions.state = next;
        if versions.manifest.bytes() > self.options.manifest_rewrite_bytes {
            let number = versions.reserve_file_number();
            let old = versions.manifest.number();
            let manifest =
                crate::manifest::Manifest::create(&self.fs, &self.dir, number, &versions.state)
                    .map_err(|error| self.fail(error))?;
            versions.manifest = manifest;
            let old_path = file_path(&self.dir, FileKind::Manifest, old);
            if let Err(error) = self.fs.remove_file(&old_path) {
                tracing::warn!(%error, "removing the previous manifest");
            }
        }
        Ok(())
    }

    /// Deletes every old log that no family's unflushed data is in.
    pub(crate) fn delete_obsolete_logs(&self) {
        let keep_from = self
            .cfs_read()
            .values()
            .map(|cf| cf.current().oldest_unflushed_log())
            .min()
            .unwrap_or(u64::MAX);
        let deletable: Vec<u64> = lock(&self.old_logs)
            .range(..keep_from)
            .map(|(number, _)| *number)
            .collect();
        for number in deletable {
            match self.fs.remove_file(&self.log_path(number)) {
                Ok(()) => {
                    lock(&self.old_logs).remove(&number);
                }
                Err(error) => {
                    tracing::warn!(%error, number, "removing an obsolete log; will retry");
                }
            }
        }
    }
}

/// The error of a write to a store whose shared sequencer failed.
pub(crate) fn sequencer_failed() -> Error {
    Error::ReadOnly(Box::new(Error::CommitOrderFailed))
}
