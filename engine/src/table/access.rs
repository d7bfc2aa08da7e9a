//! From a chosen plan to the streams that run it (`query.rs` merges and returns their rows).
//!
//! 1. **Order.** The access path gives rows in an order: the primary key for fact reads, the
//!    index fields then the primary key for an index read in index order, none for fetches
//!    sorted by key ([`access_order`]).
//! 2. **Direction.** A query's `ORDER BY` is served by that order when its fields, less those
//!    bound to one value, are a prefix of it; ascending reads forward, descending reads
//!    every range backwards from its upper bound (a reverse cursor, the same rows in reverse),
//!    so `ORDER BY k DESC LIMIT 10` reads about ten rows. Anything else is sorted
//!    ([`direction`]).
//! 3. **Streams.** One [`Stream`] per shard visited: the whole fact family, the primary-key
//!    point lookups routed to their shards, the primary-key ranges, or an index's ranges
//!    (routed to one shard for a global index whose leading field is bound), each at the
//!    query's snapshot of its shard ([`StreamKit::streams`]).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use strata_planner::selectivity::Constraint;
use strata_planner::{Access, Consistency, Fetch, Query, Scope, Value};

use crate::error::Result;
use crate::lsm::Snapshot;
use crate::table::db::{Db, Table, leading_value};
use crate::table::entry::KeyFields;
use crate::table::format::{KEY_NULL, shard_of};
use crate::table::key::{encode_value, prefix_successor};
use crate::table::row_reader::RowReader;
use crate::table::stream::{FIRST_FETCH_BATCH, KeyRanges, Mode, Source, Stream, merge_pending};

/// Most point lookups or ranges a query's `=`/`IN` lists expand to; beyond it the executor
/// binds fewer fields and lets the re-check filter.
const MAX_SEEKS: usize = 1 << 16;

/// How the streams' order meets the query's `ORDER BY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    /// Read forward: no order asked, or the ascending order the path gives.
    Forward,
    /// Read backwards: the descending order of what the path gives.
    Reverse,
    /// Read forward, then sort every match.
    Sort,
}

/// The order rows come in along `access`, if any.
pub(super) fn access_order(table: &Table, access: &Access) -> Result<Option<Vec<String>>> {
    let def = &table.def;
    Ok(match access {
        Access::FullScan | Access::PrimaryKeyLookup { .. } | Access::PrimaryKeyRange { .. } => {
            Some(def.primary_key.clone())
        }
        Access::Index { index, fetch, .. } => {
            let (_, ixdef) = table.index(index)?;
            (*fetch != Fetch::SortedByKey).then(|| {
                ixdef
                    .fields
                    .iter()
                    .chain(&def.primary_key)
                    .cloned()
                    .collect()
            })
        }
    })
}

/// Whether the query's order is `order_fields` (read forward or backwards) or needs a sort.
/// Fields bound to a single value are constant in the result and ignored on both sides, as
/// the planner's `provides_order` does.
pub(super) fn direction(
    query: &Query,
    by_field: &BTreeMap<String, Constraint>,
    order_fields: Option<&[String]>,
) -> Direction {
    let Some(order) = &query.order else {
        return Direction::Forward;
    };
    let constant = |f: &String| {
        by_field
            .get(f)
            .is_some_and(|c| c.key_values().is_some_and(|v| v.len() == 1))
    };
    let provided = order_fields.is_some_and(|available| {
        let mut available = available.iter().filter(|f| !constant(f));
        order
            .fields
            .iter()
            .filter(|f| !constant(f))
            .all(|f| available.next() == Some(f))
    });
    match (provided, order.descending) {
        (false, _) => Direction::Sort,
        (true, false) => Direction::Forward,
        (true, true) => Direction::Reverse,
    }
}

/// What every stream of one query shares, and how to make them.
pub(super) struct StreamKit<'q> {
    pub(super) table: &'q Arc<Table>,
    pub(super) query: &'q Arc<Query>,
    /// The query's snapshot of every fact shard.
    pub(super) facts: &'q Arc<[Snapshot]>,
    pub(super) by_field: &'q BTreeMap<String, Constraint>,
    pub(super) timed: bool,
    pub(super) reverse: bool,
}

