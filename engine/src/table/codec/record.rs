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

use crate::table::codec::field_names::FieldNames;
use crate::table::codec::format::RECORD_VERSION;
use crate::table::codec::layouts::{Layouts, NONE};
use crate::table::codec::name_list::NameList;
use crate::table::codec::record_codec::{
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
/// half a table), and a row read from storage holds an interned list (`name_list.rs`) and
/// costs none. Changing a record's set of fields gives it its own list.
#[derive(Clone, PartialEq, Eq)]
pub struct Record {
    names: NameList,
    values: Vec<Value>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            names: NameList::EMPTY,
            values: Vec::new(),
        }
    }
}

/// Builds a [`Record`]: `record! { "id" => 1, "town" => "Redmond" }`. Values go through
/// `Value::from`, so integers, floats, booleans, strings, byte vectors and `Option`s work.
/// Names may be `&str` or `String`; a name given twice keeps its last value.
///
/// A thread that builds records of the same names one after another (a loader, a loop of
/// writes) shares one list of names among them: the record costs the allocation of its
/// values and nothing for its names.
#[macro_export]
macro_rules! record {
    () => { $crate::Record::new() };
    ($($name:expr => $value:expr),+ $(,)?) => {
        $crate::Record::__from_named([
            $( (
                ::std::convert::AsRef::<str>::as_ref(&$name),
                ::std::convert::Into::<$crate::Value>::into($value),
            ) ),+
        ])
    };
}

impl Record {
    /// An empty record.
    pub fn new() -> Self {
        Record::default()
    }

    /// What [`record!`] builds with: `fields` in any order, a name given twice keeping its
    /// last value, the list of names shared with the last record this thread built of the
    /// same names. Not part of the API: use the macro.
    #[doc(hidden)]
    pub fn __from_named<const N: usize>(mut fields: [(&str, Value); N]) -> Record {
        if fields.windows(2).any(|w| w[0].0 >= w[1].0) {
            // Stable: of equal names the last given stays last.
            fields.sort_by(|a, b| a.0.cmp(b.0));
            if fields.windows(2).any(|w| w[0].0 == w[1].0) {
                let mut kept = Vec::from(fields);
                kept.reverse();
                kept.dedup_by(|a, b| a.0 == b.0);
                kept.reverse();
                return Record::with_last_names(kept);
            }
        }
        Record::with_last_names(fields)
    }

