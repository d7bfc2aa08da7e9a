//! Bad input, as a table of cases: each gets a clear error and loses nothing. The cases are
//! wrong value types, missing or NULL key fields, oversized keys, records and batches,
//! invalid names, unknown tables and indexes, and a directory that is locked, read-only,
//! full or from a newer format. Every file of a database truncated or bit-flipped is
//! `damaged_files.rs`.
//!
//! "Loses nothing": after each refused call the database holds exactly what it held before,
//! rows and definitions, and still accepts a good write. Malformed CSV, JSON lines and
//! `--where` expressions are the command's (`cli/tests/command.rs`).

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::tables::{fill_two_tables, snapshot};
use strata::fs::SimFs;
use strata::table::format::{MAX_PRIMARY_KEY_BYTES, MAX_RECORD_BYTES};
use strata::{
    CatalogCorruption, Db, Error, Hint, IndexOptions, Options, Predicate, Projection, Query,
    Record, Store, StoreOptions, TableBatch, Value, WriteOptions, record,
};

fn big(bytes: usize) -> String {
    "x".repeat(bytes)
}

type Case = (
    &'static str,
    Box<dyn Fn(&Db) -> strata::Result<()>>,
    &'static str,
);

fn cases() -> Vec<Case> {
    let t = "t";
    let mut many = Record::new();
    many.set("id", 1000);
    for i in 0..1100 {
        many.set(format!("f{i}"), i);
    }
    vec![
        (
            "a float key",
            Box::new(move |db| db.insert(t, record! { "id" => 1.5 })),
            "is a float",
        ),
        (
            "a missing key field",
            Box::new(move |db| db.insert(t, record! { "g" => 1 })),
            "missing or NULL",
        ),
        (
            "a NULL key field",
            Box::new(move |db| db.insert(t, record! { "id" => Value::Null, "g" => 1 })),
            "missing or NULL",
        ),
        (
            "half a composite key",
            Box::new(|db| db.insert("c", record! { "a" => 9 })),
            "\"b\"",
        ),
        (
            "a key of the wrong arity",
            Box::new(|db| db.get("c", &[Value::Int(1)]).map(drop)),
            "primary key of 2 fields",
        ),
        (
            "a delete by a float key",
            Box::new(move |db| db.delete(t, &[Value::Float(1.0)])),
            "is a float",
        ),
        (
            "an oversized primary key",
            Box::new(move |db| db.insert(t, record! { "id" => big(MAX_PRIMARY_KEY_BYTES) })),
            "primary key of",
        ),
        (
            "an oversized record",
            Box::new(move |db| {
                db.insert(t, record! { "id" => 1000, "pad" => big(MAX_RECORD_BYTES) })
            }),
            "record of",
        ),
        (
            "an oversized index key",
            Box::new(move |db| db.insert(t, record! { "id" => 1000, "g" => big(20 << 10) })),
            "index key",
        ),
        (
            "an oversized batch",
            Box::new(move |db| {
                let mut batch = TableBatch::new();
                for id in 0..20i64 {
                    batch.insert(
                        record! { "id" => 1000 + id, "pad" => big(MAX_RECORD_BYTES - 100) },
                    );
                }
                db.write(t, batch, WriteOptions::default())
            }),
            "batch",
        ),
        (
            "too many fields",
            Box::new(move |db| db.insert(t, many.clone())),
            "fields",
        ),
        (
            "an empty field name",
            Box::new(move |db| db.insert(t, record! { "id" => 1000, "" => 1 })),
            "field name",
        ),
        (
            "a field name with a control character",
            Box::new(move |db| db.insert(t, record! { "id" => 1000, "a\nb" => 1 })),
            "field name",
        ),
        (
            "a duplicate insert",
            Box::new(move |db| db.insert(t, record! { "id" => 3 })),
            "has a row with key",
        ),
        (
            "a batch whose last row is bad writes none of it",
            Box::new(move |db| {
                let mut batch = TableBatch::new();
                batch.insert(record! { "id" => 1000 });
                batch.upsert(record! { "id" => 1, "g" => 99 });
                batch.delete([Value::Int(2)]);
                batch.insert(record! { "id" => 2.5 });
                db.write(t, batch, WriteOptions::synced())
            }),
            "is a float",
        ),
        (
            "a table name starting with a digit",
            Box::new(|db| db.create_table("9lives", ["id"], strata::TableOptions::default())),
            "must be 1 to 64",
        ),
        (
            "a table name with a dash",
            Box::new(|db| db.create_table("a-b", ["id"], strata::TableOptions::default())),
            "must be 1 to 64",
        ),
        (
            "an empty table name",
            Box::new(|db| db.create_table("", ["id"], strata::TableOptions::default())),
            "must be 1 to 64",
        ),
        (
            "a 65-byte table name",
            Box::new(|db| {
                db.create_table(&"a".repeat(65), ["id"], strata::TableOptions::default())
            }),
            "must be 1 to 64",
        ),
        (
            "a table that exists",
            Box::new(|db| db.create_table("t", ["id"], strata::TableOptions::default())),
            "exists",
        ),
        (
            "a key of 17 fields",
            Box::new(|db| {
                let fields: Vec<String> = (0..17).map(|i| format!("k{i}")).collect();
                let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
                db.create_table("wide", &fields, strata::TableOptions::default())
            }),
            "1 to 16 fields",
        ),
        (
            "no key fields",
            Box::new(|db| db.create_table("nokey", [], strata::TableOptions::default())),
            "1 to 16 fields",
        ),
        (
            "0 shards",
            Box::new(|db| db.create_table("s", ["id"], strata::TableOptions::default().shards(0))),
            "shards",
        ),
        (
            "257 shards",
            Box::new(|db| {
                db.create_table("s", ["id"], strata::TableOptions::default().shards(257))
            }),
            "shards",
        ),
        (
            "an index on an unknown table",
            Box::new(|db| db.create_index("nope", "i", ["x"], Projection::KeysOnly)),
            "not found",
        ),
        (
            "an index name that exists",
            Box::new(move |db| db.create_index(t, "by_g", ["name"], Projection::KeysOnly)),
            "exists",
        ),
        (
            "an invalid index name",
            Box::new(move |db| db.create_index(t, "by g", ["name"], Projection::KeysOnly)),
            "must be 1 to 64",
        ),
        (
            "a unique async index",
            Box::new(|db| {
                db.create_table("s2", ["id"], strata::TableOptions::default().shards(2))?;
                let unique_async = IndexOptions::global().unique();
                let outcome = db.create_index("s2", "g", ["g"], unique_async);
                db.drop_table("s2")?;
                outcome
            }),
            "cannot refuse a duplicate",
        ),
        (
            "dropping an unknown index",
            Box::new(move |db| db.drop_index(t, "nope")),
            "not found",
        ),
        (
            "dropping an unknown table",
            Box::new(|db| db.drop_table("nope")),
            "not found",
        ),
        (
            "a write to an unknown table",
            Box::new(|db| db.insert("nope", record! { "id" => 1 })),
            "not found",
        ),
        (
            "a query of an unknown table",
            Box::new(|db| db.query("nope", &Query::default()).map(drop)),
            "not found",
        ),
        (
            "a hint naming an unknown index",
            Box::new(move |db| {
                let q = Query::default()
                    .filter(Predicate::eq("g", 1))
                    .hint(Hint::Index("nope".into()));
                db.query(t, &q).map(drop)
            }),
            "no index named",
        ),
        (
            "analyze of an unknown table",
            Box::new(|db| db.analyze("nope").map(drop)),
            "not found",
        ),
        (
            "verify of an unknown table",
            Box::new(|db| db.verify("nope").map(drop)),
            "not found",
        ),
    ]
}

