//! Selectivity: the fraction of a table's rows a predicate (or a conjunction) keeps.
//!
//! - `field = v`: a most-common value's frequency; any other value
//!   `(1 − Σ MCV frequencies − null fraction) / (NDV − |MCV|)`, capped at the least common
//!   MCV's frequency (PostgreSQL's `var_eq_const`: a value not on the list cannot be more
//!   common than one that is).
//! - ranges: the most-common values inside the range, plus the rest of the non-null rows
//!   times the histogram's fraction inside it (`ineq_histogram_selectivity`).
//! - `IN (…)`: the sum over the distinct values of their equality selectivities — the
//!   values are disjoint events, so their frequencies add; an average would throw the skew
//!   away.
//! - `IS NULL`: the null fraction. NULL never satisfies `=`, `IN` or a range.
//! - Several predicates on one field are combined into one constraint (a set of values, an
//!   interval, or IS NULL) before estimating.
//! - Across fields: the equality-bound fields of the longest composite prefix with
//!   statistics are estimated as a chain, `sel(f1) · Π D(f1..fi−1) / D(f1..fi)`, where `D` is
//!   a prefix's distinct count: if `town` determines `zip`, `D(town, zip) = D(town)` and the
//!   pair is as selective as `town` alone; if they are independent, `D(town, zip) ≈
//!   D(town) · D(zip)` and the chain gives the product. Every other field multiplies in as
//!   independent. The result never exceeds the most selective single field.

use std::ops::Bound;

use crate::field_map::FieldMap;
use crate::pattern;
use crate::query::{Condition, Op, Predicate};
use crate::stats::{ColumnStats, PrefixStats, TableStats};
use crate::value::Value;

/// Equality on a field without statistics.
/// TUNING: PostgreSQL's `DEFAULT_EQ_SEL` (selfuncs.h).
pub const DEFAULT_EQ_SEL: f64 = 0.005;
/// A one-sided range on a field without statistics.
/// TUNING: PostgreSQL's `DEFAULT_INEQ_SEL` (selfuncs.h).
pub const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
/// A two-sided range on a field without statistics.
/// TUNING: PostgreSQL's `DEFAULT_RANGE_INEQ_SEL` (selfuncs.h).
pub const DEFAULT_RANGE_SEL: f64 = 0.005;
/// `LIKE` on a field without statistics.
/// TUNING: PostgreSQL's `DEFAULT_MATCH_SEL` (selfuncs.h).
pub const DEFAULT_MATCH_SEL: f64 = 0.005;
/// A histogram with this many bounds answers a pattern alone from the share of its bounds
/// that match; with fewer, that share is blended with [`pattern::rest_selectivity`] by the
/// bounds' count over it.
/// TUNING: PostgreSQL's `patternsel_common` trusts `histogram_selectivity` from 100 entries.
pub const PATTERN_BOUNDS: usize = 100;
/// IS NULL on a field without statistics.
/// TUNING: PostgreSQL's `DEFAULT_UNK_SEL` (selfuncs.h).
pub const DEFAULT_NULL_SEL: f64 = 0.005;

/// What the predicates on one field require of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// The value must be one of these (`=`, `IN`; several intersect). `None`: any value.
    pub values: Option<Vec<Value>>,
    /// Lower bound of a range.
    pub lower: Bound<Value>,
    /// Upper bound of a range.
    pub upper: Bound<Value>,
    /// `IS NULL` was asked.
    pub is_null: bool,
    /// `IS NOT NULL` was asked.
    pub not_null: bool,
    /// Values the field must not equal (`!=`, `NOT IN`), sorted (NULL among them: a `NOT IN`
    /// list with NULL, which nothing passes). They bind no index.
    pub excluded: Vec<Value>,
    /// `LIKE` patterns (`false`) and `NOT LIKE` patterns (`true`) on the field. A `LIKE`'s
    /// literal prefix is also part of the range (the whole literal, of the values).
    pub patterns: Vec<(String, bool)>,
}

impl Constraint {
    fn any() -> Self {
        Constraint {
            values: None,
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
            is_null: false,
            not_null: false,
            excluded: Vec::new(),
            patterns: Vec::new(),
        }
    }

    /// Whether a range is part of the constraint.
    pub fn has_range(&self) -> bool {
        !matches!(
            (&self.lower, &self.upper),
            (Bound::Unbounded, Bound::Unbounded)
        )
    }

    /// The values an index seek binds this field to: the `=`/`IN` set, or NULL alone for a
    /// bare `IS NULL` (NULL is a key value like any other: it sorts first). `None`: no
    /// equality binds the field.
    pub fn key_values(&self) -> Option<&[Value]> {
        static NULL_ONLY: [Value; 1] = [Value::Null];
        if !self.is_null {
            return self.values.as_deref();
        }
        let only_null = !self.not_null
            && self.values.is_none()
            && !self.has_range()
            && self.excluded.is_empty()
            && self.patterns.is_empty();
        only_null.then_some(&NULL_ONLY[..])
    }

