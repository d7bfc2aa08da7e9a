//! Owned handles: a query or a transaction over a database shared behind an `Arc` holds the
//! `Arc`, not a borrow, so it is `'static` and `Send` — it moves into another thread (or an
//! async task) and keeps the database open while it lives.

use std::sync::Arc;

use strata::{
    Db, Options, OwnedRows, OwnedTransaction, Predicate, Projection, Query, Value, record,
};

/// Compiles only for types that can move into a spawned thread or a `'static` stream.
fn sendable<T: Send + 'static>() {}

#[test]
fn owned_rows_and_transactions_are_send_and_static() {
    sendable::<OwnedRows>();
    sendable::<OwnedTransaction>();
    sendable::<Arc<Db>>();
}

fn customers(dir: &std::path::Path) -> Arc<Db> {
    let db = Db::open(dir, Options::default()).unwrap();
    db.create_table("customers", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("customers", "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    for id in 0..100i64 {
        let town = if id % 4 == 0 { "Ely" } else { "Wick" };
        db.insert("customers", record! { "id" => id, "town" => town })
            .unwrap();
    }
    Arc::new(db)
}

#[test]
fn an_owned_query_runs_in_another_thread_and_outlives_the_callers_handle() {
    let dir = tempfile::tempdir().unwrap();
    let db = customers(dir.path());
    let ely = Query::default().filter(Predicate::eq("town", "Ely"));
    let rows = db.query_owned("customers", &ely).unwrap();
    // The caller's handle goes; the rows keep the database open.
    drop(db);
    let ids = std::thread::spawn(move || {
        rows.map(|r| r.unwrap().value("id").as_i64().unwrap())
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    assert_eq!(ids, (0..100).step_by(4).collect::<Vec<i64>>());
}

#[test]
fn an_owned_transaction_commits_from_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = customers(dir.path());
    let mut tx = db.begin_owned().unwrap();
    let committed = std::thread::spawn(move || {
        let row = tx.get("customers", &[Value::Int(1)]).unwrap().unwrap();
        assert_eq!(row.value("town").as_str(), Some("Wick"));
        tx.upsert("customers", record! { "id" => 1, "town" => "Ely" })
            .unwrap();
        tx.insert("customers", record! { "id" => 500, "town" => "Ely" })
            .unwrap();
        // Its own writes are in its reads, named and counted.
        let mut rows = tx
            .query(
                "customers",
                &Query::default().filter(Predicate::eq("town", "Ely")),
            )
            .unwrap();
        let seen = rows.by_ref().count();
        assert_eq!(seen, 27, "25 stored, one moved in, one inserted");
        assert!(rows.stats().rows_read >= 25, "{:?}", rows.stats());
        drop(rows);
        tx.commit()
    })
    .join()
    .unwrap();
    committed.unwrap();
    let row = db.get("customers", &[Value::Int(500)]).unwrap().unwrap();
    assert_eq!(row.value("town").as_str(), Some("Ely"));
}

#[test]
fn a_transactions_rows_without_own_writes_report_their_reading() {
    let dir = tempfile::tempdir().unwrap();
    let db = customers(dir.path());
    let mut tx = db.begin().unwrap();
    let mut rows = tx
        .query(
            "customers",
            &Query::default().filter(Predicate::eq("town", "Wick")),
        )
        .unwrap();
    assert_eq!(rows.by_ref().count(), 75);
    assert_eq!(rows.stats().rows_returned, 75);
}
