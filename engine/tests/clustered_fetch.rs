//! Fetches through an index whose rows lie together in the fact family (a field that grows
//! with the key: rows written in time order) walk a cursor along the family instead of
//! looking each row up. The walk must give what lookups give: the rows of the snapshot, none
//! deleted, every update, in every shape of index read (one value, a range over many values
//! whose keys go back at each value, `IN`, descending, a limit), on one shard and several,
//! and it must step aside (lookups again) when the rows of a batch turn out to lie apart.

mod common;

use common::tables::answers_by_id;
use strata::{Db, Hint, Options, Predicate, Projection, Query, TableBatch, Value, WriteOptions};
use strata::{Record, record};

const DAYS: i64 = 40;
const PER_DAY: i64 = 50;

fn options() -> Options {
    Options {
        auto_analyze: false,
        ..Options::default()
    }
}

/// Day `d` as the text a source writes (`2026-03-07`): dates as text, in key order.
fn day(d: i64) -> String {
    format!("2026-{:02}-{:02}", 1 + d / 28, 1 + d % 28)
}

/// `events`, keyed by `id`, its rows written in time order (each day's `PER_DAY` ids
/// together), a keys-only index on `day` and one on `kind` (spread over the table).
fn events(db: &Db, create: impl Fn(&Db)) {
    create(db);
    db.create_index("events", "by_day", ["day"], Projection::KeysOnly)
        .unwrap();
    db.create_index("events", "by_kind", ["kind"], Projection::KeysOnly)
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..DAYS * PER_DAY {
        batch.insert(record! {
            "id" => id,
            "day" => day(id / PER_DAY),
            "kind" => id % 7,
            "note" => format!("event {id} of a day of {PER_DAY}"),
        });
    }
    db.write("events", batch, WriteOptions::default()).unwrap();
    db.flush().unwrap();
    db.analyze("events").unwrap();
}

fn queries() -> Vec<Query> {
    let by_day = |q: Query| q.hint(Hint::Index("by_day".into()));
    vec![
        by_day(Query::default().filter(Predicate::eq("day", day(3)))),
        by_day(Query::default().filter(Predicate::between("day", day(5), day(17)))),
        by_day(Query::default().filter(Predicate::in_list(
            "day",
            [day(30), day(2), day(11)].map(Value::from),
        ))),
        by_day(Query::default().filter(Predicate::ge("day", day(20)))),
        by_day(
            Query::default()
                .filter(Predicate::ge("day", day(10)))
                .order_by(["day"], true),
        ),
        by_day(
            Query::default()
                .filter(Predicate::eq("day", day(8)))
                .filter(Predicate::eq("kind", 3)),
        ),
    ]
}

/// Each query's answer through the index and through a scan, which must agree.
fn check(db: &Db, label: &str) -> Vec<Vec<Record>> {
    let queries = queries();
    let scans: Vec<Query> = queries.iter().map(|q| q.clone().hint(Hint::Scan)).collect();
    let through_index = answers_by_id(db, "events", &queries);
    let scanned = answers_by_id(db, "events", &scans);
    for (i, (a, b)) in through_index.iter().zip(&scanned).enumerate() {
        let ids = |rows: &[Record]| -> Vec<Value> {
            rows.iter().map(|r| r.value("id").clone()).collect()
        };
        assert_eq!(
            ids(a),
            ids(b),
            "{label}: query {i}, ids through the index and by a scan"
        );
        assert_eq!(a, b, "{label}: query {i}");
    }
    through_index
}