    /// Whether the field bounds an index range: a comparison, or `IS NOT NULL` (the
    /// non-NULL keys, which follow the NULLs).
    pub fn binds_range(&self) -> bool {
        !self.is_null && (self.has_range() || self.not_null)
    }

    /// Whether `v` lies in the range.
    pub fn in_range(&self, v: &Value) -> bool {
        let above = match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(l) => v >= l,
            Bound::Excluded(l) => v > l,
        };
        let below = match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(u) => v <= u,
            Bound::Excluded(u) => v < u,
        };
        above && below
    }

    fn add(&mut self, op: &Op) {
        let mut restrict = |values: Vec<Value>| {
            let mut values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
            values.sort();
            values.dedup();
            self.values = Some(match self.values.take() {
                None => values,
                Some(mine) => mine.into_iter().filter(|v| values.contains(v)).collect(),
            });
        };
        match op {
            Op::Eq(v) => restrict(vec![v.clone()]),
            Op::In(vs) => restrict(vs.clone()),
            Op::Lt(v) => self.tighten_upper(Bound::Excluded(v.clone())),
            Op::Le(v) => self.tighten_upper(Bound::Included(v.clone())),
            Op::Gt(v) => self.tighten_lower(Bound::Excluded(v.clone())),
            Op::Ge(v) => self.tighten_lower(Bound::Included(v.clone())),
            Op::Between(a, b) => {
                self.tighten_lower(Bound::Included(a.clone()));
                self.tighten_upper(Bound::Included(b.clone()));
            }
            Op::Ne(v) => {
                // `!= NULL` is never true; keep it so the estimate says so.
                self.excluded.push(v.clone());
                self.excluded.sort();
                self.excluded.dedup();
            }
            Op::NotIn(vs) => {
                self.excluded.extend(vs.iter().cloned());
                self.excluded.sort();
                self.excluded.dedup();
            }
            Op::Like(pattern) => {
                let start = crate::pattern::prefix(pattern);
                if start.whole {
                    restrict(vec![Value::Str(start.text)]);
                } else if !start.text.is_empty() {
                    let upper = crate::pattern::successor(&start.text);
                    self.tighten_lower(Bound::Included(Value::Str(start.text)));
                    if let Some(upper) = upper {
                        self.tighten_upper(Bound::Excluded(Value::Str(upper)));
                    }
                }
                self.patterns.push((pattern.clone(), false));
            }
            Op::NotLike(pattern) => self.patterns.push((pattern.clone(), true)),
            Op::IsNull => self.is_null = true,
            Op::IsNotNull => self.not_null = true,
        }
    }

    fn tighten_lower(&mut self, new: Bound<Value>) {
        let tighter = match (&self.lower, &new) {
            (Bound::Unbounded, _) => true,
            (_, Bound::Unbounded) => false,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b > a,
            (Bound::Included(a), Bound::Excluded(b)) => b >= a,
            (Bound::Excluded(a), Bound::Excluded(b)) => b > a,
        };
        if tighter {
            self.lower = new;
        }
    }

    fn tighten_upper(&mut self, new: Bound<Value>) {
        let tighter = match (&self.upper, &new) {
            (Bound::Unbounded, _) => true,
            (_, Bound::Unbounded) => false,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b)) => b < a,
            (Bound::Included(a), Bound::Excluded(b)) => b <= a,
            (Bound::Excluded(a), Bound::Excluded(b)) => b < a,
        };
        if tighter {
            self.upper = new;
        }
    }
}

/// What a query's predicates require of each field they name, by field (names borrowed
/// from the predicates).
pub type Constraints<'q> = FieldMap<'q, Constraint>;

/// The constraint on each field the predicates name.
pub fn constraints<'a>(predicates: impl IntoIterator<Item = &'a Predicate>) -> Constraints<'a> {
    let mut by_field = Constraints::new();
    for p in predicates {
        by_field
            .get_or_insert_with(&p.field, Constraint::any)
            .add(&p.op);
    }
    by_field
}

/// Estimates over one table's statistics.
#[derive(Clone, Copy, Debug)]
pub struct Estimator<'a> {
    stats: &'a TableStats,
}

fn clamp01(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        1.0
    }
}

impl<'a> Estimator<'a> {
    /// An estimator over `stats`.
    pub fn new(stats: &'a TableStats) -> Self {
        Estimator { stats }
    }

