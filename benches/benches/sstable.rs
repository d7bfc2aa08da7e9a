//! SSTable build, point get (hit and miss), seek and full scan on a 1M-entry table with 16-byte
//! keys and 100-byte values, in memory.
//!
//! Run: `cargo bench -p strata-benches --bench sstable`. Figures go in `docs/benchmarks.md`.
//! Targets (issue 3): a bloom-filtered miss ≤ 300 ns, a hit in a cached block ≤ 1.5 µs, a full
//! scan ≥ 5 M entries/s.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_benches::records;
use strata_sstable::{BlockCache, Compression, Table, TableBuilder, TableOptions, ValueKind};

const ENTRIES: u64 = 1_000_000;
const VALUE_BYTES: usize = 100;

/// Present keys are the even numbers, zero-padded to 16 digits; odd numbers are absent but
/// fall inside the table's key range, so a miss is not answered by the key range alone.
fn key(n: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out.copy_from_slice(format!("{n:016}").as_bytes());
    out
}

fn build(values: &[Vec<u8>], compression: Compression) -> Vec<u8> {
    let options = TableOptions {
        compression,
        ..TableOptions::default()
    };
    let mut file = Vec::with_capacity(130 * ENTRIES as usize);
    let mut builder = TableBuilder::new(&mut file, options);
    for i in 0..ENTRIES {
        let value = &values[i as usize % values.len()];
        builder
            .add(&key(2 * i), 1, ValueKind::Put, value)
            .expect("in order");
    }
    builder.finish().expect("vec");
    file
}

/// Pseudo-random probe numbers in `0..ENTRIES`, so lookups hit blocks all over the table.
fn probes(count: usize) -> Vec<u64> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % ENTRIES
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let values = records(1024, VALUE_BYTES);
    let plain = Table::open(build(&values, Compression::None).into(), 1, None).expect("valid");
    let cache = Arc::new(BlockCache::new(512 << 20));
    let zstd = Compression::Zstd { level: 1 };
    let squeezed = Table::open(build(&values, zstd).into(), 2, Some(cache)).expect("valid");
    let probes = probes(4096);
    // Keys made ahead, so that formatting them is not measured.
    let hits: Vec<[u8; 16]> = probes.iter().map(|&n| key(2 * n)).collect();
    let misses: Vec<[u8; 16]> = probes.iter().map(|&n| key(2 * n + 1)).collect();

    let mut group = c.benchmark_group("sstable_build");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(ENTRIES));
    group.bench_function("1M_none", |b| {
        b.iter(|| black_box(build(&values, Compression::None)))
    });
    group.finish();

    let mut group = c.benchmark_group("sstable_get");
    for (name, table) in [("hit_none", &plain), ("hit_zstd_cached", &squeezed)] {
        // Warm: every block of the zstd table decompressed into the cache once.
        for hit in &hits {
            table.get(hit, 1).expect("ok");
        }
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % hits.len();
                let found = table.get(&hits[i], 1).expect("ok");
                assert!(black_box(found).is_some());
            })
        });
    }
    let mut i = 0;
    group.bench_function("miss_none", |b| {
        b.iter(|| {
            i = (i + 1) % misses.len();
            black_box(plain.get(&misses[i], 1).expect("ok"))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("sstable_seek");
    let mut iter = plain.iter();
    let mut i = 0;
    group.bench_function("none", |b| {
        b.iter(|| {
            i = (i + 1) % misses.len();
            iter.seek(&misses[i]);
            assert!(iter.valid());
            black_box(iter.value().len())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("sstable_scan");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(ENTRIES));
    for (name, table) in [("full_none", &plain), ("full_zstd_cached", &squeezed)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut iter = table.iter();
                iter.seek_to_first();
                let mut count = 0u64;
                while iter.valid() {
                    count += black_box(iter.value()).len() as u64 / VALUE_BYTES as u64;
                    iter.next();
                }
                assert_eq!(count, ENTRIES);
            })
        });
    }
    group.finish();
}

criterion_group!(sstable, benches);
criterion_main!(sstable);
