//! The engine's on-disk numbers: file names, write batch layout and manifest edit tags.
//!
//! Append-only: a tag is never renumbered or reused; a retired one stays here, reserved, with a
//! comment. The formats are specified in `docs/formats/batch.md` and `docs/formats/manifest.md`.

/// Bytes before the first entry of a write batch: `first_seqno: u64` and `count: u32`,
/// little-endian.
pub const BATCH_HEADER_SIZE: usize = 12;

/// A batch entry that sets a key.
pub const BATCH_PUT: u8 = 1;
/// A batch entry that deletes a key.
pub const BATCH_DELETE: u8 = 2;
/// The kind byte of a batch's transaction trailer (after its entries): the batch is one part
/// of a commit across several stores.
pub const BATCH_TRANSACTION: u8 = 3;
/// The most participants a transaction trailer names.
pub const MAX_PARTICIPANTS: usize = 4096;

// The batch kinds are the table format's value kinds, so an entry moves from log to memtable
// to table without translation.
const _: () = assert!(BATCH_PUT == strata_sstable::ValueKind::Put as u8);
const _: () = assert!(BATCH_DELETE == strata_sstable::ValueKind::Delete as u8);

/// Manifest edit tags. Each field of an edit is `tag: varint` followed by its payload.
pub mod tag {
    /// `next_file_number: varint`.
    pub const NEXT_FILE_NUMBER: u64 = 1;
    /// `last_seqno: varint`.
    pub const LAST_SEQNO: u64 = 2;
    /// `cf_id: varint, name: bytes`.
    pub const CREATE_CF: u64 = 3;
    /// `cf_id: varint`.
    pub const DROP_CF: u64 = 4;
    /// `cf_id: varint, log_number: varint`.
    pub const LOG_NUMBER: u64 = 5;
    /// `cf_id, level, file_number, file_size, smallest_seqno, largest_seqno: varint,
    /// smallest_key: bytes, largest_key: bytes`.
    pub const ADD_TABLE: u64 = 6;
    /// `cf_id, level, file_number: varint`.
    pub const REMOVE_TABLE: u64 = 7;
    /// `next_cf_id: varint`.
    pub const NEXT_CF_ID: u64 = 8;
    /// `log_number, size: varint`: the log was synced whole at this size by a clean close.
    pub const CLOSED_LOG: u64 = 9;
}

/// The column family every store has; it cannot be dropped.
pub const DEFAULT_CF_NAME: &str = "default";
/// Its id.
pub const DEFAULT_CF_ID: u32 = 0;

/// The longest column family name, in bytes.
pub const MAX_CF_NAME_BYTES: usize = 255;

/// The most levels a column family may have; bounds what a manifest may claim.
pub const MAX_LEVELS: usize = 16;

/// The largest file number a manifest may record (as a table's number or the next unused
/// one). Far beyond any real store (a file a microsecond for 2,000 years), it leaves the
/// store room to count on from any recorded number without overflow.
pub const MAX_FILE_NUMBER: u64 = 1 << 56;

/// The file that names the live manifest.
pub const CURRENT_FILE: &str = "CURRENT";
/// The lock file.
pub const LOCK_FILE: &str = "LOCK";

/// The kinds of numbered file in a store directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.log`: a write-ahead log.
    Log,
    /// `NNNNNN.sst`: a table.
    Table,
    /// `MANIFEST-NNNNNN`: a manifest.
    Manifest,
    /// `NNNNNN.tmp`: a file being written, removed at open.
    Temp,
}

/// The name of numbered file `number` of `kind`.
pub fn file_name(kind: FileKind, number: u64) -> String {
    match kind {
        FileKind::Log => format!("{number:06}.log"),
        FileKind::Table => format!("{number:06}.sst"),
        FileKind::Manifest => format!("MANIFEST-{number:06}"),
        FileKind::Temp => format!("{number:06}.tmp"),
    }
}

/// Parses a numbered file name; `None` for anything else.
pub fn parse_file_name(name: &str) -> Option<(FileKind, u64)> {
    let digits = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if let Some(rest) = name.strip_prefix("MANIFEST-") {
        return Some((FileKind::Manifest, digits(rest)?));
    }
    let (stem, extension) = name.rsplit_once('.')?;
    let kind = match extension {
        "log" => FileKind::Log,
        "sst" => FileKind::Table,
        "tmp" => FileKind::Temp,
        _ => return None,
    };
    Some((kind, digits(stem)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip() {
        for kind in [
            FileKind::Log,
            FileKind::Table,
            FileKind::Manifest,
            FileKind::Temp,
        ] {
            for number in [0, 7, 123_456, 9_999_999, u64::MAX] {
                assert_eq!(
                    parse_file_name(&file_name(kind, number)),
                    Some((kind, number))
                );
            }
        }
        for other in [
            "LOCK",
            "CURRENT",
            "x.log",
            ".sst",
            "12.txt",
            "MANIFEST-",
            "1a.log",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }
}