    fn column(&self, field: &str) -> Option<&'a ColumnStats> {
        self.stats.columns.get(field)
    }

    /// `field = value`.
    pub fn equal(&self, field: &str, value: &Value) -> f64 {
        if value.is_null() {
            return 0.0;
        }
        let Some(c) = self.column(field) else {
            return DEFAULT_EQ_SEL;
        };
        if let Some(frequency) = c
            .frequency_of(value)
            .or_else(|| c.frequent_frequency_of(value))
        {
            return clamp01(frequency);
        }
        self.unlisted_equal(c)
    }

    /// `field IN (values)`: the sum of the distinct values' equality selectivities.
    pub fn in_list(&self, field: &str, values: &[Value]) -> f64 {
        let mut distinct: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        distinct.sort();
        distinct.dedup();
        let sum: f64 = distinct.iter().map(|v| self.equal(field, v)).sum();
        let null = self.column(field).map_or(0.0, |c| c.null_fraction);
        clamp01(sum.min(1.0 - null))
    }

    /// `field IS NULL`.
    pub fn is_null(&self, field: &str) -> f64 {
        self.column(field)
            .map_or(DEFAULT_NULL_SEL, |c| clamp01(c.null_fraction))
    }

    /// `lower <(=) field <(=) upper`.
    pub fn range(&self, field: &str, lower: Bound<&Value>, upper: Bound<&Value>) -> f64 {
        let two_sided = !matches!(lower, Bound::Unbounded) && !matches!(upper, Bound::Unbounded);
        let Some(c) = self.column(field) else {
            return if two_sided {
                DEFAULT_RANGE_SEL
            } else {
                DEFAULT_INEQ_SEL
            };
        };
        let inside = |v: &Value| {
            let above = match lower {
                Bound::Unbounded => true,
                Bound::Included(l) => v >= l,
                Bound::Excluded(l) => v > l,
            };
            let below = match upper {
                Bound::Unbounded => true,
                Bound::Included(u) => v <= u,
                Bound::Excluded(u) => v < u,
            };
            above && below
        };
        let common: f64 = c
            .most_common
            .iter()
            .filter(|(v, _)| inside(v))
            .map(|(_, f)| f)
            .sum();
        let rest = (1.0 - c.most_common_fraction() - c.null_fraction).max(0.0);
        let fraction = c
            .histogram
            .fraction_between(lower, upper)
            .or_else(|| min_max_fraction(c, lower, upper))
            .unwrap_or(if two_sided {
                DEFAULT_RANGE_SEL
            } else {
                DEFAULT_INEQ_SEL
            });
        // An included end that is not a most-common value (those are in `common`) holds at
        // least what an equality on it keeps: `x BETWEEN 7 AND 7` is `x = 7`, where the
        // histogram's share of a zero-width range is nothing (the regret bench's one-value
        // ranges were estimated at 0 rows and returned 7 and 13). Monotone as the range
        // widens: an end that becomes a most-common value adds at least as much to `common`
        // as it takes from this floor (a non-listed value is never estimated above the least
        // listed one).
        let mut ends = 0;
        for (at, bound) in [lower, upper].into_iter().enumerate() {
            if let Bound::Included(v) = bound
                && inside(v)
                && c.frequency_of(v).is_none()
                && !(at == 1 && lower == Bound::Included(v))
            {
                ends += 1;
            }
        }
        let floor = (f64::from(ends) * self.unlisted_equal(c)).min(rest);
        clamp01((common + (rest * fraction).max(floor)).min(1.0 - c.null_fraction))
    }

    /// What `field = v` keeps for a value `v` on neither of the field's lists: the rows
    /// outside them shared among the values outside them, at most the least listed value's
    /// frequency.
    fn unlisted_equal(&self, c: &ColumnStats) -> f64 {
        let (common, frequent, least) = c.listed_frequencies();
        let rest = 1.0 - common - frequent - c.null_fraction;
        let listed = (c.most_common.len() + c.frequent.len()) as f64;
        let others = (c.distinct - listed).max(1.0);
        let mut sel = rest / others;
        if let Some(least) = least {
            sel = sel.min(least);
        }
        clamp01(sel)
    }

    /// One field's constraint.
    pub fn constraint(&self, field: &str, constraint: &Constraint) -> f64 {
        let base = self.constraint_without_patterns(field, constraint);
        if constraint.patterns.is_empty() {
            return base;
        }
        // A pattern tests text: NULL passes neither LIKE nor NOT LIKE.
        let non_null = 1.0 - self.column(field).map_or(0.0, |c| clamp01(c.null_fraction));
        let mut sel = base.min(non_null);
        for (p, negated) in &constraint.patterns {
            let matched = self.like(field, p);
            sel = if *negated {
                // The rows the rest keeps, less the pattern's share of the non-NULL ones.
                sel * clamp01(1.0 - matched / non_null.max(f64::MIN_POSITIVE))
            } else {
                // The pattern's prefix is in the range already: the pattern alone, at most.
                sel.min(matched)
            };
        }
        clamp01(sel)
    }

    /// `field LIKE pattern` (PostgreSQL's `patternsel`): the most-common and frequent
    /// values that match, exactly, plus the other rows times the share of text the pattern
    /// keeps among them. That share is the histogram's: for a literal prefix, the prefix's
    /// range (interpolated like any range) times the share of the bounds inside it that
    /// match the whole pattern; for a pattern that starts with a wildcard, the share of all
    /// bounds that match. Few bounds to judge by are blended with PostgreSQL's per-character
    /// heuristic ([`pattern::rest_selectivity`]), and a share of none or all is kept half a
    /// bound inside (0 matching bounds out of 100 is not proof that nothing matches).
    pub fn like(&self, field: &str, p: &str) -> f64 {
        let start = pattern::prefix(p);
        if start.whole {
            return self.equal(field, &Value::Str(start.text));
        }
        let Some(c) = self.column(field) else {
            return DEFAULT_MATCH_SEL;
        };
        let parsed = pattern::Pattern::new(p);
        let matches = |v: &Value| v.as_str().is_some_and(|s| parsed.matches(s));
        let listed = c.most_common.iter().chain(&c.frequent);
        let matched: f64 = listed
            .clone()
            .filter(|(v, _)| matches(v))
            .map(|(_, f)| f)
            .sum();
        let listed: f64 = listed.map(|(_, f)| f).sum();
        let rest = (1.0 - listed - c.null_fraction).max(0.0);
        let heuristic = pattern::rest_selectivity(p);
        let (lower, upper) = if start.text.is_empty() {
            (Bound::Unbounded, Bound::Unbounded)
        } else {
            let upper = pattern::successor(&start.text).map(Value::Str);
            (
                Bound::Included(Value::Str(start.text.clone())),
                upper.map_or(Bound::Unbounded, Bound::Excluded),
            )
        };
        let (lower, upper) = (as_ref(&lower), as_ref(&upper));
        let prefixed = if start.text.is_empty() {
            1.0
        } else {
            c.histogram
                .fraction_between(lower, upper)
                .or_else(|| min_max_fraction(c, lower, upper))
                .unwrap_or(DEFAULT_RANGE_SEL)
        };
        let inside: Vec<&Value> = c
            .histogram
            .bounds()
            .iter()
            .filter(|v| {
                let above = match lower {
                    Bound::Included(l) => *v >= l,
                    _ => true,
                };
                let below = match upper {
                    Bound::Excluded(u) => *v < u,
                    _ => true,
                };
                above && below && v.as_str().is_some()
            })
            .collect();
        let share = if inside.is_empty() {
            heuristic
        } else {
            let n = inside.len() as f64;
            let hits = inside.iter().filter(|v| matches(v)).count() as f64;
            let seen = ((hits / n).max(0.5 / n)).min(1.0 - 0.5 / n).max(0.0);
            let weight = (n / PATTERN_BOUNDS as f64).min(1.0);
            weight * seen + (1.0 - weight) * heuristic
        };
        clamp01((matched + rest * prefixed * share).min(1.0 - c.null_fraction))
    }

    /// A condition with `AND` and `OR` (PostgreSQL's `clauselist_selectivity` and
    /// `clauselist_selectivity_or`): the predicates ANDed at one level estimated together
    /// as a conjunction (correlations and all), times each nested condition's; an `OR` as
    /// independent events, `1 − Π (1 − sᵢ)`. (An `OR` of `=` and `IN` on one field is an
    /// `IN` by then: [`crate::Query::filter_where`].)
    pub fn condition(&self, condition: &Condition) -> f64 {
        match condition {
            Condition::Is(p) => self.conjunction([p]),
            Condition::All(cs) => {
                let leaves = cs.iter().filter_map(|c| match c {
                    Condition::Is(p) => Some(p),
                    _ => None,
                });
                let nested: f64 = cs
                    .iter()
                    .filter(|c| !matches!(c, Condition::Is(_)))
                    .map(|c| self.condition(c))
                    .product();
                clamp01(self.conjunction(leaves) * nested)
            }
            Condition::Any(cs) => {
                let none: f64 = cs.iter().map(|c| 1.0 - self.condition(c)).product();
                clamp01(1.0 - none)
            }
        }
    }

    /// [`Estimator::constraint`] without its patterns.
    fn constraint_without_patterns(&self, field: &str, constraint: &Constraint) -> f64 {
        let excluded = &constraint.excluded;
        if constraint.is_null {
            // NULL satisfies no comparison, nor IS NOT NULL.
            let compared = constraint.values.is_some()
                || constraint.has_range()
                || constraint.not_null
                || !excluded.is_empty()
                || !constraint.patterns.is_empty();
            return if compared { 0.0 } else { self.is_null(field) };
        }
        if excluded.iter().any(Value::is_null) {
            return 0.0;
        }
        let values = constraint.values.as_ref().map(|values| {
            let kept: Vec<Value> = values
                .iter()
                .filter(|v| constraint.in_range(v) && excluded.binary_search(v).is_err())
                .cloned()
                .collect();
            self.in_list(field, &kept)
        });
        let range = constraint
            .has_range()
            .then(|| self.range(field, as_ref(&constraint.lower), as_ref(&constraint.upper)));
        let without_excluded = |kept: f64| {
            let removed: f64 = excluded
                .iter()
                .filter(|v| constraint.in_range(v))
                .map(|v| self.equal(field, v))
                .sum();
            clamp01(kept - removed)
        };
        match (values, range) {
            (Some(v), Some(r)) => v.min(r),
            (Some(v), None) => v,
            (None, Some(r)) if excluded.is_empty() => r,
            (None, Some(r)) => without_excluded(r),
            (None, None) if excluded.is_empty() && !constraint.not_null => 1.0,
            (None, None) if excluded.is_empty() => 1.0 - self.is_null(field),
            (None, None) => {
                let null = self.column(field).map_or(0.0, |c| c.null_fraction);
                without_excluded(1.0 - null)
            }
        }
    }

    /// A conjunction of predicates (see the module docs).
    pub fn conjunction<'p>(&self, predicates: impl IntoIterator<Item = &'p Predicate>) -> f64 {
        let by_field = constraints(predicates);
        self.constraints(&by_field)
    }

    /// A conjunction already grouped by field.
    pub fn constraints(&self, by_field: &Constraints<'_>) -> f64 {
        let single = self.singles(by_field);
        self.combine(by_field, &single)
    }

    /// Each field's own selectivity.
    pub fn singles<'f>(&self, by_field: &Constraints<'f>) -> FieldMap<'f, f64> {
        by_field
            .iter()
            .map(|(f, c)| (f, self.constraint(f, c)))
            .collect()
    }

    /// Combines the fields of `single` (each field's own selectivity, for a subset of
    /// `by_field`'s fields) into the conjunction's.
    ///
    /// A chain (below) estimates its fields from distinct counts, and can say more than the
    /// same fields multiplied independently: binding one more field can start a chain and
    /// raise the estimate above what the conjunction without that binding was given. So the
    /// estimate is also capped, for each chained field, by the conjunction without the field
    /// times what the field's constraint keeps besides its values (1 for a plain `=` or
    /// `IN`): a narrower query is never estimated above a wider one.
    pub fn combine(&self, by_field: &Constraints<'_>, single: &FieldMap<'_, f64>) -> f64 {
        let (mut sel, chained) = self.chained(by_field, single);
        for field in chained {
            let mut without = single.clone();
            without.remove(field);
            // What the field's constraint says besides its values (a `!=`, a range): what it
            // kept before an `=` bound it.
            let rest = by_field.get(field).map_or(1.0, |c| {
                let rest = Constraint {
                    values: None,
                    ..c.clone()
                };
                self.constraint(field, &rest)
            });
            sel = sel.min(self.combine(by_field, &without) * rest);
        }
        sel
    }

    /// [`Estimator::combine`] through the longest chain alone, and the chain's fields.
    fn chained<'s>(
        &self,
        by_field: &Constraints<'_>,
        single: &FieldMap<'s, f64>,
    ) -> (f64, Vec<&'s str>) {
        let Some(least) = single.values().copied().reduce(f64::min) else {
            return (1.0, Vec::new());
        };
        // The longest composite prefix whose fields are each bound to values (`=` or `IN`).
        let values_of = |f: &String| {
            by_field
                .get(f)
                .filter(|c| !c.is_null && single.contains_key(f))
                .and_then(|c| c.values.as_ref())
                .map_or(0, Vec::len)
        };
        let bound_to_one = |f: &String| values_of(f) > 0;
        let chain = self
            .stats
            .prefixes
            .iter()
            .filter(|p| p.fields.len() >= 2 && p.fields.iter().all(bound_to_one))
            .max_by_key(|p| p.fields.len());
        let mut sel = 1.0;
        let mut chained: Vec<&'s str> = Vec::new();
        let grouped = chain.and_then(|prefix| self.group_selectivity(prefix, by_field));
        if let (Some(prefix), Some(group)) = (chain, grouped) {
            // The group's own list answers for its fields together.
            sel = group;
            for f in &prefix.fields {
                if let Some((k, _)) = single.get_key_value(f) {
                    chained.push(k);
                }
            }
        } else if let Some(prefix) = chain {
            // The chain's fields, as `single` names them (every one is there: bound above).
            let named = |f: &String| single.get_key_value(f).map(|(k, _)| k);
            if let Some(first) = named(&prefix.fields[0]) {
                sel = single[first];
                chained.push(first);
            }
            for i in 1..prefix.fields.len() {
                let Some(field) = named(&prefix.fields[i]) else {
                    continue;
                };
                let before = self.stats.prefix_distinct(&prefix.fields[..i]);
                let with = self.stats.prefix_distinct(&prefix.fields[..=i]);
                // Each of the field's values keeps D(f1..fi-1)/D(f1..fi) of the rows the
                // fields before it keep.
                let values = values_of(&prefix.fields[i]) as f64;
                let factor = match (before, with) {
                    (Some(before), Some(with)) if with > 0.0 => clamp01(values * before / with),
                    _ => single[field],
                };
                sel *= factor;
                chained.push(field);
            }
        }
        for (field, s) in single.iter() {
            if !chained.contains(&field) {
                sel *= s;
            }
        }
        (clamp01(sel.min(least)), chained)
    }
}

