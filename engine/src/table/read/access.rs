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
//! 4. **Re-check.** A stream tests only the predicates its key ranges do not answer: every
//!    key in a range holds the values an `=`/`IN` bound, or lies inside the bounds of a
//!    comparison, exactly, because the key code is order-preserving and one-to-one
//!    (`docs/formats/keys.md`). So a covering read of `town = ?` neither decodes nor compares
//!    the town of each entry ([`residual`]).

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use strata_planner::selectivity::{Constraint, Constraints, constraints};
use strata_planner::{Access, Consistency, Fetch, Op, Predicate, Query, Scope, Value};

use crate::error::Result;
use crate::lsm::Snapshot;
use crate::table::catalog::covering::KeyFields;
use crate::table::codec::format::{KEY_NULL, shard_of};
use crate::table::codec::key::{KeyFormat, prefix_successor};
use crate::table::codec::row_reader::RowReader;
use crate::table::db::reader_pool::FetchBuffers;
use crate::table::db::{Db, Table, leading_value};
use crate::table::read::stream::{
    FIRST_FETCH_BATCH, KeyRanges, Mode, RowFilter, Source, Stream, merge_pending,
};

/// Most point lookups or ranges a query's `=`/`IN` lists expand to; beyond it the executor
/// binds fewer fields and lets the re-check filter.
const MAX_SEEKS: usize = 1 << 16;

/// How the streams' order meets the query's `ORDER BY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Read forward: no order asked, or the ascending order the path gives.
    Forward,
    /// Read backwards: the descending order of what the path gives.
    Reverse,
    /// Read forward, then sort every match.
    Sort,
}

