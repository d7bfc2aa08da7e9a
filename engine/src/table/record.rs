//! Records — property bags of named values — and their stored form (`docs/formats/records.md`).
//!
//! ```text
//! record   := 02  count:varint  names_len:varint  names  ends  values
//! names    := (name_len:varint name:utf8){count}      strictly ascending
//! ends     := end{count}, each `width` bytes little-endian: where value i ends in `values`;
//!             width is 1, 2 or 4, the smallest whose range holds the record's total length
//! value    := 0 NULL | 1 false | 2 true | 3 zigzag-varint int | 4 f64 (8 bytes LE)
//!           | 5 len:varint utf8 | 6 len:varint bytes
//! record_1 := 01  count:varint  (name_len:varint name value){count}     still read
//! ```
//!
//! A version-2 row's names sit together and every value has a known place, so a reader that
//! has seen a row's names once compares them as one run of bytes and reads any field without
//! walking the ones before it (`View`, in `record_codec.rs`, with the value codec). The decoder
//! takes only what the encoder writes:
//! known version and tags, sorted unique names, canonical varints and widths, each value
//! exactly filling its place, no bytes left over. Anything else is an error, never a panic.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_planner::Value;

use crate::table::field_names::FieldNames;
use crate::table::format::RECORD_VERSION;
use crate::table::record_codec::{
    encode_value, end_width, put_varint, value_len, varint_len, walk,
};

/// A field's name, shared: the rows a query decodes share the names of the rows before them
/// instead of allocating each one again.
pub(crate) type Name = Arc<str>;

/// A row: field name → value. Fields are free, as in an Azure Table entity; the table names
/// only its primary-key fields. A missing field reads as `NULL`.
///
/// Held as the names, sorted (no two alike), and the values in the same order: a row of a
/// dozen fields is one vector, looked up by binary search. The names are shared: the rows a
/// query reads from stored rows of one layout share one list of names, so a row costs one
/// reference count for its names, not one a field (which was a sixth of a scan returning
/// half a table). Changing a record's set of fields gives it its own list.
#[derive(Clone, PartialEq, Eq)]
pub struct Record {
    names: Arc<[Name]>,
    values: Vec<Value>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            names: Arc::from([]),
            values: Vec::new(),
        }
    }
}

/// Builds a [`Record`]: `record! { "id" => 1, "town" => "Redmond" }`. Values go through
/// `Value::from`, so integers, floats, booleans, strings, byte vectors and `Option`s work.
#[macro_export]
macro_rules! record {
    () => { $crate::Record::new() };
    ($($name:expr => $value:expr),+ $(,)?) => {{
        let mut record = $crate::Record::new();
        $( record.set($name, $value); )+
        record
    }};
}

impl Record {
    /// An empty record.
    pub fn new() -> Self {
        Record::default()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.names.binary_search_by(|n| (**n).cmp(name))
    }

