//! The table layer on the real file system:
//!
//! - `table_insert/{0,1,3}_indexes`: one unsynced `Db::insert` of a 5-field customer with 0, 1
//!   or 3 keys-only indexes (target: 3 indexes cost at most 2.5× the plain insert).
//! - `table_index_query/*`: an equality query returning 100 of 1,000,000 rows, through a
//!   keys-only index (100 fetches), an `Include` index and an `All` index (both covering), and
//!   through the planner's own choice (target: at most 200 µs).
//!
//! Run: `cargo bench -p strata-benches --bench tables`. Figures go in `docs/benchmarks.md`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{mix, options};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use strata::{Db, Hint, Predicate, Projection, Query, TableBatch, WriteOptions, record};

/// Rows of the query table; each `grp` value has `ROWS / GROUPS` of them.
const ROWS: i64 = 1_000_000;
const GROUPS: i64 = 10_000;

fn customer(id: i64) -> strata::Record {
    let h = mix(id);
    record! {
        "id" => h,
        "first" => format!("first{}", h % 1000),
        "last" => format!("last{}", (h >> 10) % 5000),
        "town" => format!("town{}", (h >> 20) % 300),
        "age" => (h >> 30) % 90,
    }
}

fn inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("table_insert");
    group.throughput(Throughput::Elements(1));
    for indexes in [0usize, 1, 3] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), options()).expect("open");
        db.create_table("customers", ["id"], strata::TableOptions::default())
            .expect("table");
        for field in ["town", "last", "age"].into_iter().take(indexes) {
            db.create_index(
                "customers",
                &format!("by_{field}"),
                [field],
                Projection::KeysOnly,
            )
            .expect("index");
        }
        let mut id = 0i64;
        group.bench_function(
            BenchmarkId::from_parameter(format!("{indexes}_indexes")),
            |b| {
                b.iter(|| {
                    id += 1;
                    db.insert("customers", customer(id)).expect("insert");
                })
            },
        );
    }
    group.finish();
}

fn index_queries(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    db.create_index("t", "keys_only", ["grp"], Projection::KeysOnly)
        .expect("index");
    db.create_index(
        "t",
        "include",
        ["grp"],
        Projection::Include(vec!["name".into()]),
    )
    .expect("index");
    db.create_index("t", "all", ["grp"], Projection::All)
        .expect("index");
    for chunk in 0..ROWS / 10_000 {
        let mut batch = TableBatch::new();
        for i in chunk * 10_000..(chunk + 1) * 10_000 {
            let id = mix(i);
            batch.insert(record! {
                "id" => id,
                "grp" => i % GROUPS,
                "name" => format!("name{i}"),
                "score" => id % 1000,
                "note" => "x".repeat(40),
            });
        }
        db.write("t", batch, WriteOptions::default()).expect("load");
    }
    for cf in db.raw_store().column_families() {
        let cf = db.raw_store().cf(&cf).expect("cf");
        db.raw_store().compact_range(&cf, ..).expect("compact");
    }
    db.analyze("t").expect("analyze");

    let mut group = c.benchmark_group("table_index_query");
    group.throughput(Throughput::Elements((ROWS / GROUPS) as u64));
    let base = |g: i64| {
        Query::default()
            .filter(Predicate::eq("grp", g))
            .select(["id", "grp", "name"])
    };
    let check = db.query("t", &base(17)).expect("query").count();
    assert_eq!(check, (ROWS / GROUPS) as usize);
    for (label, hint) in [
        ("keys_only", Some(Hint::Index("keys_only".into()))),
        ("include", Some(Hint::Index("include".into()))),
        ("all", Some(Hint::Index("all".into()))),
        ("chosen", None),
    ] {
        let mut g = 0i64;
        group.bench_function(label, |b| {
            b.iter(|| {
                g = (g + 7919) % GROUPS;
                let mut q = base(g);
                q.hint = hint.clone();
                let mut rows = 0usize;
                for row in db.query("t", &q).expect("query") {
                    black_box(row.expect("row"));
                    rows += 1;
                }
                black_box(rows)
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
    targets = inserts, index_queries
}
criterion_main!(benches);
