//! SQL statements on a 100,000-row table: a prepared point query against `Db::query` for the
//! same row (the fast path's overhead), a prepared index query, a join through DataFusion, and
//! the same point query as unprepared text (DataFusion's SQL planner each time).
//!
//! `cargo bench --manifest-path sql/Cargo.toml --bench statements`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use strata::{
    Db, IndexOptions, Options, Predicate, Query, Record, TableBatch, TableOptions, Value,
};
use strata_sql::SqlSession;

const ROWS: i64 = 100_000;

fn database() -> (tempfile::TempDir, Arc<Db>) {
    let dir = tempfile::tempdir().expect("dir");
    let db = Arc::new(Db::open(dir.path(), Options::default()).expect("open"));
    db.create_table("people", ["id"], TableOptions::default())
        .expect("table");
    db.create_index("people", "by_town", ["town"], IndexOptions::local())
        .expect("index");
    db.create_table("visits", ["person", "n"], TableOptions::default())
        .expect("table");
    for start in (0..ROWS).step_by(10_000) {
        let mut people = TableBatch::new();
        let mut visits = TableBatch::new();
        for id in start..start + 10_000 {
            let mut r = Record::new();
            r.set("id", id);
            r.set("name", format!("name-{id}"));
            r.set("town", format!("town-{}", id % 5_000));
            r.set("age", 18 + id % 70);
            r.set("email", format!("person{id}@example.com"));
            people.insert(r);
            for n in 0..3 {
                let mut v = Record::new();
                v.set("person", id);
                v.set("n", n);
                v.set("place", format!("shop-{}", (id + n) % 97));
                visits.insert(v);
            }
        }
        db.write("people", people, Default::default())
            .expect("write");
        db.write("visits", visits, Default::default())
            .expect("write");
    }
    db.analyze("people").expect("analyze");
    db.analyze("visits").expect("analyze");
    (dir, db)
}

fn statements(c: &mut Criterion) {
    let (_dir, db) = database();
    let session = SqlSession::new(Arc::clone(&db)).expect("session");
    let point = session
        .prepare("SELECT * FROM people WHERE id = $1")
        .expect("prepare");
    assert!(point.is_fast());
    let mut id = 0i64;
    let mut next = move || {
        id = (id + 7_919) % ROWS;
        id
    };
    c.bench_function("db_query_point", |b| {
        b.iter(|| {
            let query = Query::default().filter(Predicate::eq("id", next()));
            for row in db.query("people", &query).expect("query") {
                black_box(row.expect("row"));
            }
        })
    });
    c.bench_function("prepared_point", |b| {
        b.iter(|| black_box(point.execute(&[Value::Int(next())]).expect("execute")))
    });
    let town = session
        .prepare("SELECT id, name FROM people WHERE town = $1")
        .expect("prepare");
    c.bench_function("prepared_index_20_rows", |b| {
        b.iter(|| {
            let t = Value::from(format!("town-{}", next() % 5_000));
            black_box(town.execute(&[t]).expect("execute"))
        })
    });
    let join = session
        .prepare(
            "SELECT p.name, v.place FROM people p JOIN visits v ON v.person = p.id \
             WHERE p.town = $1",
        )
        .expect("prepare");
    c.bench_function("prepared_join_60_rows", |b| {
        b.iter(|| {
            let t = Value::from(format!("town-{}", next() % 5_000));
            black_box(join.execute(&[t]).expect("execute"))
        })
    });
    c.bench_function("unprepared_point", |b| {
        b.iter(|| {
            black_box(
                session
                    .execute(&format!("SELECT * FROM people WHERE id = {}", next()))
                    .expect("execute"),
            )
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = statements
}
criterion_main!(benches);
