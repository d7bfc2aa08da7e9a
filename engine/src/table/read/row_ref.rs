//! `RowRef`: a query's row lent where it lies ([`Rows::next_ref`](crate::Rows::next_ref)) —
//! its fields read one by one from the stored row, no record built between the store and
//! the caller's own buffers.

use crate::error::{Error, Result};
use crate::table::catalog::entry::record_corrupt;
use crate::table::codec::field_names::FieldNames;
use crate::table::codec::name_list::NameList;
use crate::table::codec::record::Record;
use crate::table::codec::record_codec::View;
use crate::table::codec::value_ref::ValueRef;

/// A row of a query's result, lent until the next is asked for
/// ([`Rows::next_ref`](crate::Rows::next_ref)): the fields the query returns, in name order,
/// as a [`Record`] has them. A row read from its stored bytes (most rows fetched through an
/// index) is not decoded until its values are asked for, each where it lies; one the
/// executor built (a sorted query's, a merge of shards', an old format's) is lent as its
/// record.
///
/// ```
/// use strata::{Db, Options, Query, TableOptions, ValueRef, record};
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path(), Options::default())?;
/// db.create_table("towns", &["id"], TableOptions::default())?;
/// db.insert("towns", record! { "id" => 1, "name" => "Ely" })?;
/// let mut rows = db.query("towns", &Query::default())?;
/// let mut names = Vec::new();
/// while let Some(row) = rows.next_ref()? {
///     if let Some(ValueRef::Str(name)) = row.get("name")? {
///         names.push(name.to_owned());
///     }
/// }
/// assert_eq!(names, ["Ely"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RowRef<'r> {
    row: Lent<'r>,
}

/// Where a lent row's values are.
enum Lent<'r> {
    /// In its stored bytes: the kept fields' names, their positions in the row, its view,
    /// and the family and key it was read at (for an error naming them).
    Stored {
        names: &'r NameList,
        at: &'r [usize],
        view: View<'r>,
        family: &'r str,
        key: &'r [u8],
    },
    /// In a record.
    Built(&'r Record),
}

