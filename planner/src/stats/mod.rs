//! Table and column statistics: what the selectivity estimates read.
//!
//! [`ColumnStats`] and [`TableStats`] are plain, serializable values — the catalog stores
//! them ([`TableStats::encode`], versioned) and tests write them by hand. The builders feed
//! rows through the sketches and can be merged (per shard, per table file) before
//! [`TableStatsBuilder::finish`] turns them into statistics.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::sketch::Histogram;
use crate::value::Value;

/// The version [`TableStats::encode`] writes and [`TableStats::decode`] reads.
pub const STATS_VERSION: u32 = 1;

/// Most-common values kept per column (PostgreSQL's default statistics target).
pub const DEFAULT_MCV_LIMIT: usize = 100;
/// Histogram buckets per column (the same default).
pub const DEFAULT_BUCKETS: usize = 100;
/// Rows sampled per column for histograms (PostgreSQL: 300 × the statistics target).
pub const DEFAULT_SAMPLE_ROWS: usize = 30_000;
/// Heavy-hitter counters per column: ten per most-common slot, so a count is at most
/// n / 1001 low.
pub const DEFAULT_COUNTERS: usize = DEFAULT_MCV_LIMIT * 10;
/// Most counters or sample rows a builder may have (a decoded one is refused above it).
pub const MAX_SKETCH_CAPACITY: usize = 1 << 20;
/// The largest statistics target a field may be given (PostgreSQL's limit too): a
/// most-common list of up to this many values.
pub const MAX_STATISTICS_TARGET: usize = 10_000;

/// One column's statistics. Frequencies are fractions of all rows, nulls included.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ColumnStats {
    /// Fraction of rows where the field is NULL or missing.
    pub null_fraction: f64,
    /// Distinct non-null values (estimated).
    pub distinct: f64,
    /// The most common values with their frequencies, most common first.
    pub most_common: Vec<(Value, f64)>,
    /// Values past the most-common list that the sample shows often, with their frequencies
    /// (estimated from the sample), sorted by value: a long tail's next values (ranks 100
    /// to 1,000 of a slowly falling distribution), which the most-common list's counters
    /// cannot count and the average of the rest underestimates several times. Empty in
    /// statistics written before it, and where no such value exists.
    #[serde(default)]
    pub frequent: Vec<(Value, f64)>,
    /// Equi-depth histogram over the non-null values that are not most-common.
    pub histogram: Histogram,
    /// Smallest non-null value seen.
    pub min: Option<Value>,
    /// Largest non-null value seen.
    pub max: Option<Value>,
    /// Average encoded width of a non-null value, in bytes.
    pub avg_width: f64,
    /// How closely the column's order follows the primary key's: Pearson's correlation
    /// between a row's place in key order and its value's rank, from −1 to 1 (PostgreSQL's
    /// `pg_stats.correlation`). Near ±1 the rows an index range names lie together in the
    /// table (a date in a table that grows in time order), so fetching them walks the table
    /// like a scan; near 0 they are scattered. 0 where nothing measured it (`analyze` does,
    /// for the leading field of each index; table-file sketches do not). Stored from
    /// statistics version 1 on as an optional field: statistics written without it read as 0.
    #[serde(default)]
    pub correlation: f64,
    /// Figures read from the two lists at each equality estimate, worked out at the first
    /// and kept (a clone keeps them too): not stored, and not compared. Leave it
    /// [`Derived::default`] when writing statistics by hand, and set it so again after
    /// changing a list where it lies (see [`Derived`] for what is noticed without).
    #[serde(skip)]
    pub derived: Derived,
}

