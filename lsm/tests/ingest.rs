//! `Store::ingest`: sorted runs written straight into tables. What a loaded entry must do is
//! what a written one does — read back, survive a reopen and a power cut once acknowledged,
//! stay invisible to older snapshots — and an ingestion that fails must add nothing.

mod common;

use std::path::Path;

use common::{Rng, key, scan, sim_options};
use strata_lsm::fs::{OpKind, SimFs};
use strata_lsm::{Error, IngestRun, ReadOptions, Store, WriteOptions};

const DIR: &str = "/db";

fn open(fs: &SimFs) -> Store {
    let store = Store::open(Path::new(DIR), sim_options(fs)).expect("store opens");
    if store.cf("a").is_err() {
        store.create_column_family("a").expect("family");
    }
    store
}

fn run(store: &Store, cf: &str, keys: impl IntoIterator<Item = u64>, tag: &str) -> IngestRun {
    let mut run = IngestRun::new(store.cf(cf).expect("family"));
    for i in keys {
        run.push(&key(i), format!("{tag}{i}").as_bytes());
    }
    run
}

fn value(store: &Store, cf: &str, i: u64) -> Option<String> {
    let handle = store.cf(cf).expect("family");
    store
        .get(&handle, &key(i))
        .expect("get")
        .map(|v| String::from_utf8(v.to_vec()).expect("utf-8"))
}

#[test]
fn ingested_runs_read_like_written_ones_and_survive_a_power_cut() {
    let fs = SimFs::new();
    let store = open(&fs);
    let a = store.cf("a").expect("family");
    for i in 0..50 {
        store.put(&a, &key(i), b"old").expect("put");
    }
    store.flush(&a).expect("flush");
    // Family "a": a range no table holds. The default family: keys between written ones.
    let runs = vec![
        run(&store, "a", 100..400, "new"),
        run(&store, "default", (0..300).map(|i| i * 2 + 1), "odd"),
    ];
    let default = store.default_cf();
    for i in 0..300 {
        store.put(&default, &key(i * 2), b"even").expect("put");
    }
    store.ingest(runs).expect("ingest");
    for i in [0, 49, 100, 250, 399] {
        let expected = if i < 50 {
            "old".to_owned()
        } else {
            format!("new{i}")
        };
        assert_eq!(value(&store, "a", i).as_deref(), Some(expected.as_str()));
    }
    assert_eq!(value(&store, "a", 400), None);
    let all = scan(&store, "default");
    assert_eq!(all.len(), 600);
    assert_eq!(all[&key(7)], b"odd7".to_vec());
    assert_eq!(all[&key(8)], b"even".to_vec());

    // The ingestion is acknowledged: a power cut right after keeps it.
    let crashed = fs.crashed_copy();
    drop(store);
    let store = open(&crashed);
    assert_eq!(value(&store, "a", 399).as_deref(), Some("new399"));
    assert_eq!(scan(&store, "a").len(), 350);
    assert_eq!(scan(&store, "default").len(), 600);
}

#[test]
fn each_table_goes_to_the_deepest_level_where_nothing_above_meets_its_range() {
    let fs = SimFs::new();
    let store = open(&fs);
    let a = store.cf("a").expect("family");
    store
        .ingest(vec![run(&store, "a", 0..10, "x")])
        .expect("ingest");
    let levels = store.stats(&a).expect("stats").tables_per_level;
    assert_eq!(levels.last(), Some(&1), "{levels:?}");
    assert_eq!(levels.iter().sum::<usize>(), 1);

    // 10..15 meets nothing: the last level too. Then 0..27 meets both, so it goes just above
    // them, and 2..4 meets that one too, so it goes above it.
    store
        .ingest(vec![run(&store, "a", 10..15, "y")])
        .expect("ingest");
    store
        .ingest(vec![run(&store, "a", (0..10).map(|i| i * 3), "z")])
        .expect("ingest");
    store
        .ingest(vec![run(&store, "a", 2..4, "w")])
        .expect("ingest");
    let levels = store.stats(&a).expect("stats").tables_per_level;
    let last = levels.len() - 1;
    assert_eq!(
        (levels[last], levels[last - 1], levels[last - 2]),
        (2, 1, 1),
        "{levels:?}"
    );
    assert_eq!(value(&store, "a", 2).as_deref(), Some("w2"));
    assert_eq!(value(&store, "a", 3).as_deref(), Some("w3"));
    assert_eq!(value(&store, "a", 6).as_deref(), Some("z6"));
    assert_eq!(value(&store, "a", 4).as_deref(), Some("x4"));
    // 12 is in both 10..15 and the later 0..27 run: the later one wins.
    assert_eq!(value(&store, "a", 12).as_deref(), Some("z12"));
    assert_eq!(value(&store, "a", 13).as_deref(), Some("y13"));
    assert_eq!(value(&store, "a", 27).as_deref(), Some("z27"));
}

