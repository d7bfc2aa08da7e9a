//! Fact rows and index entries as key-value pairs (`docs/formats/records.md`).
//!
//! - Fact row: key = tuple(primary-key values), value = the record.
//! - Index entry: key = tuple(index values) ‖ tuple(primary-key values); value =
//!   `version:u8 (= 1)  shard:varint  [record]` — no record for `KeysOnly`, the `Include`d
//!   fields for `Include`, the whole record for `All`; in a table of key format 2, a
//!   keys-only entry of shard 0 has an empty value.

use std::sync::{Arc, Mutex};

use strata_planner::{Predicate, Projection, Value};

use crate::error::{Corruption, Error, Result};
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::format::{
    ENTRY_VERSION, MAX_INDEX_KEY_BYTES, MAX_KEY_FIELDS, MAX_PRIMARY_KEY_BYTES,
};
use crate::table::key::{KeyError, KeyFormat, decode_key, decode_value_into, value_len};
use crate::table::name_list::{NameList, interned};
use crate::table::record::{Record, RecordError};
use crate::table::record_codec::{Reader, View, put_varint};
use crate::table::row_reader::{Kept, RowReader, starts_with};

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
struct EntryParts<'a> {
    /// Where the primary key starts in the entry's key.
    pk_at: usize,
    shard: u64,
    payload: Option<&'a [u8]>,
}

/// Every key field of an entry, for [`entry_parts`].
const ALL_FIELDS: u64 = u64::MAX;

// An entry's key fields (an index's, then the primary key's) are named by the bits of a
// `u64`.
const _: () = assert!(2 * MAX_KEY_FIELDS <= 64);

/// Where the row an entry of `index` (read from family `cf`) names is: its fact shard and
/// where its primary key starts in `key`. The key's values are stepped over, not built
/// (the first `skip.0`, `skip.1` bytes, at once: see [`entry_parts`]).
pub(crate) fn entry_target(
    def: &TableDef,
    index: &IndexDef,
    cf: &str,
    (key, value): (&[u8], &[u8]),
    skip: (usize, usize),
) -> Result<(u64, usize)> {
    let parts = entry_parts(def, index, cf, (key, value), skip, 0, None)?;
    Ok((parts.shard, parts.pk_at))
}

