//! A database whose rows and index payloads were written in record version 1 (each name
//! beside its value) reads, queries and verifies as it did, and compaction rewrites it in the
//! current versions (rows by their table's layouts, version 3; index payloads with their names
//! together, then value ends, then values, version 2), which new writes use.

mod common;

use strata::{Db, Options, Predicate, Projection, Query, Record, Value, WriteOptions, record};
use tempfile::TempDir;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `record` in record version 1 (`docs/formats/records.md`), as the previous encoder wrote it.
fn version_1(record: &Record) -> Vec<u8> {
    let mut out = vec![1];
    varint(&mut out, record.len() as u64);
    for (name, value) in record.iter() {
        varint(&mut out, name.len() as u64);
        out.extend(name.as_bytes());
        match value {
            Value::Null => out.push(0),
            Value::Bool(b) => out.push(1 + u8::from(*b)),
            Value::Int(i) => {
                out.push(3);
                varint(&mut out, ((i << 1) ^ (i >> 63)) as u64);
            }
            Value::Float(x) => {
                out.push(4);
                out.extend(x.to_bits().to_le_bytes());
            }
            Value::Str(s) => {
                out.push(5);
                varint(&mut out, s.len() as u64);
                out.extend(s.as_bytes());
            }
            Value::Bytes(b) => {
                out.push(6);
                varint(&mut out, b.len() as u64);
                out.extend(b);
            }
        }
    }
    out
}

/// Rewrites every fact row of table `t` and every payload of index `i/t/by_town` in version 1;
/// returns how many of each.
fn rewrite_as_version_1(db: &Db) -> (usize, usize) {
    let store = db.raw_store();
    let fact = store.cf("t/t").expect("fact family");
    let layouts = db.row_layouts("t").expect("layouts");
    let rows: Vec<(Vec<u8>, Vec<u8>)> = store
        .iter(&fact, Default::default())
        .expect("iter")
        .map(|kv| {
            let (k, v) = kv.expect("row");
            assert_eq!(v[0], 3, "new rows are written by their layout, version 3");
            assert!(
                Record::decode(&v).is_err(),
                "a row needs its table's layouts"
            );
            let old = version_1(&layouts.decode(&v).expect("decode"));
            (k.to_vec(), old)
        })
        .collect();
    for (k, v) in &rows {
        store.put(&fact, k, v).expect("put row");
    }
    let index = store.cf("i/t/by_town").expect("index family");
    let entries: Vec<(Vec<u8>, Vec<u8>)> = store
        .iter(&index, Default::default())
        .expect("iter")
        .map(|kv| {
            let (k, v) = kv.expect("entry");
            // Entry version 1, shard 0 (one byte), then the payload record.
            assert_eq!(&v[..2], &[1, 0]);
            let mut old = v[..2].to_vec();
            old.extend(version_1(&Record::decode(&v[2..]).expect("payload")));
            (k.to_vec(), old)
        })
        .collect();
    for (k, v) in &entries {
        store.put(&index, k, v).expect("put entry");
    }
    (rows.len(), entries.len())
}

/// The record version of every fact row of `t` and every payload of `by_town`.
fn versions(db: &Db) -> (Vec<u8>, Vec<u8>) {
    let store = db.raw_store();
    let first = |cf: &str, at: usize| -> Vec<u8> {
        let cf = store.cf(cf).expect("family");
        store
            .iter(&cf, Default::default())
            .expect("iter")
            .map(|kv| kv.expect("pair").1[at])
            .collect()
    };
    (first("t/t", 0), first("i/t/by_town", 2))
}

fn queries() -> Vec<Query> {
    vec![
        Query::default(),
        Query::default().filter(Predicate::lt("age", Value::Int(30))),
        // Covering: by_town carries age.
        Query::default()
            .filter(Predicate::eq("town", Value::from("Ely")))
            .select(["id", "age"]),
        // Fetches through the keys-only index.
        Query::default()
            .filter(Predicate::eq("age", Value::Int(41)))
            .hint(strata::Hint::Index("by_age".into())),
        // The same with an `OR` the fetched rows are tested on, which some fail.
        {
            let mut q = Query::default()
                .filter(Predicate::in_list("age", [Value::Int(40), Value::Int(41)]))
                .hint(strata::Hint::Index("by_age".into()));
            q.add_condition(strata::Condition::any([
                Predicate::is_not_null("nick"),
                Predicate::gt("score", 10.0),
            ]));
            q
        },
        Query::default().filter(Predicate::is_null("nick")),
    ]
}

/// Each query's rows, by primary key (a query without `ORDER BY` may answer in any order, and
/// the plan may change with the statistics).
fn answers(db: &Db) -> Vec<Vec<Record>> {
    let by_next = common::tables::answers_by_id(db, "t", &queries());
    // The rows `next_ref` lends are the same (version-1 rows are built where the current
    // ones are lent from their stored bytes).
    for (query, expected) in queries().iter().zip(&by_next) {
        let mut rows = db.query("t", query).expect("query");
        let mut lent = Vec::new();
        while let Some(row) = rows.next_ref().expect("a row") {
            lent.push(row.to_record().expect("its values"));
        }
        lent.sort_by(|a, b| a.value("id").cmp(b.value("id")));
        assert_eq!(&lent, expected, "{query:?}");
    }
    by_next
}

