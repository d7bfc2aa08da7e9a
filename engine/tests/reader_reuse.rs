//! Queries of one shape, one after another, take up the row reader the query before gave
//! back, with the row layouts it learnt: each still returns exactly its own rows and fields —
//! other predicate values, other projections, rows of a layout the reader has not seen —
//! over scans, index reads and point lookups.

use strata::{Db, Options, Predicate, Projection, Query, Record, TableOptions, Value, record};

/// The rows written: `id`, `town` (five towns), a `nick` on every third row.
fn model(rows: i64) -> Vec<Record> {
    (0..rows)
        .map(|id| {
            let mut r = record! { "id" => id, "town" => format!("town{}", id % 5) };
            if id % 3 == 0 {
                r.set("nick", format!("n{id}"));
            }
            r
        })
        .collect()
}

fn open(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, Options::default()).unwrap();
    // `plain` has no index on `town`: its queries scan and test each row's bytes.
    db.create_table("plain", ["id"], TableOptions::default())
        .unwrap();
    db.create_table("indexed", ["id"], TableOptions::default())
        .unwrap();
    db.create_index("indexed", "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    for r in model(300) {
        db.insert("plain", r.clone()).unwrap();
        db.insert("indexed", r).unwrap();
    }
    db.flush().unwrap();
    db
}

fn ids(db: &Db, table: &str, query: &Query) -> Vec<i64> {
    let mut ids: Vec<i64> = db
        .query(table, query)
        .unwrap()
        .map(|r| match r.unwrap().get("id") {
            Some(Value::Int(id)) => *id,
            other => panic!("id {other:?}"),
        })
        .collect();
    ids.sort_unstable();
    ids
}

fn of_town(town: usize) -> Vec<i64> {
    (0..300).filter(|id| *id as usize % 5 == town).collect()
}

#[test]
fn each_query_of_a_shape_tests_its_own_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for table in ["plain", "indexed"] {
        // Up and down the towns: each query of the shape after the first reuses a reader
        // whose byte tests were made for another town.
        for town in [0, 1, 2, 3, 4, 3, 0] {
            let q = Query::default().filter(Predicate::eq("town", format!("town{town}")));
            assert_eq!(ids(&db, table, &q), of_town(town), "{table}, town{town}");
            let q = q.filter(Predicate::ne("id", 5i64 * 7 + town as i64));
            let expected: Vec<i64> = of_town(town)
                .into_iter()
                .filter(|&id| id != 35 + town as i64)
                .collect();
            assert_eq!(
                ids(&db, table, &q),
                expected,
                "{table}, town{town} without one"
            );
        }
    }
}

#[test]
fn each_query_builds_its_own_fields() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let shapes: [Option<&[&str]>; 4] = [
        Some(&["id", "town"]),
        Some(&["id", "nick"]),
        None,
        Some(&["id", "town"]),
    ];
    for round in 0..2 {
        for (i, shape) in shapes.iter().enumerate() {
            let id = (round * 40 + i * 3) as i64;
            let mut q = Query::default().filter(Predicate::eq("id", id));
            q.projection = shape.map(|f| f.iter().map(|f| f.to_string()).collect());
            let rows: Vec<Record> = db
                .query("plain", &q)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let full = &model(300)[id as usize];
            let expected: Vec<(&str, &Value)> = full
                .iter()
                .filter(|(name, _)| shape.is_none_or(|f| f.contains(name)))
                .collect();
            assert_eq!(rows.len(), 1, "{shape:?} of {id}");
            assert_eq!(
                rows[0].iter().collect::<Vec<_>>(),
                expected,
                "{shape:?} of {id}"
            );
        }
    }
}

#[test]
fn a_reused_reader_learns_a_layout_it_has_not_seen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let q = Query::default().filter(Predicate::eq("id", 7i64));
    let first: Vec<Record> = db.query("plain", &q).unwrap().map(Result::unwrap).collect();
    assert_eq!(first, vec![model(300)[7].clone()]);
    // The same shape again, on a row with fields no row had before.
    db.insert(
        "plain",
        record! { "id" => 1000i64, "town" => "far", "score" => 2.5 },
    )
    .unwrap();
    let q = Query::default().filter(Predicate::eq("id", 1000i64));
    let row = db.query("plain", &q).unwrap().next().unwrap().unwrap();
    assert_eq!(
        row,
        record! { "id" => 1000i64, "town" => "far", "score" => 2.5 }
    );
    let q = Query::default().filter(Predicate::eq("id", 7i64));
    let again: Vec<Record> = db.query("plain", &q).unwrap().map(Result::unwrap).collect();
    assert_eq!(again, first);
}