    /// Sets `name` to `value`, returning the value it replaces.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        let name: String = name.into();
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.values[i], value.into())),
            Err(i) => {
                let mut names = self.names.to_vec();
                names.insert(i, Name::from(name));
                self.names = names.into();
                self.values.insert(i, value.into());
                None
            }
        }
    }

    /// A record of `fields`, whose names are shared with the caller (a loader that builds many
    /// rows of the same fields allocates each name once, not once a row). A name given twice
    /// keeps its last value. Fields already in name order are taken as they are.
    pub fn from_shared(mut fields: Vec<(Arc<str>, Value)>) -> Record {
        if fields.windows(2).any(|w| w[0].0 >= w[1].0) {
            // As in `from_iter`: stable, so the last of equal names survives the dedup.
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields.reverse();
            fields.dedup_by(|a, b| a.0 == b.0);
            fields.reverse();
        }
        Record::from_sorted(fields)
    }

    /// A record of `values` for `names`, the `i`-th value for the `i`-th name (in the
    /// list's own order, ascending); a `NULL` value is a missing field, as everywhere. The
    /// names are shared, not copied: a loader that builds many rows of the same fields makes
    /// the list once and each row costs one reference count. An error if the counts differ.
    ///
    /// ```
    /// use strata::{FieldNames, Record, Value};
    ///
    /// let names = FieldNames::new(["town", "id"])?;
    /// assert_eq!(names.names().collect::<Vec<_>>(), ["id", "town"]);
    /// let row = Record::with_names(&names, vec![Value::Int(7), Value::from("Ely")])?;
    /// assert_eq!(row.value("town"), &Value::from("Ely"));
    /// assert!(Record::with_names(&names, vec![Value::Int(8)]).is_err());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn with_names(names: &FieldNames, values: Vec<Value>) -> crate::Result<Record> {
        if values.len() != names.len() {
            return Err(crate::Error::InvalidArgument(format!(
                "{} values for {} field names",
                values.len(),
                names.len()
            )));
        }
        Ok(Record {
            names: Arc::clone(names.list()),
            values,
        })
    }

    /// Whether this record's names are `names`' own list (not an equal copy).
    pub(crate) fn shares_names(&self, names: &FieldNames) -> bool {
        Arc::ptr_eq(&self.names, names.list())
    }

    /// Whether another holder (a [`FieldNames`], other records) shares this record's names.
    pub(crate) fn names_are_shared(&self) -> bool {
        Arc::strong_count(&self.names) > 1
    }

    /// The names list, for a caller that remembers which lists it has checked.
    pub(crate) fn field_names(&self) -> FieldNames {
        FieldNames::from_list(Arc::clone(&self.names))
    }

    /// A record of `fields`, which the caller has checked are in strictly ascending name
    /// order (a decoder that checked the stored order).
    pub(crate) fn from_sorted(fields: Vec<(Name, Value)>) -> Record {
        debug_assert!(fields.windows(2).all(|w| w[0].0 < w[1].0));
        let (names, values): (Vec<Name>, Vec<Value>) = fields.into_iter().unzip();
        Record {
            names: names.into(),
            values,
        }
    }

    /// A record of `names` (strictly ascending, checked by the caller) and their `values`,
    /// the names shared with every other record of them.
    pub(crate) fn from_names(names: Arc<[Name]>, values: Vec<Value>) -> Record {
        debug_assert_eq!(names.len(), values.len());
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]));
        Record { names, values }
    }

    /// The value of `name`, if the record has it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.position(name).ok().map(|i| &self.values[i])
    }

    /// The value of the `i`-th field in name order (`NULL` past the last).
    pub(crate) fn value_at(&self, i: usize) -> &Value {
        static NULL: Value = Value::Null;
        self.values.get(i).unwrap_or(&NULL)
    }

    /// The value of `name`, `NULL` when missing.
    pub fn value(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(name).unwrap_or(&NULL)
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.position(name).ok()?;
        let mut names = self.names.to_vec();
        names.remove(i);
        self.names = names.into();
        Some(self.values.remove(i))
    }

    /// The fields in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names.iter().map(|k| &**k).zip(&self.values)
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Only the named fields (those the record has).
    pub fn project<'f>(&self, names: impl IntoIterator<Item = &'f String>) -> Record {
        let mut at: Vec<usize> = names
            .into_iter()
            .filter_map(|name| self.position(name).ok())
            .collect();
        at.sort_unstable();
        at.dedup();
        if at.len() == self.len() {
            return self.clone();
        }
        Record {
            names: at.iter().map(|&i| Arc::clone(&self.names[i])).collect(),
            values: at.iter().map(|&i| self.values[i].clone()).collect(),
        }
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.values.len() * 16);
        self.encode_into(&mut out);
        out
    }

    /// Appends the stored form to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.put_head(out);
        let head = out.len() - start;
        self.put_values(head, out);
    }

    /// The head of the stored form: version, count and names section. Records that share
    /// their names share it (see [`Record::encode_with_head`]).
    pub(crate) fn head(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.names.iter().map(|n| 1 + n.len()).sum::<usize>());
        self.put_head(&mut out);
        out
    }

    /// Appends the stored form to `out`, given its head (from [`Record::head`] of a record
    /// with the same names).
    pub(crate) fn encode_with_head(&self, head: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(head);
        self.put_values(head.len(), out);
    }

    fn put_head(&self, out: &mut Vec<u8>) {
        out.push(RECORD_VERSION);
        put_varint(out, self.values.len() as u64);
        let names_len: usize = self
            .names
            .iter()
            .map(|name| varint_len(name.len() as u64) + name.len())
            .sum();
        put_varint(out, names_len as u64);
        for name in self.names.iter() {
            put_varint(out, name.len() as u64);
            out.extend(name.as_bytes());
        }
    }

    /// Appends the value ends and the values, after a head of `head` bytes.
    fn put_values(&self, head: usize, out: &mut Vec<u8>) {
        let start = out.len();
        let count = self.values.len();
        let values_len: usize = self.values.iter().map(value_len).sum();
        let width = [1, 2]
            .into_iter()
            .find(|&w| end_width(head + count * w + values_len) == w)
            .unwrap_or(4);
        let mut end = 0;
        for value in &self.values {
            end += value_len(value);
            out.extend(&(end as u32).to_le_bytes()[..width]);
        }
        for value in &self.values {
            encode_value(value, out);
        }
        debug_assert_eq!(out.len() - start, count * width + values_len);
    }

    /// This record without its `NULL` fields (a missing field reads as `NULL`), in one pass.
    pub(crate) fn without_nulls(self) -> Record {
        if !self.values.iter().any(Value::is_null) {
            return self;
        }
        let (names, values): (Vec<Name>, Vec<Value>) = self
            .names
            .iter()
            .cloned()
            .zip(self.values)
            .filter(|(_, v)| !v.is_null())
            .unzip();
        Record {
            names: names.into(),
            values,
        }
    }

    /// Parses a stored record.
    pub fn decode(bytes: &[u8]) -> Result<Record, RecordError> {
        Record::decode_where(bytes, &mut Names::default(), |_| true)
    }
}

