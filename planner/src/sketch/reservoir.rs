//! A uniform sample of fixed size (Vitter's Algorithm R): the i-th item replaces a random
//! slot with probability `capacity / i`. Deterministic for a given seed, so statistics are
//! reproducible. Two reservoirs merge into a sample of their union by drawing from each in
//! proportion to the rows it saw.

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// A uniform sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reservoir {
    capacity: usize,
    items: Vec<Value>,
    seen: u64,
    rng: u64,
}

impl Reservoir {
    /// A reservoir of `capacity` items (PostgreSQL samples 30,000 rows at its default
    /// statistics target).
    pub fn new(capacity: usize, seed: u64) -> Self {
        Reservoir {
            capacity,
            items: Vec::new(),
            seen: 0,
            rng: seed | 1,
        }
    }

    /// xorshift64*: enough for sampling.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Offers one item.
    pub fn add(&mut self, value: &Value) {
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push(value.clone());
            return;
        }
        // A uniform draw below `seen` by multiply-and-shift (Lemire), not a division: this
        // runs for every value of every row `analyze` reads. The bias is below seen / 2^64.
        let slot = ((u128::from(self.next_random()) * u128::from(self.seen)) >> 64) as u64;
        if let Some(item) = self.items.get_mut(slot as usize) {
            *item = value.clone();
        }
    }

    /// Folds `other` in: the result samples the union, each side weighted by its rows.
    pub fn merge(&mut self, other: &Reservoir) {
        let total = self.seen + other.seen;
        if total == 0 {
            return;
        }
        let from_self = ((self.capacity as f64) * self.seen as f64 / total as f64).round() as usize;
        let from_self = from_self.min(self.items.len());
        let from_other = (self.capacity - from_self).min(other.items.len());
        // Both are uniform samples in random order of arrival; a random subset of each is
        // still uniform. Shuffle-select by partial Fisher–Yates.
        let mut mine = std::mem::take(&mut self.items);
        let mut theirs = other.items.clone();
        self.items = self.pick(&mut mine, from_self);
        let picked = self.pick(&mut theirs, from_other);
        self.items.extend(picked);
        self.seen = total;
    }

    fn pick(&mut self, items: &mut [Value], n: usize) -> Vec<Value> {
        for i in 0..n.min(items.len()) {
            let j = i + (self.next_random() % (items.len() - i) as u64) as usize;
            items.swap(i, j);
        }
        items[..n.min(items.len())].to_vec()
    }

    /// Whether the sample could have been built by `add` and `merge`: no more items than its
    /// capacity or than were offered.
    pub fn is_valid(&self) -> bool {
        self.items.len() <= self.capacity && self.items.len() as u64 <= self.seen
    }

    /// The sample.
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    /// Items offered.
    pub fn seen(&self) -> u64 {
        self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_roughly_uniform() {
        let mut r = Reservoir::new(1_000, 7);
        for i in 0..100_000i64 {
            r.add(&Value::Int(i));
        }
        let low = r
            .items()
            .iter()
            .filter(|v| **v < Value::Int(50_000))
            .count();
        assert!((400..600).contains(&low), "{low} of 1000 in the lower half");
        assert_eq!(r.items().len(), 1_000);
    }

    #[test]
    fn a_merge_weighs_each_side_by_its_rows() {
        let mut a = Reservoir::new(1_000, 1);
        let mut b = Reservoir::new(1_000, 2);
        for i in 0..90_000i64 {
            a.add(&Value::Int(i));
        }
        for i in 0..10_000i64 {
            b.add(&Value::Int(-1 - i));
        }
        a.merge(&b);
        let negative = a.items().iter().filter(|v| **v < Value::Int(0)).count();
        assert_eq!(negative, 100, "10 % of the rows, 10 % of the sample");
        assert_eq!(a.seen(), 100_000);
    }
}
