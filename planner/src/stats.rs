//! Table and column statistics: what the selectivity estimates read.
//!
//! [`ColumnStats`] and [`TableStats`] are plain, serializable values — the catalog stores
//! them ([`TableStats::encode`], versioned) and tests write them by hand. The builders feed
//! rows through the sketches and can be merged (per shard, per table file) before
//! [`TableStatsBuilder::finish`] turns them into statistics.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sketch::{HeavyHitters, Histogram, HyperLogLog, Reservoir};
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

/// One column's statistics. Frequencies are fractions of all rows, nulls included.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
}

impl ColumnStats {
    /// The summed frequency of the most common values.
    pub fn most_common_fraction(&self) -> f64 {
        self.most_common.iter().map(|(_, f)| f).sum()
    }

    /// The frequency of `value` if it is a most-common value.
    pub fn frequency_of(&self, value: &Value) -> Option<f64> {
        self.most_common
            .iter()
            .find(|(v, _)| v == value)
            .map(|(_, f)| *f)
    }

    /// The frequency of `value` if it is on the frequent list.
    pub fn frequent_frequency_of(&self, value: &Value) -> Option<f64> {
        self.frequent
            .binary_search_by(|(v, _)| v.cmp(value))
            .ok()
            .map(|at| self.frequent[at].1)
    }
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

/// Builds one column's statistics from its values.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ColumnBuilder {
    rows: u64,
    nulls: u64,
    width: u64,
    distinct: HyperLogLog,
    common: HeavyHitters,
    sample: Reservoir,
    min: Option<Value>,
    max: Option<Value>,
    /// Reused by `add` to hash values without an allocation each.
    #[serde(skip)]
    scratch: Vec<u8>,
}

impl ColumnBuilder {
    /// A builder; `seed` makes its sample reproducible.
    pub fn new(seed: u64) -> Self {
        ColumnBuilder::with_limits(seed, DEFAULT_COUNTERS, DEFAULT_SAMPLE_ROWS)
    }

    /// A builder with `counters` heavy-hitter counters and a sample of `sample` rows.
    pub fn with_limits(seed: u64, counters: usize, sample: usize) -> Self {
        ColumnBuilder {
            rows: 0,
            nulls: 0,
            width: 0,
            distinct: HyperLogLog::new(),
            common: HeavyHitters::new(counters.clamp(1, MAX_SKETCH_CAPACITY)),
            sample: Reservoir::new(sample.min(MAX_SKETCH_CAPACITY), seed),
            min: None,
            max: None,
            scratch: Vec::new(),
        }
    }

    /// Whether the parts agree with each other (what a decoded builder must show before it
    /// is merged or finished).
    pub fn is_valid(&self) -> bool {
        let non_null = self.rows.checked_sub(self.nulls);
        non_null.is_some_and(|n| self.common.seen() <= n && self.sample.seen() <= n)
            && self.distinct.is_valid()
            && self.common.is_valid()
            && self.sample.is_valid()
            && self.min.is_some() == self.max.is_some()
    }

    /// Counts `rows` rows in which the field is missing.
    fn add_missing(&mut self, rows: u64) {
        self.rows += rows;
        self.nulls += rows;
    }

    /// Adds one row's value (`None` or `Null`: the field is missing or NULL).
    pub fn add(&mut self, value: Option<&Value>) {
        self.rows += 1;
        let Some(value) = value.filter(|v| !v.is_null()) else {
            self.nulls += 1;
            return;
        };
        self.width += value.width() as u64;
        self.distinct
            .add_hash(value.stable_hash_with(&mut self.scratch));
        self.common.add(value);
        self.sample.add(value);
        // A value above the maximum is not below the minimum (one comparison for rows that
        // come in ascending order, as a table's key does).
        if self.max.as_ref().is_none_or(|m| value > m) {
            self.max = Some(value.clone());
            if self.min.is_none() {
                self.min = Some(value.clone());
            }
        } else if self.min.as_ref().is_none_or(|m| value < m) {
            self.min = Some(value.clone());
        }
    }

