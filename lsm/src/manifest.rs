//! The manifest on disk: `CURRENT` names the live `MANIFEST-NNNNNN`, a log of version edits.
//!
//! 1. Every change to the store's shape is one edit, appended and synced before it takes
//!    effect: a crash leaves the old shape or the new, and the files of an edit that never
//!    became durable are strays, removed at the next open.
//! 2. A new manifest starts with a snapshot edit. It is installed by writing a temporary file
//!    that names it, syncing that, renaming it over `CURRENT`, and syncing the directory.
//! 3. The store starts a new manifest at every open (so a torn tail is never appended to) and
//!    whenever the live one outgrows `Options::manifest_rewrite_bytes`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_wal::{LogReader, LogWriter, RecoveryMode};

use crate::edit::{ManifestState, VersionEdit};
use crate::error::{Corruption, Error, IoContext, IoOp, ManifestFault, Result};
use crate::format::{CURRENT_FILE, DEFAULT_CF_ID, FileKind, file_name, parse_file_name};
use crate::fs::{FileSystem, WritableFile};

/// The live manifest, open for appending.
pub(crate) struct Manifest {
    writer: LogWriter<Box<dyn WritableFile>>,
    number: u64,
}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manifest")
            .field("number", &self.number)
            .field("bytes", &self.writer.offset())
            .finish()
    }
}

impl Manifest {
    /// Writes a new manifest numbered `number` holding `state`, and points `CURRENT` at it.
    pub(crate) fn create(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        number: u64,
        state: &ManifestState,
    ) -> Result<Manifest> {
        let path = dir.join(file_name(FileKind::Manifest, number));
        let file = fs.create(&path).at(IoOp::Create, &path)?;
        let mut writer = LogWriter::new(file, log_number(number));
        writer
            .add_record(&state.snapshot().encode())
            .map_err(|e| Error::log(path.clone(), e))?;
        writer
            .sync(|file| file.sync_data())
            .map_err(|e| Error::log(path.clone(), e))?;

        let temp = dir.join(file_name(FileKind::Temp, number));
        let mut current = fs.create(&temp).at(IoOp::Create, &temp)?;
        current
            .write_all(format!("{}\n", file_name(FileKind::Manifest, number)).as_bytes())
            .at(IoOp::Write, &temp)?;
        current.sync_data().at(IoOp::Sync, &temp)?;
        drop(current);
        fs.rename(&temp, &dir.join(CURRENT_FILE))
            .at(IoOp::Rename, &temp)?;
        fs.sync_dir(dir).at(IoOp::SyncDir, dir)?;
        Ok(Manifest { writer, number })
    }

    /// Appends `edit` and makes it durable.
    pub(crate) fn append(&mut self, path: &Path, edit: &VersionEdit) -> Result<()> {
        self.writer
            .add_record(&edit.encode())
            .map_err(|e| Error::log(path.to_path_buf(), e))?;
        self.writer
            .sync(|file| file.sync_data())
            .map_err(|e| Error::log(path.to_path_buf(), e))?;
        Ok(())
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.writer.offset()
    }
}

/// The bytes of a new manifest numbered `number` holding `state`: what
/// [`Manifest::create`] writes, for a copy of the store taken in memory (a backup).
pub(crate) fn encode_new(number: u64, state: &ManifestState) -> Result<Vec<u8>> {
    let path = PathBuf::from(file_name(FileKind::Manifest, number));
    let mut writer = LogWriter::new(Vec::new(), log_number(number));
    writer
        .add_record(&state.snapshot().encode())
        .map_err(|e| Error::log(path.clone(), e))?;
    writer.flush().map_err(|e| Error::log(path, e))?;
    Ok(writer.into_inner())
}

/// The low 32 bits of a file number: what the log framing stamps on each fragment.
pub(crate) fn log_number(file_number: u64) -> u32 {
    file_number as u32
}

/// The manifest `CURRENT` names, or `None` when there is no `CURRENT` (a new store).
pub(crate) fn current_manifest(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(CURRENT_FILE);
    if !fs.exists(&path).at(IoOp::Exists, &path)? {
        return Ok(None);
    }
    let bytes = fs.read(&path).at(IoOp::Read, &path)?;
    let corrupt = || Error::Corruption {
        file: path.clone(),
        offset: 0,
        what: Corruption::Current,
    };
    let name = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| text.strip_suffix('\n'))
        .ok_or_else(corrupt)?;
    match parse_file_name(name) {
        Some((FileKind::Manifest, number)) => Ok(Some(number)),
        _ => Err(corrupt()),
    }
}

/// Replays manifest `number` into a state. A torn tail (an edit whose sync never finished) is
/// dropped; damage before it, or edits that contradict each other, are corruption.
pub(crate) fn read_manifest(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    number: u64,
) -> Result<ManifestState> {
    let path = dir.join(file_name(FileKind::Manifest, number));
    let bytes = read_listed(fs, &path)?;
    let mut reader = LogReader::new(&bytes, log_number(number), RecoveryMode::TolerateTornTail);
    let mut state = ManifestState::empty();
    while let Some(record) = reader
        .next_record()
        .map_err(|e| Error::log(path.clone(), e))?
    {
        let corrupt = |what| Error::Corruption {
            file: path.clone(),
            offset: record.offset,
            what: Corruption::Manifest(what),
        };
        let edit = VersionEdit::decode(&record.data).map_err(corrupt)?;
        state.apply(&edit).map_err(corrupt)?;
    }
    // Every store has the default family from its first edit on, and no edit can drop it:
    // `Store::default_cf` relies on it.
    if !state.cfs.contains_key(&DEFAULT_CF_ID) {
        return Err(Error::Corruption {
            file: path,
            offset: 0,
            what: Corruption::Manifest(ManifestFault::NoDefaultFamily),
        });
    }
    Ok(state)
}

/// Reads a file the store's metadata names: a missing one is corruption, not "not found".
pub(crate) fn read_listed(fs: &Arc<dyn FileSystem>, path: &Path) -> Result<bytes::Bytes> {
    match fs.read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Corruption {
            file: path.to_path_buf(),
            offset: 0,
            what: Corruption::Missing,
        }),
        Err(e) => Err(Error::io(IoOp::Read, path, e)),
    }
}

/// The path of numbered file `number` of `kind` in `dir`.
pub(crate) fn file_path(dir: &Path, kind: FileKind, number: u64) -> PathBuf {
    dir.join(file_name(kind, number))
}