/// The order rows come in along `access`, if any.
pub(crate) fn access_order(table: &Table, access: &Access) -> Result<Option<Vec<String>>> {
    let def = &table.def;
    Ok(match access {
        Access::FullScan | Access::PrimaryKeyLookup { .. } | Access::PrimaryKeyRange { .. } => {
            Some(def.primary_key.clone())
        }
        // One part after another: no order across them.
        Access::Union { .. } => None,
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
pub(crate) fn direction(
    query: &Query,
    by_field: &Constraints<'_>,
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

/// Whether the rows index `ix` of `table` names for one value or range lie together in the
/// fact family, so its fetches start as a merge ([`Stream`]'s `fetch_merged`): the squared
/// correlation of its leading field with the key order, from the last `analyze`, is at least
/// [`CLUSTERED`]. Without statistics, no.
fn clustered(table: &Table, ix: usize) -> bool {
    let field = table.def.indexes[ix].fields.first();
    let r = table
        .stats
        .as_ref()
        .zip(field)
        .and_then(|(stats, field)| stats.columns.get(field))
        .map_or(0.0, |c| c.correlation);
    r.is_finite() && r * r >= CLUSTERED
}

/// The squared correlation from which an index's fetches start as a merge.
/// TUNING: the planner's cost model counts a fetch as this share a step along the table
/// (`clustering` in `strata-planner`); at one half, most of an index value's rows are
/// neighbours, and a stream whose batch needs many seeks goes back to lookups anyway.
const CLUSTERED: f64 = 0.5;

/// What every stream of one query shares, and how to make them.
pub(crate) struct StreamKit<'q> {
    pub(crate) table: &'q Arc<Table>,
    pub(crate) query: &'q Arc<Query>,
    /// The query's snapshot of every fact shard.
    pub(crate) facts: &'q Arc<[Snapshot]>,
    pub(crate) by_field: &'q Constraints<'q>,
    pub(crate) timed: bool,
    pub(crate) reverse: bool,
    /// What every stream tests on its records besides its predicates (`None`: nothing).
    pub(crate) filter: Option<Arc<RowFilter>>,
}

impl StreamKit<'_> {
    /// The streams that run `access`.
    pub(crate) fn streams(&self, db: &Db, access: &Access, floors: &[u64]) -> Result<Vec<Stream>> {
        Ok(match access {
            Access::FullScan => self.fact_ranges(whole(), Exact::default()),
            Access::PrimaryKeyLookup { .. } => self.point_lookups(),
            Access::PrimaryKeyRange { bound_fields } => {
                let (ranges, exact) =
                    key_ranges(self.table.def.key_format(), bound_fields, self.by_field);
                self.fact_ranges(ranges, exact)
            }
            Access::Index {
                index,
                bound_fields,
                covering,
                fetch,
            } => self.index(db, index, bound_fields, *covering, *fetch, floors)?,
            Access::Union { parts } => {
                // Each part reads its own path for the query's predicates and its member's,
                // and returns the rows that satisfy the member and no member before it.
                let mut streams = Vec::new();
                for (i, part) in parts.iter().enumerate() {
                    let query = Arc::new(Query {
                        predicates: part.predicates.clone(),
                        ..Query::clone(self.query)
                    });
                    let by_field = constraints(&query.predicates);
                    let filter = RowFilter {
                        all: (self.query.conditions.iter())
                            .chain([&part.condition])
                            .cloned()
                            .collect(),
                        none: parts[..i].iter().map(|p| p.condition.clone()).collect(),
                    };
                    let kit = StreamKit {
                        query: &query,
                        by_field: &by_field,
                        reverse: false,
                        filter: Some(Arc::new(filter)),
                        ..*self
                    };
                    streams.extend(kit.streams(db, &part.access, floors)?);
                }
                streams
            }
        })
    }

    fn stream(
        &self,
        shard: usize,
        snapshot: Snapshot,
        source: Source,
        mode: Mode,
        predicates: &Arc<[Predicate]>,
    ) -> Stream {
        let reader = row_reader(self.table, self.query, predicates, mode);
        let covering = match mode {
            Mode::Index {
                ix, covering: true, ..
            } => KeyFields::new(&self.table.def, ix, &reader, &self.table.fast_rows),
            _ => KeyFields::default(),
        };
        let merge_fetches = match mode {
            Mode::Index {
                ix,
                covering: false,
                ..
            } => clustered(self.table, ix),
            _ => false,
        };
        // Only a stream that fetches rows uses them.
        let buffers = if matches!(
            mode,
            Mode::Index {
                covering: false,
                ..
            }
        ) {
            self.table.readers.take_buffers()
        } else {
            FetchBuffers::default()
        };
        Stream {
            table: Arc::clone(self.table),
            predicates: Arc::clone(predicates),
            facts: Arc::clone(self.facts),
            store: Arc::clone(&self.table.shards[shard].store),
            snapshot,
            shard,
            source,
            reader,
            mode,
            fetched: buffers.fetched,
            spare: None,
            fetch_values: buffers.values,
            fact_cursor: None,
            merge_fetches,
            covering,
            fetch_keys: buffers.keys,
            fetch_targets: buffers.targets,
            range_prefix: (0, 0),
            fetch_batch: self.query.limit.map_or(FIRST_FETCH_BATCH, |limit| {
                usize::try_from(limit).map_or(FIRST_FETCH_BATCH, |l| l.clamp(1, FIRST_FETCH_BATCH))
            }),
            stats: Default::default(),
            timed: self.timed,
            reverse: self.reverse,
            filter: self.filter.clone(),
            done: false,
        }
    }

    /// `ranges` of the fact family, in every shard; they bind the key fields of `exact`.
    fn fact_ranges(&self, ranges: KeyRanges, exact: Exact<'_>) -> Vec<Stream> {
        let predicates = residual(&self.query.predicates, self.by_field, &exact);
        (0..self.table.shards.len())
            .map(|s| {
                let source = Source::Ranges {
                    cf: self.table.shards[s].fact.clone(),
                    ranges: ranges.clone(),
                    cursor: None,
                };
                self.stream(s, self.facts[s].clone(), source, Mode::Fact, &predicates)
            })
            .collect()
    }

    /// The primary keys the bound key fields name, each looked up in its shard; the whole
    /// table when they expand to more than [`MAX_SEEKS`] keys.
    fn point_lookups(&self) -> Vec<Stream> {
        let table = self.table;
        let Some(keys) = point_keys(
            table.def.key_format(),
            &table.def.primary_key,
            self.by_field,
        ) else {
            return self.fact_ranges(whole(), Exact::default());
        };
        let exact = Exact {
            equal: table.def.primary_key.iter().map(String::as_str).collect(),
            range: None,
        };
        let predicates = residual(&self.query.predicates, self.by_field, &exact);
        let mut per: Vec<VecDeque<Vec<u8>>> = vec![VecDeque::new(); table.shards.len()];
        for k in keys {
            per[table.fact_shard(&k)].push_back(k);
        }
        // Sized to the shards it visits: a vector of streams grown from empty reserves four
        // (3.4 KiB), and an allocation that large empties the allocator's per-thread caches
        // (`malloc_consolidate`, ~3 % of a point query in `perf`).
        let mut streams = Vec::with_capacity(per.iter().filter(|k| !k.is_empty()).count());
        for (s, keys) in per.into_iter().enumerate() {
            if !keys.is_empty() {
                let source = Source::Keys(keys);
                streams.push(self.stream(
                    s,
                    self.facts[s].clone(),
                    source,
                    Mode::Fact,
                    &predicates,
                ));
            }
        }
        streams
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
        let (all_ranges, exact) =
            key_ranges(self.table.def.key_format(), bound_fields, self.by_field);
        let predicates = residual(&self.query.predicates, self.by_field, &exact);
        for r in all_ranges {
            if routed {
                per[shard_of(leading_value(&r.0), n)].push_back(r);
            } else {
                for shard_ranges in &mut per {
                    shard_ranges.push_back(r.clone());
                }
            }
        }
        let overlay = if asynchronous && self.query.consistency == Consistency::Strong {
            Some(
                db.shared
                    .pending_changes(table, ixdef, self.facts, floors)?,
            )
        } else {
            None
        };
        let mode = Mode::Index {
            ix,
            covering: covering && !asynchronous,
            fetch,
            recheck_entry: asynchronous,
        };
        // Sized to the shards it visits, as `point_lookups` sizes its own.
        let mut streams = Vec::with_capacity(per.iter().filter(|r| !r.is_empty()).count());
        for (s, r) in per.into_iter().enumerate() {
            if r.is_empty() {
                continue;
            }
            let shard = &table.shards[s];
            // The facts' snapshot is one seqno across every shard store, and the indexer
            // puts a global async index's entries before it deletes their outbox entry: an
            // entry gone from an outbox at this snapshot is in the index at it.
            let snapshot = self.facts[s].clone();
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
            streams.push(self.stream(s, snapshot, source, mode, &predicates));
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
pub(crate) fn ranges(keys: KeyFormat, bound: &[String], by_field: &Constraints<'_>) -> KeyRanges {
    key_ranges(keys, bound, by_field).0
}

/// The fields whose predicates a stream's key ranges answer exactly.
#[derive(Default)]
pub(crate) struct Exact<'a> {
    /// Fields every range binds to one of its constraint's values (`=`, `IN`, or `IS NULL`
    /// alone).
    equal: Vec<&'a str>,
    /// The field after them that every range bounds by its constraint's comparisons, from
    /// after `NULL` when it has no lower bound.
    range: Option<&'a str>,
}

/// [`ranges`], and which fields they bind exactly.
fn key_ranges<'a>(
    keys: KeyFormat,
    bound: &'a [String],
    by_field: &Constraints<'_>,
) -> (KeyRanges, Exact<'a>) {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut range: Option<&Constraint> = None;
    let mut exact = Exact::default();
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
                        keys.encode_value(v, &mut k);
                        next.push(k);
                    }
                }
                prefixes = next;
                exact.equal.push(field);
            }
            None => {
                range = Some(c);
                exact.range = Some(field);
                break;
            }
        }
    }
    let ranges = prefixes
        .into_iter()
        .map(|p| {
            let Some(c) = range else {
                let upper = prefix_successor(&p);
                return (p, upper);
            };
            let with = |v: &Value| {
                let mut k = p.clone();
                keys.encode_value(v, &mut k);
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
                Bound::Excluded(v) => match prefix_successor(&with(v)) {
                    Some(after) => after,
                    None => {
                        // Not reached (an encoding starts with a tag below `ff`); were it, the
                        // range would hold `v` too, and the re-check drops it.
                        exact.range = None;
                        with(v)
                    }
                },
            };
            let upper = match &c.upper {
                Bound::Unbounded => prefix_successor(&p),
                Bound::Included(v) => prefix_successor(&with(v)),
                Bound::Excluded(v) => Some(with(v)),
            };
            (lower, upper)
        })
        .collect();
    (ranges, exact)
}

