//! Checkpoints and backups of the bank (accounts over four shards, a ledger, transfers in
//! transactions) taken while transfers run: each copy opens, holds a prefix of the transfers
//! with the total intact, and `verify` is clean on it. Backups survive a crash at every step
//! of a later backup, find a damaged byte, and refuse what is not theirs.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::bank::{check, create, sim_options, store_options, transfer};
use strata::backup::{self, BackupInfo};
use strata::fs::{FileSystem, OpKind, SimFs};
use strata::{BackupFault, Db, Error, Options};

const SEED: u64 = 47;

fn disk_options() -> Options {
    Options::from(store_options())
}

/// Runs transfers one after another on a thread until `stop`; returns how many it started.
fn transfers_until(
    db: &Arc<Db>,
    stop: &Arc<AtomicBool>,
    done: &Arc<AtomicU64>,
) -> std::thread::JoinHandle<u64> {
    let (db, stop, done) = (Arc::clone(db), Arc::clone(stop), Arc::clone(done));
    std::thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            transfer(&db, SEED, i).expect("transfer");
            i += 1;
            done.store(i, Ordering::Release);
        }
        i
    })
}

fn wait_for(done: &AtomicU64, at_least: u64) {
    while done.load(Ordering::Acquire) < at_least {
        std::thread::yield_now();
    }
}

#[test]
fn checkpoints_and_backups_under_transfers_across_shards_hold_the_bank() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path().join("live"), disk_options()).expect("open"));
    create(&db).expect("create");
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let writer = transfers_until(&db, &stop, &done);
    let backups = dir.path().join("backups");
    // (copy, transfers acknowledged before it began, transfers begun when it ended)
    let mut checkpoints: Vec<(PathBuf, u64, u64)> = Vec::new();
    let mut infos: Vec<(BackupInfo, u64, u64)> = Vec::new();
    for round in 1..=3u64 {
        wait_for(&done, round * 150);
        let target = dir.path().join(format!("checkpoint-{round}"));
        let before = done.load(Ordering::Acquire);
        let cp = db.checkpoint(&target).expect("checkpoint");
        // By the last round the bank has table files, which are linked, not copied.
        assert!(round < 3 || cp.files_linked > 0, "{cp:?}");
        checkpoints.push((target, before, done.load(Ordering::Acquire) + 1));
        wait_for(&done, round * 150 + 75);
        let before = done.load(Ordering::Acquire);
        let info = db.backup(&backups).expect("backup");
        assert_eq!(info.id, round);
        infos.push((info, before, done.load(Ordering::Acquire) + 1));
    }
    stop.store(true, Ordering::Relaxed);
    let attempted = writer.join().expect("writer");
    let mut found = Vec::new();
    for (target, least, most) in &checkpoints {
        let copy = Db::open(target, disk_options()).expect("the checkpoint opens");
        found.push(check(
            &copy,
            SEED,
            *least,
            *most,
            &target.display().to_string(),
        ));
    }
    assert!(found.windows(2).all(|w| w[0] <= w[1]), "{found:?}");
    // Backups: listed in order, incremental, self-checking, restorable.
    let listed = backup::list(&backups).expect("list");
    assert_eq!(listed.iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(listed[0].commit < listed[1].commit && listed[1].commit < listed[2].commit);
    for later in &listed[1..] {
        assert!(
            later.bytes_copied < later.bytes,
            "backup {} copied everything again: {later:?}",
            later.id
        );
    }
    for (info, least, most) in &infos {
        backup::verify(&backups, info.id).expect("verify");
        let target = dir.path().join(format!("restored-{}", info.id));
        backup::restore(&backups, info.id, &target).expect("restore");
        let copy = Db::open(&target, disk_options()).expect("the restore opens");
        check(&copy, SEED, *least, *most, &format!("backup {}", info.id));
    }
    // The live bank, for good measure, holds every transfer.
    check(&db, SEED, attempted, attempted, "live");
}

#[test]
fn purge_keeps_the_newest_backups_whole_and_frees_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path().join("live"), disk_options()).expect("open");
    create(&db).expect("create");
    let backups = dir.path().join("backups");
    for round in 0..3 {
        for i in round * 40..(round + 1) * 40 {
            transfer(&db, SEED, i).expect("transfer");
        }
        db.backup(&backups).expect("backup");
    }
    let files = |d: &Path| std::fs::read_dir(d.join("files")).expect("files").count();
    let before = files(&backups);
    let purged = backup::purge_old(&backups, 1).expect("purge");
    assert_eq!(purged.backups, [1, 2]);
    assert!(
        purged.files_removed > 0 && purged.bytes_freed > 0,
        "{purged:?}"
    );
    assert_eq!(files(&backups), before - purged.files_removed as usize);
    let listed = backup::list(&backups).expect("list");
    assert_eq!(listed.iter().map(|b| b.id).collect::<Vec<_>>(), [3]);
    backup::verify(&backups, 3).expect("the kept backup is whole");
    let target = dir.path().join("restored");
    backup::restore(&backups, 3, &target).expect("restore");
    let copy = Db::open(&target, disk_options()).expect("open");
    assert_eq!(check(&copy, SEED, 120, 120, "after purge"), 120);
    assert!(matches!(
        backup::verify(&backups, 1),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn a_damaged_byte_is_found_by_verify_and_refused_by_restore() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path().join("live"), disk_options()).expect("open");
    create(&db).expect("create");
    for i in 0..30 {
        transfer(&db, SEED, i).expect("transfer");
    }
    let backups = dir.path().join("backups");
    let info = db.backup(&backups).expect("backup");
    backup::verify(&backups, info.id).expect("clean before the damage");
    // Flip one byte in the middle of the largest stored file.
    let largest = std::fs::read_dir(backups.join("files"))
        .expect("files")
        .map(|e| e.expect("entry").path())
        .max_by_key(|p| std::fs::metadata(p).expect("metadata").len())
        .expect("a file");
    let mut bytes = std::fs::read(&largest).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&largest, &bytes).expect("write");
    match backup::verify(&backups, info.id) {
        Err(Error::BackupDamaged { what, file, .. }) => {
            assert_eq!(what, BackupFault::Checksum);
            assert!(file.contains(largest.file_name().and_then(|n| n.to_str()).expect("name")));
        }
        other => panic!("verify should find the damage, got {other:?}"),
    }
    let target = dir.path().join("restored");
    assert!(matches!(
        backup::restore(&backups, info.id, &target),
        Err(Error::BackupDamaged { .. })
    ));
    assert!(!target.exists(), "a refused restore wrote nothing");
}

