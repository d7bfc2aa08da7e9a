//! Row readers kept between a table's queries: a reader learns the layout of the first row it
//! reads (where each field it tests and builds lies), and a point query reads one row, so
//! learning it again for each query was ~1,700 of a `Db::query` point lookup's ~23,000
//! instructions (callgrind), with ~1,000 more to make and drop the reader. A stream takes a
//! reader of its query's shape from its table's pool and gives it back when it is dropped.

use std::collections::VecDeque;
use std::sync::Mutex;

use strata_planner::Value;

use crate::table::codec::record::Record;
use crate::table::codec::row_reader::RowReader;

/// How many readers a table keeps.
/// TUNING: the shapes an application queries a table in at once are few; the search for one
/// that fits stays short, and the layouts each holds are a few hundred bytes.
const POOLED_READERS: usize = 8;

/// The most text and bytes a record given to a reader as its spare may hold.
/// TUNING: a row of a few dozen ordinary fields holds a few KiB; a record that held a large
/// value (a row may be megabytes) is not worth keeping in each of a table's readers.
const SPARE_BYTES: usize = 64 << 10;

/// The most a stream's fetch buffers may hold, all told, to be kept for a later stream.
/// TUNING: a batch of 1,024 fetched rows of a few hundred bytes each; a batch of large rows is
/// not worth keeping between queries.
const FETCH_BUFFER_BYTES: usize = 1 << 20;

/// The buffers a stream fetches rows through (its batch's entry keys, the fetched rows'
/// bytes, the batch's targets and the fetched rows waiting), kept between a table's queries:
/// a query fetching a few hundred rows grew them from empty each time, ~150 instructions a
/// row in `realloc` and its copies (~4.5 % of the day's customers query's instructions,
/// callgrind).
#[derive(Default)]
pub(crate) struct FetchBuffers {
    pub(crate) keys: Vec<u8>,
    pub(crate) values: Vec<u8>,
    pub(crate) targets: Vec<Target>,
    pub(crate) fetched: VecDeque<Target>,
}

impl FetchBuffers {
    /// The bytes it holds.
    fn bytes(&self) -> usize {
        let target = std::mem::size_of::<Target>();
        self.keys.capacity()
            + self.values.capacity()
            + target * (self.targets.capacity() + self.fetched.capacity())
    }

    /// Whether it holds anything worth keeping.
    fn is_empty(&self) -> bool {
        self.bytes() == 0
    }
}

/// An entry of a fetch batch: the shard of its row, and where in the batch's buffer its key
/// starts, its primary key starts, and both end.
#[derive(Clone, Copy)]
pub(crate) struct Target {
    pub(crate) shard: usize,
    pub(crate) start: usize,
    pub(crate) pk: usize,
    pub(crate) end: usize,
    /// Where its fetched row lies in the stream's fetched values.
    pub(crate) value: (usize, usize),
}

impl Target {
    /// Copies the fetched `row` to the end of `values`, noting where it lies.
    pub(crate) fn keep(&mut self, values: &mut Vec<u8>, row: &[u8]) {
        self.value = (values.len(), values.len() + row.len());
        values.extend_from_slice(row);
    }
}

/// The readers a table's finished streams gave back, the last given back last, and their
/// fetch buffers.
#[derive(Default)]
pub(crate) struct ReaderPool {
    readers: Mutex<Vec<RowReader>>,
    buffers: Mutex<Vec<FetchBuffers>>,
}

impl ReaderPool {
    /// A reader that reads as `RowReader::testing(tested, also, kept)` would, with the
    /// layouts it learnt, if the pool holds one (and no other thread holds the pool: a
    /// query never waits for it).
    pub(crate) fn take(
        &self,
        tested: &[&str],
        also: &[&str],
        kept: Option<&[String]>,
    ) -> Option<RowReader> {
        let mut pool = self.readers.try_lock().ok()?;
        let at = pool.iter().rposition(|r| r.fits(tested, also, kept))?;
        let mut reader = pool.swap_remove(at);
        drop(pool);
        reader.reset();
        Some(reader)
    }

    /// Keeps `reader` for a later query, in place of the one kept longest if the pool is full.
    pub(crate) fn give_back(&self, reader: RowReader) {
        let Ok(mut pool) = self.readers.try_lock() else {
            return;
        };
        if pool.len() == POOLED_READERS {
            pool.remove(0);
        }
        pool.push(reader);
    }

