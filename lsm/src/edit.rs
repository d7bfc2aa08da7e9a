//! Version edits: the records of the manifest, and the state they build.
//!
//! 1. A manifest is a log (the WAL framing of `strata-wal`) whose records are edits.
//! 2. An edit is a list of fields, each `tag: varint` and a payload; tags are in
//!    [`crate::format::tag`].
//! 3. Replaying the edits in order with [`ManifestState::apply`] rebuilds the store's shape:
//!    column families, their tables per level, and the log each family has flushed up to.
//! 4. [`ManifestState::snapshot`] is one edit that recreates the whole state; a new manifest
//!    starts with it.
//!
//! Specified in `docs/formats/manifest.md`.

use std::collections::BTreeMap;

use strata_sstable::coding::{Reader, put_len_prefixed, put_varint};

use crate::error::ManifestFault;
use crate::format::{DEFAULT_CF_ID, MAX_CF_NAME_BYTES, MAX_FILE_NUMBER, MAX_LEVELS, tag};

type DecodeResult<T> = std::result::Result<T, ManifestFault>;

/// What the manifest knows about one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    /// Its file number (`NNNNNN.sst`).
    pub number: u64,
    /// Its size in bytes.
    pub file_size: u64,
    /// Smallest and largest user key.
    pub smallest_key: Vec<u8>,
    /// See `smallest_key`.
    pub largest_key: Vec<u8>,
    /// Smallest and largest seqno.
    pub smallest_seqno: u64,
    /// See `smallest_seqno`.
    pub largest_seqno: u64,
}

/// One manifest record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// The next unused file number.
    pub next_file_number: Option<u64>,
    /// A seqno at or above every seqno in any table or acknowledged write.
    pub last_seqno: Option<u64>,
    /// The next unused column family id.
    pub next_cf_id: Option<u32>,
    /// Column families created: `(id, name)`.
    pub created_cfs: Vec<(u32, String)>,
    /// Column families dropped.
    pub dropped_cfs: Vec<u32>,
    /// `(cf, log)`: the family's data in logs before `log` is all in tables.
    pub log_numbers: Vec<(u32, u64)>,
    /// `(cf, level, table)`.
    pub added_tables: Vec<(u32, u32, TableMeta)>,
    /// `(cf, level, file number)`.
    pub removed_tables: Vec<(u32, u32, u64)>,
    /// `(log, size)`: a clean close synced log `log` whole at `size` bytes. The next open
    /// refuses the log shorter, or damaged within those bytes, rather than take the damage
    /// for a torn tail (as RocksDB's `track_and_verify_wals_in_manifest` does).
    pub closed_log: Option<(u64, u64)>,
}

