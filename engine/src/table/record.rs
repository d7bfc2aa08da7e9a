//! Records — property bags of named values — and their stored form (`docs/formats/records.md`).
//!
//! ```text
//! record := version:u8 (= 1)  count:varint  field{count}     fields in strictly ascending name order
//! field  := name_len:varint  name:utf8  value
//! value  := 0 NULL | 1 false | 2 true | 3 zigzag-varint int | 4 f64 (8 bytes LE)
//!         | 5 len:varint utf8 | 6 len:varint bytes
//! ```
//!
//! The decoder takes only what the encoder writes: known version and tags, sorted unique
//! names, canonical varints, no bytes left over. Anything else is an error, never a panic.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_planner::Value;

use crate::table::format::{
    MAX_FIELD_NAME_BYTES, MAX_FIELDS, RECORD_VERSION, VALUE_BYTES, VALUE_FALSE, VALUE_FLOAT,
    VALUE_INT, VALUE_NULL, VALUE_STR, VALUE_TRUE,
};

/// A field's name, shared: the rows a query decodes share the names of the rows before them
/// instead of allocating each one again.
pub(crate) type Name = Arc<str>;

/// A row: field name → value. Fields are free, as in an Azure Table entity; the table names
/// only its primary-key fields. A missing field reads as `NULL`.
///
/// Held as one vector sorted by name (no two alike): a row of a dozen fields is one
/// allocation, looked up by binary search.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Record {
    fields: Vec<(Name, Value)>,
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
        self.fields.binary_search_by(|(n, _)| (**n).cmp(name))
    }

    /// Sets `name` to `value`, returning the value it replaces.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        let name: String = name.into();
        match self.position(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.fields[i].1, value.into())),
            Err(i) => {
                self.fields.insert(i, (Name::from(name), value.into()));
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
        Record { fields }
    }

    /// A record of `fields`, which the caller has checked are in strictly ascending name
    /// order (a decoder that checked the stored order).
    pub(crate) fn from_sorted(fields: Vec<(Name, Value)>) -> Record {
        debug_assert!(fields.windows(2).all(|w| w[0].0 < w[1].0));
        Record { fields }
    }

    /// The fields, in name order, for a caller that adds to them and builds a record again
    /// with [`Record::from_shared`].
    pub(crate) fn into_fields(self) -> Vec<(Arc<str>, Value)> {
        self.fields
    }

    /// The value of `name`, if the record has it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.position(name).ok().map(|i| &self.fields[i].1)
    }

    /// The value of `name`, `NULL` when missing.
    pub fn value(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(name).unwrap_or(&NULL)
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.position(name).ok().map(|i| self.fields.remove(i).1)
    }

    /// The fields in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.fields.iter().map(|(k, v)| (&**k, v))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Only the named fields (those the record has).
    pub fn project<'f>(&self, names: impl IntoIterator<Item = &'f String>) -> Record {
        let mut out = Record::new();
        for name in names {
            if let Ok(i) = self.position(name)
                && let Err(at) = out.position(name)
            {
                out.fields.insert(at, self.fields[i].clone());
            }
        }
        out
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.fields.len() * 16);
        self.encode_into(&mut out);
        out
    }

    /// Appends the stored form to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(RECORD_VERSION);
        put_varint(out, self.fields.len() as u64);
        for (name, value) in &self.fields {
            put_varint(out, name.len() as u64);
            out.extend(name.as_bytes());
            encode_value(value, out);
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

/// Walks the fields of a stored record, checking its header, name order and end: `each` gets
/// every name and must read or skip its value. It returns whether the name is one whose order
/// after the name before it is already known (a `RowReader`'s slots: two neighbours matched
/// there were checked in order when the second was learnt), which spares the comparison.
pub(crate) fn walk<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(&'a [u8], &mut Reader<'a>) -> Result<bool, RecordError>,
) -> Result<(), RecordError> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.byte()?;
    if version != RECORD_VERSION {
        return Err(RecordError::Version(version));
    }
    let count = r.varint()?;
    if count > MAX_FIELDS as u64 {
        return Err(RecordError::TooManyFields(count));
    }
    let mut last: Option<&[u8]> = None;
    let mut last_known = false;
    for _ in 0..count {
        let len = r.len(MAX_FIELD_NAME_BYTES)?;
        let name = r.take(len)?;
        let known = each(name, &mut r)?;
        if !(known && last_known) && last.is_some_and(|last| last >= name) {
            return Err(RecordError::FieldOrder);
        }
        (last, last_known) = (Some(name), known);
    }
    if r.at != bytes.len() {
        return Err(RecordError::TrailingBytes);
    }
    Ok(())
}

impl Record {
    /// [`Record::decode`], the names shared with the records `names` saw before.
    pub(crate) fn decode_shared(bytes: &[u8], names: &mut Names) -> Result<Record, RecordError> {
        Record::decode_where(bytes, names, |_| true)
    }

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
        Ok(Record { fields })
    }
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("fields", &DebugFields(&self.fields))
            .finish()
    }
}

struct DebugFields<'a>(&'a [(Name, Value)]);