impl<'r> RowRef<'r> {
    /// The stored row `view`, of which the fields at positions `at` (named `names`) are lent,
    /// read from `family` at `key`.
    pub(crate) fn stored(
        names: &'r NameList,
        at: &'r [usize],
        view: View<'r>,
        family: &'r str,
        key: &'r [u8],
    ) -> RowRef<'r> {
        debug_assert_eq!(names.len(), at.len());
        RowRef {
            row: Lent::Stored {
                names,
                at,
                view,
                family,
                key,
            },
        }
    }

    fn names_list(&self) -> &'r NameList {
        match self.row {
            Lent::Stored { names, .. } => names,
            Lent::Built(record) => record.name_list(),
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.names_list().len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'r str> {
        self.names_list().iter().map(|n| &**n)
    }

    /// The value of the `i`-th field (in name order), read where it lies: a damaged stored
    /// value is an error naming the family and key of its row; `i` past the last field is an
    /// error too.
    // Always in line: a reader of every value of every row may take it (a record batch's
    // reader takes `checked_value`), and its error (the engine's, several words) came back
    // through memory (~40 instructions a value).
    #[inline(always)]
    pub fn value(&self, i: usize) -> Result<ValueRef<'r>> {
        match self.row {
            Lent::Stored {
                at,
                view,
                family,
                key,
                ..
            } => match at.get(i) {
                Some(&at) => view
                    .value_ref(at)
                    .map_err(|e| record_corrupt(family, key, e)),
                None => Err(past_the_last(i, at.len())),
            },
            Lent::Built(record) => match record.values().get(i) {
                Some(v) => Ok(ValueRef::from(v)),
                None => Err(past_the_last(i, record.len())),
            },
        }
    }

    /// [`RowRef::value`] without its error: the value of the `i`-th field, or `None` where
    /// `value` fails (a damaged stored value, `i` past the last field), for a reader that
    /// asks `value` why only then.
    // A record batch's reader takes this one: through `value`, each value came back in a
    // `Result` beside the engine's error, written to the stack in pieces that the reader's
    // next load of it waited on (a store-forwarding stall on 17 % of the SQL batcher's
    // samples for a row, `perf record -e cpu-clock`).
    #[inline(always)]
    pub fn checked_value(&self, i: usize) -> Option<ValueRef<'r>> {
        match self.row {
            Lent::Stored { at, view, .. } => view.value_ref(*at.get(i)?).ok(),
            Lent::Built(record) => record.values().get(i).map(ValueRef::from),
        }
    }

    /// The value of `name`, if the row has it.
    pub fn get(&self, name: &str) -> Result<Option<ValueRef<'r>>> {
        match self.names_list().binary_search_by(|n| (**n).cmp(name)) {
            Ok(i) => self.value(i).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Whether its names are `names`' own list (one pointer compared): see
    /// [`Record::shares_names`].
    pub fn shares_names(&self, names: &FieldNames) -> bool {
        self.names_list().same_list(names.list())
    }

    /// Whether its field names are `names`: see [`Record::has_names`].
    pub fn has_names(&self, names: &FieldNames) -> bool {
        *self.names_list() == *names.list()
    }

    /// Its field names, as a list it shares: see [`Record::field_names`].
    pub fn field_names(&self) -> FieldNames {
        FieldNames::from_list(self.names_list().clone())
    }

    /// Whether its names are a list kept for the life of the process: see
    /// [`Record::names_are_lasting`].
    pub fn names_are_lasting(&self) -> bool {
        matches!(self.names_list(), NameList::Interned(_))
    }

    /// The record it lends, when it lends one (a row the executor built): a reader may read
    /// its values as they are, with no decoding to fail.
    pub fn as_record(&self) -> Option<&'r Record> {
        match self.row {
            Lent::Built(record) => Some(record),
            Lent::Stored { .. } => None,
        }
    }

    /// The row as a record of its own (every value decoded and copied).
    pub fn to_record(&self) -> Result<Record> {
        if let Lent::Built(record) = self.row {
            return Ok(record.clone());
        }
        let values = (0..self.len())
            .map(|i| self.value(i).map(|v| v.to_value()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Record::from_names(self.names_list().clone(), values))
    }
}

impl<'r> From<&'r Record> for RowRef<'r> {
    /// A record lent as a row.
    fn from(record: &'r Record) -> RowRef<'r> {
        RowRef {
            row: Lent::Built(record),
        }
    }
}

impl std::fmt::Debug for RowRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (i, name) in self.names().enumerate() {
            match self.value(i) {
                Ok(v) => map.entry(&name, &v),
                Err(e) => map.entry(&name, &e.to_string()),
            };
        }
        map.finish()
    }
}

/// The error for field `i` asked of a row of `len` fields.
#[cold]
fn past_the_last(i: usize, len: usize) -> Error {
    Error::InvalidArgument(format!("field {i} asked of a row of {len} fields"))
}

#[cfg(test)]
mod tests {
    use strata_planner::{Access, Predicate, Projection, Query, Value};

    use super::*;
    use crate::record;

