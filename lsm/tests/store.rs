//! The store's behaviour case by case: locking, column families, limits and bad input, the
//! sticky error, statistics, log retention, and damaged files at open.

mod common;

use std::path::Path;

use common::*;
use strata_lsm::fs::{OpKind, SimFs};
use strata_lsm::{Error, Options, ReadOptions, Store, WriteBatch, WriteOptions};

const DIR: &str = "/db";

fn open(fs: &SimFs) -> Store {
    Store::open(Path::new(DIR), sim_options(fs)).expect("store opens")
}

/// Serialises the tests that release an OS lock and expect it free with the test that spawns
/// a child process: between `fork` and `exec` the child holds a copy of every descriptor, and a
/// `flock` lock lives until the last copy closes, so a lock released in that window stays held
/// for a few microseconds more.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_second_open_of_the_same_directory_fails_clearly() {
    let _serial = SPAWNING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), Options::default()).expect("open");
    let second = Store::open(dir.path(), Options::default());
    match second {
        Err(Error::Conflict(message)) => assert!(message.contains("locked"), "{message}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    drop(store);
    Store::open(dir.path(), Options::default()).expect("reopens once the first is closed");
}

const CHILD_ENV: &str = "STRATA_STORE_LOCK_PROBE";

#[test]
fn another_process_cannot_open_the_same_store() {
    let _serial = SPAWNING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), Options::default()).expect("open");
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            "store_lock_probe_child",
            "--nocapture",
        ])
        .env(CHILD_ENV, dir.path())
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("probe: conflict"), "child said: {stdout}");
    drop(store);
}

/// Run only as a child of `another_process_cannot_open_the_same_store`.
#[test]
#[ignore = "a helper process for another_process_cannot_open_the_same_store"]
fn store_lock_probe_child() {
    let dir = std::env::var(CHILD_ENV).expect("run by the parent test");
    match Store::open(&dir, Options::default()) {
        Ok(_) => println!("probe: opened"),
        Err(Error::Conflict(_)) => println!("probe: conflict"),
        Err(error) => println!("probe: error {error}"),
    }
}

