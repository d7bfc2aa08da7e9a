//! NaN, ±inf and -0.0 in indexed and unindexed fields: statistics, reopen, planning and
//! queries.
//!
//! What broke: statistics went through serde_json, which writes a non-finite float as `null`
//! and refuses to read that back as a float, so one infinite value in an analysed column made
//! `Db::open` fail with a catalog corruption and locked the user out of the whole database.

use strata::{Db, Hint, Options, Predicate, Projection, Query, Record, Value, record};

/// One float of each awkward kind, and ordinary ones: the values every test below stores.
const FLOATS: [f64; 10] = [
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    0.0,
    1.5,
    -2.25,
    1e300,
    -7.0,
];

fn options() -> Options {
    Options {
        // The tests choose when statistics are gathered.
        auto_analyze: false,
        ..Options::default()
    }
}

/// Row `id`: `x` (indexed) and `y` (not) cycle through [`FLOATS`] at different strides, and
/// one row in eleven has neither.
fn row(id: i64) -> Record {
    if id % 11 == 10 {
        return record! { "id" => id };
    }
    let pick = |stride: i64| FLOATS[(id * stride % FLOATS.len() as i64) as usize];
    record! { "id" => id, "x" => pick(1), "y" => pick(3) }
}

fn populate(db: &Db) {
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_x", ["x"], Projection::KeysOnly)
        .unwrap();
    for id in 0..220 {
        db.insert("t", row(id)).unwrap();
    }
}

/// The model's answer, by IEEE total order written out here rather than taken from `Value`.
fn expected(field: &str, test: &dyn Fn(f64) -> bool) -> Vec<i64> {
    (0..220)
        .filter(|&id| match row(id).get(field) {
            Some(Value::Float(v)) => test(*v),
            _ => false,
        })
        .collect()
}

fn ids(db: &Db, query: &Query) -> Vec<i64> {
    let mut ids: Vec<i64> = db
        .query("t", query)
        .unwrap()
        .map(|r| match r.unwrap().get("id") {
            Some(Value::Int(id)) => *id,
            other => panic!("id {other:?}"),
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// What a predicate keeps, written out by the model.
type Check = Box<dyn Fn(f64) -> bool>;

/// Every comparison against every awkward constant, on both fields, by index and by scan,
/// equals the model; every plan's estimate is a finite number.
fn check_queries(db: &Db) {
    use std::cmp::Ordering::{Equal, Greater, Less};
    for field in ["x", "y"] {
        for c in FLOATS {
            let cmp = move |v: f64| v.total_cmp(&c);
            let cases: [(Predicate, Check); 6] = [
                (Predicate::eq(field, c), Box::new(move |v| cmp(v) == Equal)),
                (Predicate::ne(field, c), Box::new(move |v| cmp(v) != Equal)),
                (Predicate::lt(field, c), Box::new(move |v| cmp(v) == Less)),
                (Predicate::ge(field, c), Box::new(move |v| cmp(v) != Less)),
                (
                    Predicate::gt(field, c),
                    Box::new(move |v| cmp(v) == Greater),
                ),
                (
                    Predicate::between(field, f64::NEG_INFINITY, c),
                    Box::new(move |v| v.total_cmp(&f64::NEG_INFINITY) != Less && cmp(v) != Greater),
                ),
            ];
            for (predicate, test) in cases {
                let want = expected(field, &*test);
                let mut hints = vec![None, Some(Hint::Scan)];
                if field == "x" {
                    hints.push(Some(Hint::Index("by_x".into())));
                }
                for hint in hints {
                    let mut query = Query::default().filter(predicate.clone());
                    if let Some(h) = hint.clone() {
                        query = query.hint(h);
                    }
                    let plan = db.explain("t", &query).unwrap();
                    assert!(
                        plan.chosen.estimated_rows.is_finite() && plan.chosen.cost.is_finite(),
                        "{predicate:?}: {plan:?}"
                    );
                    assert_eq!(ids(db, &query), want, "{predicate:?} with {hint:?}");
                }
            }
        }
    }
}

#[test]
fn non_finite_floats_survive_analyze_and_reopen_and_query_like_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    populate(&db);
    db.flush().unwrap(); // the table files' sketches hold them too
    let stats = db.analyze("t").unwrap();
    let x = &stats.columns["x"];
    assert!(matches!(x.min, Some(Value::Float(v)) if v.is_nan() && v.is_sign_negative()));
    assert!(matches!(x.max, Some(Value::Float(v)) if v.is_nan() && v.is_sign_positive()));
    check_queries(&db);
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).expect("a database with NaN in its statistics opens");
    assert_eq!(db.table_stats("t").unwrap(), Some(stats));
    check_queries(&db);
    assert!(db.verify("t").unwrap().is_clean());
    db.close().unwrap();
}

#[test]
fn statistics_an_earlier_build_wrote_with_null_floats_are_analysed_again_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    populate(&db);
    let fresh = db.analyze("t").unwrap();
    // What builds before the fix stored: every non-finite float as null.
    let catalog = db.raw_store().cf("sys/catalog").unwrap();
    let stored = db.raw_store().get(&catalog, b"stats/t").unwrap().unwrap();
    let text = String::from_utf8(stored.to_vec()).unwrap();
    let old = ["0x7ff8000000000000", "0xfff8000000000000"]
        .iter()
        .chain(&["0x7ff0000000000000", "0xfff0000000000000"])
        .fold(text.clone(), |t, bits| {
            t.replace(&format!("{{\"Float\":\"{bits}\"}}"), "{\"Float\":null}")
        });
    assert_ne!(old, text, "the statistics hold non-finite floats");
    db.raw_store()
        .put(&catalog, b"stats/t", old.as_bytes())
        .unwrap();
    db.close().unwrap();

    let db = Db::open(dir.path(), options()).expect("the old statistics do not lock the user out");
    // Read as unknown and analysed again in the background (even with auto-analyze off: the
    // user had statistics and the open must not lose them).
    db.wait_for_analyses();
    assert_eq!(db.table_stats("t").unwrap(), Some(fresh));
    check_queries(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(
        db.table_stats("t").unwrap().is_some(),
        "the new statistics are stored"
    );
}
