//! Incremental backups into one backup directory (`docs/backups.md`; the manifest's format
//! is `docs/formats/backup.md`).
//!
//! ```text
//! BACKUP_DIR/STRATA-BACKUPS        marks the directory as one (written with its first backup)
//! BACKUP_DIR/LOCK                  held by a backup or purge under way
//! BACKUP_DIR/files/<store>-<name>-<size>-<checksum hex>   each file's contents, stored once
//! BACKUP_DIR/meta/<id>.backup      one manifest per backup: its files, commit point, sizes
//! ```
//!
//! 1. A backup takes a cut of the database in memory (`Db::cut`: every file mapped, nothing
//!    linked or written under the hold), then checksums each file. A file whose stored name
//!    (store, name, size, checksum) is already in `files/` is not copied again: table files
//!    never change, so consecutive backups share all but the new tables and the logs.
//! 2. A new file is written under a temporary name, synced, and renamed: a name in `files/`
//!    always holds whole contents. The manifest is written last, the same way, after
//!    `files/` is synced: a crash leaves the earlier backups as they were and the partial one
//!    invisible (its files are unreferenced, and the next purge removes them).
//! 3. `verify` re-reads every file a backup lists and checks its size and checksum;
//!    `restore` does the same before it writes anything, into a new or empty directory, each
//!    store's `CURRENT` last and the database's own last of all; `purge_old` removes the
//!    manifests of all but the newest backups first, then every file no kept manifest lists.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{BackupFault, BackupFormatFault, Error, Result};
use crate::fs::{FileLock, FileSystem, OsFs};
use crate::lsm::IoOp;
use crate::lsm::checkpoint::prepare_target;
use crate::table::backup::copy_store_dir;
use crate::table::commit::txn_state;
use crate::table::db::Db;

/// The file that marks a directory as a backup directory.
pub const MARKER: &str = "STRATA-BACKUPS";
const MARKER_TEXT: &[u8] = b"strata backup directory, layout 1\n";
const FILES: &str = "files";
const META: &str = "meta";
const LOCK: &str = "LOCK";
const META_SUFFIX: &str = ".backup";
const TEMP_SUFFIX: &str = ".tmp";
const MAGIC: &[u8; 8] = b"STRATABK";
/// The manifest format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The longest file name a manifest may list.
pub const MAX_NAME_BYTES: usize = 255;
/// The most files a manifest may list (a bound for a damaged count).
pub const MAX_FILES: usize = 1 << 24;

/// One backup, as [`list`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackupInfo {
    /// Its number in the backup directory: 1, 2, … in the order they were taken.
    pub id: u64,
    /// The commit point: it holds exactly the commits at or below it.
    pub commit: u64,
    /// The bytes this backup copied (the files earlier backups did not have).
    pub bytes_copied: u64,
    /// The files it lists.
    pub files: u64,
    /// Their bytes in all (what a restore writes).
    pub bytes: u64,
    /// When it was taken, in microseconds since the Unix epoch.
    pub created_micros: u64,
}

/// One file of a backup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupFile {
    /// The shard store it belongs to (0: the database directory).
    pub store: u32,
    /// Its name in the store's directory.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its checksum ([`file_checksum`]).
    pub checksum: u64,
}

/// What identifies a file's contents beside its name and size: the CRC-32 (IEEE, as
/// `crc32fast` computes it) of the whole file in the high half, and of the file without its
/// last four bytes in the low half. One CRC-32 would not do: a file that ends with the CRC-32
/// of everything before it (the transaction state file does) has the same CRC-32 as every
/// other such file of its length, whatever it holds (the CRC's residue), and a backup would
/// take one for the other; the second half is the CRC of what differs.
pub fn file_checksum(bytes: &[u8]) -> u64 {
    let body = &bytes[..bytes.len().saturating_sub(4)];
    (u64::from(crc32fast::hash(bytes)) << 32) | u64::from(crc32fast::hash(body))
}