#[test]
fn a_memtable_version_in_the_range_is_flushed_first_so_the_loaded_one_wins() {
    // A read looks at memtables before tables: a tombstone or an older value left in one
    // would hide the loaded entry.
    let fs = SimFs::new();
    let store = open(&fs);
    let a = store.cf("a").expect("family");
    store.put(&a, &key(5), b"older").expect("put");
    store.put(&a, &key(6), b"deleted").expect("put");
    store.delete(&a, &key(6)).expect("delete");
    store
        .ingest(vec![run(&store, "a", 0..10, "v")])
        .expect("ingest");
    assert_eq!(value(&store, "a", 5).as_deref(), Some("v5"));
    assert_eq!(value(&store, "a", 6).as_deref(), Some("v6"));
    assert_eq!(scan(&store, "a").len(), 10);
    // Writes after the ingestion win over it.
    store.put(&a, &key(7), b"later").expect("put");
    assert_eq!(value(&store, "a", 7).as_deref(), Some("later"));
    drop(store);
    let store = open(&fs);
    assert_eq!(value(&store, "a", 6).as_deref(), Some("v6"));
    assert_eq!(value(&store, "a", 7).as_deref(), Some("later"));
}

#[test]
fn a_snapshot_taken_before_an_ingestion_never_sees_it() {
    let fs = SimFs::new();
    let store = open(&fs);
    let a = store.cf("a").expect("family");
    store.put(&a, &key(1), b"one").expect("put");
    let before = store.snapshot();
    store
        .ingest(vec![run(&store, "a", 2..5, "v")])
        .expect("ingest");
    let seen: Vec<_> = store
        .iter(&a, ReadOptions::default().snapshot(&before))
        .expect("iter")
        .map(|kv| kv.expect("entry").0)
        .collect();
    assert_eq!(seen, vec![key(1)]);
    assert_eq!(store.get_at(&a, &key(3), &before).expect("get"), None);
    assert_eq!(scan(&store, "a").len(), 4);
}

#[test]
fn bad_runs_are_refused_and_add_nothing() {
    let fs = SimFs::new();
    let store = open(&fs);
    let a = store.cf("a").expect("family");
    // Pushed out of order is fine; a key twice is not, whether the pushes go up until the
    // repeat (a run pushed in order skips the sort) or not.
    for keys in [vec![1, 3, 1], vec![1, 2, 2, 3], vec![3, 2, 2]] {
        let repeated = run(&store, "a", keys.iter().copied(), "v");
        assert_eq!(
            repeated.first_repeat().is_some(),
            keys != [1, 3, 1],
            "{keys:?}"
        );
        assert!(
            matches!(
                store.ingest(vec![repeated]),
                Err(strata_lsm::Error::InvalidArgument(_))
            ),
            "{keys:?}"
        );
    }
    let meeting = vec![run(&store, "a", 0..5, "v"), run(&store, "a", 4..8, "w")];
    assert!(matches!(
        store.ingest(meeting),
        Err(strata_lsm::Error::InvalidArgument(_))
    ));
    let mut huge = IngestRun::new(a.clone());
    huge.push(&vec![b'k'; strata_lsm::MAX_KEY_BYTES + 1], b"v");
    assert!(matches!(
        store.ingest(vec![huge]),
        Err(strata_lsm::Error::TooLarge { what: "key", .. })
    ));
    assert!(scan(&store, "a").is_empty());
    assert_eq!(store.stats(&a).expect("stats").table_bytes, 0);
    store
        .ingest(vec![run(&store, "a", [5, 1, 3], "v")])
        .expect("a run pushed out of order");
    assert_eq!(value(&store, "a", 3).as_deref(), Some("v3"));
    // The store still takes writes.
    store
        .write(
            {
                let mut b = strata_lsm::WriteBatch::new();
                b.put(&a, b"k", b"v").expect("put");
                b
            },
            WriteOptions::default(),
        )
        .expect("write");
}

#[test]
fn an_ingestion_that_fails_midway_adds_nothing_after_a_reopen() {
    // Fail each sync the ingestion makes in turn (tables, directory, manifest): the call
    // fails, and after a power cut and a reopen the store holds exactly what it held before,
    // (the next open removes the stray tables).
    let mut failed = 0;
    for n in 1..=6 {
        let fs = SimFs::new();
        let store = open(&fs);
        let a = store.cf("a").expect("family");
        store.put(&a, &key(0), b"kept").expect("put");
        store.flush(&a).expect("flush");
        let mut rng = Rng::new(n);
        let keys: Vec<u64> = (1..2000).filter(|_| rng.below(2) == 0).collect();
        let big = run(&store, "a", keys.iter().copied(), "v");
        let before = fs.op_count(OpKind::Sync);
        fs.fail_nth(OpKind::Sync, before + n);
        let result = store.ingest(vec![big]);
        fs.clear_faults();
        let syncs = fs.op_count(OpKind::Sync) - before;
        drop(store);
        let store = open(&fs.crashed_copy());
        let held = scan(&store, "a");
        match result {
            Ok(_) => {
                assert!(
                    n > syncs,
                    "sync {n} of {syncs} failed, yet the ingestion succeeded"
                );
                assert_eq!(held.len(), keys.len() + 1);
            }
            Err(_) => {
                failed += 1;
                assert_eq!(held.len(), 1, "sync {n}: a failed ingestion left entries");
                assert_eq!(held[&key(0)], b"kept".to_vec());
            }
        }
    }
    // Tables, then the manifest: at least two syncs failed, and the later runs succeeded.
    assert!((2..6).contains(&failed), "{failed} of 6 ingestions failed");
}