/// The parts of the entry `key`, `value` of `index`. Its key's values — the index's, then
/// the primary key's — go to `values` when given: those of `need` (bit `j` for the `j`-th)
/// decoded, the others stepped over and `NULL`; without `values` (a fetch, which only needs
/// where the primary key starts) every value is stepped over. The first `skip.0` values,
/// `skip.1` bytes, are the ones every key of the range read starts with (checked when the
/// range was opened, [`shared_prefix`](crate::table::key::shared_prefix)), none of them
/// needed: they are stepped over at once.
fn entry_parts<'a>(
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
        // What a whole-key decode of the primary key reports: its arity.
        let e = decode_key(&key[used..], m)
            .err()
            .unwrap_or(KeyError::Truncated);
        return Err(key_corrupt(cf, key, e));
    }
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
    Ok(EntryParts {
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
    /// Bit `j`: key field `j` is tested or kept, so an entry's key decodes it.
    need: u64,
    /// The key values of the entry being read.
    values: Vec<Value>,
    /// The names of an entry without a payload.
    no_payload: NameList,
    /// How the rows of the payload layouts and key fields seen last are put together.
    plans: Vec<RowPlan>,
    /// Bit `j`: the query returns key field `j`.
    kept_mask: u64,
    /// The rows of one payload layout, put together without the general path's steps.
    fast: Option<Arc<FastRows>>,
    /// The index read, and the table's fast rows of earlier queries (where new ones go).
    ix: usize,
    cache: Option<Arc<FastRowsCache>>,
    /// Entries in a row the fast rows did not fit; at [`FAST_MISSES`] they are rebuilt.
    fast_misses: u32,
}

/// A covering read's rows of one payload layout, for a query with nothing to re-check and
/// entries whose returned key fields are not `NULL`: each value is decoded straight into its
/// place in the row — no lent key values, no plan search, no [`Kept`]. Any entry it does not
/// fit (another layout, a `NULL` key field, damage) goes the general way, which also gives
/// the error.
struct FastRows {
    /// The payload's head (version, count and names section) byte for byte, where its names
    /// start, and its field count; `None` for entries without a payload.
    head: Option<(Box<[u8]>, usize, usize)>,
    /// For each key field, its place in the row (`None`: stepped over).
    key_at: Vec<Option<usize>>,
    /// `(position in the payload, place in the row)` of each payload field returned.
    payload_at: Vec<(usize, usize)>,
    names: NameList,
}

/// The fast rows the covering reads of a table's last queries built, by index and returned
/// fields: a query of the same shape starts with them, and its first row is not put
/// together the general way (which, with learning the payload's layout, was ~10,000 of a
/// ~120,000-instruction query of ~30 rows).
#[derive(Default)]
pub(crate) struct FastRowsCache(Mutex<Vec<CachedRows>>);

struct CachedRows {
    ix: usize,
    /// The fields returned (`None`: all), sorted.
    kept: Option<Vec<String>>,
    rows: Arc<FastRows>,
}

/// How many index and field combinations a table's cache holds.
/// TUNING: the shapes an application queries a table in are few; the search stays short.
const CACHED_ROWS: usize = 8;

impl FastRowsCache {
    fn get(&self, ix: usize, kept: Option<&[String]>) -> Option<Arc<FastRows>> {
        let cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cached
            .iter()
            .find(|c| c.ix == ix && c.kept.as_deref() == kept)
            .map(|c| Arc::clone(&c.rows))
    }

    fn put(&self, ix: usize, kept: Option<&[String]>, rows: &Arc<FastRows>) {
        let mut cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cached.retain(|c| !(c.ix == ix && c.kept.as_deref() == kept));
        if cached.len() == CACHED_ROWS {
            cached.remove(0);
        }
        cached.push(CachedRows {
            ix,
            kept: kept.map(<[String]>::to_vec),
            rows: Arc::clone(rows),
        });
    }
}

/// How many entries in a row may miss the fast rows before they are built again (for the
/// layout the entries now have).
/// TUNING: a table whose rows alternate between layouts keeps the general path's cost; one
/// whose layout changed after a run of rows pays a rebuild.
const FAST_MISSES: u32 = 16;

/// How a covering row is put together from a payload of one layout and the key fields that
/// are kept and not `NULL`: the row's names, shared by every row of the plan, and where each
/// value comes from.
struct RowPlan {
    payload: NameList,
    /// Bit `j`: key field `j` is in the row.
    key_mask: u64,
    /// Interned: a row copies a pointer to them.
    names: NameList,
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
    /// The first key field a read needs (the number of fields when it needs none).
    pub(crate) fn first_needed(&self) -> usize {
        (self.need.trailing_zeros() as usize).min(self.names.len())
    }

    /// The key fields of index `ix` of `def`, for a query read through `reader`, starting
    /// from the fast rows of an earlier query of the same shape in `cache`.
    pub(crate) fn new(
        def: &TableDef,
        ix: usize,
        reader: &RowReader,
        cache: &Arc<FastRowsCache>,
    ) -> KeyFields {
        let fields = def.indexes[ix].fields.iter().chain(&def.primary_key);
        let names: Vec<Arc<str>> = fields.map(|f| Arc::from(f.as_str())).collect();
        let tested: Vec<Option<usize>> = names.iter().map(|n| reader.tested_slot(n)).collect();
        let kept: Vec<bool> = names.iter().map(|n| reader.keeps(n)).collect();
        let need = (0..names.len())
            .filter(|&j| tested[j].is_some() || kept[j])
            .fold(0, |need, j| need | 1 << j);
        let kept_mask = (0..names.len())
            .filter(|&j| kept[j])
            .fold(0, |mask, j| mask | 1 << j);
        KeyFields {
            kept_mask,
            fast: cache.get(ix, reader.kept_list()),
            ix,
            cache: Some(Arc::clone(cache)),
            fast_misses: 0,
            values: Vec::with_capacity(names.len()),
            tested,
            kept,
            need,
            names,
            no_payload: NameList::EMPTY,
            plans: Vec::new(),
        }
    }
}

/// The plan, among `plans` (remembered for the key fields `names`), for a payload of
/// `payload` names and the key fields of `key_mask`.
fn plan<'p>(
    plans: &'p mut Vec<RowPlan>,
    names: &[Arc<str>],
    payload: &NameList,
    key_mask: u64,
) -> &'p RowPlan {
    // The names of a payload layout are one list while the reader remembers the layout.
    let same = |p: &RowPlan| p.payload.same_list(payload) || p.payload == *payload;
    let at = match plans.iter().position(|p| p.key_mask == key_mask && same(p)) {
        Some(at) => at,
        None => {
            let mut merged: Vec<(Arc<str>, Part)> = payload
                .iter()
                .enumerate()
                .map(|(i, n)| (Arc::clone(n), Part::Payload(i)))
                .collect();
            for (j, name) in names.iter().enumerate() {
                // A field the payload also carries reads the same from either.
                if key_mask & (1 << j) != 0
                    && let Err(at) = merged.binary_search_by(|(n, _)| n.cmp(name))
                {
                    merged.insert(at, (Arc::clone(name), Part::Key(j)));
                }
            }
            if plans.len() == ROW_PLANS {
                plans.clear();
            }
            plans.push(RowPlan {
                payload: payload.clone(),
                key_mask,
                names: interned(
                    &merged
                        .iter()
                        .map(|(n, _)| Arc::clone(n))
                        .collect::<Vec<_>>(),
                ),
                from: merged.into_iter().map(|(_, f)| f).collect(),
            });
            plans.len() - 1
        }
    };
    &plans[at]
}