impl BackupFile {
    /// Its name under `files/`: what identifies its contents.
    pub fn stored_name(&self) -> String {
        format!(
            "{}-{}-{}-{:016x}",
            self.store, self.name, self.size, self.checksum
        )
    }
}

/// A backup's manifest (`meta/<id>.backup`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupManifest {
    /// The backup's id, commit point, sizes and time (`files` and `bytes` are the list's).
    pub info: BackupInfo,
    /// Every file, in restore order.
    pub files: Vec<BackupFile>,
}

impl BackupManifest {
    /// The stored form (`docs/formats/backup.md`).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + self.files.len() * 40);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        for n in [
            self.info.id,
            self.info.commit,
            self.info.created_micros,
            self.info.bytes_copied,
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&(self.files.len() as u32).to_le_bytes());
        for file in &self.files {
            out.extend_from_slice(&file.store.to_le_bytes());
            out.extend_from_slice(&(file.name.len() as u16).to_le_bytes());
            out.extend_from_slice(file.name.as_bytes());
            out.extend_from_slice(&file.size.to_le_bytes());
            out.extend_from_slice(&file.checksum.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes a manifest, checking its magic, version, checksum, every name and its length.
    pub fn decode(bytes: &[u8]) -> std::result::Result<BackupManifest, BackupFormatFault> {
        use BackupFormatFault as F;
        if bytes.len() < 52 {
            return Err(F::TooShort);
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let mut reader = Reader { bytes: crc };
        if crc32fast::hash(body) != reader.u32()? {
            return Err(F::Checksum);
        }
        let mut r = Reader { bytes: body };
        if r.take(8)? != MAGIC {
            return Err(F::BadMagic);
        }
        if r.u32()? != VERSION {
            return Err(F::UnknownVersion);
        }
        let (id, commit, created_micros, bytes_copied) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let count = r.u32()? as usize;
        // Each file takes at least 23 bytes: a count beyond what is left is damage.
        if count > MAX_FILES || count > r.bytes.len() / 23 {
            return Err(F::FileCount);
        }
        let mut files = Vec::with_capacity(count);
        for _ in 0..count {
            let store = r.u32()?;
            let len = usize::from(r.u16()?);
            let name = std::str::from_utf8(r.take(len)?).map_err(|_| F::BadName)?;
            if !valid_name(name) {
                return Err(F::BadName);
            }
            let (size, checksum) = (r.u64()?, r.u64()?);
            files.push(BackupFile {
                store,
                name: name.to_string(),
                size,
                checksum,
            });
        }
        if !r.bytes.is_empty() {
            return Err(F::TrailingBytes);
        }
        let bytes = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
        Ok(BackupManifest {
            info: BackupInfo {
                id,
                commit,
                bytes_copied,
                files: files.len() as u64,
                bytes,
                created_micros,
            },
            files,
        })
    }
}

/// A name a store's directory may hold: nothing that leaves the directory when joined to it.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], BackupFormatFault> {
        if self.bytes.len() < n {
            return Err(BackupFormatFault::Truncated);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u16(&mut self) -> std::result::Result<u16, BackupFormatFault> {
        let mut b = [0; 2];
        b.copy_from_slice(self.take(2)?);
        Ok(u16::from_le_bytes(b))
    }
    fn u32(&mut self) -> std::result::Result<u32, BackupFormatFault> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }
    fn u64(&mut self) -> std::result::Result<u64, BackupFormatFault> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }
}

/// What [`purge_old`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Purged {
    /// The ids of the backups removed.
    pub backups: Vec<u64>,
    /// Files removed from `files/` (no kept backup listed them).
    pub files_removed: u64,
    /// Their bytes.
    pub bytes_freed: u64,
}

/// An open backup directory; locked by a backup or a purge, which change it.
struct Archive {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    _lock: Option<FileLock>,
}

fn io(op: IoOp, path: &Path, e: std::io::Error) -> Error {
    crate::lsm::Error::io(op, path, e).into()
}

