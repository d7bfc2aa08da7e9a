//! The memtable's skip list on its own, where a table write spends most of its time:
//!
//! - `skiplist_insert/one_at_a_time`: one entry into each of four lists of 300,000 entries,
//!   inserted in turn with `SkipList::insert`.
//! - `skiplist_insert/interleaved`: the same four entries through `SkipList::insert_each`,
//!   the searches taking turns (what the commit leader does for a row and its index entries).
//!
//! Keys are 24 random bytes, as an index entry's are; the lists are far larger than the
//! cache, so a search is a chain of cache misses. Times are per four entries.
//!
//! Run: `cargo bench -p strata-benches --bench memtable`. Figures go in `docs/benchmarks.md`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::lsm::skiplist::SkipList;

const LISTS: usize = 4;
const PREFILL: u64 = 300_000;

fn key(i: u64, list: usize) -> [u8; 24] {
    let mut key = [0u8; 24];
    let h = (i ^ ((list as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    key[..8].copy_from_slice(&h.to_be_bytes());
    key[8..16].copy_from_slice(&h.rotate_left(17).to_be_bytes());
    key
}

fn filled() -> Vec<SkipList<[u8; 24], u64>> {
    let lists: Vec<SkipList<[u8; 24], u64>> = (0..LISTS).map(|_| SkipList::new()).collect();
    for i in 0..PREFILL {
        for (l, list) in lists.iter().enumerate() {
            list.insert(key(i, l), i).expect("room");
        }
    }
    lists
}

fn inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("skiplist_insert");
    group.throughput(Throughput::Elements(LISTS as u64));
    for interleaved in [false, true] {
        let lists = filled();
        let mut i = PREFILL;
        let name = if interleaved {
            "interleaved"
        } else {
            "one_at_a_time"
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                if interleaved {
                    let entries = lists
                        .iter()
                        .enumerate()
                        .map(|(l, list)| (list, key(i, l), i))
                        .collect();
                    SkipList::insert_each(entries).expect("room");
                } else {
                    for (l, list) in lists.iter().enumerate() {
                        list.insert(key(i, l), i).expect("room");
                    }
                }
                black_box(i)
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    targets = inserts
}
criterion_main!(benches);
