//! `Db::bulk_load`: rows loaded straight into table files must be what inserts would have
//! made — the same answers through every plan, indexes that verify clean, durable once
//! loaded — and a load that meets a stored key must fail the way an insert does.

mod common;

use std::collections::BTreeMap;

use common::Rng;
use common::tables::{Model, brute_force, random_index, random_predicate, random_record, sorted};
use strata::{
    Db, Error, FieldNames, Hint, IndexOptions, Options, Predicate, Projection, Query, Record,
    Value, record,
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
    db.create_table("t", ["id", "sub"], strata::TableOptions::default())
        .expect("table");
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
        db.create_index("t", &name, &fields, options.projection(projection))
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
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    db.create_index("t", "by_v", ["v"], Projection::KeysOnly)
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

/// Rows built on shared name lists (`Record::with_names`, as `strata import` builds them) load
/// as the same rows built field by field: `NULL` values dropped, bad rows refused, and more
/// lists than a load remembers.
#[test]
fn rows_on_shared_name_lists_load_as_rows_built_field_by_field() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    for t in ["shared", "built"] {
        db.create_table(t, ["id"], strata::TableOptions::default())
            .expect("table");
        db.create_index(t, "by_a", ["a"], Projection::KeysOnly)
            .expect("index");
    }
    // Twelve lists: every row has `id`, and a different set of the optional fields.
    let optional = ["a", "b", "c", "d"];
    let lists: Vec<(Vec<&str>, FieldNames)> = (1..=12usize)
        .map(|mask| {
            let mut fields = vec!["id"];
            fields.extend((0..4).filter(|b| mask & (1 << b) != 0).map(|b| optional[b]));
            let names = FieldNames::new(&fields).expect("names");
            (fields, names)
        })
        .collect();
    let mut shared = db.bulk_load("shared").expect("load").run_bytes(4 << 10);
    let mut built = db.bulk_load("built").expect("load");
    for id in 0..2_000i64 {
        let (fields, names) = &lists[(id as usize * 7) % lists.len()];
        let value = |f: &str| match f {
            "id" => Value::Int(id),
            // Every fifth row has a NULL `b`: a missing field.
            "b" if id % 5 == 0 => Value::Null,
            "a" => Value::from(format!("a{}", id % 13)),
            _ => Value::Float(id as f64 / 4.0),
        };
        let values = names.names().map(value).collect();
        if shared
            .insert(Record::with_names(names, values).expect("record"))
            .expect("insert")
        {
            shared.commit().expect("commit");
        }
        let mut r = Record::new();
        for f in fields {
            let v = value(f);
            if !v.is_null() {
                r.set(*f, v);
            }
        }
        built.insert(r).expect("insert");
    }
    let names = FieldNames::new(["id", "a"]).expect("names");
    let no_key = FieldNames::new(["a"]).expect("names");
    let huge = Value::from("x".repeat(strata::table::format::MAX_RECORD_BYTES));
    for refused in [
        Record::with_names(&names, vec![Value::Float(1.5), Value::Null]),
        Record::with_names(&no_key, vec![Value::Int(1)]),
        Record::with_names(&names, vec![huge, Value::Int(9_999)]),
    ] {
        let refused = shared.insert(refused.expect("record"));
        assert!(
            matches!(
                refused,
                Err(Error::InvalidArgument(_) | Error::TooLarge { .. })
            ),
            "{refused:?}"
        );
    }
    assert_eq!(shared.finish().expect("finish"), 2_000);
    assert_eq!(built.finish().expect("finish"), 2_000);
    let all = |t: &str, q: &Query| -> Vec<Record> {
        sorted(
            db.query(t, q)
                .expect("query")
                .collect::<Result<_, _>>()
                .expect("rows"),
        )
    };
    for q in [
        Query::default(),
        Query::default().filter(Predicate::eq("a", "a3")),
        Query::default().filter(Predicate::is_null("b")),
    ] {
        let rows = all("shared", &q);
        assert!(!rows.is_empty(), "{q:?}");
        assert_eq!(rows, all("built", &q), "{q:?}");
    }
    assert!(db.verify("shared").expect("verify").is_clean());
}

