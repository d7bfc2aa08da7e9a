//! What the planner asks the engine to read before it plans, where statistics are too
//! coarse to trust, and how it uses the answers.
//!
//! - **Dives** (InnoDB's index dives, `records_in_range`): the engine counts an index's
//!   entries in the query's range, stopping at [`DIVE_LIMIT`]. A count that finished is the
//!   exact number of entries the index plan reads; one that stopped is a lower bound. The
//!   planner asks for a dive on an index whose bound fields' estimate rests on
//!   - no statistics for a bound field (never analysed, no table file sketched yet);
//!   - no composite-prefix distinct count for two or more bound fields;
//!   - a range that reaches past the histogram's first or last bound, where interpolation
//!     knows nothing;
//!   - the spread of the non-most-common rows (`rest / (NDV − |MCV|)`) for an equality,
//!     when that spread is at least [`COARSE_FRACTION`] of the rows: a value off the list
//!     may then hold anything from none of them to several times the average.
//! - **Extremes** (PostgreSQL's `get_actual_variable_range`): when a range's lower bound
//!   lies at or past the last histogram bound (or its upper bound at or before the first) —
//!   the ascending-key case, where new rows have keys past anything the statistics saw —
//!   the engine reads the field's true minimum and maximum from an index that leads with
//!   it. [`with_extremes`] extends the column's statistics to them: the rows the statistics
//!   did not see (`row_count − collected_rows`) are spread evenly past the old bound, and
//!   the last histogram bound moves to the true extreme.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::query::{IndexState, Query, TableInfo};
use crate::selectivity::{Constraint, Constraints, Estimator, constraints};
use crate::sketch::Histogram;
use crate::stats::{ColumnStats, Derived, TableStats};
use crate::value::Value;

/// Entries a dive counts at most.
/// TUNING: InnoDB reads at most a few leaf pages per dive. Counting costs about 40 ns an
/// entry through the merging cursor: 1,000 entries made the composite shape's planning
/// 40–60 µs against a target of 20; 250 keep it near 13 µs, and the regret harness (where
/// the choice turns on thousands of rows, not hundreds) chose the same way with either.
pub const DIVE_LIMIT: u64 = 250;

/// An equality's spread estimate is coarse when it is at least this fraction of the rows.
/// TUNING: an index plan that fetches beats a scan up to about 5 % of the rows with the
/// default constants; a spread of 0.1 % or more can hide a value on either side of that.
pub const COARSE_FRACTION: f64 = 0.001;

/// A bounded count of an index's entries in the query's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dive {
    /// Entries counted.
    pub entries: u64,
    /// Whether the count reached the end of the range (else it stopped at the limit).
    pub complete: bool,
}

/// What the engine read for one query.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Observations {
    /// Per index: its dive.
    pub dives: BTreeMap<String, Dive>,
    /// Per field: its true smallest and largest non-null values.
    pub extremes: BTreeMap<String, (Value, Value)>,
    /// The table's rows, counted now (the engine's live count from its files and
    /// memtables). When given, it replaces the statistics' `row_count`, so the engine can
    /// plan on shared statistics without copying them to update one number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

/// What the planner wants read before planning a query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    /// `(index, bound fields)`: count this index's entries in the range of these fields.
    pub dives: Vec<(String, Vec<String>)>,
    /// `(field, index)`: read this field's true extremes from this index (it leads with it).
    pub extremes: Vec<(String, String)>,
}

impl Wanted {
    /// Whether nothing is wanted.
    pub fn is_empty(&self) -> bool {
        self.dives.is_empty() && self.extremes.is_empty()
    }
}

/// The leading index fields bound by equalities, then one with a range (as the planner binds
/// an index).
pub(crate) fn bound_fields(fields: &[String], by_field: &Constraints<'_>) -> Vec<String> {
    let mut bound = Vec::new();
    for field in fields {
        let Some(c) = by_field.get(field) else {
            break;
        };
        if c.key_values().is_some() {
            bound.push(field.clone());
            continue;
        }
        if c.binds_range() {
            bound.push(field.clone());
        }
        break;
    }
    bound
}

/// What to read before planning `query`.
pub fn wanted(query: &Query, table: &TableInfo, stats: &TableStats) -> Wanted {
    wanted_with_rows(query, table, stats, stats.row_count)
}

