//! Rows read straight from index entries: the key fields a query needs (`KeyFields`), the
//! covering read of an entry into a record (`covering_row`), and the fast path for an entry
//! whose record is laid out the same way row after row (`FastRows`, cached per table in
//! `FastRowsCache`). The entry format is `entry.rs`'s.

use std::sync::{Arc, Mutex};

use strata_planner::{Predicate, Value};

use crate::error::Result;
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::codec::format::ENTRY_VERSION;
use crate::table::codec::key::{decode_value_into, value_len};
use crate::table::codec::name_list::{NameList, interned};
use crate::table::codec::record::Record;
use crate::table::codec::record_codec::View;
use crate::table::codec::row_reader::{Kept, RowReader, starts_with};

use crate::table::catalog::entry::{entry_head, entry_parts, record_corrupt};

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