#[test]
fn a_clustered_index_fetches_by_walking_the_table_and_answers_as_a_scan_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    events(&db, |db| {
        db.create_table("events", ["id"], strata::TableOptions::default())
            .unwrap()
    });
    let one_day = Query::default().filter(Predicate::eq("day", day(3)));
    let analysis = db.explain_analyze("events", &one_day).unwrap();
    assert_eq!(analysis.plan.chosen.index.as_deref(), Some("by_day"));
    assert_eq!(analysis.actual.fetches_merged, PER_DAY as u64, "{analysis}");
    assert!(analysis.to_string().contains("walking along the table"));
    let before = check(&db, "as loaded");
    assert_eq!(before[0].len(), PER_DAY as usize);

    // A snapshot, then deletes, updates that move rows to another day, and new rows of an
    // old day (after every key of the table: not beside the rest of their day).
    let snapshot = db.snapshot();
    let mut batch = TableBatch::new();
    for id in (3 * PER_DAY..18 * PER_DAY).step_by(3) {
        batch.delete([Value::Int(id)]);
    }
    for id in (6 * PER_DAY + 1..9 * PER_DAY).step_by(5) {
        batch.upsert(record! { "id" => id, "day" => day(31), "kind" => 3, "note" => "moved" });
    }
    for id in DAYS * PER_DAY..DAYS * PER_DAY + 30 {
        batch.insert(record! { "id" => id, "day" => day(3), "kind" => 3, "note" => "late" });
    }
    db.write("events", batch, WriteOptions::default()).unwrap();
    let after_writes = check(&db, "after writes, in the memtable");
    let kept = (3 * PER_DAY..4 * PER_DAY).filter(|id| id % 3 != 0).count();
    assert_eq!(after_writes[0].len(), 30 + kept);
    db.flush().unwrap();
    assert_eq!(check(&db, "after writes, flushed"), after_writes);

    // The snapshot still reads the rows as loaded, through either path.
    for (q, expected) in queries().iter().zip(&before) {
        let mut rows: Vec<Record> = db
            .query_at(&snapshot, "events", q)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort_by(|a, b| a.value("id").cmp(b.value("id")));
        assert_eq!(&rows, expected, "{q:?} at the snapshot");
    }
}

#[test]
fn rows_spread_over_the_table_are_looked_up_and_a_spread_batch_turns_the_walk_off() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    events(&db, |db| {
        db.create_table("events", ["id"], strata::TableOptions::default())
            .unwrap()
    });
    // `kind` does not follow the key: its fetches are lookups from the start.
    let kind = Query::default()
        .filter(Predicate::eq("kind", 4))
        .hint(Hint::Index("by_kind".into()));
    let analysis = db.explain_analyze("events", &kind).unwrap();
    assert!(analysis.actual.fetches > 0);
    assert_eq!(analysis.actual.fetches_merged, 0, "{analysis}");
    // Rows of one day spread over the table by updates (every tenth row, further apart than
    // a cursor steps): the first batch walks (the statistics say the rows lie together),
    // finds it needs a seek a row, and the stream's later batches are lookups.
    let mut batch = TableBatch::new();
    for id in 0..DAYS * PER_DAY {
        let d = if id % 10 == 0 { 0 } else { id / PER_DAY };
        batch.upsert(record! { "id" => id, "day" => day(d), "kind" => id % 7 });
    }
    db.write("events", batch, WriteOptions::default()).unwrap();
    let spread = Query::default()
        .filter(Predicate::eq("day", day(0)))
        .hint(Hint::Index("by_day".into()));
    let analysis = db.explain_analyze("events", &spread).unwrap();
    let rows = (DAYS * PER_DAY / 10 + PER_DAY - PER_DAY / 10) as u64;
    assert_eq!(analysis.actual.rows_returned, rows);
    assert!(analysis.actual.fetches_merged > 0, "{analysis}");
    assert!(analysis.actual.fetches_merged < rows, "{analysis}");
    check(&db, "spread");
}

#[test]
fn a_sharded_table_walks_each_shard_apart() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    events(&db, |db| {
        db.create_table("events", ["id"], strata::TableOptions::default().shards(3))
            .unwrap()
    });
    let analysis = db
        .explain_analyze(
            "events",
            &Query::default()
                .filter(Predicate::between("day", day(4), day(9)))
                .hint(Hint::Index("by_day".into())),
        )
        .unwrap();
    assert_eq!(analysis.actual.rows_returned, 6 * PER_DAY as u64);
    check(&db, "three shards");
}
