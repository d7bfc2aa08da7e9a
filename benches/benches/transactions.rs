//! Transactions against the plain writes and reads they wrap (issue 27's speed targets), on
//! the real file system, unsynced:
//!
//! - `txn_write/{insert,transaction}`: one row with a local sync index, by `Db::insert` and by
//!   `begin` + `insert` + `commit` (target: the transaction ≤ 1.3× the insert).
//! - `txn_shards/{1_store,4_stores}`: a transaction upserting four rows of a 4-shard table,
//!   all in one shard or one in each (target: four stores ≤ 2× one).
//! - `txn_rmw/{plain,transaction}`: read two rows and write both back, by `get`/`write` and in
//!   a transaction.
//! - `snapshot_query/{query,query_at}`: a 20-row index query on a 100,000-row table, by
//!   `Db::query` and by `Db::query_at` a snapshot (target: as fast).
//!
//! Run: `cargo bench -p strata-benches --bench transactions`. Figures go in
//! `docs/benchmarks.md`.

mod common;

use std::hint::black_box;

use common::{mix, options};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::table::entry::encode_primary_key;
use strata::table::format::shard_of;
use strata::{Db, Predicate, Projection, Query, TableBatch, Value, WriteOptions, record};

fn row(id: i64) -> strata::Record {
    let h = mix(id);
    record! {
        "id" => id,
        "town" => format!("town{}", h % 5000),
        "score" => h % 1000,
        "note" => "x".repeat(40),
    }
}

fn writes(c: &mut Criterion) {
    let mut group = c.benchmark_group("txn_write");
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .expect("index");
    let mut id = 0i64;
    group.bench_function("insert", |b| {
        b.iter(|| {
            id += 1;
            db.insert("t", row(id)).expect("insert");
        })
    });
    group.bench_function("transaction", |b| {
        b.iter(|| {
            id += 1;
            let mut tx = db.begin().expect("begin");
            tx.insert("t", row(id)).expect("insert");
            tx.commit().expect("commit");
        })
    });
    group.finish();
}

/// Keys of a 4-shard table: `count` ids in shard `shard` (or one per shard when `None`).
fn keys_in(db: &Db, from: &mut i64, shard: Option<usize>) -> Vec<i64> {
    let def = db.table("t").expect("table");
    let mut out = Vec::new();
    let mut want: Vec<usize> = match shard {
        Some(s) => vec![s; 4],
        None => vec![0, 1, 2, 3],
    };
    while !want.is_empty() {
        *from += 1;
        let pk = encode_primary_key(&def, &[&Value::Int(*from)]).expect("key");
        let s = shard_of(&pk, 4);
        if let Some(at) = want.iter().position(|&w| w == s) {
            want.remove(at);
            out.push(*from);
        }
    }
    out
}

fn shards(c: &mut Criterion) {
    let mut group = c.benchmark_group("txn_shards");
    group.throughput(Throughput::Elements(4));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default().shards(4))
        .expect("table");
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .expect("index");
    let mut next = 0i64;
    for (label, shard) in [("1_store", Some(2)), ("4_stores", None)] {
        group.bench_function(label, |b| {
            b.iter(|| {
                let ids = keys_in(&db, &mut next, shard);
                let mut tx = db.begin().expect("begin");
                for id in ids {
                    tx.upsert("t", row(id)).expect("upsert");
                }
                tx.commit().expect("commit");
            })
        });
    }
    group.finish();
}

fn read_modify_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("txn_rmw");
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    const ROWS: i64 = 100_000;
    for chunk in 0..ROWS / 10_000 {
        let mut batch = TableBatch::new();
        for i in chunk * 10_000..(chunk + 1) * 10_000 {
            batch.insert(record! { "id" => i, "n" => 0 });
        }
        db.write("t", batch, WriteOptions::default()).expect("load");
    }
    let mut i = 0i64;
    let bump = |r: Option<strata::Record>, id: i64| {
        let n = match r.as_ref().map(|r| r.value("n")) {
            Some(Value::Int(n)) => *n,
            _ => 0,
        };
        record! { "id" => id, "n" => n + 1 }
    };
    group.bench_function("plain", |b| {
        b.iter(|| {
            i += 1;
            let (a, c) = (mix(i) % ROWS, mix(i + 7) % ROWS);
            let ra = db.get("t", &[Value::Int(a)]).expect("get");
            let rc = db.get("t", &[Value::Int(c)]).expect("get");
            let mut batch = TableBatch::new();
            batch.upsert(bump(ra, a));
            batch.upsert(bump(rc, c));
            db.write("t", batch, WriteOptions::default())
                .expect("write");
        })
    });
    group.bench_function("transaction", |b| {
        b.iter(|| {
            i += 1;
            let (a, c) = (mix(i) % ROWS, mix(i + 7) % ROWS);
            let mut tx = db.begin().expect("begin");
            let ra = tx.get("t", &[Value::Int(a)]).expect("get");
            let rc = tx.get("t", &[Value::Int(c)]).expect("get");
            tx.upsert("t", bump(ra, a)).expect("upsert");
            tx.upsert("t", bump(rc, c)).expect("upsert");
            tx.commit().expect("commit");
        })
    });
    group.finish();
}

fn snapshot_queries(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot_query");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .expect("index");
    for chunk in 0..10i64 {
        let mut batch = TableBatch::new();
        for i in chunk * 10_000..(chunk + 1) * 10_000 {
            batch.insert(row(i));
        }
        db.write("t", batch, WriteOptions::default()).expect("load");
    }
    db.analyze("t").expect("analyze");
    let q = Query::default().filter(Predicate::eq("town", "town42"));
    let expected = db.query("t", &q).expect("query").count();
    assert!(expected >= 10, "{expected}");
    group.throughput(Throughput::Elements(expected as u64));
    group.bench_function("query", |b| {
        b.iter(|| {
            let mut n = 0;
            for r in db.query("t", &q).expect("query") {
                black_box(r.expect("row"));
                n += 1;
            }
            assert_eq!(n, expected);
        })
    });
    let snapshot = db.snapshot();
    group.bench_function("query_at", |b| {
        b.iter(|| {
            let mut n = 0;
            for r in db.query_at(&snapshot, "t", &q).expect("query") {
                black_box(r.expect("row"));
                n += 1;
            }
            assert_eq!(n, expected);
        })
    });
    group.finish();
}

criterion_group!(benches, writes, shards, read_modify_write, snapshot_queries);
criterion_main!(benches);
