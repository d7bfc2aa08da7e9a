//! `ORDER BY … DESC` served by reading the primary key or an index backwards.
//!
//! What broke: the planner costed `ORDER BY k DESC LIMIT 10` as a plan that stops after ten
//! rows, but the executor read and sorted every match, so the query read the whole table.

use strata::{
    Db, Hint, IndexOptions, Options, Predicate, Projection, Query, Record, TableBatch, Value,
    WriteOptions, record,
};

fn options() -> Options {
    Options {
        auto_analyze: false,
        ..Options::default()
    }
}

#[test]
fn order_by_key_desc_limit_10_reads_about_ten_rows_of_a_million() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_table("t", ["k"], strata::TableOptions::default())
        .unwrap();
    const ROWS: i64 = 1_000_000;
    for chunk in 0..10 {
        let mut batch = TableBatch::new();
        for k in chunk * ROWS / 10..(chunk + 1) * ROWS / 10 {
            batch.insert(record! { "k" => k, "v" => k % 97 });
        }
        db.write("t", batch, WriteOptions::default()).unwrap();
    }
    db.flush().unwrap();
    for descending in [true, false] {
        let query = Query::default().order_by(["k"], descending).limit(10);
        let analysis = db.explain_analyze("t", &query).unwrap();
        assert!(
            analysis.plan.chosen.stops_early,
            "{descending}: {}",
            analysis.plan
        );
        assert!(
            analysis.actual.rows_read <= 100,
            "descending {descending}: read {} rows\n{analysis}",
            analysis.actual.rows_read
        );
        let got: Vec<i64> = db
            .query("t", &query)
            .unwrap()
            .map(|r| key(&r.unwrap()))
            .collect();
        let want: Vec<i64> = if descending {
            (ROWS - 10..ROWS).rev().collect()
        } else {
            (0..10).collect()
        };
        assert_eq!(got, want);
    }
    // A range of the key, backwards.
    let query = Query::default()
        .filter(Predicate::lt("k", 500_000))
        .order_by(["k"], true)
        .limit(3);
    let analysis = db.explain_analyze("t", &query).unwrap();
    assert!(analysis.actual.rows_read <= 100, "{analysis}");
    let got: Vec<i64> = db
        .query("t", &query)
        .unwrap()
        .map(|r| key(&r.unwrap()))
        .collect();
    assert_eq!(got, [499_999, 499_998, 499_997]);
}

fn key(r: &Record) -> i64 {
    match r.get("k") {
        Some(Value::Int(k)) => *k,
        other => panic!("k {other:?}"),
    }
}

/// Row `k`: `x` has 50 values with NULLs, `y` a few; `s` is text.
fn row(k: i64) -> Record {
    let mut r = record! { "k" => k, "y" => k % 3, "s" => format!("s{:03}", k % 211) };
    if k % 13 != 0 {
        r.set("x", Value::Int((k * 7919) % 50));
    }
    r
}

/// Every order, both directions, through the key, a keys-only, an `Include` and an `All`
/// index, one shard and three (merged), with filters and limits: the model's answer.
#[test]
fn descending_order_matches_the_model_on_every_path_and_shard_count() {
    for shards in [1u32, 3] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        db.create_table("t", ["k"], strata::TableOptions::default().shards(shards))
            .unwrap();
        let projections = [
            ("keys", Projection::KeysOnly),
            ("incl", Projection::Include(vec!["s".into()])),
            ("all", Projection::All),
        ];
        for (name, projection) in &projections {
            db.create_index(
                "t",
                &format!("by_x_{name}"),
                ["x", "y"],
                IndexOptions::local().projection(projection.clone()),
            )
            .unwrap();
        }
        let mut batch = TableBatch::new();
        for k in 0..3_000 {
            batch.insert(row(k));
        }
        db.write("t", batch, WriteOptions::default()).unwrap();
        db.flush().unwrap();
        // Some rows changed and deleted after the flush, so memtables and tables merge.
        for k in (0..3_000).step_by(7) {
            db.delete("t", &[Value::Int(k)]).unwrap();
        }
        let mut rows: Vec<Record> = (0..3_000).filter(|k| k % 7 != 0).map(row).collect();
        rows.sort_by_key(key);

        let filters = [
            vec![],
            vec![Predicate::eq("x", 17)],
            vec![Predicate::between("x", 10, 20)],
            vec![Predicate::eq("x", 4), Predicate::ge("y", 1)],
            vec![Predicate::lt("k", 1_234)],
        ];
        let mut hints = vec![None, Some(Hint::Scan)];
        for (name, _) in &projections {
            hints.push(Some(Hint::Index(format!("by_x_{name}"))));
        }
        for filter in &filters {
            for order in [vec!["k"], vec!["x", "y", "k"], vec!["x"]] {
                for descending in [false, true] {
                    for limit in [None, Some(5)] {
                        for hint in &hints {
                            let mut query = Query::default().order_by(&order, descending);
                            for p in filter {
                                query = query.filter(p.clone());
                            }
                            if let Some(l) = limit {
                                query = query.limit(l);
                            }
                            if let Some(h) = hint {
                                if filter.is_empty() || matches!(filter[0].field.as_str(), "k") {
                                    continue; // an index hint needs a bound leading field
                                }
                                query = query.hint(h.clone());
                            }
                            check(&db, &query, &rows, &order, descending, limit);
                        }
                    }
                }
            }
        }
        db.close().unwrap();
    }
}

fn check(
    db: &Db,
    query: &Query,
    rows: &[Record],
    order: &[&str],
    descending: bool,
    limit: Option<u64>,
) {
    let got: Vec<Record> = db
        .query("t", query)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut want: Vec<&Record> = rows
        .iter()
        .filter(|r| {
            query
                .predicates
                .iter()
                .all(|p| p.matches(r.value(&p.field)))
        })
        .collect();
    let sort_key = |r: &Record| -> Vec<Value> {
        order
            .iter()
            .map(|f| r.get(f).cloned().unwrap_or(Value::Null))
            .collect()
    };
    want.sort_by(|a, b| {
        let ord = sort_key(a).cmp(&sort_key(b));
        if descending { ord.reverse() } else { ord }
    });
    let limit = limit.map_or(want.len(), |l| l as usize);
    // Rows equal in the ORDER BY fields may come in any order: compare the order keys, then
    // (without a limit) the sets of rows.
    let got_keys: Vec<Vec<Value>> = got.iter().map(sort_key).collect();
    let want_keys: Vec<Vec<Value>> = want.iter().take(limit).map(|r| sort_key(r)).collect();
    assert_eq!(got_keys, want_keys, "{query:?}");
    if got.len() == want.len() {
        let mut got_ids: Vec<i64> = got.iter().map(key).collect();
        let mut want_ids: Vec<i64> = want.iter().map(|r| key(r)).collect();
        got_ids.sort_unstable();
        want_ids.sort_unstable();
        assert_eq!(got_ids, want_ids, "{query:?}");
    }
}