/// What reading a covering index entry borrows from its stream: the table and the index, the
/// index family's name (for errors), the read's fixed layouts, the row reader and the
/// predicates to test. Its parts are disjoint fields of the stream.
pub(crate) struct CoveringRead<'a> {
    pub(crate) def: &'a TableDef,
    pub(crate) index: &'a IndexDef,
    pub(crate) cf: &'a str,
    pub(crate) fixed: &'a mut KeyFields,
    pub(crate) reader: &'a mut RowReader,
    pub(crate) predicates: &'a [Predicate],
}

impl<'a> CoveringRead<'a> {
    /// The parts of a read of covering index `ix` of `table`'s shard `shard`.
    #[inline(always)]
    pub(crate) fn of(
        table: &'a crate::table::db::Table,
        shard: usize,
        ix: usize,
        fixed: &'a mut KeyFields,
        reader: &'a mut RowReader,
        predicates: &'a [Predicate],
    ) -> Self {
        CoveringRead {
            def: &table.def,
            index: &table.def.indexes[ix],
            cf: table.shards[shard].indexes[ix].name(),
            fixed,
            reader,
            predicates,
        }
    }
}

/// The record a covering entry `(key, value)` gives a query through `read`, if it passes the
/// predicates: its carried fields, its index fields and its primary key, only those the
/// reader keeps. The predicates are tested on the values before anything is built.
#[inline(always)]
pub(crate) fn covering_row(
    read: &mut CoveringRead<'_>,
    (key, value): (&[u8], &[u8]),
    skip: (usize, usize),
) -> Result<Option<Record>> {
    let fixed = &mut *read.fixed;
    if let Some(fast) = &fixed.fast
        && read.predicates.is_empty()
    {
        if let Some(row) = fast_row(fast, (key, value), skip) {
            fixed.fast_misses = 0;
            return Ok(Some(row));
        }
        fixed.fast_misses += 1;
        if fixed.fast_misses >= FAST_MISSES {
            fixed.fast = None;
        }
    }
    covering_general(read, (key, value), skip)
}

