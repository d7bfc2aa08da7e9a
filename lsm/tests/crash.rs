//! The process crash test (after RocksDB's `db_crashtest.py` and LevelDB's
//! `fault_injection_test`): a child process writes random batches, synced and unsynced,
//! across three column families on the real file system while its flush and compaction
//! threads run; the parent kills it with SIGKILL at a random moment, reopens the store and
//! checks it against a model.
//!
//! Batch `i` of a run is a pure function of `(seed, i)`, so the parent rebuilds every batch
//! the child wrote from the numbers the child printed as each write was acknowledged. After
//! a kill the store must equal the model after exactly the acknowledged batches, or after one
//! more (the batch in flight when the signal came): every acknowledged batch is present, no
//! batch is half applied, and nothing deleted is back. A SIGKILL loses no page-cache data, and
//! a write is acknowledged only after its log record is handed to the operating system, so
//! this holds for unsynced batches too, not only synced ones; power loss, where only synced
//! batches must survive, is the `SimFs` crash tests' job (`model.rs`, `compaction.rs`).
//!
//! Short by default, for CI. A longer run, by hand:
//!
//! ```text
//! STRATA_CRASH_ROUNDS=2000 STRATA_CRASH_SECONDS=3600 STRATA_CRASH_SEED=7 \
//!     cargo test --release -p strata-lsm --test crash -- --nocapture
//! ```

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::crash_child::{ChildTask, another_round, crash_child};
use common::{Kv, Model, Op, Rng, apply, dump, normalise};
use strata_lsm::{Options, Store, WriteBatch, WriteOptions};

const CFS: [&str; 3] = ["default", "a", "b"];

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Small memtables and levels, so a child that lives a few hundred milliseconds flushes and
/// compacts.
fn options() -> Options {
    Options {
        write_buffer_bytes: 96 << 10,
        max_total_wal_bytes: 1 << 20,
        num_levels: 4,
        l0_compaction_trigger: 2,
        level1_bytes: 128 << 10,
        level_size_ratio: 4,
        target_table_bytes: 32 << 10,
        compaction_threads: 1,
        ..Options::default()
    }
}

/// Batch `i` of the run with `seed`, and whether it is written synced.
fn batch(seed: u64, i: u64) -> (Vec<Op>, bool) {
    let mut rng = Rng::new(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut ops = Vec::new();
    for _ in 0..1 + rng.below(8) {
        let cf = rng.pick(&CFS[..]).to_string();
        let key = format!("key-{:05}", rng.below(3000)).into_bytes();
        if rng.chance(25) {
            ops.push(Op::Delete(cf, key));
        } else {
            let len = 8 + rng.below(300) as usize;
            let mut value = format!("{i}:").into_bytes();
            value.resize(len, b'a' + (i % 26) as u8);
            ops.push(Op::Put(cf, key, value));
        }
    }
    (ops, rng.chance(20))
}

/// The model after batches `0..n`, extended from `model` which holds batches `0..from`.
fn extend(model: &mut Model, seed: u64, from: u64, n: u64) {
    for i in from..n {
        apply(model, &batch(seed, i).0);
    }
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_batch() {
    let seed = env_or("STRATA_CRASH_SEED", 1);
    let rounds = env_or("STRATA_CRASH_ROUNDS", 25);
    let budget = Duration::from_secs(env_or("STRATA_CRASH_SECONDS", 20));
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = Store::open(dir.path(), options()).expect("create");
        for name in &CFS[1..] {
            store.create_column_family(name).expect("create family");
        }
    }
    let mut rng = Rng::new(seed);
    let mut model = normalise(&Model::new(), &CFS);
    let mut applied = 0u64; // batches in `model`
    let started = Instant::now();
    let mut round = 0;
    let mut max_level = 0;
    while another_round(round, rounds, started, budget) {
        let lifetime = Duration::from_millis(50 + rng.below(600));
        let child = "crash_writer_child";
        let ready = Duration::from_secs(30);
        let acked = crash_child(child, dir.path(), seed, applied, lifetime, ready).acked;
        assert!(acked >= applied, "the child counts on from {applied}");

        // Reopen: it must succeed, and hold the acknowledged batches, maybe one more.
        let store = Store::open(dir.path(), options()).expect("the store opens after SIGKILL");
        let found = dump(&store, &CFS);
        extend(&mut model, seed, applied, acked);
        applied = acked;
        if found != model {
            let mut one_more = model.clone();
            extend(&mut one_more, seed, acked, acked + 1);
            assert!(
                found == one_more,
                "seed {seed} round {round}: after {acked} acknowledged batches the store \
                 holds neither them nor them and the next one ({})",
                describe_difference(&model, &found)
            );
            model = one_more;
            applied += 1;
        }
        for name in CFS {
            let stats = store.stats(&store.cf(name).expect("cf")).expect("stats");
            let deepest = stats.tables_per_level.len().saturating_sub(1);
            max_level = max_level.max(deepest);
        }
        drop(store);
        round += 1;
    }
    println!(
        "crash test: seed {seed}, {round} kills, {applied} batches, deepest level {max_level}, \
         {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(applied > 0, "the children wrote nothing");
}

fn describe_difference(want: &Model, found: &Model) -> String {
    for name in CFS {
        let (w, f): (&Kv, &Kv) = (&want[name], &found[name]);
        for (k, v) in w {
            match f.get(k) {
                None => return format!("{name}: {} missing", String::from_utf8_lossy(k)),
                Some(got) if got != v => {
                    return format!("{name}: {} has a stale value", String::from_utf8_lossy(k));
                }
                _ => {}
            }
        }
        if let Some(k) = f.keys().find(|k| !w.contains_key(*k)) {
            return format!("{name}: {} is back", String::from_utf8_lossy(k));
        }
    }
    "no difference".into()
}

/// Run only as a child of `sigkill_at_random_moments_loses_no_acknowledged_batch`: writes
/// batches from `CHILD_START` on until killed, printing each acknowledged one.
#[test]
#[ignore = "the writer process of the SIGKILL crash test"]
fn crash_writer_child() {
    let ChildTask { dir, seed, start } = ChildTask::from_env();
    let store = Store::open(&dir, options()).expect("child opens the store");
    let handles: BTreeMap<&str, strata_lsm::ColumnFamily> = CFS
        .iter()
        .map(|name| (*name, store.cf(name).expect("family")))
        .collect();
    println!("ready");
    for i in start.. {
        let (ops, sync) = batch(seed, i);
        let mut batch = WriteBatch::new();
        for op in &ops {
            match op {
                Op::Put(cf, k, v) => batch.put(&handles[cf.as_str()], k, v),
                Op::Delete(cf, k) => batch.delete(&handles[cf.as_str()], k),
            }
            .expect("batch op");
        }
        let options = if sync {
            WriteOptions::synced()
        } else {
            WriteOptions::default()
        };
        store.write(batch, options).expect("write");
        println!("acked {i}");
    }
}
