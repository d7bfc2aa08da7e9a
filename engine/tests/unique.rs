//! Unique indexes and sync global indexes (`docs/transactions.md` §4): duplicates refused in
//! plain writes and transactions, local (checked in every shard) and global, `NULL`s never
//! colliding, values moved within one batch, creation over duplicate data, and a sync global
//! index that is never behind its rows.

use strata::{
    Db, Error, Hint, IndexOptions, Options, Predicate, Projection, Query, Record, TableBatch,
    Value, record,
};

fn open(dir: &std::path::Path) -> Db {
    Db::open(dir, Options::default()).unwrap()
}

fn rows(db: &Db, table: &str, q: &Query) -> Vec<Record> {
    db.query(table, q)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn is_unique_violation(e: &Error) -> bool {
    matches!(e, Error::UniqueViolation { .. }) && !e.is_retryable()
}

fn users(db: &Db, options: IndexOptions) {
    db.create_table("users", ["id"], strata::TableOptions::default().shards(3))
        .unwrap();
    db.create_index("users", "by_email", ["email"], options)
        .unwrap();
}

#[test]
fn a_unique_local_index_refuses_a_duplicate_in_any_shard_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    users(&db, IndexOptions::local().unique());
    for id in 0..30i64 {
        db.insert(
            "users",
            record! { "id" => id, "email" => format!("u{id}@x") },
        )
        .unwrap();
    }
    // Another key (in whichever shard) with a taken value.
    for id in 100..110i64 {
        let e = db
            .insert("users", record! { "id" => id, "email" => "u7@x" })
            .unwrap_err();
        let Error::UniqueViolation {
            table,
            index,
            value,
            key,
        } = &e
        else {
            panic!("not a unique violation: {e}");
        };
        assert!(!e.is_retryable());
        assert_eq!((&**table, &**index), ("users", "by_email"));
        assert_eq!(&**value, &[Value::from("u7@x")], "names the value: {e}");
        assert_eq!(&**key, &[Value::Int(7)], "names the row holding it: {e}");
        assert!(e.to_string().contains("u7@x"), "names the value: {e}");
        assert_eq!(db.get("users", &[Value::Int(id)]).unwrap(), None);
    }
    // An update onto a taken value; a batch whose second row collides writes nothing.
    let e = db
        .upsert("users", record! { "id" => 3, "email" => "u4@x" })
        .unwrap_err();
    assert!(is_unique_violation(&e));
    let mut batch = TableBatch::new();
    batch.insert(record! { "id" => 200, "email" => "fresh@x" });
    batch.insert(record! { "id" => 201, "email" => "u9@x" });
    assert!(is_unique_violation(
        &db.write("users", batch, Default::default()).unwrap_err()
    ));
    assert_eq!(db.get("users", &[Value::Int(200)]).unwrap(), None);
    // Two rows of one batch with one new value.
    let mut batch = TableBatch::new();
    batch.insert(record! { "id" => 300, "email" => "same@x" });
    batch.insert(record! { "id" => 301, "email" => "same@x" });
    assert!(is_unique_violation(
        &db.write("users", batch, Default::default()).unwrap_err()
    ));
    // Rewriting a row with its own value, NULLs, and values moved within one batch are fine.
    db.upsert("users", record! { "id" => 3, "email" => "u3@x", "n" => 1 })
        .unwrap();
    db.insert("users", record! { "id" => 400 }).unwrap();
    db.insert("users", record! { "id" => 401 }).unwrap();
    let mut swap = TableBatch::new();
    swap.upsert(record! { "id" => 1, "email" => "tmp@x" });
    swap.upsert(record! { "id" => 2, "email" => "u1@x" });
    swap.upsert(record! { "id" => 1, "email" => "u2@x" });
    db.write("users", swap, Default::default()).unwrap();
    let mut moved = TableBatch::new();
    moved.delete([Value::Int(5)]);
    moved.insert(record! { "id" => 500, "email" => "u5@x" });
    db.write("users", moved, Default::default()).unwrap();
    assert!(db.verify("users").unwrap().is_clean());
    let q = Query::default()
        .filter(Predicate::eq("email", "u2@x"))
        .hint(Hint::Index("by_email".into()));
    let found = rows(&db, "users", &q);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].value("id"), &Value::Int(1));
}