/// [`covering_row`] the general way, out of line: the fast rows' caller keeps a small frame.
#[inline(never)]
fn covering_general(
    read: &mut CoveringRead<'_>,
    entry: (&[u8], &[u8]),
    skip: (usize, usize),
) -> Result<Option<Record>> {
    let mut values = std::mem::take(&mut read.fixed.values);
    let row = covering_values(read, entry, skip, &mut values);
    read.fixed.values = values;
    row
}

/// [`covering_row`], the entry's key values read into `values`. (Folding the two into one
/// function that destructures `KeyFields` measured 3–5 % slower on a covering read of ~1,000
/// rows, 2026-11-24: the lent vector keeps the loop's borrows simple for the optimiser.)
fn covering_values(
    read: &mut CoveringRead<'_>,
    (key, value): (&[u8], &[u8]),
    skip: (usize, usize),
    values: &mut Vec<Value>,
) -> Result<Option<Record>> {
    let CoveringRead {
        def,
        index,
        cf,
        fixed,
        reader,
        predicates,
    } = read;
    let (def, index, cf, predicates) = (*def, *index, *cf, *predicates);
    let parts = entry_parts(def, index, cf, (key, value), skip, fixed.need, Some(values))?;
    // Stored records hold no NULL fields: NULL is how a missing field reads.
    let mut key_mask = 0u64;
    for (j, (kept, v)) in fixed.kept.iter().zip(values.iter()).enumerate() {
        if *kept && !v.is_null() {
            key_mask |= 1 << j;
        }
    }
    if !predicates.is_empty() {
        match parts.payload {
            Some(payload) => reader
                .test(payload)
                .map_err(|e| record_corrupt(cf, key, e))?,
            None => reader.clear_tested(),
        }
        // The key's fields after the payload's: an included field that is also an index
        // field reads the same either way.
        for (j, (slot, v)) in fixed.tested.iter().zip(values.iter_mut()).enumerate() {
            if let Some(slot) = slot {
                // A tested field the row does not keep is moved, not copied.
                let tested = if key_mask & (1 << j) != 0 {
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
    }
    let corrupt = |e| record_corrupt(cf, key, e);
    let mut payload = match parts.payload {
        Some(payload) => Some(reader.kept(payload).map_err(corrupt)?),
        None => None,
    };
    let names = payload.as_ref().map_or(&fixed.no_payload, Kept::names);
    let plan = plan(&mut fixed.plans, &fixed.names, names, key_mask);
    let mut row = Vec::with_capacity(plan.from.len());
    for from in &plan.from {
        match (*from, &mut payload) {
            (Part::Payload(i), Some(payload)) => {
                row.push(Value::Null);
                if let Some(slot) = row.last_mut() {
                    payload.take_into(i, slot).map_err(corrupt)?;
                }
            }
            (Part::Payload(_), None) => row.push(Value::Null),
            (Part::Key(j), _) => row.push(std::mem::replace(&mut values[j], Value::Null)),
        }
    }
    if fixed.fast.is_none() && predicates.is_empty() && key_mask == fixed.kept_mask {
        let head = match &payload {
            Some(Kept::InPlace { at, view, .. }) => {
                let (names_at, head) = view.head();
                Some((view.bytes()[..head].into(), names_at, view.count(), &at[..]))
            }
            Some(Kept::Built { .. }) => None,
            None => Some((Box::default(), 0, 0, &[][..])),
        };
        if let Some((head, names_at, count, at)) = head {
            let mut key_at = vec![None; fixed.names.len()];
            let mut payload_at = Vec::new();
            for (place, from) in plan.from.iter().enumerate() {
                match *from {
                    Part::Key(j) => key_at[j] = Some(place),
                    Part::Payload(i) => payload_at.push((at[i], place)),
                }
            }
            let fast = Arc::new(FastRows {
                head: payload.is_some().then_some((head, names_at, count)),
                key_at,
                payload_at,
                names: plan.names.clone(),
            });
            if let Some(cache) = &fixed.cache {
                cache.put(fixed.ix, reader.kept_list(), &fast);
            }
            fixed.fast = Some(fast);
        }
    }
    Ok(Some(Record::from_names(plan.names.clone(), row)))
}

/// The row `fast` builds from the entry `key`, `value` (whose first `skip.0` key values,
/// `skip.1` bytes, are the range's: see [`entry_parts`]); `None` if the entry does not fit it
/// — another payload layout, a returned key field that is `NULL` — or does not decode.
#[inline]
fn fast_row(fast: &FastRows, (key, value): (&[u8], &[u8]), skip: (usize, usize)) -> Option<Record> {
    let mut row = Vec::with_capacity(fast.names.len());
    row.resize_with(fast.names.len(), || Value::Null);
    let mut at = skip.1;
    for place in fast.key_at.get(skip.0..)? {
        let rest = key.get(at..)?;
        at += match *place {
            Some(p) => {
                let slot = row.get_mut(p)?;
                let used = decode_value_into(rest, slot).ok()?;
                if slot.is_null() {
                    return None;
                }
                used
            }
            None => value_len(rest).ok()?,
        };
    }
    if at != key.len() {
        return None;
    }
    let (version, _, at) = entry_head(value)?;
    if version != ENTRY_VERSION {
        return None;
    }
    let payload = &value[at..];
    match &fast.head {
        None if payload.is_empty() => {}
        None => return None,
        Some((head, names_at, count)) => {
            if !starts_with(payload, head) {
                return None;
            }
            let view = View::checked(payload, *names_at, head.len(), *count)?;
            for &(i, p) in &fast.payload_at {
                view.value_into(i, row.get_mut(p)?).ok()?;
            }
        }
    }
    Some(Record::from_names(fast.names.clone(), row))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(names: &[&str]) -> Arc<FastRows> {
        Arc::new(FastRows {
            head: None,
            key_at: Vec::new(),
            payload_at: Vec::new(),
            names: names.iter().map(|&n| Arc::from(n)).collect(),
        })
    }

    #[test]
    fn the_fast_rows_cache_keeps_the_last_shapes_by_index_and_fields() {
        let cache = FastRowsCache::default();
        let kept = |fields: &[&str]| fields.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        let (ab, all) = (rows(&["a", "b"]), rows(&["a", "b", "c"]));
        cache.put(0, Some(&kept(&["a", "b"])), &ab);
        cache.put(0, None, &all);
        let got = cache.get(0, Some(&kept(&["a", "b"]))).unwrap();
        assert!(Arc::ptr_eq(&got, &ab));
        assert!(Arc::ptr_eq(&cache.get(0, None).unwrap(), &all));
        // Another index, or other fields: nothing.
        assert!(cache.get(1, Some(&kept(&["a", "b"]))).is_none());
        assert!(cache.get(0, Some(&kept(&["a"]))).is_none());
        // A shape put again replaces its rows.
        let again = rows(&["a", "b"]);
        cache.put(0, Some(&kept(&["a", "b"])), &again);
        assert!(Arc::ptr_eq(
            &cache.get(0, Some(&kept(&["a", "b"]))).unwrap(),
            &again
        ));
        // Past the bound, the oldest shape goes.
        for ix in 1..=CACHED_ROWS {
            cache.put(ix, None, &all);
        }
        assert_eq!(cache.0.lock().unwrap().len(), CACHED_ROWS);
        assert!(cache.get(0, None).is_none());
        assert!(cache.get(CACHED_ROWS, None).is_some());
    }
}