    /// Folds in a builder fed other rows of the same column.
    pub fn merge(&mut self, other: &ColumnBuilder) {
        self.rows += other.rows;
        self.nulls += other.nulls;
        self.width += other.width;
        self.distinct.merge(&other.distinct);
        self.common.merge(&other.common);
        self.sample.merge(&other.sample);
        for v in other.min.iter() {
            if self.min.as_ref().is_none_or(|m| v < m) {
                self.min = Some(v.clone());
            }
        }
        for v in other.max.iter() {
            if self.max.as_ref().is_none_or(|m| v > m) {
                self.max = Some(v.clone());
            }
        }
    }

    /// The statistics. A value is most-common when its count is at least twice the error
    /// bound, at least 2, and above 1.25 × the average count of a value (PostgreSQL's rule
    /// in `analyze.c`), up to `mcv_limit` of them — or, when the column has no more distinct
    /// values than that and the counts are exact, every value.
    pub fn finish(&self, mcv_limit: usize, buckets: usize) -> ColumnStats {
        let non_null = self.rows.saturating_sub(self.nulls);
        let rows = self.rows.max(1) as f64;
        let distinct = self.distinct.estimate().min(non_null as f64);
        let average = non_null as f64 / distinct.max(1.0);
        let floor = (2 * self.common.max_error()).max(2) as f64;
        let top = self.common.top();
        // When the summary never had to drop a counter its counts are exact and complete:
        // if the values fit the list, every one is most-common (PostgreSQL does the same
        // when its sample holds all the distinct values).
        let complete = self.common.max_error() == 0 && top.len() <= mcv_limit;
        let most_common: Vec<(Value, f64)> = top
            .into_iter()
            .filter(|(_, count)| {
                complete || (*count as f64 >= floor && *count as f64 > 1.25 * average)
            })
            .take(mcv_limit)
            .map(|(value, count)| (value, count as f64 / rows))
            .collect();
        let rest: Vec<Value> = self
            .sample
            .items()
            .iter()
            .filter(|v| !most_common.iter().any(|(m, _)| m == *v))
            .cloned()
            .collect();
        let per_item = non_null as f64 / rows / self.sample.items().len().max(1) as f64;
        let frequent = frequent_in_sample(&rest, per_item, average / rows);
        ColumnStats {
            null_fraction: self.nulls as f64 / rows,
            distinct,
            histogram: Histogram::from_sample(rest, buckets),
            most_common,
            frequent,
            min: self.min.clone(),
            max: self.max.clone(),
            avg_width: if non_null == 0 {
                0.0
            } else {
                self.width as f64 / non_null as f64
            },
            correlation: 0.0,
        }
    }
}

/// Sampled values (not most-common) seen at least this often are listed as frequent: a
/// frequency from ten occurrences is within about a third of the truth.
pub const FREQUENT_MIN_SAMPLED: usize = 10;
/// The most frequent values listed per column besides the most-common ones.
pub const FREQUENT_LIMIT: usize = 1_000;

/// The values of `rest` (the sample's items that are not most-common values, each standing
/// for `per_item` of all rows) it holds at least [`FREQUENT_MIN_SAMPLED`] times and above
/// 1.25 × the `average` value's frequency (PostgreSQL's rule for its list, which it takes from
/// a sample of the same size), with their frequencies scaled up; the most frequent
/// [`FREQUENT_LIMIT`], sorted by value.
fn frequent_in_sample(rest: &[Value], per_item: f64, average: f64) -> Vec<(Value, f64)> {
    let mut sorted: Vec<&Value> = rest.iter().collect();
    sorted.sort_unstable();
    let mut counted: Vec<(&Value, usize)> = Vec::new();
    for v in sorted {
        match counted.last_mut() {
            Some((last, n)) if *last == v => *n += 1,
            _ => counted.push((v, 1)),
        }
    }
    counted.retain(|(_, n)| *n >= FREQUENT_MIN_SAMPLED && *n as f64 * per_item > 1.25 * average);
    if counted.len() > FREQUENT_LIMIT {
        counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        counted.truncate(FREQUENT_LIMIT);
        counted.sort_by(|a, b| a.0.cmp(b.0));
    }
    counted
        .into_iter()
        .map(|(v, n)| (v.clone(), n as f64 * per_item))
        .collect()
}