/// [`wanted`] on a table that holds `live` rows now. When it holds more than the statistics
/// were collected from, a range open at one end (`ts > x`) reaches rows past the histogram
/// whatever `x` is — an ascending key's new rows all lie past the old maximum — so the true
/// extremes are read for it too: `ts > x` just below the analysed maximum was estimated at
/// the analysed rows above `x` (1,357) when the 25,000 rows written since were above it as
/// well (26,107 returned; q-error 19.2 on the regret bench).
pub fn wanted_with_rows(query: &Query, table: &TableInfo, stats: &TableStats, live: u64) -> Wanted {
    let grown = live > stats.collected_rows();
    let by_field = constraints(&query.predicates);
    let estimator = Estimator::new(stats);
    let mut out = Wanted::default();
    for index in table
        .indexes
        .iter()
        .filter(|i| i.state == IndexState::Ready)
    {
        let bound = bound_fields(&index.fields, &by_field);
        if bound.is_empty() {
            continue;
        }
        let coarse = (bound.len() >= 2 && stats.prefix_distinct(&bound).is_none())
            || bound
                .iter()
                .any(|f| field_is_coarse(f, &by_field[f], stats, &estimator));
        if coarse {
            out.dives.push((index.name.clone(), bound.clone()));
        }
        let leading = &index.fields[0];
        let c = &by_field[leading];
        let open = matches!(
            (&c.lower, &c.upper),
            (Bound::Included(_) | Bound::Excluded(_), Bound::Unbounded)
                | (Bound::Unbounded, Bound::Included(_) | Bound::Excluded(_))
        );
        let column = stats.columns.get(leading);
        if (past_the_histogram(c, column) || (grown && open && column.is_some()))
            && !out.extremes.iter().any(|(f, _)| f == leading)
        {
            out.extremes.push((leading.clone(), index.name.clone()));
        }
    }
    out
}

fn field_is_coarse(field: &str, c: &Constraint, stats: &TableStats, estimator: &Estimator) -> bool {
    let Some(column) = stats.columns.get(field) else {
        return true;
    };
    if c.has_range() && (column.histogram.is_empty() || past_the_histogram(c, Some(column))) {
        return true;
    }
    match &c.values {
        Some(values) => values.iter().any(|v| {
            column.frequency_of(v).is_none() && estimator.equal(field, v) >= COARSE_FRACTION
        }),
        None => false,
    }
}

/// Whether `c`'s range lies (in part) past the histogram's last bound or before its first.
fn past_the_histogram(c: &Constraint, column: Option<&ColumnStats>) -> bool {
    let Some(column) = column else { return false };
    let bounds = column.histogram.bounds();
    let (Some(first), Some(last)) = (
        bounds.first().or(column.min.as_ref()),
        bounds.last().or(column.max.as_ref()),
    ) else {
        return false;
    };
    let low_past = match &c.lower {
        Bound::Included(v) | Bound::Excluded(v) => v >= last,
        Bound::Unbounded => false,
    };
    let high_before = match &c.upper {
        Bound::Included(v) | Bound::Excluded(v) => v <= first,
        Bound::Unbounded => false,
    };
    low_past || high_before
}

/// `stats` with each observed field's statistics extended to its true extremes.
pub fn with_extremes(
    stats: &TableStats,
    extremes: &BTreeMap<String, (Value, Value)>,
) -> TableStats {
    let mut out = stats.clone();
    let rows = stats.row_count as f64;
    let unseen = if rows > 0.0 {
        ((rows - stats.collected_rows() as f64) / rows).clamp(0.0, 1.0)
    } else {
        0.0
    };
    for (field, (min, max)) in extremes {
        let Some(column) = out.columns.get_mut(field) else {
            continue;
        };
        extend(column, min, max, unseen);
    }
    out
}

