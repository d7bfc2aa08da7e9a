//! `Rows::next_into` reads the rows `Rows::next` reads — over rows of several layouts, rows
//! the re-check rejects, index fetches, scans and sharded tables — and builds each row in the
//! buffers of the record it is given.

mod common;

use common::tables::varied_table;
use strata::{Db, Options, Predicate, Query, Record, TableOptions, Value, record};

fn by_next(db: &Db, table: &str, query: &Query) -> Vec<Record> {
    db.query(table, query)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn by_next_into(db: &Db, table: &str, query: &Query) -> Vec<Record> {
    let mut rows = db.query(table, query).unwrap();
    let mut record = Record::default();
    let mut out = Vec::new();
    while rows.next_into(&mut record).unwrap() {
        out.push(record.clone());
    }
    assert!(record.is_empty(), "the end leaves the record empty");
    out
}

#[test]
fn next_into_reads_the_rows_next_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 400, 5);
    varied_table(&db, "sharded", TableOptions::default().shards(4), 400, 5);
    let projected = |mut q: Query, fields: &[&str]| {
        q.projection = Some(fields.iter().map(|f| f.to_string()).collect());
        q
    };
    let queries = [
        Query::default(),
        // An index fetch whose re-check rejects most rows it builds.
        Query::default()
            .filter(Predicate::eq("town", "town2"))
            .filter(Predicate::gt("score", 20.0)),
        projected(
            Query::default().filter(Predicate::eq("town", "town3")),
            &["id", "nick"],
        ),
        // A scan whose rows are tested before they are built.
        projected(
            Query::default().filter(Predicate::ge("id", 100)),
            &["blob", "id"],
        ),
        Query::default().filter(Predicate::in_list("id", [Value::Int(3), Value::Int(33)])),
    ];
    for table in ["t", "sharded"] {
        for query in &queries {
            let expected = by_next(&db, table, query);
            assert!(!expected.is_empty(), "{table}: {query:?} finds rows");
            assert_eq!(
                by_next_into(&db, table, query),
                expected,
                "{table}: {query:?}"
            );
        }
    }
}

#[test]
fn next_into_builds_each_row_in_the_buffers_of_the_one_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 400, 5);
    db.flush().unwrap();
    let mut query = Query::default().filter(Predicate::eq("town", "town1"));
    // Not covered by the index's entries: each row is fetched and built.
    query.projection = Some(vec!["id".into(), "score".into(), "town".into()]);
    let mut rows = db.query("t", &query).unwrap();
    let mut record = Record::default();
    assert!(rows.next_into(&mut record).unwrap());
    // A text buffer far larger than any town: a row built in it keeps its capacity, one
    // built afresh has room for its own text only.
    let mut roomy = String::with_capacity(4096);
    roomy.push_str("placeholder");
    record.set("town", roomy);
    assert!(rows.next_into(&mut record).unwrap());
    let Value::Str(town) = record.value("town") else {
        panic!("town is text: {record:?}");
    };
    assert_eq!(town, "town1");
    assert!(
        town.capacity() >= 4096,
        "built afresh: capacity {}",
        town.capacity()
    );
}

#[test]
fn point_queries_read_through_next_into_give_each_row_its_own_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 400, 5);
    // Rows of every layout in turn, each query given the record the one before returned: a
    // record built in another row's buffers keeps none of that row's fields or values.
    let projected = Query {
        projection: Some(vec!["id".into(), "nick".into(), "blob".into()]),
        ..Query::default()
    };
    for id in (0..400i64).step_by(7).chain([3, 33, 0, 399, 1000]) {
        for base in [Query::default(), projected.clone()] {
            let query = base.filter(Predicate::eq("id", id));
            let expected = by_next(&db, "t", &query);
            assert_eq!(expected.len(), usize::from(id < 400), "row {id}");
            assert_eq!(by_next_into(&db, "t", &query), expected, "row {id}");
        }
    }
}

#[test]
fn a_point_query_builds_its_row_in_the_buffers_of_the_record_given_back_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    varied_table(&db, "t", TableOptions::default(), 400, 5);
    db.flush().unwrap();
    let point = |id: i64| Query::default().filter(Predicate::eq("id", id));
    let mut rows = db.query("t", &point(5)).unwrap();
    let mut record = Record::default();
    assert!(rows.next_into(&mut record).unwrap());
    // A text buffer far larger than any town, given back when the query's rows end.
    let mut roomy = String::with_capacity(4096);
    roomy.push_str("placeholder");
    record.set("town", roomy);
    assert!(!rows.next_into(&mut record).unwrap());
    drop(rows);
    // Row 10 has row 5's fields (band, id, town): its town is built in that buffer.
    let mut rows = db.query("t", &point(10)).unwrap();
    assert!(rows.next_into(&mut record).unwrap());
    assert_eq!(
        record,
        record! { "band" => 0, "id" => 10, "town" => "town0" }
    );
    let Value::Str(town) = record.value("town") else {
        panic!("town is text: {record:?}");
    };
    assert!(
        town.capacity() >= 4096,
        "built afresh: capacity {}",
        town.capacity()
    );
}