    /// Gives `record`, which its holder is done with, to the reader given back last, if it
    /// keeps none: the next query to take that reader builds its row in the record's
    /// buffers: a SQL point query allocated and freed a string for each text field of its
    /// row (33,901 instructions a query with them, 32,027 without, callgrind). A record
    /// holding more than [`SPARE_BYTES`] of text and bytes is dropped instead.
    pub(crate) fn give_spare(&self, record: Record) {
        let held: usize = (record.values().iter())
            .map(|v| match v {
                Value::Str(s) => s.capacity(),
                Value::Bytes(b) => b.capacity(),
                _ => 0,
            })
            .sum();
        if held > SPARE_BYTES {
            return;
        }
        let Ok(mut pool) = self.readers.try_lock() else {
            return;
        };
        if let Some(reader) = pool.last_mut().filter(|r| !r.has_spare()) {
            reader.keep_spare(record);
        }
    }

    /// Fetch buffers a finished stream gave back, emptied, or new ones (and no other thread
    /// holds the pool: a query never waits for it).
    pub(crate) fn take_buffers(&self) -> FetchBuffers {
        let Some(mut buffers) = self.buffers.try_lock().ok().and_then(|mut p| p.pop()) else {
            return FetchBuffers::default();
        };
        buffers.keys.clear();
        buffers.values.clear();
        buffers.targets.clear();
        buffers.fetched.clear();
        buffers
    }

    /// Keeps a finished stream's fetch buffers for a later stream, unless they hold nothing
    /// or more than [`FETCH_BUFFER_BYTES`], or the pool holds as many as it holds readers.
    pub(crate) fn give_buffers(&self, buffers: FetchBuffers) {
        if buffers.is_empty() || buffers.bytes() > FETCH_BUFFER_BYTES {
            return;
        }
        let Ok(mut pool) = self.buffers.try_lock() else {
            return;
        };
        if pool.len() < POOLED_READERS {
            pool.push(buffers);
        }
    }

    /// How many readers it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.readers.lock().map_or(0, |p| p.len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::table::codec::layouts::Layouts;

    fn kept(fields: &[&str]) -> Option<Vec<String>> {
        Some(fields.iter().map(|f| f.to_string()).collect())
    }

    #[test]
    fn a_reader_fits_only_the_shape_it_was_made_for() {
        let reader = RowReader::testing(&["town", "age"], &["nick"], kept(&["id", "town"]));
        let fits = |tested: &[&str], also: &[&str], k: Option<Vec<String>>| {
            reader.fits(tested, also, k.as_deref())
        };
        assert!(fits(&["town", "age"], &["nick"], kept(&["id", "town"])));
        // The kept fields are a set: order and repeats do not matter.
        assert!(fits(
            &["town", "age"],
            &["nick"],
            kept(&["town", "id", "id"])
        ));
        // Predicates are tested in the query's order: another order is another reader.
        assert!(!fits(&["age", "town"], &["nick"], kept(&["id", "town"])));
        assert!(!fits(&["town"], &["nick"], kept(&["id", "town"])));
        assert!(!fits(&["town", "age"], &[], kept(&["id", "town"])));
        assert!(!fits(
            &["town", "age"],
            &["nick", "x"],
            kept(&["id", "town"])
        ));
        assert!(!fits(&["town", "age"], &["nick"], kept(&["id"])));
        assert!(!fits(
            &["town", "age"],
            &["nick"],
            kept(&["id", "town", "age"])
        ));
        assert!(!fits(&["town", "age"], &["nick"], None));
        let every = RowReader::testing(&[], &[], None);
        assert!(every.fits(&[], &[], None));
        assert!(!every.fits(&[], &[], kept(&["id"]).as_deref()));
    }

    #[test]
    fn a_spare_record_goes_to_the_last_reader_given_back_if_it_has_none_and_is_small() {
        let pool = ReaderPool::default();
        let record = |text: usize| {
            let mut r = Record::new();
            r.set("id", 1);
            r.set("notes", "x".repeat(text));
            r
        };
        pool.give_spare(record(10));
        pool.give_back(RowReader::testing(&["town"], &[], None));
        pool.give_back(RowReader::testing(&["age"], &[], None));
        pool.give_spare(record(SPARE_BYTES + 1));
        let has_spare = |tested: &str| pool.take(&[tested], &[], None).unwrap().has_spare();
        assert!(!has_spare("age"), "a large record is dropped");
        let layouts = Arc::new(Layouts::from_sections([record(3).names_section()]).unwrap());
        pool.give_back(RowReader::testing(&["age"], &[], None).with_layouts(&layouts));
        pool.give_spare(record(SPARE_BYTES / 2));
        pool.give_spare(record(10));
        let mut age = pool.take(&["age"], &[], None).unwrap();
        assert!(age.has_spare(), "the last reader given back keeps it");
        assert!(!has_spare("town"), "one spare, to one reader");
        // The next row is built in the spare's buffers, and is that row alone.
        let built = age.build_spared(&layouts.encode_known(&record(3))).unwrap();
        assert!(!age.has_spare());
        assert_eq!(built, record(3));
        let Value::Str(notes) = built.value("notes") else {
            panic!("notes is text: {built:?}");
        };
        assert!(notes.capacity() >= SPARE_BYTES / 2, "built afresh");
    }

