//! Compaction and back-pressure case by case: what compaction keeps and drops, where its
//! output goes, what a crash in the middle of one leaves, its statistics, and write stalls
//! that end by themselves.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use strata_lsm::fs::{FileSystem, SimFs};
use strata_lsm::{Options, Store, WriteOptions};

const DIR: &str = "/db";

fn open_with(options: Options) -> Store {
    Store::open(Path::new(DIR), options).expect("store opens")
}

/// Options where nothing compacts by itself: only `compact_range` moves data down.
fn manual_only(fs: &SimFs) -> Options {
    Options {
        l0_compaction_trigger: 1000,
        l0_slowdown_trigger: 2000,
        l0_stop_trigger: 3000,
        level1_bytes: u64::MAX / 1024,
        ..sim_options(fs)
    }
}

fn value(round: u64) -> Vec<u8> {
    format!("value-{round:04}").into_bytes()
}

#[test]
fn compaction_keeps_what_snapshots_see_and_drops_the_rest() {
    let fs = SimFs::new();
    let store = open_with(manual_only(&fs));
    let cf = store.default_cf();
    // Five versions of forty keys, one table each round; every third key deleted at the end.
    let mut snapshot = None;
    for round in 0..5u64 {
        for i in 0..40 {
            store.put(&cf, &key(i), &value(round)).expect("put");
        }
        store.flush(&cf).expect("flush");
        if round == 1 {
            snapshot = Some(store.snapshot());
        }
    }
    for i in (0..40).step_by(3) {
        store.delete(&cf, &key(i)).expect("delete");
    }
    let before = store.stats(&cf).expect("stats");
    assert_eq!(before.entries, 5 * 40 + 14);

    store.compact_range(&cf, ..).expect("compact");
    let snapshot = snapshot.expect("taken");
    let stats = store.stats(&cf).expect("stats");
    assert_eq!(stats.tables_per_level[0], 0, "level 0 compacted away");
    // Kept: the newest version of each key (value or tombstone) and the version the snapshot
    // sees; the tombstones stay, since the snapshot still sees what they delete.
    assert_eq!(stats.entries, 40 + 40, "{stats:?}");
    assert_eq!(stats.deletions, 14);
    for i in 0..40 {
        let now = store.get(&cf, &key(i)).expect("get");
        let then = store.get_at(&cf, &key(i), &snapshot).expect("get_at");
        let want = (i % 3 != 0).then(|| value(4));
        assert_eq!(now.as_deref(), want.as_deref(), "key {i} now");
        assert_eq!(
            then.as_deref(),
            Some(&value(1)[..]),
            "key {i} at the snapshot"
        );
    }

    // Without the snapshot, only live values remain and the tombstones go (nothing is below).
    drop(snapshot);
    store.compact_range(&cf, ..).expect("compact again");
    let stats = store.stats(&cf).expect("stats");
    assert_eq!(stats.entries, 40 - 14, "{stats:?}");
    assert_eq!(stats.deletions, 0);
    assert_eq!(scan(&store, "default").len(), 26);
}

#[test]
fn compact_range_takes_only_the_tables_it_names_and_reports_its_work() {
    let fs = SimFs::new();
    let store = open_with(manual_only(&fs));
    let cf = store.default_cf();
    let long = |round: u64| format!("{round}-{}", "v".repeat(40)).into_bytes();
    for round in 0..4u64 {
        for i in 0..800 {
            store.put(&cf, &key(i), &long(round)).expect("put");
        }
        store.flush(&cf).expect("flush");
    }
    store.compact_range(&cf, ..).expect("compact");
    let stats = store.stats(&cf).expect("stats");
    let l1 = stats.tables_per_level[1];
    assert!(l1 > 1, "output split into tables of target size: {stats:?}");
    assert_eq!(stats.levels[1].compactions, 1);
    assert_eq!(stats.levels[1].read_from_above, stats.levels[0].written);
    assert!(stats.levels[1].write_amplification > 0.0);
    assert!(
        stats.write_amplification > 1.0,
        "flush + compaction wrote more than the flush alone"
    );
    assert_eq!(stats.levels.len(), 4, "one entry per configured level");

    // Overwrite one key and compact only around it: one level-1 table is rewritten, the
    // others are untouched.
    store.put(&cf, &key(5), b"new").expect("put");
    let tables_before = sst_files(&fs);
    store
        .compact_range(&cf, key(5).as_slice()..=key(5).as_slice())
        .expect("compact a range");
    let tables_after = sst_files(&fs);
    let kept = tables_before
        .iter()
        .filter(|t| tables_after.contains(t))
        .count();
    assert!(
        kept >= l1 - 1,
        "only the table holding the key was rewritten"
    );
    assert_eq!(
        store.get(&cf, &key(5)).expect("get").as_deref(),
        Some(&b"new"[..])
    );
    assert_eq!(scan(&store, "default").len(), 800);
}