#[test]
fn each_bad_call_is_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    fill_two_tables(&db);
    let before = snapshot(&db);
    for (name, call, expected) in cases() {
        match call(&db) {
            Ok(()) => panic!("{name}: accepted"),
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(expected),
                    "{name}: {message:?} does not say {expected:?}"
                );
                assert!(!message.contains('\n'), "{name}: not one line: {message}");
            }
        }
        assert_eq!(snapshot(&db), before, "{name}: the database changed");
    }
    // And it still takes a good write, and survives a reopen whole.
    db.insert("t", record! { "id" => 1000, "g" => 1 })
        .expect("a good write after the bad ones");
    db.close().expect("close");
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let mut after = snapshot(&db);
    let (_, rows) = after.get_mut("t").expect("t");
    rows.retain(|r| r.value("id") != &Value::Int(1000));
    assert_eq!(after, before, "after a reopen");
    assert!(db.verify("t").expect("verify").is_clean());
    db.close().expect("close");
}

#[test]
fn a_locked_directory_is_refused_while_its_owner_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    fill_two_tables(&db);
    let before = snapshot(&db);
    let second = Db::open(dir.path(), Options::default());
    let Err(e) = second else {
        panic!("a second open of a directory in use succeeded")
    };
    assert!(
        matches!(e, Error::Store(strata::lsm::Error::Conflict(_))),
        "{e:?}"
    );
    assert_eq!(snapshot(&db), before);
    db.close().expect("close");
}

