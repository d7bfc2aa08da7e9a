//! The names the table layer had before its options became arguments still compile and do
//! what they did, for one release (README, "Changes"): `create_sharded_table` and
//! `create_index_with`. Code written against them gets a deprecation warning naming the new
//! call.

#![allow(deprecated)]

use strata::{Db, IndexOptions, Options, Predicate, Projection, Query, record};

#[test]
fn the_deprecated_names_create_what_the_new_calls_create() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_sharded_table("t", &["id"], 3).unwrap();
    db.create_index_with(
        "t",
        "by_town",
        &["town"],
        Projection::Include(vec!["name".into()]),
        IndexOptions::local(),
    )
    .unwrap();
    let def = db.table("t").unwrap();
    assert_eq!(def.shards, 3);
    let index = &def.indexes[0];
    assert_eq!(index.projection, Projection::Include(vec!["name".into()]));
    db.insert("t", record! { "id" => 1, "town" => "Ely", "name" => "Ada" })
        .unwrap();
    let ely = Query::default()
        .filter(Predicate::eq("town", "Ely"))
        .select(["name"]);
    let names: Vec<String> = db
        .query("t", &ely)
        .unwrap()
        .map(|r| r.unwrap().value("name").to_string())
        .collect();
    assert_eq!(names, ["Ada"]);
}

/// `TableBatch::delete` takes a key as `&[Value]` (or an array) like every other key
/// argument, and still the `Vec<Value>` it once took.
#[test]
fn a_batch_delete_takes_the_key_as_a_slice_or_as_the_old_vec() {
    use strata::{TableBatch, TableOptions, Value, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], TableOptions::default())
        .unwrap();
    for id in 1..=3 {
        db.insert("t", record! { "id" => id }).unwrap();
    }
    let key: &[Value] = &[Value::Int(1)];
    let mut batch = TableBatch::new();
    batch.delete(key).delete(vec![Value::Int(2)]);
    db.write("t", batch, WriteOptions::default()).unwrap();
    assert_eq!(db.get("t", &[Value::Int(1)]).unwrap(), None);
    assert_eq!(db.get("t", &[Value::Int(2)]).unwrap(), None);
    assert!(db.get("t", &[Value::Int(3)]).unwrap().is_some());
}

/// The store's types kept their old paths at the crate root as deprecated aliases, and
/// `Db::store` its old name: code written against them compiles and reaches the same thing.
#[test]
fn the_store_types_old_root_paths_and_db_store_still_compile() {
    use strata::TableOptions;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], TableOptions::default())
        .unwrap();
    let old: &strata::Store = db.store();
    let new: &strata::lsm::Store = db.raw_store();
    assert!(std::ptr::eq(old, new));
    let batch: strata::WriteBatch = strata::lsm::WriteBatch::new();
    assert!(batch.is_empty());
    let _: strata::ReadOptions = strata::lsm::ReadOptions::default();
    let snapshot: strata::Snapshot = db.raw_store().snapshot();
    assert_eq!(snapshot.seqno(), db.raw_store().snapshot().seqno());
    assert_eq!(strata::MAX_KEY_BYTES, strata::lsm::MAX_KEY_BYTES);
    assert_eq!(strata::MAX_VALUE_BYTES, strata::lsm::MAX_VALUE_BYTES);
    assert_eq!(strata::MAX_BATCH_BYTES, strata::lsm::MAX_BATCH_BYTES);
}
