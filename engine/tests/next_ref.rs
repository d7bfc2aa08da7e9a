//! `Rows::next_ref` lends the rows `Rows::next` reads, the same fields with the same values —
//! rows fetched through an index and lent where they lie, rows the re-check or an `OR`
//! rejects, sorted, limited and merged queries, async and global indexes, point queries,
//! sharded tables — and a lent row's parts agree with each other.

mod common;

use common::tables::varied_table;
use strata::{
    Access, Condition, Db, ExecStats, Options, Predicate, Query, Record, RowRef, TableOptions,
    Value, ValueRef,
};

fn by_next(db: &Db, table: &str, query: &Query) -> Vec<Record> {
    db.query(table, query)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The row's fields rebuilt from its parts (names, values by position, values by name), each
/// way checked against the others and against `to_record`.
fn rebuilt(row: &RowRef<'_>) -> Record {
    let mut out = Record::default();
    let names: Vec<&str> = row.names().collect();
    assert_eq!(names.len(), row.len());
    for (i, name) in names.iter().enumerate() {
        let value = row.value(i).unwrap();
        let by_name = row.get(name).unwrap().expect("a field it names");
        assert_eq!(value.to_value(), by_name.to_value(), "{name}");
        assert_eq!(value.is_null(), value.to_value().is_null());
        out.set(*name, value.to_value());
    }
    assert!(row.value(row.len()).is_err(), "past the last field");
    assert!(row.get("no such field").unwrap().is_none());
    assert_eq!(row.to_record().unwrap(), out);
    if let Some(record) = row.as_record() {
        assert_eq!(*record, out, "a lent record");
    }
    assert!(row.has_names(&out.field_names()));
    out
}

/// The rows `next_ref` lends, how many of them where they lie (not as a record), and what
/// the query says it did.
fn by_next_ref(db: &Db, table: &str, query: &Query) -> (Vec<Record>, usize, ExecStats) {
    let mut rows = db.query(table, query).unwrap();
    let (mut out, mut in_place) = (Vec::new(), 0);
    while let Some(row) = rows.next_ref().unwrap() {
        in_place += usize::from(row.as_record().is_none());
        out.push(rebuilt(&row));
    }
    assert!(rows.next_ref().unwrap().is_none(), "the end stays the end");
    (out, in_place, rows.stats().clone())
}

/// The rows `for_each_ref` lends, how many of them where they lie, and what the query says
/// it did.
fn by_for_each_ref(db: &Db, table: &str, query: &Query) -> (Vec<Record>, usize, ExecStats) {
    let mut rows = db.query(table, query).unwrap();
    let (mut out, mut in_place) = (Vec::new(), 0);
    rows.for_each_ref(|row| -> Result<(), strata::Error> {
        in_place += usize::from(row.as_record().is_none());
        out.push(rebuilt(row));
        Ok(())
    })
    .unwrap();
    assert!(rows.next_ref().unwrap().is_none(), "the end stays the end");
    (out, in_place, rows.stats().clone())
}

/// What the query did, its times aside.
fn counts(stats: &ExecStats) -> [u64; 5] {
    [
        stats.rows_read,
        stats.fetches,
        stats.fetches_merged,
        stats.rows_matched,
        stats.rows_returned,
    ]
}

#[test]
fn next_ref_lends_the_rows_next_reads() {
    let dir = tempfile::tempdir().unwrap();
    // No analysis in the background: the runs of a query compared here make the same plan.
    let options = Options {
        auto_analyze: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    varied_table(&db, "t", TableOptions::default(), 2000, 50);
    varied_table(&db, "sharded", TableOptions::default().shards(4), 2000, 50);
    let projected = |mut q: Query, fields: &[&str]| {
        q.projection = Some(fields.iter().map(|f| f.to_string()).collect());
        q
    };
    let mut either = Query::default().filter(Predicate::eq("town", "town4"));
    either.add_condition(Condition::any([
        Predicate::lt("id", 500),
        Predicate::is_not_null("blob"),
    ]));
    let queries = [
        Query::default(),
        // Index fetches: every row passes, some fail the re-check, a projection.
        Query::default().filter(Predicate::eq("town", "town1")),
        Query::default()
            .filter(Predicate::eq("town", "town2"))
            .filter(Predicate::gt("score", 20.0)),
        projected(
            Query::default().filter(Predicate::eq("town", "town3")),
            &["id", "nick"],
        ),
        // An `OR` the fetched rows are tested on.
        either.clone(),
        projected(either, &["blob", "id"]),
        // Limited, sorted, in index order.
        Query::default()
            .filter(Predicate::eq("town", "town0"))
            .limit(7),
        Query::default()
            .filter(Predicate::eq("town", "town0"))
            .order_by(["score"], true),
        Query::default()
            .filter(Predicate::ge("town", "town47"))
            .order_by(["town"], false)
            .limit(30),
        // Through the async index (each entry re-derived from its row).
        Query::default().filter(Predicate::eq("band", 3)),
        // A scan, a key list, a point.
        projected(
            Query::default().filter(Predicate::ge("id", 100)),
            &["blob", "id"],
        ),
        Query::default().filter(Predicate::in_list("id", [Value::Int(3), Value::Int(33)])),
        Query::default().filter(Predicate::eq("id", 77)),
        Query::default().filter(Predicate::eq("id", 7_000)),
    ];
    for table in ["t", "sharded"] {
        for (n, query) in queries.iter().enumerate() {
            // The second to the tenth read through an index, fetching their rows; those of
            // one stream through the sync index, not sorted, are lent where they lie.
            if (1..10).contains(&n) {
                let plan = db.explain(table, query).unwrap();
                assert!(
                    matches!(plan.chosen.access, Access::Index { .. }),
                    "{table}: {query:?}: {plan}"
                );
            }
            let lent_in_place = table == "t" && [1, 2, 3, 4, 5, 6, 8].contains(&n);
            let mut rows = db.query(table, query).unwrap();
            let expected: Vec<Record> = rows.by_ref().collect::<Result<_, _>>().unwrap();
            let (lent, in_place, stats) = by_next_ref(&db, table, query);
            assert_eq!(lent, expected, "{table}: {query:?}");
            assert!(!lent.is_empty() || n == 13, "{table}: {query:?} finds rows");
            let want = if lent_in_place { lent.len() } else { 0 };
            assert_eq!(in_place, want, "{table}: {query:?}: rows lent in place");
            assert_eq!(counts(&stats), counts(rows.stats()), "{table}: {query:?}");
            // Lent to a visitor: the same rows, as many where they lie, the same work. (These
            // tables are not analysed, so no index here is read as a walk of the fact family:
            // the visitor takes `next_ref`'s path; the walk's lending is tested below.)
            let (visited, in_place, stats) = by_for_each_ref(&db, table, query);
            assert_eq!(visited, expected, "{table}: {query:?}");
            assert_eq!(in_place, want, "{table}: {query:?}: rows visited in place");
            assert_eq!(counts(&stats), counts(rows.stats()), "{table}: {query:?}");
        }
    }
}

#[test]
fn rows_lent_and_rows_built_may_be_read_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 2000, 50);
    let query = Query::default().filter(Predicate::eq("town", "town2"));
    let expected = by_next(&db, "t", &query);
    let mut rows = db.query("t", &query).unwrap();
    let mut got = Vec::new();
    let mut record = Record::default();
    for i in 0.. {
        let more = match i % 3 {
            0 => rows.next_ref().unwrap().map(|r| r.to_record().unwrap()),
            1 => rows.next().map(Result::unwrap),
            _ => rows.next_into(&mut record).unwrap().then(|| record.clone()),
        };
        match more {
            Some(r) => got.push(r),
            None => break,
        }
    }
    assert_eq!(got, expected);
    assert_eq!(rows.stats().rows_returned, expected.len() as u64);
}

