//! Shards and async index maintenance, on the real file system:
//!
//! - `shard_scan/{1,2}_shards`: a full scan of 400,000 rows (compacted into tables) whose
//!   filter, on an unindexed field, keeps 0.1% of them; with two shards the two streams are
//!   read by two threads (target: 2 shards at least 1.6× faster on this 2-core machine).
//! - `index_write/{local_sync,global_async}`: one unsynced insert into a 2-shard table with
//!   one keys-only index, maintained in the row's batch or through the outbox (the indexer
//!   runs meanwhile, and back-pressure holds writers to its pace).
//! - `indexer_catch_up`: 20,000 single-row inserts queue 20,000 outbox entries for a global
//!   index on 2 shards while the indexer is paused; timed is resuming it until
//!   `wait_for_indexes` returns (throughput = entries applied per second).
//!
//! Run: `cargo bench -p strata-benches --bench shards`. Figures go in `docs/benchmarks.md`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{mix, options};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use strata::{Db, Hint, IndexOptions, Predicate, Query, TableBatch, WriteOptions, record};

const SCAN_ROWS: i64 = 400_000;
const CATCH_UP: i64 = 20_000;

fn row(i: i64) -> strata::Record {
    let h = mix(i);
    record! {
        "id" => h,
        "town" => format!("town{}", (h >> 20) % 300),
        "score" => h % 1000,
        "note" => "x".repeat(40),
    }
}

fn scans(c: &mut Criterion) {
    let mut group = c.benchmark_group("shard_scan");
    group.throughput(Throughput::Elements(SCAN_ROWS as u64));
    for shards in [1u32, 2] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options()).expect("open");
        db.create_table("t", ["id"], strata::TableOptions::default().shards(shards))
            .expect("table");
        for chunk in 0..SCAN_ROWS / 10_000 {
            let mut batch = TableBatch::new();
            for i in chunk * 10_000..(chunk + 1) * 10_000 {
                batch.insert(row(i));
            }
            db.write("t", batch, WriteOptions::default()).expect("load");
        }
        db.for_each_store(|_, store| {
            for name in store.column_families() {
                store.compact_range(&store.cf(&name)?, ..)?;
            }
            Ok(())
        })
        .expect("compact");
        db.analyze("t").expect("analyze");
        let q = Query::default()
            .filter(Predicate::eq("score", 7))
            .hint(Hint::Scan);
        let expected = db.query("t", &q).expect("query").count();
        assert!(expected > 300, "{expected}");
        group.bench_function(
            BenchmarkId::from_parameter(format!("{shards}_shards")),
            |b| {
                b.iter(|| {
                    let mut rows = 0usize;
                    for r in db.query("t", &q).expect("query") {
                        black_box(r.expect("row"));
                        rows += 1;
                    }
                    assert_eq!(rows, expected);
                })
            },
        );
    }
    group.finish();
}

fn writes(c: &mut Criterion) {
    let mut group = c.benchmark_group("index_write");
    group.throughput(Throughput::Elements(1));
    for (label, index) in [
        ("local_sync", IndexOptions::local()),
        ("global_async", IndexOptions::global()),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options()).expect("open");
        db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
            .expect("table");
        db.create_index("t", "by_town", ["town"], index)
            .expect("index");
        let mut id = 0i64;
        group.bench_function(label, |b| {
            b.iter(|| {
                id += 1;
                db.insert("t", row(id)).expect("insert");
            })
        });
        db.wait_for_indexes().expect("caught up");
        assert!(db.verify("t").expect("verify").is_clean());
    }
    group.finish();
}

fn catch_up(c: &mut Criterion) {
    let mut group = c.benchmark_group("indexer_catch_up");
    group.throughput(Throughput::Elements(CATCH_UP as u64));
    group.sample_size(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .expect("table");
    db.create_index("t", "by_town", ["town"], IndexOptions::global())
        .expect("index");
    let mut next = 0i64;
    group.bench_function("global_2_shards", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                db.pause_indexer();
                for _ in 0..CATCH_UP {
                    next += 1;
                    db.insert("t", row(next)).expect("insert");
                }
                let start = Instant::now();
                db.resume_indexer();
                db.wait_for_indexes().expect("caught up");
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    targets = scans, writes, catch_up
}
criterion_main!(benches);