impl StreamKit<'_> {
    /// The streams that run `access`.
    pub(super) fn streams(&self, db: &Db, access: &Access, floors: &[u64]) -> Result<Vec<Stream>> {
        Ok(match access {
            Access::FullScan => self.fact_ranges(whole()),
            Access::PrimaryKeyLookup { .. } => self.point_lookups(),
            Access::PrimaryKeyRange { bound_fields } => {
                self.fact_ranges(ranges(bound_fields, self.by_field))
            }
            Access::Index {
                index,
                bound_fields,
                covering,
                fetch,
            } => self.index(db, index, bound_fields, *covering, *fetch, floors)?,
        })
    }

    fn stream(&self, shard: usize, snapshot: Snapshot, source: Source, mode: Mode) -> Stream {
        let mut reader = row_reader(self.query, mode);
        if let Some(layout) = self.table.row_layout.get() {
            reader = reader.with_layout(layout);
        }
        let covering = match mode {
            Mode::Index {
                ix, covering: true, ..
            } => KeyFields::new(&self.table.def, ix, &reader),
            _ => KeyFields::default(),
        };
        Stream {
            table: Arc::clone(self.table),
            query: Arc::clone(self.query),
            facts: Arc::clone(self.facts),
            store: Arc::clone(&self.table.shards[shard].store),
            snapshot,
            shard,
            source,
            reader,
            mode,
            pending: VecDeque::new(),
            covering,
            fetch_batch: self.query.limit.map_or(FIRST_FETCH_BATCH, |limit| {
                usize::try_from(limit).map_or(FIRST_FETCH_BATCH, |l| l.clamp(1, FIRST_FETCH_BATCH))
            }),
            stats: Default::default(),
            timed: self.timed,
            reverse: self.reverse,
            done: false,
        }
    }

    /// `ranges` of the fact family, in every shard.
    fn fact_ranges(&self, ranges: KeyRanges) -> Vec<Stream> {
        (0..self.table.shards.len())
            .map(|s| {
                let source = Source::Ranges {
                    cf: self.table.shards[s].fact.clone(),
                    ranges: ranges.clone(),
                    cursor: None,
                };
                self.stream(s, self.facts[s].clone(), source, Mode::Fact)
            })
            .collect()
    }

    /// The primary keys the bound key fields name, each looked up in its shard; the whole
    /// table when they expand to more than [`MAX_SEEKS`] keys.
    fn point_lookups(&self) -> Vec<Stream> {
        let table = self.table;
        let Some(keys) = point_keys(&table.def.primary_key, self.by_field) else {
            return self.fact_ranges(whole());
        };
        let mut per: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); table.shards.len()];
        for k in keys {
            per[table.fact_shard(&k)].push_back(k);
        }
        per.into_iter()
            .enumerate()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|(s, keys)| self.stream(s, self.facts[s].clone(), Source::Keys(keys), Mode::Fact))
            .collect()
    }

    /// The ranges of index `index` that `bound_fields` give, in the shards that hold them.
    fn index(
        &self,
        db: &Db,
        index: &str,
        bound_fields: &[String],
        covering: bool,
        fetch: Fetch,
        floors: &[u64],
    ) -> Result<Vec<Stream>> {
        let table = self.table;
        let n = table.shards.len();
        let (ix, ixdef) = table.index(index)?;
        let global = ixdef.scope == Scope::Global && n > 1;
        let asynchronous = ixdef.is_async();
        // A global index's ranges go to the shard their leading value hashes to, when
        // `ranges` expanded the leading field into its values.
        let routed = global
            && bound_fields.first() == ixdef.fields.first()
            && bound_fields
                .first()
                .and_then(|f| self.by_field.get(f))
                .is_some_and(|c| c.key_values().is_some_and(|v| v.len() <= MAX_SEEKS));
        let mut per: Vec<KeyRanges> = vec![VecDeque::new(); n];
        for r in ranges(bound_fields, self.by_field) {
            if routed {
                per[shard_of(leading_value(&r.0), n)].push_back(r);
            } else {
                for shard_ranges in &mut per {
                    shard_ranges.push_back(r.clone());
                }
            }
        }
        let overlay = if asynchronous && self.query.consistency == Consistency::Strong {
            Some(db.pending_changes(table, ixdef, self.facts, floors)?)
        } else {
            None
        };
        let mode = Mode::Index {
            ix,
            covering: covering && !asynchronous,
            fetch,
            recheck_entry: asynchronous,
        };
        let mut streams = Vec::new();
        for (s, r) in per.into_iter().enumerate() {
            if r.is_empty() {
                continue;
            }
            let shard = &table.shards[s];
            // A global async index is read at a snapshot taken after the facts': an entry
            // gone from an outbox at the facts' snapshot was applied before it, so it is in
            // the index at this one.
            let snapshot = if global && asynchronous {
                shard.store.store.snapshot()
            } else {
                self.facts[s].clone()
            };
            let cf = shard.indexes[ix].clone();
            let source = match overlay.as_ref().map(|o| &o[s]) {
                Some(pending) if !pending.is_empty() => {
                    Source::Pairs(merge_pending(&shard.store, &cf, &snapshot, &r, pending)?)
                }
                _ => Source::Ranges {
                    cf,
                    ranges: r,
                    cursor: None,
                },
            };
            streams.push(self.stream(s, snapshot, source, mode));
        }
        Ok(streams)
    }
}

