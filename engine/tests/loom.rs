//! Loom models of the table layer's concurrency core: the outbox hand-off between table
//! writers, the indexer and `wait_for_indexes`. The store's models (group commit, seqno
//! publication, the skip list) are in `lsm/tests/loom.rs`.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p strata --release --test loom`.

#![cfg(loom)]

use std::collections::BTreeSet;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use strata::table::outbox::Tracker;

fn model(f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// The indexer's loop over a model outbox (a set of committed numbers standing for the shard
/// store): take the committed entries below the low water, in order, "apply" them, delete
/// them, report. Returns when the tracker stops.
fn indexer(
    tracker: Arc<Tracker>,
    outbox: Arc<Mutex<BTreeSet<u64>>>,
    applied: Arc<Mutex<Vec<u64>>>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while let Some(work) = tracker.work() {
            for w in work {
                let taken: Vec<u64> = {
                    let mut outbox = outbox.lock().unwrap();
                    let taken: Vec<u64> = outbox.range(w.floor..w.low).copied().collect();
                    for seq in &taken {
                        outbox.remove(seq);
                    }
                    taken
                };
                applied.lock().unwrap().extend(&taken);
                tracker.applied(w.shard, w.low, taken.len() as u64);
            }
        }
    })
}

/// Two writers number and commit entries while the indexer applies them: the indexer never
/// skips a number still being written (entries are applied in number order, each once), and
/// `wait_applied` returns only when everything written before it is applied.
#[test]
fn outbox_entries_are_applied_in_order_once_and_waited_for() {
    model(|| {
        let tracker = Arc::new(Tracker::new());
        tracker.add_shard(0, 0, 0, 0);
        let outbox = Arc::new(Mutex::new(BTreeSet::new()));
        let applied = Arc::new(Mutex::new(Vec::new()));
        let worker = indexer(tracker.clone(), outbox.clone(), applied.clone());
        let writer = || {
            let (tracker, outbox) = (tracker.clone(), outbox.clone());
            thread::spawn(move || {
                let seq = tracker.begin(0).unwrap();
                outbox.lock().unwrap().insert(seq);
                tracker.end(0, seq, true);
            })
        };
        let a = writer();
        let b = writer();
        a.join().unwrap();
        b.join().unwrap();
        tracker.wait_applied(&tracker.targets()).unwrap();
        assert_eq!(*applied.lock().unwrap(), vec![0, 1], "in order, once, all");
        assert!(outbox.lock().unwrap().is_empty());
        assert_eq!(tracker.counts().pending, 0);
        tracker.stop();
        worker.join().unwrap();
    });
}

/// A writer whose write failed leaves a number nothing will ever fill: the indexer moves past
/// it, and a writer held back by a full outbox is released once the indexer catches up —
/// nobody waits forever.
#[test]
fn back_pressure_and_abandoned_numbers_never_hang() {
    model(|| {
        let tracker = Arc::new(Tracker::new());
        tracker.add_shard(0, 0, 0, 0);
        let outbox = Arc::new(Mutex::new(BTreeSet::new()));
        let applied = Arc::new(Mutex::new(Vec::new()));
        let worker = indexer(tracker.clone(), outbox.clone(), applied.clone());
        let failed = {
            let tracker = tracker.clone();
            thread::spawn(move || {
                let seq = tracker.begin(0).unwrap();
                tracker.end(0, seq, false);
            })
        };
        let throttled = {
            let (tracker, outbox) = (tracker.clone(), outbox.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    tracker.throttle(1).unwrap();
                    let seq = tracker.begin(0).unwrap();
                    outbox.lock().unwrap().insert(seq);
                    tracker.end(0, seq, true);
                }
            })
        };
        failed.join().unwrap();
        throttled.join().unwrap();
        tracker.wait_applied(&tracker.targets()).unwrap();
        assert_eq!(applied.lock().unwrap().len(), 2);
        tracker.stop();
        worker.join().unwrap();
    });
}