impl VersionEdit {
    /// The edit's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let field = |out: &mut Vec<u8>, t: u64, value: u64| {
            put_varint(out, t);
            put_varint(out, value);
        };
        if let Some(n) = self.next_file_number {
            field(&mut out, tag::NEXT_FILE_NUMBER, n);
        }
        if let Some(n) = self.last_seqno {
            field(&mut out, tag::LAST_SEQNO, n);
        }
        if let Some(n) = self.next_cf_id {
            field(&mut out, tag::NEXT_CF_ID, u64::from(n));
        }
        if let Some((log, size)) = self.closed_log {
            field(&mut out, tag::CLOSED_LOG, log);
            put_varint(&mut out, size);
        }
        for (id, name) in &self.created_cfs {
            field(&mut out, tag::CREATE_CF, u64::from(*id));
            put_len_prefixed(&mut out, name.as_bytes());
        }
        for (id, log) in &self.log_numbers {
            field(&mut out, tag::LOG_NUMBER, u64::from(*id));
            put_varint(&mut out, *log);
        }
        for (id, level, number) in &self.removed_tables {
            field(&mut out, tag::REMOVE_TABLE, u64::from(*id));
            put_varint(&mut out, u64::from(*level));
            put_varint(&mut out, *number);
        }
        for (id, level, table) in &self.added_tables {
            field(&mut out, tag::ADD_TABLE, u64::from(*id));
            for n in [
                u64::from(*level),
                table.number,
                table.file_size,
                table.smallest_seqno,
                table.largest_seqno,
            ] {
                put_varint(&mut out, n);
            }
            put_len_prefixed(&mut out, &table.smallest_key);
            put_len_prefixed(&mut out, &table.largest_key);
        }
        for id in &self.dropped_cfs {
            field(&mut out, tag::DROP_CF, u64::from(*id));
        }
        out
    }

    /// Decodes an edit, checking every length and tag.
    pub fn decode(bytes: &[u8]) -> DecodeResult<VersionEdit> {
        let mut r = Reader::new(bytes);
        let mut edit = VersionEdit::default();
        while !r.is_empty() {
            let t = r.varint().ok_or(ManifestFault::TruncatedTag)?;
            match t {
                tag::NEXT_FILE_NUMBER => edit.next_file_number = Some(number(&mut r)?),
                tag::LAST_SEQNO => edit.last_seqno = Some(number(&mut r)?),
                tag::NEXT_CF_ID => edit.next_cf_id = Some(small(&mut r)?),
                tag::CLOSED_LOG => edit.closed_log = Some((number(&mut r)?, number(&mut r)?)),
                tag::CREATE_CF => {
                    let id = small(&mut r)?;
                    let name = r.len_prefixed().ok_or(ManifestFault::TruncatedName)?;
                    let name = std::str::from_utf8(name).map_err(|_| ManifestFault::NameNotUtf8)?;
                    if name.is_empty() || name.len() > MAX_CF_NAME_BYTES {
                        return Err(ManifestFault::NameLength);
                    }
                    edit.created_cfs.push((id, name.to_owned()));
                }
                tag::DROP_CF => edit.dropped_cfs.push(small(&mut r)?),
                tag::LOG_NUMBER => edit.log_numbers.push((small(&mut r)?, number(&mut r)?)),
                tag::REMOVE_TABLE => {
                    let id = small(&mut r)?;
                    let level = level(&mut r)?;
                    edit.removed_tables.push((id, level, number(&mut r)?));
                }
                tag::ADD_TABLE => {
                    let id = small(&mut r)?;
                    let level = level(&mut r)?;
                    let table = TableMeta {
                        number: number(&mut r)?,
                        file_size: number(&mut r)?,
                        smallest_seqno: number(&mut r)?,
                        largest_seqno: number(&mut r)?,
                        smallest_key: key(&mut r)?,
                        largest_key: key(&mut r)?,
                    };
                    if table.smallest_key > table.largest_key
                        || table.smallest_seqno > table.largest_seqno
                    {
                        return Err(ManifestFault::TableBoundsOutOfOrder);
                    }
                    edit.added_tables.push((id, level, table));
                }
                _ => return Err(ManifestFault::UnknownTag),
            }
        }
        Ok(edit)
    }
}

fn number(r: &mut Reader<'_>) -> DecodeResult<u64> {
    r.varint().ok_or(ManifestFault::TruncatedNumber)
}

fn small(r: &mut Reader<'_>) -> DecodeResult<u32> {
    u32::try_from(number(r)?).map_err(|_| ManifestFault::FamilyIdOver32Bits)
}

fn level(r: &mut Reader<'_>) -> DecodeResult<u32> {
    let level = small(r)?;
    if level as usize >= MAX_LEVELS {
        return Err(ManifestFault::LevelOutOfRange);
    }
    Ok(level)
}

fn key(r: &mut Reader<'_>) -> DecodeResult<Vec<u8>> {
    let key = r.len_prefixed().ok_or(ManifestFault::TruncatedKey)?;
    if key.len() > strata_sstable::MAX_KEY_BYTES {
        return Err(ManifestFault::KeyOverLimit);
    }
    Ok(key.to_vec())
}

/// One column family as the manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfMeta {
    /// Its name.
    pub name: String,
    /// Its data in logs numbered below this is all in tables.
    pub log_number: u64,
    /// Tables per level; each level in file-number order.
    pub levels: Vec<Vec<TableMeta>>,
}

/// The state a manifest's edits build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestState {
    /// Live column families by id.
    pub cfs: BTreeMap<u32, CfMeta>,
    /// The next unused file number.
    pub next_file_number: u64,
    /// A seqno at or above every durable seqno.
    pub last_seqno: u64,
    /// The next unused column family id; ids are never reused.
    pub next_cf_id: u32,
    /// The log a clean close synced whole, and its size (see [`VersionEdit::closed_log`]).
    /// Open clears it once the logs are replayed.
    pub closed_log: Option<(u64, u64)>,
}

