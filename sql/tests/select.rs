//! SELECT over Strata tables: the same statements over a Strata table and over a DataFusion
//! `MemTable` holding the same rows return the same rows, whatever Strata's planner chose for
//! the filters pushed down; `EXPLAIN` shows Strata's plan inside the scan, and no filter
//! above it when the filters were pushed down whole.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::concat_batches;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use strata::{Db, IndexOptions, Options, Record, TableBatch, TableOptions, Value};
use strata_sql::{SqlSession, StrataTable};

/// 3,000 people: a skewed town of 20, an age (missing for one in nine), a name, a score
/// (float), a flag.
fn people(db: &Db) {
    db.create_table("people", ["id"], TableOptions::default())
        .unwrap();
    db.create_index("people", "by_town", ["town"], IndexOptions::local())
        .unwrap();
    db.create_index("people", "by_age", ["age"], IndexOptions::local())
        .unwrap();
    let mut batch = TableBatch::new();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for id in 0..3_000i64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut r = Record::new();
        r.set("id", id);
        let town = (x % 100) * (x % 100) / 500; // 0..19, low values common
        r.set("town", format!("T{town}"));
        if !x.is_multiple_of(9) {
            r.set("age", ((x >> 8) % 80) as i64);
        }
        let names = ["ada", "alan", "grace", "edsger", "barbara", "Ada"];
        r.set("name", names[((x >> 16) % names.len() as u64) as usize]);
        r.set("score", ((x >> 20) % 1000) as f64 / 100.0);
        r.set("vip", (x >> 30).is_multiple_of(7));
        batch.insert(r);
    }
    db.write("people", batch, Default::default()).unwrap();
    db.analyze("people").unwrap();
}

/// A small deterministic generator of conditions over `people`.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn condition(&mut self, depth: u32) -> String {
        if depth > 0 && self.below(3) == 0 {
            let (a, b) = (self.condition(depth - 1), self.condition(depth - 1));
            return match self.below(3) {
                0 => format!("({a} AND {b})"),
                1 => format!("({a} OR {b})"),
                _ => format!("NOT ({a})"),
            };
        }
        let town = |r: &mut Rng| format!("'T{}'", r.below(21));
        let age = |r: &mut Rng| r.below(85).to_string();
        match self.below(10) {
            0 => format!("town = {}", town(self)),
            1 => format!("town IN ({}, {})", town(self), town(self)),
            2 => format!("age > {}", age(self)),
            3 => format!("age BETWEEN {} AND {}", age(self), age(self)),
            4 => "age IS NULL".to_owned(),
            5 => format!("age NOT IN ({}, {})", age(self), age(self)),
            6 => ["name LIKE 'a%'", "name LIKE '%a'", "name NOT LIKE 'gr_ce'"]
                [self.below(3) as usize]
                .to_owned(),
            7 => format!("vip = {}", self.below(2) == 0),
            8 => format!("id < {}", self.below(3_000)),
            _ => format!("score < {}.5", self.below(10)),
        }
    }
}

fn rows(batches: &[RecordBatch]) -> RecordBatch {
    let schema = batches.first().map(|b| b.schema()).expect("a batch");
    concat_batches(&schema, batches).unwrap()
}

