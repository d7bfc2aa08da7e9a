//! SQLite's side: the shell's `.import`, the same indexes, prepared statements.

use std::path::Path;
use std::time::Instant;

use strata::Value;

use crate::data::{Data, FIELDS, IMPORT_INDEXES, QUERY_INDEXES, Rng};
use crate::shapes::shapes;
use crate::strata_side::reps;
use crate::{Config, Figures, Timing};

pub fn to_sql(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Null => rusqlite::types::Value::Null,
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Float(f) => rusqlite::types::Value::Real(*f),
        Value::Str(s) => rusqlite::types::Value::Text(s.clone()),
        other => panic!("no SQL form for {other}"),
    }
}

pub fn sqlite_import(
    csv: &Path,
    dir: &Path,
    indexed: bool,
    rows: u64,
) -> (rusqlite::Connection, f64) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("dir");
    let mut db = rusqlite::Connection::open(dir.join("customers.db")).expect("open");
    db.execute_batch(
        "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;
         CREATE TABLE customers(id INTEGER PRIMARY KEY, first TEXT, last TEXT, town TEXT,
                                status TEXT, age INTEGER, grp INTEGER, score INTEGER,
                                balance REAL, phone TEXT, referrer INTEGER, email TEXT);",
    )
    .expect("schema");
    if indexed {
        for (name, fields) in IMPORT_INDEXES {
            db.execute_batch(&format!(
                "CREATE INDEX {name} ON customers({})",
                fields.join(", ")
            ))
            .expect("index");
        }
    }
    let start = Instant::now();
    let mut reader = csv::Reader::from_path(csv).expect("CSV");
    let tx = db.transaction().expect("begin");
    let mut count = 0u64;
    {
        let mut insert = tx
            .prepare("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            .expect("prepare");
        let mut record = csv::StringRecord::new();
        while reader.read_record(&mut record).expect("CSV row") {
            // The shell's .import binds an empty cell as an empty string; NULL is what
            // Strata stores for it, so bind NULL here to ask both the same questions.
            let cells = record.iter().map(|c| (!c.is_empty()).then_some(c));
            insert
                .execute(rusqlite::params_from_iter(cells))
                .expect("insert");
            count += 1;
        }
    }
    tx.commit().expect("commit");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(count, rows);
    (db, rows as f64 / secs)
}

pub fn run_sqlite(csv: &Path, data: &Data, config: &Config) -> Figures {
    let mut figures = Figures::default();
    let dir = config.dir.join("sqlite");
    let (db, rate) = sqlite_import(csv, &dir, false, config.rows);
    figures.import_plain = rate;
    drop(db);
    let (db, rate) = sqlite_import(csv, &dir, true, config.rows);
    figures.import_indexed = rate;
    for (name, fields, carried) in QUERY_INDEXES {
        let columns: Vec<&str> = fields.iter().chain(carried).copied().collect();
        db.execute_batch(&format!(
            "CREATE INDEX {name} ON customers({})",
            columns.join(", ")
        ))
        .expect("index");
    }
    db.execute_batch("ANALYZE").expect("analyze");

    let mut rng = Rng(11);
    let lookups = (20_000.0 * config.scale).max(1.0) as u64;
    let mut point = db
        .prepare_cached("SELECT * FROM customers WHERE id = ?1")
        .expect("prepare");
    let start = Instant::now();
    for _ in 0..lookups {
        let id = 1 + rng.below(config.rows) as i64;
        let found = point
            .query_row([id], |row| {
                (0..FIELDS)
                    .map(|i| row.get::<_, rusqlite::types::Value>(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .expect("point query");
        std::hint::black_box(found);
    }
    figures.point_get = start.elapsed().as_secs_f64() * 1e6 / lookups as f64;
    drop(point);

    for (i, shape) in shapes().iter().enumerate() {
        let mut rng = Rng(100 + i as u64);
        let n = reps(shape, config);
        let params: Vec<Vec<rusqlite::types::Value>> = (0..n)
            .map(|_| {
                (shape.sql_params)((shape.params)(&mut rng, data))
                    .iter()
                    .map(to_sql)
                    .collect()
            })
            .collect();
        let mut statement = db.prepare_cached(shape.sql).expect("prepare");
        let columns = statement.column_count();
        figures.plans.push(sqlite_plan(&db, shape.sql, &params[0]));
        let mut rows = 0u64;
        let start = Instant::now();
        for p in &params {
            let mut result = statement
                .query(rusqlite::params_from_iter(p.iter()))
                .expect("query");
            while let Some(row) = result.next().expect("row") {
                for c in 0..columns {
                    std::hint::black_box(row.get::<_, rusqlite::types::Value>(c).expect("value"));
                }
                rows += 1;
            }
        }
        let micros = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        figures.shapes.push(Timing {
            micros,
            rows: rows as f64 / n as f64,
        });
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

pub fn sqlite_plan(
    db: &rusqlite::Connection,
    sql: &str,
    params: &[rusqlite::types::Value],
) -> String {
    let mut explain = db
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("explain");
    let details: Vec<String> = explain
        .query_map(rusqlite::params_from_iter(params.iter()), |row| {
            row.get::<_, String>(3)
        })
        .expect("plan")
        .collect::<Result<_, _>>()
        .expect("plan rows");
    details.join("; ")
}
