//! Building statistics row by row: a column's sketches ([`ColumnBuilder`]) and a table's
//! ([`TableStatsBuilder`]), mergeable across shards and table files, finished into
//! [`TableStats`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    ColumnStats, DEFAULT_BUCKETS, DEFAULT_COUNTERS, DEFAULT_MCV_LIMIT, DEFAULT_SAMPLE_ROWS,
    MAX_SKETCH_CAPACITY, MAX_STATISTICS_TARGET, PrefixStats, STATS_VERSION, StatsError, StatsFault,
    TableStats, encode_failed, malformed_json,
};
use crate::sketch::{HeavyHitters, Histogram, HyperLogLog, Reservoir};
use crate::value::Value;

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
            ..ColumnStats::default()
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
    pub(super) prefix_common: Vec<(Vec<String>, HeavyHitters)>,
    /// Heavy-hitter counters and sample rows of each column added.
    #[serde(default = "default_limits")]
    limits: (usize, usize),
    /// The bytes of a row's composite prefix, hashed (one buffer for every row).
    #[serde(skip)]
    scratch: Vec<u8>,
    /// The most-common list's length of each field given a statistics target
    /// ([`TableStatsBuilder::with_targets`]); the others get [`DEFAULT_MCV_LIMIT`]. Set by
    /// `analyze` for one run, never stored.
    #[serde(skip)]
    mcv_limits: BTreeMap<String, usize>,
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
            mcv_limits: BTreeMap::new(),
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

    /// This builder with a statistics target for some of its fields, before any row is added
    /// (PostgreSQL's `ALTER TABLE … ALTER COLUMN … SET STATISTICS`): a field with target `t`
    /// (1 to [`MAX_STATISTICS_TARGET`]) keeps a most-common list of up to `t` values, counted
    /// by `10 · t` heavy-hitter counters (at least the default), and samples `300 · t` rows (at
    /// least the default) for its histogram and frequent list — PostgreSQL's 300 rows per
    /// unit of target. Fields it does not track are ignored.
    pub fn with_targets(mut self, targets: &BTreeMap<String, usize>) -> Self {
        for (field, &target) in targets {
            let target = target.clamp(1, MAX_STATISTICS_TARGET);
            let Some(column) = self.columns.get_mut(field) else {
                continue;
            };
            let seed = 0x7A26_E700 + self.mcv_limits.len() as u64;
            let counters = (target * 10).max(self.limits.0);
            let sample = (target * 300).max(self.limits.1);
            let mut fresh = ColumnBuilder::with_limits(seed, counters, sample);
            fresh.add_missing(self.rows);
            *column = fresh;
            self.mcv_limits.insert(field.clone(), target);
        }
        self
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
                .map(|(name, b)| {
                    let limit = self.mcv_limits.get(name).copied();
                    (
                        name.clone(),
                        b.finish(limit.unwrap_or(DEFAULT_MCV_LIMIT), DEFAULT_BUCKETS),
                    )
                })
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
pub(super) fn decode_group(mut bytes: &[u8]) -> Option<Vec<Value>> {
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