    #[test]
    fn the_pool_gives_a_fitting_reader_once_and_keeps_a_bounded_number() {
        let pool = ReaderPool::default();
        assert!(pool.take(&["town"], &[], None).is_none());
        pool.give_back(RowReader::testing(&["town"], &[], None));
        assert!(pool.take(&["age"], &[], None).is_none(), "another shape");
        assert!(pool.take(&["town"], &[], None).is_some());
        assert!(pool.take(&["town"], &[], None).is_none(), "taken already");
        for _ in 0..POOLED_READERS + 3 {
            pool.give_back(RowReader::testing(&["town"], &[], None));
        }
        assert_eq!(pool.len(), POOLED_READERS);
    }

    fn used(keys: usize) -> FetchBuffers {
        let mut buffers = FetchBuffers::default();
        buffers.keys.extend(std::iter::repeat_n(7u8, keys));
        buffers.values.extend_from_slice(b"row");
        buffers
    }

    #[test]
    fn fetch_buffers_come_back_emptied_with_their_room_and_only_small_ones_are_kept() {
        let pool = ReaderPool::default();
        assert_eq!(
            pool.take_buffers().keys.capacity(),
            0,
            "none kept: new ones"
        );
        pool.give_buffers(FetchBuffers::default());
        assert!(
            pool.buffers.lock().unwrap().is_empty(),
            "empty ones are not kept"
        );
        pool.give_buffers(used(FETCH_BUFFER_BYTES + 1));
        assert!(
            pool.buffers.lock().unwrap().is_empty(),
            "large ones are dropped"
        );
        pool.give_buffers(used(1000));
        let taken = pool.take_buffers();
        assert!(taken.keys.is_empty() && taken.values.is_empty(), "emptied");
        assert!(taken.keys.capacity() >= 1000, "with their room");
        for _ in 0..POOLED_READERS + 3 {
            pool.give_buffers(used(10));
        }
        assert_eq!(pool.buffers.lock().unwrap().len(), POOLED_READERS);
    }

    #[test]
    fn an_index_query_that_fetched_rows_leaves_its_buffers_to_the_next() -> crate::Result<()> {
        use strata_planner::{Predicate, Projection, Query};
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = crate::Db::open(dir.path(), crate::Options::default())?;
        db.create_table("t", ["id"], crate::TableOptions::default())?;
        db.create_index("t", "by_v", ["v"], Projection::KeysOnly)?;
        for id in 0..1000i64 {
            db.insert(
                "t",
                crate::record! { "id" => id, "v" => id % 50, "pad" => "x".repeat(50) },
            )?;
        }
        let table = db.shared.handle("t")?;
        let query = Query::default().filter(Predicate::eq("v", 7));
        let rows = |db: &crate::Db| -> crate::Result<usize> {
            let mut n = 0;
            for row in db.query("t", &query)? {
                assert_eq!(row?.value("v"), &Value::Int(7));
                n += 1;
            }
            Ok(n)
        };
        let plan = db.explain("t", &query)?;
        assert!(plan.to_string().contains("by_v"), "{plan}");
        assert_eq!(rows(&db)?, 20);
        let kept = |table: &crate::table::db::Table| {
            let pool = table.readers.buffers.lock().unwrap();
            pool.iter().map(|b| b.values.capacity()).collect::<Vec<_>>()
        };
        let after_first = kept(&table);
        assert_eq!(after_first.len(), 1, "the stream gave its buffers back");
        assert!(
            after_first[0] >= 20 * 50,
            "holding the rows it fetched: {after_first:?}"
        );
        // The next query takes them (and gives them back), the rows the same.
        assert_eq!(rows(&db)?, 20);
        assert_eq!(kept(&table).len(), 1);
        Ok(())
    }
}
