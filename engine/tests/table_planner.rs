//! The planner issue's cases end to end, on real data in the engine: on a table of 200,000
//! rows, a keys-only index on a 50/50 field is rejected, and a 99/1 field uses its index for
//! the rare value and a scan for the common one.

use strata::{Db, Hint, Options, Predicate, Projection, Query, TableBatch, WriteOptions, record};

const ROWS: i64 = 200_000;

#[test]
fn low_selectivity_indexes_are_rejected_and_rare_values_use_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("people", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("people", "by_gender", ["gender"], Projection::KeysOnly)
        .unwrap();
    db.create_index("people", "by_status", ["status"], Projection::KeysOnly)
        .unwrap();
    let mut rare = 0u64;
    for chunk in 0..ROWS / 5_000 {
        let mut batch = TableBatch::new();
        for id in chunk * 5_000..(chunk + 1) * 5_000 {
            // A multiplicative hash spreads the rare rows over the key space.
            let h = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            let status = if h.is_multiple_of(100) {
                "closed"
            } else {
                "active"
            };
            rare += u64::from(status == "closed");
            batch.insert(record! {
                "id" => id,
                "gender" => if h.is_multiple_of(2) { "F" } else { "M" },
                "status" => status,
                "name" => format!("person {id}"),
            });
        }
        db.write("people", batch, WriteOptions::default()).unwrap();
    }
    db.analyze("people").unwrap();

    let explain = |q: Query| db.explain("people", &q).unwrap();
    let gender = explain(Query::default().filter(Predicate::eq("gender", "F")));
    assert_eq!(gender.chosen.plan, "scan", "{gender}");
    assert!(
        gender
            .candidates
            .iter()
            .any(|c| c.index.as_deref() == Some("by_gender"))
    );

    let closed = explain(Query::default().filter(Predicate::eq("status", "closed")));
    assert_eq!(
        closed.chosen.index.as_deref(),
        Some("by_status"),
        "{closed}"
    );
    let active = explain(Query::default().filter(Predicate::eq("status", "active")));
    assert_eq!(active.chosen.plan, "scan", "{active}");

    // And the plans return the right rows, as a forced scan does.
    let q = Query::default().filter(Predicate::eq("status", "closed"));
    let analysis = db.explain_analyze("people", &q).unwrap();
    assert_eq!(analysis.actual.rows_returned, rare);
    assert_eq!(
        analysis.actual.rows_read, rare,
        "the index reads only the rare rows"
    );
    let scan = db
        .explain_analyze("people", &q.clone().hint(Hint::Scan))
        .unwrap();
    assert_eq!(scan.actual.rows_returned, rare);
    assert_eq!(scan.actual.rows_read, ROWS as u64);
}

/// `IS NULL` and `IS NOT NULL` bind an index as ranges (NULL sorts first in keys): a rare NULL
/// and a rare non-NULL each read their index, a common one is scanned, and every plan returns
/// the rows a forced scan returns, through local and composite indexes.
#[test]
fn is_null_and_is_not_null_read_their_index_when_selective() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_phone", ["phone"], Projection::KeysOnly)
        .unwrap();
    db.create_index("t", "by_referrer", ["referrer"], Projection::KeysOnly)
        .unwrap();
    db.create_index("t", "by_phone_k", ["phone", "k"], Projection::KeysOnly)
        .unwrap();
    const N: i64 = 40_000;
    let mut batch = TableBatch::new();
    for id in 0..N {
        let h = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let mut r = record! { "id" => id, "k" => (h % 7) as i64 };
        // Phone: NULL in 1 row of 200. Referrer: set in 1 row of 100.
        if !h.is_multiple_of(200) {
            r.set("phone", format!("+44 {h:06}"));
        }
        if h.is_multiple_of(100) {
            r.set("referrer", (h % 1000) as i64);
        }
        batch.insert(r);
    }
    db.write("t", batch, WriteOptions::default()).unwrap();
    db.analyze("t").unwrap();

    let rows = |q: &Query| -> Vec<String> {
        let mut out: Vec<String> = db
            .query("t", q)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        out.sort();
        out
    };
    let cases = [
        (
            Query::default().filter(Predicate::is_null("phone")),
            Some("by_phone"),
        ),
        (
            Query::default().filter(Predicate::is_not_null("referrer")),
            Some("by_referrer"),
        ),
        (
            Query::default()
                .filter(Predicate::is_null("phone"))
                .filter(Predicate::eq("k", 3)),
            Some("by_phone_k"),
        ),
        (
            Query::default().filter(Predicate::is_not_null("phone")),
            None,
        ),
        (
            Query::default().filter(Predicate::is_null("referrer")),
            None,
        ),
    ];
    for (query, index) in cases {
        let plan = db.explain("t", &query).unwrap();
        match index {
            Some(name) => assert_eq!(plan.chosen.index.as_deref(), Some(name), "{plan}"),
            None => assert_eq!(plan.chosen.plan, "scan", "{plan}"),
        }
        let scanned = rows(&query.clone().hint(Hint::Scan));
        assert!(!scanned.is_empty(), "{plan}");
        assert_eq!(rows(&query), scanned, "{plan}");
        for name in ["by_phone", "by_referrer", "by_phone_k"] {
            let forced = query.clone().hint(Hint::Index(name.into()));
            assert_eq!(rows(&forced), scanned, "{name}: {plan}");
        }
    }
}

