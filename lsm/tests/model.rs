//! Model-based tests: random batches, deletes, snapshots, iterators, flushes, column family
//! changes and reopens, checked step by step against a `BTreeMap` model; and the same with
//! simulated crashes, checking that every synced batch survives, no batch is torn, and nothing
//! deleted comes back.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use strata_lsm::fs::SimFs;
use strata_lsm::{ReadOptions, Snapshot, Store};

const DIR: &str = "/db";
const CFS: [&str; 3] = ["default", "a", "b"];

fn open(fs: &SimFs) -> Store {
    Store::open(Path::new(DIR), sim_options(fs)).expect("store opens")
}

fn create_families(store: &Store) {
    for name in &CFS[1..] {
        if store.cf(name).is_err() {
            store.create_column_family(name).expect("create family");
        }
    }
}

/// Checks a random range scan (forward, backward, or zig-zagging a cursor) against `kv`.
fn check_range(rng: &mut Rng, store: &Store, cf: &str, kv: &Kv, snapshot: Option<&Snapshot>) {
    let handle = store.cf(cf).expect("family");
    let mut options = ReadOptions::default();
    if let Some(snapshot) = snapshot {
        options = options.snapshot(snapshot);
    }
    let (lower, upper) = (key(rng.below(70)), key(rng.below(70)));
    let expected: Vec<(&Vec<u8>, &Vec<u8>)> = match rng.below(4) {
        0 => kv.iter().collect(),
        1 => {
            options = options.lower_bound(&lower).upper_bound(&upper);
            kv.range(lower.clone()..)
                .filter(|(k, _)| **k < upper)
                .collect()
        }
        2 => {
            let prefix = &lower[..lower.len() - 1]; // ten keys share it
            options = options.prefix(prefix);
            kv.iter().filter(|(k, _)| k.starts_with(prefix)).collect()
        }
        _ => {
            options = options.lower_bound(&lower);
            kv.range(lower.clone()..).collect()
        }
    };
    let collect = |iter: strata_lsm::Iter, reverse: bool| -> Vec<(Vec<u8>, Vec<u8>)> {
        let items: Vec<_> = if reverse {
            iter.rev().collect()
        } else {
            iter.collect()
        };
        items
            .into_iter()
            .map(|kv| {
                let (k, v) = kv.expect("scan succeeds");
                (k.to_vec(), v.to_vec())
            })
            .collect()
    };
    let want: Vec<(Vec<u8>, Vec<u8>)> = expected
        .iter()
        .map(|(k, v)| ((*k).clone(), (*v).clone()))
        .collect();
    let forward = collect(store.iter(&handle, options.clone()).expect("iter"), false);
    assert_eq!(forward, want, "forward scan of {cf}");
    let mut backward = collect(store.iter(&handle, options.clone()).expect("iter"), true);
    backward.reverse();
    assert_eq!(backward, want, "backward scan of {cf}");

    // A cursor zig-zagging from a random seek point.
    let mut cursor = store.cursor(&handle, options).expect("cursor");
    let target = key(rng.below(70));
    let mut at = want.partition_point(|(k, _)| *k < target);
    cursor.seek(&target);
    for _ in 0..12 {
        match want.get(at) {
            Some((k, v)) => {
                assert!(cursor.valid(), "cursor should be at {k:?}");
                assert_eq!(cursor.key(), &k[..]);
                assert_eq!(&cursor.value()[..], &v[..]);
                assert_eq!(cursor.value_ref(), &v[..], "the borrowed value of {k:?}");
            }
            None => {
                assert!(!cursor.valid(), "cursor should be past the end");
                break;
            }
        }
        if rng.chance(50) {
            cursor.next();
            at += 1;
        } else if at == 0 {
            cursor.prev();
            assert!(!cursor.valid(), "cursor should be before the start");
            break;
        } else {
            cursor.prev();
            at -= 1;
        }
    }
    cursor.status().expect("cursor ok");
}