#[test]
fn a_lent_row_gives_text_and_bytes_where_they_lie() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 2000, 50);
    db.flush().unwrap();
    // Through the index: the first row of town14 (row 14), lent where it lies.
    let mut rows = db
        .query(
            "t",
            &Query::default().filter(Predicate::eq("town", "town14")),
        )
        .unwrap();
    let row = rows.next_ref().unwrap().expect("row 14");
    assert!(row.as_record().is_none(), "lent where it lies");
    assert!(matches!(row.get("id").unwrap(), Some(ValueRef::Int(14))));
    assert!(matches!(
        row.get("town").unwrap(),
        Some(ValueRef::Str("town14"))
    ));
    assert!(matches!(
        row.get("blob").unwrap(),
        Some(ValueRef::Bytes([14, 14, 14]))
    ));
    assert!(row.get("score").unwrap().is_none());
    assert!(matches!(row.get("band").unwrap(), Some(ValueRef::Int(0))));
}

/// An index whose values follow the key (its rows fetched as a walk of the fact family):
/// `for_each_ref` lends what `next` reads, in its order, whatever the order, limit and
/// projection, with the same work counted.
#[test]
fn for_each_ref_lends_a_walks_rows_as_next_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        auto_analyze: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    db.create_table("c", ["id"], TableOptions::default())
        .unwrap();
    db.create_index("c", "by_day", ["day"], strata::Projection::KeysOnly)
        .unwrap();
    for id in 0..4000i64 {
        let mut r = strata::record! { "id" => id, "day" => id / 25 };
        if id % 3 == 0 {
            r.set("nick", "n".repeat(id as usize % 30));
        }
        if id % 5 == 0 {
            r.set("score", id as f64 / 5.0);
        }
        db.insert("c", r).unwrap();
        if id == 1500 || id == 3100 {
            db.flush().unwrap();
        }
    }
    // Some rows gone and some written again, after the files.
    for id in (0..4000i64).step_by(37) {
        db.delete("c", &[Value::Int(id)]).unwrap();
    }
    for id in (5..4000i64).step_by(41) {
        db.upsert(
            "c",
            strata::record! { "id" => id, "day" => id / 25, "nick" => "again" },
        )
        .unwrap();
    }
    db.analyze("c").unwrap();
    let projected = |mut q: Query, fields: &[&str]| {
        q.projection = Some(fields.iter().map(|f| f.to_string()).collect());
        q
    };
    let queries = [
        Query::default().filter(Predicate::eq("day", 7)),
        Query::default().filter(Predicate::between("day", 20, 40)),
        // Wide ranges, read through the index as a hint asks.
        Query::default()
            .filter(Predicate::between("day", 20, 120))
            .hint(strata::Hint::Index("by_day".into())),
        projected(
            Query::default()
                .filter(Predicate::ge("day", 100))
                .hint(strata::Hint::Index("by_day".into())),
            &["id", "nick"],
        ),
        Query::default()
            .filter(Predicate::ge("day", 60))
            .hint(strata::Hint::Index("by_day".into()))
            .limit(33),
        Query::default()
            .filter(Predicate::lt("day", 50))
            .order_by(["day"], true)
            .limit(70),
        Query::default().filter(Predicate::in_list(
            "day",
            [Value::Int(3), Value::Int(90), Value::Int(150)],
        )),
    ];
    for query in &queries {
        let plan = db.explain("c", query).unwrap();
        assert!(
            matches!(plan.chosen.access, Access::Index { .. }),
            "{query:?}: {plan}"
        );
        let mut rows = db.query("c", query).unwrap();
        let expected: Vec<Record> = rows.by_ref().collect::<Result<_, _>>().unwrap();
        assert!(!expected.is_empty(), "{query:?}");
        assert!(
            rows.stats().fetches_merged > 0,
            "{query:?}: fetched as a walk"
        );
        let (visited, in_place, stats) = by_for_each_ref(&db, "c", query);
        assert_eq!(visited, expected, "{query:?}");
        assert_eq!(in_place, visited.len(), "{query:?}: lent where they lie");
        assert_eq!(counts(&stats), counts(rows.stats()), "{query:?}");
    }
}
