//! The LSM store on the real file system: puts (single, batched, and synced from 1, 4 and 8
//! threads, where group commit shares each `fdatasync`), and point gets from the memtable and
//! from tables.
//!
//! Run: `cargo bench -p strata-benches --bench store`. Figures go in `docs/benchmarks.md`.
//! The synced benches measure this machine's disk; compare their ratios, not their absolutes.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use strata::lsm::WriteBatch;
use strata::{Store, StoreOptions, WriteOptions};

const VALUE_BYTES: usize = 100;
/// Keys in the get benches: 16-byte keys, 100-byte values, about 12 MiB of data.
const GET_KEYS: u64 = 100_000;

fn key(i: u64) -> [u8; 16] {
    // Spread sequential numbers over the key space so writes are not append-only.
    let mixed = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&mixed.to_be_bytes());
    out[8..].copy_from_slice(&i.to_be_bytes());
    out
}

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default()).expect("open")
}

fn puts(c: &mut Criterion) {
    let value = [7u8; VALUE_BYTES];
    let mut group = c.benchmark_group("store_put");
    group.throughput(Throughput::Elements(1));
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        let cf = store.default_cf();
        let mut i = 0u64;
        group.bench_function("single", |b| {
            b.iter(|| {
                i += 1;
                store.put(&cf, &key(i), black_box(&value)).expect("put");
            })
        });
    }
    group.throughput(Throughput::Elements(100));
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        let cf = store.default_cf();
        let mut i = 0u64;
        group.bench_function("batch_of_100", |b| {
            b.iter(|| {
                let mut batch = WriteBatch::new();
                for _ in 0..100 {
                    i += 1;
                    batch.put(&cf, &key(i), &value).expect("put");
                }
                store.write(batch, WriteOptions::default()).expect("write");
            })
        });
    }
    group.finish();
}

/// `threads` writers each committing synced single puts; one iteration is one put per thread.
fn synced_puts(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_put_synced");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for threads in [1u64, 4, 8] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(open(dir.path()));
        let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
        group.throughput(Throughput::Elements(threads));
        group.bench_with_input(
            BenchmarkId::from_parameter(threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iters| {
                    let barrier = Arc::new(Barrier::new(threads as usize + 1));
                    let workers: Vec<_> = (0..threads)
                        .map(|_| {
                            let (store, barrier, next) =
                                (Arc::clone(&store), Arc::clone(&barrier), Arc::clone(&next));
                            std::thread::spawn(move || {
                                let cf = store.default_cf();
                                let value = [7u8; VALUE_BYTES];
                                barrier.wait();
                                for _ in 0..iters {
                                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                    let mut batch = WriteBatch::new();
                                    batch.put(&cf, &key(i), &value).expect("put");
                                    store.write(batch, WriteOptions::synced()).expect("write");
                                }
                            })
                        })
                        .collect();
                    barrier.wait();
                    let start = Instant::now();
                    for worker in workers {
                        worker.join().expect("writer");
                    }
                    start.elapsed()
                })
            },
        );
    }
    group.finish();
}

/// Writes keys `0..GET_KEYS` with 100-byte values, a thousand to a batch.
fn fill(store: &Store, cf: &strata::lsm::ColumnFamily) {
    let value = [7u8; VALUE_BYTES];
    for chunk in 0..GET_KEYS / 1000 {
        let mut batch = WriteBatch::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            batch.put(cf, &key(i), &value).expect("put");
        }
        store.write(batch, WriteOptions::default()).expect("write");
    }
}

fn gets(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_get");
    group.throughput(Throughput::Elements(1));
    for from_tables in [false, true] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        let cf = store.default_cf();
        fill(&store, &cf);
        if from_tables {
            store.flush(&cf).expect("flush");
        }
        let name = if from_tables { "tables" } else { "memtable" };
        let mut i = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 7919) % GET_KEYS;
                let found = store.get(&cf, black_box(&key(i))).expect("get");
                assert!(found.is_some());
            })
        });
        group.bench_function(format!("{name}_missing"), |b| {
            b.iter(|| {
                i += 1;
                let found = store.get(&cf, black_box(&key(GET_KEYS + i))).expect("get");
                assert!(found.is_none());
            })
        });
    }
    group.finish();
}

/// Two threads reading the same family at once (the machine has two cores): what the read
/// path's shared state (the family's current version, the published seqno) costs when
/// readers contend for it. Each iteration is one get; the two threads split the iterations.
fn parallel_gets(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_get_2_threads");
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let cf = store.default_cf();
    fill(&store, &cf);
    store.flush(&cf).expect("flush");
    group.bench_function("tables", |b| {
        b.iter_custom(|iters| {
            let start = std::time::Instant::now();
            std::thread::scope(|scope| {
                for t in 0..2u64 {
                    let (store, cf) = (&store, &cf);
                    scope.spawn(move || {
                        let mut i = t * 104_729;
                        for _ in 0..iters.div_ceil(2) {
                            i = (i + 7919) % GET_KEYS;
                            let found = store.get(cf, black_box(&key(i))).expect("get");
                            assert!(found.is_some());
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    group.finish();
}

criterion_group!(benches, puts, synced_puts, gets, parallel_gets);
criterion_main!(benches);