impl ManifestState {
    /// The state before any edit: no column family, nothing used.
    pub fn empty() -> Self {
        ManifestState {
            cfs: BTreeMap::new(),
            next_file_number: 1,
            last_seqno: 0,
            next_cf_id: 0,
            closed_log: None,
        }
    }

    /// Applies one edit, checking it against the state: an edit that names a family or table
    /// that does not exist, creates one twice, drops the default family, or records a file
    /// number or seqno the store could not count on from, is refused and changes nothing.
    pub fn apply(&mut self, edit: &VersionEdit) -> DecodeResult<()> {
        let mut next = self.clone();
        if let Some(n) = edit.next_file_number {
            if n > MAX_FILE_NUMBER {
                return Err(ManifestFault::NextFileNumberOutOfRange);
            }
            next.next_file_number = next.next_file_number.max(n);
        }
        if let Some(n) = edit.last_seqno {
            if n > strata_sstable::MAX_SEQNO {
                return Err(ManifestFault::LastSeqnoOutOfRange);
            }
            next.last_seqno = next.last_seqno.max(n);
        }
        if let Some(n) = edit.next_cf_id {
            next.next_cf_id = next.next_cf_id.max(n);
        }
        if edit.closed_log.is_some() {
            next.closed_log = edit.closed_log;
        }
        for (id, name) in &edit.created_cfs {
            if next.cfs.contains_key(id) || next.cfs.values().any(|cf| &cf.name == name) {
                return Err(ManifestFault::FamilyCreatedTwice);
            }
            next.cfs.insert(
                *id,
                CfMeta {
                    name: name.clone(),
                    log_number: 0,
                    levels: vec![Vec::new(); MAX_LEVELS],
                },
            );
            next.next_cf_id = next.next_cf_id.max(id.saturating_add(1));
        }
        for (id, log) in &edit.log_numbers {
            let cf = next
                .cfs
                .get_mut(id)
                .ok_or(ManifestFault::LogNumberForUnknownFamily)?;
            cf.log_number = cf.log_number.max(*log);
        }
        for (id, level, number) in &edit.removed_tables {
            let cf = next
                .cfs
                .get_mut(id)
                .ok_or(ManifestFault::TableRemovedFromUnknownFamily)?;
            let tables = &mut cf.levels[*level as usize];
            let at = tables
                .iter()
                .position(|t| t.number == *number)
                .ok_or(ManifestFault::RemovedTableNotInLevel)?;
            tables.remove(at);
        }
        for (id, level, table) in &edit.added_tables {
            let cf = next
                .cfs
                .get_mut(id)
                .ok_or(ManifestFault::TableAddedToUnknownFamily)?;
            if table.number >= MAX_FILE_NUMBER {
                return Err(ManifestFault::TableNumberOutOfRange);
            }
            let tables = &mut cf.levels[*level as usize];
            if tables.iter().any(|t| t.number == table.number) {
                return Err(ManifestFault::TableAddedTwice);
            }
            let at = tables.partition_point(|t| t.number < table.number);
            tables.insert(at, table.clone());
            next.next_file_number = next.next_file_number.max(table.number + 1);
        }
        for id in &edit.dropped_cfs {
            if *id == DEFAULT_CF_ID {
                return Err(ManifestFault::DefaultFamilyDropped);
            }
            next.cfs
                .remove(id)
                .ok_or(ManifestFault::UnknownFamilyDropped)?;
        }
        *self = next;
        Ok(())
    }