#[test]
fn statements_return_what_a_memory_table_of_the_same_rows_returns() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    people(&db);
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    let table = StrataTable::new(Arc::clone(&db), "people").unwrap();
    let all = session.execute("SELECT * FROM people").unwrap();
    assert_eq!(rows(&all).num_rows(), 3_000);
    let memory = MemTable::try_new(
        datafusion::catalog::TableProvider::schema(&table),
        vec![all],
    )
    .unwrap();
    // The reference: DataFusion alone, over the same rows in memory, under the same name.
    let reference = SessionContext::new();
    reference
        .register_table("people", Arc::new(memory))
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let expect = |sql: &str| -> Vec<RecordBatch> {
        runtime
            .block_on(async { reference.sql(sql).await?.collect().await })
            .unwrap()
    };

    let filters = [
        "town = 'T3'",
        "town = 'T19'",
        "id = 1234",
        "id IN (5, 17, 2999, 4000)",
        "age > 30 AND town IN ('T1', 'T2')",
        "town = 'T1' OR age < 5",
        "town = 'T18' OR age = 77",
        "NOT (town = 'T1')",
        "NOT (town = 'T0' OR age >= 40)",
        "name LIKE 'a%'",
        "name NOT LIKE '%a%'",
        "name LIKE 'A_a'",
        "age BETWEEN 10 AND 20",
        "age NOT BETWEEN 10 AND 70",
        "age NOT IN (1, 2, 3)",
        "age IS NULL",
        "age IS NOT NULL AND vip",
        "vip = false AND town <> 'T0'",
        "score > 2.5 AND town = 'T5'",
        "age + 1 > 70",
        "'T4' = town",
        "20 < age",
    ];
    for filter in filters {
        for (select, tail) in [
            ("*", "ORDER BY id"),
            ("id, town", "ORDER BY id LIMIT 7"),
            ("town, count(*) AS n", "GROUP BY town ORDER BY town"),
            // One-column orders Strata gives (the fast path) and ones it does not.
            ("age", "ORDER BY age NULLS FIRST"),
            ("age AS a", "ORDER BY age DESC LIMIT 30"),
            ("name", "ORDER BY name DESC NULLS LAST LIMIT 9"),
            ("id AS key, name", "ORDER BY id DESC LIMIT 4"),
            // Through DataFusion (a computed column), the order pushed into the scan.
            ("id, age + 1 AS a1", "ORDER BY id DESC LIMIT 7"),
            (
                "town, age * 2 AS a2",
                "ORDER BY town DESC NULLS LAST, id DESC LIMIT 11",
            ),
        ] {
            let sql = format!("SELECT {select} FROM people WHERE {filter} {tail}");
            let strata = session.execute(&sql).unwrap();
            let expected = expect(&sql);
            let count = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
            assert_eq!(count(&strata), count(&expected), "{sql}");
            if count(&expected) > 0 {
                assert_eq!(rows(&strata), rows(&expected), "{sql}");
            }
        }
    }
    // Random statements: conditions of AND/OR/NOT over =, IN, BETWEEN, LIKE, IS NULL and
    // comparisons, in ordered, limited, grouped and joined shapes.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..300 {
        let condition = rng.condition(2);
        let sql = match rng.below(5) {
            0 => format!("SELECT * FROM people WHERE {condition} ORDER BY id"),
            1 => format!(
                "SELECT id, name FROM people WHERE {condition} ORDER BY id DESC LIMIT {}",
                1 + rng.below(40)
            ),
            2 => format!(
                "SELECT town, count(*) AS n, max(age) AS oldest FROM people WHERE {condition} \
                 GROUP BY town ORDER BY town"
            ),
            3 => format!(
                "SELECT a.id, b.id AS other FROM people a JOIN people b ON a.age = b.age \
                 WHERE a.id IN (SELECT id FROM people WHERE {condition}) AND b.id < 30 \
                 ORDER BY a.id, b.id"
            ),
            _ => format!(
                "SELECT age FROM people WHERE {condition} ORDER BY age NULLS FIRST LIMIT {}",
                1 + rng.below(60)
            ),
        };
        let strata = session.execute(&sql).unwrap();
        let expected = expect(&sql);
        let count = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
        assert_eq!(count(&strata), count(&expected), "{sql}");
        if count(&expected) > 0 {
            assert_eq!(rows(&strata), rows(&expected), "{sql}");
        }
    }
    // A join of the table with itself.
    let join = "SELECT a.id, b.town FROM people a JOIN people b ON a.id = b.id \
                WHERE a.town = 'T7' OR b.age = 3 ORDER BY a.id";
    assert_eq!(rows(&session.execute(join).unwrap()), rows(&expect(join)));
    // Joins whose build side is small: the probe scan reads what its dynamic filter names.
    for join in [
        "SELECT a.town, count(*) AS n FROM people a JOIN people b ON a.age = b.age \
         WHERE b.id < 50 GROUP BY a.town ORDER BY a.town",
        "SELECT a.id, b.name FROM people a JOIN people b ON a.name = b.name \
         WHERE a.id IN (3, 4) AND b.town = 'T9' ORDER BY a.id, b.id",
        "SELECT id FROM people WHERE age IN (SELECT age FROM people WHERE town = 'T17') \
         ORDER BY id",
    ] {
        assert_eq!(
            rows(&session.execute(join).unwrap()),
            rows(&expect(join)),
            "{join}"
        );
    }
}