/// The predicates a stream whose key ranges bind `exact` must still test: every key in its
/// ranges satisfies the others.
///
/// - A field bound to values satisfies each `=` and `IN` on it (the values are their
///   intersection, without `NULL`) and `IS NOT NULL`; a field bound to `NULL` alone
///   satisfies `IS NULL`.
/// - The range field satisfies each comparison on it (its bounds are the tightest of them)
///   and `IS NOT NULL` (the range starts after `NULL`).
///
/// Anything else — `!=`, a comparison on a field bound to values, an `IS NULL` that a range
/// could not bind, any comparison with `NULL` — is tested.
pub(crate) fn residual(
    predicates: &[Predicate],
    by_field: &Constraints<'_>,
    exact: &Exact<'_>,
) -> Arc<[Predicate]> {
    let answered = |p: &Predicate| {
        let field = p.field.as_str();
        let Some(c) = by_field.get(field) else {
            return false;
        };
        // A comparison with NULL matches nothing, while the bound it gives a range (`>=
        // NULL`, `> NULL`) holds keys.
        let with_null = match &p.op {
            Op::Eq(v) | Op::Ne(v) | Op::Lt(v) | Op::Le(v) | Op::Gt(v) | Op::Ge(v) => v.is_null(),
            Op::Between(a, b) => a.is_null() || b.is_null(),
            Op::In(vs) => vs.iter().any(Value::is_null),
            // Never answered by a range: tested whatever binds their field.
            Op::NotIn(_) | Op::Like(_) | Op::NotLike(_) => return false,
            Op::IsNull | Op::IsNotNull => false,
        };
        if with_null {
            return false;
        }
        if exact.equal.contains(&field) {
            if c.is_null {
                matches!(p.op, Op::IsNull)
            } else {
                matches!(p.op, Op::Eq(_) | Op::In(_) | Op::IsNotNull)
            }
        } else if exact.range == Some(field) {
            matches!(
                p.op,
                Op::Lt(_) | Op::Le(_) | Op::Gt(_) | Op::Ge(_) | Op::Between(..) | Op::IsNotNull
            )
        } else {
            false
        }
    };
    predicates
        .iter()
        .filter(|p| !answered(p))
        .cloned()
        .collect()
}