#[test]
fn bad_targets_get_clear_errors_and_change_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path().join("live"), disk_options()).expect("open");
    create(&db).expect("create");
    let busy = dir.path().join("busy");
    std::fs::create_dir_all(&busy).expect("mkdir");
    std::fs::write(busy.join("notes.txt"), b"mine").expect("write");
    let listing = |d: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(d)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing(&busy);
    match db.checkpoint(&busy) {
        Err(Error::Store(strata::lsm::Error::InvalidArgument(m))) => {
            assert!(m.contains("not empty"), "{m}")
        }
        other => panic!("checkpoint into a busy directory: {other:?}"),
    }
    match db.backup(&busy) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("not a backup directory"), "{m}"),
        other => panic!("backup into a directory that is not one: {other:?}"),
    }
    assert!(matches!(
        backup::list(&busy),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(listing(&busy), before);
    let backups = dir.path().join("backups");
    let info = db.backup(&backups).expect("backup");
    assert!(matches!(
        backup::restore(&backups, info.id, &busy),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(listing(&busy), before);
    assert!(matches!(
        backup::restore(&backups, 99, dir.path().join("r")),
        Err(Error::NotFound(_))
    ));
}

/// A backup whose `n`-th operation of `kind` fails, on a copy of `base` (a closed bank with
/// backup 1 taken), then a power cut: backup 1 must be listed, whole and restorable, and
/// backup 2 listed only if it finished. Returns whether the fault was reached.
fn backup_with_fault(base: &SimFs, kind: OpKind, n: u64) -> bool {
    let fs = base.crashed_copy();
    let db = Db::open("/db", sim_options(&fs)).expect("open");
    for i in 20..30 {
        transfer(&db, SEED, i).expect("transfer");
    }
    fs.fail_nth(kind, fs.op_count(kind) + n);
    let result = db.backup("/backups");
    let reached = result.is_err();
    let survivor = fs.crashed_copy();
    drop(db);
    let fs: Arc<dyn FileSystem> = Arc::new(survivor.clone());
    let context = format!("{kind:?} #{n}");
    let ids: Vec<u64> = backup::list_on(Arc::clone(&fs), Path::new("/backups"))
        .unwrap_or_else(|e| panic!("{context}: list: {e}"))
        .iter()
        .map(|b| b.id)
        .collect();
    assert!(
        ids == [1] || (!reached && ids == [1, 2]),
        "{context}: {ids:?}"
    );
    for &id in &ids {
        backup::verify_on(Arc::clone(&fs), Path::new("/backups"), id)
            .unwrap_or_else(|e| panic!("{context}: verify {id}: {e}"));
        let target = PathBuf::from(format!("/restored-{id}"));
        backup::restore_with(
            Arc::clone(&fs),
            Path::new("/backups"),
            id,
            &target,
            &mut |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{context}: restore {id}: {e}"));
        let copy = Db::open(&target, sim_options(&survivor)).expect("the restore opens");
        let (least, most) = if id == 1 { (20, 20) } else { (30, 30) };
        check(&copy, SEED, least, most, &context);
    }
    // A purge on the survivor removes what the partial backup left, and keeps backup 1.
    backup::purge_old_on(Arc::clone(&fs), Path::new("/backups"), ids.len())
        .unwrap_or_else(|e| panic!("{context}: purge: {e}"));
    backup::verify_on(fs, Path::new("/backups"), 1)
        .unwrap_or_else(|e| panic!("{context}: verify after purge: {e}"));
    reached
}

#[test]
fn a_crash_at_every_step_of_a_backup_leaves_the_earlier_backups_whole() {
    let base = SimFs::new();
    {
        let db = Db::open("/db", sim_options(&base)).expect("open");
        create(&db).expect("create");
        for i in 0..20 {
            transfer(&db, SEED, i).expect("transfer");
        }
        assert_eq!(db.backup("/backups").expect("backup").id, 1);
        db.close().expect("close");
    }
    let mut steps = 0;
    for kind in [
        OpKind::Open,
        OpKind::Write,
        OpKind::Sync,
        OpKind::Rename,
        OpKind::SyncDir,
    ] {
        let mut n = 1;
        while backup_with_fault(&base, kind, n) {
            n += 1;
            steps += 1;
        }
    }
    assert!(steps > 20, "only {steps} steps were faulted");
}