#[test]
fn transactions_inserting_one_unique_value_let_the_first_win_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    users(&db, IndexOptions::global().sync().unique());
    let mut a = db.begin().unwrap();
    let mut b = db.begin().unwrap();
    a.insert("users", record! { "id" => 1, "email" => "ada@x" })
        .unwrap();
    b.insert("users", record! { "id" => 2, "email" => "ada@x" })
        .unwrap();
    a.commit().unwrap();
    let e = b.commit().unwrap_err();
    assert!(is_unique_violation(&e), "{e}");
    assert_eq!(db.get("users", &[Value::Int(2)]).unwrap(), None);
    // The value freed in a transaction can be taken in the same one.
    let mut tx = db.begin().unwrap();
    tx.delete("users", &[Value::Int(1)]).unwrap();
    tx.insert("users", record! { "id" => 3, "email" => "ada@x" })
        .unwrap();
    tx.commit().unwrap();
    assert!(db.verify("users").unwrap().is_clean());
}

#[test]
fn creating_a_unique_index_over_duplicates_fails_and_names_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .unwrap();
    for id in 0..40i64 {
        db.insert("t", record! { "id" => id, "code" => id % 39 })
            .unwrap();
    }
    let e = db
        .create_index("t", "by_code", ["code"], IndexOptions::local().unique())
        .unwrap_err();
    assert!(
        matches!(&e, Error::UniqueViolation { value, key, .. }
            if **value == [Value::Int(0)]
                && (**key == [Value::Int(0)] || **key == [Value::Int(39)])),
        "names the duplicate and one of its rows: {e:?}"
    );
    assert!(
        e.to_string().contains("value (0)"),
        "names the duplicate: {e}"
    );
    assert!(
        db.table("t").unwrap().indexes.is_empty(),
        "the index is gone"
    );
    db.delete("t", &[Value::Int(39)]).unwrap();
    db.create_index("t", "by_code", ["code"], IndexOptions::local().unique())
        .unwrap();
    assert!(is_unique_violation(
        &db.insert("t", record! { "id" => 99, "code" => 3 })
            .unwrap_err()
    ));
    // The definition survives a reopen, unique.
    db.close().unwrap();
    let db = open(dir.path());
    assert!(db.table("t").unwrap().indexes[0].unique);
    assert!(is_unique_violation(
        &db.insert("t", record! { "id" => 99, "code" => 3 })
            .unwrap_err()
    ));
}

#[test]
fn an_async_unique_index_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .unwrap();
    for options in [
        IndexOptions::global().unique(),
        IndexOptions::local_async().unique(),
    ] {
        let e = db.create_index("t", "u", ["v"], options).unwrap_err();
        assert!(e.to_string().contains("cannot refuse a duplicate"), "{e}");
    }
}

#[test]
fn a_sync_global_index_is_never_behind_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default().shards(4))
        .unwrap();
    db.create_index(
        "t",
        "by_town",
        ["town"],
        IndexOptions::global().sync().projection(Projection::All),
    )
    .unwrap();
    db.pause_indexer();
    for id in 0..200i64 {
        db.upsert(
            "t",
            record! { "id" => id, "town" => format!("town{}", id % 17) },
        )
        .unwrap();
        if id % 50 == 49 {
            // Read through the index at once: the indexer is paused, and nothing is missing.
            let q = Query::default()
                .filter(Predicate::eq("town", "town3"))
                .hint(Hint::Index("by_town".into()));
            let expect = (0..=id).filter(|i| i % 17 == 3).count();
            assert_eq!(rows(&db, "t", &q).len(), expect);
        }
    }
    for id in (0..200i64).step_by(3) {
        db.upsert("t", record! { "id" => id, "town" => "moved" })
            .unwrap();
    }
    assert_eq!(db.index_lag().unwrap().pending_entries, 0, "nothing queued");
    assert!(db.verify("t").unwrap().is_clean());
    db.resume_indexer();
}