impl Clone for ColumnStats {
    /// A copy with the figures derived so far, for its own lists (the same values, elsewhere):
    /// the planner copies a table's statistics to extend them at each query that reads a
    /// field's true extremes, and working the figures out again would sort each most-common
    /// list again.
    fn clone(&self) -> ColumnStats {
        let copy = ColumnStats {
            null_fraction: self.null_fraction,
            distinct: self.distinct,
            most_common: self.most_common.clone(),
            frequent: self.frequent.clone(),
            histogram: self.histogram.clone(),
            min: self.min.clone(),
            max: self.max.clone(),
            avg_width: self.avg_width,
            correlation: self.correlation,
            derived: Derived::default(),
        };
        if let Some(kept) = self.derived.0.get()
            && kept.from == Listed::source(self)
        {
            let moved = Listed {
                by_value: kept.by_value.clone(),
                from: Listed::source(&copy),
                ..*kept
            };
            // Just made, so empty: this cannot fail.
            let _ = copy.derived.0.set(moved);
        }
        copy
    }
}

impl ColumnStats {
    /// The summed frequency of the most common values.
    pub fn most_common_fraction(&self) -> f64 {
        frequencies(&self.most_common).0
    }

    /// What an equality on a value on neither list is judged by: the most common values'
    /// summed frequency, the frequent values' summed frequency, and the least frequency on
    /// either list (`None` when both are empty).
    pub fn listed_frequencies(&self) -> (f64, f64, Option<f64>) {
        self.with_listed(|l| (l.common, l.frequent, l.least))
    }

    /// The frequency of `value` if it is a most-common value (the first listed, should the
    /// list hold it twice).
    pub fn frequency_of(&self, value: &Value) -> Option<f64> {
        let list = &self.most_common;
        if list.len() <= SHORT_LIST {
            return list.iter().find(|(v, _)| v == value).map(|(_, f)| *f);
        }
        self.with_listed(|l| {
            // The places in value order, equal values in list order: the first at or after
            // `value` is the first listed of any equal to it.
            let at = l.by_value.partition_point(|&i| list[i as usize].0 < *value);
            let (v, f) = &list[*l.by_value.get(at)? as usize];
            (v == value).then_some(*f)
        })
    }

    /// `f` of the figures derived from the lists: those kept, if they were worked out from
    /// the lists as they are; else worked out now (and kept, the first time).
    fn with_listed<T>(&self, f: impl FnOnce(&Listed) -> T) -> T {
        let from = Listed::source(self);
        let kept = self.derived.0.get_or_init(|| Listed::of(self));
        if kept.from == from {
            f(kept)
        } else {
            f(&Listed::of(self))
        }
    }

    /// The frequency of `value` if it is on the frequent list.
    pub fn frequent_frequency_of(&self, value: &Value) -> Option<f64> {
        self.frequent
            .binary_search_by(|(v, _)| v.cmp(value))
            .ok()
            .map(|at| self.frequent[at].1)
    }
}

/// A most-common list this long or shorter is searched value by value, without the derived
/// order: a search of the order costs a few comparisons more than a short walk.
const SHORT_LIST: usize = 8;

/// What [`ColumnStats`] keeps of its lists, worked out once. Each equality estimate read them
/// whole — the sums walked both lists (a date's frequent list holds up to a thousand values)
/// and the most-common list was searched value by value — two or three times a query planned
/// on an indexed date: planning the harness's "a day's first 10 orders" query took 13,590
/// instructions, of them 5,391 in the walks for the sums; kept, 11,701 (callgrind).
#[derive(Clone)]
struct Listed {
    /// The most common values' summed frequency.
    common: f64,
    /// The frequent values' summed frequency.
    frequent: f64,
    /// The least frequency on either list (`None` when both are empty).
    least: Option<f64>,
    /// The most-common list's places, sorted by value (equal values in list order).
    by_value: Vec<u32>,
    /// The lists these were worked out from: where each lies and its length. A list replaced
    /// by one elsewhere, or grown or shrunk, is seen here (its figures are worked out afresh
    /// at each estimate); a list changed where it lies and at its length is not — a value or
    /// frequency changed, a sort, a swap — so whoever changes one so sets
    /// [`ColumnStats::derived`] back to its default, as the planner's `extend` does.
    from: [(usize, usize); 2],
}

impl Listed {
    fn source(c: &ColumnStats) -> [(usize, usize); 2] {
        [
            (c.most_common.as_ptr() as usize, c.most_common.len()),
            (c.frequent.as_ptr() as usize, c.frequent.len()),
        ]
    }

