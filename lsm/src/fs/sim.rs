//! An in-memory file system for tests: crash simulation and fault injection.
//!
//! 1. Files are inodes holding bytes and the length made durable by their last `sync_data`.
//!    Every file is written by appending, so "what is durable" is a prefix.
//! 2. Each directory keeps two maps from name to inode: the current one, and the one made
//!    durable by its last `sync_dir`. Creating, renaming and removing change only the current
//!    map.
//! 3. [`SimFs::crash`] keeps only durable state: every inode is cut to its durable length,
//!    every directory reverts to its durable map, inodes no name reaches are dropped, locks are
//!    released, and file handles opened before the crash fail from then on.
//! 4. Every operation counts against its [`OpKind`]; [`SimFs::fail_nth`] makes the n-th
//!    operation of a kind fail with an I/O error (and change nothing).
//!
//! Directories themselves are durable as soon as they are created: the engine creates its
//! directory once, and the crash cases worth finding are about files.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use super::{FileLock, FileSystem, WritableFile, locked_error};

/// The kinds of operation [`SimFs`] counts and can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `create` and `open_append`.
    Open,
    /// A write to a file.
    Write,
    /// `sync_data` of a file.
    Sync,
    /// `read`.
    Read,
    /// `rename`.
    Rename,
    /// `remove_file`.
    Remove,
    /// `sync_dir`.
    SyncDir,
    /// `hard_link`.
    Link,
}

/// The simulated file system. Clones share the same state.
#[derive(Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFs").finish_non_exhaustive()
    }
}

#[derive(Clone, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    dirs: BTreeMap<PathBuf, Dir>,
    locks: HashSet<PathBuf>,
    /// Bumped by each crash; handles from an older generation are dead.
    generation: u64,
    counts: HashMap<OpKind, u64>,
    faults: HashSet<(OpKind, u64)>,
    /// Every operation but reads fails, as on a file system mounted read-only.
    read_only: bool,
    /// The bytes all files may hold together; a write past it fails as on a full disk.
    capacity: Option<u64>,
    /// `(suffix, delay)`: a sync of a file whose name ends in `suffix` takes `delay`.
    slow_syncs: Option<(String, std::time::Duration)>,
    /// `hard_link` fails as across devices, so callers take their copying path.
    no_links: bool,
}

#[derive(Clone, Default)]
struct Inode {
    data: Vec<u8>,
    durable_len: usize,
}

#[derive(Clone, Default)]
struct Dir {
    current: BTreeMap<String, u64>,
    durable: BTreeMap<String, u64>,
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path.file_name().and_then(|n| n.to_str());
    match (path.parent(), name) {
        (Some(parent), Some(name)) => Ok((parent.to_path_buf(), name.to_owned())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a file path: {}", path.display()),
        )),
    }
}

fn read_only_error() -> io::Error {
    io::Error::new(io::ErrorKind::ReadOnlyFilesystem, "read-only file system")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("no such file: {}", path.display()),
    )
}

impl State {
    /// Counts an operation and fails it if a fault is armed for it.
    fn operation(&mut self, kind: OpKind) -> io::Result<()> {
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        if self.faults.remove(&(kind, *count)) {
            return Err(io::Error::other(format!(
                "injected fault: {kind:?} #{count}"
            )));
        }
        if self.read_only && kind != OpKind::Read {
            return Err(read_only_error());
        }
        Ok(())
    }

    /// Bytes held by the files the directories name now (a removed file's space is free).
    fn used(&self) -> u64 {
        let named: HashSet<u64> = self
            .dirs
            .values()
            .flat_map(|dir| dir.current.values().copied())
            .collect();
        named
            .iter()
            .filter_map(|id| self.inodes.get(id))
            .map(|inode| inode.data.len() as u64)
            .sum()
    }

    fn dir(&mut self, dir: &Path) -> io::Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(dir))
    }

    fn lookup(&mut self, path: &Path) -> io::Result<u64> {
        let (dir, name) = split(path)?;
        self.dir(&dir)?
            .current
            .get(&name)
            .copied()
            .ok_or_else(|| not_found(path))
    }
}

