//! Commits across shard stores after a crash: what an open decides about the ones the logs
//! hold (`Recovery`, before any store opens) and the flush rule that keeps them decidable
//! (`CommitBarrier`, the stores' flush barrier). `docs/transactions.md` §2.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::lsm::Sequencer;
use crate::table::commit::txn_state::TxnState;
use crate::table::db::lock;

/// What an open decided about the commits across stores found in the logs, before any store
/// opened (`docs/transactions.md` §2, the replay rule).
pub(crate) struct Recovery {
    /// The state written before the stores open: `cut` is what every store's replay drops.
    pub(crate) state: TxnState,
    /// The shard stores whose directories were scanned.
    scanned: std::collections::BTreeSet<usize>,
}

impl Recovery {
    /// Scans the logs of every shard store the database has (without opening any). A commit
    /// across stores is complete if every store it names holds its part, or if its id is at
    /// or below the state file's `complete_through` (its other parts went into tables after
    /// all were durable). If one is not, every store's logs are cut at it: the range from its
    /// id to the last seqno any log holds is dropped everywhere. Records the decision durably
    /// (with `complete_through` raised past every commit kept) before any store replays, and
    /// returns it with the flush barrier the stores will use.
    pub(crate) fn resolve(
        dir: &std::path::Path,
        options: &crate::table::Options,
        sequencer: &Arc<Sequencer>,
    ) -> Result<(Recovery, Arc<CommitBarrier>)> {
        let fs = Arc::clone(&options.store.fs);
        let barrier = Arc::new(CommitBarrier {
            shared: std::sync::OnceLock::new(),
            sequencer: Arc::clone(sequencer),
        });
        let mut state = TxnState::read(fs.as_ref(), dir)?;
        // Every store there may be: the database's own, the configured shard directories, the
        // `shard-<n>` directories present, and any a logged commit names.
        let mut to_scan: std::collections::BTreeSet<usize> =
            (0..=options.shard_dirs.len()).collect();
        if let Ok(names) = fs.list(dir) {
            for name in names {
                if let Some(n) = name
                    .strip_prefix(crate::table::codec::format::SHARD_DIR_PREFIX)
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    to_scan.insert(n);
                }
            }
        }
        let mut scanned = std::collections::BTreeSet::new();
        // id → (participants, stores holding a part)
        let mut found: BTreeMap<u64, (Vec<u32>, Vec<u32>)> = BTreeMap::new();
        let mut last_logged = 0;
        while let Some(n) = to_scan.pop_first() {
            if !scanned.insert(n) {
                continue;
            }
            let path = crate::table::db::shard_path(dir, options, n);
            let logged = crate::lsm::Store::logged_transactions(&path, &options.store)?;
            last_logged = last_logged.max(logged.last_seqno);
            for (id, participants) in logged.transactions {
                for &p in &participants {
                    if !scanned.contains(&(p as usize)) {
                        to_scan.insert(p as usize);
                    }
                }
                let entry = found
                    .entry(id)
                    .or_insert_with(|| (participants, Vec::new()));
                entry.1.push(n as u32);
            }
        }
        let before = state.clone();
        let cut_at = found.iter().find_map(|(&id, (participants, holders))| {
            let complete =
                participants.iter().all(|p| holders.contains(p)) || id <= before.complete_through;
            let already_cut = before.cut.iter().any(|&(lo, hi)| (lo..=hi).contains(&id));
            (!complete && !already_cut).then_some((id, participants, holders))
        });
        if let Some((id, participants, holders)) = cut_at {
            tracing::warn!(
                id,
                ?participants,
                ?holders,
                through = last_logged,
                "a commit across shard stores did not reach all of them: every store's logs \
                 are cut there"
            );
            state.cut.push((id, last_logged.max(id)));
            state.complete_through = state.complete_through.max(id - 1);
        } else if let Some(&last) = found.keys().next_back() {
            state.complete_through = state.complete_through.max(last);
        }
        if state != before {
            TxnState::write(&state, fs.as_ref(), dir)?;
        }
        Ok((Recovery { state, scanned }, barrier))
    }

    /// After every store opened: if every store scanned is open, each replayed its logs
    /// without the cut ranges into tables, and the ranges need no remembering.
    pub(crate) fn opened(&self, shared: &crate::table::db::Shared) -> Result<()> {
        let open: Vec<usize> = shared.stores().iter().map(|s| s.number).collect();
        let mut state = lock(&shared.txn_state);
        if state.cut.is_empty() || self.scanned.iter().any(|n| !open.contains(n)) {
            return Ok(());
        }
        let mut next = state.clone();
        next.cut.clear();
        next.write(shared.options.store.fs.as_ref(), shared.dir())?;
        *state = next;
        Ok(())
    }
}

/// The flush rule (`docs/transactions.md` §2): before a store writes parts of commits across
/// stores into a table, every part of those commits is made durable in its own store, and
/// the state file records that every commit up to the published seqno is complete.
#[derive(Debug)]
pub(crate) struct CommitBarrier {
    shared: std::sync::OnceLock<std::sync::Weak<crate::table::db::Shared>>,
    sequencer: Arc<Sequencer>,
}

impl CommitBarrier {
    pub(crate) fn attach(&self, shared: &Arc<crate::table::db::Shared>) {
        let _ = self.shared.set(Arc::downgrade(shared));
    }
}

impl crate::lsm::FlushBarrier for CommitBarrier {
    fn before_flush(&self, through: u64) -> crate::lsm::Result<()> {
        let failed = || crate::lsm::Error::ReadOnly(Box::new(crate::lsm::Error::FlushRefused));
        let Some(shared) = self.shared.get().and_then(std::sync::Weak::upgrade) else {
            // The database is closing (or still opening, when nothing is in flight): every
            // store syncs its log as it closes.
            return Ok(());
        };
        let stores = shared.stores();
        if stores.len() < 2 {
            // One store: its own log order is the commit order; nothing to coordinate.
            return Ok(());
        }
        // Every commit up to `through` is then wholly written...
        if !self.sequencer.wait_visible(through) {
            return Err(failed());
        }
        let published = self.sequencer.visible();
        // ... and durable, in every store ...
        for store in stores {
            store.store.sync_wal()?;
        }
        // ... which a later recovery learns from the state file.
        let mut state = lock(&shared.txn_state);
        if state.complete_through < published {
            let mut next = state.clone();
            next.complete_through = published;
            next.write(shared.options.store.fs.as_ref(), shared.dir())
                .map_err(|e| match e {
                    Error::Store(e) => e,
                    other => crate::lsm::Error::Internal(other.to_string()),
                })?;
            *state = next;
        }
        Ok(())
    }
}
