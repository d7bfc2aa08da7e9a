//! Equi-depth histograms (as PostgreSQL's `histogram_bounds`): `B + 1` sorted bounds cut the
//! values into `B` buckets holding equal numbers of rows. Built from a sample of the values
//! that are not most-common, so skew is carried by the most-common list and the histogram
//! describes the rest.
//!
//! The fraction of the population below a value is the number of whole buckets below it
//! plus a linear interpolation inside its bucket: numbers by value, text dates by time,
//! other strings and bytes by the bytes after the bucket bounds' common prefix
//! ([`super::interpolate`]).

use std::ops::Bound;

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// An equi-depth histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    bounds: Vec<Value>,
}

impl Histogram {
    /// A histogram of at most `buckets` buckets over `sample` (nulls ignored). Fewer than two
    /// values give an empty histogram.
    pub fn from_sample(mut sample: Vec<Value>, buckets: usize) -> Self {
        sample.retain(|v| !v.is_null());
        sample.sort();
        if sample.len() < 2 || buckets == 0 {
            return Histogram::default();
        }
        let buckets = buckets.min(sample.len() - 1);
        let last = sample.len() - 1;
        let bounds = (0..=buckets)
            .map(|i| sample[i * last / buckets].clone())
            .collect();
        Histogram { bounds }
    }

    /// A histogram with these bounds (sorted, at least two), as statistics gathered
    /// elsewhere describe it. `None` if they are not.
    pub fn from_bounds(bounds: Vec<Value>) -> Option<Self> {
        let sorted = bounds.windows(2).all(|w| w[0] <= w[1]);
        (bounds.len() >= 2 && sorted && !bounds.iter().any(Value::is_null))
            .then_some(Histogram { bounds })
    }

    /// Whether there is nothing to interpolate over.
    pub fn is_empty(&self) -> bool {
        self.bounds.len() < 2
    }

    /// The bounds.
    pub fn bounds(&self) -> &[Value] {
        &self.bounds
    }

    /// The fraction of the population below `value`, in [0, 1]; `None` if empty.
    pub fn fraction_below(&self, value: &Value) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let buckets = (self.bounds.len() - 1) as f64;
        let first = &self.bounds[0];
        let last = &self.bounds[self.bounds.len() - 1];
        if value <= first {
            return Some(0.0);
        }
        if value >= last {
            return Some(1.0);
        }
        // The bucket [bounds[i], bounds[i + 1]] holding value: bounds[i] < value.
        let i = self.bounds.partition_point(|b| b < value) - 1;
        let (lo, hi) = (&self.bounds[i], &self.bounds[i + 1]);
        let within = super::interpolate::within(lo, hi, value);
        Some(((i as f64 + within) / buckets).clamp(0.0, 1.0))
    }

    /// The fraction of the population between the bounds; `None` if empty.
    pub fn fraction_between(&self, lower: Bound<&Value>, upper: Bound<&Value>) -> Option<f64> {
        let below = |bound: Bound<&Value>, unbounded: f64| match bound {
            Bound::Unbounded => Some(unbounded),
            Bound::Included(v) | Bound::Excluded(v) => self.fraction_below(v),
        };
        let low = below(lower, 0.0)?;
        let high = below(upper, 1.0)?;
        Some((high - low).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_numbers_interpolate_linearly() {
        let sample = (0..=1_000).map(Value::Int).collect();
        let h = Histogram::from_sample(sample, 10);
        assert_eq!(h.bounds().len(), 11);
        let f = h.fraction_below(&Value::Int(250)).expect("not empty");
        assert!((f - 0.25).abs() < 0.01, "{f}");
        let between = h
            .fraction_between(
                Bound::Included(&Value::Int(100)),
                Bound::Excluded(&Value::Int(300)),
            )
            .expect("not empty");
        assert!((between - 0.2).abs() < 0.01, "{between}");
        assert_eq!(h.fraction_below(&Value::Int(-5)), Some(0.0));
        assert_eq!(h.fraction_below(&Value::Int(5_000)), Some(1.0));
    }

    #[test]
    fn skewed_data_gets_narrow_buckets_where_rows_are_dense() {
        // 90 % of values in [0, 100), 10 % in [100, 10_000).
        let mut sample: Vec<Value> = (0..9_000).map(|i| Value::Int(i % 100)).collect();
        sample.extend((0..1_000).map(|i| Value::Int(100 + i * 10)));
        let h = Histogram::from_sample(sample, 20);
        let f = h.fraction_below(&Value::Int(100)).expect("not empty");
        assert!((f - 0.9).abs() < 0.06, "{f}");
    }

    #[test]
    fn strings_interpolate_after_their_common_prefix() {
        let h = Histogram::from_bounds(vec![Value::from("town-a"), Value::from("town-z")])
            .expect("sorted");
        let f = h.fraction_below(&Value::from("town-m")).expect("not empty");
        assert!((0.4..0.6).contains(&f), "{f}");
    }

    #[test]
    fn too_few_values_give_no_histogram() {
        assert!(Histogram::from_sample(vec![Value::Int(1)], 10).is_empty());
        assert_eq!(Histogram::default().fraction_below(&Value::Int(1)), None);
        assert!(Histogram::from_bounds(vec![Value::Int(2), Value::Int(1)]).is_none());
    }
}