/// All primary keys an equality-bound key names, ascending.
fn point_keys(
    keys_of: KeyFormat,
    fields: &[String],
    by_field: &Constraints<'_>,
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
                keys_of.encode_value(v, &mut key);
                next.push(key);
            }
        }
        keys = next;
    }
    Some(keys.into())
}

/// The one primary key of `table` that `by_field` binds every key field of to a single value,
/// and the predicates a row found there still has to pass; `None` when they name no key or
/// several.
pub(crate) fn single_key(
    table: &Table,
    predicates: &[Predicate],
    by_field: &Constraints<'_>,
) -> Option<(Vec<u8>, Arc<[Predicate]>)> {
    let def = &table.def;
    let keys_of = def.key_format();
    let mut key = Vec::with_capacity(16);
    for field in &def.primary_key {
        let [value] = by_field.get(field)?.key_values()? else {
            return None;
        };
        keys_of.encode_value(value, &mut key);
    }
    let exact = Exact {
        equal: def.primary_key.iter().map(String::as_str).collect(),
        range: None,
    };
    Some((key, residual(predicates, by_field, &exact)))
}

/// The reader of `table`'s rows for a stream of `query` that tests `predicates` — one its
/// pool kept from a query of the same shape, else a new one. It tests the fields of the
/// predicates first, then builds only the fields the query returns or orders by (every field
/// when it returns them all, or when an async index's entry must be re-derived from the row).
pub(crate) fn row_reader(
    table: &Table,
    query: &Query,
    predicates: &[Predicate],
    mode: Mode,
) -> RowReader {
    let tested: Vec<&str> = predicates.iter().map(|p| p.field.as_str()).collect();
    // The conditions are tested on a row's values before it is built, and on the record of
    // a row built first: their fields are read and built too.
    let conditioned: Vec<&str> = query.conditions.iter().flat_map(|c| c.fields()).collect();
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
            kept.extend(conditioned.iter().map(|f| f.to_string()));
            Some(kept)
        }
        _ => None,
    };
    if let Some(reader) = table.readers.take(&tested, &conditioned, kept.as_deref()) {
        return reader;
    }
    let reader = RowReader::testing(&tested, &conditioned, kept).with_layouts(&table.layouts);
    match table.row_layout.get() {
        Some(layout) => reader.with_layout(layout),
        None => reader,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_planner::selectivity::constraints;

    /// The predicates a read of `bound` (the plan's bound fields, in order) still tests.
    fn left(bound: &[&str], predicates: &[Predicate]) -> Vec<Predicate> {
        let bound: Vec<String> = bound.iter().map(|f| f.to_string()).collect();
        let by_field = constraints(predicates);
        let (_, exact) = key_ranges(KeyFormat::NEWEST, &bound, &by_field);
        residual(predicates, &by_field, &exact).to_vec()
    }

    #[test]
    fn ranges_answer_what_they_bind_exactly_and_nothing_else() {
        let town = Predicate::eq("town", "Oslo");
        let young = Predicate::lt("age", 30);
        let adult = Predicate::ge("age", 18);
        // Equality and IN on a bound field, and the range after it.
        assert!(left(&["town"], std::slice::from_ref(&town)).is_empty());
        let within = [town.clone(), young.clone(), adult.clone()];
        assert!(left(&["town", "age"], &within).is_empty());
        let either = Predicate::in_list("town", [Value::from("Oslo"), Value::from("Rome")]);
        assert!(left(&["town"], &[either, town.clone()]).is_empty());
        // A field the ranges do not bind is tested.
        assert_eq!(left(&["town"], &within), vec![young.clone(), adult.clone()]);
        // A comparison on a field bound to values, and `!=`, are tested.
        let five = Predicate::eq("age", 5);
        assert_eq!(
            left(&["age"], &[five.clone(), young.clone()]),
            vec![young.clone()]
        );
        let not_oslo = Predicate::ne("town", "Oslo");
        assert_eq!(
            left(&["town"], std::slice::from_ref(&not_oslo)),
            vec![not_oslo]
        );
        // `IS NULL` alone binds NULL; `IS NOT NULL` is the range after NULL.
        let none = Predicate::is_null("town");
        assert!(left(&["town"], std::slice::from_ref(&none)).is_empty());
        assert!(left(&["town"], &[Predicate::is_not_null("town")]).is_empty());
        // `IS NULL` with a range binds the range: the `IS NULL` is tested (and fails).
        assert_eq!(
            left(&["age"], &[young.clone(), Predicate::is_null("age")]),
            vec![Predicate::is_null("age")]
        );
        // A comparison with NULL matches nothing, though its bound holds keys.
        for with_null in [
            Predicate::between("age", Value::Null, 3),
            Predicate::gt("age", Value::Null),
            Predicate::eq("town", Value::Null),
        ] {
            let field = with_null.field.clone();
            assert_eq!(
                left(&[&field], std::slice::from_ref(&with_null)),
                vec![with_null]
            );
        }
        // Fields after the range are not bound by it.
        assert_eq!(
            left(&["age", "town"], &[young.clone(), town.clone()]),
            vec![town]
        );
    }
}
