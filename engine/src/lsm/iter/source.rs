//! The sources an iterator merges: memtables and tables, behind one internal-key interface.

use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use strata_sstable::{MAX_SEQNO, TableIter, ValueKind};

use crate::error::{Error, Result};
use crate::lsm::SeqNo;
use crate::lsm::memtable::{MemKey, Memtable};

/// A positioned iterator over internal keys `(user_key asc, seqno desc)`, both ways.
pub(crate) trait Source {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// To the first entry at or after `(key, seqno)`.
    fn seek(&mut self, key: &[u8], seqno: SeqNo);
    /// To the last entry whose user key is at or before `key`.
    fn seek_for_prev(&mut self, key: &[u8]);
    /// REQUIRES: `valid()`.
    fn next(&mut self);
    /// REQUIRES: `valid()`.
    fn prev(&mut self);
    fn user_key(&self) -> &[u8];
    fn seqno(&self) -> SeqNo;
    fn kind(&self) -> ValueKind;
    fn value(&self) -> Bytes;
    /// The error that stopped the source, if any.
    fn status(&self) -> Result<()>;
}

/// A memtable source. The skip list's entries borrow the list, so the source keeps a copy of
/// the current entry (its key and value are `Bytes` handles: no bytes are copied) and finds
/// its neighbour by a fresh search at each step.
pub(crate) struct MemSource {
    mem: Arc<Memtable>,
    current: Option<(MemKey, ValueKind, Bytes)>,
}

impl MemSource {
    pub(crate) fn new(mem: Arc<Memtable>) -> Self {
        MemSource { mem, current: None }
    }

    fn current(&self) -> &(MemKey, ValueKind, Bytes) {
        self.current.as_ref().expect("REQUIRES: valid()")
    }
}

fn probe(key: &[u8], seqno: SeqNo) -> MemKey {
    MemKey {
        user_key: Bytes::copy_from_slice(key),
        seqno,
    }
}

impl Source for MemSource {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.current = self.mem.next_after(Bound::Unbounded);
    }

    fn seek_to_last(&mut self) {
        self.current = self.mem.prev_before(Bound::Unbounded);
    }

    fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        self.current = self.mem.next_after(Bound::Included(&probe(key, seqno)));
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        // (key, 0) sorts after every version of key.
        self.current = self.mem.prev_before(Bound::Included(&probe(key, 0)));
    }

    fn next(&mut self) {
        let at = self.current().0.clone();
        self.current = self.mem.next_after(Bound::Excluded(&at));
    }

    fn prev(&mut self) {
        let at = self.current().0.clone();
        self.current = self.mem.prev_before(Bound::Excluded(&at));
    }

    fn user_key(&self) -> &[u8] {
        &self.current().0.user_key
    }

    fn seqno(&self) -> SeqNo {
        self.current().0.seqno
    }

    fn kind(&self) -> ValueKind {
        self.current().1
    }

    fn value(&self) -> Bytes {
        self.current().2.clone()
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// A table source.
pub(crate) struct TableSource {
    iter: TableIter,
    path: PathBuf,
}

impl TableSource {
    pub(crate) fn new(iter: TableIter, path: PathBuf) -> Self {
        TableSource { iter, path }
    }
}

impl Source for TableSource {
    fn valid(&self) -> bool {
        self.iter.valid()
    }

    fn seek_to_first(&mut self) {
        self.iter.seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.iter.seek_to_last();
    }

    fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        self.iter.seek_at(key, seqno.min(MAX_SEQNO));
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        // Seqno 0 is never assigned, so this lands on the first entry after every version of
        // `key`; the entry before it is the answer.
        self.iter.seek_at(key, 0);
        if self.iter.valid() && self.iter.user_key() == key {
            self.iter.next();
        }
        if self.iter.valid() {
            self.iter.prev();
        } else if self.iter.status().is_none() {
            self.iter.seek_to_last();
            while self.iter.valid() && self.iter.user_key() > key {
                self.iter.prev();
            }
        }
    }

    fn next(&mut self) {
        self.iter.next();
    }

    fn prev(&mut self) {
        self.iter.prev();
    }

    fn user_key(&self) -> &[u8] {
        self.iter.user_key()
    }

    fn seqno(&self) -> SeqNo {
        self.iter.seqno()
    }

    fn kind(&self) -> ValueKind {
        self.iter.kind()
    }

    fn value(&self) -> Bytes {
        self.iter.value_bytes()
    }

    fn status(&self) -> Result<()> {
        match self.iter.status() {
            None => Ok(()),
            Some(error) => Err(table_error(&self.path, error)),
        }
    }
}

/// The engine error for a table iterator's failure, which it only lends.
fn table_error(path: &std::path::Path, error: &strata_sstable::Error) -> Error {
    match error {
        strata_sstable::Error::Corruption { offset, what, .. } => Error::Corruption {
            file: path.to_path_buf(),
            offset: *offset,
            what: crate::error::Corruption::Table(what.clone()),
        },
        other => Error::from(std::io::Error::other(other.to_string())),
    }
}