#[test]
fn explain_shows_strata_choosing_and_no_filter_above_a_pushed_down_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    people(&db);
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    let plan = |sql: &str| {
        let batches = session.execute(&format!("EXPLAIN {sql}")).unwrap();
        let b = rows(&batches);
        datafusion::arrow::util::pretty::pretty_format_batches(&[b])
            .unwrap()
            .to_string()
    };
    let key = plan("SELECT name FROM people WHERE id = 42");
    assert!(key.contains("plan=primary key"), "{key}");
    let rare = plan("SELECT name FROM people WHERE town = 'T19'");
    assert!(rare.contains("plan=index by_town"), "{rare}");
    assert!(!rare.contains("FilterExec"), "{rare}");
    let common = plan("SELECT name FROM people WHERE vip = false");
    assert!(common.contains("plan=scan"), "{common}");
    // An order Strata reads an index in: no sort, the LIMIT in the scan.
    let ordered = plan("SELECT town, age + 1 FROM people ORDER BY age NULLS FIRST LIMIT 10");
    assert!(!ordered.contains("SortExec"), "{ordered}");
    assert!(ordered.contains("order=age limit=10"), "{ordered}");
    assert!(ordered.contains("plan=index by_age"), "{ordered}");
    // SQL's default NULLS LAST is not Strata's order: DataFusion sorts.
    let nulls_last = plan("SELECT town, age + 1 FROM people ORDER BY age LIMIT 10");
    assert!(nulls_last.contains("SortExec"), "{nulls_last}");
    // A filter Strata does not evaluate stays above the scan.
    let float = plan("SELECT name FROM people WHERE score > 9.5");
    assert!(float.contains("FilterExec"), "{float}");
    assert!(!float.contains("where="), "{float}");
}

#[test]
fn a_value_that_does_not_fit_its_column_is_an_error_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    db.create_table("t", ["id"], TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..1_500i64 {
        let mut r = Record::new();
        r.set("id", id);
        // Past the sample, a float in an integer column — not its smallest or largest
        // value, which the statistics (gathered in the background) would show inference.
        if id == 1_400 {
            r.set("n", 1_400.5);
        } else {
            r.set("n", id * 2);
        }
        batch.insert(r);
    }
    db.write("t", batch, Default::default()).unwrap();
    db.analyze("t").unwrap();
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    let error = session.execute("SELECT n FROM t").unwrap_err().to_string();
    assert!(
        error.contains("table t, key (1400), field n")
            && error.contains("1400.5")
            && error.contains("Int64"),
        "{error}"
    );
    // Bad SQL and unknown tables are errors, not panics.
    assert!(session.execute("SELEC 1").is_err());
    let unknown = session
        .execute("SELECT * FROM nope")
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("nope"), "{unknown}");
    // A column of mixed kinds reads as text.
    db.create_table("mixed", ["id"], TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for (id, v) in [
        (1, Value::Int(7)),
        (2, Value::from("seven")),
        (3, Value::Float(2.5)),
    ] {
        let mut r = Record::new();
        r.set("id", id);
        r.set("v", v);
        batch.insert(r);
    }
    db.write("mixed", batch, Default::default()).unwrap();
    let text = datafusion::arrow::util::pretty::pretty_format_batches(
        &session.execute("SELECT v FROM mixed ORDER BY id").unwrap(),
    )
    .unwrap()
    .to_string();
    assert!(
        text.contains("| 7 ") && text.contains("| seven ") && text.contains("| 2.5 "),
        "{text}"
    );
}

