//! The table layer: records and keys through the API, the catalog across reopen, write
//! errors that write nothing, projections, backfill under concurrent writes, verify/repair.

use std::sync::atomic::{AtomicBool, Ordering};

use strata::table::catalog::index_cf;
use strata::table::format::MAX_RECORD_BYTES;
use strata::{
    Db, Error, Hint, IndexState, Options, Predicate, ProblemKind, Projection, Query, Record,
    TableBatch, Value, WriteOptions, record,
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

fn customers(db: &Db) {
    db.create_table("customers", ["id"], strata::TableOptions::default())
        .unwrap();
    for (id, first, last, town) in [
        (1, "Ada", "Lovelace", "Redmond"),
        (2, "Bob", "Smith", "Seattle"),
        (3, "Cy", "Jones", "Redmond"),
        (4, "Di", "Smith", "Redmond"),
        (5, "Ed", "Brown", "Bellevue"),
    ] {
        db.insert(
            "customers",
            record! { "id" => id, "first" => first, "last" => last, "town" => town },
        )
        .unwrap();
    }
}

#[test]
fn rows_are_written_read_replaced_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    customers(&db);
    let got = db.get("customers", &[Value::Int(3)]).unwrap().unwrap();
    assert_eq!(got.get("last"), Some(&"Jones".into()));

    db.upsert(
        "customers",
        record! { "id" => 3, "last" => "Jonas", "town" => "Seattle" },
    )
    .unwrap();
    let got = db.get("customers", &[Value::Int(3)]).unwrap().unwrap();
    assert_eq!(
        got.get("first"),
        None,
        "an upsert replaces the whole record"
    );
    assert_eq!(got.get("town"), Some(&"Seattle".into()));

    db.delete("customers", &[Value::Int(3)]).unwrap();
    assert_eq!(db.get("customers", &[Value::Int(3)]).unwrap(), None);
    db.delete("customers", &[Value::Int(3)]).unwrap(); // deleting a missing row is fine

    // A NULL field is the same as a missing one.
    db.upsert("customers", record! { "id" => 9, "town" => Value::Null })
        .unwrap();
    assert_eq!(
        db.get("customers", &[Value::Int(9)])
            .unwrap()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn bad_writes_are_clear_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table(
        "orders",
        ["customer", "number"],
        strata::TableOptions::default(),
    )
    .unwrap();
    db.create_index("orders", "by_item", ["item"], Projection::All)
        .unwrap();
    db.insert(
        "orders",
        record! { "customer" => "a", "number" => 1, "item" => "pen" },
    )
    .unwrap();
    let before = db.verify("orders").unwrap();

    let cases: Vec<(Record, &str)> = vec![
        (record! { "customer" => "a", "item" => "ink" }, "missing"),
        (
            record! { "customer" => "a", "number" => Value::Null },
            "missing or NULL",
        ),
        (record! { "customer" => "a", "number" => 1.5 }, "float"),
        (
            record! { "customer" => "a", "number" => 1, "item" => "dup" },
            "has a row",
        ),
        (
            record! { "customer" => "a", "number" => 2, "" => 1 },
            "field name",
        ),
    ];
    for (r, what) in cases {
        let e = db.insert("orders", r.clone()).unwrap_err();
        assert!(e.to_string().contains(what), "{r}: {e}");
    }
    let huge = record! { "customer" => "a", "number" => 3, "blob" => vec![0u8; MAX_RECORD_BYTES] };
    assert!(matches!(
        db.insert("orders", huge),
        Err(Error::TooLarge { what: "record", .. })
    ));
    let long_key = record! { "customer" => "x".repeat(5000), "number" => 1 };
    assert!(matches!(
        db.insert("orders", long_key),
        Err(Error::TooLarge { .. })
    ));
    assert!(matches!(
        db.get("orders", &[Value::from("a")]),
        Err(Error::InvalidArgument(_))
    ));

    // A batch with one bad row writes none of its rows.
    let mut batch = TableBatch::new();
    batch
        .insert(record! { "customer" => "b", "number" => 1, "item" => "cup" })
        .insert(record! { "customer" => "a", "number" => 1 });
    assert!(matches!(
        db.write("orders", batch, WriteOptions::default()),
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        db.get("orders", &[Value::from("b"), Value::Int(1)])
            .unwrap(),
        None
    );
    assert_eq!(db.verify("orders").unwrap(), before);

    // Unknown names and bad names.
    assert!(matches!(
        db.insert("nope", record! { "id" => 1 }),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        db.drop_index("orders", "nope"),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        db.create_table("orders", ["id"], strata::TableOptions::default()),
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        db.create_index("orders", "by_item", ["x"], Projection::KeysOnly),
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        db.create_table("bad name", ["id"], strata::TableOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.create_table("t", [], strata::TableOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.create_table("t", ["a", "a"], strata::TableOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    let hinted = Query::default().hint(Hint::Index("nope".into()));
    assert!(matches!(
        db.query("orders", &hinted),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_batch_applies_its_mutations_in_order_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_v", ["v"], Projection::KeysOnly)
        .unwrap();
    let mut batch = TableBatch::new();
    batch
        .insert(record! { "id" => 1, "v" => "a" })
        .upsert(record! { "id" => 1, "v" => "b" })
        .insert(record! { "id" => 2, "v" => "b" })
        .delete([Value::Int(2)])
        .insert(record! { "id" => 2, "v" => "c" });
    db.write("t", batch, WriteOptions::synced()).unwrap();
    let q = |v: &str| {
        Query::default()
            .filter(Predicate::eq("v", v))
            .hint(Hint::Index("by_v".into()))
    };
    assert!(rows(&db, "t", &q("a")).is_empty());
    assert_eq!(
        rows(&db, "t", &q("b")),
        vec![record! { "id" => 1, "v" => "b" }]
    );
    assert_eq!(
        rows(&db, "t", &q("c")),
        vec![record! { "id" => 2, "v" => "c" }]
    );
    assert!(db.verify("t").unwrap().is_clean());
}

#[test]
fn the_catalog_and_statistics_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        customers(&db);
        db.create_index(
            "customers",
            "by_town_last",
            ["town", "last"],
            Projection::Include(vec!["first".into()]),
        )
        .unwrap();
        db.create_index("customers", "gone", ["first"], Projection::All)
            .unwrap();
        db.drop_index("customers", "gone").unwrap();
        db.create_table("dropped", ["id"], strata::TableOptions::default())
            .unwrap();
        db.drop_table("dropped").unwrap();
        db.analyze("customers").unwrap();
        db.close().unwrap();
    }
    let db = open(dir.path());
    let names: Vec<String> = db.tables().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["customers"]);
    let def = db.table("customers").unwrap();
    assert_eq!(def.indexes.len(), 1);
    assert_eq!(def.indexes[0].fields, ["town", "last"]);
    assert_eq!(def.indexes[0].state, IndexState::Ready);
    assert_eq!(db.table_stats("customers").unwrap().unwrap().row_count, 5);
    assert!(
        !db.raw_store()
            .column_families()
            .iter()
            .any(|f| f.contains("gone") || f.contains("dropped"))
    );
    // A dropped table's name can be used again, empty.
    db.create_table("dropped", ["id"], strata::TableOptions::default())
        .unwrap();
    assert!(rows(&db, "dropped", &Query::default()).is_empty());
    let q = Query::default()
        .filter(Predicate::eq("town", "Redmond"))
        .filter(Predicate::eq("last", "Smith"))
        .select(["first"]);
    assert_eq!(
        rows(&db, "customers", &q),
        vec![record! { "first" => "Di" }]
    );
}

#[test]
fn a_family_left_by_a_crash_before_its_definition_is_dropped_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        customers(&db);
        // What a crash between creating an index's family and recording it leaves.
        db.raw_store()
            .create_column_family(&index_cf("customers", "half"))
            .unwrap();
        db.close().unwrap();
    }
    let db = open(dir.path());
    let gone = db.raw_store().cf(&index_cf("customers", "half"));
    assert!(
        matches!(gone, Err(strata::lsm::Error::NotFound(_))),
        "{gone:?}"
    );
    db.create_index("customers", "half", ["town"], Projection::KeysOnly)
        .unwrap();
    assert!(db.verify("customers").unwrap().is_clean());
}

#[test]
fn every_projection_answers_through_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    customers(&db);
    db.create_index("customers", "keys", ["town"], Projection::KeysOnly)
        .unwrap();
    db.create_index(
        "customers",
        "incl",
        ["town"],
        Projection::Include(vec!["first".into()]),
    )
    .unwrap();
    db.create_index("customers", "all", ["town"], Projection::All)
        .unwrap();
    let base = Query::default().filter(Predicate::eq("town", "Redmond"));
    let expect: Vec<Record> = rows(&db, "customers", &base.clone().hint(Hint::Scan));
    assert_eq!(expect.len(), 3);
    for ix in ["keys", "incl", "all"] {
        let q = base.clone().hint(Hint::Index(ix.into()));
        assert_eq!(rows(&db, "customers", &q), expect, "{ix}");
        let plan = db.explain("customers", &q).unwrap();
        assert_eq!(plan.chosen.index.as_deref(), Some(ix));
        let firsts = q.clone().select(["id", "first"]);
        let plan = db.explain("customers", &firsts).unwrap();
        let covering = matches!(
            plan.chosen.access,
            strata::Access::Index { covering: true, .. }
        );
        assert_eq!(covering, ix != "keys", "{ix}: {plan}");
        let got = rows(&db, "customers", &firsts);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|r| r.len() == 2), "{got:?}");
    }
    // ORDER BY and LIMIT.
    let q = Query::default()
        .filter(Predicate::eq("town", "Redmond"))
        .order_by(["last"], true)
        .limit(2)
        .select(["last"]);
    assert_eq!(
        rows(&db, "customers", &q),
        vec![
            record! { "last" => "Smith" },
            record! { "last" => "Lovelace" }
        ]
    );
    let a = db
        .explain_analyze("customers", &base.clone().hint(Hint::Index("keys".into())))
        .unwrap();
    assert_eq!(
        (a.actual.rows_read, a.actual.fetches, a.actual.rows_returned),
        (3, 3, 3)
    );
    let text = a.to_string();
    assert!(
        text.contains("actual:") && text.contains("3 rows returned"),
        "{text}"
    );
}

#[test]
fn covering_reads_of_changing_layouts_and_null_keys_answer_as_a_scan_does() {
    // A covering read builds rows of one payload layout the short way and sends any other
    // entry — another layout, a returned key field that is NULL, the run of misses that
    // makes it learn the new layout — the general way: every row must be the scan's.
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index(
        "t",
        "by_g_h_v",
        ["g", "h", "v"],
        Projection::Include(vec!["w".into(), "x".into()]),
    )
    .unwrap();
    db.create_index("t", "keys_g", ["g"], Projection::KeysOnly)
        .unwrap();
    for id in 0..600i64 {
        // Within each `h` of a `g`, the entries whose `v` is NULL sort first: after the
        // first `h`, they meet rows built the short way.
        let mut row = record! { "id" => id, "g" => id % 2, "h" => (id / 2) % 3 };
        // Runs of rows with a layout each: both carried fields, `w` alone, `x` alone,
        // neither; the index field `v` NULL (missing) in some rows of every run.
        match (id / 40) % 4 {
            0 => {
                row.set("w", format!("w{id}"));
                row.set("x", id as f64 / 4.0);
            }
            1 => {
                row.set("w", format!("w{id}"));
            }
            2 => {
                row.set("x", id * 3);
            }
            _ => {}
        }
        if id % 7 != 3 {
            row.set("v", id / 5);
        }
        db.insert("t", row).unwrap();
    }
    // The same rows in any order (a projection may leave out the key).
    let by_id = |mut rows: Vec<Record>| {
        rows.sort_by_cached_key(|r| format!("{r:?}"));
        rows
    };
    for (index, fields) in [
        ("by_g_h_v", &["id", "v", "w", "x"][..]),
        ("by_g_h_v", &["x", "id", "h"][..]),
        ("by_g_h_v", &["v"][..]),
        ("keys_g", &["id", "g"][..]),
    ] {
        for g in [0, 1] {
            let q = Query::default()
                .filter(Predicate::eq("g", g))
                .select(fields);
            let covered = q.clone().hint(Hint::Index(index.into()));
            let plan = db.explain("t", &covered).unwrap();
            assert!(
                matches!(
                    plan.chosen.access,
                    strata::Access::Index { covering: true, .. }
                ),
                "{index} {fields:?}: {plan}"
            );
            let expect = by_id(rows(&db, "t", &q.clone().hint(Hint::Scan)));
            assert_eq!(expect.len(), 300);
            assert_eq!(
                by_id(rows(&db, "t", &covered)),
                expect,
                "{index} {fields:?}"
            );
        }
    }
    // The same after a flush, from table files.
    db.flush().unwrap();
    let q = Query::default()
        .filter(Predicate::eq("g", 1))
        .select(["id", "v", "w", "x"]);
    let expect = by_id(rows(&db, "t", &q.clone().hint(Hint::Scan)));
    let covered = q.hint(Hint::Index("by_g_h_v".into()));
    assert_eq!(by_id(rows(&db, "t", &covered)), expect);
}

#[test]
fn a_backfill_under_concurrent_writes_ends_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..20_000i64 {
        batch.insert(record! { "id" => id, "v" => id % 97, "w" => format!("w{}", id % 13) });
    }
    db.write("t", batch, WriteOptions::default()).unwrap();
    let stop = AtomicBool::new(false);
    let writes = std::thread::scope(|s| {
        let writers: Vec<_> = (0..3i64)
            .map(|w| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || {
                    let mut n = 0u64;
                    let mut x = w as u64 + 1;
                    while !stop.load(Ordering::Relaxed) || n < 2_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let id = (x % 25_000) as i64;
                        match x % 3 {
                            0 => db.delete("t", &[Value::Int(id)]).unwrap(),
                            _ => db
                                .upsert(
                                    "t",
                                    record! { "id" => id, "v" => (x % 1000) as i64, "w" => "new" },
                                )
                                .unwrap(),
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        db.create_index("t", "by_v", ["v"], Projection::Include(vec!["w".into()]))
            .unwrap();
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert!(writes >= 6_000);
    let report = db.verify("t").unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.indexes[0].state, IndexState::Ready);
    assert_eq!(report.indexes[0].entries, report.rows);
}

/// A backfill writes its entries in row order, so each flush of them overlaps the others in
/// level 0; once the index is ready it is compacted into one sorted run, which the index's
/// reads then seek once instead of once per flush.
#[test]
fn a_backfilled_index_ends_as_one_sorted_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::default();
    // Small memtables: the backfill's entries are flushed many times.
    options.store.write_buffer_bytes = 64 << 10;
    let db = Db::open(dir.path(), options).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    for chunk in 0..20i64 {
        let mut batch = TableBatch::new();
        for id in chunk * 1_000..(chunk + 1) * 1_000 {
            batch.insert(record! { "id" => id, "town" => format!("town{}", id % 97) });
        }
        db.write("t", batch, WriteOptions::default()).unwrap();
    }
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    let store = db.raw_store();
    let cf = store.cf(&index_cf("t", "by_town")).unwrap();
    let levels = store.stats(&cf).unwrap().levels;
    let holding: Vec<usize> = (0..levels.len())
        .filter(|&l| levels[l].tables > 0)
        .collect();
    assert_eq!(holding.len(), 1, "{levels:?}");
    assert!(holding[0] > 0, "not in level 0: {levels:?}");
    let q = Query::default().filter(Predicate::eq("town", "town5"));
    let rows: Vec<Record> = db
        .query("t", &q)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), (0..20_000).filter(|id| id % 97 == 5).count());
    assert!(db.verify("t").unwrap().is_clean());
}

#[test]
fn verify_finds_missing_dangling_and_stale_entries_and_repair_fixes_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    customers(&db);
    db.create_index(
        "customers",
        "by_town",
        ["town"],
        Projection::Include(vec!["first".into()]),
    )
    .unwrap();
    assert!(db.verify("customers").unwrap().is_clean());
    let cf = db
        .raw_store()
        .cf(&index_cf("customers", "by_town"))
        .unwrap();
    let store = db.raw_store();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = store
        .iter(&cf, Default::default())
        .unwrap()
        .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    // Missing: remove one entry. Dangling: an entry for a row that does not exist. Stale: an
    // entry whose payload is outdated.
    store.delete(&cf, &entries[0].0).unwrap();
    let dangling = strata::table::key::encode_key([&Value::from("Redmond"), &Value::Int(99)]);
    store.put(&cf, &dangling, &entries[1].1).unwrap();
    let mut outdated = entries[2].1.clone();
    let m = outdated.len();
    outdated[m - 1] ^= 0x01;
    store.put(&cf, &entries[2].0, &outdated).unwrap();

    let report = db.verify("customers").unwrap();
    let ix = &report.indexes[0];
    assert_eq!(
        (
            ix.count(ProblemKind::Missing),
            ix.count(ProblemKind::Dangling),
            ix.count(ProblemKind::Stale)
        ),
        (1, 1, 1),
        "{report}"
    );
    let fixed = db.repair("customers").unwrap();
    assert_eq!((fixed.entries_deleted, fixed.entries_put), (1, 2));
    let report = db.verify("customers").unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.indexes[0].entries, 5);
}