/// The most combinations of a group's values estimated one by one from its most-common list
/// (an `IN` on each field multiplies them); past it, the distinct counts' chain answers.
const MAX_GROUP_COMBINATIONS: usize = 256;
/// The most fields a group's list is read for (wider groups use the distinct counts).
const MAX_GROUP_FIELDS: usize = 32;

impl Estimator<'_> {
    /// The share of rows whose values for `group`'s fields are among the values the
    /// constraints bind them to, from the group's most-common combinations (PostgreSQL's
    /// `mcv_clauselist_selectivity`): a listed combination has its frequency; one not listed
    /// none when the list is complete, else the rows outside the list shared among the
    /// combinations outside it, at most the least listed frequency (as for one field's
    /// values, `Estimator::equal`). `None` without a list, or with too many combinations.
    fn group_selectivity(&self, group: &PrefixStats, by_field: &Constraints<'_>) -> Option<f64> {
        if group.most_common.is_empty() && !group.complete {
            return None;
        }
        // Each field's values as its constraint keeps them (in its range, not excluded), in
        // one buffer: `ends[i]` closes field i's run.
        let mut kept: Vec<&Value> = Vec::new();
        let mut ends = [0usize; MAX_GROUP_FIELDS];
        if group.fields.len() > ends.len() {
            return None;
        }
        for (i, field) in group.fields.iter().enumerate() {
            let c = by_field.get(field)?;
            kept.extend(
                c.values
                    .as_ref()?
                    .iter()
                    .filter(|v| c.in_range(v) && c.excluded.binary_search(v).is_err()),
            );
            ends[i] = kept.len();
        }
        let fields = group.fields.len();
        let run = |i: usize| &kept[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        let combinations = (0..fields)
            .try_fold(1usize, |n, i| n.checked_mul(run(i).len()))
            .filter(|n| *n <= MAX_GROUP_COMBINATIONS)?;
        // What a combination not listed gets, worked out at the first one (a complete list,
        // up to a thousand combinations, needs none of it).
        let unlisted = || {
            if group.complete {
                return (0.0, 0.0);
            }
            let listed: f64 = group.most_common.iter().map(|(_, f)| f).sum();
            let nulls = group
                .fields
                .iter()
                .filter_map(|f| self.column(f))
                .map(|c| c.null_fraction)
                .fold(0.0, f64::max);
            let others = (group.distinct - group.most_common.len() as f64).max(1.0);
            let least = group
                .most_common
                .iter()
                .map(|(_, f)| *f)
                .reduce(f64::min)
                .unwrap_or(1.0);
            let rest = (1.0 - listed - nulls).max(0.0);
            ((rest / others).min(least), least.min(rest))
        };
        let mut unlisted_once: Option<(f64, f64)> = None;
        let mut sum = 0.0;
        let mut combination: [&Value; MAX_GROUP_FIELDS] = [&Value::Null; MAX_GROUP_FIELDS];
        for n in 0..combinations {
            let mut rest = n;
            for (i, slot) in combination.iter_mut().enumerate().take(fields) {
                let values = run(i);
                *slot = values[rest % values.len()];
                rest /= values.len();
            }
            sum += match group.frequency_of_refs(&combination[..fields]) {
                Some(f) => f,
                None => {
                    // Off the list: the rows off it spread evenly over the combinations off
                    // it, or the fields' own frequencies multiplied (PostgreSQL's fallback
                    // for what its list does not cover), whichever is more — an even spread
                    // puts a combination of a common town and a rare name (356 rows of the
                    // demo's 250,000) at 15, the product at 162; the product puts a pair of
                    // correlated fields' second combination at 0.5 rows where the spread
                    // says 100 — and at most the least listed combination.
                    let (spread, least) = *unlisted_once.get_or_insert_with(unlisted);
                    let independent: f64 = group
                        .fields
                        .iter()
                        .zip(&combination[..fields])
                        .map(|(f, v)| self.equal(f, v))
                        .product();
                    spread.max(independent).min(least)
                }
            };
        }
        Some(clamp01(sum))
    }
}