/// Checks `multi_get_at` and `multi_get_each_at` of random keys (some repeated, ascending or not) against `kv`, the
/// family's contents at `snapshot`.
fn check_multi_get(
    rng: &mut Rng,
    store: &Store,
    cf: &str,
    kv: &Kv,
    snapshot: &Snapshot,
    context: &str,
) {
    let handle = store.cf(cf).expect("family");
    let mut keys: Vec<Vec<u8>> = (0..rng.below(40)).map(|_| key(rng.below(70))).collect();
    if rng.chance(50) {
        keys.sort();
    }
    let got = store
        .multi_get_at(&handle, &keys, snapshot)
        .expect("multi-get");
    assert_eq!(got.len(), keys.len(), "{context}");
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(
            v.as_deref(),
            kv.get(k).map(Vec::as_slice),
            "{context}: multi-get of {k:?}"
        );
    }
    // The lending form reports each place whose key has a value, once, with that value.
    let mut lent: Vec<Option<Vec<u8>>> = vec![None; keys.len()];
    store
        .multi_get_each_at(&handle, &keys, snapshot, |i, value| {
            assert!(lent[i].is_none(), "{context}: place {i} reported twice");
            lent[i] = Some(value.to_vec());
        })
        .expect("multi-get, lent");
    for (k, v) in keys.iter().zip(lent) {
        assert_eq!(v.as_ref(), kv.get(k), "{context}: lent multi-get of {k:?}");
    }
}

/// Runs one seed; returns the compactions that ran below level 0 (the counts restart at
/// each reopen), so the test can check that automatic compaction ran beside everything else.
fn run_model(seed: u64, steps: usize) -> u64 {
    let mut rng = Rng::new(seed);
    let fs = SimFs::new();
    let mut store = open(&fs);
    create_families(&store);
    let mut model = normalise(&Model::new(), &CFS);
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    let mut compactions = 0;
    let count = |store: &Store| -> u64 {
        CFS.iter()
            .map(|name| {
                let stats = store.stats(&store.cf(name).expect("cf")).expect("stats");
                stats.levels[1..].iter().map(|l| l.compactions).sum::<u64>()
            })
            .sum()
    };
    for step in 0..steps {
        let context = format!("seed {seed} step {step}");
        match rng.below(100) {
            0..=44 => {
                let ops = random_batch(&mut rng, &CFS, 60, 6);
                write(&store, &ops, rng.chance(10)).expect(&context);
                apply(&mut model, &ops);
            }
            45..=59 => {
                let cf = rng.pick(&CFS[..]);
                let k = key(rng.below(70));
                let got = store.get(&store.cf(cf).expect("cf"), &k).expect(&context);
                assert_eq!(
                    got.as_deref(),
                    model[cf].get(&k).map(Vec::as_slice),
                    "{context}"
                );
            }
            60..=64 => {
                if snapshots.len() < 3 {
                    snapshots.push((store.snapshot(), model.clone()));
                } else {
                    snapshots.remove(rng.below(3) as usize);
                }
            }
            65..=72 if !snapshots.is_empty() => {
                let (snapshot, old) = &snapshots[rng.below(snapshots.len() as u64) as usize];
                let cf = rng.pick(&CFS[..]);
                let k = key(rng.below(70));
                let got = store
                    .get_at(&store.cf(cf).expect("cf"), &k, snapshot)
                    .expect(&context);
                assert_eq!(
                    got.as_deref(),
                    old[cf].get(&k).map(Vec::as_slice),
                    "{context}"
                );
                check_range(&mut rng, &store, cf, &old[cf], Some(snapshot));
                check_multi_get(&mut rng, &store, cf, &old[cf], snapshot, &context);
            }
            73..=84 => {
                let cf = rng.pick(&CFS[..]);
                check_range(&mut rng, &store, cf, &model[cf], None);
                let now = store.snapshot();
                check_multi_get(&mut rng, &store, cf, &model[cf], &now, &context);
            }
            85..=88 => {
                let cf = store.cf(rng.pick(&CFS[..])).expect("cf");
                store.flush(&cf).expect(&context);
            }
            89..=90 => {
                let cf = store.cf(rng.pick(&CFS[..])).expect("cf");
                let (a, b) = (key(rng.below(70)), key(rng.below(70)));
                let (lower, upper) = (a.clone().min(b.clone()), a.max(b));
                if rng.chance(30) {
                    store.compact_range(&cf, ..).expect(&context);
                } else {
                    store
                        .compact_range(&cf, lower.as_slice()..upper.as_slice())
                        .expect(&context);
                }
            }
            91..=93 => {
                // Drop and recreate "b": its data must not come back.
                let b = store.cf("b").expect("cf");
                store.drop_column_family(&b).expect(&context);
                let read = store.get(&b, b"x");
                assert!(
                    matches!(read, Err(strata_lsm::Error::NotFound(_))),
                    "a dropped handle fails: {read:?}"
                );
                store.create_column_family("b").expect(&context);
                model.insert("b".into(), Kv::new());
                for (_, old) in &mut snapshots {
                    old.insert("b".into(), Kv::new()); // snapshots read the new family
                }
            }
            _ => {
                snapshots.clear();
                compactions += count(&store);
                drop(store);
                store = open(&fs);
                assert_eq!(store.column_families().len(), 3, "{context}");
            }
        }
    }
    assert_eq!(dump(&store, &CFS), model, "final contents, seed {seed}");
    compactions += count(&store);
    // Everything written must also survive a last reopen.
    drop(store);
    let store = open(&fs);
    assert_eq!(dump(&store, &CFS), model, "after reopen, seed {seed}");
    compactions
}