/// Builds a table's statistics row by row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableStatsBuilder {
    rows: u64,
    bytes: u64,
    columns: BTreeMap<String, ColumnBuilder>,
    prefixes: Vec<(Vec<String>, HyperLogLog)>,
    /// Each prefix's combinations counted (keyed by their composite encoding), for its
    /// most-common list. A prefix without one (a builder stored before they were kept, or
    /// merged with such a one) gets no list.
    #[serde(default)]
    prefix_common: Vec<(Vec<String>, HeavyHitters)>,
    /// Heavy-hitter counters and sample rows of each column added.
    #[serde(default = "default_limits")]
    limits: (usize, usize),
    /// The bytes of a row's composite prefix, hashed (one buffer for every row).
    #[serde(skip)]
    scratch: Vec<u8>,
}

fn default_limits() -> (usize, usize) {
    (DEFAULT_COUNTERS, DEFAULT_SAMPLE_ROWS)
}

#[derive(Serialize, Deserialize)]
struct StoredBuilder {
    version: u32,
    builder: TableStatsBuilder,
}

impl TableStatsBuilder {
    /// Statistics for `columns` and the composite `prefixes` (each of two fields or more;
    /// shorter ones are ignored, as a column's own distinct count covers them).
    pub fn new(columns: &[String], prefixes: &[Vec<String>]) -> Self {
        TableStatsBuilder::with_limits(columns, prefixes, DEFAULT_COUNTERS, DEFAULT_SAMPLE_ROWS)
    }

    /// [`Self::new`] with `counters` heavy-hitter counters and `sample` sample rows per
    /// column: a smaller summary, as one table file keeps.
    pub fn with_limits(
        columns: &[String],
        prefixes: &[Vec<String>],
        counters: usize,
        sample: usize,
    ) -> Self {
        let mut builder = TableStatsBuilder {
            rows: 0,
            bytes: 0,
            columns: BTreeMap::new(),
            prefixes: Vec::new(),
            prefix_common: Vec::new(),
            limits: (
                counters.clamp(1, MAX_SKETCH_CAPACITY),
                sample.min(MAX_SKETCH_CAPACITY),
            ),
            scratch: Vec::new(),
        };
        for name in columns {
            builder.track(name, usize::MAX);
        }
        for prefix in prefixes.iter().filter(|p| p.len() >= 2) {
            if !builder.prefixes.iter().any(|(f, _)| f == prefix) {
                builder.prefixes.push((prefix.clone(), HyperLogLog::new()));
                let counters = HeavyHitters::new(builder.limits.0);
                builder.prefix_common.push((prefix.clone(), counters));
            }
        }
        builder
    }

    /// This builder without counting its prefixes' combinations: no most-common list of
    /// combinations (a table file's sketch, summed at every flush, skips that cost; `analyze`
    /// keeps them).
    pub fn without_group_counts(mut self) -> Self {
        self.prefix_common.clear();
        self
    }

    /// Starts keeping statistics for `field` unless it has them already or `limit` columns
    /// are kept; the rows added before count as rows where the field is missing. Whether the
    /// field is kept.
    pub fn track(&mut self, field: &str, limit: usize) -> bool {
        if self.columns.contains_key(field) {
            return true;
        }
        if self.columns.len() >= limit {
            return false;
        }
        let seed = 0x5EED + self.columns.len() as u64;
        let mut column = ColumnBuilder::with_limits(seed, self.limits.0, self.limits.1);
        column.add_missing(self.rows);
        self.columns.insert(field.to_owned(), column);
        true
    }

    /// Rows added (or merged in).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether the builder could have been made by this type's own methods: what a decoded
    /// one must pass before it is merged or finished.
    pub fn is_valid(&self) -> bool {
        let (counters, sample) = self.limits;
        (1..=MAX_SKETCH_CAPACITY).contains(&counters)
            && sample <= MAX_SKETCH_CAPACITY
            && self
                .columns
                .values()
                .all(|c| c.is_valid() && c.rows == self.rows)
            && self
                .prefixes
                .iter()
                .all(|(fields, hll)| fields.len() >= 2 && hll.is_valid())
            && self.prefix_common.iter().all(|(fields, common)| {
                common.is_valid()
                    && common.seen() <= self.rows
                    && self.prefixes.iter().any(|(f, _)| f == fields)
            })
    }