/// A run of more than twice `MIN_PART_BYTES` is cut into parts written side by side (on a
/// machine of several cores), each its own tables: together they read as the run, sit on one
/// level without overlapping, and a sync failing in any part adds nothing.
#[test]
fn a_large_run_is_written_in_parts_that_read_as_one() {
    let value = vec![b'v'; 1000];
    let entries = 3 * strata_lsm::MIN_PART_BYTES / 1000;
    let big = |store: &Store| {
        let mut run = IngestRun::new(store.cf("a").expect("family"));
        // Pushed out of order: the parts are cut after the sort.
        for i in (0..entries as u64).rev() {
            run.push(&key(i), &value);
        }
        run
    };
    let fs = SimFs::new();
    let store = open(&fs);
    store.ingest(vec![big(&store)]).expect("ingest");
    let a = store.cf("a").expect("family");
    let stats = store.stats(&a).expect("stats");
    let level = stats
        .levels
        .iter()
        .rposition(|l| l.tables > 0)
        .expect("a level with tables");
    let parts = std::thread::available_parallelism().map_or(1, |n| n.get());
    if parts > 1 {
        assert!(stats.levels[level].tables >= 2, "{:?}", stats.levels);
    }
    assert_eq!(
        stats.levels.iter().map(|l| l.tables).sum::<usize>(),
        stats.levels[level].tables,
        "every table on one level"
    );
    let held = scan(&store, "a");
    assert_eq!(held.len(), entries);
    assert!(held.values().all(|v| *v == value));
    drop(store);
    let store = open(&fs.crashed_copy());
    assert_eq!(scan(&store, "a").len(), entries);

    // Each table sync in turn fails: nothing of the run is left after a reopen.
    for n in 1..=2 {
        let fs = SimFs::new();
        let store = open(&fs);
        let before = fs.op_count(OpKind::Sync);
        fs.fail_nth(OpKind::Sync, before + n);
        let failed = store.ingest(vec![big(&store)]);
        assert!(
            failed.as_ref().is_err_and(Error::is_io),
            "sync {n}: {failed:?}"
        );
        fs.clear_faults();
        drop(store);
        let store = open(&fs.crashed_copy());
        assert!(scan(&store, "a").is_empty(), "sync {n}");
    }
}

#[test]
fn runs_ingested_for_reuse_come_back_whole_and_recycle_empty() {
    let fs = SimFs::new();
    let store = open(&fs);
    let (a, default) = (store.cf("a").expect("family"), store.default_cf());
    let mut runs = vec![
        run(&store, "a", 0..200, "first"),
        IngestRun::new(a.clone()),
        run(&store, "default", 0..100, "first"),
    ];
    store.ingest_reusing(&mut runs).expect("ingest");
    // The two runs that held entries are left, written; the empty one is gone.
    assert_eq!(runs.len(), 2);
    assert_eq!(runs.iter().map(IngestRun::len).sum::<usize>(), 300);
    assert_eq!(value(&store, "a", 150).as_deref(), Some("first150"));
    // A recycled run is empty, for the family it is given, with its buffer kept; filled
    // again (out of order this time), it loads like a new one.
    let capacity = runs[0].capacity();
    let mut recycled: Vec<IngestRun> = runs
        .into_iter()
        .zip([a.clone(), default.clone()])
        .map(|(run, cf)| run.recycle(cf))
        .collect();
    assert!(recycled.iter().all(IngestRun::is_empty));
    assert_eq!(recycled[0].capacity(), capacity);
    for i in (1000..1100).rev() {
        recycled[0].push(&key(i), format!("second{i}").as_bytes());
    }
    recycled[1].push(&key(5000), b"second5000");
    store.ingest_reusing(&mut recycled).expect("ingest again");
    assert_eq!(value(&store, "a", 1042).as_deref(), Some("second1042"));
    assert_eq!(
        value(&store, "default", 5000).as_deref(),
        Some("second5000")
    );
    assert_eq!(value(&store, "a", 150).as_deref(), Some("first150"));
    // A failed ingestion leaves its runs too: a key twice in a run.
    let mut twice = vec![IngestRun::new(a)];
    twice[0].push(&key(7000), b"x");
    twice[0].push(&key(7000), b"y");
    let refused = store.ingest_reusing(&mut twice);
    assert!(
        matches!(refused, Err(Error::InvalidArgument(_))),
        "{refused:?}"
    );
    assert_eq!(twice.len(), 1);
    assert_eq!(value(&store, "a", 7000), None);
}