    fn of(c: &ColumnStats) -> Listed {
        let (common, common_least) = frequencies(&c.most_common);
        let (frequent, frequent_least) = frequencies(&c.frequent);
        let listed = !c.most_common.is_empty() || !c.frequent.is_empty();
        let mut by_value: Vec<u32> = (0..c.most_common.len() as u32).collect();
        // Stable: equal values keep their list order.
        by_value.sort_by(|&a, &b| {
            c.most_common[a as usize]
                .0
                .cmp(&c.most_common[b as usize].0)
        });
        Listed {
            common,
            frequent,
            least: listed.then_some(common_least.min(frequent_least)),
            by_value,
            from: Listed::source(c),
        }
    }
}

/// The figures a [`ColumnStats`] derived from its lists, if it has yet: compared as equal
/// whatever they hold. They are checked against where the lists lie and their lengths before
/// each use, which does not see a list changed in place at its length: after such a change,
/// set the column's `derived` back to `Derived::default()`.
#[derive(Default)]
pub struct Derived(OnceLock<Listed>);

impl PartialEq for Derived {
    fn eq(&self, _: &Derived) -> bool {
        true
    }
}

impl std::fmt::Debug for Derived {
    /// The same whether or not the figures have been worked out yet.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}

/// The summed and the least frequency of `list` (`+∞` for an empty list). Four running sums
/// and minima side by side: a frequent list holds up to a thousand values, and one running sum
/// waits on each addition before the next (the walks over a date's lists were 2.5 % of a
/// day's 274-row index query, planned at each query).
fn frequencies(list: &[(Value, f64)]) -> (f64, f64) {
    let mut sums = [0.0f64; 4];
    let mut least = [f64::INFINITY; 4];
    let mut chunks = list.chunks_exact(4);
    for chunk in &mut chunks {
        for (lane, (_, f)) in chunk.iter().enumerate() {
            sums[lane] += f;
            // A comparison, not `f64::min` (whose NaN rule costs three more instructions a
            // value): a NaN is passed over, as `f64::min` passes it over.
            if *f < least[lane] {
                least[lane] = *f;
            }
        }
    }
    for (lane, (_, f)) in chunks.remainder().iter().enumerate() {
        sums[lane] += f;
        if *f < least[lane] {
            least[lane] = *f;
        }
    }
    (
        (sums[0] + sums[1]) + (sums[2] + sums[3]),
        least[0].min(least[1]).min(least[2].min(least[3])),
    )
}

/// A field group's statistics: a composite index prefix, e.g. `(town, last_name)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefixStats {
    /// The fields, in index order.
    pub fields: Vec<String>,
    /// Distinct combinations of them (rows where any is NULL excluded).
    pub distinct: f64,
    /// The most common combinations with their frequencies (fractions of all rows), sorted
    /// by combination: PostgreSQL's multi-column MCV list (extended statistics). Correlated
    /// fields (an airport and the airlines that serve it) are estimated from it instead of
    /// from the fields' own frequencies multiplied. Empty in statistics written before it.
    #[serde(default)]
    pub most_common: Vec<(Vec<Value>, f64)>,
    /// Every combination the rows hold is in `most_common`, with its exact frequency: a
    /// combination that is not there does not occur.
    #[serde(default)]
    pub complete: bool,
}

impl PrefixStats {
    /// A group's statistics with its distinct count only.
    pub fn new(fields: Vec<String>, distinct: f64) -> Self {
        PrefixStats {
            fields,
            distinct,
            most_common: Vec::new(),
            complete: false,
        }
    }

    /// The frequency of a combination of the group's values, if it is a most-common one.
    pub fn frequency_of(&self, values: &[Value]) -> Option<f64> {
        self.most_common
            .binary_search_by(|(v, _)| v.as_slice().cmp(values))
            .ok()
            .map(|at| self.most_common[at].1)
    }

    /// [`Self::frequency_of`] for borrowed values.
    pub fn frequency_of_refs(&self, values: &[&Value]) -> Option<f64> {
        self.most_common
            .binary_search_by(|(v, _)| v.iter().cmp(values.iter().copied()))
            .ok()
            .map(|at| self.most_common[at].1)
    }
}