    /// One edit that rebuilds this state from [`ManifestState::empty`].
    pub fn snapshot(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            next_file_number: Some(self.next_file_number),
            last_seqno: Some(self.last_seqno),
            next_cf_id: Some(self.next_cf_id),
            closed_log: self.closed_log,
            ..VersionEdit::default()
        };
        for (id, cf) in &self.cfs {
            edit.created_cfs.push((*id, cf.name.clone()));
            edit.log_numbers.push((*id, cf.log_number));
            for (level, tables) in cf.levels.iter().enumerate() {
                for table in tables {
                    edit.added_tables.push((*id, level as u32, table.clone()));
                }
            }
        }
        edit
    }

    /// The id of the family called `name`.
    pub fn cf_id(&self, name: &str) -> Option<u32> {
        self.cfs
            .iter()
            .find(|(_, cf)| cf.name == name)
            .map(|(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(number: u64) -> TableMeta {
        TableMeta {
            number,
            file_size: 100 + number,
            smallest_key: b"a".to_vec(),
            largest_key: b"z".to_vec(),
            smallest_seqno: 1,
            largest_seqno: 9,
        }
    }

    #[test]
    fn edits_round_trip_and_snapshot_rebuilds_the_state() {
        let edits = [
            VersionEdit {
                created_cfs: vec![(0, "default".into()), (1, "users".into())],
                next_file_number: Some(3),
                ..VersionEdit::default()
            },
            VersionEdit {
                added_tables: vec![(1, 0, table(5)), (0, 0, table(4))],
                log_numbers: vec![(1, 3)],
                last_seqno: Some(40),
                ..VersionEdit::default()
            },
            VersionEdit {
                removed_tables: vec![(1, 0, 5)],
                added_tables: vec![(1, 1, table(6))],
                ..VersionEdit::default()
            },
            VersionEdit {
                created_cfs: vec![(2, "gone".into())],
                ..VersionEdit::default()
            },
            VersionEdit {
                dropped_cfs: vec![2],
                ..VersionEdit::default()
            },
        ];
        let mut state = ManifestState::empty();
        for edit in &edits {
            let decoded = VersionEdit::decode(&edit.encode()).expect("decodes");
            assert_eq!(&decoded, edit);
            state.apply(&decoded).expect("applies");
        }
        assert_eq!(state.cfs.len(), 2);
        assert_eq!(state.next_cf_id, 3, "a dropped family's id is not reused");
        assert_eq!(state.next_file_number, 7);
        assert_eq!(state.cfs[&1].levels[1], vec![table(6)]);
        assert!(state.cfs[&1].levels[0].is_empty());

        let mut rebuilt = ManifestState::empty();
        rebuilt.apply(&state.snapshot()).expect("snapshot applies");
        assert_eq!(rebuilt, state);
    }

    /// The worked example of `docs/formats/manifest.md`: the snapshot edit of a new store.
    #[test]
    fn the_documented_example_encodes_as_written() {
        let mut state = ManifestState::empty();
        state
            .apply(&VersionEdit {
                created_cfs: vec![(0, "default".into())],
                log_numbers: vec![(0, 1)],
                next_file_number: Some(3),
                ..VersionEdit::default()
            })
            .expect("applies");
        let mut expected = vec![0x01, 0x03, 0x02, 0x00, 0x08, 0x01, 0x03, 0x00, 0x07];
        expected.extend_from_slice(b"default");
        expected.extend_from_slice(&[0x05, 0x00, 0x01]);
        assert_eq!(state.snapshot().encode(), expected);
    }

    #[test]
    fn contradictory_edits_are_refused_and_change_nothing() {
        let mut state = ManifestState::empty();
        state
            .apply(&VersionEdit {
                created_cfs: vec![(0, "default".into())],
                ..VersionEdit::default()
            })
            .expect("applies");
        let before = state.clone();
        let bad = [
            VersionEdit {
                created_cfs: vec![(0, "again".into())],
                ..VersionEdit::default()
            },
            VersionEdit {
                removed_tables: vec![(0, 0, 9)],
                ..VersionEdit::default()
            },
            VersionEdit {
                added_tables: vec![(7, 0, table(9))],
                ..VersionEdit::default()
            },
            VersionEdit {
                next_file_number: Some(100),
                dropped_cfs: vec![5],
                ..VersionEdit::default()
            },
        ];
        for edit in &bad {
            assert!(state.apply(edit).is_err(), "{edit:?}");
            assert_eq!(state, before);
        }
    }

    #[test]
    fn every_truncation_of_an_edit_fails_or_decodes_a_prefix() {
        let edit = VersionEdit {
            created_cfs: vec![(1, "users".into())],
            added_tables: vec![(1, 0, table(5))],
            ..VersionEdit::default()
        };
        let bytes = edit.encode();
        for cut in 0..bytes.len() {
            // A cut inside a field fails; a cut between fields is a shorter, valid edit.
            if let Ok(shorter) = VersionEdit::decode(&bytes[..cut]) {
                assert_ne!(shorter, edit, "cut at {cut}");
            }
        }
    }
}
