//! Fact rows and index entries as key-value pairs (`docs/formats/records.md`).
//!
//! - Fact row: key = tuple(primary-key values), value = the record.
//! - Index entry: key = tuple(index values) ‖ tuple(primary-key values); value =
//!   `version:u8 (= 1)  shard:varint  [record]` — no record for `KeysOnly`, the `Include`d
//!   fields for `Include`, the whole record for `All`.

use std::sync::Arc;

use strata_planner::{Predicate, Projection, Value};

use crate::error::{Corruption, Error, Result};
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::format::{ENTRY_VERSION, MAX_INDEX_KEY_BYTES, MAX_PRIMARY_KEY_BYTES};
use crate::table::key::{KeyError, decode_key, decode_value, encode_key, encode_value};
use crate::table::record::{Names, Reader, Record, RecordError, put_varint};
use crate::table::row_reader::RowReader;

/// The error for damaged bytes in column family `cf`.
/// A key of family `cf` that does not decode.
pub(crate) fn key_corrupt(cf: &str, key: &[u8], e: KeyError) -> Error {
    Error::corrupt(cf, key, Corruption::Key(e))
}

/// A record or entry stored at `key` in family `cf` that does not decode.
pub(crate) fn record_corrupt(cf: &str, key: &[u8], e: RecordError) -> Error {
    Error::corrupt(cf, key, Corruption::Record(e))
}

/// Checks that `values` can be a primary key of `def` and encodes them: one value per key
/// field, none `NULL` or a float (1 and 1.0 would be two keys that print alike; NaN would be
/// a key no equality finds).
pub fn encode_primary_key(def: &TableDef, values: &[&Value]) -> Result<Vec<u8>> {
    if values.len() != def.primary_key.len() {
        return Err(Error::InvalidArgument(format!(
            "table {:?} has a primary key of {} fields ({}), got {} values",
            def.name,
            def.primary_key.len(),
            def.primary_key.join(", "),
            values.len()
        )));
    }
    for (field, v) in def.primary_key.iter().zip(values) {
        match v {
            Value::Null => {
                return Err(Error::InvalidArgument(format!(
                    "primary-key field {field:?} of table {:?} is missing or NULL",
                    def.name
                )));
            }
            Value::Float(_) => {
                return Err(Error::InvalidArgument(format!(
                    "primary-key field {field:?} of table {:?} is a float; keys are integers, \
                     strings, bytes or booleans",
                    def.name
                )));
            }
            _ => {}
        }
    }
    let key = encode_key(values.iter().copied());
    if key.len() > MAX_PRIMARY_KEY_BYTES {
        return Err(Error::TooLarge {
            what: "primary key",
            len: key.len(),
            max: MAX_PRIMARY_KEY_BYTES,
        });
    }
    Ok(key)
}

/// The primary key of `record` in `def`, encoded.
pub fn record_key(def: &TableDef, record: &Record) -> Result<Vec<u8>> {
    let values: Vec<&Value> = def.primary_key.iter().map(|f| record.value(f)).collect();
    encode_primary_key(def, &values)
}

/// The entry `record` (whose encoded primary key is `pk`, in fact shard `shard`) has in
/// `index`.
pub fn index_entry(
    index: &IndexDef,
    shard: usize,
    pk: &[u8],
    record: &Record,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut key = Vec::with_capacity(pk.len() + 16 * index.fields.len());
    for f in &index.fields {
        encode_value(record.value(f), &mut key);
    }
    key.extend(pk);
    if key.len() > MAX_INDEX_KEY_BYTES {
        return Err(Error::TooLarge {
            what: "index key",
            len: key.len(),
            max: MAX_INDEX_KEY_BYTES,
        });
    }
    let mut value = vec![ENTRY_VERSION];
    put_varint(&mut value, shard as u64);
    match &index.projection {
        Projection::KeysOnly => {}
        Projection::Include(fields) => record.project(fields).encode_into(&mut value),
        Projection::All => record.encode_into(&mut value),
    }
    Ok((key, value))
}

/// A decoded index entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The index fields' values.
    pub values: Vec<Value>,
    /// The primary key's values.
    pub primary_key: Vec<Value>,
    /// The encoded primary key (the fact row's key).
    pub pk_bytes: Vec<u8>,
    /// The fact row's shard.
    pub shard: u64,
    /// What the entry carries: the included fields or the whole record.
    pub payload: Option<Record>,
}

/// Decodes an entry of `index` read from column family `cf`.
pub fn decode_entry(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    key: &[u8],
    value: &[u8],
) -> Result<Entry> {
    decode_entry_with(def, index, cf, key, value, &mut Names::default())
}

/// [`decode_entry`], the payload's field names shared with the entries decoded before it.
pub(crate) fn decode_entry_with(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    key: &[u8],
    value: &[u8],
    names: &mut Names,
) -> Result<Entry> {
    let mut parts = entry_parts(def, index, cf, key, value)?;
    let payload = match parts.payload {
        Some(bytes) => {
            Some(Record::decode_shared(bytes, names).map_err(|e| record_corrupt(cf, key, e))?)
        }
        None => None,
    };
    Ok(Entry {
        primary_key: parts.values.split_off(parts.fields),
        values: parts.values,
        pk_bytes: key[parts.pk_at..].to_vec(),
        shard: parts.shard,
        payload,
    })
}