/// The names of the rows decoded last, by position: a row whose field at position `i` has the
/// same name as the last row's shares it (one compare, no allocation, no UTF-8 check).
#[derive(Default)]
pub(crate) struct Names {
    recent: Vec<Name>,
}

impl Names {
    fn name(&mut self, i: usize, bytes: &[u8]) -> Result<Name, RecordError> {
        if let Some(known) = self.recent.get(i)
            && known.as_bytes() == bytes
        {
            return Ok(Arc::clone(known));
        }
        let name: Name = std::str::from_utf8(bytes)
            .map_err(|_| RecordError::NotUtf8)?
            .into();
        if i < self.recent.len() {
            self.recent[i] = Arc::clone(&name);
        } else if i == self.recent.len() {
            self.recent.push(Arc::clone(&name));
        }
        Ok(name)
    }
}

impl Record {
    /// Parses only the fields named in `wanted` (sorted and without repeats), skipping the
    /// other values without building them: what the statistics collector reads of every row
    /// a flush writes. The header, the names and their order are checked as [`Record::decode`]
    /// checks them; a skipped field's name and string are not checked for UTF-8.
    pub fn decode_only(bytes: &[u8], wanted: &[String]) -> Result<Record, RecordError> {
        Record::decode_where(bytes, &mut Names::default(), |name| {
            wanted.binary_search_by(|w| w.as_bytes().cmp(name)).is_ok()
        })
    }

