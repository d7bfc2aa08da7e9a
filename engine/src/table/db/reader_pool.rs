//! Row readers kept between a table's queries: a reader learns the layout of the first row it
//! reads (where each field it tests and builds lies), and a point query reads one row, so
//! learning it again for each query was ~1,700 of a `Db::query` point lookup's ~23,000
//! instructions (callgrind), with ~1,000 more to make and drop the reader. A stream takes a
//! reader of its query's shape from its table's pool and gives it back when it is dropped.

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

/// The readers a table's finished streams gave back, the last given back last.
#[derive(Default)]
pub(crate) struct ReaderPool(Mutex<Vec<RowReader>>);

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
        let mut pool = self.0.try_lock().ok()?;
        let at = pool.iter().rposition(|r| r.fits(tested, also, kept))?;
        let mut reader = pool.swap_remove(at);
        drop(pool);
        reader.reset();
        Some(reader)
    }

    /// Keeps `reader` for a later query, in place of the one kept longest if the pool is full.
    pub(crate) fn give_back(&self, reader: RowReader) {
        let Ok(mut pool) = self.0.try_lock() else {
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
        let Ok(mut pool) = self.0.try_lock() else {
            return;
        };
        if let Some(reader) = pool.last_mut().filter(|r| !r.has_spare()) {
            reader.keep_spare(record);
        }
    }

    /// How many readers it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().map_or(0, |p| p.len())
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
}