/// A composite key whose fields come in another order than the names: the key a shared list's
/// rows are stored under is the one `get` asks for.
#[test]
fn rows_on_a_shared_list_are_stored_under_their_composite_key() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", ["g", "id"], strata::TableOptions::default())
        .expect("table");
    let names = FieldNames::new(["v", "id", "g"]).expect("names");
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..1_000i64 {
        // In name order: g, id, v.
        let values = vec![
            Value::from(format!("g{}", id % 3)),
            Value::Int(id),
            Value::Int(-id),
        ];
        load.insert(Record::with_names(&names, values).expect("record"))
            .expect("insert");
    }
    let short = Record::with_names(
        &FieldNames::new(["id", "v"]).expect("names"),
        vec![Value::Int(5_000), Value::Int(1)],
    );
    let short = load.insert(short.expect("record"));
    assert!(
        matches!(short, Err(Error::InvalidArgument(_))),
        "no `g`: {short:?}"
    );
    assert_eq!(load.finish().expect("finish"), 1_000);
    for id in [0i64, 499, 998] {
        let key = [Value::from(format!("g{}", id % 3)), Value::Int(id)];
        let row = db.get("t", &key).expect("get").expect("the row");
        assert_eq!(row.value("v"), &Value::Int(-id));
    }
    assert!(
        db.get("t", &[Value::from("g1"), Value::Int(0)])
            .expect("get")
            .is_none()
    );
}

#[test]
fn field_name_lists_are_checked_once_when_made() {
    let names = FieldNames::new(["b", "a", "c"]).expect("names");
    assert_eq!(names.names().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(names.len(), 3);
    for (names, why) in [
        (&["a", "b", "a"][..], "a name twice"),
        (&["a", ""][..], "an empty name"),
        (&["a\u{7}b"][..], "a control character"),
    ] {
        let refused = FieldNames::new(names.iter().copied());
        assert!(
            matches!(refused, Err(Error::InvalidArgument(_))),
            "{why}: {refused:?}"
        );
    }
    let row = Record::with_names(&names, vec![Value::Int(1), Value::Null, Value::from("x")]);
    assert_eq!(row.expect("record").value("c"), &Value::from("x"));
    assert!(Record::with_names(&names, vec![Value::Int(1)]).is_err());
}

/// A load counts its rows as each run lands (the planner sees the last analysis go stale) and
/// queues the table for auto-analyze once, when it ends, instead of having it read whole while
/// it grows.
#[test]
fn a_bulk_load_queues_its_analysis_when_it_ends() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    let analysed = |db: &Db| {
        db.wait_for_analyses();
        db.table_stats("t").expect("stats").map(|s| s.row_count)
    };
    let mut load = db.bulk_load("t").expect("load").run_bytes(8 << 10);
    let mut runs = 0;
    for id in 0..3_000i64 {
        if load
            .insert(record! { "id" => id, "v" => id % 7 })
            .expect("insert")
        {
            load.commit().expect("commit");
            runs += 1;
            assert_eq!(analysed(&db), None, "run {runs} of a load still going");
        }
    }
    assert!(runs > 3, "{runs} runs");
    assert_eq!(load.finish().expect("finish"), 3_000);
    assert_eq!(analysed(&db), Some(3_000), "queued as the load ended");

    // A load dropped without `finish` queues what its committed runs loaded.
    let mut load = db.bulk_load("t").expect("load");
    for id in 3_000..4_000i64 {
        load.insert(record! { "id" => id }).expect("insert");
    }
    load.commit().expect("commit");
    drop(load);
    assert_eq!(analysed(&db), Some(4_000));
}

#[test]
fn a_key_twice_in_a_run_loads_nothing_of_it() {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
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
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    let mut load = db.bulk_load("t").expect("load");
    load.insert(record! { "id" => 1 }).expect("insert");
    let no_key = load.insert(record! { "other" => 1 });
    assert!(
        matches!(no_key, Err(Error::InvalidArgument(_))),
        "no key: {no_key:?}"
    );
    let float_key = load.insert(record! { "id" => 1.5 });
    assert!(
        matches!(float_key, Err(Error::InvalidArgument(_))),
        "a float key: {float_key:?}"
    );
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
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    let mut load = db.bulk_load("t").expect("load");
    for id in 0..300 {
        load.insert(record! { "id" => id, "v" => id % 3 })
            .expect("insert");
    }
    db.create_index("t", "by_v", ["v"], Projection::All)
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
    db.create_table("t", ["id"], strata::TableOptions::default().shards(3))
        .expect("table");
    db.create_index("t", "by_v", ["v"], IndexOptions::global())
        .expect("index");
    db.create_index("t", "by_w", ["w"], IndexOptions::local())
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
