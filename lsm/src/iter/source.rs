//! The sources an iterator merges: memtables and tables, behind one internal-key interface.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use strata_sstable::{MAX_SEQNO, TableIter, ValueKind};

use crate::SeqNo;
use crate::error::{Error, Result};
use crate::memtable::{MemKey, Memtable, UserKey};
use crate::skiplist::Position;
use crate::version::TableFile;

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
    /// The user key, seqno and kind together: what a merge step asks of every entry, in one
    /// call rather than three. REQUIRES: `valid()`.
    fn entry(&self) -> (&[u8], SeqNo, ValueKind);
    fn value(&self) -> Bytes;
    /// The value, borrowed: what a reader that only looks at it takes, without the reference
    /// count a [`Bytes`] costs.
    fn value_ref(&self) -> &[u8];
    /// The error that stopped the source, if any.
    fn status(&self) -> Result<()>;
}

/// Any of the three sources, dispatched by a `match` rather than through a vtable, so that
/// a merge step and the cursor's loop can inline what they call for every entry they pass
/// (`next`, `valid`, `entry`). With `entry` and the short forward steps of the table and
/// merge iterators, a scan of a table's 1M rows went from 678 to 465 instructions an entry
/// (callgrind, issue 25).
pub(crate) enum AnySource {
    Mem(MemSource),
    Table(TableSource),
    Level(LevelSource),
}

/// `$self.$method($args)` on whichever source `$self` holds.
macro_rules! each {
    ($self:expr, $s:ident => $call:expr) => {
        match $self {
            AnySource::Mem($s) => $call,
            AnySource::Table($s) => $call,
            AnySource::Level($s) => $call,
        }
    };
}

impl Source for AnySource {
    #[inline]
    fn valid(&self) -> bool {
        each!(self, s => s.valid())
    }

    fn seek_to_first(&mut self) {
        each!(self, s => s.seek_to_first())
    }

    fn seek_to_last(&mut self) {
        each!(self, s => s.seek_to_last())
    }

    fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        each!(self, s => s.seek(key, seqno))
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        each!(self, s => s.seek_for_prev(key))
    }

    #[inline]
    fn next(&mut self) {
        each!(self, s => s.next())
    }

    #[inline]
    fn prev(&mut self) {
        each!(self, s => s.prev())
    }

    #[inline]
    fn user_key(&self) -> &[u8] {
        each!(self, s => s.user_key())
    }

    #[inline]
    fn seqno(&self) -> SeqNo {
        each!(self, s => s.seqno())
    }

    #[inline]
    fn entry(&self) -> (&[u8], SeqNo, ValueKind) {
        each!(self, s => s.entry())
    }

    #[inline]
    fn kind(&self) -> ValueKind {
        each!(self, s => s.kind())
    }

    fn value(&self) -> Bytes {
        each!(self, s => s.value())
    }

    #[inline]
    fn value_ref(&self) -> &[u8] {
        each!(self, s => s.value_ref())
    }

    fn status(&self) -> Result<()> {
        each!(self, s => s.status())
    }
}

impl AnySource {
    /// The table iterator this source is at, when it reads a table (a level's current one):
    /// what a cursor steps directly while this source is the only one left in a merge. After
    /// stepping it, call [`AnySource::after_table_steps`].
    #[inline]
    pub(crate) fn table_iter(&mut self) -> Option<&mut TableIter> {
        match self {
            AnySource::Mem(_) => None,
            AnySource::Table(t) => Some(&mut t.iter),
            AnySource::Level(l) => l.current.as_mut().map(|t| &mut t.iter),
        }
    }

    /// After the iterator [`AnySource::table_iter`] gave was stepped forward: a level moves
    /// on to its next table if that one ran off its end.
    pub(crate) fn after_table_steps(&mut self) {
        if let AnySource::Level(l) = self {
            l.skip_forward();
        }
    }
}

/// A memtable source: a position in the memtable's skip list. Stepping forward follows a
/// link; stepping back is a search, as the list has no backward links (LevelDB's trade too).
pub(crate) struct MemSource {
    mem: Arc<Memtable>,
    current: Option<Position>,
}

impl MemSource {
    pub(crate) fn new(mem: Arc<Memtable>) -> Self {
        MemSource { mem, current: None }
    }

    fn current(&self) -> (&MemKey, ValueKind, &Bytes) {
        self.mem.entry(self.current.expect("REQUIRES: valid()"))
    }
}

fn probe(key: &[u8], seqno: SeqNo) -> MemKey {
    MemKey {
        user_key: UserKey::copy(key),
        seqno,
    }
}