#[test]
fn a_database_of_version_1_records_reads_queries_and_verifies_as_before() {
    let dir = TempDir::new().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index(
        "t",
        "by_town",
        ["town"],
        Projection::Include(vec!["age".into()]),
    )
    .unwrap();
    db.create_index("t", "by_age", ["age"], Projection::KeysOnly)
        .unwrap();
    let towns = ["Ely", "Hull", "Bath"];
    for id in 0..60i64 {
        let mut r = record! { "id" => id, "town" => towns[id as usize % 3], "age" => 20 + id % 25 };
        if id % 4 == 0 {
            r.set("nick", format!("n{id}"));
        }
        if id % 5 == 0 {
            r.set("score", id as f64 / 3.0);
        }
        db.insert("t", r).unwrap();
    }
    let before = answers(&db);
    assert!(before.iter().all(|rows| !rows.is_empty()));
    assert!(db.verify("t").unwrap().is_clean());

    let (rows, entries) = rewrite_as_version_1(&db);
    assert_eq!((rows, entries), (60, 60));
    assert_eq!(
        answers(&db),
        before,
        "version-1 rows answer as version-2 rows did"
    );
    // The payloads of by_town are version 1 and those derived from the rows version 2: the
    // same fields, so not stale.
    let report = db.verify("t").unwrap();
    assert!(report.is_clean(), "{report:?}");

    // Through table files too, and after reopening.
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(answers(&db), before);
    assert!(db.verify("t").unwrap().is_clean());
    assert_eq!(versions(&db), (vec![1; 60], vec![1; 60]));

    // Compaction rewrites rows by their layouts and payloads in version 2.
    db.compact("t").unwrap();
    assert_eq!(versions(&db), (vec![3; 60], vec![2; 60]));
    assert_eq!(answers(&db), before);
    assert!(db.verify("t").unwrap().is_clean());

    // A row written again is written by its layout, and reads the same.
    let mut r = db.get("t", &[Value::Int(7)]).unwrap().expect("row 7");
    r.set("age", 99);
    db.upsert("t", r.clone()).unwrap();
    db.write("t", strata::TableBatch::new(), WriteOptions::synced())
        .unwrap();
    assert_eq!(db.get("t", &[Value::Int(7)]).unwrap(), Some(r));
    assert!(db.verify("t").unwrap().is_clean());
}

/// Rows of version 1 among those of a walk of the fact family (an index whose values follow
/// the key): `for_each_ref` lends the current rows where the walk finds them, and the rows of
/// a batch from the first old one on are read as `next` reads them, in its order.
#[test]
fn old_rows_in_a_walk_are_read_in_turn_with_the_rows_lent_where_they_lie() {
    let dir = TempDir::new().unwrap();
    let options = Options {
        auto_analyze: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    db.create_table("c", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("c", "by_day", ["day"], Projection::KeysOnly)
        .unwrap();
    for id in 0..3000i64 {
        let mut r = record! { "id" => id, "day" => id / 20 };
        if id % 4 == 0 {
            r.set("nick", format!("n{id}"));
        }
        db.insert("c", r).unwrap();
    }
    db.flush().unwrap();
    db.analyze("c").unwrap();
    // Every 23rd row rewritten in version 1.
    let store = db.raw_store();
    let fact = store.cf("t/c").expect("fact family");
    let layouts = db.row_layouts("c").expect("layouts");
    let old: Vec<(Vec<u8>, Vec<u8>)> = store
        .iter(&fact, Default::default())
        .expect("iter")
        .enumerate()
        .filter(|(i, _)| i % 23 == 5)
        .map(|(_, kv)| {
            let (k, v) = kv.expect("row");
            (k.to_vec(), version_1(&layouts.decode(&v).expect("decode")))
        })
        .collect();
    assert!(old.len() > 100);
    for (k, v) in &old {
        store.put(&fact, k, v).expect("put row");
    }
    let by_day = || strata::Hint::Index("by_day".into());
    for query in [
        Query::default().filter(Predicate::eq("day", 40)),
        Query::default()
            .filter(Predicate::between("day", 10, 60))
            .hint(by_day()),
        Query::default()
            .filter(Predicate::ge("day", 30))
            .hint(by_day()),
        Query::default()
            .filter(Predicate::ge("day", 30))
            .hint(by_day())
            .limit(77),
    ] {
        let mut rows = db.query("c", &query).expect("query");
        let expected: Vec<Record> = rows.by_ref().collect::<Result<_, _>>().expect("rows");
        assert!(
            rows.stats().fetches_merged > 0,
            "{query:?}: fetched as a walk"
        );
        let mut rows = db.query("c", &query).expect("query");
        let (mut lent, mut built) = (Vec::new(), 0);
        rows.for_each_ref(|row| -> Result<(), strata::Error> {
            built += usize::from(row.as_record().is_some());
            lent.push(row.to_record()?);
            Ok(())
        })
        .expect("rows");
        assert_eq!(lent, expected, "{query:?}");
        assert!(built > 0, "{query:?}: the old rows are built");
        assert!(
            built < lent.len(),
            "{query:?}: the current rows are lent where they lie"
        );
    }
}