/// A query that pins every primary-key field to one value is planned without statistics,
/// dives or index candidates (nothing beats one point lookup), and still re-checks the rest
/// of its predicates; one with a hint, or a key field given a range or a list, is planned as
/// before.
#[test]
fn a_primary_key_equality_is_planned_without_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["a", "b"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    let mut batch = TableBatch::new();
    for i in 0..2_000i64 {
        batch.insert(record! { "a" => i % 10, "b" => i, "town" => format!("T{}", i % 3) });
    }
    db.write("t", batch, WriteOptions::default()).unwrap();
    db.analyze("t").unwrap();

    let point = Query::default()
        .filter(Predicate::eq("b", 17))
        .filter(Predicate::eq("a", 7))
        .filter(Predicate::eq("town", "T2"));
    let plan = db.explain("t", &point).unwrap();
    assert_eq!(plan.chosen.plan, "primary_key", "{plan}");
    let kinds: Vec<&str> = plan.candidates.iter().map(|c| c.plan).collect();
    assert_eq!(kinds.len(), 2, "{plan}");
    assert!(plan.observed.dives.is_empty(), "{plan}");
    let rows: Vec<_> = db.query("t", &point).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(rows, [record! { "a" => 7, "b" => 17, "town" => "T2" }]);
    // The other predicates are still checked: town of row 17 is T2, not T1.
    let miss = Query::default()
        .filter(Predicate::eq("a", 7))
        .filter(Predicate::eq("b", 17))
        .filter(Predicate::eq("town", "T1"));
    assert_eq!(db.query("t", &miss).unwrap().count(), 0);

    // `Db::query` takes the lookup without costing it: whatever else the predicates say of a
    // key field (a second value, NULL, a range, another type) must still decide the rows.
    let count = |q: &Query| db.query("t", q).unwrap().count();
    let key = |a: strata::Value| {
        Query::default()
            .filter(Predicate::eq("a", a))
            .filter(Predicate::eq("b", 17))
    };
    assert_eq!(count(&key(7.into())), 1);
    assert_eq!(count(&key(8.into())), 0, "no row has a = 8, b = 17");
    assert_eq!(count(&key("7".into())), 0, "a text is not an integer");
    assert_eq!(
        count(&key(strata::Value::Null)),
        0,
        "= NULL matches nothing"
    );
    assert_eq!(count(&key(7.into()).filter(Predicate::eq("a", 8))), 0);
    assert_eq!(count(&key(7.into()).filter(Predicate::eq("a", 7))), 1);
    assert_eq!(count(&key(7.into()).filter(Predicate::le("b", 16))), 0);
    assert_eq!(count(&key(7.into()).filter(Predicate::le("b", 17))), 1);
    assert_eq!(count(&key(7.into()).filter(Predicate::is_null("a"))), 0);

    // A key field with two values, or a hint, goes through the full planner.
    let listed = Query::default()
        .filter(Predicate::in_list("a", [7.into(), 8.into()]))
        .filter(Predicate::eq("b", 17))
        .filter(Predicate::eq("town", "T2"));
    let plan = db.explain("t", &listed).unwrap();
    assert!(
        plan.candidates
            .iter()
            .any(|c| c.index.as_deref() == Some("by_town")),
        "{plan}"
    );
    let hinted = point.clone().hint(Hint::Index("by_town".into()));
    let plan = db.explain("t", &hinted).unwrap();
    assert_eq!(plan.chosen.index.as_deref(), Some("by_town"), "{plan}");
    assert_eq!(db.query("t", &hinted).unwrap().count(), 1);
}

/// A table written in time order: `analyze` finds its date's order follows the key's
/// (correlation near 1) and a scrambled field's does not (near 0), and the planner fetches a
/// wide date range through the index — its rows lie together — while the same share of the
/// scrambled field is scanned. Both return what a forced scan returns.
#[test]
fn a_range_of_rows_that_lie_together_in_key_order_is_fetched_through_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("events", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("events", "by_day", ["day"], Projection::KeysOnly)
        .unwrap();
    db.create_index("events", "by_bucket", ["bucket"], Projection::KeysOnly)
        .unwrap();
    for chunk in 0..ROWS / 5_000 {
        let mut batch = TableBatch::new();
        for id in chunk * 5_000..(chunk + 1) * 5_000 {
            let h = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            batch.insert(record! {
                "id" => id,
                "day" => id / 100,
                "bucket" => (h % 2_000) as i64,
                "note" => format!("event {id} of a table that grows in time order"),
            });
        }
        db.write("events", batch, WriteOptions::default()).unwrap();
    }
    let stats = db.analyze("events").unwrap();
    assert!(stats.columns["day"].correlation > 0.99, "{stats:?}");
    assert!(stats.columns["bucket"].correlation.abs() < 0.05);

    // The last 14 % of days, and 14 % of the buckets.
    let days = Query::default().filter(Predicate::ge("day", (ROWS / 100) * 86 / 100));
    let buckets = Query::default().filter(Predicate::lt("bucket", 280));
    let by_day = db.explain("events", &days).unwrap();
    assert_eq!(by_day.chosen.index.as_deref(), Some("by_day"), "{by_day}");
    assert!(by_day.to_string().contains("clustered"), "{by_day}");
    let by_bucket = db.explain("events", &buckets).unwrap();
    assert_eq!(by_bucket.chosen.plan, "scan", "{by_bucket}");
    for query in [days, buckets] {
        let rows = |q: Query| db.query("events", &q).unwrap().count();
        assert_eq!(rows(query.clone()), rows(query.hint(Hint::Scan)));
    }
}
