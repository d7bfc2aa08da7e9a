//! A query that binds every primary-key field to one value reads its row without a stream:
//! it returns what a scan of the same query returns (re-checked predicates, `OR`s,
//! projections, `LIMIT`), counts what it did, and a transaction that read the row through it
//! conflicts with a write to that row.

use strata::{
    Condition, Db, Error, Hint, Options, Predicate, Query, Record, TableOptions, Value, record,
};

fn open(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, Options::default()).unwrap();
    db.create_table("people", ["id"], TableOptions::default())
        .unwrap();
    db.create_table("visits", ["person", "day"], TableOptions::default())
        .unwrap();
    for id in 0..200i64 {
        let mut r = record! { "id" => id, "town" => format!("town{}", id % 5), "age" => id % 70 };
        if id % 3 == 0 {
            r.set("nick", format!("n{id}"));
        }
        db.insert("people", r).unwrap();
        db.insert(
            "visits",
            record! { "person" => id % 20, "day" => id / 20, "spent" => id * 3 },
        )
        .unwrap();
    }
    // Half the rows in table files, the rest in the memtable.
    db.flush().unwrap();
    for id in 200..300i64 {
        db.insert(
            "people",
            record! { "id" => id, "town" => format!("town{}", id % 5), "age" => id % 70 },
        )
        .unwrap();
    }
    db
}

fn rows(db: &Db, table: &str, query: &Query) -> Vec<Record> {
    db.query(table, query)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// `query`'s rows by key and by a scan, which must agree; the rows.
fn agreed(db: &Db, table: &str, query: &Query) -> Vec<Record> {
    let plan = db.explain(table, query).unwrap();
    assert_eq!(plan.chosen.plan, "primary_key", "{query:?}: {plan}");
    let by_key = rows(db, table, query);
    let by_scan = rows(db, table, &query.clone().hint(Hint::Scan));
    assert_eq!(by_key, by_scan, "{query:?}");
    by_key
}

fn id(id: i64) -> Query {
    Query::default().filter(Predicate::eq("id", id))
}

#[test]
fn a_point_query_returns_what_a_scan_returns() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    // In a table file, in the memtable, absent.
    for key in [7i64, 250, 1_000] {
        let found = agreed(&db, "people", &id(key));
        assert_eq!(found.len(), usize::from(key < 300), "{key}");
    }
    // A predicate the key does not answer is re-checked: 7 lives in town2.
    let q = id(7).filter(Predicate::eq("town", "town2"));
    assert_eq!(agreed(&db, "people", &q).len(), 1);
    let q = id(7).filter(Predicate::eq("town", "town3"));
    assert!(agreed(&db, "people", &q).is_empty());
    // A field the row lacks (7 has no nick) and one it has (9 does).
    let q = id(7).filter(Predicate::is_not_null("nick"));
    assert!(agreed(&db, "people", &q).is_empty());
    let q = id(9).filter(Predicate::is_not_null("nick"));
    assert_eq!(agreed(&db, "people", &q).len(), 1);
    // An `OR` on fields the query does not return.
    let mut q = id(12).filter_where(Condition::any([
        Predicate::eq("town", "town0"),
        Predicate::gt("age", 10i64),
    ]));
    q.projection = Some(vec!["id".to_string()]);
    assert_eq!(agreed(&db, "people", &q), vec![record! { "id" => 12i64 }]);
    let mut q = id(11).filter_where(Condition::any([
        Predicate::eq("town", "town0"),
        Predicate::gt("age", 11i64),
    ]));
    q.projection = Some(vec!["id".to_string()]);
    assert!(agreed(&db, "people", &q).is_empty());
    // A projection: only its fields, one the row lacks left out.
    let mut q = id(9);
    q.projection = Some(vec!["town".to_string(), "nick".to_string()]);
    assert_eq!(
        agreed(&db, "people", &q),
        vec![record! { "nick" => "n9", "town" => "town4" }]
    );
    let mut q = id(8);
    q.projection = Some(vec!["nick".to_string()]);
    assert_eq!(agreed(&db, "people", &q), vec![Record::default()]);
    // `LIMIT 0` returns nothing.
    let mut q = id(7);
    q.limit = Some(0);
    assert!(agreed(&db, "people", &q).is_empty());
}

#[test]
fn a_composite_key_is_a_point_only_when_every_field_is_bound() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let both = Query::default()
        .filter(Predicate::eq("person", 3i64))
        .filter(Predicate::eq("day", 4i64));
    assert_eq!(
        agreed(&db, "visits", &both),
        vec![record! { "day" => 4i64, "person" => 3i64, "spent" => 249i64 }]
    );
    // One field bound: a range of the key, every day of person 3.
    let one = Query::default().filter(Predicate::eq("person", 3i64));
    assert_eq!(rows(&db, "visits", &one).len(), 10);
    // Two values of a field: two lookups, both found.
    let two = Query::default()
        .filter(Predicate::in_list(
            "person",
            vec![Value::Int(3), Value::Int(4)],
        ))
        .filter(Predicate::eq("day", 4i64));
    assert_eq!(rows(&db, "visits", &two).len(), 2);
}

#[test]
fn a_point_query_counts_what_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut found = db.query("people", &id(7)).unwrap();
    assert!(found.next().is_some());
    assert!(found.next().is_none());
    let stats = found.stats();
    assert_eq!(
        (
            stats.rows_read,
            stats.fetches,
            stats.rows_matched,
            stats.rows_returned
        ),
        (1, 1, 1, 1)
    );
    let mut rejected = db
        .query("people", &id(7).filter(Predicate::eq("town", "town3")))
        .unwrap();
    assert!(rejected.next().is_none());
    let stats = rejected.stats();
    assert_eq!((stats.rows_read, stats.rows_matched), (1, 0));
}

#[test]
fn a_transaction_that_read_a_row_by_key_conflicts_with_a_write_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut tx = db.begin().unwrap();
    let read: Vec<Record> = tx
        .query("people", &id(7))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(read.len(), 1);
    tx.upsert("people", record! { "id" => 1_000i64, "town" => "town0" })
        .unwrap();
    db.upsert("people", record! { "id" => 7i64, "town" => "moved" })
        .unwrap();
    let e: Error = tx.commit().unwrap_err();
    assert!(e.is_retryable(), "{e}");
    // A key it did not read does not conflict.
    let mut tx = db.begin().unwrap();
    assert_eq!(tx.query("people", &id(8)).unwrap().count(), 1);
    tx.upsert("people", record! { "id" => 1_001i64, "town" => "town0" })
        .unwrap();
    db.upsert("people", record! { "id" => 9i64, "town" => "moved" })
        .unwrap();
    tx.commit().unwrap();
}
