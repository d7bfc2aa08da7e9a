//! The `FileSystem` contract, on the real file system and the simulated one; `SimFs`'s crash
//! and fault model; the `LOCK` file, across threads and processes.

use std::io::{ErrorKind, Write};
use std::path::Path;

use strata_lsm::fs::{FileSystem, OpKind, OsFs, SimFs};

/// The operations every file system must support the same way.
fn conformance(fs: &dyn FileSystem, root: &Path) {
    let dir = root.join("db");
    fs.create_dir_all(&dir).expect("mkdir");
    let a = dir.join("a.log");
    let mut file = fs.create(&a).expect("create");
    file.write_all(b"hello ").expect("write");
    file.sync_data().expect("sync");
    drop(file);
    let mut file = fs.open_append(&a).expect("append");
    file.write_all(b"world").expect("write");
    file.sync_data().expect("sync");
    drop(file);
    assert_eq!(&fs.read(&a).expect("read")[..], b"hello world");

    fs.create(&dir.join("c")).expect("create c");
    assert_eq!(fs.list(&dir).expect("list"), ["a.log", "c"]);
    fs.rename(&a, &dir.join("c")).expect("rename replaces");
    assert_eq!(fs.list(&dir).expect("list"), ["c"]);
    assert_eq!(&fs.read(&dir.join("c")).expect("read")[..], b"hello world");
    assert!(!fs.exists(&a).expect("exists"));
    fs.sync_dir(&dir).expect("sync dir");
    fs.remove_file(&dir.join("c")).expect("remove");
    assert!(fs.list(&dir).expect("list").is_empty());
    assert_eq!(fs.read(&a).expect_err("gone").kind(), ErrorKind::NotFound);
    assert_eq!(
        fs.open_append(&a).expect_err("gone").kind(),
        ErrorKind::NotFound
    );

    let empty = dir.join("empty");
    drop(fs.create(&empty).expect("create"));
    assert!(fs.read(&empty).expect("read").is_empty());
}

#[test]
fn os_fs_keeps_the_contract() {
    let root = tempfile::tempdir().expect("tempdir");
    conformance(&OsFs, root.path());
}

#[test]
fn sim_fs_keeps_the_contract() {
    conformance(&SimFs::new(), Path::new("/sim"));
}

fn sim_with_dir() -> (SimFs, std::path::PathBuf) {
    let fs = SimFs::new();
    let dir = Path::new("/db").to_path_buf();
    fs.create_dir_all(&dir).expect("mkdir");
    (fs, dir)
}

#[test]
fn a_crash_keeps_synced_bytes_and_drops_the_rest() {
    let (fs, dir) = sim_with_dir();
    let path = dir.join("wal");
    let mut file = fs.create(&path).expect("create");
    file.write_all(b"durable").expect("write");
    file.sync_data().expect("sync");
    fs.sync_dir(&dir).expect("sync dir");
    file.write_all(b" lost").expect("write");
    assert_eq!(fs.contents(&path).expect("exists"), b"durable lost");
    fs.crash();
    assert_eq!(&fs.read(&path).expect("read")[..], b"durable");
    assert!(
        file.write_all(b"x").is_err(),
        "a handle from before the crash is dead"
    );
}

#[test]
fn a_crash_drops_names_whose_directory_was_not_synced() {
    let (fs, dir) = sim_with_dir();
    let mut file = fs.create(&dir.join("new")).expect("create");
    file.write_all(b"data").expect("write");
    file.sync_data()
        .expect("sync: the bytes are durable, the name is not");
    fs.crash();
    assert!(!fs.exists(&dir.join("new")).expect("exists"));
}