impl SimFs {
    /// An empty file system.
    pub fn new() -> Self {
        SimFs::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock has already failed; its state is fine
        // to inspect.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes `hard_link` fail as across devices (`refuse`) or work again: the copying path
    /// of whatever links files (a checkpoint) runs on the simulated file system too.
    pub fn refuse_links(&self, refuse: bool) {
        self.state().no_links = refuse;
    }

    /// Simulates a crash (power loss): keeps only what was durable. See the module docs.
    pub fn crash(&self) {
        let mut state = self.state();
        for dir in state.dirs.values_mut() {
            dir.current = dir.durable.clone();
        }
        let reachable: HashSet<u64> = state
            .dirs
            .values()
            .flat_map(|dir| dir.current.values().copied())
            .collect();
        state.inodes.retain(|id, _| reachable.contains(id));
        for inode in state.inodes.values_mut() {
            inode.data.truncate(inode.durable_len);
        }
        state.locks.clear();
        state.generation += 1;
    }

    /// A new, independent file system holding what a crash now would leave, while this one
    /// goes on unchanged: a store still running on `self` cannot touch the copy, which is how
    /// a test models "the machine lost power at this instant" and reopens on the survivor.
    /// Fault counters and armed faults start afresh in the copy.
    pub fn crashed_copy(&self) -> SimFs {
        let mut state = self.state().clone();
        state.counts.clear();
        state.faults.clear();
        let copy = SimFs {
            state: Arc::new(Mutex::new(state)),
        };
        copy.crash();
        copy
    }

    /// Makes the `n`-th operation of `kind` (counting from this file system's creation, the
    /// first being 1) fail with an I/O error. It changes nothing.
    pub fn fail_nth(&self, kind: OpKind, n: u64) {
        self.state().faults.insert((kind, n));
    }

    /// Disarms every fault that has not fired. Background work (flushes, compactions) makes
    /// operation counts vary from run to run, so a test that armed a fault for one phase
    /// clears it before the next.
    pub fn clear_faults(&self) {
        self.state().faults.clear();
    }

    /// Makes every operation but reads fail, as on a file system mounted read-only (`true`),
    /// or lifts that (`false`).
    pub fn set_read_only(&self, read_only: bool) {
        self.state().read_only = read_only;
    }

    /// Caps the bytes all files may hold together: a write that would pass the cap fails with
    /// `StorageFull` and writes nothing, as on a full disk. `None` lifts the cap.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.state().capacity = bytes;
    }

    /// Makes every sync of a file whose name ends in `suffix` take `delay` (the caller's
    /// thread sleeps, holding nothing of the file system), as on a slow disk; `None` lifts
    /// it. For tests that need background work to fall behind the writer, whatever the
    /// scheduling: slow table syncs (`".sst"`) slow flushes and compactions and nothing else.
    pub fn set_slow_syncs(&self, slow: Option<(&str, std::time::Duration)>) {
        self.state().slow_syncs = slow.map(|(suffix, delay)| (suffix.to_string(), delay));
    }

    /// How many operations of `kind` ran (or were failed) so far.
    pub fn op_count(&self, kind: OpKind) -> u64 {
        self.state().counts.get(&kind).copied().unwrap_or(0)
    }

    /// The bytes of a file as they are now, durable or not; `None` if there is no such file.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let mut state = self.state();
        let id = state.lookup(path).ok()?;
        state.inodes.get(&id).map(|inode| inode.data.clone())
    }

    fn open_inode(&self, path: &Path, truncate: bool) -> io::Result<Box<dyn WritableFile>> {
        let mut state = self.state();
        state.operation(OpKind::Open)?;
        let (dir, name) = split(path)?;
        let id = if truncate {
            let id = state.next_inode;
            state.next_inode += 1;
            state.inodes.insert(id, Inode::default());
            state.dir(&dir)?.current.insert(name, id);
            id
        } else {
            state.lookup(path)?
        };
        Ok(Box::new(SimFile {
            fs: self.clone(),
            inode: id,
            generation: state.generation,
            path: path.to_path_buf(),
        }))
    }
}