impl Archive {
    /// Opens the backup directory `dir` to read it; with `change`, locked, and made one if it
    /// is new or empty. Fails with `InvalidArgument` for a directory that holds anything
    /// else, and with an I/O error (`WouldBlock`) while another backup or purge changes it.
    fn open(fs: Arc<dyn FileSystem>, dir: &Path, change: bool) -> Result<Archive> {
        let create = change;
        let not_one = || {
            Error::InvalidArgument(format!(
                "{} is not a backup directory (it has no {MARKER} file)",
                dir.display()
            ))
        };
        let names = match fs.list(dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => Vec::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_one()),
            Err(e) => return Err(io(IoOp::List, dir, e)),
        };
        let marked = names.iter().any(|n| n == MARKER);
        let usable = marked || (create && names.is_empty());
        if !usable {
            return Err(not_one());
        }
        if !marked {
            fs.create_dir_all(dir)
                .map_err(|e| io(IoOp::CreateDir, dir, e))?;
        }
        let lock_path = dir.join(LOCK);
        let lock = match change {
            true => Some(
                fs.lock(&lock_path)
                    .map_err(|e| io(IoOp::Lock, &lock_path, e))?,
            ),
            false => None,
        };
        let archive = Archive {
            fs,
            dir: dir.to_path_buf(),
            _lock: lock,
        };
        if !marked {
            for sub in [FILES, META] {
                let path = dir.join(sub);
                archive
                    .fs
                    .create_dir_all(&path)
                    .map_err(|e| io(IoOp::CreateDir, &path, e))?;
            }
            archive.write_whole(&dir.join(MARKER), MARKER_TEXT)?;
        }
        Ok(archive)
    }

    /// Writes `bytes` to `path` through a temporary name, synced, then renamed (the caller
    /// syncs the directory).
    fn write_whole(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let mut temp = path.as_os_str().to_owned();
        temp.push(TEMP_SUFFIX);
        let temp = PathBuf::from(temp);
        let mut file = self
            .fs
            .create(&temp)
            .map_err(|e| io(IoOp::Create, &temp, e))?;
        for chunk in bytes.chunks(1 << 20) {
            file.write_all(chunk)
                .map_err(|e| io(IoOp::Write, &temp, e))?;
        }
        file.flush().map_err(|e| io(IoOp::Write, &temp, e))?;
        file.sync_data().map_err(|e| io(IoOp::Sync, &temp, e))?;
        drop(file);
        self.fs
            .rename(&temp, path)
            .map_err(|e| io(IoOp::Rename, path, e))?;
        let parent = path.parent().unwrap_or(&self.dir);
        self.fs
            .sync_dir(parent)
            .map_err(|e| io(IoOp::SyncDir, parent, e))
    }

    fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(META).join(format!("{id:010}{META_SUFFIX}"))
    }

    /// The ids of the backups whose manifests are in, ascending.
    fn ids(&self) -> Result<Vec<u64>> {
        let meta = self.dir.join(META);
        let names = self.fs.list(&meta).map_err(|e| io(IoOp::List, &meta, e))?;
        let mut ids: Vec<u64> = names
            .iter()
            .filter_map(|n| n.strip_suffix(META_SUFFIX)?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn manifest(&self, id: u64) -> Result<BackupManifest> {
        let path = self.meta_path(id);
        let bytes = match self.fs.read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotFound(format!(
                    "backup {id} in {}",
                    self.dir.display()
                )));
            }
            Err(e) => return Err(io(IoOp::Read, &path, e)),
        };
        let manifest = BackupManifest::decode(&bytes).map_err(|what| Error::BackupDamaged {
            id,
            file: path.display().to_string(),
            what: BackupFault::Manifest(what),
        })?;
        if manifest.info.id != id {
            return Err(Error::BackupDamaged {
                id,
                file: path.display().to_string(),
                what: BackupFault::Manifest(BackupFormatFault::WrongId),
            });
        }
        Ok(manifest)
    }

    /// Reads stored file `file` of backup `id`, checking its size and checksum.
    fn read_checked(&self, id: u64, file: &BackupFile) -> Result<Bytes> {
        let path = self.dir.join(FILES).join(file.stored_name());
        let damaged = |what| Error::BackupDamaged {
            id,
            file: path.display().to_string(),
            what,
        };
        let bytes = match self.fs.read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(damaged(BackupFault::Missing));
            }
            Err(e) => return Err(io(IoOp::Read, &path, e)),
        };
        if bytes.len() as u64 != file.size {
            return Err(damaged(BackupFault::Size {
                expected: file.size,
                found: bytes.len() as u64,
            }));
        }
        if file_checksum(&bytes) != file.checksum {
            return Err(damaged(BackupFault::Checksum));
        }
        Ok(bytes)
    }

    /// Removes temporary files a crash left in `files/` and `meta/`.
    fn remove_temporaries(&self) {
        for sub in [FILES, META] {
            let path = self.dir.join(sub);
            for name in self.fs.list(&path).unwrap_or_default() {
                if name.ends_with(TEMP_SUFFIX) {
                    let _ = self.fs.remove_file(&path.join(name));
                }
            }
        }
    }
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl Db {
    /// Takes an incremental backup into the backup directory `dir` (created, or made one, if
    /// it is new or empty): a consistent copy at one commit point, as [`Db::checkpoint`]'s,
    /// of which only the files earlier backups there do not hold are copied. Fails with
    /// `InvalidArgument` for a directory that is neither empty nor a backup directory.
    pub fn backup(&self, dir: impl AsRef<Path>) -> Result<BackupInfo> {
        self.backup_with(dir.as_ref(), &mut |_, _| {})
    }

    /// [`Db::backup`], telling `progress` the bytes checked so far and in all.
    pub fn backup_with(
        &self,
        dir: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<BackupInfo> {
        let fs = Arc::clone(&self.shared.options.store.fs);
        let archive = Archive::open(fs, dir, true)?;
        archive.remove_temporaries();
        let id = archive.ids()?.last().map_or(1, |last| last + 1);
        let cut = self.cut(None)?;
        let mut all: Vec<(u32, String, Bytes)> = Vec::new();
        for (number, capture) in cut.stores {
            for (name, bytes) in capture.into_files()? {
                all.push((number as u32, name, bytes));
            }
        }
        all.push((
            0,
            txn_state::FILE.to_string(),
            cut.txn_state.encode().into(),
        ));
        // Restore order: a store's `CURRENT` after its other files, the database's own last.
        all.sort_by_key(|(store, name, _)| {
            (name == "CURRENT", *store == 0 && name == "CURRENT", *store)
        });
        let total: u64 = all.iter().map(|(_, _, b)| b.len() as u64).sum();
        let files_dir = dir.join(FILES);
        let mut done = 0;
        let mut bytes_copied = 0;
        let mut files = Vec::with_capacity(all.len());
        for (store, name, bytes) in all {
            let file = BackupFile {
                store,
                name,
                size: bytes.len() as u64,
                checksum: file_checksum(&bytes),
            };
            let path = files_dir.join(file.stored_name());
            let there = archive
                .fs
                .exists(&path)
                .map_err(|e| io(IoOp::Exists, &path, e))?;
            if !there {
                archive.write_whole(&path, &bytes)?;
                bytes_copied += file.size;
            }
            done += file.size;
            progress(done, total);
            files.push(file);
        }
        let manifest = BackupManifest {
            info: BackupInfo {
                id,
                commit: cut.commit,
                bytes_copied,
                files: files.len() as u64,
                bytes: total,
                created_micros: now_micros(),
            },
            files,
        };
        // Every file is in (and its name durable) before the manifest that lists it.
        archive.write_whole(&archive.meta_path(id), &manifest.encode())?;
        Ok(manifest.info)
    }
}

/// The backups in the backup directory `dir`, oldest first.
pub fn list(dir: impl AsRef<Path>) -> Result<Vec<BackupInfo>> {
    list_on(Arc::new(OsFs), dir.as_ref())
}

/// [`list`] on the file system `fs`.
pub fn list_on(fs: Arc<dyn FileSystem>, dir: &Path) -> Result<Vec<BackupInfo>> {
    let archive = Archive::open(fs, dir, false)?;
    archive
        .ids()?
        .into_iter()
        .map(|id| archive.manifest(id).map(|m| m.info))
        .collect()
}

/// Re-reads every file backup `id` lists and checks its size and checksum; fails with
/// [`Error::BackupDamaged`] at the first that does not match (or is missing).
pub fn verify(dir: impl AsRef<Path>, id: u64) -> Result<BackupInfo> {
    verify_on(Arc::new(OsFs), dir.as_ref(), id)
}

/// [`verify`] on the file system `fs`.
pub fn verify_on(fs: Arc<dyn FileSystem>, dir: &Path, id: u64) -> Result<BackupInfo> {
    let archive = Archive::open(fs, dir, false)?;
    let manifest = archive.manifest(id)?;
    for file in &manifest.files {
        archive.read_checked(id, file)?;
    }
    Ok(manifest.info)
}

/// Writes backup `id` into `target` (a new or empty directory) as a database
/// `Db::open(target, Options::default())` opens. Every file is checked first: a damaged
/// backup ([`Error::BackupDamaged`]) writes nothing. Fails with `InvalidArgument` for a
/// target that holds anything.
pub fn restore(dir: impl AsRef<Path>, id: u64, target: impl AsRef<Path>) -> Result<BackupInfo> {
    restore_with(
        Arc::new(OsFs),
        dir.as_ref(),
        id,
        target.as_ref(),
        &mut |_, _| {},
    )
}

/// [`restore`] on the file system `fs`, telling `progress` the bytes written so far and in
/// all.
pub fn restore_with(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    id: u64,
    target: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BackupInfo> {
    let archive = Archive::open(Arc::clone(&fs), dir, false)?;
    let manifest = archive.manifest(id)?;
    let taken = fs.list(target).map(|names| !names.is_empty());
    if taken.unwrap_or(false) {
        return Err(Error::InvalidArgument(format!(
            "{} is not empty: a restore goes into a new or empty directory",
            target.display()
        )));
    }
    for file in &manifest.files {
        archive.read_checked(id, file)?;
    }
    prepare_target(fs.as_ref(), target)?;
    let mut done = 0;
    let mut dirs: Vec<PathBuf> = Vec::new();
    for file in &manifest.files {
        let store_dir = copy_store_dir(target, file.store as usize);
        if !dirs.contains(&store_dir) {
            fs.create_dir_all(&store_dir)
                .map_err(|e| io(IoOp::CreateDir, &store_dir, e))?;
            dirs.push(store_dir.clone());
        }
        let bytes = archive.read_checked(id, file)?;
        let path = store_dir.join(&file.name);
        let mut out = fs.create(&path).map_err(|e| io(IoOp::Create, &path, e))?;
        for chunk in bytes.chunks(1 << 20) {
            out.write_all(chunk)
                .map_err(|e| io(IoOp::Write, &path, e))?;
            done += chunk.len() as u64;
            progress(done, manifest.info.bytes);
        }
        out.flush().map_err(|e| io(IoOp::Write, &path, e))?;
        out.sync_data().map_err(|e| io(IoOp::Sync, &path, e))?;
        if file.name == "CURRENT" {
            // A store's names are durable before it is one.
            fs.sync_dir(&store_dir)
                .map_err(|e| io(IoOp::SyncDir, &store_dir, e))?;
        }
    }
    for store_dir in &dirs {
        fs.sync_dir(store_dir)
            .map_err(|e| io(IoOp::SyncDir, store_dir, e))?;
    }
    Ok(manifest.info)
}

/// Removes every backup in `dir` but the newest `keep_last`, then every stored file no kept
/// backup lists (and what crashed backups left). The manifests go first, so a crash part way
/// leaves unreferenced files, which the next purge removes, never a kept backup short of
/// one.
pub fn purge_old(dir: impl AsRef<Path>, keep_last: usize) -> Result<Purged> {
    purge_old_on(Arc::new(OsFs), dir.as_ref(), keep_last)
}

/// [`purge_old`] on the file system `fs`.
pub fn purge_old_on(fs: Arc<dyn FileSystem>, dir: &Path, keep_last: usize) -> Result<Purged> {
    let archive = Archive::open(fs, dir, true)?;
    let ids = archive.ids()?;
    let split = ids.len().saturating_sub(keep_last);
    let (gone, kept) = ids.split_at(split);
    let mut purged = Purged::default();
    // Read every kept manifest before removing anything: a damaged one stops the purge.
    let mut referenced = std::collections::HashSet::new();
    for &id in kept {
        for file in archive.manifest(id)?.files {
            referenced.insert(file.stored_name());
        }
    }
    for &id in gone {
        let path = archive.meta_path(id);
        archive
            .fs
            .remove_file(&path)
            .map_err(|e| io(IoOp::Remove, &path, e))?;
        purged.backups.push(id);
    }
    let meta = dir.join(META);
    archive
        .fs
        .sync_dir(&meta)
        .map_err(|e| io(IoOp::SyncDir, &meta, e))?;
    let files_dir = dir.join(FILES);
    let names = archive
        .fs
        .list(&files_dir)
        .map_err(|e| io(IoOp::List, &files_dir, e))?;
    for name in names {
        if referenced.contains(&name) {
            continue;
        }
        let path = files_dir.join(&name);
        let size = archive.fs.read(&path).map_or(0, |b| b.len() as u64);
        archive
            .fs
            .remove_file(&path)
            .map_err(|e| io(IoOp::Remove, &path, e))?;
        purged.files_removed += 1;
        purged.bytes_freed += size;
    }
    archive
        .fs
        .sync_dir(&files_dir)
        .map_err(|e| io(IoOp::SyncDir, &files_dir, e))?;
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::commit::txn_state::TxnState;

    #[test]
    fn two_files_ending_in_their_own_crc_have_different_checksums() {
        let a = TxnState {
            complete_through: 0,
            cut: vec![(92, u64::MAX)],
        }
        .encode();
        let b = TxnState {
            complete_through: 0,
            cut: vec![(122, u64::MAX)],
        }
        .encode();
        assert_eq!(a.len(), b.len());
        // The trap: one CRC-32 of each is the same (the residue).
        assert_eq!(crc32fast::hash(&a), crc32fast::hash(&b));
        assert_ne!(file_checksum(&a), file_checksum(&b));
    }

    #[test]
    fn a_manifest_round_trips_and_refuses_damage() {
        let manifest = BackupManifest {
            info: BackupInfo {
                id: 3,
                commit: 99,
                bytes_copied: 10,
                files: 1,
                bytes: 42,
                created_micros: 7,
            },
            files: vec![BackupFile {
                store: 1,
                name: "000012.sst".into(),
                size: 42,
                checksum: 0xfeed,
            }],
        };
        let bytes = manifest.encode();
        assert_eq!(BackupManifest::decode(&bytes), Ok(manifest.clone()));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(BackupManifest::decode(&bad).is_err(), "byte {i}");
        }
        for len in 0..bytes.len() {
            assert!(
                BackupManifest::decode(&bytes[..len]).is_err(),
                "length {len}"
            );
        }
        let mut escape = manifest;
        escape.files[0].name = "../../etc".into();
        assert_eq!(
            BackupManifest::decode(&escape.encode()),
            Err(BackupFormatFault::BadName)
        );
    }
}
