//! Loom models of the store's concurrency core: group commit, seqno publication and the
//! memtable's skip list (one writer linking nodes while readers walk it). The table layer's
//! outbox hand-off has its own models in `engine/tests/loom.rs`.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p strata-lsm --release --test loom`.

#![cfg(loom)]

use std::collections::BTreeSet;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use strata_lsm::commit::{GroupCommit, Request, Sequencer};
use strata_lsm::skiplist::{Hint, SkipList};

fn model(f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Every request is done exactly once, by exactly one leader at a time, and each writer gets
/// its own result back.
#[test]
fn group_commit_runs_each_request_once_and_returns_its_result() {
    model(|| {
        let commit = Arc::new(GroupCommit::<u64, u64>::new(1 << 20));
        let log = Arc::new(Mutex::new(Vec::new()));
        let leaders = Arc::new(AtomicUsize::new(0));
        let writer = |item: u64, sync: bool| {
            let (commit, log, leaders) = (commit.clone(), log.clone(), leaders.clone());
            thread::spawn(move || {
                commit.commit(Request { item, sync }, 1, |group| {
                    assert_eq!(
                        leaders.fetch_add(1, Ordering::SeqCst),
                        0,
                        "one leader at a time"
                    );
                    assert_eq!(group[0].item, item, "the leader's own request comes first");
                    let results = group.iter().map(|r| r.item * 10).collect();
                    log.lock().unwrap().extend(group.iter().map(|r| r.item));
                    leaders.fetch_sub(1, Ordering::SeqCst);
                    results
                })
            })
        };
        let a = writer(1, true);
        let b = writer(2, false);
        assert_eq!(a.join().unwrap(), 10);
        assert_eq!(b.join().unwrap(), 20);
        let done: BTreeSet<u64> = log.lock().unwrap().iter().copied().collect();
        assert_eq!(done, BTreeSet::from([1, 2]));
        assert_eq!(log.lock().unwrap().len(), 2, "nothing done twice");
    });
}

/// A reader that sees seqno `s` published finds every entry up to `s` inserted, and a writer's
/// entries are published when its commit returns.
#[test]
fn published_seqnos_are_always_fully_inserted() {
    model(|| {
        let commit = Arc::new(GroupCommit::<u64, u64>::new(1 << 20));
        let seq = Arc::new(Sequencer::new(0));
        let memtable = Arc::new(Mutex::new(BTreeSet::new()));
        let writer = |entries: u64| {
            let (commit, seq, memtable) = (commit.clone(), seq.clone(), memtable.clone());
            thread::spawn(move || {
                let last = commit.commit(
                    Request {
                        item: entries,
                        sync: false,
                    },
                    1,
                    |group| {
                        let mut results = Vec::new();
                        for request in &group {
                            let first = seq.allocate(request.item).unwrap();
                            for s in first..first + request.item {
                                memtable.lock().unwrap().insert(s);
                            }
                            results.push(first + request.item - 1);
                        }
                        seq.publish(seq.allocated());
                        results
                    },
                );
                assert!(seq.visible() >= last, "visible once committed");
            })
        };
        let reader = {
            let (seq, memtable) = (seq.clone(), memtable.clone());
            thread::spawn(move || {
                let visible = seq.visible();
                let inserted = memtable.lock().unwrap();
                assert!(
                    (1..=visible).all(|s| inserted.contains(&s)),
                    "saw {visible} early"
                );
            })
        };
        let a = writer(2);
        let b = writer(1);
        a.join().unwrap();
        b.join().unwrap();
        reader.join().unwrap();
        assert_eq!(seq.visible(), 3);
        assert_eq!(memtable.lock().unwrap().len(), 3);
    });
}

/// Stores sharing one sequencer (the table layer's shard stores): a commit with parts in two
/// stores allocates one range and publishes it once both parts are in, while a plain write
/// to one of the stores allocates and publishes its own. A reader never sees a seqno whose
/// entries are not all inserted, in either store (so never half of the two-part commit), and
/// a writer that waited for its seqno finds it visible.
#[test]
fn a_shared_sequencer_publishes_a_two_store_commit_whole_and_in_order() {
    model(|| {
        let seq = Arc::new(Sequencer::shared(0));
        let store_a = Arc::new(Mutex::new(BTreeSet::new()));
        let store_b = Arc::new(Mutex::new(BTreeSet::new()));
        let commit = {
            let (seq, a, b) = (seq.clone(), store_a.clone(), store_b.clone());
            thread::spawn(move || {
                let first = seq.allocate(2).unwrap();
                a.lock().unwrap().insert(first);
                b.lock().unwrap().insert(first + 1);
                seq.publish_range(first, first + 1);
                assert!(seq.wait_visible(first + 1));
                assert!(seq.visible() > first);
            })
        };
        let plain = {
            let (seq, b) = (seq.clone(), store_b.clone());
            thread::spawn(move || {
                let first = seq.allocate(1).unwrap();
                b.lock().unwrap().insert(first);
                seq.publish_range(first, first);
                assert!(seq.wait_visible(first), "the sequencer did not fail");
                assert!(seq.visible() >= first, "visible once waited for");
            })
        };
        let reader = {
            let (seq, a, b) = (seq.clone(), store_a.clone(), store_b.clone());
            thread::spawn(move || {
                let visible = seq.visible();
                let a = a.lock().unwrap();
                let b = b.lock().unwrap();
                assert!(
                    (1..=visible).all(|s| a.contains(&s) || b.contains(&s)),
                    "saw {visible} before all of it was in"
                );
            })
        };
        commit.join().unwrap();
        plain.join().unwrap();
        reader.join().unwrap();
        assert_eq!(seq.visible(), 3);
    });
}

/// The entries a reader sees, checked sorted by key and whole (each value its key plus one,
/// as the skip-list models write them).
fn sorted_whole_entries(list: &SkipList<u32, u32>) -> Vec<(u32, u32)> {
    let seen: Vec<(u32, u32)> = list.iter().map(|(k, v)| (*k, *v)).collect();
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "sorted: {seen:?}");
    assert!(
        seen.iter().all(|(k, v)| *v == k + 1),
        "whole entries: {seen:?}"
    );
    seen
}