fn sst_files(fs: &SimFs) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    names.sort();
    names
}

/// Data reaches the deepest level through automatic compactions alone, reads stay right on
/// the way, and the levels keep their shape: sorted levels do not overlap.
#[test]
fn automatic_compaction_moves_data_down_the_levels() {
    let fs = SimFs::new();
    let store = open_with(sim_options(&fs));
    let cf = store.default_cf();
    let mut rng = Rng::new(7);
    let mut model = std::collections::BTreeMap::new();
    for n in 0..6000u64 {
        let k = key(rng.below(900));
        let v = format!("{n:08}-{}", "x".repeat(rng.below(40) as usize)).into_bytes();
        store.put(&cf, &k, &v).expect("put");
        model.insert(k, v);
    }
    store.flush(&cf).expect("flush");
    wait_until(|| {
        let stats = store.stats(&cf).expect("stats");
        stats.tables_per_level[0] < 2
    });
    let stats = store.stats(&cf).expect("stats");
    assert!(
        stats.levels[2].tables + stats.levels[3].tables > 0,
        "data went below level 1: {stats:?}"
    );
    assert!(stats.levels[1].compactions > 0 && stats.levels[2].compactions > 0);
    let found = scan(&store, "default");
    assert_eq!(found.len(), model.len());
    assert!(found.iter().eq(model.iter()), "contents match");
    drop(store);
    // Tables below the configured levels are refused, not ignored.
    match Store::open(
        Path::new(DIR),
        Options {
            num_levels: 2,
            ..sim_options(&fs)
        },
    ) {
        Err(strata_lsm::Error::InvalidArgument(message)) => assert!(message.contains("num_levels")),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // Reopening checks that no sorted level overlaps (it refuses a manifest where one does).
    let store = open_with(sim_options(&fs));
    assert!(scan(&store, "default").iter().eq(model.iter()));
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "background work did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A crash at any moment of a compaction leaves the old tables or the new ones, never a mix,
/// and open removes what the manifest does not name.
#[test]
fn a_crash_during_compaction_loses_nothing_and_leaves_no_stray_file() {
    for seed in 1..=6u64 {
        let mut rng = Rng::new(seed);
        let fs = SimFs::new();
        let store = open_with(sim_options(&fs));
        let cf = store.default_cf();
        let mut model = std::collections::BTreeMap::new();
        let mut copies = Vec::new();
        for n in 0..3000u64 {
            let k = key(rng.below(500));
            let v = format!("{seed}-{n}").into_bytes();
            store.put(&cf, &k, &v).expect("put");
            model.insert(k, v);
            if n % 250 == 249 {
                store.sync_wal().expect("sync");
                // Power fails now, whatever the compaction threads are doing.
                copies.push((fs.crashed_copy(), model.clone()));
            }
        }
        drop(store);
        for (i, (copy, expected)) in copies.into_iter().enumerate() {
            let store = open_with(sim_options(&copy));
            let found = scan(&store, "default");
            assert!(
                found.iter().eq(expected.iter()),
                "seed {seed} copy {i}: contents differ after the crash"
            );
            let stats = store.stats(&store.default_cf()).expect("stats");
            let listed: usize = stats.tables_per_level.iter().sum();
            store.close().expect("close");
            // Open removed every table the manifest does not name (closing may have flushed
            // or compacted more, but removes what it replaces).
            let on_disk = sst_files(&copy).len();
            let reopened = open_with(manual_only(&copy));
            let now: usize = reopened
                .stats(&reopened.default_cf())
                .expect("stats")
                .tables_per_level
                .iter()
                .sum();
            assert_eq!(
                sst_files(&copy).len(),
                now,
                "seed {seed} copy {i}: stray tables"
            );
            assert!(on_disk >= now && listed > 0);
        }
    }
}

#[test]
fn writes_stop_while_flushes_fall_behind_and_resume_by_themselves() {
    let fs = SimFs::new();
    // Writes stop whenever one memtable waits for the flush thread; every stop must end. A
    // table's sync takes 5 ms, while the writer fills an 8 KiB memtable in well under one:
    // the flush thread falls behind on any machine, under any scheduling. (Without the slow
    // syncs the test depended on the scheduler: about half of its runs saw no stop.)
    fs.set_slow_syncs(Some((".sst", Duration::from_millis(5))));
    let store = open_with(Options {
        max_sealed_memtables: 1,
        ..sim_options(&fs)
    });
    let cf = store.default_cf();
    for i in 0..4000u64 {
        store
            .write(
                {
                    let mut batch = strata_lsm::WriteBatch::new();
                    batch.put(&cf, &key(i), &[7u8; 64]).expect("put");
                    batch
                },
                WriteOptions::default(),
            )
            .expect("write");
    }
    let stalls = store.write_stalls();
    assert!(stalls.stops > 0, "{stalls:?}");
    assert!(stalls.stalled > Duration::ZERO);
    assert_eq!(scan(&store, "default").len(), 4000);
}

#[test]
fn a_full_level_0_slows_writes_down_until_it_is_compacted() {
    let fs = SimFs::new();
    // Automatic compaction only at 30 tables; writes slow from 2.
    let store = open_with(Options {
        l0_compaction_trigger: 30,
        l0_slowdown_trigger: 2,
        l0_stop_trigger: 40,
        slowdown_delay: Duration::from_micros(200),
        ..sim_options(&fs)
    });
    let cf = store.default_cf();
    for round in 0..2u64 {
        store.put(&cf, &key(round), &value(round)).expect("put");
        store.flush(&cf).expect("flush");
    }
    assert_eq!(store.write_stalls().slowdowns, 0);
    for i in 0..5 {
        store
            .put(&cf, &key(i), b"slow")
            .expect("put while level 0 is full");
    }
    let stalls = store.write_stalls();
    assert_eq!((stalls.slowdowns, stalls.stops), (5, 0), "{stalls:?}");
    assert!(stalls.stalled >= Duration::from_micros(5 * 200));

    store.compact_range(&cf, ..).expect("compact");
    store.put(&cf, b"fast", b"v").expect("put");
    assert_eq!(
        store.write_stalls().slowdowns,
        5,
        "no delay once level 0 is empty"
    );
}

#[test]
fn inconsistent_compaction_options_are_refused() {
    let fs = SimFs::new();
    for bad in [
        Options {
            num_levels: 1,
            ..sim_options(&fs)
        },
        Options {
            num_levels: 17,
            ..sim_options(&fs)
        },
        Options {
            l0_stop_trigger: 2,
            l0_compaction_trigger: 2,
            ..sim_options(&fs)
        },
        Options {
            compaction_threads: 0,
            ..sim_options(&fs)
        },
        Options {
            memtable_filter_ratio: f64::NAN,
            ..sim_options(&fs)
        },
        Options {
            memtable_filter_ratio: -0.5,
            ..sim_options(&fs)
        },
        Options {
            memtable_filter_ratio: 0.3,
            ..sim_options(&fs)
        },
    ] {
        match Store::open(Path::new(DIR), bad) {
            Err(strata_lsm::Error::InvalidArgument(_)) => {}
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
}

#[test]
fn a_manual_compaction_split_into_key_ranges_keeps_exactly_what_one_merge_keeps() {
    // The same writes, compacted in one merge and in up to four ranges merged in parallel.
    let run = |parts: usize| {
        let fs = SimFs::new();
        let store = open_with(Options {
            max_subcompactions: parts,
            ..manual_only(&fs)
        });
        let cf = store.default_cf();
        let long = |round: u64| format!("{round}-{}", "v".repeat(40)).into_bytes();
        let mut snapshot = None;
        for round in 0..4u64 {
            for i in (round..2_000).step_by(1 + round as usize) {
                store.put(&cf, &key(i), &long(round)).expect("put");
            }
            if round == 1 {
                snapshot = Some(store.snapshot());
            }
            for i in (round * 7..2_000).step_by(13) {
                store.delete(&cf, &key(i)).expect("delete");
            }
            store.flush(&cf).expect("flush");
        }
        store.compact_range(&cf, ..).expect("compact");
        let snapshot = snapshot.expect("taken");
        let stats = store.stats(&cf).expect("stats");
        assert_eq!(stats.tables_per_level[0], 0);
        let at_snapshot: Vec<Option<Vec<u8>>> = (0..2_000)
            .map(|i| {
                store
                    .get_at(&cf, &key(i), &snapshot)
                    .expect("get_at")
                    .map(|v| v.to_vec())
            })
            .collect();
        let now = scan(&store, "default");
        let (entries, deletions, tables) =
            (stats.entries, stats.deletions, stats.tables_per_level[1]);
        drop(snapshot);
        drop(store);
        // Reopening checks that the level's tables do not overlap.
        let store = open_with(Options {
            max_subcompactions: parts,
            ..manual_only(&fs)
        });
        assert_eq!(scan(&store, "default"), now);
        (now, at_snapshot, entries, deletions, tables)
    };
    let one = run(1);
    let four = run(4);
    assert!(!one.0.is_empty());
    assert_eq!(one.0, four.0, "the same live data");
    assert_eq!(one.1, four.1, "the same data at the snapshot");
    assert_eq!((one.2, one.3), (four.2, four.3), "the same entries kept");
    // Each range ends its last table short: more tables show the split happened.
    assert!(
        four.4 > one.4,
        "tables: one merge {}, split {}",
        one.4,
        four.4
    );
}

/// Every entry of every table file: (key, seqno).
fn table_entries(fs: &SimFs) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    for name in sst_files(fs) {
        let bytes = fs.contents(&Path::new(DIR).join(&name)).expect("file");
        let table = strata_sstable::Table::open(bytes.into(), 1, None).expect("table");
        let mut it = table.iter();
        it.seek_to_first();
        while it.valid() {
            out.push((it.user_key().to_vec(), it.seqno()));
            it.next();
        }
    }
    out.sort();
    out
}

#[test]
fn the_bottom_level_writes_seqno_0_where_no_reader_can_tell_and_the_store_keeps_its_last_seqno() {
    let fs = SimFs::new();
    let store = open_with(manual_only(&fs));
    let cf = store.default_cf();
    for i in 0..100 {
        store.put(&cf, &key(i), &value(0)).expect("put");
    }
    store.flush(&cf).expect("flush");
    let snapshot = store.snapshot();
    for i in 0..50 {
        store.put(&cf, &key(i), &value(1)).expect("put");
    }
    store.flush(&cf).expect("flush");
    store.compact_range(&cf, ..).expect("compact");
    let entries = table_entries(&fs);
    // Keys 0..50 keep two versions: the newest, newer than the snapshot, keeps its seqno; the
    // one the snapshot sees is the oldest any reader needs, so it is written as 0, as is the
    // only version of keys 50..100.
    assert_eq!(entries.len(), 150);
    for (k, seqno) in &entries {
        let i = (0..100).find(|&i| &key(i) == k).expect("a key written");
        let newest = i < 50 && *seqno > snapshot.seqno();
        assert!(newest || *seqno == 0, "key {i} at seqno {seqno}");
    }
    assert_eq!(entries.iter().filter(|(_, s)| *s == 0).count(), 100);
    for i in 0..100 {
        let now = store.get(&cf, &key(i)).expect("get");
        let then = store.get_at(&cf, &key(i), &snapshot).expect("get_at");
        assert_eq!(now, Some(value(u64::from(i < 50)).into()), "key {i} now");
        assert_eq!(then, Some(value(0).into()), "key {i} at the snapshot");
    }

    // The store still knows its last seqno after a reopen (its newest writes' seqnos are in
    // no table now but the manifest has them), so a new write is newer than every old one.
    drop(snapshot);
    for i in 0..50 {
        store.put(&cf, &key(i), &value(1)).expect("put");
    }
    store.flush(&cf).expect("flush");
    store.compact_range(&cf, ..).expect("compact again");
    assert!(table_entries(&fs).iter().all(|(_, s)| *s == 0));
    let last = store.last_seqno();
    assert!(last >= 200);
    store.close().expect("close");
    let store = open_with(manual_only(&fs));
    assert_eq!(store.last_seqno(), last);
    let cf = store.default_cf();
    let before = store.snapshot();
    store.put(&cf, &key(7), b"after").expect("put");
    assert_eq!(store.last_seqno(), last + 1);
    assert_eq!(
        store.get(&cf, &key(7)).expect("get").as_deref(),
        Some(&b"after"[..])
    );
    assert_eq!(
        store.get_at(&cf, &key(7), &before).expect("get_at"),
        Some(value(1).into())
    );
}

#[test]
fn a_family_without_a_filter_writes_smaller_tables_that_read_the_same() {
    let fs = SimFs::new();
    let store = open_with(manual_only(&fs));
    let with = store.default_cf();
    let without = store.create_column_family("ranges").expect("create");
    without.set_bloom_bits_per_key(0);
    for cf in [&with, &without] {
        for i in 0..4000 {
            store.put(cf, &key(i), b"v").expect("put");
        }
        store.flush(cf).expect("flush");
    }
    let bytes = |cf| store.stats(cf).expect("stats").table_bytes;
    // About 10 bits a key: some 4,400 bytes of filter for 4,000 keys; without, 9 bytes.
    assert!(
        bytes(&with) >= bytes(&without) + 4_000,
        "{} vs {}",
        bytes(&with),
        bytes(&without)
    );
    for i in 0..4000 {
        assert_eq!(
            store.get(&without, &key(i)).expect("get").as_deref(),
            Some(&b"v"[..])
        );
    }
    assert_eq!(store.get(&without, &key(4001)).expect("get"), None);
    // The setting holds for compactions too.
    store.compact_range(&without, ..).expect("compact");
    assert!(bytes(&with) >= bytes(&without) + 4_000);
    assert_eq!(scan(&store, "ranges").len(), 4000);
}

/// A snapshot at an older seqno than a flush or compaction has kept versions for would see a
/// store that no longer exists (versions dropped, or renumbered 0 at the bottom): refused,
/// unless a snapshot is live at that very seqno.
#[test]
fn a_snapshot_at_a_seqno_flushes_have_passed_is_refused_unless_one_is_live_there() {
    let fs = SimFs::new();
    let store = open_with(manual_only(&fs));
    let cf = store.default_cf();
    store.put(&cf, &key(1), b"a").expect("put");
    let early = store.last_seqno();
    store.put(&cf, &key(1), b"b").expect("put");
    let at_early = store
        .snapshot_at(early)
        .expect("no flush has passed it yet");
    assert_eq!(
        store
            .get_at(&cf, &key(1), &at_early)
            .expect("get")
            .as_deref(),
        Some(&b"a"[..])
    );
    drop(at_early);
    let held = store.snapshot();
    store.put(&cf, &key(1), b"c").expect("put");
    store.flush(&cf).expect("flush");
    store.compact_range(&cf, ..).expect("compact");
    assert!(
        store.snapshot_at(early).is_err(),
        "its version of the key is gone"
    );
    let again = store
        .snapshot_at(held.seqno())
        .expect("a live snapshot holds it");
    assert_eq!(
        store.get_at(&cf, &key(1), &again).expect("get").as_deref(),
        Some(&b"b"[..])
    );
    assert!(
        store.snapshot_at(store.last_seqno() + 1).is_err(),
        "not published"
    );
}
