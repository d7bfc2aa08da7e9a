//! Stores sharing one sequencer: one commit order, publication in that order, snapshots that
//! hold versions in every store, and ranges a caller writes to several stores and publishes
//! once all are in (a transaction's parts).

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use strata_lsm::fs::SimFs;
use strata_lsm::{Error, Hooks, Sequencer, Store, WriteBatch, WriteOptions};

fn open_pair(fs: &SimFs, seq: &Arc<Sequencer>) -> (Store, Store) {
    let options = sim_options(fs);
    let hooks = Hooks {
        sequencer: Some(Arc::clone(seq)),
        ..Hooks::default()
    };
    let a = Store::open_with(Path::new("/a"), options.clone(), hooks.clone()).expect("a opens");
    let b = Store::open_with(Path::new("/b"), options, hooks).expect("b opens");
    (a, b)
}

/// Returns once `seq` has allocated seqno `n`: a writer on another thread has taken its
/// range (the event the test waits on, instead of a pause).
fn until_allocated(seq: &Sequencer, n: u64) {
    while seq.allocated() < n {
        std::thread::yield_now();
    }
}

fn batch(store: &Store, key: &[u8], value: &[u8]) -> WriteBatch {
    let mut wb = WriteBatch::new();
    wb.put(&store.default_cf(), key, value).expect("put");
    wb
}

#[test]
fn stores_sharing_a_sequencer_number_their_writes_in_one_order() {
    let fs = SimFs::new();
    let seq = Arc::new(Sequencer::shared(0));
    let (a, b) = open_pair(&fs, &seq);
    let s1 = a
        .write(batch(&a, b"k", b"1"), WriteOptions::default())
        .unwrap();
    let s2 = b
        .write(batch(&b, b"k", b"2"), WriteOptions::default())
        .unwrap();
    let s3 = a
        .write(batch(&a, b"k", b"3"), WriteOptions::default())
        .unwrap();
    assert!(s1 < s2 && s2 < s3, "{s1} {s2} {s3}");
    assert_eq!(seq.visible(), s3);
    assert_eq!(a.last_seqno(), b.last_seqno());
}

#[test]
fn a_range_written_to_two_stores_is_visible_only_once_published() {
    let fs = SimFs::new();
    let seq = Arc::new(Sequencer::shared(0));
    let (a, b) = open_pair(&fs, &seq);
    a.put(&a.default_cf(), b"before", b"x").unwrap();
    let first = seq.allocate(2).expect("allocates");
    let before = a.snapshot();
    a.write_assigned(batch(&a, b"t", b"a"), WriteOptions::default(), first)
        .unwrap();
    assert_eq!(a.get(&a.default_cf(), b"t").unwrap(), None, "not published");
    // A write of either store after the range waits for it: done on another thread.
    let later = std::thread::scope(|scope| {
        let writer = scope.spawn(|| b.put(&b.default_cf(), b"after", b"y"));
        // The writer has its seqno, above the range: it cannot be published before it.
        until_allocated(&seq, first + 2);
        assert_eq!(b.get(&b.default_cf(), b"after").unwrap(), None);
        b.write_assigned(batch(&b, b"t", b"b"), WriteOptions::default(), first + 1)
            .unwrap();
        assert_eq!(a.get(&a.default_cf(), b"t").unwrap(), None);
        seq.publish_range(first, first + 1);
        writer.join().unwrap()
    });
    later.expect("the later write completes once the range is published");
    assert_eq!(
        a.get(&a.default_cf(), b"t").unwrap().as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        b.get(&b.default_cf(), b"t").unwrap().as_deref(),
        Some(&b"b"[..])
    );
    assert_eq!(
        b.get(&b.default_cf(), b"after").unwrap().as_deref(),
        Some(&b"y"[..])
    );
    // The snapshot taken before sees neither part, in either store.
    assert_eq!(a.get_at(&a.default_cf(), b"t", &before).unwrap(), None);
    assert_eq!(b.get_at(&b.default_cf(), b"t", &before).unwrap(), None);
}

