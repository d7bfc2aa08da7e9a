//! Prepared statements and the fast path: a single-table query Strata evaluates whole runs
//! through Strata alone, with the result DataFusion would give; parameters of another type,
//! or shapes Strata does not evaluate, run through DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricsSet;
use strata::{Db, IndexOptions, Options, Value};
use strata_sql::SqlSession;
use strata_sql::scan::STRATA_TIME;

fn session() -> (tempfile::TempDir, SqlSession) {
    let (dir, _, session) = people(500, 7);
    (dir, session)
}

/// A database of `rows` people in `towns` towns (`people`, indexed by town), and a session.
fn people(rows: usize, towns: usize) -> (tempfile::TempDir, Arc<Db>, SqlSession) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    session
        .execute("CREATE TABLE people (id BIGINT PRIMARY KEY, name VARCHAR, town VARCHAR)")
        .unwrap();
    let values: Vec<String> = (0..rows)
        .map(|i| format!("({i}, 'n{i}', 'T{}')", i % towns))
        .collect();
    session
        .execute(&format!("INSERT INTO people VALUES {}", values.join(", ")))
        .unwrap();
    db.create_index("people", "by_town", ["town"], IndexOptions::local())
        .unwrap();
    (dir, db, session)
}

fn ids(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            (0..ids.len()).map(|i| ids.value(i)).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_prepared_point_query_runs_through_strata_alone_and_returns_what_sql_returns() {
    let (_dir, session) = session();
    let by_id = session
        .prepare("SELECT id, name FROM people WHERE id = $1")
        .unwrap();
    assert!(by_id.is_fast());
    assert_eq!(by_id.params(), 1);
    for id in [0i64, 7, 499, 500] {
        let got = by_id.execute(&[Value::Int(id)]).unwrap();
        let sql = session
            .execute(&format!("SELECT id, name FROM people WHERE id = {id}"))
            .unwrap();
        assert_eq!(ids(&got), ids(&sql));
        assert_eq!(got[0].schema(), sql[0].schema());
        if id < 500 {
            let names = got[0]
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            assert_eq!(names.value(0), format!("n{id}"));
        }
    }
    // A text parameter for an integer column: not Strata's comparison; DataFusion casts or
    // refuses, as it would for the same SQL.
    let text = by_id.execute(&[Value::from("7")]);
    match text {
        Ok(b) => assert_eq!(ids(&b), vec![7]),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let e = by_id.execute(&[]).unwrap_err();
    assert!(e.to_string().contains("takes 1 parameters, got 0"), "{e}");
}

#[test]
fn prepared_shapes_beyond_the_fast_path_run_through_datafusion() {
    let (_dir, session) = session();
    let ordered = session
        .prepare("SELECT id FROM people WHERE town = $1 ORDER BY id DESC LIMIT 3")
        .unwrap();
    assert!(ordered.is_fast());
    assert_eq!(
        ids(&ordered.execute(&[Value::from("T2")]).unwrap()),
        vec![499, 492, 485]
    );
    let grouped = session
        .prepare("SELECT count(*) AS n FROM people WHERE town = $1 AND id < $2")
        .unwrap();
    assert!(!grouped.is_fast());
    let n = grouped
        .execute(&[Value::from("T0"), Value::Int(100)])
        .unwrap();
    assert_eq!(ids(&n), vec![15]);
    // DML with parameters.
    let insert = session
        .prepare("INSERT INTO people VALUES ($1, $2, $3)")
        .unwrap();
    assert_eq!(insert.params(), 3);
    insert
        .execute(&[Value::Int(900), Value::from("o'hara"), Value::from("T9")])
        .unwrap();
    let by_town = session
        .prepare("SELECT id FROM people WHERE town = $1")
        .unwrap();
    assert_eq!(
        ids(&by_town.execute(&[Value::from("T9")]).unwrap()),
        vec![900]
    );
}

#[test]
fn a_prepared_query_inside_a_transaction_sees_its_writes() {
    let (_dir, session) = session();
    let by_id = session
        .prepare("SELECT id FROM people WHERE id = $1")
        .unwrap();
    session.execute("BEGIN").unwrap();
    session.execute("DELETE FROM people WHERE id = 3").unwrap();
    assert!(ids(&by_id.execute(&[Value::Int(3)]).unwrap()).is_empty());
    session.execute("ROLLBACK").unwrap();
    assert_eq!(ids(&by_id.execute(&[Value::Int(3)]).unwrap()), vec![3]);
}

/// A statement through DataFusion is optimised once, with its placeholders; each run binds
/// its parameters into that plan. Every run answers as the statement with those values
/// written in does — a group, a join, a subquery — so nothing of one run's values stays.
#[test]
fn a_prepared_statement_through_datafusion_answers_each_parameter_as_its_literal_text_does() {
    let (_dir, session) = session();
    let shapes = [
        "SELECT town, count(*) AS n, min(id) AS first FROM people \
         WHERE town = $1 AND id >= $2 GROUP BY town",
        "SELECT a.id, b.name FROM people a JOIN people b ON b.id = a.id + 7 \
         WHERE a.town = $1 AND a.id < $2 ORDER BY a.id",
        "SELECT id FROM people WHERE town = $1 AND id > $2 \
         AND id IN (SELECT id + 1 FROM people WHERE town = 'T3') ORDER BY id",
        // A sort keeping its first rows, whose dynamic filter (the rows' bound so far)
        // reaches the scans below the join: each run's must start empty.
        "SELECT a.id, b.name FROM people a JOIN people b ON b.id = a.id + 7 \
         WHERE a.town = $1 AND a.id >= $2 ORDER BY b.name DESC, a.id LIMIT 3",
    ];
    let text = |batches: Vec<RecordBatch>| {
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    for sql in shapes {
        let prepared = session.prepare(sql).unwrap();
        assert!(!prepared.is_fast(), "{sql}");
        for (town, from) in [
            ("T1", 0),
            ("T4", 250),
            ("T6", 490),
            ("T1", 400),
            ("none", 0),
        ] {
            let literal = sql
                .replace("$1", &format!("'{town}'"))
                .replace("$2", &from.to_string());
            let want = text(session.execute(&literal).unwrap());
            let got = text(
                prepared
                    .execute(&[Value::from(town), Value::Int(from)])
                    .unwrap(),
            );
            assert_eq!(got, want, "{sql} with {town}, {from}");
        }
    }
}

/// A prepared join keeps its physical plan from the first run. Each run must still read its
/// own snapshot and keys: the hash join's dynamic filter (the build side's keys, which Strata
/// turns into lookups on the probe side) is made afresh — with the last run's, a run would
/// find only the visits of the people the run before it joined.
#[test]
fn a_prepared_join_keeps_its_physical_plan_and_each_run_reads_its_own_keys_and_snapshot() {
    let (_dir, session) = session();
    session
        .execute("CREATE TABLE visits (id BIGINT PRIMARY KEY, person BIGINT, day VARCHAR)")
        .unwrap();
    let visits: Vec<String> = (0..1500)
        .map(|i| format!("({i}, {}, 'd{}')", (i * 7) % 500, i % 30))
        .collect();
    session
        .execute(&format!("INSERT INTO visits VALUES {}", visits.join(", ")))
        .unwrap();
    session
        .execute("CREATE INDEX by_person ON visits (person)")
        .unwrap();
    let sql = "SELECT p.id, v.id FROM people p JOIN visits v ON v.person = p.id \
               WHERE p.town = $1 AND p.id < $2 ORDER BY p.id, v.id";
    let literal = |town: &str, below: i64| {
        sql.replace("$1", &format!("'{town}'"))
            .replace("$2", &below.to_string())
    };
    let pairs = |batches: &[RecordBatch]| {
        datafusion::arrow::util::pretty::pretty_format_batches(batches)
            .unwrap()
            .to_string()
    };
    let join = session.prepare(sql).unwrap();
    assert!(!join.reuses_plan());
    for (town, below) in [("T1", 60), ("T4", 40), ("T1", 60), ("T6", 500), ("T0", 0)] {
        let got = join
            .execute(&[Value::from(town), Value::Int(below)])
            .unwrap();
        let want = session.execute(&literal(town, below)).unwrap();
        assert_eq!(pairs(&got), pairs(&want), "{town} below {below}");
        assert!(join.reuses_plan(), "the plan is kept after a run");
    }
    // A write between runs: the next run reads a new snapshot.
    session
        .execute("INSERT INTO visits VALUES (5000, 8, 'd1')")
        .unwrap();
    let got = join.execute(&[Value::from("T1"), Value::Int(60)]).unwrap();
    assert!(pairs(&got).contains("5000"), "{}", pairs(&got));
    assert_eq!(
        pairs(&got),
        pairs(&session.execute(&literal("T1", 60)).unwrap())
    );
    // Inside a transaction, its own writes.
    session.execute("BEGIN").unwrap();
    session
        .execute("DELETE FROM visits WHERE id = 5000")
        .unwrap();
    let got = join.execute(&[Value::from("T1"), Value::Int(60)]).unwrap();
    assert!(!pairs(&got).contains("5000"), "{}", pairs(&got));
    session.execute("ROLLBACK").unwrap();
    // A value Strata does not take for that column (text for an integer): planned again
    // with it, as its literal text is.
    let text = join.execute(&[Value::from("T1"), Value::from("60")]);
    let want = session.execute(&sql.replace("$1", "'T1'").replace("$2", "'60'"));
    match (text, want) {
        (Ok(got), Ok(want)) => assert_eq!(pairs(&got), pairs(&want)),
        (got, want) => assert_eq!(got.is_err(), want.is_err()),
    }
    assert!(join.reuses_plan());
}

/// A plan whose leaves are not all Strata scans (here a `VALUES` list, whose source DataFusion
/// does not renew between runs) is planned again each run, and answers each run's values.
#[test]
fn a_prepared_plan_that_cannot_run_twice_is_planned_each_run() {
    let (_dir, session) = session();
    let listed = session
        .prepare(
            "SELECT p.id FROM people p JOIN (VALUES (1), (8), (15), (22)) AS v(x) \
             ON v.x = p.id WHERE p.town = $1 ORDER BY p.id",
        )
        .unwrap();
    for (town, want) in [
        ("T1", vec![1, 8, 15, 22]),
        ("T2", vec![]),
        ("T1", vec![1, 8, 15, 22]),
    ] {
        let got = listed.execute(&[Value::from(town)]).unwrap();
        assert_eq!(ids(&got), want, "{town}");
    }
    assert!(!listed.reuses_plan());
    // A scalar subquery: its runs' copies would share one slot for its value.
    let scalar = session
        .prepare(
            "SELECT id FROM people WHERE town = $1 \
             AND id < (SELECT count(*) FROM people WHERE town = $2) ORDER BY id",
        )
        .unwrap();
    for (town, counted) in [("T1", "T2"), ("T3", "T0")] {
        let got = scalar
            .execute(&[Value::from(town), Value::from(counted)])
            .unwrap();
        let want = session
            .execute(&format!(
                "SELECT id FROM people WHERE town = '{town}' \
                 AND id < (SELECT count(*) FROM people WHERE town = '{counted}') ORDER BY id"
            ))
            .unwrap();
        assert_eq!(ids(&got), ids(&want), "{town}, {counted}");
        assert!(!ids(&got).is_empty());
    }
    assert!(!scalar.reuses_plan());
    // An aggregate's plan is kept, and each run answers its own values.
    let top = session
        .prepare("SELECT max(id) AS top FROM people WHERE town = $1 AND id < $2")
        .unwrap();
    for (town, below, want) in [("T2", 500, 499), ("T2", 100, 93), ("T3", 50, 45)] {
        let got = top
            .execute(&[Value::from(town), Value::Int(below)])
            .unwrap();
        assert_eq!(ids(&got), vec![want], "{town} below {below}");
    }
    assert!(top.reuses_plan());
}

/// The sum over `plan` and every node below it of what `metric` reads of each node's
/// metrics.
fn metric_sum(
    plan: &Arc<dyn ExecutionPlan>,
    metric: &dyn Fn(&MetricsSet) -> Option<usize>,
) -> usize {
    let own = plan.metrics().and_then(|m| metric(&m)).unwrap_or(0);
    own + plan
        .children()
        .into_iter()
        .map(|c| metric_sum(c, metric))
        .sum::<usize>()
}

#[test]
fn each_run_through_datafusion_gives_its_plan_with_that_runs_metrics() {
    let (_dir, session) = session();
    // The fast path: no plan.
    let point = session
        .prepare("SELECT * FROM people WHERE id = $1")
        .unwrap();
    let (got, plan) = point.execute_with_plan(&[Value::Int(3)]).unwrap();
    assert_eq!(ids(&got), vec![3]);
    assert!(plan.is_none());
    // A self-join, its plan kept from the second run on: each run's plan counts that run's
    // rows and Strata's time, not the runs' before it.
    let join = session
        .prepare(
            "SELECT a.id, b.id FROM people a JOIN people b ON b.town = a.town \
             WHERE a.id < $1 AND b.id < $2 ORDER BY a.id, b.id",
        )
        .unwrap();
    for (a, b) in [(3, 20), (3, 20), (10, 50), (2, 7), (10, 50)] {
        let (got, plan) = join
            .execute_with_plan(&[Value::Int(a), Value::Int(b)])
            .unwrap();
        let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
        let plan = plan.unwrap();
        let returned = plan.metrics().and_then(|m| m.output_rows());
        assert_eq!(returned, Some(rows), "{a}, {b}: the root's rows");
        // The nodes' rows: at least the join's and the first side's scan's (the second
        // side's scan reads only the towns the first side's rows have).
        let scanned = metric_sum(&plan, &|m| m.output_rows());
        assert!(
            scanned >= rows + a as usize,
            "{a}, {b}: {scanned} rows counted"
        );
        let strata = metric_sum(&plan, &|m| m.sum_by_name(STRATA_TIME).map(|v| v.as_usize()));
        assert!(strata > 0, "{a}, {b}: Strata's time");
    }
    assert!(join.reuses_plan());
    // A value that does not convert (text for an integer) plans that run anew: its plan too.
    let (got, plan) = join
        .execute_with_plan(&[Value::from("3"), Value::Int(20)])
        .unwrap();
    let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
    let returned = plan.unwrap().metrics().and_then(|m| m.output_rows());
    assert_eq!(returned, Some(rows));
    // A plan made each run has its run's too.
    let listed = session
        .prepare(
            "SELECT p.id FROM people p JOIN (VALUES (1), (8), (15)) AS v(x) \
             ON v.x = p.id WHERE p.town = $1",
        )
        .unwrap();
    let (got, plan) = listed.execute_with_plan(&[Value::from("T1")]).unwrap();
    assert_eq!(
        plan.unwrap().metrics().and_then(|m| m.output_rows()),
        Some(ids(&got).len())
    );
    assert!(!listed.reuses_plan());
    // A statement that is not a query: none.
    let insert = session
        .prepare("INSERT INTO people VALUES ($1, 'new', 'T9')")
        .unwrap();
    let (_, plan) = insert.execute_with_plan(&[Value::Int(9000)]).unwrap();
    assert!(plan.is_none());
}

/// DataFusion's own `PREPARE` / `EXECUTE`, in a context of the product's own: it optimises the
/// plan with its placeholders, then again with the values in, simplifying `flag = true` to
/// `flag` — which Strata's scans do not take, so its placeholders are not pushed into them.
#[test]
fn datafusions_own_prepare_and_execute_run_over_strata_tables() {
    let (_dir, session) = session();
    session
        .execute("CREATE TABLE flags (id BIGINT PRIMARY KEY, flag BOOLEAN)")
        .unwrap();
    session
        .execute("INSERT INTO flags VALUES (1, true), (2, false), (3, true)")
        .unwrap();
    let context = datafusion::prelude::SessionContext::new();
    context.register_catalog(
        "strata",
        Arc::new(strata_sql::StrataCatalog::new(Arc::clone(session.db()))),
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let got = runtime.block_on(async {
        context
            .sql("PREPARE on_off AS SELECT id FROM strata.public.flags WHERE flag = $1 ORDER BY id")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let on = context
            .sql("EXECUTE on_off(true)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let off = context
            .sql("EXECUTE on_off(false)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        (ids(&on), ids(&off))
    });
    assert_eq!(got, (vec![1, 3], vec![2]));
}

#[test]
fn a_damaged_stored_value_read_by_the_fast_path_is_the_engines_corruption_error() {
    let (_dir, db, session) = people(3000, 100);
    let prepared = session
        .prepare("SELECT id, name FROM people WHERE town = $1")
        .unwrap();
    let (_, plan) = prepared.execute_with_plan(&[Value::from("T7")]).unwrap();
    assert!(plan.is_none(), "the fast path runs it");
    // Read the way the fast path reads it, through the index, its rows are lent where they
    // lie.
    let query = strata::Query::default()
        .filter(strata::Predicate::eq("town", "T7"))
        .select(["id", "name"]);
    let explain = db.explain("people", &query).unwrap();
    assert!(
        matches!(explain.chosen.access, strata::Access::Index { .. }),
        "{explain}"
    );
    let mut rows = db.query("people", &query).unwrap();
    let first = rows.next_ref().unwrap().expect("a row of T7");
    assert!(first.as_record().is_none(), "lent where it lies");
    drop(rows);
    // Row 7's name made not UTF-8 where it is stored (its structure intact): the fast path
    // lends the rows it fetches through the index from their stored bytes.
    let raw = db.raw_store();
    let fact = raw.cf("t/people").unwrap();
    let def = db.table("people").unwrap();
    let key = strata::table::entry::encode_primary_key(&def, &[&Value::Int(7)]).unwrap();
    let mut stored = raw.get(&fact, &key).unwrap().expect("row 7").to_vec();
    let at = stored
        .windows(2)
        .position(|w| w == b"n7")
        .expect("the row's name where it is stored");
    stored[at] = 0xff;
    raw.put(&fact, &key, &stored).unwrap();
    match prepared.execute(&[Value::from("T7")]) {
        Err(strata_sql::Error::Strata(strata::Error::Corruption { family, .. })) => {
            assert_eq!(family, "t/people");
        }
        other => panic!("a damaged row read as {other:?}"),
    }
    // The other towns' rows read as before.
    assert_eq!(
        ids(&prepared.execute(&[Value::from("T8")]).unwrap()).len(),
        30
    );
}