/// Extends `column` to `[min, max]`, the fraction `unseen` of the rows being new values past
/// the old maximum (or before the old minimum, whichever moved; past the maximum when both).
fn extend(column: &mut ColumnStats, min: &Value, max: &Value, unseen: f64) {
    let grows_up = column.max.as_ref().is_some_and(|m| max > m);
    let grows_down = column.min.as_ref().is_some_and(|m| min < m);
    if !grows_up && !grows_down {
        return;
    }
    let bounds = column.histogram.bounds().to_vec();
    let buckets = bounds.len().saturating_sub(1);
    // The new rows are not null and not most common: what the statistics saw shrinks.
    let kept = 1.0 - unseen;
    column.null_fraction *= kept;
    // The frequencies change where they lie: the figures derived from them go.
    column.derived = Derived::default();
    for (_, f) in column.most_common.iter_mut() {
        *f *= kept;
    }
    let rest = (1.0 - column.null_fraction - column.most_common_fraction()).max(0.0);
    let old_rest = rest - unseen;
    // Buckets of the same depth as the old ones, enough to hold the new rows.
    let added = if buckets == 0 || old_rest <= 0.0 {
        1
    } else {
        ((unseen / (old_rest / buckets as f64)).round() as usize).clamp(1, 1000)
    };
    let mut bounds = bounds;
    if grows_up {
        let from = column.max.clone().unwrap_or_else(|| max.clone());
        if unseen == 0.0 || bounds.is_empty() {
            // Nothing new: the last bound moves out to the true maximum.
            match bounds.last_mut() {
                Some(last) => *last = max.clone(),
                None => bounds = vec![from.clone(), max.clone()],
            }
        } else {
            bounds.extend(steps(&from, max, added));
        }
        column.max = Some(max.clone());
    } else {
        let from = column.min.clone().unwrap_or_else(|| min.clone());
        if unseen == 0.0 || bounds.is_empty() {
            match bounds.first_mut() {
                Some(first) => *first = min.clone(),
                None => bounds = vec![min.clone(), from.clone()],
            }
        } else {
            let mut below = steps(&from, min, added);
            below.reverse();
            below.extend(bounds);
            bounds = below;
        }
        column.min = Some(min.clone());
    }
    if let Some(histogram) = Histogram::from_bounds(bounds) {
        column.histogram = histogram;
    }
}

