//! Fact rows and index entries as key-value pairs (`docs/formats/records.md`).
//!
//! - Fact row: key = tuple(primary-key values), value = the record.
//! - Index entry: key = tuple(index values) ‖ tuple(primary-key values); value =
//!   `version:u8 (= 1)  shard:varint  [record]` — no record for `KeysOnly`, the `Include`d
//!   fields for `Include`, the whole record for `All`; in a table of key format 2, a
//!   keys-only entry of shard 0 has an empty value.

use strata_planner::{Projection, Value};

use crate::error::{Corruption, Error, Result};
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::codec::format::{
    ENTRY_VERSION, MAX_INDEX_KEY_BYTES, MAX_KEY_FIELDS, MAX_PRIMARY_KEY_BYTES,
};
use crate::table::codec::key::{KeyError, KeyFormat, decode_key, decode_value_into, value_len};
use crate::table::codec::record::{Record, RecordError};
use crate::table::codec::record_codec::{Reader, put_varint};

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
    let key = def.key_format().encode_key_of(values);
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
    if let [field] = def.primary_key.as_slice() {
        return encode_primary_key(def, &[record.value(field)]);
    }
    let values: Vec<&Value> = def.primary_key.iter().map(|f| record.value(f)).collect();
    encode_primary_key(def, &values)
}

/// The entry `record` (whose encoded primary key is `pk`, in fact shard `shard`) has in
/// `index` of a table whose keys are of format `keys`.
pub fn index_entry(
    keys: KeyFormat,
    index: &IndexDef,
    shard: usize,
    pk: &[u8],
    record: &Record,
) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut key = Vec::with_capacity(pk.len() + 16 * index.fields.len());
    for f in &index.fields {
        keys.encode_value(record.value(f), &mut key);
    }
    key.extend(pk);
    if key.len() > MAX_INDEX_KEY_BYTES {
        return Err(Error::TooLarge {
            what: "index key",
            len: key.len(),
            max: MAX_INDEX_KEY_BYTES,
        });
    }
    if keys != KeyFormat::F64 && shard == 0 && index.projection == Projection::KeysOnly {
        // Key format 2's tables: the head `01 00` of a keys-only entry in shard 0 is left out
        // (two bytes of an entry of about ten).
        return Ok((key, Vec::new()));
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
    match (entry_head(stored), entry_head(expected)) {
        (Some((v1, s1, a1)), Some((v2, s2, a2))) if v1 == v2 && s1 == s2 => {
            let (p1, p2) = (&stored[a1..], &expected[a2..]);
            // A keys-only entry with its head or without it (key format 2 leaves it out).
            (p1.is_empty() && p2.is_empty())
                || (!p1.is_empty()
                    && !p2.is_empty()
                    && matches!((Record::decode(p1), Record::decode(p2)), (Ok(a), Ok(b)) if a == b))
        }
        _ => false,
    }
}

/// The head of an index entry's value: its version, its fact shard and where its payload
/// starts; `None` if the head does not decode. An empty value is a keys-only entry of shard 0
/// (key format 2 leaves its head out).
pub(crate) fn entry_head(value: &[u8]) -> Option<(u8, u64, usize)> {
    if value.is_empty() {
        return Some((ENTRY_VERSION, 0, 0));
    }
    let mut r = Reader {
        bytes: value,
        at: 0,
    };
    let version = r.byte().ok()?;
    let shard = r.varint().ok()?;
    Some((version, shard, r.at))
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
    let mut values = Vec::with_capacity(index.fields.len() + def.primary_key.len());
    let parts = entry_parts(
        def,
        index,
        cf,
        (key, value),
        (0, 0),
        ALL_FIELDS,
        Some(&mut values),
    )?;
    let payload = match parts.payload {
        Some(bytes) => Some(Record::decode(bytes).map_err(|e| record_corrupt(cf, key, e))?),
        None => None,
    };
    Ok(Entry {
        primary_key: values.split_off(index.fields.len()),
        values,
        pk_bytes: key[parts.pk_at..].to_vec(),
        shard: parts.shard,
        payload,
    })
}

/// An index entry split into its parts, the payload not yet decoded; its key's values went
/// to the caller's vector.
pub(crate) struct EntryParts<'a> {
    /// Where the primary key starts in the entry's key.
    pub(crate) pk_at: usize,
    pub(crate) shard: u64,
    pub(crate) payload: Option<&'a [u8]>,
}

