//! Checkpoints: an openable copy of a running store, taken while writers keep writing.
//!
//! 1. [`Store::hold_writes`] takes the writer lock: no batch is logged, no memtable switched
//!    and no family created or dropped until the [`WriteHold`] drops. The log's buffered
//!    bytes go to the operating system first, so another handle on the file reads them.
//! 2. [`WriteHold::capture`] takes, under the manifest's lock (so no flush or compaction
//!    installs or deletes a file meanwhile), a copy of the manifest state and every file it
//!    needs: the live tables and the logs from the oldest one a family still needs. Tables
//!    and closed logs never change again, so each is hard-linked into the target when the
//!    file system allows, or else mapped (a reference that outlives a later delete) to be
//!    copied later. The active log is mapped and cut at the writer's offset, a record
//!    boundary: the copy replays it as a recovery would, without a torn tail.
//! 3. The hold drops (writers go on), and [`Capture::finish`] writes the copies, a manifest
//!    holding the captured state, and `CURRENT`, syncing each and then the directory.
//!    Opening the target is an ordinary recovery; nothing is flushed.
//!
//! The table layer holds every shard store at once, reads its commit point, and captures
//! each: one consistent cut of the whole database (`strata::Db::checkpoint`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};

use bytes::Bytes;

use crate::SeqNo;
use crate::edit::ManifestState;
use crate::error::{Error, IoContext, IoOp, Result};
use crate::format::{FileKind, file_name, parse_file_name};
use crate::fs::FileSystem;
use crate::manifest::Manifest;
use crate::store::{Shared, Store, WalState};
use crate::sync::lock;

/// How a checkpoint's files got into the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointFiles {
    /// Files hard-linked (sharing their bytes with the store's).
    pub files_linked: u64,
    /// Bytes written: the active log's prefix, and the files that could not be linked.
    pub bytes_copied: u64,
}

impl std::ops::AddAssign for CheckpointFiles {
    fn add_assign(&mut self, other: CheckpointFiles) {
        self.files_linked += other.files_linked;
        self.bytes_copied += other.bytes_copied;
    }
}

/// A store whose commits wait until this drops ([`Store::hold_writes`]).
pub struct WriteHold<'s> {
    shared: &'s Shared,
    wal: MutexGuard<'s, WalState>,
}

impl std::fmt::Debug for WriteHold<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteHold")
            .field("dir", &self.shared.dir)
            .field("log", &self.wal.number)
            .finish()
    }
}

/// What [`WriteHold::capture`] took: the files linked, the bytes still to copy, and the state
/// to write as the copy's manifest ([`Capture::finish`]).
pub struct Capture {
    fs: Arc<dyn FileSystem>,
    /// Where linked files went and the rest will be written; `None` for a capture in memory
    /// ([`WriteHold::capture_mapped`]).
    target: Option<PathBuf>,
    state: ManifestState,
    manifest_number: u64,
    /// Every file of the copy but its manifest and `CURRENT`, by name: the bytes still to
    /// write, or `None` for a file already linked into the target.
    files: Vec<(String, Option<Bytes>)>,
    files_linked: u64,
    /// The store's last visible seqno while it was held.
    seqno: SeqNo,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("target", &self.target)
            .field("files_linked", &self.files_linked)
            .field("to_copy", &self.bytes_to_copy())
            .finish()
    }
}

impl Store {
    /// Holds this store's commits (and memtable switches, and family changes) until the hold
    /// drops: what a checkpoint does while it captures the files (module docs). Readers,
    /// flushes and compactions go on. Fails with `ReadOnly` on a store that refuses writes.
    pub fn hold_writes(&self) -> Result<WriteHold<'_>> {
        self.shared.check_writable()?;
        let mut wal = lock(&self.shared.writer);
        let path = self.shared.log_path(wal.number);
        wal.log.flush().map_err(|e| Error::log(path, e))?;
        Ok(WriteHold {
            shared: &self.shared,
            wal,
        })
    }

    /// A checkpoint of this store into `target` (a new or empty directory): an openable copy
    /// holding every write visible when it was taken, whose seqno it returns with how its
    /// files got there. Writers wait only while the files are linked (module docs).
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<(SeqNo, CheckpointFiles)> {
        let hold = self.hold_writes()?;
        prepare_target(self.shared.fs.as_ref(), target.as_ref())?;
        let capture = hold.capture(target.as_ref())?;
        drop(hold);
        let seqno = capture.seqno();
        Ok((seqno, capture.finish(&mut |_| {})?))
    }
}

/// Creates `target`, or checks that it is an empty directory: a checkpoint never mixes its
/// files with others. Fails with `InvalidArgument` on a non-empty one.
pub fn prepare_target(fs: &dyn FileSystem, target: &Path) -> Result<()> {
    fs.create_dir_all(target).at(IoOp::CreateDir, target)?;
    let names = fs.list(target).at(IoOp::List, target)?;
    if let Some(name) = names.first() {
        return Err(Error::InvalidArgument(format!(
            "{} is not empty (it holds {name:?}): a checkpoint goes into a new or empty \
             directory",
            target.display()
        )));
    }
    Ok(())
}

