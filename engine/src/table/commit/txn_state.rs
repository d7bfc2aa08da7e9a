//! The transaction state file (`TRANSACTIONS` in the database directory): what recovery
//! needs to decide, across shard stores, which commits across stores happened
//! (`docs/transactions.md` §2; format in `docs/formats/transactions.md`).
//!
//! - `complete_through`: every commit across stores with an id at or below it had every part
//!   durable when it was written, so a part found in one store's log whose other parts are in
//!   no log (they went into tables) is committed.
//! - `cut`: seqno ranges no store replays. An open that finds a commit across stores
//!   incomplete (a part missing from a log it should be in: a power cut kept some stores'
//!   unsynced writes and not others') cuts every store's logs at that commit: every batch
//!   from its first seqno to the last seqno any log holds is dropped, so what survives is a
//!   prefix of the commit order (a later write that read the lost commit goes with it). A
//!   range is forgotten once every store has opened since (and replayed its logs into
//!   tables without it).
//!
//! Written whole to a temporary file, synced, renamed over the old one, and the directory
//! synced: a crash leaves the old state or the new one.

use std::path::{Path, PathBuf};

use crate::error::{Corruption, Error, Result, TxnStateFault};
use crate::fs::FileSystem;
use crate::lsm::IoOp;

/// The file's name in the database directory.
pub const FILE: &str = "TRANSACTIONS";
const TEMP: &str = "TRANSACTIONS.tmp";
const MAGIC: &[u8; 8] = b"STRATATX";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The most cut ranges a file may list (a bound for a damaged count, far above what crashes
/// leave).
pub const MAX_CUTS: usize = 1 << 16;

/// The decoded file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnState {
    /// Every commit across stores at or below this id is complete.
    pub complete_through: u64,
    /// Seqno ranges (inclusive, ascending, disjoint) that no store's replay takes.
    pub cut: Vec<(u64, u64)>,
}

impl TxnState {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(28 + 16 * self.cut.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.complete_through.to_le_bytes());
        out.extend_from_slice(&(self.cut.len() as u32).to_le_bytes());
        for (lo, hi) in &self.cut {
            out.extend_from_slice(&lo.to_le_bytes());
            out.extend_from_slice(&hi.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes the file's bytes, checking the magic, version, length and checksum.
    pub fn decode(bytes: &[u8]) -> std::result::Result<TxnState, TxnStateFault> {
        if bytes.len() < 28 {
            return Err(TxnStateFault::TooShort);
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let crc = u32::from_le_bytes(crc.try_into().map_err(|_| TxnStateFault::Checksum)?);
        if crc32fast::hash(body) != crc {
            return Err(TxnStateFault::Checksum);
        }
        if &body[..8] != MAGIC {
            return Err(TxnStateFault::BadMagic);
        }
        let u32_at = |at: usize| -> std::result::Result<u32, TxnStateFault> {
            Ok(u32::from_le_bytes(
                body[at..at + 4]
                    .try_into()
                    .map_err(|_| TxnStateFault::Truncated)?,
            ))
        };
        let u64_at = |at: usize| -> std::result::Result<u64, TxnStateFault> {
            Ok(u64::from_le_bytes(
                body[at..at + 8]
                    .try_into()
                    .map_err(|_| TxnStateFault::Truncated)?,
            ))
        };
        let version = u32_at(8)?;
        if version != VERSION {
            return Err(TxnStateFault::UnknownVersion);
        }
        let complete_through = u64_at(12)?;
        let count = u32_at(20)? as usize;
        if count > MAX_CUTS || body.len() != 24 + 16 * count {
            return Err(TxnStateFault::RangeCount);
        }
        let mut cut: Vec<(u64, u64)> = Vec::with_capacity(count);
        for i in 0..count {
            let (lo, hi) = (u64_at(24 + 16 * i)?, u64_at(32 + 16 * i)?);
            if lo > hi || cut.last().is_some_and(|&(_, last)| lo <= last) {
                return Err(TxnStateFault::RangesOutOfOrder);
            }
            cut.push((lo, hi));
        }
        Ok(TxnState {
            complete_through,
            cut,
        })
    }

    /// The state in `dir`; the default when there is no file (a database that never wrote a
    /// commit across stores, or written before the file existed).
    pub(crate) fn read(fs: &dyn FileSystem, dir: &Path) -> Result<TxnState> {
        let path = dir.join(FILE);
        match fs.read(&path) {
            Ok(bytes) => TxnState::decode(&bytes)
                .map_err(|what| Error::corrupt(FILE, &[], Corruption::TransactionState(what))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TxnState::default()),
            Err(e) => Err(crate::lsm::Error::io(IoOp::Read, &path, e).into()),
        }
    }

    /// Replaces the state in `dir` durably.
    pub(crate) fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        let io = |op: IoOp, path: &PathBuf, e: std::io::Error| -> Error {
            crate::lsm::Error::io(op, path, e).into()
        };
        let temp = dir.join(TEMP);
        let path = dir.join(FILE);
        let mut file = fs.create(&temp).map_err(|e| io(IoOp::Create, &temp, e))?;
        file.write_all(&self.encode())
            .map_err(|e| io(IoOp::Write, &temp, e))?;
        file.sync_data().map_err(|e| io(IoOp::Sync, &temp, e))?;
        drop(file);
        fs.rename(&temp, &path)
            .map_err(|e| io(IoOp::Rename, &path, e))?;
        fs.sync_dir(dir)
            .map_err(|e| io(IoOp::SyncDir, &dir.to_path_buf(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_round_trips_and_damage_is_refused() {
        let state = TxnState {
            complete_through: 77,
            cut: vec![(5, 9), (12, 12)],
        };
        let bytes = state.encode();
        assert_eq!(bytes.len(), 24 + 32 + 4);
        assert_eq!(TxnState::decode(&bytes), Ok(state));
        for cut in 0..bytes.len() {
            assert!(TxnState::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            assert!(TxnState::decode(&flipped).is_err(), "flip at {at}");
        }
        // Overlapping ranges are refused even with a right checksum.
        let overlapping = TxnState {
            complete_through: 0,
            cut: vec![(5, 9), (9, 12)],
        };
        assert_eq!(
            TxnState::decode(&overlapping.encode()),
            Err(TxnStateFault::RangesOutOfOrder)
        );
        assert_eq!(
            TxnState::decode(&TxnState::default().encode()),
            Ok(TxnState::default())
        );
    }
}
