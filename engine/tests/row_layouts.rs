//! A table's rows are stored by layout (record version 3, `docs/formats/records.md`): each set
//! of fields is written to the catalog once, before its first row, survives reopening, goes
//! with its table when dropped, and a damaged layout in the catalog is a clear error at open.

use strata::{Db, Options, Predicate, Query, Value, record};

fn rows(db: &Db, query: &Query) -> Vec<strata::Record> {
    let mut rows = db
        .query("t", query)
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    rows.sort_by(|a, b| a.value("id").cmp(b.value("id")));
    rows
}

#[test]
fn each_set_of_fields_is_one_layout_and_rows_read_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    for id in 0..300i64 {
        let mut r = record! { "id" => id, "town" => format!("town{}", id % 7) };
        if id % 3 == 0 {
            r.set("nick", format!("n{id}"));
        }
        if id % 5 == 0 {
            r.set("score", id as f64 / 2.0);
        }
        db.insert("t", r).unwrap();
    }
    // {id, town}, with nick, with score, with both.
    assert_eq!(db.row_layouts("t").unwrap().len(), 4);
    let all = rows(&db, &Query::default());
    let nicks = Query::default().filter(Predicate::eq("nick", Value::from("n30")));
    assert_eq!(rows(&db, &nicks).len(), 1);
    db.flush().unwrap();
    db.close().unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.row_layouts("t").unwrap().len(), 4);
    assert_eq!(rows(&db, &Query::default()), all);
    assert_eq!(rows(&db, &nicks).len(), 1);
    // Known fields add nothing; a new set adds one.
    db.upsert("t", record! { "id" => 1, "town" => "Ely" })
        .unwrap();
    assert_eq!(db.row_layouts("t").unwrap().len(), 4);
    db.upsert("t", record! { "id" => 2, "age" => 40 }).unwrap();
    assert_eq!(db.row_layouts("t").unwrap().len(), 5);
    assert_eq!(
        db.get("t", &[Value::Int(2)]).unwrap(),
        Some(record! { "id" => 2, "age" => 40 })
    );
    assert!(db.verify("t").unwrap().is_clean());
}

#[test]
fn a_dropped_table_takes_its_layouts_and_a_new_one_starts_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.insert("t", record! { "id" => 1, "a" => 1 }).unwrap();
    db.insert("t", record! { "id" => 2, "b" => 1 }).unwrap();
    db.drop_table("t").unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    assert_eq!(db.row_layouts("t").unwrap().len(), 0);
    db.insert("t", record! { "id" => 3, "b" => 2 }).unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.row_layouts("t").unwrap().len(), 1);
    assert_eq!(
        rows(&db, &Query::default()),
        vec![record! { "id" => 3, "b" => 2 }]
    );
    let catalog = db.raw_store().cf("sys/catalog").unwrap();
    let keys: Vec<String> = db
        .raw_store()
        .iter(&catalog, Default::default())
        .unwrap()
        .map(|kv| String::from_utf8(kv.unwrap().0.to_vec()).unwrap())
        .filter(|k| k.starts_with("layout/"))
        .collect();
    assert_eq!(
        keys.len(),
        1,
        "the dropped table's layouts are gone: {keys:?}"
    );
}

#[test]
fn a_damaged_layout_is_an_error_at_open_naming_it() {
    for (key, value) in [
        ("layout/{id}/0", &b"\x02\x06\x01b\x01a"[..]), // names out of order
        ("layout/{id}/2", &b"\x01\x02\x01z"[..]),      // a gap: no layout 1
        ("layout/{id}/x", &b"\x01\x02\x01z"[..]),      // not a number
        ("layout/{id}/01", &b"\x01\x02\x01z"[..]),     // not the shortest form
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.create_table("t", ["id"], strata::TableOptions::default())
            .unwrap();
        db.insert("t", record! { "id" => 1 }).unwrap();
        let id = db.table("t").unwrap().id;
        let catalog = db.raw_store().cf("sys/catalog").unwrap();
        let key = key.replace("{id}", &id.to_string());
        db.raw_store().put(&catalog, key.as_bytes(), value).unwrap();
        db.close().unwrap();
        let error = match Db::open(dir.path(), Options::default()) {
            Ok(_) => panic!("{key}: opened"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains("row layout"), "{key}: {error}");
    }
}
