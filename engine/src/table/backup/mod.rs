//! The backup room: copies of the running database at one commit point.
//!
//! - [`Db::checkpoint`]: an openable copy of the whole database (every shard store, the
//!   catalog, the transaction state) at one commit, its immutable files hard-linked.
//! - `archive`: incremental backups into one backup directory, each file stored once by
//!   name, size and checksum, and [`list`](archive::list), [`verify`](archive::verify),
//!   [`restore`](archive::restore) and [`purge_old`](archive::purge_old) over it.
//!
//! Both start from one cut ([`Db::cut`]): with DDL held off, every shard store's commits are
//! held at once ([`crate::lsm::Store::hold_writes`]), each store's files captured, and the
//! commit point read: the sequencer's published seqno, at or above every commit whose parts
//! are all in the captured logs and tables. Batches logged above it (parts of a commit across
//! stores still being written, which were never visible) are cut from the copy's replay by
//! its transaction state: the copy holds exactly the commits at or below the point, all of
//! each (`docs/backups.md`). Uses `commit` and `db`.

pub mod archive;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::lsm::checkpoint::{Capture, CheckpointFiles, prepare_target};
use crate::table::codec::format::SHARD_DIR_PREFIX;
use crate::table::commit::txn_state::TxnState;
use crate::table::db::{Db, lock};

/// What [`Db::checkpoint`] made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checkpoint {
    /// The commit point: the copy holds exactly the commits at or below it.
    pub commit: u64,
    /// Files hard-linked into the copy.
    pub files_linked: u64,
    /// Bytes written into the copy: the logs' unflushed tails, and every file that could not
    /// be linked (another device, or a file system without links).
    pub bytes_copied: u64,
}

/// One consistent cut of the database: each shard store's captured files, and the
/// transaction state a copy opens with.
pub(crate) struct Cut {
    /// The commit point.
    pub(crate) commit: u64,
    /// `(shard store number, its capture)`, by number.
    pub(crate) stores: Vec<(usize, Capture)>,
    /// The live state with every seqno above `commit` cut from the copy's replay.
    pub(crate) txn_state: TxnState,
}

/// Where shard store `number` of a copy in `root` lives: the copy's own directory for store
/// 0, `shard-<n>` inside it for the others (whatever directories the live database put them
/// in: the copy opens with the default options).
pub(crate) fn copy_store_dir(root: &Path, number: usize) -> PathBuf {
    if number == 0 {
        root.to_path_buf()
    } else {
        root.join(format!("{SHARD_DIR_PREFIX}{number}"))
    }
}

impl Db {
    /// Writes a consistent, openable copy of the whole database into `target` (a new or
    /// empty directory), while writers go on: every shard store, the catalog and the
    /// transaction state, holding exactly the transactions committed at or before
    /// [`Checkpoint::commit`], all of each. Tables and closed logs are hard-linked where the
    /// file system allows (copied otherwise); each log's unflushed tail is copied. Writers
    /// wait only while the files are linked, not while anything is written.
    ///
    /// `Db::open(target, Options::default())` opens the copy (its shard stores are in
    /// `shard-<n>` inside it); async indexes catch up there from the outbox entries it holds,
    /// as after a restart. Fails with `InvalidArgument` for a target that holds anything.
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<Checkpoint> {
        self.checkpoint_with(target.as_ref(), &mut |_, _| {})
    }

    /// [`Db::checkpoint`], telling `progress` the bytes written so far and the bytes to
    /// write in all, as they are written.
    pub fn checkpoint_with(
        &self,
        target: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Checkpoint> {
        let fs = self.shared.options.store.fs.clone();
        prepare_target(fs.as_ref(), target)?;
        let cut = self.cut(Some(target))?;
        let mut files = CheckpointFiles::default();
        // Shard stores first and the database's own last: its `CURRENT` is the last name
        // written. (A checkpoint that did not return is not a copy; remove it.)
        cut.txn_state.write(fs.as_ref(), target)?;
        let mut stores = cut.stores;
        stores.rotate_left(1);
        let total: u64 = stores.iter().map(|(_, c)| c.bytes_to_copy()).sum();
        let mut done = 0;
        for (_, capture) in stores {
            files += capture.finish(&mut |bytes| {
                done += bytes;
                progress(done, total);
            })?;
        }
        Ok(Checkpoint {
            commit: cut.commit,
            files_linked: files.files_linked,
            bytes_copied: files.bytes_copied,
        })
    }

    /// The cut (module docs): captures every shard store into its directory under `target`
    /// (linking what it can), or in memory without one.
    pub(crate) fn cut(&self, target: Option<&Path>) -> Result<Cut> {
        let fs = self.shared.options.store.fs.clone();
        // No table, index or shard store comes or goes during the cut.
        let _ddl = lock(&self.shared.ddl);
        let stores = self.shared.stores();
        if let Some(root) = target {
            for store in stores.iter().filter(|s| s.number > 0) {
                prepare_target(fs.as_ref(), &copy_store_dir(root, store.number))?;
            }
        }
        let holds = stores
            .iter()
            .map(|s| s.store.hold_writes())
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut captures = Vec::with_capacity(stores.len());
        for (store, hold) in stores.iter().zip(&holds) {
            let capture = match target {
                Some(root) => hold.capture(&copy_store_dir(root, store.number))?,
                None => hold.capture_mapped()?,
            };
            captures.push((store.number, capture));
        }
        // Read after every store is held and captured: each commit at or below it had
        // every part logged before its store was held.
        let commit = self.shared.sequencer.visible();
        let mut txn_state = lock(&self.shared.txn_state).clone();
        drop(holds);
        cut_above(&mut txn_state, commit);
        Ok(Cut {
            commit,
            stores: captures,
            txn_state,
        })
    }
}

/// Cuts every seqno above `commit` from the replay of a copy with `state`.
fn cut_above(state: &mut TxnState, commit: u64) {
    state.cut.retain(|&(lo, _)| lo <= commit);
    match state.cut.last_mut() {
        Some(last) if last.1 >= commit => last.1 = u64::MAX,
        _ => state.cut.push((commit + 1, u64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_above_a_commit_keeps_the_ranges_below_and_stays_ordered() {
        let mut state = TxnState {
            complete_through: 5,
            cut: vec![(3, 4)],
        };
        cut_above(&mut state, 10);
        assert_eq!(state.cut, vec![(3, 4), (11, u64::MAX)]);
        let mut state = TxnState {
            complete_through: 5,
            cut: vec![(3, 12)],
        };
        cut_above(&mut state, 10);
        assert_eq!(state.cut, vec![(3, u64::MAX)]);
        assert!(TxnState::decode(&state.encode()).is_ok());
    }
}