#[test]
fn renames_and_removals_are_durable_only_after_the_directory_sync() {
    let (fs, dir) = sim_with_dir();
    for name in ["CURRENT", "MANIFEST-1", "old"] {
        let mut file = fs.create(&dir.join(name)).expect("create");
        file.write_all(name.as_bytes()).expect("write");
        file.sync_data().expect("sync");
    }
    fs.sync_dir(&dir).expect("sync dir");

    fs.rename(&dir.join("MANIFEST-1"), &dir.join("CURRENT"))
        .expect("rename");
    fs.remove_file(&dir.join("old")).expect("remove");
    fs.crash();
    assert_eq!(
        fs.list(&dir).expect("list"),
        ["CURRENT", "MANIFEST-1", "old"]
    );
    assert_eq!(
        &fs.read(&dir.join("CURRENT")).expect("read")[..],
        b"CURRENT"
    );

    fs.rename(&dir.join("MANIFEST-1"), &dir.join("CURRENT"))
        .expect("rename");
    fs.remove_file(&dir.join("old")).expect("remove");
    fs.sync_dir(&dir).expect("sync dir");
    fs.crash();
    assert_eq!(fs.list(&dir).expect("list"), ["CURRENT"]);
    assert_eq!(
        &fs.read(&dir.join("CURRENT")).expect("read")[..],
        b"MANIFEST-1"
    );
}

#[test]
fn the_nth_operation_of_a_kind_fails_and_changes_nothing() {
    let (fs, dir) = sim_with_dir();
    let path = dir.join("f");
    let mut file = fs.create(&path).expect("create");
    fs.fail_nth(OpKind::Write, 2);
    file.write_all(b"one").expect("first write");
    let error = file.write_all(b"two").expect_err("second write fails");
    assert!(error.to_string().contains("injected"), "{error}");
    file.write_all(b"three").expect("third write");
    assert_eq!(fs.contents(&path).expect("exists"), b"onethree");
    assert_eq!(fs.op_count(OpKind::Write), 3);

    fs.fail_nth(OpKind::Rename, 1);
    assert!(fs.rename(&path, &dir.join("g")).is_err());
    assert!(fs.exists(&path).expect("exists") && !fs.exists(&dir.join("g")).expect("exists"));

    fs.fail_nth(OpKind::Sync, 1);
    assert!(file.sync_data().is_err());
    fs.fail_nth(OpKind::SyncDir, 1);
    assert!(fs.sync_dir(&dir).is_err());
    fs.crash();
    assert!(
        !fs.exists(&path).expect("exists"),
        "neither failed sync made anything durable"
    );
}

/// Serialises the tests that release an OS lock and expect it free with the test that spawns
/// a child process: between `fork` and `exec` the child holds a copy of every descriptor, and a
/// `flock` lock lives until the last copy closes, so a lock released in that window stays held
/// for a few microseconds more.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_second_lock_fails_until_the_first_is_released() {
    let _serial = SPAWNING.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().expect("tempdir");
    let path = root.path().join("LOCK");
    let sim = SimFs::new();
    for fs in [&OsFs as &dyn FileSystem, &sim] {
        let held = fs.lock(&path).expect("first lock");
        let error = fs.lock(&path).expect_err("second lock");
        assert_eq!(error.kind(), ErrorKind::WouldBlock);
        assert!(error.to_string().contains("another Store"), "{error}");
        drop(held);
        drop(fs.lock(&path).expect("free again"));
    }
    let held = sim.lock(&path).expect("lock");
    sim.crash();
    let after_crash = sim.lock(&path).expect("a crash releases locks");
    drop(held); // the pre-crash guard must not release the new holder's lock
    assert!(sim.lock(&path).is_err());
    drop(after_crash);
}

const CHILD_ENV: &str = "STRATA_TEST_LOCK_PATH";

#[test]
fn another_process_cannot_take_the_lock() {
    let _serial = SPAWNING.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().expect("tempdir");
    let path = root.path().join("LOCK");
    let held = OsFs.lock(&path).expect("lock");
    let run_child = || {
        std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--ignored", "--exact", "lock_probe_child", "--nocapture"])
            .env(CHILD_ENV, &path)
            .output()
            .expect("child runs")
    };
    let output = run_child();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("probe: blocked"), "child said: {stdout}");
    drop(held);
    let output = run_child();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("probe: acquired"), "child said: {stdout}");
}

/// Run only as a child of `another_process_cannot_take_the_lock`: tries the lock named by the
/// environment and reports what happened.
#[test]
#[ignore = "a helper process for another_process_cannot_take_the_lock"]
fn lock_probe_child() {
    let path = std::env::var(CHILD_ENV).expect("run by another_process_cannot_take_the_lock");
    match OsFs.lock(Path::new(&path)) {
        Ok(_) => println!("probe: acquired"),
        Err(error) if error.kind() == ErrorKind::WouldBlock => println!("probe: blocked"),
        Err(error) => println!("probe: error {error}"),
    }
}