/// A reader walking the skip list while the writer links nodes in sees a sorted list of whole
/// entries, and every entry whose insertion it knows to be finished (told through a release
/// counter, as seqno publication tells readers).
#[test]
fn skip_list_readers_see_whole_sorted_entries_and_everything_published() {
    model(|| {
        let list = Arc::new(SkipList::<u32, u32>::new());
        let published = Arc::new(AtomicUsize::new(0));
        let order = [20u32, 10, 30];
        let writer = {
            let (list, published) = (list.clone(), published.clone());
            thread::spawn(move || {
                for key in order {
                    list.insert(key, key + 1).expect("room");
                    published.fetch_add(1, Ordering::Release);
                }
            })
        };
        let known = published.load(Ordering::Acquire);
        let seen = sorted_whole_entries(&list);
        for key in &order[..known] {
            assert!(
                seen.iter().any(|(k, _)| k == key),
                "{key} published, not seen"
            );
        }
        let found = list.seek(&15).map(|at| *list.entry(at).0);
        assert!(found.is_none_or(|k| k >= 15));
        writer.join().unwrap();
        let all: Vec<u32> = list.iter().map(|(k, _)| *k).collect();
        assert_eq!(all, [10, 20, 30]);
    });
}

/// Two writers inserting into the same two lists, naming them in opposite orders, neither
/// deadlock nor lose an entry, and a reader of either list sees it sorted throughout.
#[test]
fn skip_list_interleaved_inserts_into_several_lists_neither_deadlock_nor_lose_entries() {
    model(|| {
        let lists = Arc::new([SkipList::<u32, u32>::new(), SkipList::<u32, u32>::new()]);
        let writers: Vec<_> = [(0usize, 20u32), (1, 10)]
            .into_iter()
            .map(|(first, key)| {
                let lists = lists.clone();
                thread::spawn(move || {
                    let (a, b) = (&lists[first], &lists[1 - first]);
                    SkipList::insert_each(vec![(a, key, key + 1), (b, key + 5, key + 6)])
                        .expect("room");
                })
            })
            .collect();
        let seen: Vec<u32> = lists[0].iter().map(|(k, _)| *k).collect();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "sorted: {seen:?}");
        for writer in writers {
            writer.join().unwrap();
        }
        let all: Vec<Vec<(u32, u32)>> = lists
            .iter()
            .map(|l| l.iter().map(|(k, v)| (*k, *v)).collect())
            .collect();
        assert_eq!(all, [vec![(15, 16), (20, 21)], vec![(10, 11), (25, 26)]]);
    });
}

/// One call inserting three entries into one list (their searches interleaved, each linked
/// one after another with its predecessors corrected for those linked before it; 10 placed by
/// its hint, 25 given the same hint, which does not fit it) while a reader walks the list:
/// the reader sees it sorted throughout, every entry whole, and every entry the writer told
/// it of; the list ends as one-at-a-time inserts would leave it.
#[test]
fn skip_list_several_inserts_into_one_list_in_one_call_stay_sorted_for_readers() {
    model(|| {
        let list = Arc::new(SkipList::<u32, u32>::new());
        let twenty = list.insert(20, 21).expect("room").at;
        let published = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (list, published) = (list.clone(), published.clone());
            thread::spawn(move || {
                let l = list.as_ref();
                SkipList::insert_each_hinted(vec![
                    ((l, 30, 31), Hint::None),
                    ((l, 10, 11), Hint::Before(twenty)),
                    ((l, 25, 26), Hint::Before(twenty)),
                ])
                .expect("room");
                published.store(1, Ordering::Release);
            })
        };
        let known = published.load(Ordering::Acquire);
        let seen = sorted_whole_entries(&list);
        if known == 1 {
            assert_eq!(seen.len(), 4, "all published, all seen: {seen:?}");
        }
        writer.join().unwrap();
        let all: Vec<u32> = list.iter().map(|(k, _)| *k).collect();
        assert_eq!(all, [10, 20, 25, 30]);
    });
}

/// An insert placed from predecessors located before another insert went in between (as a
/// writer locates its keys before its turn in the group commit) walks right over that
/// entry, while a reader sees the list sorted and whole throughout.
#[test]
fn skip_list_located_inserts_walk_over_what_went_in_since_for_readers() {
    model(|| {
        let list = Arc::new(SkipList::<u32, u32>::new());
        list.insert(10, 11).expect("room");
        list.insert(20, 21).expect("room");
        let writer = {
            let list = list.clone();
            thread::spawn(move || {
                let located = list.locate(&15);
                list.insert(12, 13).expect("room");
                list.insert_hinted(15, 16, Hint::Located(located))
                    .expect("room");
            })
        };
        sorted_whole_entries(&list);
        writer.join().unwrap();
        let all: Vec<u32> = list.iter().map(|(k, _)| *k).collect();
        assert_eq!(all, [10, 12, 15, 20]);
    });
}
