//! A table keeps the key format it was created with: one of key format 1 (numbers as 10-byte
//! `f64`s, every table before key format 2) reads, writes, queries and verifies beside a new
//! table of key format 2 (compact numbers), and both answer alike.

mod common;

use strata::{Db, Options, Predicate, Query, Record, StoreOptions, Value, record};

/// Rows with integer keys of every size and sign, and indexed integers and floats.
fn rows() -> Vec<Record> {
    (0..400i64)
        .map(|i| {
            let id = match i % 4 {
                0 => i,
                1 => -i * 1_000_003,
                2 => i << 40,
                _ => i64::MAX - i,
            };
            record! {
                "id" => id,
                "age" => i % 37 - 5,
                "score" => (i as f64) / 8.0 - 10.0,
                "town" => ["Ely", "Rye", "Wem"][(i % 3) as usize],
            }
        })
        .collect()
}

fn fill(db: &Db, table: &str) {
    for ix in ["age", "score"] {
        db.create_index(
            table,
            &format!("by_{ix}"),
            [ix],
            strata::Projection::KeysOnly,
        )
        .expect("index");
    }
    for r in rows() {
        db.insert(table, r).expect("insert");
    }
    db.analyze(table).expect("analyze");
}

fn queries() -> Vec<Query> {
    vec![
        Query::default(),
        Query::default().filter(Predicate::eq("age", Value::Int(-3))),
        Query::default().filter(Predicate::between("age", Value::Int(-2), Value::Int(4))),
        Query::default().filter(Predicate::gt("score", Value::Float(30.5))),
        Query::default().filter(Predicate::lt("score", Value::Int(-9))),
        Query::default().filter(Predicate::gt("id", Value::Int(1 << 50))),
        Query::default().filter(Predicate::lt("id", Value::Int(-100_000_000))),
        Query::default().filter(Predicate::eq("id", Value::Int(-5_000_015))),
    ]
}

fn answers(db: &Db, table: &str) -> Vec<Vec<Record>> {
    common::tables::answers_by_id(db, table, &queries())
}

/// The first byte of every key of family `cf`.
fn tags(db: &Db, cf: &str) -> Vec<u8> {
    common::scan(db.raw_store(), cf)
        .keys()
        .map(|k| k[0])
        .collect()
}

#[test]
fn a_table_of_key_format_1_works_beside_one_of_key_format_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    db.create_table("old", ["id"], strata::TableOptions::default())
        .expect("create");
    db.close().expect("close");
    // Rewrite the empty table's definition as a build before key format 2 wrote it.
    {
        let store = strata::Store::open(dir.path(), StoreOptions::default()).expect("store");
        let catalog = store.cf("sys/catalog").expect("catalog");
        let def = store
            .get(&catalog, b"table/old")
            .expect("read")
            .expect("def");
        let text = String::from_utf8(def.to_vec()).expect("JSON");
        assert!(
            text.contains("\"format\":3") && text.contains(",\"keys\":2"),
            "{text}"
        );
        let old = text
            .replacen("\"format\":3", "\"format\":1", 1)
            .replacen(",\"keys\":2", "", 1);
        store
            .put(&catalog, b"table/old", old.as_bytes())
            .expect("write");
        store.close().expect("close");
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    db.create_table("new", ["id"], strata::TableOptions::default())
        .expect("create");
    fill(&db, "old");
    fill(&db, "new");
    assert_eq!(answers(&db, "old"), answers(&db, "new"));
    let expected = answers(&db, "new");
    assert_eq!(expected[0].len(), 400);
    assert!(
        expected[1..].iter().all(|rows| !rows.is_empty()),
        "every query finds rows"
    );

    // The old table's numbers are 10-byte `f64`s (tag 0x20), the new one's compact (below).
    assert!(tags(&db, "t/old").iter().all(|&t| t == 0x20));
    assert!(
        tags(&db, "t/new")
            .iter()
            .all(|&t| (0x12..=0x1e).contains(&t))
    );
    assert!(tags(&db, "i/old/by_age").iter().all(|&t| t == 0x20));
    assert!(
        tags(&db, "i/new/by_score")
            .iter()
            .all(|&t| (0x12..=0x1e).contains(&t))
    );
    // A keys-only entry of a new table has no value; an old table's keeps its head `01 00`.
    let values =
        |cf: &str| -> Vec<Vec<u8>> { common::scan(db.raw_store(), cf).into_values().collect() };
    assert!(values("i/new/by_age").iter().all(Vec::is_empty));
    assert!(values("i/old/by_age").iter().all(|v| v == &[1, 0]));
    let size = |cf: &str| -> usize { common::scan(db.raw_store(), cf).keys().map(Vec::len).sum() };
    // Ids of 1 to 3 significant bytes take 3 to 6 bytes instead of 10; those near i64::MAX 11
    // instead of 12.
    let (new, old) = (size("t/new"), size("t/old"));
    assert!(
        new * 10 < old * 7,
        "compact keys: {new} bytes, f64 keys: {old}"
    );

    for table in ["old", "new"] {
        assert!(db.verify(table).expect("verify").is_clean(), "{table}");
        let key = [Value::Int(i64::MAX - 3)];
        assert_eq!(
            db.get(table, &key).expect("get").expect("row").value("age"),
            &Value::Int(-2)
        );
        db.delete(table, &key).expect("delete");
        assert!(db.get(table, &key).expect("get").is_none());
    }
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    assert_eq!(answers(&db, "old"), answers(&db, "new"));
    assert_eq!(answers(&db, "old")[0].len(), 399);
    db.compact("old").expect("compact");
    assert_eq!(answers(&db, "old"), answers(&db, "new"));
    assert!(db.verify("old").expect("verify").is_clean());
}