#[test]
fn column_families_are_created_listed_dropped_and_survive_reopen() {
    let fs = SimFs::new();
    let store = open(&fs);
    assert_eq!(store.column_families(), ["default"]);
    let users = store.create_column_family("users").expect("create");
    store.create_column_family("orders").expect("create");
    assert!(matches!(
        store.create_column_family("users"),
        Err(Error::Conflict(_))
    ));
    for bad in ["", "tab\there", &"x".repeat(256)] {
        assert!(
            matches!(
                store.create_column_family(bad),
                Err(Error::InvalidArgument(_))
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        store.drop_column_family(&store.default_cf()),
        Err(Error::InvalidArgument(_))
    ));
    store.put(&users, b"u1", b"ada").expect("put");
    store.flush(&users).expect("flush");
    store.put(&users, b"u2", b"bob").expect("put");
    drop(store);

    let store = open(&fs);
    assert_eq!(store.column_families(), ["default", "users", "orders"]);
    let users = store.cf("users").expect("users");
    assert_eq!(scan(&store, "users").len(), 2);
    store.drop_column_family(&users).expect("drop");
    assert!(matches!(store.cf("users"), Err(Error::NotFound(_))));
    assert!(matches!(store.get(&users, b"u1"), Err(Error::NotFound(_))));
    let mut batch = WriteBatch::new();
    batch.put(&users, b"u3", b"cy").expect("put into a batch");
    assert!(matches!(
        store.write(batch, WriteOptions::default()),
        Err(Error::NotFound(_))
    ));
    drop(store);

    let store = open(&fs);
    assert_eq!(store.column_families(), ["default", "orders"]);
    let users = store
        .create_column_family("users")
        .expect("a name can be reused");
    assert!(users.id() > 2, "ids are never reused");
    assert!(
        scan(&store, "users").is_empty(),
        "the dropped family's data is gone"
    );
}

#[test]
fn oversized_keys_values_and_batches_are_refused_and_write_nothing() {
    let fs = SimFs::new();
    let store = open(&fs);
    let cf = store.default_cf();
    let big_key = vec![b'k'; strata_lsm::MAX_KEY_BYTES + 1];
    assert!(matches!(
        store.put(&cf, &big_key, b"v"),
        Err(Error::TooLarge { what: "key", .. })
    ));
    let big_value = vec![0u8; strata_lsm::MAX_VALUE_BYTES + 1];
    assert!(matches!(
        store.put(&cf, b"k", &big_value),
        Err(Error::TooLarge { what: "value", .. })
    ));
    let mut batch = WriteBatch::new();
    let value = vec![1u8; strata_lsm::MAX_VALUE_BYTES];
    let mut refused = None;
    for i in 0..4 {
        if let Err(error) = batch.put(&cf, format!("k{i}").as_bytes(), &value) {
            refused = Some((i, error));
            break;
        }
    }
    let (at, error) = refused.expect("a batch over 64 MiB is refused");
    assert!(matches!(error, Error::TooLarge { what: "batch", .. }));
    assert_eq!(batch.len(), at, "the refused put left the batch as it was");
    assert!(store.get(&cf, b"k").expect("get").is_none());
    assert_eq!(store.last_seqno(), 0, "nothing was written");
    // The store stays usable.
    store.put(&cf, b"k", b"v").expect("put");
    assert_eq!(
        store.get(&cf, b"k").expect("get").as_deref(),
        Some(&b"v"[..])
    );
}

#[test]
fn a_failed_log_sync_makes_the_store_read_only_until_reopened() {
    let fs = SimFs::new();
    let store = open(&fs);
    let cf = store.default_cf();
    store.put(&cf, b"before", b"1").expect("put");
    store
        .write(WriteBatch::new(), WriteOptions::synced())
        .expect("an empty batch writes nothing");
    fs.fail_nth(OpKind::Sync, fs.op_count(OpKind::Sync) + 1);
    let mut batch = WriteBatch::new();
    batch.put(&cf, b"lost", b"2").expect("put");
    let error = store
        .write(batch, WriteOptions::synced())
        .expect_err("the sync fails");
    assert!(error.is_io(), "{error}");
    assert!(
        store.get(&cf, b"lost").expect("reads still work").is_none(),
        "a failed batch is not visible"
    );
    let later = store.put(&cf, b"later", b"3").expect_err("sticky");
    assert!(matches!(later, Error::ReadOnly(_)), "{later}");
    assert!(later.is_io());
    assert!(matches!(store.flush_all(), Err(Error::ReadOnly(_))));
    drop(store);

    let store = open(&fs);
    assert_eq!(
        store
            .get(&cf_of(&store), b"before")
            .expect("get")
            .as_deref(),
        Some(&b"1"[..])
    );
    store
        .put(&cf_of(&store), b"after", b"4")
        .expect("writable again");
}

fn cf_of(store: &Store) -> strata_lsm::ColumnFamily {
    store.default_cf()
}

#[test]
fn stats_count_entries_and_tombstones_in_memtables_and_tables() {
    let fs = SimFs::new();
    // No automatic compaction: it would merge the tables and drop tombstones under the counts.
    let store = Store::open(
        Path::new(DIR),
        Options {
            l0_compaction_trigger: 100,
            l0_slowdown_trigger: 200,
            l0_stop_trigger: 300,
            ..sim_options(&fs)
        },
    )
    .expect("store opens");
    let cf = store.default_cf();
    for i in 0..100u64 {
        store.put(&cf, &key(i), &[7; 50]).expect("put");
    }
    for i in 0..10u64 {
        store.delete(&cf, &key(i)).expect("delete");
    }
    let stats = store.stats(&cf).expect("stats");
    assert_eq!((stats.entries, stats.deletions), (110, 10));
    // A background flush may move entries to a table at any moment: the sums are fixed.
    let sizes = store.sizes(&cf).expect("sizes");
    assert_eq!(
        (
            sizes.memtable_entries + sizes.table_entries,
            sizes.memtable_deletions + sizes.table_deletions
        ),
        (110, 10),
        "{sizes:?}"
    );
    store.flush(&cf).expect("flush");
    let stats = store.stats(&cf).expect("stats");
    assert_eq!((stats.entries, stats.deletions), (110, 10), "{stats:?}");
    let sizes = store.sizes(&cf).expect("sizes");
    assert_eq!(
        (
            sizes.memtable_entries,
            sizes.table_entries,
            sizes.table_deletions
        ),
        (0, 110, 10),
        "{sizes:?}"
    );
    assert_eq!(sizes.table_bytes, stats.table_bytes);
    assert_eq!(stats.sealed_memtables, 0);
    assert!(
        stats.tables_per_level[0] >= 1 && stats.table_bytes > 0,
        "{stats:?}"
    );

    let all = store
        .approximate_range_bytes(&cf, b"", None)
        .expect("range bytes");
    let half = store
        .approximate_range_bytes(&cf, &key(50), None)
        .expect("range bytes");
    let none = store
        .approximate_range_bytes(&cf, b"zzz", None)
        .expect("range bytes");
    assert!(all >= 100 * 50, "all = {all}");
    assert!(
        half > all / 4 && half < all * 3 / 4,
        "half = {half}, all = {all}"
    );
    assert!(none < all / 10, "none = {none}");
}

#[test]
fn an_idle_family_does_not_pin_old_logs() {
    let fs = SimFs::new();
    let store = open(&fs);
    let idle = store.create_column_family("idle").expect("create");
    let busy = store.create_column_family("busy").expect("create");
    store.put(&idle, b"once", b"written").expect("put");
    let idle_log = *store.log_numbers().last().expect("a log");
    for i in 0..3000u64 {
        store.put(&busy, &key(i % 500), &[1; 100]).expect("put");
    }
    // 3000 × ~110 bytes is about 330 KiB of log over 8 KiB memtables and a 64 KiB budget.
    store.flush(&busy).expect("flush");
    let logs = store.log_numbers();
    assert!(logs.len() <= 2, "logs kept: {logs:?}");
    assert!(
        logs[0] > idle_log,
        "the idle family's log {idle_log} is gone: {logs:?}"
    );
    assert!(
        store.stats(&idle).expect("stats").tables_per_level.first() == Some(&1),
        "the idle family was flushed to release the oldest log"
    );
    drop(store);
    let store = open(&fs);
    let idle = store.cf("idle").expect("cf");
    assert_eq!(
        store.get(&idle, b"once").expect("get").as_deref(),
        Some(&b"written"[..])
    );
}

#[test]
fn iterators_and_snapshots_pin_what_they_see_across_flushes() {
    let fs = SimFs::new();
    let store = open(&fs);
    let cf = store.default_cf();
    for i in 0..50u64 {
        store.put(&cf, &key(i), b"old").expect("put");
    }
    let snapshot = store.snapshot();
    let mut iter = store.iter(&cf, ReadOptions::default()).expect("iter");
    for i in 0..50u64 {
        store.put(&cf, &key(i), b"new").expect("put");
    }
    store.flush(&cf).expect("flush");
    assert_eq!(store.live_snapshots(), 2, "the iterator holds one too");
    let first = iter.next().expect("an item").expect("ok");
    assert_eq!(
        &first.1[..],
        b"old",
        "the iterator reads as of its creation"
    );
    assert_eq!(iter.count(), 49);
    assert_eq!(
        store
            .get_at(&cf, &key(7), &snapshot)
            .expect("get")
            .as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(
        store.get(&cf, &key(7)).expect("get").as_deref(),
        Some(&b"new"[..])
    );
    drop(snapshot);
    assert_eq!(store.live_snapshots(), 0);
}

#[test]
fn damaged_files_fail_the_open_with_corruption_and_never_panic() {
    let fs = SimFs::new();
    let store = open(&fs);
    let cf = store.default_cf();
    for i in 0..200u64 {
        store.put(&cf, &key(i), &[3; 40]).expect("put");
    }
    store.flush(&cf).expect("flush");
    store.put(&cf, b"tail", b"in the log").expect("put");
    drop(store);

    let names = strata_lsm::fs::FileSystem::list(&fs, Path::new(DIR)).expect("list");
    for name in names.iter().filter(|n| *n != "LOCK") {
        let path = Path::new(DIR).join(name);
        let original = fs.contents(&path).expect("file");
        for at in [0, original.len() / 2, original.len().saturating_sub(1)] {
            if original.is_empty() {
                continue;
            }
            let copy = fs.crashed_copy();
            let mut damaged = original.clone();
            damaged[at] ^= 0x55;
            let mut file = strata_lsm::fs::FileSystem::create(&copy, &path).expect("create");
            std::io::Write::write_all(&mut file, &damaged).expect("write");
            file.sync_data().expect("sync");
            drop(file);
            match Store::open(Path::new(DIR), sim_options(&copy)) {
                // Damage in bytes no check covers can be harmless; whatever opens must read
                // back exactly what was written, or report corruption: never a wrong value.
                Ok(store) => {
                    let cf = store.default_cf();
                    let expect_value = |k: &[u8], v: &[u8]| {
                        let want: &[u8] = if k == b"tail" {
                            b"in the log"
                        } else {
                            &[3; 40]
                        };
                        assert_eq!(v, want, "{name} flipped at {at}: key {k:?}");
                    };
                    for i in 0..200u64 {
                        match store.get(&cf, &key(i)) {
                            Ok(Some(v)) => expect_value(&key(i), &v),
                            Ok(None) => panic!("{name} flipped at {at}: key {i} lost"),
                            Err(e) => assert!(e.is_corruption(), "{name} at {at}: {e}"),
                        }
                    }
                    let mut seen = 0;
                    for kv in store.iter(&cf, ReadOptions::default()).expect("iter") {
                        match kv {
                            Ok((k, v)) => {
                                expect_value(&k, &v);
                                seen += 1;
                            }
                            Err(e) => {
                                assert!(e.is_corruption(), "{name} at {at}: {e}");
                                seen = usize::MAX;
                                break;
                            }
                        }
                    }
                    assert!(
                        seen == usize::MAX || seen == 200 || seen == 201,
                        "{name} flipped at {at}: a scan saw {seen} keys"
                    );
                }
                Err(error) => assert!(
                    error.is_corruption(),
                    "{name} flipped at {at}: expected corruption, got {error}"
                ),
            }
        }
        // Truncated to nothing.
        let copy = fs.crashed_copy();
        let file = strata_lsm::fs::FileSystem::create(&copy, &path).expect("create");
        drop(file);
        if let Err(error) = Store::open(Path::new(DIR), sim_options(&copy)) {
            assert!(error.is_corruption(), "{name} emptied: {error}");
        }
    }
}

#[test]
fn opening_a_missing_store_without_create_if_missing_fails() {
    let fs = SimFs::new();
    let options = Options {
        create_if_missing: false,
        ..sim_options(&fs)
    };
    assert!(matches!(
        Store::open(Path::new(DIR), options),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn the_manifest_is_rewritten_when_it_grows_and_old_ones_are_removed() {
    let fs = SimFs::new();
    let options = Options {
        manifest_rewrite_bytes: 300,
        ..sim_options(&fs)
    };
    let manifests = |fs: &SimFs| -> Vec<String> {
        strata_lsm::fs::FileSystem::list(fs, Path::new(DIR))
            .expect("list")
            .into_iter()
            .filter(|n| n.starts_with("MANIFEST-"))
            .collect()
    };
    let store = Store::open(Path::new(DIR), options.clone()).expect("open");
    let first = manifests(&fs);
    let cf = store.default_cf();
    for round in 0..20u64 {
        store.put(&cf, &key(round), b"v").expect("put");
        store.flush(&cf).expect("flush");
    }
    let now = manifests(&fs);
    assert_eq!(now.len(), 1, "one live manifest: {now:?}");
    assert_ne!(now, first, "the manifest was rewritten");
    drop(store);
    let store = Store::open(Path::new(DIR), options).expect("reopen");
    assert_eq!(scan(&store, "default").len(), 20);
    // Compaction may have merged the twenty tables; no entry is lost or duplicated.
    assert_eq!(store.stats(&store.default_cf()).expect("stats").entries, 20);
}

#[test]
fn damage_in_synced_log_data_follows_the_recovery_mode() {
    use strata_wal::RecoveryMode;
    let fs = SimFs::new();
    let options = |fs: &SimFs, mode| Options {
        recovery_mode: mode,
        write_buffer_bytes: 1 << 20, // one log holds everything
        ..sim_options(fs)
    };
    let store = Store::open(Path::new(DIR), options(&fs, RecoveryMode::default())).expect("open");
    let cf = store.default_cf();
    for i in 0..200u64 {
        store.put(&cf, &key(i), &[9; 400]).expect("put");
        if i % 10 == 9 {
            store.sync_wal().expect("sync"); // 80 KiB of log: three 32 KiB blocks
        }
    }
    let log = *store.log_numbers().last().expect("log");
    let crashed = fs.crashed_copy();
    drop(store);
    // Flip a byte early in the log: data that later syncs attest was durable.
    let path = Path::new(DIR).join(format!("{log:06}.log"));
    let mut bytes = crashed.contents(&path).expect("log");
    bytes[100] ^= 0x40;
    let mut file = strata_lsm::fs::FileSystem::create(&crashed, &path).expect("create");
    std::io::Write::write_all(&mut file, &bytes).expect("write");
    file.sync_data().expect("sync");
    drop(file);
    strata_lsm::fs::FileSystem::sync_dir(&crashed, Path::new(DIR)).expect("sync dir");

    let with_mode = |mode| options(&crashed, mode);
    let error = Store::open(Path::new(DIR), with_mode(RecoveryMode::TolerateTornTail))
        .expect_err("damage to synced data stops the default open");
    assert!(error.is_corruption(), "{error}");
    let strict = Store::open(Path::new(DIR), with_mode(RecoveryMode::AbsoluteConsistency));
    assert!(
        strict.as_ref().is_err_and(Error::is_corruption),
        "{:?}",
        strict.err()
    );
    // Salvage: skip-corrupted drops the damaged block (the log format resumes at the next
    // block) and keeps the rest; point-in-time keeps only what precedes the damage: here
    // nothing, since it is in the first record.
    let salvage = crashed.crashed_copy();
    let store = Store::open(
        Path::new(DIR),
        options(&salvage, RecoveryMode::SkipCorrupted),
    )
    .expect("skip-corrupted opens");
    let kept = scan(&store, "default").len();
    assert!((100..200).contains(&kept), "kept {kept} of 200");
    drop(store);
    let store = Store::open(Path::new(DIR), with_mode(RecoveryMode::PointInTime))
        .expect("point-in-time opens");
    assert_eq!(scan(&store, "default").len(), 0);
}

/// Writes a manifest holding `edits` (each one log record) and points `CURRENT` at it.
fn write_manifest(fs: &SimFs, edits: &[strata_lsm::fuzzing::VersionEdit]) {
    let dir = Path::new(DIR);
    strata_lsm::fs::FileSystem::create_dir_all(fs, dir).expect("dir");
    let file =
        strata_lsm::fs::FileSystem::create(fs, &dir.join("MANIFEST-000001")).expect("create");
    let mut writer = strata_wal::LogWriter::new(file, 1);
    for edit in edits {
        writer.add_record(&edit.encode()).expect("append");
    }
    writer.sync(|f| f.sync_data()).expect("sync");
    let mut current = strata_lsm::fs::FileSystem::create(fs, &dir.join("CURRENT")).expect("create");
    std::io::Write::write_all(&mut current, b"MANIFEST-000001\n").expect("write");
    current.sync_data().expect("sync");
}

/// What broke: a manifest that never created column family 0, or dropped it, was accepted and
/// `Store::default_cf` then panicked; a table numbered `u64::MAX` overflowed `number + 1`.
#[test]
fn a_manifest_without_the_default_family_or_with_impossible_numbers_is_corruption() {
    use strata_lsm::fuzzing::{TableMeta, VersionEdit};
    let create = |id: u32, name: &str| VersionEdit {
        created_cfs: vec![(id, name.to_owned())],
        ..VersionEdit::default()
    };
    let table = |number: u64| VersionEdit {
        added_tables: vec![(
            0,
            1,
            TableMeta {
                number,
                file_size: 100,
                smallest_seqno: 1,
                largest_seqno: 1,
                smallest_key: b"a".to_vec(),
                largest_key: b"b".to_vec(),
            },
        )],
        ..VersionEdit::default()
    };
    let cases: [(&str, Vec<VersionEdit>); 5] = [
        ("never creates family 0", vec![create(1, "other")]),
        (
            "drops family 0",
            vec![
                create(0, "default"),
                create(1, "other"),
                VersionEdit {
                    dropped_cfs: vec![0],
                    ..VersionEdit::default()
                },
            ],
        ),
        (
            "a table numbered u64::MAX",
            vec![create(0, "default"), table(u64::MAX)],
        ),
        (
            "a next file number of u64::MAX",
            vec![
                create(0, "default"),
                VersionEdit {
                    next_file_number: Some(u64::MAX),
                    ..VersionEdit::default()
                },
            ],
        ),
        (
            "a last seqno over 56 bits",
            vec![
                create(0, "default"),
                VersionEdit {
                    last_seqno: Some(u64::MAX),
                    ..VersionEdit::default()
                },
            ],
        ),
    ];
    for (what, edits) in cases {
        let fs = SimFs::new();
        write_manifest(&fs, &edits);
        match Store::open(Path::new(DIR), sim_options(&fs)) {
            Ok(store) => panic!("{what}: opened, default family {:?}", store.default_cf()),
            Err(error) => assert!(error.is_corruption(), "{what}: {error}"),
        }
    }
}

/// A cursor over one level's tables and nothing else steps them directly: it must still
/// hide a key's older versions, skip deleted keys, see each snapshot's own version, stop at
/// its upper bound, and go on from one of the level's tables into the next.
#[test]
fn a_cursor_over_one_level_hides_old_versions_and_deleted_keys() {
    let fs = SimFs::new();
    let store = open(&fs);
    let cf = store.cf("default").expect("default family");
    let k = |i: u32| format!("k{i:04}").into_bytes();
    for i in 0..300 {
        store.put(&cf, &k(i), b"old").expect("put");
    }
    let before = store.snapshot();
    for i in (0..300).step_by(3) {
        store.put(&cf, &k(i), b"new").expect("put");
    }
    for i in (1..300).step_by(3) {
        store.delete(&cf, &k(i)).expect("delete");
    }
    // Every version lands in the deepest level, a few small tables in a row, and nowhere
    // else: the snapshot keeps the old versions.
    store.compact_range(&cf, ..).expect("compact");
    let read = |options: ReadOptions| {
        let mut cursor = store.cursor(&cf, options).expect("cursor");
        cursor.seek_to_first();
        let mut seen = Vec::new();
        while cursor.valid() {
            seen.push((cursor.key().to_vec(), cursor.value().to_vec()));
            cursor.next();
        }
        cursor.status().expect("no error");
        seen
    };
    let now = read(ReadOptions::default());
    let expected: Vec<_> = (0..300)
        .filter(|i| i % 3 != 1)
        .map(|i| {
            (
                k(i),
                if i % 3 == 0 {
                    b"new".to_vec()
                } else {
                    b"old".to_vec()
                },
            )
        })
        .collect();
    assert_eq!(now, expected);
    let then = read(ReadOptions::default().snapshot(&before));
    assert_eq!(
        then,
        (0..300)
            .map(|i| (k(i), b"old".to_vec()))
            .collect::<Vec<_>>()
    );
    let bounded = read(
        ReadOptions::default()
            .lower_bound(&k(10))
            .upper_bound(&k(20)),
    );
    assert_eq!(
        bounded,
        expected
            .iter()
            .filter(|(key, _)| *key >= k(10) && *key < k(20))
            .cloned()
            .collect::<Vec<_>>()
    );
    // Stepping back and forth crosses between the direct steps and the merge.
    let mut cursor = store.cursor(&cf, ReadOptions::default()).expect("cursor");
    cursor.seek(&k(30));
    cursor.next();
    cursor.prev();
    assert_eq!(cursor.key(), &k(30)[..]);
    cursor.next();
    cursor.next();
    assert_eq!(cursor.key(), &k(33)[..]);
}

#[test]
fn a_scan_only_family_still_answers_reads_by_key_and_by_iteration() {
    // Its memtables keep no point index or filter (`Hooks::scan_only_families`): every
    // read by key searches, and must find what the indexed family next to it finds.
    let fs = SimFs::new();
    let hooks = strata_lsm::Hooks {
        scan_only_families: std::sync::Arc::new(vec!["log".to_string()]),
        ..strata_lsm::Hooks::default()
    };
    let store = Store::open_with("/db", sim_options(&fs), hooks.clone()).expect("open");
    let log = store.create_column_family("log").expect("family");
    let plain = store.default_cf();
    for i in 0..3_000u64 {
        let mut batch = WriteBatch::new();
        batch.put(&log, &i.to_be_bytes(), &[7; 40]).expect("put");
        batch.put(&plain, &i.to_be_bytes(), &[7; 40]).expect("put");
        store.write(batch, WriteOptions::default()).expect("write");
    }
    for i in (0..3_000u64).step_by(7) {
        assert_eq!(
            store.get(&log, &i.to_be_bytes()).expect("get"),
            store.get(&plain, &i.to_be_bytes()).expect("get"),
            "key {i}"
        );
        assert!(store.get(&log, &i.to_be_bytes()).expect("get").is_some());
    }
    assert_eq!(scan(&store, "log"), scan(&store, "default"));
    drop(store);
    let store = Store::open_with("/db", sim_options(&fs), hooks).expect("reopen");
    assert_eq!(scan(&store, "log").len(), 3_000);
}