impl Source for MemSource {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.current = self.mem.first();
    }

    fn seek_to_last(&mut self) {
        self.current = self.mem.last();
    }

    fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        self.current = self.mem.seek(&probe(key, seqno));
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        // Before (key, 0) come every version of key and everything smaller; nothing sorts
        // between (key, 0) and it.
        let after = probe(key, 0);
        self.current = match self.mem.seek(&after) {
            Some(at) if self.mem.entry(at).0 == &after => Some(at),
            _ => self.mem.seek_before(&after),
        };
    }

    fn next(&mut self) {
        self.current = self.current.and_then(|at| self.mem.next(at));
    }

    fn prev(&mut self) {
        self.current = self.current.and_then(|at| self.mem.prev(at));
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

    fn entry(&self) -> (&[u8], SeqNo, ValueKind) {
        let (key, kind, _) = self.current();
        (&key.user_key, key.seqno, kind)
    }

    fn value(&self) -> Bytes {
        self.current().2.clone()
    }

    fn value_ref(&self) -> &[u8] {
        self.current().2
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
    #[inline]
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

    #[inline]
    fn next(&mut self) {
        self.iter.next();
    }

    fn prev(&mut self) {
        self.iter.prev();
    }

    #[inline]
    fn user_key(&self) -> &[u8] {
        self.iter.user_key()
    }

    #[inline]
    fn entry(&self) -> (&[u8], SeqNo, ValueKind) {
        self.iter.entry()
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

    #[inline]
    fn value_ref(&self) -> &[u8] {
        self.iter.value()
    }

    fn status(&self) -> Result<()> {
        match self.iter.status() {
            None => Ok(()),
            Some(error) => Err(Error::table(self.path.clone(), error)),
        }
    }
}

/// One sorted level (level 1 and deeper) as a single source: its tables are in key order and
/// do not overlap, so only the table holding the position is open (LevelDB's concatenating
/// iterator). A seek costs one binary search over the tables' bounds and one table seek,
/// however many tables the level has.
pub(crate) struct LevelSource {
    tables: Vec<Arc<TableFile>>,
    index: usize,
    current: Option<TableSource>,
}

impl LevelSource {
    /// REQUIRES: `tables` in key order, not overlapping.
    pub(crate) fn new(tables: Vec<Arc<TableFile>>) -> Self {
        LevelSource {
            tables,
            index: 0,
            current: None,
        }
    }

    fn open(&mut self, index: usize) -> Option<&mut TableSource> {
        self.index = index;
        self.current = self
            .tables
            .get(index)
            .map(|t| TableSource::new(t.table.iter(), t.path.clone()));
        self.current.as_mut()
    }

    /// Past the end of a table, on to the first entry of the next (not past an error).
    fn skip_forward(&mut self) {
        while let Some(current) = &self.current {
            if current.valid() || current.status().is_err() || self.index + 1 >= self.tables.len() {
                return;
            }
            if let Some(next) = self.open(self.index + 1) {
                next.seek_to_first();
            }
        }
    }

    /// Before the start of a table, back to the last entry of the previous one.
    fn skip_backward(&mut self) {
        while let Some(current) = &self.current {
            if current.valid() || current.status().is_err() || self.index == 0 {
                return;
            }
            if let Some(prev) = self.open(self.index - 1) {
                prev.seek_to_last();
            }
        }
    }

    #[inline]
    fn current(&self) -> &TableSource {
        self.current.as_ref().expect("REQUIRES: valid()")
    }
}

impl Source for LevelSource {
    #[inline]
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(TableSource::valid)
    }

    fn seek_to_first(&mut self) {
        if let Some(first) = self.open(0) {
            first.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if let Some(last) = self.open(self.tables.len().wrapping_sub(1)) {
            last.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, key: &[u8], seqno: SeqNo) {
        let at = self
            .tables
            .partition_point(|t| &t.meta.largest_key[..] < key);
        if let Some(table) = self.open(at) {
            table.seek(key, seqno);
        }
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, key: &[u8]) {
        let at = self
            .tables
            .partition_point(|t| &t.meta.smallest_key[..] <= key);
        match at.checked_sub(1) {
            Some(at) => {
                if let Some(table) = self.open(at) {
                    table.seek_for_prev(key);
                }
                self.skip_backward();
            }
            None => self.current = None,
        }
    }

    #[inline]
    fn next(&mut self) {
        if let Some(current) = &mut self.current {
            current.next();
            if current.valid() {
                return; // still in this table: nothing to skip
            }
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(current) = &mut self.current {
            current.prev();
        }
        self.skip_backward();
    }

    #[inline]
    fn user_key(&self) -> &[u8] {
        self.current().user_key()
    }

    #[inline]
    fn entry(&self) -> (&[u8], SeqNo, ValueKind) {
        self.current().entry()
    }

    fn seqno(&self) -> SeqNo {
        self.current().seqno()
    }

    fn kind(&self) -> ValueKind {
        self.current().kind()
    }

    fn value(&self) -> Bytes {
        self.current().value()
    }

    #[inline]
    fn value_ref(&self) -> &[u8] {
        self.current().value_ref()
    }

    fn status(&self) -> Result<()> {
        self.current.as_ref().map_or(Ok(()), TableSource::status)
    }
}