/// The whole family as one range.
fn whole() -> KeyRanges {
    VecDeque::from([(Vec::new(), None)])
}

/// The key ranges for `fields` bound as the plan says: the equality sets' product, in
/// ascending order, each optionally narrowed by a range on the last bound field.
pub(super) fn ranges(bound: &[String], by_field: &BTreeMap<String, Constraint>) -> KeyRanges {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut range: Option<&Constraint> = None;
    for field in bound {
        let Some(c) = by_field.get(field) else { break };
        match c.key_values() {
            Some(values) => {
                if prefixes.len().saturating_mul(values.len()) > MAX_SEEKS {
                    break;
                }
                let mut next = Vec::with_capacity(prefixes.len() * values.len());
                for p in &prefixes {
                    for v in values {
                        let mut k = p.clone();
                        encode_value(v, &mut k);
                        next.push(k);
                    }
                }
                prefixes = next;
            }
            None => {
                range = Some(c);
                break;
            }
        }
    }
    prefixes
        .into_iter()
        .map(|p| {
            let Some(c) = range else {
                let upper = prefix_successor(&p);
                return (p, upper);
            };
            let with = |v: &Value| {
                let mut k = p.clone();
                encode_value(v, &mut k);
                k
            };
            let lower = match &c.lower {
                // A comparison never matches NULL, which sorts first: start after it.
                Bound::Unbounded => {
                    let mut k = p.clone();
                    k.push(KEY_NULL + 1);
                    k
                }
                Bound::Included(v) => with(v),
                Bound::Excluded(v) => prefix_successor(&with(v)).unwrap_or_else(|| with(v)),
            };
            let upper = match &c.upper {
                Bound::Unbounded => prefix_successor(&p),
                Bound::Included(v) => prefix_successor(&with(v)),
                Bound::Excluded(v) => Some(with(v)),
            };
            (lower, upper)
        })
        .collect()
}

/// All primary keys an equality-bound key names, ascending.
fn point_keys(
    fields: &[String],
    by_field: &BTreeMap<String, Constraint>,
) -> Option<VecDeque<Vec<u8>>> {
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    for field in fields {
        let values = by_field.get(field)?.key_values()?;
        if keys.len().saturating_mul(values.len()) > MAX_SEEKS {
            return None;
        }
        let mut next = Vec::with_capacity(keys.len() * values.len());
        for k in &keys {
            for v in values {
                let mut key = k.clone();
                encode_value(v, &mut key);
                next.push(key);
            }
        }
        keys = next;
    }
    Some(keys.into())
}

/// How a stream reads its rows: the predicates' fields tested first, then only the fields the
/// query returns or orders by built (every field when it returns them all, or when an async
/// index's entry must be re-derived from the row).
fn row_reader(query: &Query, mode: Mode) -> RowReader {
    let tested: Vec<&str> = query.predicates.iter().map(|p| p.field.as_str()).collect();
    let recheck = matches!(
        mode,
        Mode::Index {
            recheck_entry: true,
            ..
        }
    );
    let kept = match &query.projection {
        Some(fields) if !recheck => {
            let mut kept = fields.clone();
            kept.extend(query.order.iter().flat_map(|o| o.fields.iter().cloned()));
            Some(kept)
        }
        _ => None,
    };
    RowReader::new(&tested, kept)
}