/// A statement reads its database at one snapshot, taken when it is planned: rows written
/// before its result is collected are not in it, and a self-join's two sides agree.
#[test]
fn a_statement_reads_one_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    people(&db);
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let frame = runtime
        .block_on(session.dataframe(
            "SELECT count(*) AS n, count(b.id) AS m FROM people a \
             LEFT JOIN people b ON a.id = b.id",
        ))
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 3_000..3_100i64 {
        let mut r = Record::new();
        r.set("id", id);
        r.set("town", "T1");
        batch.insert(r);
    }
    db.write("people", batch, Default::default()).unwrap();
    let counted = rows(&runtime.block_on(frame.collect()).unwrap());
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&[counted])
        .unwrap()
        .to_string();
    assert!(text.contains("| 3000 | 3000 |"), "{text}");
    // The next statement sees the new rows.
    let after = rows(&session.execute("SELECT count(*) FROM people").unwrap());
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&[after])
        .unwrap()
        .to_string();
    assert!(text.contains("3100"), "{text}");
}

#[test]
fn a_hash_joins_dynamic_filter_reaches_the_probe_scan_and_strata_reads_only_the_keys_nulls_aside() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    people(&db);
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    session
        .execute("CREATE TABLE picks (pick BIGINT PRIMARY KEY, who BIGINT)")
        .unwrap();
    session
        .execute("INSERT INTO picks VALUES (1, 17), (2, 2999), (3, 1234)")
        .unwrap();
    // A sparse column's NULLs reach the join's keys: they match nothing, and must not stop
    // the others from naming the rows to read (before, the probe read 17..=2999).
    session
        .execute("INSERT INTO picks (pick) VALUES (4), (5)")
        .unwrap();
    db.analyze("picks").unwrap();
    let sql = "SELECT p.id, p.town FROM picks k JOIN people p ON p.id = k.who ORDER BY p.id";
    let text = |batches: Vec<RecordBatch>| {
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    let plan = text(session.execute(&format!("EXPLAIN {sql}")).unwrap());
    assert!(plan.contains("HashJoinExec"), "{plan}");
    let probe = plan
        .lines()
        .find(|l| l.contains("StrataScan: table=people"))
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(probe.contains("dynamic="), "{plan}");
    // Run: the scan of 3,000 people returns the 3 the build side names.
    let analyzed = text(session.execute(&format!("EXPLAIN ANALYZE {sql}")).unwrap());
    let probe = analyzed
        .lines()
        .find(|l| l.contains("StrataScan: table=people"))
        .unwrap_or_else(|| panic!("{analyzed}"));
    assert!(probe.contains("metrics=[output_rows=3,"), "{analyzed}");
    let ids: Vec<String> = text(session.execute(sql).unwrap())
        .lines()
        .skip(3)
        .filter_map(|l| l.split('|').nth(1).map(|c| c.trim().to_owned()))
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(ids, ["17", "1234", "2999"]);
}