    /// The stored form: `{"version": 1, "builder": …}` as JSON.
    pub fn encode(&self) -> Result<Vec<u8>, StatsError> {
        #[derive(Serialize)]
        struct Borrowed<'a> {
            version: u32,
            builder: &'a TableStatsBuilder,
        }
        serde_json::to_vec(&Borrowed {
            version: STATS_VERSION,
            builder: self,
        })
        .map_err(encode_failed)
    }

    /// Reads what [`Self::encode`] wrote; refuses other versions and builders that
    /// [`Self::is_valid`] refuses.
    pub fn decode(bytes: &[u8]) -> Result<TableStatsBuilder, StatsError> {
        let stored: StoredBuilder = serde_json::from_slice(bytes).map_err(malformed_json)?;
        if stored.version != STATS_VERSION {
            return Err(StatsError::UnknownVersion(stored.version));
        }
        if !stored.builder.is_valid() {
            return Err(StatsError::Malformed(StatsFault::BuilderParts));
        }
        Ok(stored.builder)
    }

    /// Adds a row: `field` looks a field up; `row_bytes` is its encoded size.
    pub fn add_row<'a>(&mut self, field: impl Fn(&str) -> Option<&'a Value>, row_bytes: usize) {
        self.rows += 1;
        self.bytes += row_bytes as u64;
        for (name, builder) in &mut self.columns {
            builder.add(field(name));
        }
        let buf = &mut self.scratch;
        'prefix: for (at, (fields, hll)) in self.prefixes.iter_mut().enumerate() {
            buf.clear();
            for name in fields.iter() {
                match field(name) {
                    Some(v) if !v.is_null() => v.hash_into(buf),
                    _ => continue 'prefix,
                }
            }
            hll.add_hash(crate::value::hash_bytes(buf));
            // Usually at the same place as its prefix; the key borrows the buffer.
            let common = match self.prefix_common.get_mut(at) {
                Some((f, common)) if f == fields => Some(common),
                _ => self
                    .prefix_common
                    .iter_mut()
                    .find(|(f, _)| f == fields)
                    .map(|(_, common)| common),
            };
            if let Some(common) = common {
                let key = Value::Bytes(std::mem::take(buf));
                common.add(&key);
                if let Value::Bytes(bytes) = key {
                    *buf = bytes;
                }
            }
        }
    }

    /// Folds in a builder over other rows of the same table (another shard, another table
    /// file). A column only one side keeps counts as missing in the other side's rows; a
    /// prefix only one side keeps is kept as that side has it.
    pub fn merge(&mut self, other: &TableStatsBuilder) {
        for name in other.columns.keys() {
            self.track(name, usize::MAX);
        }
        for (name, mine) in self.columns.iter_mut() {
            match other.columns.get(name) {
                Some(theirs) => mine.merge(theirs),
                None => mine.add_missing(other.rows),
            }
        }
        // A group's combinations are counted only where both sides counted them: a list
        // missing one side's rows would misstate every frequency.
        let empty = self.rows == 0;
        self.prefix_common.retain(|(fields, _)| {
            other.prefix_common.iter().any(|(f, _)| f == fields)
                || !other.prefixes.iter().any(|(f, _)| f == fields)
        });
        for (fields, theirs) in &other.prefix_common {
            match self.prefix_common.iter_mut().find(|(f, _)| f == fields) {
                Some((_, mine)) => mine.merge(theirs),
                None if empty || !self.prefixes.iter().any(|(f, _)| f == fields) => {
                    self.prefix_common.push((fields.clone(), theirs.clone()));
                }
                None => {}
            }
        }
        self.rows += other.rows;
        self.bytes += other.bytes;
        for (fields, hll) in &other.prefixes {
            match self.prefixes.iter_mut().find(|(f, _)| f == fields) {
                Some((_, mine)) => mine.merge(hll),
                None => self.prefixes.push((fields.clone(), hll.clone())),
            }
        }
    }

    /// The statistics.
    pub fn finish(&self) -> TableStats {
        TableStats {
            row_count: self.rows,
            avg_row_bytes: if self.rows == 0 {
                0.0
            } else {
                self.bytes as f64 / self.rows as f64
            },
            columns: self
                .columns
                .iter()
                .map(|(name, b)| (name.clone(), b.finish(DEFAULT_MCV_LIMIT, DEFAULT_BUCKETS)))
                .collect(),
            prefixes: self
                .prefixes
                .iter()
                .map(|(fields, hll)| {
                    let distinct = hll.estimate().min(self.rows as f64);
                    let common = self.prefix_common.iter().find(|(f, _)| f == fields);
                    let (most_common, complete) = match common {
                        Some((_, common)) => group_common(common, self.rows, distinct),
                        None => (Vec::new(), false),
                    };
                    PrefixStats {
                        fields: fields.clone(),
                        distinct,
                        most_common,
                        complete,
                    }
                })
                .collect(),
            collected_rows: 0,
        }
    }
}