#[test]
fn corrupt_rows_and_entries_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    customers(&db);
    db.create_index("customers", "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    let fact = db.raw_store().cf("t/customers").unwrap();
    let ix = db
        .raw_store()
        .cf(&index_cf("customers", "by_town"))
        .unwrap();
    db.raw_store()
        .put(&ix, b"\x99garbage", b"\x01\x00")
        .unwrap();
    let by_index = Query::default().hint(Hint::Index("by_town".into()));
    let got: Result<Vec<_>, _> = db.query("customers", &by_index).unwrap().collect();
    assert!(matches!(got, Err(e) if e.is_corruption()));
    assert!(db.verify("customers").unwrap_err().is_corruption());
    let key = strata::table::key::encode_key([&Value::Int(2)]);
    db.raw_store().put(&fact, &key, b"\x07nonsense").unwrap();
    assert!(
        db.get("customers", &[Value::Int(2)])
            .unwrap_err()
            .is_corruption()
    );
    let got: Result<Vec<_>, _> = db.query("customers", &Query::default()).unwrap().collect();
    assert!(matches!(got, Err(e) if e.is_corruption()));
}

/// `analyze` runs by itself once the rows changed since the last analysis pass 10% of its row
/// count + 50 (the defaults); `wait_for_analyses` waits for the runs the writes queued.
#[test]
fn analyze_runs_by_itself_after_enough_changes() {
    let dir = tempfile::tempdir().unwrap();
    let insert = |db: &Db, ids: std::ops::Range<i64>| {
        let mut batch = TableBatch::new();
        for id in ids {
            batch.insert(record! { "id" => id, "town" => format!("town{}", id % 3) });
        }
        db.write("t", batch, WriteOptions::default()).unwrap();
    };
    let analysed = |db: &Db| db.table_stats("t").unwrap().map(|s| s.row_count);
    // A write past the threshold queues its table before it returns, so waiting for the
    // queued analyses shows exactly what the writes asked for: no sleeping, no guessing.
    let settle = |db: &Db| {
        db.wait_for_analyses();
        analysed(db)
    };

    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    insert(&db, 0..49);
    assert_eq!(settle(&db), None, "49 changes: under 0 × 10% + 50");
    db.close().unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    insert(&db, 49..100);
    assert_eq!(settle(&db), Some(100), "51 changes since open");
    db.close().unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(analysed(&db), Some(100), "stored");
    insert(&db, 100..159);
    assert_eq!(settle(&db), Some(100), "59 changes: under 10 + 50");
    db.close().unwrap();

    let off = Options {
        auto_analyze: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), off).unwrap();
    insert(&db, 200..400);
    assert_eq!(settle(&db), Some(100), "off: nothing ran");
    db.close().unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    insert(&db, 400..461);
    assert_eq!(settle(&db), Some(420), "61 changes: over 10 + 50");
    db.close().unwrap();
}

