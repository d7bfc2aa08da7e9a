//! Helpers shared by the store's integration tests (and, by path, the table layer's): a
//! seeded random source and a model.

#![allow(dead_code, reason = "each test file uses a different subset")]

pub mod crash_child;

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_lsm::fs::SimFs;
use strata_lsm::{Options, ReadOptions, Store};

/// xorshift64*: a tiny deterministic generator, so a failing seed replays exactly.
pub struct Rng(u64);

impl Rng {
    /// A generator whose state is exactly `state` (nonzero).
    pub fn raw(state: u64) -> Self {
        Rng(state)
    }

    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One column family's contents.
pub type Kv = BTreeMap<Vec<u8>, Vec<u8>>;

/// The store's expected contents: family name → keys → values.
pub type Model = BTreeMap<String, Kv>;

/// One operation of a batch, by family name.
#[derive(Clone, Debug)]
pub enum Op {
    Put(String, Vec<u8>, Vec<u8>),
    Delete(String, Vec<u8>),
}

pub fn apply(model: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(cf, key, value) => {
                model
                    .entry(cf.clone())
                    .or_default()
                    .insert(key.clone(), value.clone());
            }
            Op::Delete(cf, key) => {
                model.entry(cf.clone()).or_default().remove(key);
            }
        }
    }
}

pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// A random batch over `cfs`, keys drawn from `0..key_space`.
pub fn random_batch(rng: &mut Rng, cfs: &[&str], key_space: u64, max_ops: u64) -> Vec<Op> {
    let n = 1 + rng.below(max_ops);
    (0..n)
        .map(|_| {
            let cf = rng.pick(cfs).to_string();
            let k = key(rng.below(key_space));
            if rng.chance(25) {
                Op::Delete(cf, k)
            } else {
                let len = if rng.chance(3) { 3000 } else { rng.below(40) } as usize;
                let fill = rng.next_u64() as u8;
                Op::Put(cf, k, vec![fill; len])
            }
        })
        .collect()
}

/// Commits `ops` as one batch.
pub fn write(store: &Store, ops: &[Op], sync: bool) -> strata_lsm::Result<u64> {
    let mut batch = strata_lsm::WriteBatch::new();
    for op in ops {
        match op {
            Op::Put(cf, key, value) => batch.put(&store.cf(cf)?, key, value)?,
            Op::Delete(cf, key) => batch.delete(&store.cf(cf)?, key)?,
        }
    }
    store.write(batch, strata_lsm::WriteOptions { sync })
}

/// Everything in one family, by a forward scan.
pub fn scan(store: &Store, cf: &str) -> Kv {
    let cf = store.cf(cf).expect("family exists");
    store
        .iter(&cf, ReadOptions::default())
        .expect("iterator")
        .map(|kv| {
            let (k, v) = kv.expect("scan succeeds");
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// Everything in every family named in `names`.
pub fn dump(store: &Store, names: &[&str]) -> Model {
    names
        .iter()
        .map(|name| (name.to_string(), scan(store, name)))
        .collect()
}

/// Options for tests on `fs`: tiny memtables and blocks, so flushes and multi-block tables
/// happen with little data.
pub fn sim_options(fs: &SimFs) -> Options {
    let mut options = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_bytes: 8 << 10,
        max_total_wal_bytes: 64 << 10,
        manifest_rewrite_bytes: 4 << 10,
        block_cache_bytes: 1 << 20,
        // Small levels, so a test's few hundred kilobytes reach level 3 and every kind of
        // compaction (level 0, deeper, trivial moves) runs beside the writes.
        num_levels: 4,
        l0_compaction_trigger: 2,
        level1_bytes: 24 << 10,
        level_size_ratio: 4,
        target_table_bytes: 8 << 10,
        compaction_threads: 2,
        l0_slowdown_trigger: 6,
        l0_stop_trigger: 10,
        ..Options::default()
    };
    options.table.block_size_bytes = 512;
    options
}

/// Fills in empty maps for `names`, so a model compares equal to a dump.
pub fn normalise(model: &Model, names: &[&str]) -> Model {
    names
        .iter()
        .map(|name| {
            (
                name.to_string(),
                model.get(*name).cloned().unwrap_or_default(),
            )
        })
        .collect()
}