/// `n` values stepping evenly from `from` (excluded) to `to` (included); for values that
/// are not numbers, just `to`.
fn steps(from: &Value, to: &Value, n: usize) -> Vec<Value> {
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) if x.is_finite() => Some(*x),
        _ => None,
    };
    match (number(from), number(to)) {
        (Some(a), Some(b)) if n > 1 => (1..=n)
            .map(|i| {
                let x = a + (b - a) * i as f64 / n as f64;
                match to {
                    Value::Int(_) => Value::Int(x.round() as i64),
                    _ => Value::Float(x),
                }
            })
            .collect(),
        _ => vec![to.clone()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{IndexInfo, Predicate, Projection};

    fn table() -> TableInfo {
        TableInfo::new(
            "events",
            &["id"],
            vec![
                IndexInfo::new("by_status", &["status"], Projection::KeysOnly),
                IndexInfo::new("by_ts", &["ts"], Projection::KeysOnly),
            ],
        )
    }

    fn stats() -> TableStats {
        let mut stats = TableStats {
            row_count: 1_000,
            avg_row_bytes: 50.0,
            ..Default::default()
        };
        stats.columns.insert(
            "status".into(),
            ColumnStats {
                distinct: 300.0,
                most_common: vec![(Value::from("done"), 0.5)],
                ..Default::default()
            },
        );
        stats.columns.insert(
            "ts".into(),
            ColumnStats {
                distinct: 1_000.0,
                histogram: Histogram::from_bounds((0..=10).map(|i| Value::Int(i * 100)).collect())
                    .expect("sorted"),
                min: Some(Value::Int(0)),
                max: Some(Value::Int(1_000)),
                ..Default::default()
            },
        );
        stats
    }

    fn query(p: Predicate) -> Query {
        Query::default().filter(p)
    }

    #[test]
    fn a_grown_table_reads_the_extremes_for_a_range_open_at_one_end() {
        let (t, s) = (table(), stats());
        let extremes = |p, live| wanted_with_rows(&query(p), &t, &s, live).extremes;
        let by_ts = vec![("ts".to_string(), "by_ts".to_string())];
        // Inside the histogram, open above: the rows written since may all lie above.
        assert_eq!(extremes(Predicate::gt("ts", 900), 1_300), by_ts);
        assert_eq!(extremes(Predicate::lt("ts", 100), 1_300), by_ts);
        // Not grown, or closed at both ends: the histogram answers.
        assert!(extremes(Predicate::gt("ts", 900), 1_000).is_empty());
        assert!(extremes(Predicate::between("ts", 200, 900), 1_300).is_empty());
    }

    #[test]
    fn dives_are_wanted_only_where_the_statistics_are_coarse() {
        let (t, s) = (table(), stats());
        let w = |p| wanted(&query(p), &t, &s);
        assert!(
            w(Predicate::eq("status", "done")).is_empty(),
            "an MCV is known"
        );
        // Off the list: 0.5 spread over 299 values is 0.17 % of the rows each.
        assert_eq!(
            w(Predicate::eq("status", "rare")).dives,
            vec![("by_status".to_string(), vec!["status".to_string()])]
        );
        assert!(
            w(Predicate::between("ts", 200, 300)).is_empty(),
            "inside the histogram"
        );
        let past = w(Predicate::gt("ts", 1_000));
        assert_eq!(past.extremes, vec![("ts".to_string(), "by_ts".to_string())]);
        assert_eq!(past.dives.len(), 1);
        let mut bare = s.clone();
        bare.columns.clear();
        assert_eq!(
            wanted(&query(Predicate::eq("status", "done")), &t, &bare)
                .dives
                .len(),
            1
        );
    }

    #[test]
    fn true_extremes_spread_the_unseen_rows_past_the_old_maximum() {
        let mut s = stats();
        s.collected_rows = 1_000;
        s.row_count = 2_000;
        let extended = with_extremes(
            &s,
            &BTreeMap::from([("ts".to_string(), (Value::Int(0), Value::Int(2_000)))]),
        );
        let e = Estimator::new(&extended);
        let past = e.range("ts", Bound::Excluded(&Value::Int(1_000)), Bound::Unbounded);
        assert!((past - 0.5).abs() < 0.02, "{past}");
        let top = e.range("ts", Bound::Excluded(&Value::Int(1_900)), Bound::Unbounded);
        assert!((top - 0.05).abs() < 0.02, "{top}");
        // Nothing unseen: the last bound just moves out.
        s.row_count = 1_000;
        let moved = with_extremes(
            &s,
            &BTreeMap::from([("ts".to_string(), (Value::Int(0), Value::Int(1_100)))]),
        );
        assert_eq!(
            moved.columns["ts"].histogram.bounds().last(),
            Some(&Value::Int(1_100))
        );
    }

    #[test]
    fn extremes_read_after_an_estimate_scale_what_the_next_estimate_reads() {
        let mut s = stats();
        s.collected_rows = 1_000;
        s.row_count = 2_000;
        // A most-common list long enough to be searched in value order.
        s.columns.insert(
            "ts".into(),
            ColumnStats {
                distinct: 1_000.0,
                most_common: (0..20).map(|i| (Value::Int(i * 50), 0.01)).collect(),
                histogram: Histogram::from_bounds((0..=10).map(|i| Value::Int(i * 100)).collect())
                    .expect("sorted"),
                min: Some(Value::Int(0)),
                max: Some(Value::Int(1_000)),
                ..Default::default()
            },
        );
        let seen = BTreeMap::from([("ts".to_string(), (Value::Int(0), Value::Int(2_000)))]);
        let cold = with_extremes(&s, &seen);
        // Estimated before its extremes are read: the copy keeps the figures, and the
        // extension, which scales the frequencies where they lie, must drop them.
        Estimator::new(&s).equal("ts", &Value::Int(7));
        let warm = with_extremes(&s, &seen);
        for v in [0, 50, 7, 1_500] {
            let v = Value::Int(v);
            let (a, b) = (Estimator::new(&warm), Estimator::new(&cold));
            assert_eq!(a.equal("ts", &v), b.equal("ts", &v), "{v:?}");
        }
        let listed = Estimator::new(&warm).equal("ts", &Value::Int(50));
        assert!((listed - 0.005).abs() < 1e-12, "{listed}");
        let (common, _, least) = warm.columns["ts"].listed_frequencies();
        assert!((common - 0.1).abs() < 1e-12, "{common}");
        assert_eq!(least, Some(0.005));
    }

    #[test]
    fn a_complete_dive_replaces_the_estimate_and_bounds_the_result() {
        let (t, s) = (table(), stats());
        let q = query(Predicate::eq("status", "rare"));
        let model = crate::CostModel::default();
        let observed = Observations {
            dives: BTreeMap::from([(
                "by_status".to_string(),
                Dive {
                    entries: 0,
                    complete: true,
                },
            )]),
            ..Default::default()
        };
        let plan = crate::choose_observed(&q, &t, &s, &model, &observed).expect("plan");
        assert_eq!(plan.chosen.index.as_deref(), Some("by_status"));
        assert_eq!(plan.chosen.estimated_rows, 0.0);
        let blind = crate::choose(&q, &t, &s, &model).expect("plan");
        assert!(blind.chosen.estimated_rows > 1.0);
    }
}