/// An index entry split into its parts, the payload not yet decoded.
struct EntryParts<'a> {
    /// The index's values, then the primary key's.
    values: Vec<Value>,
    /// How many of `values` are the index's.
    fields: usize,
    /// Where the primary key starts in the entry's key.
    pk_at: usize,
    shard: u64,
    payload: Option<&'a [u8]>,
}

fn entry_parts<'a>(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    key: &[u8],
    value: &'a [u8],
) -> Result<EntryParts<'a>> {
    // The index's values and the primary key's, in one vector.
    let (n, m) = (index.fields.len(), def.primary_key.len());
    let mut values = Vec::with_capacity(n + m);
    let (mut at, mut used) = (0, 0);
    for i in 0..n + m {
        if i == n {
            used = at;
        }
        let rest = key.get(at..).unwrap_or_default();
        let (v, len) = decode_value(rest).map_err(|e| key_corrupt(cf, key, e))?;
        values.push(v);
        at += len;
    }
    if m == 0 {
        used = at;
    }
    if at != key.len() {
        // What a whole-key decode of the primary key reports: its arity.
        let e = decode_key(&key[used..], m)
            .err()
            .unwrap_or(KeyError::Truncated);
        return Err(key_corrupt(cf, key, e));
    }
    let mut r = Reader {
        bytes: value,
        at: 0,
    };
    let version = r.byte().map_err(|e| record_corrupt(cf, key, e))?;
    if version != ENTRY_VERSION {
        return Err(record_corrupt(cf, key, RecordError::Version(version)));
    }
    let shard = r.varint().map_err(|e| record_corrupt(cf, key, e))?;
    let rest = &value[r.at..];
    let payload = match (&index.projection, rest.is_empty()) {
        (Projection::KeysOnly, true) => None,
        (Projection::KeysOnly, false) => {
            return Err(record_corrupt(cf, key, RecordError::TrailingBytes));
        }
        (_, _) => Some(rest),
    };
    Ok(EntryParts {
        values,
        fields: n,
        pk_at: used,
        shard,
        payload,
    })
}

/// What a query needs of the fields an index entry's key holds: the index's fields, then the
/// primary key's, with their names shared by every row built from an entry.
#[derive(Default)]
pub(crate) struct KeyFields {
    names: Vec<Arc<str>>,
    /// Each one's place among the query's tested fields.
    tested: Vec<Option<usize>>,
    /// Whether the query returns it.
    kept: Vec<bool>,
}

impl KeyFields {
    /// The key fields of index `ix` of `def`, for a query read through `reader`.
    pub(crate) fn new(def: &TableDef, ix: usize, reader: &RowReader) -> KeyFields {
        let fields = def.indexes[ix].fields.iter().chain(&def.primary_key);
        let names: Vec<Arc<str>> = fields.map(|f| Arc::from(f.as_str())).collect();
        KeyFields {
            tested: names.iter().map(|n| reader.tested_slot(n)).collect(),
            kept: names.iter().map(|n| reader.keeps(n)).collect(),
            names,
        }
    }
}

/// The record a covering entry of `index` (read from family `cf`) gives a query, if it passes
/// `predicates`: its carried fields, its index fields and its primary key, only those the
/// `reader` keeps. The predicates are tested on the values before anything is built.
pub(crate) fn covering_row(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    (key, value): (&[u8], &[u8]),
    fixed: &KeyFields,
    reader: &mut RowReader,
    predicates: &[Predicate],
) -> Result<Option<Record>> {
    let parts = entry_parts(def, index, cf, key, value)?;
    match parts.payload {
        Some(payload) => reader
            .test(payload)
            .map_err(|e| record_corrupt(cf, key, e))?,
        None => reader.clear_tested(),
    }
    // The key's fields after the payload's: an included field that is also an index field
    // reads the same either way.
    let mut values = parts.values;
    for ((slot, kept), v) in fixed.tested.iter().zip(&fixed.kept).zip(&mut values) {
        if let Some(slot) = slot {
            // A tested field the query does not return is moved, not copied.
            let tested = if *kept {
                v.clone()
            } else {
                std::mem::replace(v, Value::Null)
            };
            reader.set_tested(*slot, tested);
        }
    }
    if !reader.passes(predicates) {
        return Ok(None);
    }
    let key_fields = fixed.kept.iter().filter(|k| **k).count();
    let mut fields = match parts.payload {
        Some(payload) => reader
            .build_reserving(payload, key_fields)
            .map_err(|e| record_corrupt(cf, key, e))?
            .into_fields(),
        None => Vec::with_capacity(key_fields),
    };
    for ((name, kept), v) in fixed.names.iter().zip(&fixed.kept).zip(values) {
        // Stored records hold no NULL fields: NULL is how a missing field reads. Each key
        // field goes in at its place among the payload's sorted fields (a sort of the whole
        // row was a tenth of a covering read); one the payload also carries reads the same.
        if *kept
            && !v.is_null()
            && let Err(at) = fields.binary_search_by(|(n, _)| (**n).cmp(&**name))
        {
            fields.insert(at, (Arc::clone(name), v));
        }
    }
    Ok(Some(Record::from_sorted(fields)))
}