#[test]
fn a_flush_keeps_the_versions_readers_of_unpublished_ranges_need() {
    let fs = SimFs::new();
    let seq = Arc::new(Sequencer::shared(0));
    let (a, _b) = open_pair(&fs, &seq);
    let cf = a.default_cf();
    a.put(&cf, b"k", b"old").unwrap();
    // Two ranges, neither published, each with a version of `k`; the first will be
    // published alone, and its version is then the one to read.
    let first = seq.allocate(1).expect("allocates");
    let second = seq.allocate(1).expect("allocates");
    a.write_assigned(batch(&a, b"k", b"first"), WriteOptions::default(), first)
        .unwrap();
    a.write_assigned(batch(&a, b"k", b"second"), WriteOptions::default(), second)
        .unwrap();
    a.flush(&cf).unwrap();
    a.compact_range(&cf, ..).unwrap();
    assert_eq!(a.get(&cf, b"k").unwrap().as_deref(), Some(&b"old"[..]));
    seq.publish_range(first, first);
    assert_eq!(a.get(&cf, b"k").unwrap().as_deref(), Some(&b"first"[..]));
    seq.publish_range(second, second);
    assert_eq!(a.get(&cf, b"k").unwrap().as_deref(), Some(&b"second"[..]));
}

#[test]
fn a_snapshot_of_one_store_holds_versions_in_every_store_sharing_the_sequencer() {
    let fs = SimFs::new();
    let seq = Arc::new(Sequencer::shared(0));
    let (a, b) = open_pair(&fs, &seq);
    let cf = b.default_cf();
    b.put(&cf, b"k", b"old").unwrap();
    let snapshot = a.snapshot();
    b.put(&cf, b"k", b"new").unwrap();
    b.flush(&cf).unwrap();
    b.compact_range(&cf, ..).unwrap();
    assert_eq!(
        b.get_at(&cf, b"k", &snapshot).unwrap().as_deref(),
        Some(&b"old"[..])
    );
    assert_eq!(b.live_snapshots(), 1);
}

#[test]
fn a_failed_sequencer_fails_later_writes_instead_of_hanging_them() {
    let fs = SimFs::new();
    let seq = Arc::new(Sequencer::shared(0));
    let (a, _b) = open_pair(&fs, &seq);
    // A range allocated and never finished (its writer failed).
    seq.allocate(1).expect("allocates");
    let cf = a.default_cf();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| a.put(&cf, b"k", b"v"));
        // The writer has its seqno, behind the unfinished range.
        until_allocated(&seq, 2);
        seq.fail();
        let waiting = writer.join().unwrap();
        assert!(
            matches!(&waiting, Err(Error::ReadOnly(why)) if matches!(**why, Error::CommitOrderFailed)),
            "the waiting write fails: {waiting:?}"
        );
    });
    let later = a.put(&cf, b"k2", b"v");
    assert!(
        matches!(&later, Err(Error::ReadOnly(why)) if matches!(**why, Error::CommitOrderFailed)),
        "later writes fail: {later:?}"
    );
    assert!(seq.allocate(1).is_none());
}

#[test]
fn reopened_stores_start_the_shared_sequencer_above_all_their_data() {
    let fs = SimFs::new();
    let last = {
        let seq = Arc::new(Sequencer::shared(0));
        let (a, b) = open_pair(&fs, &seq);
        for i in 0..5u8 {
            a.put(&a.default_cf(), &[i], b"a").unwrap();
        }
        b.put(&b.default_cf(), b"k", b"b").unwrap();
        seq.visible()
    };
    let seq = Arc::new(Sequencer::shared(0));
    let (a, _b) = open_pair(&fs, &seq);
    assert!(seq.visible() >= last, "{} < {last}", seq.visible());
    let next = a
        .write(batch(&a, b"n", b"n"), WriteOptions::default())
        .unwrap();
    assert!(next > last);
}
