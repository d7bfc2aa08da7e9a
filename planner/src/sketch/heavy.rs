//! Most-common values by the Misra–Gries summary (1982): `k` counters; a new value takes a
//! free counter, or, when none is free, every counter drops by one. Each reported count is
//! at most `n / (k + 1)` below the true count, and every value more frequent than that is
//! reported. Two summaries merge (Agarwal et al., "Mergeable summaries", 2012) by adding
//! counters and subtracting the (k+1)-th largest count from all; the error bounds add.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// The counters' map. Its hasher is a quick multiply-and-rotate fold rather than the standard
/// keyed one: statistics hash every value of every row (the keyed hasher was most of
/// `analyze`), and the map holds at most `capacity` values, so even values chosen to collide
/// cost at most a probe of those.
type Counters = HashMap<Value, u64, BuildHasherDefault<Fold>>;

/// See [`Counters`].
#[derive(Default, Clone, Copy)]
pub(crate) struct Fold(u64);

impl Fold {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for Fold {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // The high bits choose hashbrown's group and the low ones its tag: spread them.
        let h = self.0 ^ (self.0 >> 29);
        h.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (h >> 32)
    }
}

/// A heavy-hitter summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeavyHitters {
    capacity: usize,
    /// Stored as a list of pairs: JSON map keys must be strings.
    #[serde(with = "pairs")]
    counters: Counters,
    /// Items seen.
    seen: u64,
    /// How much any count may be below the truth (the sum of all decrements applied).
    error: u64,
}

mod pairs {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Counters;
    use crate::value::Value;

    pub fn serialize<S: Serializer>(map: &Counters, s: S) -> Result<S::Ok, S::Error> {
        let mut pairs: Vec<(&Value, &u64)> = map.iter().collect();
        pairs.sort();
        pairs.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Counters, D::Error> {
        let pairs = Vec::<(Value, u64)>::deserialize(d)?;
        let len = pairs.len();
        let map: Counters = pairs.into_iter().collect();
        if map.len() != len {
            return Err(serde::de::Error::custom("a value is counted twice"));
        }
        Ok(map)
    }
}

impl HeavyHitters {
    /// A summary with `capacity` counters (at least 1).
    pub fn new(capacity: usize) -> Self {
        HeavyHitters {
            capacity: capacity.max(1),
            counters: Counters::default(),
            seen: 0,
            error: 0,
        }
    }

    /// Counts one occurrence of `value`.
    pub fn add(&mut self, value: &Value) {
        self.seen += 1;
        if let Some(count) = self.counters.get_mut(value) {
            *count += 1;
        } else if self.counters.len() < self.capacity {
            self.counters.insert(value.clone(), 1);
        } else {
            // Decrement all, including the new value's implicit 1: it and the smallest drop.
            self.error += 1;
            self.counters.retain(|_, count| {
                *count -= 1;
                *count > 0
            });
        }
    }

    /// Folds `other` in.
    pub fn merge(&mut self, other: &HeavyHitters) {
        self.seen += other.seen;
        self.error += other.error;
        for (value, count) in &other.counters {
            *self.counters.entry(value.clone()).or_insert(0) += count;
        }
        if self.counters.len() > self.capacity {
            let mut counts: Vec<u64> = self.counters.values().copied().collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let cut = counts[self.capacity];
            self.error += cut;
            self.counters.retain(|_, count| {
                *count = count.saturating_sub(cut);
                *count > 0
            });
        }
    }

    /// Whether the summary could have been built by `add` and `merge`: at least one counter,
    /// no more counters than that, every count positive and none above what was seen.
    pub fn is_valid(&self) -> bool {
        self.capacity >= 1
            && self.counters.len() <= self.capacity
            && self.counters.values().all(|c| *c >= 1 && *c <= self.seen)
    }

    /// Items seen.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The most a reported count can be below the true count.
    pub fn max_error(&self) -> u64 {
        self.error
    }

    /// The tracked values with their counts (lower bounds), most common first, ties by value.
    pub fn top(&self) -> Vec<(Value, u64)> {
        let mut top: Vec<(Value, u64)> = self
            .counters
            .iter()
            .map(|(value, count)| (value.clone(), *count))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_above_the_error_bound_is_found_with_its_count_nearly_right() {
        let mut hh = HeavyHitters::new(99);
        for i in 0..100_000i64 {
            // "hot" is 30 % of the stream; the rest are distinct.
            let value = if i % 10 < 3 {
                Value::from("hot")
            } else {
                Value::Int(i)
            };
            hh.add(&value);
        }
        let top = hh.top();
        assert_eq!(top[0].0, Value::from("hot"));
        let truth = 30_000u64;
        assert!(top[0].1 <= truth && truth - top[0].1 <= hh.max_error());
        assert!(hh.max_error() <= 100_000 / 100);
    }

    #[test]
    fn merged_summaries_keep_the_bound() {
        let mut a = HeavyHitters::new(9);
        let mut b = HeavyHitters::new(9);
        for i in 0..10_000i64 {
            let target = if i % 2 == 0 { &mut a } else { &mut b };
            target.add(&Value::Int(if i % 4 == 0 { 7 } else { i }));
        }
        a.merge(&b);
        let top = a.top();
        assert_eq!(top[0].0, Value::Int(7));
        assert!(2_500 - top[0].1 <= a.max_error());
        assert!(a.max_error() <= 10_000 / 10 * 2, "errors add");
        assert_eq!(a.seen(), 10_000);
    }
}