fn sim(fs: &SimFs) -> Options {
    Options::from(StoreOptions {
        fs: Arc::new(fs.clone()),
        write_buffer_bytes: 16 << 10,
        ..StoreOptions::default()
    })
}

#[test]
fn a_read_only_directory_is_refused_and_left_as_it_was() {
    let fs = SimFs::new();
    let db = Db::open("/db", sim(&fs)).expect("open");
    fill_two_tables(&db);
    let before = snapshot(&db);
    db.close().expect("close");
    fs.set_read_only(true);
    let Err(e) = Db::open("/db", sim(&fs)) else {
        panic!("a read-only directory opened for writing")
    };
    let read_only = e
        .io_error()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::ReadOnlyFilesystem);
    assert!(read_only, "{e:?}");
    fs.set_read_only(false);
    let db = Db::open("/db", sim(&fs)).expect("reopen once writable");
    assert_eq!(snapshot(&db), before);
    db.close().expect("close");
}

#[test]
fn a_full_disk_fails_writes_and_loses_no_acknowledged_one() {
    let fs = SimFs::new();
    let db = Db::open("/db", sim(&fs)).expect("open");
    fill_two_tables(&db);
    let mut acknowledged = snapshot(&db)["t"].1.len();
    // Room for a little more, then none: the writes must start failing.
    fs.set_capacity(Some(fs_used(&fs) + (64 << 10)));
    let mut failure = None;
    for id in 100..5000i64 {
        match db.insert(
            "t",
            record! { "id" => id, "g" => id % 4, "pad" => big(200) },
        ) {
            Ok(()) => acknowledged += 1,
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let failure = failure.expect("a full disk fails a write");
    let text = failure.to_string();
    assert!(
        failure
            .io_error()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::StorageFull)
            || failure.is_read_only(),
        "{text}"
    );
    // A later write is refused too (the store stops writing after a failed one).
    let later = db.insert("t", record! { "id" => 9999 });
    assert!(later.as_ref().is_err_and(Error::is_read_only), "{later:?}");
    drop(db);
    fs.set_capacity(None);
    let db = Db::open("/db", sim(&fs)).expect("reopen with room");
    let rows = snapshot(&db)["t"].1.len();
    assert!(
        rows >= acknowledged,
        "{rows} rows after the reopen, {acknowledged} acknowledged"
    );
    assert!(db.verify("t").expect("verify").is_clean());
    db.insert("t", record! { "id" => 9999 })
        .expect("writes again once there is room");
    db.close().expect("close");
}

fn fs_used(fs: &SimFs) -> u64 {
    let mut total = 0;
    let mut dirs = vec![PathBuf::from("/db")];
    while let Some(dir) = dirs.pop() {
        for name in strata::fs::FileSystem::list(fs, &dir).unwrap_or_default() {
            let path = dir.join(&name);
            match fs.contents(&path) {
                Some(bytes) => total += bytes.len() as u64,
                None => dirs.push(path),
            }
        }
    }
    total
}

#[test]
fn a_catalog_from_a_newer_version_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    fill_two_tables(&db);
    let before = snapshot(&db);
    db.close().expect("close");
    // Rewrite table t's definition as a newer build would have written it.
    let original = {
        let store = Store::open(dir.path(), StoreOptions::default()).expect("store");
        let catalog = store.cf("sys/catalog").expect("catalog");
        let original = store
            .get(&catalog, b"table/t")
            .expect("read")
            .expect("t's definition");
        let text = String::from_utf8(original.to_vec()).expect("JSON");
        let newer = text.replacen("\"format\":3", "\"format\":6", 1);
        assert_ne!(newer, text, "the definition names its format");
        store
            .put(&catalog, b"table/t", newer.as_bytes())
            .expect("write");
        store.close().expect("close");
        original
    };
    let Err(e) = Db::open(dir.path(), Options::default()) else {
        panic!("a catalog from a newer version opened")
    };
    assert!(
        matches!(
            &e,
            Error::Corruption {
                what: strata::Corruption::Catalog(CatalogCorruption::NewerFormat { found: 6, .. }),
                ..
            }
        ),
        "{e:?}"
    );
    {
        let store = Store::open(dir.path(), StoreOptions::default()).expect("store");
        let catalog = store.cf("sys/catalog").expect("catalog");
        store.put(&catalog, b"table/t", &original).expect("restore");
        store.close().expect("close");
    }
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    assert_eq!(snapshot(&db), before, "nothing was lost");
    db.close().expect("close");
}