/// One table's statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    /// Rows in the table.
    pub row_count: u64,
    /// Average encoded record size in bytes.
    pub avg_row_bytes: f64,
    /// Per field.
    pub columns: BTreeMap<String, ColumnStats>,
    /// Per composite index prefix (two fields or more).
    pub prefixes: Vec<PrefixStats>,
    /// How many rows the distributions were collected from, when `row_count` has been
    /// brought up to date since (0: the same as `row_count`). Rows beyond it are the ones
    /// the statistics have not seen, which is what the ascending-key estimate needs.
    #[serde(default)]
    pub collected_rows: u64,
}

/// Encoding or decoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// Not a statistics record, or one whose values cannot be.
    #[error("malformed statistics: {0}")]
    Malformed(StatsFault),
    /// Written by a newer version of Strata.
    #[error("statistics of version {0}; this build reads version {STATS_VERSION}")]
    UnknownVersion(u32),
    /// Written by a build that stored a non-finite float (NaN, ±inf) as JSON `null`, so the
    /// value is lost: the statistics are unknown and the table must be analysed again.
    #[error("statistics written by an earlier build hold a non-finite float as null")]
    LostFloat,
    /// The statistics could not be encoded (nothing was stored).
    #[error("statistics do not encode: {0}")]
    Encode(JsonFault),
}

/// What is wrong with stored statistics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsFault {
    /// The bytes are not JSON of the stored shape.
    #[error("{0}")]
    Json(JsonFault),
    /// The average row size is negative or not finite.
    #[error("average row size")]
    AverageRowSize,
    /// A field's null fraction, distinct count, width, most-common frequencies or
    /// correlation is out of its range.
    #[error("column {field}: a fraction or count out of range")]
    Column {
        /// The field.
        field: String,
    },
    /// A field group's distinct count is negative or not finite.
    #[error("a prefix distinct count out of range")]
    PrefixDistinct,
    /// A field group's most-common combinations are out of range, of the wrong width, or not
    /// sorted.
    #[error("a field group's most-common combinations out of range or order")]
    PrefixCommon,
    /// A statistics builder's sketches disagree with each other.
    #[error("a sketch's parts disagree with each other")]
    BuilderParts,
}

/// Where JSON failed to parse, or why a value failed to encode (from `serde_json`'s error,
/// kept as values so that the error stays comparable and cloneable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?} error at line {line}, column {column}")]
pub struct JsonFault {
    /// What kind of failure.
    pub kind: JsonFaultKind,
    /// The line (1-based; 0 when not parsing).
    pub line: usize,
    /// The column (1-based; 0 when not parsing).
    pub column: usize,
}

/// The kinds of JSON failure (`serde_json::error::Category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonFaultKind {
    /// Not syntactically JSON.
    Syntax,
    /// JSON of the wrong shape or values (a missing field, a wrong type).
    Data,
    /// The input ended too early.
    Eof,
    /// Reading or writing failed.
    Io,
}

impl From<&serde_json::Error> for JsonFault {
    fn from(error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let kind = match error.classify() {
            Category::Syntax => JsonFaultKind::Syntax,
            Category::Data => JsonFaultKind::Data,
            Category::Eof => JsonFaultKind::Eof,
            Category::Io => JsonFaultKind::Io,
        };
        JsonFault {
            kind,
            line: error.line(),
            column: error.column(),
        }
    }
}

fn malformed_json(error: serde_json::Error) -> StatsError {
    StatsError::Malformed(StatsFault::Json(JsonFault::from(&error)))
}

fn encode_failed(error: serde_json::Error) -> StatsError {
    StatsError::Encode(JsonFault::from(&error))
}