    /// Parses a stored record, building the fields `keep` accepts and skipping the others.
    fn decode_where(
        bytes: &[u8],
        names: &mut Names,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Result<Record, RecordError> {
        let mut fields = Vec::new();
        let mut i = 0;
        walk(bytes, |name, r| {
            if keep(name) {
                if fields.is_empty() {
                    fields.reserve_exact(names.recent.len().max(4));
                }
                fields.push((names.name(i, name)?, r.value()?));
                i += 1;
            } else {
                r.skip_value()?;
            }
            Ok(false)
        })?;
        Ok(Record::from_sorted(fields))
    }
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("fields", &DebugFields(self))
            .finish()
    }
}

struct DebugFields<'a>(&'a Record);

impl std::fmt::Debug for DebugFields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

/// The serde form is `{"fields": {name: value, …}}`, as when a record was a map.
impl serde::Serialize for Record {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Fields<'a>(&'a Record);
        impl serde::Serialize for Fields<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_map(self.0.iter())
            }
        }
        let mut s = serializer.serialize_struct("Record", 1)?;
        s.serialize_field("fields", &Fields(self))?;
        s.end()
    }
}

impl<'de> serde::Deserialize<'de> for Record {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(rename = "Record")]
        struct Form {
            fields: BTreeMap<String, Value>,
        }
        Form::deserialize(deserializer).map(|form| Record::from(form.fields))
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Record {
    /// A name given twice keeps its last value.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let fields = iter
            .into_iter()
            .map(|(k, v)| (Name::from(k.into()), v.into()))
            .collect();
        Record::from_shared(fields)
    }
}

impl From<BTreeMap<String, Value>> for Record {
    fn from(fields: BTreeMap<String, Value>) -> Self {
        Record::from_sorted(
            fields
                .into_iter()
                .map(|(k, v)| (Name::from(k), v))
                .collect(),
        )
    }
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}: {v}")?;
        }
        f.write_str("}")
    }
}

/// For the `record` fuzz target: reads `bytes` as queries read stored rows (a
/// [`RowReader`](crate::table::row_reader) testing some fields and building some, twice, so
/// the second read goes through the layout the first learnt) and reports where that disagrees
/// with [`Record::decode`]: a value tested or built differently, a row built whole that the
/// decode refuses, or a row the decode accepts that the reader refuses.
#[doc(hidden)]
pub fn row_reader_disagreement(bytes: &[u8]) -> Option<String> {
    use crate::table::row_reader::RowReader;
    let decoded = Record::decode(bytes);
    let readers: [(&[&str], Option<Vec<String>>); 3] = [
        (&["a"], Some(vec!["b".to_owned()])),
        (&["b", "a"], None),
        (&[], None),
    ];
    for (tested, kept) in readers {
        let mut reader = RowReader::new(tested, kept.clone());
        for _ in 0..2 {
            let test = reader.test(bytes);
            let built = reader.build(bytes);
            match &decoded {
                Ok(record) => {
                    if test.is_err() {
                        return Some(format!("test refused a record: {test:?}"));
                    }
                    for name in tested {
                        if reader.value_of(name) != record.value(name) {
                            return Some(format!("tested {name} differently"));
                        }
                    }
                    let expected = match &kept {
                        Some(kept) => record.project(kept),
                        None => record.clone(),
                    };
                    if built.as_ref() != Ok(&expected) {
                        return Some(format!("built {built:?}, decoded {expected:?}"));
                    }
                }
                Err(_) if kept.is_none() && built.is_ok() => {
                    return Some(format!(
                        "built whole a record the decode refuses: {built:?}"
                    ));
                }
                Err(_) => {}
            }
        }
    }
    None
}