fn as_ref(bound: &Bound<Value>) -> Bound<&Value> {
    match bound {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(v) => Bound::Included(v),
        Bound::Excluded(v) => Bound::Excluded(v),
    }
}

/// Without a histogram, a range's share by linear interpolation between min and max.
fn min_max_fraction(c: &ColumnStats, lower: Bound<&Value>, upper: Bound<&Value>) -> Option<f64> {
    let (min, max) = (c.min.as_ref()?.as_scalar()?, c.max.as_ref()?.as_scalar()?);
    if max <= min {
        return None;
    }
    let at = |bound: Bound<&Value>, open: f64| match bound {
        Bound::Unbounded => Some(open),
        Bound::Included(v) | Bound::Excluded(v) => v
            .as_scalar()
            .map(|x| ((x - min) / (max - min)).clamp(0.0, 1.0)),
    };
    Some((at(upper, 1.0)? - at(lower, 0.0)?).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::PrefixStats;

    fn skewed() -> TableStats {
        let mut stats = TableStats {
            row_count: 1_000_000,
            avg_row_bytes: 100.0,
            ..TableStats::default()
        };
        stats.columns.insert(
            "status".into(),
            ColumnStats {
                null_fraction: 0.01,
                distinct: 5.0,
                most_common: vec![(Value::from("done"), 0.9), (Value::from("failed"), 0.06)],
                ..ColumnStats::default()
            },
        );
        stats
    }

    #[test]
    fn equality_uses_the_frequency_or_the_rest_spread_over_the_other_values() {
        let stats = skewed();
        let e = Estimator::new(&stats);
        assert_eq!(e.equal("status", &Value::from("done")), 0.9);
        // (1 - 0.96 - 0.01) / (5 - 2)
        let other = e.equal("status", &Value::from("pending"));
        assert!((other - 0.01).abs() < 1e-12, "{other}");
        assert_eq!(e.equal("status", &Value::Null), 0.0);
        assert_eq!(e.equal("unknown", &Value::Int(1)), DEFAULT_EQ_SEL);
    }

    #[test]
    fn an_in_list_sums_its_distinct_values() {
        let stats = skewed();
        let e = Estimator::new(&stats);
        let values = [
            Value::from("done"),
            Value::from("pending"),
            Value::from("done"),
        ];
        assert!((e.in_list("status", &values) - 0.91).abs() < 1e-12);
    }

    #[test]
    fn predicates_on_one_field_combine_before_estimating() {
        let stats = skewed();
        let e = Estimator::new(&stats);
        let both = [
            Predicate::eq("status", "done"),
            Predicate::new("status", Op::IsNull),
        ];
        assert_eq!(e.conjunction(&both), 0.0, "NULL is never equal to anything");
        let contradictory = [
            Predicate::eq("status", "done"),
            Predicate::eq("status", "failed"),
        ];
        assert_eq!(e.conjunction(&contradictory), 0.0);
    }

    #[test]
    fn not_equal_keeps_the_non_null_rows_other_than_the_value() {
        let stats = skewed();
        let e = Estimator::new(&stats);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // 1 − 1 % NULL − 90 % "done".
        assert!(close(
            e.conjunction(&[Predicate::ne("status", "done")]),
            0.09
        ));
        // Against the value list: "failed" stays, "done" goes.
        let listed = [
            Predicate::in_list("status", ["done".into(), "failed".into()]),
            Predicate::ne("status", "done"),
        ];
        assert!(close(e.conjunction(&listed), 0.06));
        assert_eq!(
            e.conjunction(&[Predicate::ne("status", "x"), Predicate::is_null("status")]),
            0.0,
            "NULL is never unequal either"
        );
        assert_eq!(e.conjunction(&[Predicate::ne("status", Value::Null)]), 0.0);
        let p = Predicate::ne("status", "done");
        assert!(p.matches(&Value::from("failed")));
        assert!(!p.matches(&Value::from("done")));
        assert!(!p.matches(&Value::Null));
        assert_eq!(p.to_string(), "status != 'done'");
    }

    #[test]
    fn a_determined_field_adds_no_selectivity_through_the_composite_distinct_count() {
        let mut stats = TableStats {
            row_count: 1_000_000,
            ..TableStats::default()
        };
        let uniform = |distinct| ColumnStats {
            distinct,
            ..ColumnStats::default()
        };
        stats.columns.insert("town".into(), uniform(1_000.0));
        stats.columns.insert("zip".into(), uniform(1_000.0));
        stats
            .prefixes
            .push(PrefixStats::new(vec!["town".into(), "zip".into()], 1_000.0));
        let e = Estimator::new(&stats);
        let q = [
            Predicate::eq("town", "Redmond"),
            Predicate::eq("zip", "98052"),
        ];
        assert!((e.conjunction(&q) - 0.001).abs() < 1e-12);
        stats.prefixes[0].distinct = 1_000_000.0;
        let e = Estimator::new(&stats);
        assert!(
            (e.conjunction(&q) - 0.000_001).abs() < 1e-12,
            "independent: the product"
        );
    }

    #[test]
    fn a_group_list_answers_for_correlated_fields() {
        // Each airport has two airlines of its own, 90 % / 10 %.
        let fields = ["airport".to_string(), "airline".to_string()];
        let mut b = crate::stats::TableStatsBuilder::new(&fields, &[fields.to_vec()]);
        for i in 0..100_000i64 {
            let (airport, airline) = (
                Value::Int(i % 100),
                Value::Int((i % 100) * 10 + i64::from((i / 100) % 10 == 0)),
            );
            b.add_row(
                |f| Some(if f == "airport" { &airport } else { &airline }),
                20,
            );
        }
        let stats = b.finish();
        let e = Estimator::new(&stats);
        let pair = |a: i64, l: i64| {
            e.conjunction(&[Predicate::eq("airport", a), Predicate::eq("airline", l)])
        };
        assert!((pair(7, 70) - 0.009).abs() < 1e-9, "{}", pair(7, 70));
        // Capped by the airline's own estimate (not a most-common value of its column: the
        // rest shared by the distinct count, which the sketch knows within a few per cent).
        assert!((pair(7, 71) - 0.001).abs() < 0.0001, "{}", pair(7, 71));
        assert_eq!(pair(7, 72), 0.0, "a complete list: the pair does not occur");
        assert_eq!(pair(7, 30), 0.0, "another airport's airline");
        let both = e.conjunction(&[
            Predicate::eq("airport", 7),
            Predicate::new(
                "airline",
                crate::query::Op::In(vec![Value::Int(70), Value::Int(71)]),
            ),
        ]);
        assert!((both - 0.01).abs() < 1e-4, "{both}");
        // Without the group's list, the distinct counts' chain says what it always said.
        let mut bare = stats.clone();
        bare.prefixes[0].most_common.clear();
        bare.prefixes[0].complete = false;
        let chain = Estimator::new(&bare)
            .conjunction(&[Predicate::eq("airport", 7), Predicate::eq("airline", 72)]);
        assert!(
            chain > 0.0005,
            "about 98 rows of 100,000 for a pair that never occurs: {chain}"
        );
    }

    /// A combination off an incomplete list: the larger of the rows off the list spread
    /// evenly and the fields' frequencies multiplied, at most the least listed combination.
    #[test]
    fn an_unlisted_combination_of_a_common_and_a_rare_value_keeps_their_product() {
        let mut stats = TableStats {
            row_count: 100_000,
            ..Default::default()
        };
        let column = |common: &[(i64, f64)], distinct: f64| ColumnStats {
            distinct,
            most_common: common.iter().map(|&(v, f)| (Value::Int(v), f)).collect(),
            ..Default::default()
        };
        // Town 0 holds 20 % of the rows; name 39 is rare (0.5 %, on its list).
        stats
            .columns
            .insert("town".into(), column(&[(0, 0.2), (1, 0.1)], 300.0));
        stats
            .columns
            .insert("name".into(), column(&[(0, 0.1), (39, 0.005)], 40.0));
        let mut group = PrefixStats::new(vec!["town".into(), "name".into()], 10_000.0);
        group.most_common = vec![
            (vec![Value::Int(0), Value::Int(0)], 0.02),
            (vec![Value::Int(1), Value::Int(0)], 0.01),
        ];
        stats.prefixes.push(group);
        let e = Estimator::new(&stats);
        let pair =
            |t: i64, n: i64| e.conjunction(&[Predicate::eq("town", t), Predicate::eq("name", n)]);
        // 0.2 · 0.005 = 0.001 (an even spread says 0.97 / 9,998 ≈ 0.0001).
        assert!((pair(0, 39) - 0.001).abs() < 1e-9, "{}", pair(0, 39));
        // Two uncommon values: their product is below the even spread, which stands.
        let spread = 0.97 / 9_998.0;
        assert!((pair(200, 20) - spread).abs() < 1e-9, "{}", pair(200, 20));
    }

    #[test]
    fn a_one_value_range_is_estimated_as_the_value() {
        let fields = ["uni".to_string()];
        let mut b = crate::stats::TableStatsBuilder::new(&fields, &[]);
        for i in 0..100_000i64 {
            let v = Value::Int(i % 10_000);
            b.add_row(|_| Some(&v), 10);
        }
        let stats = b.finish();
        let e = Estimator::new(&stats);
        let seven = Value::Int(3_202);
        let point = e.range("uni", Bound::Included(&seven), Bound::Included(&seven));
        let equal = e.equal("uni", &seven);
        assert!((point - equal).abs() < 1e-12, "{point} against {equal}");
        assert!(
            (point * 100_000.0 - 10.0).abs() < 1.0,
            "about 10 rows: {point}"
        );
        // Excluded ends hold nothing of their own: the histogram's share alone.
        let open = e.range("uni", Bound::Excluded(&seven), Bound::Excluded(&seven));
        assert!(open < 1e-9);
    }
}