#[test]
fn close_abandons_an_auto_analysis_rather_than_waiting_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..200_000i64 {
        batch.insert(record! { "id" => id, "town" => format!("town{}", id % 3) });
    }
    db.write("t", batch, WriteOptions::default()).unwrap();
    // The write queued an analysis of 200,000 rows, which takes far longer than the close
    // that follows at once: close stops it, and it stores nothing.
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(
        db.table_stats("t").unwrap(),
        None,
        "the analysis was abandoned"
    );
    assert_eq!(
        db.planning_statistics("t").unwrap().row_count,
        200_000,
        "the planner still counts the rows"
    );
    db.close().unwrap();
}

#[test]
fn declared_columns_hold_every_write_and_survive_reopen() {
    use strata::{ColumnDef, ColumnType, TableOptions};
    let dir = tempfile::tempdir().unwrap();
    let columns = vec![
        ColumnDef::new("id", ColumnType::Int).not_null(),
        ColumnDef::new("price", ColumnType::Float),
        ColumnDef::new("name", ColumnType::Text),
    ];
    {
        let db = open(dir.path());
        db.create_table(
            "items",
            ["id"],
            TableOptions::default().columns(columns.clone()),
        )
        .unwrap();
        db.insert(
            "items",
            record! { "id" => 1, "price" => 2, "name" => "pen" },
        )
        .unwrap();
        // A text price, an undeclared field: refused, through every write path.
        let e = db
            .insert("items", record! { "id" => 2, "price" => "dear" })
            .unwrap_err();
        assert!(e.to_string().contains("\"price\" is DOUBLE"), "{e}");
        let mut tx = db.begin().unwrap();
        let e = tx
            .upsert("items", record! { "id" => 3, "colour" => "red" })
            .unwrap_err();
        assert!(e.to_string().contains("no column \"colour\""), "{e}");
        let mut batch = TableBatch::new();
        batch.insert(record! { "id" => 4, "name" => 4 });
        assert!(db.write("items", batch, WriteOptions::default()).is_err());
        let mut load = db.bulk_load("items").unwrap();
        assert!(load.insert(record! { "id" => 5, "name" => 5.5 }).is_err());
        drop(load);
        assert_eq!(rows(&db, "items", &Query::default()).len(), 1);
    }
    let db = open(dir.path());
    let def = db.table("items").unwrap();
    assert_eq!(def.columns, columns);
    assert_eq!(def.format, 5);
    assert!(
        db.insert("items", record! { "id" => 6, "price" => "x" })
            .is_err()
    );
}

#[test]
fn columns_declared_later_are_checked_against_the_stored_rows() {
    use strata::{ColumnDef, ColumnType};
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    customers(&db);
    let text = |n: &str| ColumnDef::new(n, ColumnType::Text);
    let mut columns = vec![ColumnDef::new("id", ColumnType::Int)];
    columns.extend(["first", "last"].map(text));
    // `town` is missing: the stored rows have it.
    let e = db.set_columns("customers", columns.clone()).unwrap_err();
    assert!(e.to_string().contains("no column \"town\""), "{e}");
    assert!(db.table("customers").unwrap().columns.is_empty());
    columns.push(text("town"));
    db.set_columns("customers", columns.clone()).unwrap();
    assert_eq!(db.table("customers").unwrap().columns, columns);
    assert!(
        db.insert("customers", record! { "id" => 9, "age" => 3 })
            .is_err()
    );
    db.set_columns("customers", Vec::new()).unwrap();
    db.insert("customers", record! { "id" => 9, "age" => 3 })
        .unwrap();
}