/// Why record bytes do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A version this build does not know.
    #[error("unknown record version {0}")]
    Version(u8),
    /// The bytes end early.
    #[error("record ends early")]
    Truncated,
    /// More fields than a record may have.
    #[error("record claims {0} fields")]
    TooManyFields(u64),
    /// A length over its limit.
    #[error("length {0} is over its limit")]
    TooLong(u64),
    /// A varint longer than ten bytes, or not in its shortest form.
    #[error("malformed varint")]
    Varint,
    /// A name or string is not UTF-8.
    #[error("text is not UTF-8")]
    NotUtf8,
    /// Names are not in strictly ascending order.
    #[error("field names out of order or repeated")]
    FieldOrder,
    /// A value tag this build does not know.
    #[error("unknown value tag {0}")]
    UnknownTag(u8),
    /// Bytes after the last field.
    #[error("bytes after the record")]
    TrailingBytes,
    /// A value that does not exactly fill the place its offsets give it.
    #[error("a value does not fill its place")]
    Offsets,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::format::{RECORD_V1, VALUE_INT, VALUE_NULL, VALUE_STR};
    use crate::table::row_reader::RowReader;
    use proptest::prelude::*;
    use strata_planner::Predicate;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            ".{0,6}".prop_map(Value::Str),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Bytes),
        ]
    }

    proptest! {
        #[test]
        fn records_round_trip(fields in proptest::collection::btree_map("[a-z_]{1,6}", value(), 0..8)) {
            let record = Record::from(fields);
            let bytes = record.encode();
            let back = Record::decode(&bytes).unwrap();
            prop_assert_eq!(back.encode(), bytes);
        }

        /// Shared names in any order, repeats included, make the record that setting each
        /// field in turn makes.
        #[test]
        fn a_record_of_shared_names_is_the_record_of_its_sets(
            fields in proptest::collection::vec(("[a-d]{1,2}", value()), 0..10),
        ) {
            let mut set = Record::new();
            for (name, v) in &fields {
                set.set(name.as_str(), v.clone());
            }
            let shared: Vec<(Arc<str>, Value)> =
                fields.into_iter().map(|(n, v)| (Arc::from(n), v)).collect();
            prop_assert_eq!(Record::from_shared(shared), set);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(record) = Record::decode(&bytes) {
                prop_assert_eq!(&record.encode(), &bytes);
            }
            let wanted = ["a".to_owned(), "b".to_owned()];
            if let (Ok(all), Ok(some)) = (Record::decode(&bytes), Record::decode_only(&bytes, &wanted)) {
                prop_assert_eq!(all.project(&wanted), some);
            }
        }

        #[test]
        fn a_partial_decode_is_the_projection_of_the_whole(
            fields in proptest::collection::btree_map("[a-e]{1,2}", value(), 0..8),
            wanted in proptest::collection::btree_set("[a-e]{1,2}", 0..4),
        ) {
            let record = Record::from(fields);
            let bytes = record.encode();
            let wanted: Vec<String> = wanted.into_iter().collect();
            let some = Record::decode_only(&bytes, &wanted).unwrap();
            let projected: Record = record
                .iter()
                .filter(|(name, _)| wanted.iter().any(|w| w == name))
                .map(|(name, v)| (name.to_owned(), v.clone()))
                .collect();
            prop_assert_eq!(some, projected);
            for cut in 0..bytes.len() {
                prop_assert!(Record::decode_only(&bytes[..cut], &wanted).is_err());
            }
        }
    }

    proptest! {
        /// A row reader tests exactly the values a full decode holds and builds exactly the
        /// projection of the full decode, row after row with its shared names.
        #[test]
        fn a_row_reader_accepts_exactly_the_rows_a_decode_accepts(
            rows in proptest::collection::vec(
                proptest::collection::vec(prop_oneof!["a", "b", "c", "d"], 0..5), 1..12),
            tests in proptest::collection::vec(any::<bool>(), 12),
            versions in proptest::collection::vec(any::<bool>(), 12),
            layout in proptest::collection::btree_set(prop_oneof!["a", "b", "c", "d"], 0..4),
        ) {
            // Starting from another row's names, as a query's reader does.
            let layout: Vec<Arc<str>> = layout.iter().map(|n| Arc::from(n.as_str())).collect();
            let mut reader = RowReader::new(&["b"], None).with_layout(&layout);
            for ((names, test), v2) in rows.iter().zip(tests).zip(versions) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let bytes = if v2 { raw2(&names) } else { raw(&names) };
                let decoded = Record::decode(&bytes);
                if test {
                    prop_assert_eq!(reader.test(&bytes).is_ok(), decoded.is_ok());
                } else {
                    prop_assert_eq!(reader.build(&bytes), decoded);
                }
            }
        }

        #[test]
        fn a_row_reader_sees_what_a_full_decode_sees(
            rows in proptest::collection::vec(
                proptest::collection::btree_map("[a-e]{1,2}", value(), 0..8), 1..6),
            tested in proptest::collection::vec("[a-e]{1,2}", 0..3),
            kept in proptest::option::of(proptest::collection::vec("[a-e]{1,2}", 0..4)),
        ) {
            let tested_refs: Vec<&str> = tested.iter().map(String::as_str).collect();
            let mut reader = RowReader::new(&tested_refs, kept.clone());
            for fields in rows {
                let record = Record::from(fields);
                let bytes = record.encode();
                reader.test(&bytes).unwrap();
                for name in &tested {
                    prop_assert_eq!(reader.value_of(name), record.value(name));
                }
                let present: Vec<Predicate> =
                    tested.iter().map(|t| Predicate::is_not_null(t.as_str())).collect();
                prop_assert_eq!(
                    reader.passes(&present),
                    tested.iter().all(|t| !record.value(t).is_null())
                );
                let built = reader.build(&bytes).unwrap();
                let expected = match &kept {
                    None => record.clone(),
                    Some(kept) => record.project(kept),
                };
                prop_assert_eq!(built, expected);
                for cut in 0..bytes.len() {
                    prop_assert!(reader.test(&bytes[..cut]).is_err());
                }
            }
        }
    }

    /// A version-1 record's bytes with `names` in the order given (sorted or not), each
    /// holding 1.
    fn raw(names: &[&str]) -> Vec<u8> {
        let mut out = vec![RECORD_V1, names.len() as u8];
        for name in names {
            out.push(name.len() as u8);
            out.extend(name.as_bytes());
            out.extend([VALUE_INT, 2]);
        }
        out
    }

    /// A version-2 record's bytes with `names` in the order given (sorted or not), each
    /// holding 1 (short names: one-byte ends).
    fn raw2(names: &[&str]) -> Vec<u8> {
        let section: Vec<u8> = names
            .iter()
            .flat_map(|n| [&[n.len() as u8][..], n.as_bytes()].concat())
            .collect();
        let mut out = vec![RECORD_VERSION, names.len() as u8, section.len() as u8];
        out.extend(section);
        out.extend((1..=names.len()).map(|i| 2 * i as u8));
        for _ in names {
            out.extend([VALUE_INT, 2]);
        }
        out
    }

    #[test]
    fn a_row_reader_refuses_names_out_of_order_even_when_each_was_seen_at_its_place() {
        let mut reader = RowReader::new(&["a"], None);
        reader.test(&raw(&["a", "m", "z"])).unwrap();
        reader.build(&raw(&["a", "zz"])).unwrap();
        // "zz" and then "z": each name is one the reader saw at its position, in two rows.
        let bad = raw(&["a", "zz", "z"]);
        assert_eq!(reader.test(&bad), Err(RecordError::FieldOrder));
        assert_eq!(reader.build(&bad).err(), Some(RecordError::FieldOrder));
        assert_eq!(Record::decode(&bad), Err(RecordError::FieldOrder));
    }

    #[test]
    fn a_row_reader_refuses_a_new_layout_out_of_order() {
        let mut reader = RowReader::new(&["a"], None);
        reader.test(&raw2(&["a", "m", "z"])).unwrap();
        reader.build(&raw2(&["a", "zz"])).unwrap();
        for bad in [
            raw2(&["a", "zz", "z"]),
            raw2(&["a", "a"]),
            raw2(&["b", "a"]),
        ] {
            assert_eq!(reader.test(&bad), Err(RecordError::FieldOrder));
            assert_eq!(reader.build(&bad).err(), Some(RecordError::FieldOrder));
            assert_eq!(Record::decode(&bad), Err(RecordError::FieldOrder));
        }
        // The layouts learnt before still read.
        assert_eq!(reader.build(&raw2(&["a", "zz"])).unwrap().len(), 2);
    }

    /// The documented example of each version (`docs/formats/records.md`): the first still
    /// reads, and writes as the second.
    #[test]
    fn a_version_1_record_reads_and_writes_as_version_2() {
        let v1 = b"\x01\x02\x02id\x03\x0e\x04town\x05\x07Redmond";
        let v2 = b"\x02\x02\x08\x02id\x04town\x02\x0b\x03\x0e\x05\x07Redmond";
        let record = crate::record! { "id" => 7, "town" => "Redmond" };
        assert_eq!(Record::decode(v1).unwrap(), record);
        assert_eq!(record.encode(), v2);
        assert_eq!(Record::decode(v2).unwrap(), record);
        for bytes in [&v1[..], &v2[..]] {
            let mut reader = RowReader::new(&["town"], Some(vec!["id".into()]));
            reader.test(bytes).unwrap();
            assert_eq!(reader.value_of("town"), &Value::from("Redmond"));
            assert_eq!(
                reader.build(bytes).unwrap(),
                record.project(&["id".to_owned()])
            );
        }
    }

    /// Ends are 1, 2 or 4 bytes, the smallest that holds the record's length: records on each
    /// side of both boundaries round-trip, and a wider spelling of the same record is refused.
    #[test]
    fn value_ends_take_the_narrowest_width_that_fits() {
        for len in (200..300).chain(65_400..65_600) {
            let record = crate::record! { "a" => 1, "s" => "x".repeat(len) };
            let bytes = record.encode();
            let width = (bytes.len() - 3 - 4 - (len + 1 + varint_len(len as u64)) - 2) / 2;
            let expected = if bytes.len() <= 0xff {
                1
            } else if bytes.len() <= 0xffff {
                2
            } else {
                4
            };
            assert_eq!(width, expected, "a record of {} bytes", bytes.len());
            assert_eq!(Record::decode(&bytes).unwrap(), record);
        }
        // {a: 1} with two-byte ends: the same fields, a spelling the encoder never writes.
        let wide = [RECORD_VERSION, 1, 2, 1, b'a', 2, 0, VALUE_INT, 2];
        assert!(Record::decode(&wide).is_err());
    }

    /// A query reads the fields it tests and returns; damage in a value it does not read is
    /// not its error (block checksums and `verify` find that), but a full decode's.
    #[test]
    fn a_reader_checks_the_values_it_reads() {
        let mut bytes = crate::record! { "a" => 1, "b" => 2 }.encode();
        let b_tag = bytes.len() - 2;
        bytes[b_tag] = 0x7f;
        assert_eq!(Record::decode(&bytes), Err(RecordError::UnknownTag(0x7f)));
        let mut only_a = RowReader::new(&["a"], Some(vec!["a".into()]));
        only_a.test(&bytes).unwrap();
        assert_eq!(only_a.build(&bytes).unwrap(), crate::record! { "a" => 1 });
        let mut all = RowReader::new(&["a"], None);
        all.test(&bytes).unwrap();
        assert_eq!(all.build(&bytes), Err(RecordError::UnknownTag(0x7f)));
        let mut on_b = RowReader::new(&["b"], None);
        assert_eq!(on_b.test(&bytes), Err(RecordError::UnknownTag(0x7f)));
    }

    #[test]
    fn a_name_given_twice_keeps_its_last_value() {
        let r: Record = [("b", 1), ("a", 2), ("b", 3), ("a", 4), ("c", 5)]
            .into_iter()
            .collect();
        let fields: Vec<(&str, &Value)> = r.iter().collect();
        assert_eq!(
            fields,
            [
                ("a", &Value::Int(4)),
                ("b", &Value::Int(3)),
                ("c", &Value::Int(5))
            ]
        );
        let mut r = r;
        assert_eq!(r.set("b", 9), Some(Value::Int(3)));
        assert_eq!(r.remove("a"), Some(Value::Int(4)));
        assert_eq!(r.remove("a"), None);
        assert_eq!(r.to_string(), "{b: 9, c: 5}");
    }

    #[test]
    fn the_serde_form_is_a_map_of_fields() {
        let r = crate::record! { "id" => 1, "town" => "Ely" };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"fields":{"id":{"Int":1},"town":{"Str":"Ely"}}}"#);
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), r);
        assert_eq!(
            format!("{r:?}"),
            r#"Record { fields: {"id": Int(1), "town": Str("Ely")} }"#
        );
    }

    #[test]
    fn the_macro_builds_records() {
        let r = crate::record! { "id" => 1, "town" => "Redmond", "score" => 2.5, "vip" => true,
        "photo" => vec![1u8, 2], "nick" => None::<&str> };
        assert_eq!(r.get("id"), Some(&Value::Int(1)));
        assert_eq!(r.get("town"), Some(&Value::from("Redmond")));
        assert_eq!(r.get("nick"), Some(&Value::Null));
        assert_eq!(r.value("missing"), &Value::Null);
        assert_eq!(r.len(), 6);
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn damaged_records_are_errors() {
        let r = crate::record! { "a" => 1, "b" => "x" };
        let bytes = r.encode();
        assert_eq!(
            Record::decode(&bytes[..bytes.len() - 1]),
            Err(RecordError::Truncated)
        );
        let mut v = bytes.clone();
        v[0] = 9;
        assert_eq!(Record::decode(&v), Err(RecordError::Version(9)));
        let mut extra = bytes.clone();
        extra.push(0);
        assert_eq!(Record::decode(&extra), Err(RecordError::TrailingBytes));
        // Two fields named "a": out of order.
        let dup = [RECORD_V1, 2, 1, b'a', VALUE_NULL, 1, b'a', VALUE_NULL];
        assert_eq!(Record::decode(&dup), Err(RecordError::FieldOrder));
        // A padded varint.
        for version in [RECORD_V1, RECORD_VERSION] {
            let padded = [version, 0x80, 0x00];
            assert_eq!(Record::decode(&padded), Err(RecordError::Varint));
        }
        // Version 2: {a: 1, b: "x"}, ends 2 and 5.
        assert_eq!(
            bytes,
            [
                RECORD_VERSION,
                2,
                4,
                1,
                b'a',
                1,
                b'b',
                2,
                5,
                VALUE_INT,
                2,
                VALUE_STR,
                1,
                b'x'
            ]
        );
        let mut moved = bytes.clone();
        moved[7] = 3; // value a ends one byte early: the int's varint runs into b's place
        assert_eq!(Record::decode(&moved), Err(RecordError::Offsets));
        let mut past = bytes.clone();
        past[7] = 9; // value a ends after value b
        assert_eq!(Record::decode(&past), Err(RecordError::Offsets));
        let mut short = bytes.clone();
        short[8] = 4; // the last value ends before the record
        assert_eq!(Record::decode(&short), Err(RecordError::TrailingBytes));
        let mut names = bytes.clone();
        names[2] = 3; // the names section ends inside "b"'s name
        assert!(Record::decode(&names).is_err());
        let mut no_fields = vec![RECORD_VERSION, 0, 0];
        assert_eq!(Record::decode(&no_fields).unwrap(), Record::new());
        no_fields[2] = 1;
        no_fields.push(0);
        assert_eq!(Record::decode(&no_fields), Err(RecordError::TrailingBytes));
        let huge = [
            RECORD_V1, 1, 1, b'a', VALUE_STR, 0xff, 0xff, 0xff, 0xff, 0x0f,
        ];
        assert!(Record::decode(&huge).is_err());
    }
}
