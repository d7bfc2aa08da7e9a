//! Change feeds (issue 47's targets), on the real file system:
//!
//! - `feed_write/{no_feed,feed}`: an upsert of an existing row (a local sync index, a 90-byte
//!   row) into a table no feed covers and into one a feed covers, whose write also logs the
//!   row before and after (target: the feed ≤ 1.3× no feed).
//! - `feed_write/{insert_no_feed,insert_feed}`: an insert of a new row into the same tables
//!   (its fact and index entries; with the feed, the log entry with the row after).
//! - `feed_poll/1000`: one `poll` of 1,000 changes from a log of 200,000 (batches of ten
//!   rows), rows decoded (target: ≥ 500,000 changes/s).
//!
//! Checkpoints and backups are in `checkpoint.rs`. Run: `cargo bench -p strata-benches --bench feeds`. Figures go in `docs/benchmarks.md`.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::{mix, options};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::{Db, Projection, TableBatch, TableOptions, record};

fn row(id: i64, version: i64) -> strata::Record {
    let h = mix(id);
    record! {
        "id" => id,
        "town" => format!("town{}", h % 5000),
        "score" => (h + version) % 1000,
        "note" => "x".repeat(40),
    }
}

fn table(db: &Db, rows: i64) {
    db.create_table("t", ["id"], TableOptions::default())
        .expect("table");
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .expect("index");
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..rows {
        load.insert(row(id, 0)).expect("row");
    }
    load.finish().expect("load");
}

/// A database holding the bench's table, covered by a feed no one reads when `with_feed`.
/// Each bench gets its own: criterion runs as many writes as its time allows, so a shared
/// database would hand the next bench a state that depends on how fast the last one was.
fn database(with_feed: bool) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    table(&db, 10_000);
    if with_feed {
        db.create_feed("f", &["t"]).expect("feed");
    }
    (dir, db)
}

fn writes(c: &mut Criterion) {
    let mut group = c.benchmark_group("feed_write");
    group.throughput(Throughput::Elements(1));
    for with_feed in [false, true] {
        let name = if with_feed { "feed" } else { "no_feed" };
        let (_dir, db) = database(with_feed);
        let mut i = 0i64;
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                db.upsert("t", row(i % 10_000, i)).expect("upsert");
            })
        });
        drop(db);
        // A new row: its fact and index entries, and with the feed the log entry.
        let (_dir, db) = database(with_feed);
        let mut id = 10_000i64;
        group.bench_function(format!("insert_{name}"), |b| {
            b.iter(|| {
                id += 1;
                db.insert("t", row(id, 0)).expect("insert");
            })
        });
    }
    group.finish();
}

fn polls(c: &mut Criterion) {
    let mut group = c.benchmark_group("feed_poll");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.create_table("t", ["id"], TableOptions::default())
        .expect("table");
    db.create_feed("f", &["t"]).expect("feed");
    for start in (0..200_000i64).step_by(10) {
        let mut batch = TableBatch::new();
        for id in start..start + 10 {
            batch.insert(row(id, 0));
        }
        db.write("t", batch, Default::default()).expect("write");
    }
    group.throughput(Throughput::Elements(1_000));
    let mut feed = db.feed("f").expect("reader");
    group.bench_function("1000", |b| {
        b.iter(|| {
            let mut got = feed.poll(1_000, Duration::ZERO).expect("poll");
            if got.is_empty() {
                // The end of the log: start again from the (unacknowledged) beginning.
                feed = db.feed("f").expect("reader");
                got = feed.poll(1_000, Duration::ZERO).expect("poll");
            }
            black_box(got);
        })
    });
    group.finish();
}

criterion_group!(benches, writes, polls);
criterion_main!(benches);
