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
use crate::table::record::{Names, Record, RecordError};
use crate::table::record_codec::{Reader, put_varint};
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

/// Whether a stored index entry value says what the `expected` one (just derived from the
/// row) says: the same bytes, or the same entry version and shard with payloads that decode to
/// the same record — a payload written in an older record version holds the same fields in
/// other bytes.
pub(crate) fn same_entry_value(stored: &[u8], expected: &[u8]) -> bool {
    if stored == expected {
        return true;
    }
    let head = |bytes: &[u8]| -> Option<(u8, u64, usize)> {
        let mut r = Reader { bytes, at: 0 };
        let version = r.byte().ok()?;
        let shard = r.varint().ok()?;
        Some((version, shard, r.at))
    };
    match (head(stored), head(expected)) {
        (Some((v1, s1, a1)), Some((v2, s2, a2))) if v1 == v2 && s1 == s2 => {
            let (p1, p2) = (&stored[a1..], &expected[a2..]);
            !p1.is_empty()
                && !p2.is_empty()
                && matches!((Record::decode(p1), Record::decode(p2)), (Ok(a), Ok(b)) if a == b)
        }
        _ => false,
    }
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
    /// How the rows of the payload layouts and key fields seen last are put together.
    plans: Vec<RowPlan>,
}

/// How a covering row is put together from a payload of one layout and the key fields that
/// are kept and not `NULL`: the row's names, shared by every row of the plan, and where each
/// value comes from.
struct RowPlan {
    payload: Arc<[Arc<str>]>,
    /// Bit `j`: key field `j` is in the row.
    key_mask: u64,
    names: Arc<[Arc<str>]>,
    from: Vec<Part>,
}

#[derive(Clone, Copy)]
enum Part {
    Payload(usize),
    Key(usize),
}

/// How many row plans a covering read remembers.
/// TUNING: a plan per payload layout and set of non-NULL key fields; a few cover the rows of
/// a table whose optional fields are missing in a few combinations.
const ROW_PLANS: usize = 8;

impl KeyFields {
    /// The key fields of index `ix` of `def`, for a query read through `reader`.
    pub(crate) fn new(def: &TableDef, ix: usize, reader: &RowReader) -> KeyFields {
        let fields = def.indexes[ix].fields.iter().chain(&def.primary_key);
        let names: Vec<Arc<str>> = fields.map(|f| Arc::from(f.as_str())).collect();
        KeyFields {
            tested: names.iter().map(|n| reader.tested_slot(n)).collect(),
            kept: names.iter().map(|n| reader.keeps(n)).collect(),
            names,
            plans: Vec::new(),
        }
    }

    /// The plan for a payload of `payload` names and the key fields of `key_mask`.
    fn plan(&mut self, payload: &Arc<[Arc<str>]>, key_mask: u64) -> &RowPlan {
        let found = self
            .plans
            .iter()
            .position(|p| p.key_mask == key_mask && *p.payload == **payload);
        let at = match found {
            Some(at) => at,
            None => {
                let mut merged: Vec<(Arc<str>, Part)> = payload
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (Arc::clone(n), Part::Payload(i)))
                    .collect();
                for (j, name) in self.names.iter().enumerate() {
                    // A field the payload also carries reads the same from either.
                    if key_mask & (1 << j) != 0
                        && let Err(at) = merged.binary_search_by(|(n, _)| n.cmp(name))
                    {
                        merged.insert(at, (Arc::clone(name), Part::Key(j)));
                    }
                }
                if self.plans.len() == ROW_PLANS {
                    self.plans.clear();
                }
                self.plans.push(RowPlan {
                    payload: Arc::clone(payload),
                    key_mask,
                    names: merged.iter().map(|(n, _)| Arc::clone(n)).collect(),
                    from: merged.into_iter().map(|(_, f)| f).collect(),
                });
                self.plans.len() - 1
            }
        };
        &self.plans[at]
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
    fixed: &mut KeyFields,
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
    let mut key_mask = 0u64;
    for (j, ((slot, kept), v)) in fixed
        .tested
        .iter()
        .zip(&fixed.kept)
        .zip(&mut values)
        .enumerate()
    {
        // Stored records hold no NULL fields: NULL is how a missing field reads.
        let in_row = *kept && !v.is_null();
        if in_row {
            key_mask |= 1 << j;
        }
        if let Some(slot) = slot {
            // A tested field the row does not hold is moved, not copied.
            let tested = if in_row {
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
    let (payload_names, mut payload_values) = match parts.payload {
        Some(payload) => reader
            .build_parts(payload)
            .map_err(|e| record_corrupt(cf, key, e))?,
        None => (Arc::from([]), Vec::new()),
    };
    let plan = fixed.plan(&payload_names, key_mask);
    let row = plan
        .from
        .iter()
        .map(|from| match *from {
            Part::Payload(i) => std::mem::replace(&mut payload_values[i], Value::Null),
            Part::Key(j) => std::mem::replace(&mut values[j], Value::Null),
        })
        .collect();
    Ok(Some(Record::from_names(Arc::clone(&plan.names), row)))
}
