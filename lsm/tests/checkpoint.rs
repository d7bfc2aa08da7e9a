//! Checkpoints of a running store: the copy opens, holds exactly the writes at or below the
//! checkpoint's seqno, and is independent of the store it came from.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{key, scan, sim_options};
use strata_lsm::fs::{OpKind, OsFs, SimFs};
use strata_lsm::{Error, Options, Store};

/// One writer thread puts `key(i)` for i = 0, 1, 2, … (one write each) while `checkpoint`
/// runs `rounds` times: each copy must hold exactly the keys whose write's seqno is at or
/// below the seqno the checkpoint reports, whatever flushes and log switches were under way.
fn checkpoints_under_writes(options: Options, root: &Path, links_expected: bool) {
    let store = Arc::new(Store::open(root.join("live"), options.clone()).expect("open"));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        std::thread::spawn(move || {
            let cf = store.default_cf();
            let mut seqnos = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) || i < 2_000 {
                let mut batch = strata_lsm::WriteBatch::new();
                batch.put(&cf, &key(i), &[i as u8; 100]).expect("put");
                seqnos.push(store.write(batch, Default::default()).expect("write"));
                i += 1;
            }
            seqnos
        })
    };
    let mut taken = Vec::new();
    for round in 0..4 {
        // Wait for the writer to get somewhere (an event, not a sleep).
        while store.last_seqno() < 300 * (round + 1) {
            std::thread::yield_now();
        }
        let target = root.join(format!("cp{round}"));
        let (seqno, files) = store.checkpoint(&target).expect("checkpoint");
        taken.push((target, seqno, files));
    }
    stop.store(true, Ordering::Relaxed);
    let seqnos = writer.join().expect("writer");
    for (target, seqno, files) in taken {
        let expected = seqnos.iter().filter(|&&s| s <= seqno).count() as u64;
        assert!(expected > 0);
        assert_eq!(files.files_linked > 0, links_expected, "{files:?}");
        let copy = Store::open(&target, options.clone()).expect("the copy opens");
        let rows = scan(&copy, "default");
        let want: Vec<Vec<u8>> = (0..expected).map(key).collect();
        let got: Vec<Vec<u8>> = rows.keys().cloned().collect();
        assert_eq!(got.len(), want.len(), "checkpoint at seqno {seqno}");
        assert_eq!(got, want);
        assert!(copy.last_seqno() >= seqno);
        // The copy is a store of its own: writing to it leaves the live one alone.
        copy.put(&copy.default_cf(), b"only-in-the-copy", b"1")
            .expect("write");
        drop(copy);
    }
    assert_eq!(
        store
            .get(&store.default_cf(), b"only-in-the-copy")
            .expect("get"),
        None
    );
}

#[test]
fn a_checkpoint_on_disk_links_tables_and_holds_exactly_its_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        fs: Arc::new(OsFs),
        write_buffer_bytes: 32 << 10,
        ..Options::default()
    };
    checkpoints_under_writes(options, dir.path(), true);
}

#[test]
fn a_checkpoint_copies_what_it_cannot_link() {
    let fs = SimFs::new();
    fs.refuse_links(true);
    checkpoints_under_writes(sim_options(&fs), Path::new("/db"), false);
}

#[test]
fn a_checkpoint_on_the_simulated_file_system_links() {
    let fs = SimFs::new();
    checkpoints_under_writes(sim_options(&fs), Path::new("/db"), true);
}

#[test]
fn a_checkpoint_survives_a_crash_once_it_returns() {
    let fs = SimFs::new();
    let options = sim_options(&fs);
    let store = Store::open("/db/live", options.clone()).expect("open");
    let cf = store.default_cf();
    for i in 0..500 {
        store.put(&cf, &key(i), &[7; 50]).expect("put");
    }
    store.checkpoint("/db/cp").expect("checkpoint");
    let survivor = fs.crashed_copy();
    let copy = Store::open("/db/cp", sim_options(&survivor)).expect("the copy opens");
    assert_eq!(scan(&copy, "default").len(), 500);
}

#[test]
fn a_capture_in_memory_gives_every_file_of_an_openable_copy() {
    use strata_lsm::fs::FileSystem;
    let fs = SimFs::new();
    let store = Store::open("/db/live", sim_options(&fs)).expect("open");
    let cf = store.default_cf();
    for i in 0..400 {
        store.put(&cf, &key(i), &[3; 60]).expect("put");
    }
    let hold = store.hold_writes().expect("hold");
    let capture = hold.capture_mapped().expect("capture");
    drop(hold);
    store.put(&cf, b"after", b"1").expect("put");
    let files = capture.into_files().expect("files");
    assert!(files.iter().any(|(name, _)| name == "CURRENT"));
    fs.create_dir_all(Path::new("/db/copy")).expect("mkdir");
    for (name, bytes) in files {
        let mut file = fs
            .create(&Path::new("/db/copy").join(name))
            .expect("create");
        std::io::Write::write_all(&mut file, &bytes).expect("write");
        file.sync_data().expect("sync");
    }
    fs.sync_dir(Path::new("/db/copy")).expect("sync dir");
    let copy = Store::open("/db/copy", sim_options(&fs)).expect("the copy opens");
    let rows = scan(&copy, "default");
    assert_eq!(rows.len(), 400);
    assert!(!rows.contains_key(&b"after"[..]));
}

#[test]
fn a_checkpoint_refuses_a_directory_that_is_not_empty_and_changes_nothing() {
    let fs = SimFs::new();
    let options = sim_options(&fs);
    let store = Store::open("/db/live", options).expect("open");
    store.put(&store.default_cf(), b"k", b"v").expect("put");
    let other = Store::open("/db/other", sim_options(&fs)).expect("open");
    drop(other);
    let before = fs.list_names("/db/other");
    match store.checkpoint("/db/other") {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("not empty"), "{message}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(fs.list_names("/db/other"), before);
    assert_eq!(fs.op_count(OpKind::Link), 0);
}

trait ListNames {
    fn list_names(&self, dir: &str) -> Vec<String>;
}

impl ListNames for SimFs {
    fn list_names(&self, dir: &str) -> Vec<String> {
        use strata_lsm::fs::FileSystem;
        self.list(Path::new(dir)).expect("list")
    }
}