    /// A record of `fields` (strictly ascending names), its list of names the one of the
    /// last record this thread built so if the names are the same.
    fn with_last_names<'a, F>(fields: F) -> Record
    where
        F: AsRef<[(&'a str, Value)]> + IntoIterator<Item = (&'a str, Value)>,
    {
        thread_local! {
            static LAST: std::cell::RefCell<NameList> = const {
                std::cell::RefCell::new(NameList::EMPTY)
            };
        }
        let given = fields.as_ref();
        let build = || given.iter().map(|(name, _)| Name::from(*name)).collect();
        // `try_with`: a record built while the thread's locals are being destroyed (in
        // another local's destructor) gets its own list.
        let names = LAST.try_with(|last| match last.try_borrow_mut() {
            Ok(last)
                if last.len() == given.len()
                    && last.iter().zip(given).all(|(n, (name, _))| **n == **name) =>
            {
                last.clone()
            }
            Ok(mut last) => {
                *last = build();
                last.clone()
            }
            Err(_) => build(),
        });
        let names = names.unwrap_or_else(|_| build());
        let values = fields.into_iter().map(|(_, value)| value).collect();
        Record::from_names(names, values)
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
                self.names = NameList::from(names);
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
            names: names.list().clone(),
            values,
        })
    }

    /// Whether this record's names are `names`' own list, not an equal copy: one pointer
    /// compared. A reader that keeps the list of a record that [`Record::has_names`] matched
    /// by value meets the rows after it at this cost (the rows a query reads from one layout
    /// share one list, once the layout has served a few dozen rows).
    pub fn shares_names(&self, names: &FieldNames) -> bool {
        self.names.same_list(names.list())
    }

    /// Whether another holder (a [`FieldNames`], other records) shares this record's names.
    pub(crate) fn names_are_shared(&self) -> bool {
        self.names.is_shared()
    }

    /// Whether this record's names are an interned list (`name_list.rs`).
    #[cfg(test)]
    pub(crate) fn names_are_interned(&self) -> bool {
        self.names_are_lasting()
    }

    /// Whether its names are a list kept for the life of the process, as the rows a query
    /// reads of a layout that has served a few dozen rows have: a reader may keep the list at
    /// no cost (no reference count) and know the rows after it that share it by one pointer
    /// compared ([`Record::shares_names`]).
    pub fn names_are_lasting(&self) -> bool {
        matches!(self.names, NameList::Interned(_))
    }

    /// A record of `fields`, which the caller has checked are in strictly ascending name
    /// order (a decoder that checked the stored order).
    pub(crate) fn from_sorted(fields: Vec<(Name, Value)>) -> Record {
        debug_assert!(fields.windows(2).all(|w| w[0].0 < w[1].0));
        let (names, values): (Vec<Name>, Vec<Value>) = fields.into_iter().unzip();
        Record {
            names: NameList::from(names),
            values,
        }
    }

    /// A record of `names` (strictly ascending, checked by the caller) and their `values`,
    /// the names shared with every other record of them.
    pub(crate) fn from_names(names: NameList, values: Vec<Value>) -> Record {
        debug_assert_eq!(names.len(), values.len());
        debug_assert!(names.windows(2).all(|w| w[0] < w[1]));
        Record { names, values }
    }

    /// Its names' list.
    pub(crate) fn name_list(&self) -> &NameList {
        &self.names
    }

    /// Its values, for a reader that builds the next record in their buffers.
    pub(crate) fn into_values(self) -> Vec<Value> {
        self.values
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
        self.names = NameList::from(names);
        Some(self.values.remove(i))
    }

    /// The fields in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names.iter().map(|k| &**k).zip(&self.values)
    }

    /// Its values, in its names' order ([`Record::field_names`]).
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Its field names, as a list it shares (a pointer copied, or a count taken): a reader
    /// that maps each name to a place of its own once keeps the list, and asks
    /// [`Record::has_names`] of the records after.
    pub fn field_names(&self) -> FieldNames {
        FieldNames::from_list(self.names.clone())
    }

    /// Whether its field names are `names`: at once when they are the very list (the rows a
    /// query reads from one layout share theirs), else compared name by name.
    ///
    /// ```
    /// use strata::{FieldNames, Record, Value, record};
    /// let names = FieldNames::new(["id", "town"])?;
    /// let row = Record::with_names(&names, vec![Value::Int(7), Value::from("Ely")])?;
    /// assert!(row.has_names(&names));
    /// assert_eq!(row.values(), [Value::Int(7), Value::from("Ely")]);
    /// assert!(record! { "id" => 8, "town" => "Ayr" }.has_names(&row.field_names()));
    /// assert!(!record! { "id" => 8 }.has_names(&names));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn has_names(&self, names: &FieldNames) -> bool {
        self.names == *names.list()
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
        // Sized once (a few bytes over): growing it reallocated, and `realloc` takes the
        // allocator's arena lock, where committing threads slept.
        let names: usize = self.names.iter().map(|name| name.len() + 2).sum();
        let values: usize = self.values.iter().map(value_len).sum();
        let mut out = Vec::with_capacity(12 + names + self.values.len() * 4 + values);
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

    /// The names section of the stored form (`count:varint names_len:varint names`): what a
    /// version-2 record holds after its version byte, and what a table's layout stores once
    /// for its version-3 rows ([`Layouts`]).
    pub fn names_section(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.names.iter().map(|n| 1 + n.len()).sum::<usize>());
        self.put_names_section(&mut out);
        out
    }

    /// About how many bytes the value ends and the values take (a capacity to reserve).
    pub(crate) fn values_len_hint(&self) -> usize {
        self.values.len() * 2 + self.values.iter().map(value_len).sum::<usize>()
    }

    fn put_head(&self, out: &mut Vec<u8>) {
        out.push(RECORD_VERSION);
        self.put_names_section(out);
    }

    fn put_names_section(&self, out: &mut Vec<u8>) {
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
        out.reserve(count * width + values_len);
        let mut end = 0;
        for value in &self.values {
            end += value_len(value);
            // Fixed-size copies: a slice of a run-time width was a `memmove` call per field.
            match width {
                1 => out.push(end as u8),
                2 => out.extend_from_slice(&(end as u16).to_le_bytes()),
                _ => out.extend_from_slice(&(end as u32).to_le_bytes()),
            }
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
    ///
    /// The names of the last record a thread decoded are kept for its next one: a record
    /// with the same names shares their list (counted on a line only this thread's records
    /// touch) instead of allocating each name and the list again. A point read of a row of
    /// two fields spent a third of its decode in those allocations (`perf`, read-modify-write
    /// transactions).
    ///
    /// A version-3 record (a table's row, which names its table's layout instead of its
    /// fields) does not decode here ([`RecordError::UnknownLayout`]): a table's rows are read
    /// through the table ([`Layouts::decode`]).
    pub fn decode(bytes: &[u8]) -> Result<Record, RecordError> {
        Record::decode_cached(bytes, &NONE)
    }

    /// Parses a stored record of a table whose layouts are `layouts` (a version-3 one,
    /// which names its layout instead of its fields; [`Layouts::decode`]).
    pub(crate) fn decode_laid_out(bytes: &[u8], layouts: &Layouts) -> Result<Record, RecordError> {
        Record::decode_cached(bytes, layouts)
    }

    fn decode_cached(bytes: &[u8], layouts: &Layouts) -> Result<Record, RecordError> {
        thread_local! {
            static NAMES: std::cell::RefCell<Names> = std::cell::RefCell::default();
        }
        let uncached = || Record::decode_where(bytes, layouts, &mut Names::default(), |_| true);
        // Without the cache when it is in use (not reentrant) or being destroyed (a decode in
        // another thread local's destructor): never worth a panic.
        NAMES
            .try_with(|names| match names.try_borrow_mut() {
                Ok(mut names) => Record::decode_where(bytes, layouts, &mut names, |_| true),
                Err(_) => uncached(),
            })
            .unwrap_or_else(|_| uncached())
    }
}

/// The names of the rows decoded last, by position: a row whose field at position `i` has the
/// same name as the last row's shares it (one compare, no allocation, no UTF-8 check), and a
/// row with all of the last row's names shares their list.
#[derive(Default)]
pub(crate) struct Names {
    recent: Vec<Name>,
    /// The list of the first names of `recent`, as many as the last row had.
    list: Option<NameList>,
}

impl Names {
    /// Makes `bytes` the name at position `i` (at most `recent.len()`). Returns whether it
    /// already was.
    fn learn(&mut self, i: usize, bytes: &[u8]) -> Result<bool, RecordError> {
        if let Some(known) = self.recent.get(i)
            && known.as_bytes() == bytes
        {
            return Ok(true);
        }
        let name: Name = std::str::from_utf8(bytes)
            .map_err(|_| RecordError::NotUtf8)?
            .into();
        if self.list.as_ref().is_some_and(|list| list.len() > i) {
            self.list = None;
        }
        if i < self.recent.len() {
            self.recent[i] = name;
        } else {
            self.recent.push(name);
        }
        Ok(false)
    }

    /// The list of the first `count` names, all learned for the row just decoded.
    fn list(&mut self, count: usize) -> NameList {
        match &self.list {
            Some(list) if list.len() == count => list.clone(),
            _ => {
                let list = NameList::from(self.recent[..count].to_vec());
                self.list = Some(list.clone());
                list
            }
        }
    }
}

impl Record {
    /// Parses only the fields named in `wanted` (sorted and without repeats), skipping the
    /// other values without building them: what the statistics collector reads of every row
    /// a flush writes. The header, the names and their order are checked as [`Record::decode`]
    /// checks them; a skipped field's name and string are not checked for UTF-8.
    pub fn decode_only(bytes: &[u8], wanted: &[String]) -> Result<Record, RecordError> {
        Record::decode_where(bytes, &NONE, &mut Names::default(), |name| {
            wanted.binary_search_by(|w| w.as_bytes().cmp(name)).is_ok()
        })
    }

    /// Parses a stored record, building the fields `keep` accepts and skipping the others.
    fn decode_where(
        bytes: &[u8],
        layouts: &Layouts,
        names: &mut Names,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Result<Record, RecordError> {
        let mut values = Vec::new();
        walk(bytes, layouts, |name, r| {
            if keep(name) {
                if values.is_empty() {
                    values.reserve_exact(names.recent.len().max(4));
                }
                names.learn(values.len(), name)?;
                values.push(r.value()?);
            } else {
                r.skip_value()?;
            }
            Ok(false)
        })?;
        // `walk` checked that the names ascend.
        Ok(Record::from_names(names.list(values.len()), values))
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
            write!(f, "{k}: {}", v.sql_literal())?;
        }
        f.write_str("}")
    }
}

/// For the `record` fuzz target: reads `bytes` as queries read stored rows (a
/// [`RowReader`](crate::table::codec::row_reader) testing some fields and building some, twice, so
/// the second read goes through the layout the first learnt) and reports where that disagrees
/// with [`Record::decode`]: a value tested or built differently, a row built whole that the
/// decode refuses, or a row the decode accepts that the reader refuses.
#[doc(hidden)]
pub fn row_reader_disagreement(bytes: &[u8]) -> Option<String> {
    row_reader_disagreement_in(bytes, &NONE)
}

/// [`row_reader_disagreement`] for a row of a table whose layouts are `layouts` (decoded
/// with [`Layouts::decode`]).
#[doc(hidden)]
pub fn row_reader_disagreement_in(bytes: &[u8], layouts: &Arc<Layouts>) -> Option<String> {
    use crate::table::codec::row_reader::RowReader;
    let decoded = layouts.decode(bytes);
    let readers: [(&[&str], Option<Vec<String>>); 3] = [
        (&["a"], Some(vec!["b".to_owned()])),
        (&["b", "a"], None),
        (&[], None),
    ];
    for (tested, kept) in readers {
        let mut reader = RowReader::new(tested, kept.clone()).with_layouts(layouts);
        // Predicates on the tested fields, bounded by the row's own values where it has them
        // (so equalities hold), decided on bytes where they can be.
        let own = |f: &str, other: Value| match &decoded {
            Ok(r) if !r.value(f).is_null() => r.value(f).clone(),
            _ => other,
        };
        let predicates: Vec<strata_planner::Predicate> = match tested {
            [a] => vec![strata_planner::Predicate::eq(a, own(a, Value::from("x")))],
            [b, a] => vec![
                strata_planner::Predicate::ge(b, own(b, Value::Int(0))),
                strata_planner::Predicate::lt(a, own(a, Value::from("m"))),
            ],
            _ => Vec::new(),
        };
        let mut filter = RowReader::new(tested, kept.clone()).with_layouts(layouts);
        for _ in 0..2 {
            let passes = filter.test_passes(bytes, &predicates);
            if let (Ok(record), Ok(passes)) = (&decoded, &passes) {
                let expected = predicates.iter().all(|p| p.matches(record.value(&p.field)));
                if *passes != expected {
                    return Some(format!("filtered {passes}, decoded {expected}"));
                }
            }
            if decoded.is_ok() && passes.is_err() {
                return Some(format!("filter refused a record: {passes:?}"));
            }
        }
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
    /// A version-3 record naming a layout its table does not have (or read outside its
    /// table); also a layout list that cannot be (two numbers for one set of names, or more
    /// than the limit).
    #[error("unknown row layout {0}")]
    UnknownLayout(u64),
}

#[cfg(test)]
mod tests;