impl std::fmt::Debug for DebugFields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// The serde form is `{"fields": {name: value, …}}`, as when a record was a map.
impl serde::Serialize for Record {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Fields<'a>(&'a [(Name, Value)]);
        impl serde::Serialize for Fields<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_map(self.0.iter().map(|(k, v)| (&**k, v)))
            }
        }
        let mut s = serializer.serialize_struct("Record", 1)?;
        s.serialize_field("fields", &Fields(&self.fields))?;
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
        Record {
            fields: fields
                .into_iter()
                .map(|(k, v)| (Name::from(k), v))
                .collect(),
        }
    }
}

impl std::fmt::Display for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}: {v}")?;
        }
        f.write_str("}")
    }
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
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn encode_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(VALUE_NULL),
        Value::Bool(false) => out.push(VALUE_FALSE),
        Value::Bool(true) => out.push(VALUE_TRUE),
        Value::Int(i) => {
            out.push(VALUE_INT);
            put_varint(out, ((i << 1) ^ (i >> 63)) as u64);
        }
        Value::Float(x) => {
            out.push(VALUE_FLOAT);
            out.extend(x.to_bits().to_le_bytes());
        }
        Value::Str(s) => {
            out.push(VALUE_STR);
            put_varint(out, s.len() as u64);
            out.extend(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(VALUE_BYTES);
            put_varint(out, b.len() as u64);
            out.extend(b);
        }
    }
}

/// A cursor over bytes being decoded.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn byte(&mut self) -> Result<u8, RecordError> {
        let b = *self.bytes.get(self.at).ok_or(RecordError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self.at.checked_add(n).ok_or(RecordError::Truncated)?;
        let slice = self.bytes.get(self.at..end).ok_or(RecordError::Truncated)?;
        self.at = end;
        Ok(slice)
    }

    pub(crate) fn varint(&mut self) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(RecordError::Varint);
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                // Shortest form only: a final zero byte after the first is padding.
                if i > 0 && b == 0 {
                    return Err(RecordError::Varint);
                }
                return Ok(v);
            }
        }
        Err(RecordError::Varint)
    }

    /// A length, checked against `max` and against the bytes left.
    fn len(&mut self, max: usize) -> Result<usize, RecordError> {
        let len = self.varint()?;
        if len > max as u64 {
            return Err(RecordError::TooLong(len));
        }
        Ok(len as usize)
    }

    /// Moves past one value without building it.
    pub(crate) fn skip_value(&mut self) -> Result<(), RecordError> {
        match self.byte()? {
            VALUE_NULL | VALUE_FALSE | VALUE_TRUE => {}
            VALUE_INT => {
                self.varint()?;
            }
            VALUE_FLOAT => {
                self.take(8)?;
            }
            VALUE_STR | VALUE_BYTES => {
                let len = self.len(self.bytes.len())?;
                self.take(len)?;
            }
            other => return Err(RecordError::UnknownTag(other)),
        }
        Ok(())
    }

    pub(crate) fn value(&mut self) -> Result<Value, RecordError> {
        match self.byte()? {
            VALUE_NULL => Ok(Value::Null),
            VALUE_FALSE => Ok(Value::Bool(false)),
            VALUE_TRUE => Ok(Value::Bool(true)),
            VALUE_INT => {
                let z = self.varint()?;
                Ok(Value::Int(((z >> 1) as i64) ^ -((z & 1) as i64)))
            }
            VALUE_FLOAT => {
                let bits: [u8; 8] = self
                    .take(8)?
                    .try_into()
                    .map_err(|_| RecordError::Truncated)?;
                Ok(Value::Float(f64::from_bits(u64::from_le_bytes(bits))))
            }
            VALUE_STR => {
                let len = self.len(self.bytes.len())?;
                let s = std::str::from_utf8(self.take(len)?).map_err(|_| RecordError::NotUtf8)?;
                Ok(Value::Str(s.to_owned()))
            }
            VALUE_BYTES => {
                let len = self.len(self.bytes.len())?;
                Ok(Value::Bytes(self.take(len)?.to_vec()))
            }
            other => Err(RecordError::UnknownTag(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            layout in proptest::collection::btree_set(prop_oneof!["a", "b", "c", "d"], 0..4),
        ) {
            // Starting from another row's names, as a query's reader does.
            let layout: Vec<Arc<str>> = layout.iter().map(|n| Arc::from(n.as_str())).collect();
            let mut reader = RowReader::new(&["b"], None).with_layout(&layout);
            for (names, test) in rows.iter().zip(tests) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let bytes = raw(&names);
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
                    prop_assert_eq!(reader.tested(name), record.value(name));
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

    /// A record's bytes with `names` in the order given (sorted or not), each holding 1.
    fn raw(names: &[&str]) -> Vec<u8> {
        let mut out = vec![RECORD_VERSION, names.len() as u8];
        for name in names {
            out.push(name.len() as u8);
            out.extend(name.as_bytes());
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
        let dup = [RECORD_VERSION, 2, 1, b'a', VALUE_NULL, 1, b'a', VALUE_NULL];
        assert_eq!(Record::decode(&dup), Err(RecordError::FieldOrder));
        // A padded varint.
        let padded = [RECORD_VERSION, 0x80, 0x00];
        assert_eq!(Record::decode(&padded), Err(RecordError::Varint));
        let huge = [
            RECORD_VERSION,
            1,
            1,
            b'a',
            VALUE_STR,
            0xff,
            0xff,
            0xff,
            0xff,
            0x0f,
        ];
        assert!(Record::decode(&huge).is_err());
    }
}