/// Strata orders NULL first, integers and floats together, NaN and -0.0 by their bits; SQL
/// (DataFusion) orders NULLs last ascending unless told, and floats by IEEE total order.
/// Every `ORDER BY` and comparison gives SQL's answer: Strata orders only where the two agree
/// (one-kind, non-float columns, its NULL end or a key field) and leaves the rest to
/// DataFusion.
#[test]
fn sql_orders_and_compares_nulls_nan_and_negative_zero_as_sql_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    db.create_table("v", ["id"], TableOptions::default())
        .unwrap();
    db.create_index("v", "by_n", ["n"], IndexOptions::local())
        .unwrap();
    db.create_index("v", "by_x", ["x"], IndexOptions::local())
        .unwrap();
    let floats = [
        Some(f64::NAN),
        Some(-0.0),
        Some(0.0),
        None,
        Some(f64::INFINITY),
        Some(-1.5),
        Some(f64::NEG_INFINITY),
        Some(2.0),
    ];
    let mut batch = TableBatch::new();
    for id in 0..40i64 {
        let mut r = Record::new();
        r.set("id", id);
        if id % 3 != 0 {
            r.set("n", (id * 7) % 11);
        }
        if let Some(x) = floats[id as usize % floats.len()] {
            r.set("x", x);
        }
        r.set("s", ["b", "a", "", "ab"][id as usize % 4]);
        batch.insert(r);
    }
    db.write("v", batch, Default::default()).unwrap();
    db.analyze("v").unwrap();
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    let table = StrataTable::new(Arc::clone(&db), "v").unwrap();
    let all = session.execute("SELECT * FROM v").unwrap();
    let memory = MemTable::try_new(
        datafusion::catalog::TableProvider::schema(&table),
        vec![all],
    )
    .unwrap();
    let reference = SessionContext::new();
    reference.register_table("v", Arc::new(memory)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for sql in [
        "SELECT n FROM v ORDER BY n",
        "SELECT n FROM v ORDER BY n DESC",
        "SELECT n FROM v ORDER BY n NULLS FIRST LIMIT 20",
        "SELECT n FROM v ORDER BY n DESC NULLS LAST LIMIT 20",
        "SELECT x FROM v ORDER BY x",
        "SELECT x FROM v ORDER BY x DESC NULLS LAST",
        "SELECT id FROM v WHERE x = 0.0 ORDER BY id",
        "SELECT id FROM v WHERE x > 1.0 ORDER BY id",
        "SELECT id FROM v WHERE x <> x ORDER BY id",
        "SELECT s FROM v ORDER BY s DESC, id",
        "SELECT id FROM v WHERE s < 'ab' ORDER BY id",
        "SELECT id FROM v WHERE n <= 3 OR n IS NULL ORDER BY id DESC",
    ] {
        let strata = session.execute(sql).unwrap();
        let expected = runtime
            .block_on(async { reference.sql(sql).await?.collect().await })
            .unwrap();
        assert_eq!(
            datafusion::arrow::util::pretty::pretty_format_batches(&strata)
                .unwrap()
                .to_string(),
            datafusion::arrow::util::pretty::pretty_format_batches(&expected)
                .unwrap()
                .to_string(),
            "{sql}"
        );
    }
}

/// A statement whose scans Strata expects to return few rows runs on one partition (no
/// repartitioning between a `GROUP BY`'s two halves); one reading a large table keeps the
/// session's parallelism.
#[test]
fn small_statements_run_on_one_partition_large_ones_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    people(&db);
    db.create_table("big", ["id"], TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..(strata_sql::SMALL_STATEMENT_ROWS as i64 + 5_000) {
        let mut r = Record::new();
        r.set("id", id);
        r.set("kind", id % 7);
        batch.insert(r);
    }
    db.write("big", batch, Default::default()).unwrap();
    db.analyze("big").unwrap();
    let session = SqlSession::new(Arc::clone(&db)).unwrap();
    // Two partitions whatever the machine's cores.
    session
        .context()
        .state_ref()
        .write()
        .config_mut()
        .options_mut()
        .execution
        .target_partitions = 2;
    let plan = |sql: &str| {
        let batches = session.execute(&format!("EXPLAIN {sql}")).unwrap();
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    };
    let small = plan("SELECT age, count(*) FROM people WHERE town = 'T7' GROUP BY age");
    assert!(small.contains("plan=index by_town"), "{small}");
    assert!(!small.contains("RepartitionExec"), "{small}");
    let large = plan("SELECT kind, count(*) FROM big GROUP BY kind");
    assert!(large.contains("RepartitionExec"), "{large}");
    // The answers agree with the same statements' rows counted here.
    let counted = rows(
        &session
            .execute("SELECT count(*) AS n FROM (SELECT kind FROM big GROUP BY kind)")
            .unwrap(),
    );
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&[counted])
        .unwrap()
        .to_string();
    assert!(text.contains("| 7 |"), "{text}");
}
