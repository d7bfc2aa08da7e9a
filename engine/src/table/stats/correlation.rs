//! How closely a field's order follows the primary key's: the statistic that tells the
//! planner whether the rows an index range names lie together in the table
//! (`ColumnStats::correlation`, PostgreSQL's `pg_stats.correlation`).
//!
//! 1. While `analyze` reads a shard's rows in key order, [`OrderSample`] keeps a uniform
//!    sample (a reservoir) of `(place in key order, value)` for the field, NULLs left out.
//! 2. [`OrderSample::correlation`] ranks the sampled values (ties share their mean rank) and
//!    gives Pearson's correlation between the places and the ranks: 1 for a field that grows
//!    with the key (a date in a table written in time order), −1 for one that shrinks, near 0
//!    for one in no order with it.
//! 3. A sharded table's shards are sampled apart and their correlations averaged, weighted by
//!    the rows each had: fetches go to each shard in its own key order.

use strata_planner::Value;

/// Rows a field's sample keeps per shard.
/// TUNING: a correlation from 10,000 pairs is within about ±0.01 of the whole table's
/// (its standard error is under 1/√n), and sorting them costs a millisecond.
pub(crate) const ORDER_SAMPLE_ROWS: usize = 10_000;

/// Fewest sampled values a correlation is given for; fewer give none (0 is assumed).
const MIN_SAMPLED: usize = 16;

/// A uniform sample of one field's `(place in key order, value)` over one shard's rows.
pub(crate) struct OrderSample {
    items: Vec<(u64, Value)>,
    capacity: usize,
    /// Non-null values offered.
    seen: u64,
    rng: u64,
}

impl OrderSample {
    pub(crate) fn new(capacity: usize, seed: u64) -> Self {
        OrderSample {
            items: Vec::new(),
            capacity: capacity.max(1),
            seen: 0,
            rng: seed,
        }
    }

    /// Offers the value at `place` (the row's place in the shard's key order).
    pub(crate) fn add(&mut self, place: u64, value: &Value) {
        if matches!(value, Value::Null) {
            return;
        }
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push((place, value.clone()));
            return;
        }
        // Algorithm R: the new item replaces a random one with probability capacity / seen.
        let slot = self.next_random() % self.seen;
        if let Some(item) = self.items.get_mut(slot as usize) {
            *item = (place, value.clone());
        }
    }

    /// The non-null values offered.
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Pearson's correlation between the sampled places and the ranks of their values, in
    /// [−1, 1]; `None` for fewer than [`MIN_SAMPLED`] values or where either does not vary.
    pub(crate) fn correlation(mut self) -> Option<f64> {
        let n = self.items.len();
        if n < MIN_SAMPLED {
            return None;
        }
        self.items.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut ranks = vec![0.0; n];
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && self.items[end].1 == self.items[start].1 {
                end += 1;
            }
            // Ties share the mean of the ranks they span.
            let rank = (start + end - 1) as f64 / 2.0;
            ranks[start..end].fill(rank);
            start = end;
        }
        let places: Vec<f64> = self.items.iter().map(|(p, _)| *p as f64).collect();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / n as f64;
        let (mp, mr) = (mean(&places), mean(&ranks));
        let (mut cov, mut vp, mut vr) = (0.0, 0.0, 0.0);
        for (p, r) in places.iter().zip(&ranks) {
            let (dp, dr) = (p - mp, r - mr);
            cov += dp * dr;
            vp += dp * dp;
            vr += dr * dr;
        }
        if vp <= 0.0 || vr <= 0.0 {
            return None;
        }
        let r = cov / (vp.sqrt() * vr.sqrt());
        r.is_finite().then(|| r.clamp(-1.0, 1.0))
    }

    fn next_random(&mut self) -> u64 {
        // SplitMix64.
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The correlation of a table from its shards': `(correlation, rows)` pairs averaged by rows.
pub(crate) fn combined(shards: &[(f64, u64)]) -> Option<f64> {
    let rows: u64 = shards.iter().map(|(_, n)| n).sum();
    if rows == 0 {
        return None;
    }
    let sum: f64 = shards.iter().map(|(r, n)| r * *n as f64).sum();
    Some((sum / rows as f64).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values: impl Iterator<Item = Value>) -> OrderSample {
        let mut s = OrderSample::new(ORDER_SAMPLE_ROWS, 7);
        for (place, v) in values.enumerate() {
            s.add(place as u64, &v);
        }
        s
    }

    #[test]
    fn a_field_that_grows_with_the_key_correlates_one_that_does_not_does_not() {
        let rows = 50_000u64;
        let ascending = sample((0..rows).map(|i| Value::Int((i / 40) as i64)));
        assert!(ascending.correlation().unwrap() > 0.99);
        let descending = sample((0..rows).map(|i| Value::from(format!("{:08}", rows - i))));
        assert!(descending.correlation().unwrap() < -0.99);
        // A value scrambled from the place: no order.
        let scattered =
            sample((0..rows).map(|i| Value::Int((i.wrapping_mul(2_654_435_761) % 1_000) as i64)));
        assert!(scattered.correlation().unwrap().abs() < 0.05);
        // Noise around a trend (a ship date within 121 days of an order date that grows).
        let banded = sample((0..rows).map(|i| Value::Int((i / 20 + (i * 7919) % 121) as i64)));
        assert!(banded.correlation().unwrap() > 0.9);
    }

    #[test]
    fn too_few_values_nulls_or_one_value_give_no_correlation() {
        assert_eq!(sample((0..10).map(Value::Int)).correlation(), None);
        let nulls = sample((0..1_000).map(|_| Value::Null));
        assert_eq!(nulls.seen(), 0);
        assert_eq!(nulls.correlation(), None);
        assert_eq!(
            sample((0..1_000).map(|_| Value::Int(3))).correlation(),
            None
        );
        assert_eq!(combined(&[]), None);
        assert_eq!(combined(&[(1.0, 3), (-1.0, 1)]), Some(0.5));
    }
}
