//! `Db::bulk_load`: rows loaded straight into table files must be what inserts would have
//! made — the same answers through every plan, indexes that verify clean, durable once
//! loaded — and a load that meets a stored key must fail the way an insert does.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use common::tables::{Model, brute_force, random_index, random_predicate, random_record, sorted};
use strata::{
    Db, Error, Hint, IndexOptions, Options, Predicate, Projection, Query, Record, Value, record,
};

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, Options::default()).expect("open")
}

fn rows(db: &Db, q: &Query) -> Vec<Record> {
    sorted(
        db.query("t", q)
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows"),
    )
}

/// Random queries through every plan equal the brute-force answer over `all`.
fn check(db: &Db, all: &Model, indexes: &[String], rng: &mut Rng) {
    for _ in 0..20 {
        let mut q = Query::default();
        for _ in 0..1 + rng.below(2) {
            q.predicates.push(random_predicate(rng));
        }
        let expect = sorted(brute_force(all, &q));
        let mut hints = vec![None, Some(Hint::Scan)];
        hints.extend(indexes.iter().map(|n| Some(Hint::Index(n.clone()))));
        for hint in hints {
            let mut q = q.clone();
            q.hint = hint;
            assert_eq!(rows(db, &q), expect, "{q:?}");
        }
    }
}

/// A table `t (id, sub)` with a sync, an async and a covering index, of random fields.
fn table(db: &Db, rng: &mut Rng) -> Vec<String> {
    db.create_table("t", &["id", "sub"]).expect("table");
    let mut names = Vec::new();
    for (i, options) in [
        IndexOptions::local(),
        IndexOptions::local_async(),
        IndexOptions::local(),
    ]
    .into_iter()
    .enumerate()
    {
        let (fields, projection) = random_index(rng);
        let name = format!("ix{i}");
        db.create_index_with("t", &name, &fields, projection, options)
            .expect("index");
        names.push(name);
    }
    names
}

#[test]
fn loaded_rows_answer_every_plan_as_inserted_ones_and_survive_a_reopen() {
    for seed in 1..=2 {
        let dir = tempfile::tempdir().expect("dir");
        let mut rng = Rng::new(seed);
        let db = open(dir.path());
        let names = table(&db, &mut rng);
        // Keys in random order, small runs: several runs, each sorted, ranges interleaved.
        let mut keys: Vec<(i64, i64)> = (0..600)
            .flat_map(|id| (0..3).map(move |s| (id, s)))
            .collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut all = Model::new();
        let mut load = db.bulk_load("t").expect("load").run_bytes(32 << 10);
        for (id, sub) in keys.iter().take(1200) {
            let r = random_record(&mut rng, *id, *sub);
            all.insert((*id, *sub), r.clone());
            if load.insert(r).expect("insert") {
                load.commit().expect("commit");
            }
        }
        assert_eq!(load.finish().expect("finish"), 1200);
        // A second load of new keys, then ordinary writes on top.
        let mut load = db.bulk_load("t").expect("load");
        for (id, sub) in keys.iter().skip(1200) {
            let r = random_record(&mut rng, *id, *sub);
            all.insert((*id, *sub), r.clone());
            load.insert(r).expect("insert");
        }
        load.finish().expect("finish");
        let r = random_record(&mut rng, 5, 1);
        db.upsert("t", r.clone()).expect("upsert");
        all.insert((5, 1), r);
        db.delete("t", &[Value::Int(7), Value::Int(2)])
            .expect("delete");
        all.remove(&(7, 2));

        db.wait_for_indexes().expect("indexes");
        assert!(db.verify("t").expect("verify").is_clean(), "seed {seed}");
        check(&db, &all, &names, &mut rng);
        db.close().expect("close");
        let db = open(dir.path());
        assert!(db.verify("t").expect("verify").is_clean());
        check(&db, &all, &names, &mut rng);
    }
}