/// An open simulated file.
struct SimFile {
    fs: SimFs,
    inode: u64,
    generation: u64,
    path: PathBuf,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile").field("path", &self.path).finish()
    }
}

impl SimFile {
    fn with_inode<T>(&self, kind: OpKind, f: impl FnOnce(&mut Inode) -> T) -> io::Result<T> {
        let mut state = self.fs.state();
        if state.generation != self.generation {
            return Err(io::Error::other(format!(
                "{}: file handle from before a simulated crash",
                self.path.display()
            )));
        }
        state.operation(kind)?;
        match state.inodes.get_mut(&self.inode) {
            Some(inode) => Ok(f(inode)),
            None => Err(not_found(&self.path)),
        }
    }
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        {
            let state = self.fs.state();
            if let Some(capacity) = state.capacity
                && state.used() + buf.len() as u64 > capacity
            {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "no space left on device",
                ));
            }
        }
        self.with_inode(OpKind::Write, |inode| inode.data.extend_from_slice(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl WritableFile for SimFile {
    fn sync_data(&mut self) -> io::Result<()> {
        let delay = self
            .fs
            .state()
            .slow_syncs
            .as_ref()
            .and_then(|(suffix, delay)| {
                let name = self.path.file_name()?.to_str()?;
                name.ends_with(suffix.as_str()).then_some(*delay)
            });
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
        self.with_inode(OpKind::Sync, |inode| inode.durable_len = inode.data.len())
    }
}

#[derive(Debug)]
struct SimLock {
    fs: SimFs,
    path: PathBuf,
    generation: u64,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut state = self.fs.state();
        // A crash already released every lock; a newer holder's lock is not ours to drop.
        if state.generation == self.generation {
            state.locks.remove(&self.path);
        }
    }
}

impl FileSystem for SimFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state();
        if state.read_only && !state.dirs.contains_key(dir) {
            return Err(read_only_error());
        }
        for ancestor in dir.ancestors() {
            state.dirs.entry(ancestor.to_path_buf()).or_default();
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open_inode(path, true)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open_inode(path, false)
    }

    fn read(&self, path: &Path) -> io::Result<Bytes> {
        let mut state = self.state();
        state.operation(OpKind::Read)?;
        let id = state.lookup(path)?;
        let inode = state.inodes.get(&id).ok_or_else(|| not_found(path))?;
        Ok(Bytes::copy_from_slice(&inode.data))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state();
        state.operation(OpKind::Rename)?;
        let id = state.lookup(from)?;
        let (to_dir, to_name) = split(to)?;
        state.dir(&to_dir)?; // the target directory must exist before anything changes
        let (from_dir, from_name) = split(from)?;
        state.dir(&from_dir)?.current.remove(&from_name);
        state.dir(&to_dir)?.current.insert(to_name, id);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state();
        if state.no_links {
            return Err(io::Error::new(
                io::ErrorKind::CrossesDevices,
                "links refused (SimFs::refuse_links)",
            ));
        }
        state.operation(OpKind::Link)?;
        let id = state.lookup(from)?;
        let (to_dir, to_name) = split(to)?;
        let dir = state.dir(&to_dir)?;
        if dir.current.contains_key(&to_name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            ));
        }
        dir.current.insert(to_name, id);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state();
        state.operation(OpKind::Remove)?;
        let (dir, name) = split(path)?;
        match state.dir(&dir)?.current.remove(&name) {
            Some(_) => Ok(()),
            None => Err(not_found(path)),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        Ok(self.state().dir(dir)?.current.keys().cloned().collect())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.state().lookup(path).is_ok())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state();
        state.operation(OpKind::SyncDir)?;
        let dir = state.dir(dir)?;
        dir.durable = dir.current.clone();
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let mut state = self.state();
        if !state.locks.insert(path.to_path_buf()) {
            return Err(locked_error(path));
        }
        Ok(FileLock::new(Box::new(SimLock {
            fs: self.clone(),
            path: path.to_path_buf(),
            generation: state.generation,
        })))
    }
}