    #[test]
    fn rows_fetched_through_an_index_are_lent_where_they_lie_and_sorted_ones_as_records()
    -> Result<()> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = crate::Db::open(dir.path(), crate::Options::default())?;
        db.create_table("t", ["id"], crate::TableOptions::default())?;
        db.create_index("t", "by_v", ["v"], Projection::KeysOnly)?;
        for id in 0..2000i64 {
            db.insert(
                "t",
                record! { "id" => id, "v" => id % 100, "name" => format!("n{id}") },
            )?;
        }
        db.flush()?;
        let fetched = Query::default().filter(Predicate::eq("v", 3));
        let plan = db.explain("t", &fetched)?;
        assert!(matches!(plan.chosen.access, Access::Index { .. }), "{plan}");
        let sorted = fetched.clone().order_by(["name"], true);
        for (query, stored) in [(fetched, true), (sorted, false)] {
            let expected: Vec<crate::Record> = db.query("t", &query)?.collect::<Result<_>>()?;
            let mut rows = db.query("t", &query)?;
            let mut n = 0;
            while let Some(row) = rows.next_ref()? {
                assert_eq!(matches!(row.row, Lent::Stored { .. }), stored, "{query:?}");
                assert_eq!(row.as_record().is_none(), stored);
                assert_eq!(row.to_record()?, expected[n]);
                n += 1;
            }
            assert_eq!(n, 20, "{query:?}");
        }
        Ok(())
    }

    #[test]
    fn a_damaged_stored_value_is_an_error_naming_its_row() {
        let stored = record! { "a" => 1, "b" => "xyz" }.encode();
        let names = NameList::from(vec![crate::table::codec::record::Name::from("b")]);
        let at = [1];
        let whole = View::parse(&stored).expect("a record it wrote");
        let row = RowRef::stored(&names, &at, whole, "t/fact", b"k7");
        assert_eq!(row.value(0).expect("intact").to_value(), Value::from("xyz"));
        // The text's last byte made one that is not UTF-8: the offsets still hold.
        let mut damaged = stored.clone();
        let last = damaged.len() - 1;
        damaged[last] = 0xff;
        let view = View::parse(&damaged).expect("its head is intact");
        let row = RowRef::stored(&names, &at, view, "t/fact", b"k7");
        match row.value(0) {
            Err(Error::Corruption { family, key, .. }) => {
                assert_eq!((family.as_str(), key.as_slice()), ("t/fact", &b"k7"[..]));
            }
            other => panic!("a damaged value read as {other:?}"),
        }
        assert!(row.to_record().is_err());
        assert!(row.get("b").is_err());
    }

    #[test]
    fn a_checked_value_is_the_value_and_none_where_the_value_is_an_error() {
        let record = record! { "a" => 1, "b" => "xyz" };
        let stored = record.encode();
        // One field kept of two: the lent row's field 0 is the record's value 1.
        let names = NameList::from(vec![crate::table::codec::record::Name::from("b")]);
        let at = [1];
        let view = View::parse(&stored).expect("a record it wrote");
        let row = RowRef::stored(&names, &at, view, "t/fact", b"k7");
        let checked = row.checked_value(0).map(|v| v.to_value());
        assert_eq!(checked, Some(Value::from("xyz")));
        assert_eq!(checked, Some(row.value(0).expect("intact").to_value()));
        assert!(row.value(1).is_err());
        assert!(row.checked_value(1).is_none(), "past the last field");
        let built = RowRef::from(&record);
        for i in 0..2 {
            let checked = built.checked_value(i).map(|v| v.to_value());
            assert_eq!(checked, Some(built.value(i).expect("built").to_value()));
        }
        assert!(built.value(2).is_err());
        assert!(built.checked_value(2).is_none(), "past the last field");
        // The text's last byte made one that is not UTF-8: the offsets still hold.
        let mut damaged = stored.clone();
        let last = damaged.len() - 1;
        damaged[last] = 0xff;
        let view = View::parse(&damaged).expect("its head is intact");
        let names = NameList::from(vec![
            crate::table::codec::record::Name::from("a"),
            crate::table::codec::record::Name::from("b"),
        ]);
        let row = RowRef::stored(&names, &[0, 1], view, "t/fact", b"k7");
        assert!(row.value(1).is_err());
        assert!(row.checked_value(1).is_none(), "a damaged value");
        let neighbour = row.checked_value(0).map(|v| v.to_value());
        assert_eq!(neighbour, Some(Value::Int(1)), "its neighbour reads");
    }
}