/// Every key field of an entry, for [`entry_parts`].
pub(crate) const ALL_FIELDS: u64 = u64::MAX;

// An entry's key fields (an index's, then the primary key's) are named by the bits of a
// `u64`.
const _: () = assert!(2 * MAX_KEY_FIELDS <= 64);

/// Where the row an entry of `index` (read from family `cf`) names is: its fact shard and
/// where its primary key starts in `key`. The key's values are stepped over, not built
/// (the first `skip` of them, `skip_bytes` bytes, at once: see [`entry_parts`]).
///
/// [`entry_parts`] without values to fill, in one plain walk: the slots' machinery there,
/// unused here, was ~80 of the ~200 instructions an entry of a fetching index read cost
/// (callgrind, the day's customers).
#[inline]
pub(crate) fn entry_target(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    (key, value): (&[u8], &[u8]),
    (skip, skip_bytes): (usize, usize),
) -> Result<(u64, usize)> {
    let (n, m) = (index.fields.len(), def.primary_key.len());
    debug_assert!(skip <= n);
    let (mut at, mut used) = (skip_bytes.min(key.len()), 0);
    for i in skip..n + m {
        if i == n {
            used = at;
        }
        let rest = key.get(at..).unwrap_or_default();
        at += value_len(rest).map_err(|e| key_corrupt(cf, key, e))?;
    }
    if m == 0 {
        used = at;
    }
    if at != key.len() {
        return Err(pk_arity_error(cf, key, used, m));
    }
    let (shard, _) = entry_value(index, cf, key, value)?;
    Ok((shard, used))
}

/// The error for an entry `key` whose values do not end where it does: what a whole-key
/// decode of its primary key (from `used`, `m` fields) reports.
#[cold]
fn pk_arity_error(cf: &str, key: &[u8], used: usize, m: usize) -> crate::Error {
    let e = decode_key(&key[used..], m)
        .err()
        .unwrap_or(KeyError::Truncated);
    key_corrupt(cf, key, e)
}

/// The fact shard an entry of `index` (its key `key`) names, and the payload its `value`
/// carries (`None` for a keys-only index).
#[inline(always)]
fn entry_value<'a>(
    index: &IndexDef,
    cf: &str,
    key: &[u8],
    value: &'a [u8],
) -> Result<(u64, Option<&'a [u8]>)> {
    let (shard, rest) = if value.is_empty() && index.projection == Projection::KeysOnly {
        // Key format 2's keys-only entry of shard 0.
        (0, value)
    } else {
        let mut r = Reader {
            bytes: value,
            at: 0,
        };
        let version = r.byte().map_err(|e| record_corrupt(cf, key, e))?;
        if version != ENTRY_VERSION {
            return Err(record_corrupt(cf, key, RecordError::Version(version)));
        }
        let shard = r.varint().map_err(|e| record_corrupt(cf, key, e))?;
        (shard, &value[r.at..])
    };
    let payload = match (&index.projection, rest.is_empty()) {
        (Projection::KeysOnly, true) => None,
        (Projection::KeysOnly, false) => {
            return Err(record_corrupt(cf, key, RecordError::TrailingBytes));
        }
        (_, _) => Some(rest),
    };
    Ok((shard, payload))
}