#[test]
fn a_stored_key_in_the_range_fails_like_an_insert_and_keeps_what_committed() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", &["id"]).expect("table");
    db.create_index("t", "by_v", &["v"], Projection::KeysOnly)
        .expect("index");
    db.insert("t", record! { "id" => 2_500, "v" => "stored" })
        .expect("insert");
    // One run: its range holds the stored key, so it goes through ordinary inserts, which
    // commit the batches before the one holding 2,500 and fail that one.
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..5_000 {
        load.insert(record! { "id" => id, "v" => id % 7 })
            .expect("insert");
    }
    let error = load.commit().expect_err("a key that exists");
    assert!(matches!(error, Error::Conflict(_)), "{error}");
    let loaded = load.loaded();
    assert_eq!(loaded, 2_000, "the two batches before the one with 2,500");
    let all: Vec<Record> = db
        .query("t", &Query::default())
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(all.len() as u64, loaded + 1);
    assert!(db.verify("t").expect("verify").is_clean());

    // A run of new keys after it loads straight into files.
    let mut load = db.bulk_load("t").expect("load");
    for id in 10_000..10_100 {
        load.insert(record! { "id" => id, "v" => 1 })
            .expect("insert");
    }
    assert_eq!(load.finish().expect("finish"), 100);
    let q = Query::default().filter(Predicate::eq("v", 1));
    assert_eq!(rows(&db, &q).len(), 100 + 2_000 / 7 + 1);
    assert!(db.verify("t").expect("verify").is_clean());
}

#[test]
fn a_key_twice_in_a_run_loads_nothing_of_it() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", &["id"]).expect("table");
    let mut load = db.bulk_load("t").expect("load");
    for id in [1, 2, 3, 2] {
        load.insert(record! { "id" => id }).expect("insert");
    }
    let error = load.finish().expect_err("a repeated key");
    assert!(error.to_string().contains("twice"), "{error}");
    assert_eq!(rows(&db, &Query::default()), Vec::<Record>::new());
}

#[test]
fn a_bad_row_is_refused_at_insert_and_keeps_nothing_of_it() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", &["id"]).expect("table");
    let mut load = db.bulk_load("t").expect("load");
    load.insert(record! { "id" => 1 }).expect("insert");
    assert!(load.insert(record! { "other" => 1 }).is_err(), "no key");
    assert!(load.insert(record! { "id" => 1.5 }).is_err(), "a float key");
    let huge = "x".repeat(strata::table::format::MAX_RECORD_BYTES + 1);
    assert!(matches!(
        load.insert(record! { "id" => 2, "big" => huge }),
        Err(Error::TooLarge { .. })
    ));
    assert_eq!(load.pending(), 1);
    assert_eq!(load.finish().expect("finish"), 1);
}

#[test]
fn an_index_created_during_a_load_gets_the_loaded_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", &["id"]).expect("table");
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..300 {
        load.insert(record! { "id" => id, "v" => id % 3 })
            .expect("insert");
    }
    db.create_index("t", "by_v", &["v"], Projection::All)
        .expect("index");
    for id in 300..400 {
        load.insert(record! { "id" => id, "v" => id % 3 })
            .expect("insert");
    }
    load.finish().expect("finish");
    assert!(db.verify("t").expect("verify").is_clean());
    let q = Query::default()
        .filter(Predicate::eq("v", 2))
        .hint(Hint::Index("by_v".into()));
    assert_eq!(rows(&db, &q).len(), 133);
}

#[test]
fn a_sharded_table_with_a_global_index_loads_consistently() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_sharded_table("t", &["id"], 3).expect("table");
    db.create_index_with(
        "t",
        "by_v",
        &["v"],
        Projection::KeysOnly,
        IndexOptions::global(),
    )
    .expect("index");
    db.create_index_with(
        "t",
        "by_w",
        &["w"],
        Projection::KeysOnly,
        IndexOptions::local(),
    )
    .expect("index");
    let mut model = BTreeMap::new();
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..900 {
        let r = record! { "id" => id, "v" => id % 11, "w" => id % 5 };
        model.insert(id, r.clone());
        load.insert(r).expect("insert");
    }
    assert_eq!(load.finish().expect("finish"), 900);
    db.wait_for_indexes().expect("indexes");
    assert!(db.verify("t").expect("verify").is_clean());
    for (field, modulus) in [("v", 11), ("w", 5)] {
        let q = Query::default().filter(Predicate::eq(field, 3));
        let expect = model
            .values()
            .filter(|r| r.value(field) == &Value::Int(3))
            .count();
        assert_eq!(rows(&db, &q).len(), expect, "{field} mod {modulus}");
    }
}