/// Whether `json` holds `{"Float": null}` anywhere: what builds before non-finite floats
/// were stored by their bits wrote for NaN and ±inf.
fn holds_lost_float(json: &serde_json::Value) -> bool {
    match json {
        serde_json::Value::Object(map) => map.iter().any(|(key, value)| {
            (key == "Float" && map.len() == 1 && value.is_null()) || holds_lost_float(value)
        }),
        serde_json::Value::Array(items) => items.iter().any(holds_lost_float),
        _ => false,
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    stats: serde_json::Value,
}

impl TableStats {
    /// The distinct count recorded for exactly these fields in this order, if any.
    pub fn prefix_distinct(&self, fields: &[String]) -> Option<f64> {
        if let [field] = fields {
            return self.columns.get(field).map(|c| c.distinct);
        }
        self.prefixes
            .iter()
            .find(|p| p.fields == fields)
            .map(|p| p.distinct)
    }

    /// The bytes the catalog stores: `{"version": 1, "stats": …}` as JSON. Every value
    /// round-trips exactly, non-finite floats included.
    pub fn encode(&self) -> Result<Vec<u8>, StatsError> {
        let stats = serde_json::to_value(self).map_err(encode_failed)?;
        let stored = Stored {
            version: STATS_VERSION,
            stats,
        };
        serde_json::to_vec(&stored).map_err(encode_failed)
    }

    /// Reads what [`Self::encode`] wrote; refuses other versions and anything malformed,
    /// including frequencies or counts that cannot be (negative, not finite, above 1).
    /// Statistics an earlier build wrote with a non-finite float as `null` are
    /// [`StatsError::LostFloat`]: the caller treats them as unknown and analyses again.
    pub fn decode(bytes: &[u8]) -> Result<TableStats, StatsError> {
        let stored: Stored = serde_json::from_slice(bytes).map_err(malformed_json)?;
        if stored.version != STATS_VERSION {
            return Err(StatsError::UnknownVersion(stored.version));
        }
        if holds_lost_float(&stored.stats) {
            return Err(StatsError::LostFloat);
        }
        let stats: TableStats = serde_json::from_value(stored.stats).map_err(malformed_json)?;
        stats.validate().map_err(StatsError::Malformed)?;
        Ok(stats)
    }

    /// Checks the invariants the estimates rely on.
    pub fn validate(&self) -> Result<(), StatsFault> {
        let fraction = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        let count = |x: f64| x.is_finite() && x >= 0.0;
        let correlation = |x: f64| x.is_finite() && (-1.0..=1.0).contains(&x);
        if !count(self.avg_row_bytes) {
            return Err(StatsFault::AverageRowSize);
        }
        for (name, c) in &self.columns {
            let bad = !fraction(c.null_fraction)
                || !count(c.distinct)
                || !count(c.avg_width)
                || c.most_common.iter().any(|(_, f)| !fraction(*f))
                || c.null_fraction + c.most_common_fraction() > 1.0 + 1e-9
                || c.frequent.iter().any(|(_, f)| !fraction(*f))
                || !c.frequent.windows(2).all(|w| w[0].0 < w[1].0)
                || c.null_fraction
                    + c.most_common_fraction()
                    + c.frequent.iter().map(|(_, f)| f).sum::<f64>()
                    > 1.0 + 1e-6
                || !correlation(c.correlation);
            if bad {
                return Err(StatsFault::Column {
                    field: name.clone(),
                });
            }
        }
        if self.prefixes.iter().any(|p| !count(p.distinct)) {
            return Err(StatsFault::PrefixDistinct);
        }
        for p in &self.prefixes {
            let sum: f64 = p.most_common.iter().map(|(_, f)| f).sum();
            let bad = p
                .most_common
                .iter()
                .any(|(v, f)| !fraction(*f) || v.len() != p.fields.len())
                || sum > 1.0 + 1e-9
                || !p.most_common.windows(2).all(|w| w[0].0 < w[1].0);
            if bad {
                return Err(StatsFault::PrefixCommon);
            }
        }
        Ok(())
    }

    /// The rows the distributions were collected from.
    pub fn collected_rows(&self) -> u64 {
        if self.collected_rows == 0 {
            self.row_count
        } else {
            self.collected_rows
        }
    }
}

mod builder;

pub use builder::{ColumnBuilder, FREQUENT_LIMIT, FREQUENT_MIN_SAMPLED, TableStatsBuilder};

#[cfg(test)]
mod tests;
