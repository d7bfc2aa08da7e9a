//! Fact rows and index entries as key-value pairs (`docs/formats/records.md`).
//!
//! - Fact row: key = tuple(primary-key values), value = the record.
//! - Index entry: key = tuple(index values) ‖ tuple(primary-key values); value =
//!   `version:u8 (= 1)  shard:varint  [record]` — no record for `KeysOnly`, the `Include`d
//!   fields for `Include`, the whole record for `All`.

use strata_planner::{Projection, Value};

use crate::error::{Corruption, Error, Result};
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::format::{ENTRY_VERSION, MAX_INDEX_KEY_BYTES, MAX_PRIMARY_KEY_BYTES};
use crate::table::key::{KeyError, decode_key, decode_prefix, encode_key, encode_value};
use crate::table::record::{Names, Reader, Record, RecordError, put_varint};

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
    let (values, used) =
        decode_prefix(key, index.fields.len()).map_err(|e| key_corrupt(cf, key, e))?;
    let pk_bytes = &key[used..];
    let primary_key =
        decode_key(pk_bytes, def.primary_key.len()).map_err(|e| key_corrupt(cf, key, e))?;
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
        (_, _) => Some(Record::decode_shared(rest, names).map_err(|e| record_corrupt(cf, key, e))?),
    };
    Ok(Entry {
        values,
        primary_key,
        pk_bytes: pk_bytes.to_vec(),
        shard,
        payload,
    })
}

/// The record an entry stands for when it covers the query: its index fields, its primary
/// key, and its payload (a whole record for `All`).
pub fn covering_record(def: &TableDef, index: &IndexDef, entry: Entry) -> Record {
    if let (Projection::All, Some(record)) = (&index.projection, &entry.payload) {
        return record.clone();
    }
    let mut record = entry.payload.unwrap_or_default();
    for (f, v) in index.fields.iter().zip(entry.values) {
        // Stored records hold no NULL fields: NULL is how a missing field reads.
        if !v.is_null() {
            record.set_str(f, v);
        }
    }
    for (f, v) in def.primary_key.iter().zip(entry.primary_key) {
        record.set_str(f, v);
    }
    record
}