/// A field group's most-common combinations from its counters: every one, with `complete`,
/// when the counters never had to drop one (their counts are exact and whole); otherwise
/// those PostgreSQL's rule keeps for a column ([`ColumnBuilder::finish`]), up to
/// [`DEFAULT_MCV_LIMIT`]. Sorted by combination.
fn group_common(common: &HeavyHitters, rows: u64, distinct: f64) -> (Vec<(Vec<Value>, f64)>, bool) {
    let all = rows.max(1) as f64;
    let complete = common.max_error() == 0;
    let average = common.seen() as f64 / distinct.max(1.0);
    let floor = (2 * common.max_error()).max(2) as f64;
    let mut kept: Vec<(Vec<Value>, f64)> = common
        .top()
        .into_iter()
        .filter(|(_, count)| complete || (*count as f64 >= floor && *count as f64 > 1.25 * average))
        .take(if complete {
            usize::MAX
        } else {
            DEFAULT_MCV_LIMIT
        })
        .filter_map(|(key, count)| match key {
            Value::Bytes(bytes) => Some((decode_group(&bytes)?, count as f64 / all)),
            _ => None,
        })
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    kept.dedup_by(|a, b| a.0 == b.0);
    (kept, complete)
}

/// The values of a composite encoding ([`Value::hash_into`] of each, concatenated).
fn decode_group(mut bytes: &[u8]) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    let take = |n: usize, bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let (head, rest) = bytes.split_at_checked(n)?;
        *bytes = rest;
        Some(head.to_vec())
    };
    while let Some((&tag, rest)) = bytes.split_first() {
        bytes = rest;
        let word = |bytes: &mut &[u8]| -> Option<[u8; 8]> {
            let (head, rest) = bytes.split_at_checked(8)?;
            *bytes = rest;
            head.try_into().ok()
        };
        values.push(match tag {
            0 => Value::Null,
            1 => Value::Bool(take(1, &mut bytes)?[0] != 0),
            2 => Value::Int(i64::from_le_bytes(word(&mut bytes)?)),
            3 => Value::Float(f64::from_bits(u64::from_le_bytes(word(&mut bytes)?))),
            4 | 5 => {
                let len = usize::try_from(u64::from_le_bytes(word(&mut bytes)?)).ok()?;
                let payload = take(len, &mut bytes)?;
                if tag == 4 {
                    Value::Str(String::from_utf8(payload).ok()?)
                } else {
                    Value::Bytes(payload)
                }
            }
            _ => return None,
        });
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(rows: impl Iterator<Item = (Value, Value)>) -> TableStats {
        let fields = ["status".to_string(), "zip".to_string()];
        let mut b = TableStatsBuilder::new(&fields, &[fields.to_vec()]);
        for (status, zip) in rows {
            b.add_row(
                |f| match f {
                    "status" => Some(&status),
                    "zip" => Some(&zip),
                    _ => None,
                },
                50,
            );
        }
        b.finish()
    }

    #[test]
    fn skew_shows_up_as_most_common_values_and_the_rest_in_the_histogram() {
        let stats = build((0..100_000i64).map(|i| {
            let status = match i % 1000 {
                0 => Value::from("pending"),
                1..=99 => Value::from("failed"),
                _ => Value::from("done"),
            };
            (status, Value::Int(i % 500))
        }));
        let status = &stats.columns["status"];
        assert!((status.frequency_of(&Value::from("done")).unwrap_or(0.0) - 0.9).abs() < 0.002);
        assert!((status.frequency_of(&Value::from("failed")).unwrap_or(0.0) - 0.099).abs() < 0.002);
        assert!((status.distinct - 3.0).abs() < 0.5);
        let zip = &stats.columns["zip"];
        assert!(
            zip.most_common.is_empty(),
            "uniform: nothing is most common"
        );
        assert!((zip.distinct - 500.0).abs() < 25.0);
        assert_eq!(zip.min, Some(Value::Int(0)));
        assert_eq!(zip.max, Some(Value::Int(499)));
        let prefix = stats.prefix_distinct(&["status".into(), "zip".into()]);
        // pending: zip 0; failed: zips 1-99; done: all 500 zips.
        assert!(
            prefix.is_some_and(|d| (d - 600.0).abs() < 30.0),
            "{prefix:?}"
        );
        assert_eq!(stats.row_count, 100_000);
        assert!((stats.avg_row_bytes - 50.0).abs() < 1e-9);
    }

    /// `(airport, airline)`: each airport served by two airlines of its own (a correlated
    /// pair), 90 % by the first.
    fn flights(rows: i64) -> TableStats {
        build((0..rows).map(|i| {
            let airport = i % 100;
            let airline = airport * 10 + i64::from((i / 100) % 10 == 0);
            (Value::Int(airport), Value::Int(airline))
        }))
    }

    #[test]
    fn a_group_lists_its_combinations_whole_when_the_counters_hold_them() {
        let stats = flights(100_000);
        let group = &stats.prefixes[0];
        assert!(group.complete, "200 combinations, 1,000 counters");
        assert_eq!(group.most_common.len(), 200);
        let at = |a: i64, b: i64| group.frequency_of(&[Value::Int(a), Value::Int(b)]);
        assert_eq!(at(7, 70), Some(0.009));
        assert_eq!(at(7, 71), Some(0.001));
        assert_eq!(at(7, 72), None, "a pair that never occurs is not listed");
        assert!(
            group.most_common.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted"
        );
        let bytes = stats.encode().expect("encode");
        assert_eq!(TableStats::decode(&bytes), Ok(stats));
    }

    #[test]
    fn a_group_with_more_combinations_than_counters_lists_the_frequent_ones() {
        // 5,000 pairs: the counters overflow; only the heavy pairs qualify.
        let stats = build((0..100_000i64).map(|i| {
            let pair = if i % 2 == 0 { 0 } else { i % 5_000 };
            (Value::Int(pair % 50), Value::Int(pair))
        }));
        let group = &stats.prefixes[0];
        assert!(!group.complete);
        let heavy = group.frequency_of(&[Value::Int(0), Value::Int(0)]);
        assert!(heavy.is_some_and(|f| (f - 0.5).abs() < 0.01), "{heavy:?}");
        assert!(group.most_common.len() <= DEFAULT_MCV_LIMIT);
    }

    #[test]
    fn merging_with_a_builder_that_kept_no_group_counts_drops_the_list() {
        let fields = ["status".to_string(), "zip".to_string()];
        let mut a = TableStatsBuilder::new(&fields, &[fields.to_vec()]);
        let mut b = a.clone();
        let (x, y) = (Value::Int(1), Value::Int(2));
        for builder in [&mut a, &mut b] {
            builder.add_row(|f| Some(if f == "status" { &x } else { &y }), 10);
        }
        let mut both = a.clone();
        both.merge(&b);
        assert_eq!(both.finish().prefixes[0].most_common.len(), 1);
        // `b` as a builder stored before group counts existed.
        b.prefix_common.clear();
        assert!(b.is_valid());
        a.merge(&b);
        let merged = a.finish();
        assert!(merged.prefixes[0].most_common.is_empty() && !merged.prefixes[0].complete);
        assert_eq!(merged.row_count, 2);
    }

    #[test]
    fn group_encodings_decode_to_their_values() {
        let values = vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Float(2.5),
            Value::from("Fürth"),
            Value::Bytes(vec![0, 255]),
        ];
        let mut bytes = Vec::new();
        for v in &values {
            v.hash_into(&mut bytes);
        }
        assert_eq!(decode_group(&bytes), Some(values));
        assert_eq!(decode_group(&bytes[..bytes.len() - 1]), None, "truncated");
        assert_eq!(decode_group(&[9]), None, "unknown tag");
    }

    #[test]
    fn unsorted_or_out_of_range_group_lists_are_refused() {
        let mut stats = flights(1_000);
        stats.prefixes[0].most_common.swap(0, 1);
        assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
        let mut stats = flights(1_000);
        stats.prefixes[0].most_common[0].1 = 1.5;
        assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
        let mut stats = flights(1_000);
        stats.prefixes[0].most_common[0].0.pop();
        assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
    }

    #[test]
    fn a_long_tail_lists_its_next_values_from_the_sample() {
        // Zipfian, s = 0.7, over 5,000 values: rank r holds r^-0.7 / H of the rows.
        let n = 5_000usize;
        let weights: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-0.7)).collect();
        let total: f64 = weights.iter().sum();
        let mut cdf = Vec::with_capacity(n);
        let mut acc = 0.0;
        for w in &weights {
            acc += w / total;
            cdf.push(acc);
        }
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let stats = build((0..100_000i64).map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
            let rank = cdf.partition_point(|c| *c < u) as i64 + 1;
            (Value::Int(rank), Value::Int(0))
        }));
        let c = &stats.columns["status"];
        assert!(c.frequent.len() > 100, "{} listed", c.frequent.len());
        assert!(c.frequent.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
        for rank in [120i64, 150, 200] {
            if c.frequency_of(&Value::Int(rank)).is_some() {
                continue;
            }
            let truth = weights[rank as usize - 1] / total;
            let listed = c.frequent_frequency_of(&Value::Int(rank));
            assert!(
                listed.is_some_and(|f| (f / truth - 1.0).abs() < 0.5),
                "rank {rank}: {listed:?} against {truth}"
            );
        }
        // A uniform column has no value above 1.25 × the average.
        assert!(stats.columns["zip"].frequent.is_empty());
        let bytes = stats.encode().expect("encode");
        assert_eq!(TableStats::decode(&bytes), Ok(stats.clone()));
        let mut unsorted = stats;
        let frequent = &mut unsorted.columns.get_mut("status").expect("column").frequent;
        frequent.swap(0, 1);
        assert!(unsorted.validate().is_err());
    }

    #[test]
    fn statistics_round_trip_and_refuse_other_versions() {
        let stats = build((0..1_000i64).map(|i| (Value::Int(i % 7), Value::Int(i))));
        let bytes = stats.encode().expect("encode");
        assert_eq!(TableStats::decode(&bytes), Ok(stats));
        let newer =
            String::from_utf8(bytes)
                .expect("json")
                .replacen("\"version\":1", "\"version\":2", 1);
        assert_eq!(
            TableStats::decode(newer.as_bytes()),
            Err(StatsError::UnknownVersion(2))
        );
        assert!(matches!(
            TableStats::decode(b"{"),
            Err(StatsError::Malformed(_))
        ));
    }

    #[test]
    fn merged_builders_match_one_builder_over_all_rows() {
        let fields = ["k".to_string()];
        let mut whole = TableStatsBuilder::new(&fields, &[]);
        let mut a = TableStatsBuilder::new(&fields, &[]);
        let mut b = TableStatsBuilder::new(&fields, &[]);
        for i in 0..20_000i64 {
            let v = Value::Int(i % 4_000);
            whole.add_row(|_| Some(&v), 10);
            let half = if i % 2 == 0 { &mut a } else { &mut b };
            half.add_row(|_| Some(&v), 10);
        }
        a.merge(&b);
        let (merged, whole) = (a.finish(), whole.finish());
        assert_eq!(merged.row_count, whole.row_count);
        assert_eq!(merged.columns["k"].distinct, whole.columns["k"].distinct);
        assert_eq!(merged.columns["k"].min, whole.columns["k"].min);
    }

    #[test]
    fn a_field_first_seen_late_counts_as_missing_before_and_merges_across_builders() {
        let mut a = TableStatsBuilder::with_limits(&[], &[], 64, 256);
        for i in 0..300i64 {
            let v = Value::Int(i);
            if i >= 100 {
                a.track("late", 8);
            }
            a.add_row(|f| (f == "late").then_some(&v), 10);
        }
        let stats = a.finish();
        let late = &stats.columns["late"];
        assert!((late.null_fraction - 1.0 / 3.0).abs() < 1e-9, "{late:?}");

        // A builder that never saw the field: its rows are missing too.
        let mut b = TableStatsBuilder::with_limits(&["other".into()], &[], 64, 256);
        for i in 0..100i64 {
            let v = Value::Int(i);
            b.add_row(|_| Some(&v), 10);
        }
        a.merge(&b);
        let merged = a.finish();
        assert_eq!(merged.row_count, 400);
        assert!((merged.columns["late"].null_fraction - 0.5).abs() < 1e-9);
        assert!((merged.columns["other"].null_fraction - 0.75).abs() < 1e-9);
    }

    #[test]
    fn a_builder_round_trips_and_an_inconsistent_one_is_refused() {
        let mut b = TableStatsBuilder::with_limits(&["k".into()], &[], 16, 32);
        for i in 0..1_000i64 {
            let v = Value::from(format!("v{}", i % 40));
            b.add_row(|_| Some(&v), 12);
        }
        let bytes = b.encode().expect("encode");
        let decoded = TableStatsBuilder::decode(&bytes).expect("round trip");
        assert_eq!(decoded.finish(), b.finish());

        let text = String::from_utf8(bytes).expect("json");
        let more_nulls = text.replacen("\"nulls\":0", "\"nulls\":5000", 1);
        assert_ne!(more_nulls, text);
        assert!(matches!(
            TableStatsBuilder::decode(more_nulls.as_bytes()),
            Err(StatsError::Malformed(_))
        ));
        let newer = text.replacen("\"version\":1", "\"version\":9", 1);
        assert_eq!(
            TableStatsBuilder::decode(newer.as_bytes()).err(),
            Some(StatsError::UnknownVersion(9))
        );
    }

    /// Every kind of float a column can hold, NaN of both signs, ±inf and -0.0 among them.
    fn awkward_float(i: i64) -> Value {
        match i % 9 {
            0 => Value::Float(f64::NAN),
            1 => Value::Float(-f64::NAN),
            2 => Value::Float(f64::INFINITY),
            3 => Value::Float(f64::NEG_INFINITY),
            4 => Value::Float(-0.0),
            5 => Value::Null,
            _ => Value::Float(i as f64 / 7.0),
        }
    }

    #[test]
    fn statistics_and_builders_of_non_finite_floats_round_trip_exactly() {
        // Before, serde_json wrote NaN and ±inf as null and the catalog refused to read them
        // back, which made the whole database refuse to open.
        let stats = build((0..2_000i64).map(|i| (awkward_float(i), awkward_float(i / 3))));
        let x = &stats.columns["status"];
        assert!(
            x.min
                .as_ref()
                .is_some_and(|m| matches!(m, Value::Float(f) if f.is_nan()))
        );
        let bytes = stats.encode().expect("encode");
        let back = TableStats::decode(&bytes).expect("decode");
        assert_eq!(back, stats);
        // PartialEq on Value is total order, so NaN == NaN only with the same sign; check bits.
        let bits = |s: &TableStats| -> Vec<u64> {
            s.columns["status"]
                .most_common
                .iter()
                .filter_map(|(v, _)| match v {
                    Value::Float(f) => Some(f.to_bits()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(bits(&back), bits(&stats));

        let mut b = TableStatsBuilder::with_limits(&["a".into()], &[], 16, 64);
        for i in 0..500i64 {
            let v = awkward_float(i);
            b.add_row(|_| Some(&v), 9);
        }
        let decoded = TableStatsBuilder::decode(&b.encode().expect("encode")).expect("decode");
        assert_eq!(decoded.finish(), b.finish());
    }

    #[test]
    fn statistics_an_earlier_build_wrote_with_a_lost_float_are_unknown_not_malformed() {
        // The exact shape the old encoder produced for a column whose minimum was -inf.
        let stats = build((0..100i64).map(|i| (awkward_float(i), Value::Int(i))));
        let text = String::from_utf8(stats.encode().expect("encode")).expect("json");
        let old = text.replace(r#"{"Float":"0xfff0000000000000"}"#, r#"{"Float":null}"#);
        assert_ne!(old, text);
        assert_eq!(
            TableStats::decode(old.as_bytes()),
            Err(StatsError::LostFloat)
        );
        // A null float anywhere else in a value is still malformed, not lost.
        let broken = text.replacen(r#""row_count":100"#, r#""row_count":null"#, 1);
        assert!(matches!(
            TableStats::decode(broken.as_bytes()),
            Err(StatsError::Malformed(_))
        ));
    }
}