impl WriteHold<'_> {
    /// Takes the store's files as they stand into `target`, which must exist and be empty
    /// ([`prepare_target`]): links what can be linked, maps the rest (module docs, step 2).
    /// A failure leaves `target` partly filled; the caller removes it.
    pub fn capture(&self, target: &Path) -> Result<Capture> {
        self.capture_into(Some(target))
    }

    /// [`WriteHold::capture`] linking nothing: every file mapped, for a caller that reads
    /// them ([`Capture::into_files`]; an incremental backup, which checksums each file and
    /// copies only the new ones).
    pub fn capture_mapped(&self) -> Result<Capture> {
        self.capture_into(None)
    }

    fn capture_into(&self, target: Option<&Path>) -> Result<Capture> {
        let shared = self.shared;
        let fs = &shared.fs;
        let versions = lock(&shared.versions);
        let mut state = versions.state.clone();
        let seqno = shared.seq.visible();
        let mut capture = Capture {
            fs: Arc::clone(fs),
            target: target.map(Path::to_path_buf),
            manifest_number: state.next_file_number,
            state: ManifestState::empty(),
            files: Vec::new(),
            files_linked: 0,
            seqno,
        };
        // The logs from the oldest one a family still needs to the one being written.
        let oldest_log = state
            .cfs
            .values()
            .map(|cf| cf.log_number)
            .min()
            .unwrap_or(0);
        let listed = fs.list(&shared.dir).at(IoOp::List, &shared.dir)?;
        for name in listed {
            let Some((FileKind::Log, n)) = parse_file_name(&name) else {
                continue;
            };
            if n < oldest_log || n > self.wal.number {
                continue;
            }
            if n < self.wal.number {
                capture.take(&shared.dir, name)?;
                continue;
            }
            let path = shared.log_path(n);
            let bytes = fs.read(&path).at(IoOp::Read, &path)?;
            let size = usize::try_from(self.wal.log.offset()).unwrap_or(usize::MAX);
            if bytes.len() < size {
                let short = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the log holds {} bytes; {size} were written", bytes.len()),
                );
                return Err(Error::io(IoOp::Read, &path, short));
            }
            capture.files.push((name, Some(bytes.slice(..size))));
        }
        for cf in state.cfs.values() {
            for table in cf.levels.iter().flatten() {
                capture.take(&shared.dir, file_name(FileKind::Table, table.number))?;
            }
        }
        drop(versions);
        // The copy's manifest takes the next number, which its state then counts as used.
        state.next_file_number += 1;
        capture.state = state;
        Ok(capture)
    }
}

impl Capture {
    /// Links file `name` of `dir` into the target, or maps it to copy later.
    fn take(&mut self, dir: &Path, name: String) -> Result<()> {
        let from = dir.join(&name);
        if let Some(target) = &self.target
            && self.fs.hard_link(&from, &target.join(&name)).is_ok()
        {
            self.files_linked += 1;
            self.files.push((name, None));
            return Ok(());
        }
        let bytes = self.fs.read(&from).at(IoOp::Read, &from)?;
        self.files.push((name, Some(bytes)));
        Ok(())
    }

    /// The store's last visible seqno while it was held: every write at or below it is in
    /// the capture (for a store with its own sequencer, exactly those).
    pub fn seqno(&self) -> SeqNo {
        self.seqno
    }

    /// The bytes [`Capture::finish`] will write for the files it could not link.
    pub fn bytes_to_copy(&self) -> u64 {
        self.files
            .iter()
            .flat_map(|(_, b)| b)
            .map(|b| b.len() as u64)
            .sum()
    }

    /// Every file of the copy, by name, with its bytes: the captured files, then the
    /// manifest and `CURRENT` that [`Capture::finish`] would write. For a capture into a
    /// target, the linked files are read from there.
    pub fn into_files(self) -> Result<Vec<(String, Bytes)>> {
        let mut out = Vec::with_capacity(self.files.len() + 2);
        for (name, bytes) in self.files {
            let bytes = match (bytes, &self.target) {
                (Some(bytes), _) => bytes,
                (None, Some(target)) => {
                    let path = target.join(&name);
                    self.fs.read(&path).at(IoOp::Read, &path)?
                }
                (None, None) => {
                    return Err(Error::InvalidArgument(format!(
                        "{name} was linked, but the capture has no target"
                    )));
                }
            };
            out.push((name, bytes));
        }
        let name = file_name(FileKind::Manifest, self.manifest_number);
        let manifest = crate::manifest::encode_new(self.manifest_number, &self.state)?;
        out.push((name.clone(), Bytes::from(manifest)));
        out.push((
            crate::format::CURRENT_FILE.to_string(),
            Bytes::from(format!("{name}\n")),
        ));
        Ok(out)
    }

    /// Writes the files that were not linked, the manifest and `CURRENT`, and makes them all
    /// durable (module docs, step 3). `progress` hears the bytes written, a chunk at a time.
    /// Fails with `InvalidArgument` for a capture in memory, which has no target.
    pub fn finish(self, progress: &mut dyn FnMut(u64)) -> Result<CheckpointFiles> {
        const CHUNK: usize = 1 << 20;
        let Some(target) = &self.target else {
            return Err(Error::InvalidArgument(
                "a capture in memory has no target to finish into".into(),
            ));
        };
        let mut bytes_copied = 0;
        for (name, bytes) in &self.files {
            let Some(bytes) = bytes else { continue };
            let path = &target.join(name);
            let mut file = self.fs.create(path).at(IoOp::Create, path)?;
            for chunk in bytes.chunks(CHUNK) {
                file.write_all(chunk).at(IoOp::Write, path)?;
                progress(chunk.len() as u64);
            }
            file.flush().at(IoOp::Write, path)?;
            file.sync_data().at(IoOp::Sync, path)?;
            bytes_copied += bytes.len() as u64;
        }
        // Writes the manifest, points CURRENT at it and syncs the directory: every name
        // linked or written above is durable with it.
        Manifest::create(&self.fs, target, self.manifest_number, &self.state)?;
        Ok(CheckpointFiles {
            files_linked: self.files_linked,
            bytes_copied,
        })
    }
}