#[test]
fn random_operations_match_the_model() {
    let mut compactions = 0;
    for seed in 1..=12 {
        compactions += run_model(seed, 600);
    }
    // Most are automatic: flushes leave level 0 at the trigger of two tables all the time.
    assert!(compactions > 100, "only {compactions} compactions ran");
}

/// Crash at random moments; after each, the store must hold exactly the model after some
/// prefix of the batches committed since the last durable point, at least up to the last
/// synced batch.
fn run_crashes(seed: u64, rounds: usize) {
    let mut rng = Rng::new(seed);
    let mut fs = SimFs::new();
    let mut store = open(&fs);
    create_families(&store);
    store.flush_all().expect("flush");
    // The state every later crash must keep, and the batches since.
    let mut durable = normalise(&Model::new(), &CFS);
    for round in 0..rounds {
        let mut batches: Vec<Vec<common::Op>> = Vec::new();
        let mut last_synced = 0; // number of batches that must survive
        let writes = 1 + rng.below(40);
        for _ in 0..writes {
            let ops = random_batch(&mut rng, &CFS, 50, 5);
            let sync = rng.chance(20);
            write(&store, &ops, sync).expect("write");
            batches.push(ops);
            if sync {
                last_synced = batches.len();
            }
            if rng.chance(5) {
                let cf = store.cf(rng.pick(&CFS[..])).expect("cf");
                store.flush(&cf).expect("flush");
                // A flush syncs the log before switching: everything so far is durable.
                last_synced = batches.len();
            }
        }
        // Power fails now; the old store keeps running on the old file system.
        let survivor = fs.crashed_copy();
        drop(store);
        fs = survivor;
        store = open(&fs);
        let found = dump(&store, &CFS);
        let mut candidate = durable.clone();
        for ops in &batches[..last_synced] {
            apply(&mut candidate, ops);
        }
        let mut matched = None;
        for k in last_synced..=batches.len() {
            if candidate == found {
                matched = Some(k);
                break;
            }
            if let Some(ops) = batches.get(k) {
                apply(&mut candidate, ops);
            }
        }
        let Some(k) = matched else {
            panic!(
                "seed {seed} round {round}: the store after a crash is no prefix of at least \
                 {last_synced} of the {} batches",
                batches.len()
            );
        };
        durable = candidate;
        let _ = k;
    }
}

#[test]
fn crashes_keep_every_synced_batch_and_tear_none() {
    for seed in 1..=16 {
        run_crashes(seed, 12);
    }
}

#[test]
fn concurrent_synced_writers_survive_a_crash() {
    let fs = SimFs::new();
    let store = std::sync::Arc::new(open(&fs));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let store = std::sync::Arc::clone(&store);
            std::thread::spawn(move || {
                let cf = store.default_cf();
                for i in 0..200u64 {
                    let mut batch = strata_lsm::WriteBatch::new();
                    batch
                        .put(&cf, format!("t{t}-{i:04}").as_bytes(), &i.to_le_bytes())
                        .expect("put");
                    batch
                        .put(&cf, format!("u{t}-{i:04}").as_bytes(), &i.to_le_bytes())
                        .expect("put");
                    store
                        .write(batch, strata_lsm::WriteOptions::synced())
                        .expect("write");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("writer");
    }
    let survivor = fs.crashed_copy();
    drop(store);
    let store = open(&survivor);
    let all = scan(&store, "default");
    assert_eq!(all.len(), 8 * 200 * 2, "every synced write survived");
    let by_thread: BTreeMap<u8, usize> = all.keys().fold(BTreeMap::new(), |mut m, k| {
        *m.entry(k[1]).or_default() += 1;
        m
    });
    assert!(by_thread.values().all(|&n| n == 400), "{by_thread:?}");
}