/// The parts of the entry `key`, `value` of `index`. Its key's values — the index's, then
/// the primary key's — go to `values` when given: those of `need` (bit `j` for the `j`-th)
/// decoded, the others stepped over and `NULL`; without `values` (a fetch, which only needs
/// where the primary key starts) every value is stepped over. The first `skip.0` values,
/// `skip.1` bytes, are the ones every key of the range read starts with (checked when the
/// range was opened, [`shared_prefix`](crate::table::codec::key::shared_prefix)), none of them
/// needed: they are stepped over at once.
pub(crate) fn entry_parts<'a>(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    (key, value): (&[u8], &'a [u8]),
    (skip, skip_bytes): (usize, usize),
    need: u64,
    values: Option<&mut Vec<Value>>,
) -> Result<EntryParts<'a>> {
    let (n, m) = (index.fields.len(), def.primary_key.len());
    debug_assert!(skip <= n);
    debug_assert!(need & ((1 << skip) - 1) == 0);
    debug_assert!(need == 0 || values.is_some());
    let (mut at, mut used) = (skip_bytes.min(key.len()), 0);
    // The vector is the last entry's: written over, not rebuilt. The skipped values are
    // neither needed nor read: whatever an earlier entry left there stays.
    let mut slots = values.map(|values| {
        values.resize_with(n + m, || Value::Null);
        values.iter_mut()
    });
    for i in skip..n + m {
        if i == n {
            used = at;
        }
        let rest = key.get(at..).unwrap_or_default();
        let slot = slots
            .as_mut()
            .and_then(|s| s.nth(if i == skip { skip } else { 0 }));
        at += match slot {
            Some(slot) if need & (1 << i) != 0 => decode_value_into(rest, slot),
            Some(slot) => {
                if !slot.is_null() {
                    *slot = Value::Null;
                }
                value_len(rest)
            }
            None => value_len(rest),
        }
        .map_err(|e| key_corrupt(cf, key, e))?;
    }
    if m == 0 {
        used = at;
    }
    if at != key.len() {
        return Err(pk_arity_error(cf, key, used, m));
    }
    let (shard, payload) = entry_value(index, cf, key, value)?;
    Ok(EntryParts {
        pk_at: used,
        shard,
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::catalog::{IndexState, Maintenance, Scope, StatisticsOptions};

    fn table(primary_key: &[&str], index: IndexDef) -> TableDef {
        TableDef {
            format: 3,
            id: 7,
            name: "t".into(),
            primary_key: primary_key.iter().map(|f| f.to_string()).collect(),
            shards: 4,
            keys: KeyFormat::NEWEST.number(),
            indexes: vec![index],
            statistics: StatisticsOptions::default(),
            columns: Vec::new(),
        }
    }

    fn index(fields: &[&str], projection: Projection) -> IndexDef {
        IndexDef {
            id: 8,
            name: "ix".into(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
            projection,
            state: IndexState::Ready,
            scope: Scope::Local,
            maintenance: Maintenance::Sync,
            unique: false,
        }
    }

    /// `entry_target` finds what `entry_parts` finds, from every number of leading values
    /// skipped, and refuses what it refuses with the same error.
    #[test]
    fn an_entrys_target_is_what_its_parts_say_and_a_damaged_key_the_same_error() {
        let keys = KeyFormat::NEWEST;
        for projection in [Projection::KeysOnly, Projection::Include(vec!["c".into()])] {
            for pk in [&["id"][..], &["id", "n"]] {
                let ix = index(&["a", "b"], projection.clone());
                let def = table(pk, ix.clone());
                let record: Record = [
                    ("a", Value::from("town")),
                    ("b", Value::Int(-3)),
                    ("c", Value::Float(1.5)),
                    ("id", Value::Int(42)),
                    ("n", Value::from("x")),
                ]
                .into_iter()
                .collect();
                let values: Vec<&Value> = pk.iter().map(|f| record.value(f)).collect();
                let pk_bytes = encode_primary_key(&def, &values).unwrap();
                for shard in [0, 3] {
                    let (key, value) = index_entry(keys, &ix, shard, &pk_bytes, &record).unwrap();
                    let mut first = Vec::new();
                    keys.encode_value(&Value::from("town"), &mut first);
                    let mut two = first.clone();
                    keys.encode_value(&Value::Int(-3), &mut two);
                    for skip in [(0, 0), (1, first.len()), (2, two.len())] {
                        let got = entry_target(&def, &ix, "cf", (&key, &value), skip).unwrap();
                        let parts =
                            entry_parts(&def, &ix, "cf", (&key, &value), skip, 0, None).unwrap();
                        assert_eq!(got, (parts.shard, parts.pk_at));
                        assert_eq!(got, (shard as u64, key.len() - pk_bytes.len()));
                    }
                    // Cut short, a byte too many, a bad entry head: both refuse, alike.
                    let mut long = key.clone();
                    long.push(0);
                    let mut bad_head = value.clone();
                    bad_head.insert(0, 9);
                    let damaged = [
                        (key[..key.len() - 1].to_vec(), value.clone()),
                        (long, value.clone()),
                        (key.clone(), bad_head),
                    ];
                    for (k, v) in &damaged {
                        let got = entry_target(&def, &ix, "cf", (k, v), (0, 0)).unwrap_err();
                        let parts = entry_parts(&def, &ix, "cf", (k, v), (0, 0), 0, None);
                        assert_eq!(
                            got.to_string(),
                            parts.err().unwrap().to_string(),
                            "{k:?} {v:?}"
                        );
                    }
                }
            }
        }
    }
}
