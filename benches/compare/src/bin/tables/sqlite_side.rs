//! SQLite's side: the shell's `.import`, the same indexes, prepared statements.

use std::path::Path;
use std::time::Instant;

use strata::Value;

use crate::data::{Data, FIELDS, Rng};
use crate::shapes::shapes;
use crate::spec::TableSpec;
use crate::strata_side::reps;
use crate::{Bytes, Config, Figures, Timing};

pub fn to_sql(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Null => rusqlite::types::Value::Null,
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Float(f) => rusqlite::types::Value::Real(*f),
        Value::Str(s) => rusqlite::types::Value::Text(s.clone()),
        other => panic!("no SQL form for {other}"),
    }
}

/// SQLite's memory for the fair run: a page cache the size of Strata's block cache, and a
/// memory map over the whole file, as Strata maps its table files (STYLE #18).
pub fn fair_pragmas(db: &rusqlite::Connection) -> String {
    let cache_kib = strata::Options::default().store.block_cache_bytes / 1024;
    db.execute_batch(&format!(
        "PRAGMA cache_size = -{cache_kib}; PRAGMA mmap_size = {};",
        1u64 << 40
    ))
    .expect("pragmas");
    describe(db)
}

/// The page cache and memory map a connection has, as SQLite reports them.
pub fn describe(db: &rusqlite::Connection) -> String {
    let cache: i64 = db
        .query_row("PRAGMA cache_size", [], |r| r.get(0))
        .expect("cache_size");
    let mmap: i64 = db
        .query_row("PRAGMA mmap_size", [], |r| r.get(0))
        .expect("mmap_size");
    let cache = if cache < 0 {
        format!("{} KiB", -cache)
    } else {
        format!("{cache} pages")
    };
    format!("cache_size {cache}, mmap_size {} MiB", mmap >> 20)
}

/// Loads `spec` as the `sqlite3` shell's `.import` does (one transaction, a prepared `INSERT`
/// per row, every field bound as text, which the column's type affinity converts), with its
/// import indexes first when `indexed`; rows a second.
pub fn sqlite_import(db: &mut rusqlite::Connection, spec: &TableSpec, indexed: bool) -> f64 {
    db.execute_batch(&format!(
        "CREATE TABLE {}({});",
        spec.name, spec.sql_columns
    ))
    .expect("schema");
    if indexed {
        for (name, fields) in &spec.import_indexes {
            db.execute_batch(&format!(
                "CREATE INDEX {name} ON {}({})",
                spec.name,
                fields.join(", ")
            ))
            .expect("index");
        }
    }
    let start = Instant::now();
    let mut reader = csv::Reader::from_path(&spec.csv).expect("CSV");
    let columns = reader.headers().expect("header").len();
    let tx = db.transaction().expect("begin");
    let mut count = 0u64;
    {
        let marks = vec!["?"; columns].join(", ");
        let mut insert = tx
            .prepare(&format!("INSERT INTO {} VALUES ({marks})", spec.name))
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
    assert_eq!(count, spec.rows, "{}", spec.name);
    spec.rows as f64 / secs
}

/// A new database at `path` with every table imported (its import indexes first), its query
/// indexes created (a covering one with its carried columns appended) and `ANALYZE` run; and
/// each import's rows a second.
pub fn load_sqlite(tables: &[TableSpec], path: &Path) -> (rusqlite::Connection, Vec<f64>) {
    let mut db = open(path);
    fair_pragmas(&db);
    let rates = tables
        .iter()
        .map(|spec| sqlite_import(&mut db, spec, true))
        .collect();
    for spec in tables {
        for (name, fields, carried) in &spec.query_indexes {
            let columns: Vec<&str> = fields.iter().chain(carried.iter()).copied().collect();
            db.execute_batch(&format!(
                "CREATE INDEX {name} ON {}({})",
                spec.name,
                columns.join(", ")
            ))
            .expect("index");
        }
    }
    db.execute_batch("ANALYZE").expect("analyze");
    (db, rates)
}

pub fn open(path: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(path).expect("open");
    db.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;")
        .expect("pragmas");
    db
}

pub fn run_sqlite(tables: &[TableSpec], data: &Data, config: &Config) -> Figures {
    let mut figures = Figures::default();
    let dir = config.dir.join("sqlite");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("plain.db");
    {
        let mut db = open(&path);
        fair_pragmas(&db);
        figures.import_plain = sqlite_import(&mut db, &tables[0], false);
    }
    let path = dir.join("tables.db");
    {
        let (db, rates) = load_sqlite(tables, &path);
        figures.import_indexed = rates;
        figures.bytes = tables.iter().map(|t| table_bytes(&db, t)).collect();
    }
    figures.total_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);

    // The fair run, then SQLite as it comes (its default 2 MiB cache, no memory map), each on
    // a new connection so neither starts with the other's cache.
    let db = open(&path);
    figures.sqlite_config = fair_pragmas(&db);
    run_shapes(&db, data, config, &mut figures, false);
    drop(db);
    let db = open(&path);
    figures.sqlite_default_config = describe(&db);
    run_shapes(&db, data, config, &mut figures, true);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

/// The bytes `spec`'s rows and indexes take in the file (SQLite's `dbstat`), and its index
/// entries.
fn table_bytes(db: &rusqlite::Connection, spec: &TableSpec) -> Bytes {
    let size = |name: &str| -> u64 {
        db.query_row(
            "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .expect("dbstat") as u64
    };
    let mut bytes = Bytes {
        rows: size(spec.name),
        ..Bytes::default()
    };
    let mut names: Vec<String> = Vec::new();
    {
        let mut list = db
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1")
            .expect("indexes");
        let found = list
            .query_map([spec.name], |r| r.get::<_, String>(0))
            .expect("indexes");
        names.extend(found.map(|n| n.expect("name")));
    }
    for name in names {
        bytes.indexes += size(&name);
        bytes.index_entries += spec.rows;
    }
    bytes
}

fn run_shapes(
    db: &rusqlite::Connection,
    data: &Data,
    config: &Config,
    figures: &mut Figures,
    defaults: bool,
) {
    let mut rng = Rng(11);
    let lookups = (20_000.0 * config.scale).max(1.0) as u64;
    let mut point = db
        .prepare_cached("SELECT * FROM customers WHERE customer_id = ?1")
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
    let point_get = start.elapsed().as_secs_f64() * 1e6 / lookups as f64;
    drop(point);

    let mut timings = Vec::new();
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
        if !defaults {
            figures.plans.push(sqlite_plan(db, shape.sql, &params[0]));
        }
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
        timings.push(Timing {
            micros,
            rows: rows as f64 / n as f64,
        });
    }
    if defaults {
        figures.default_point_get = point_get;
        figures.default_shapes = timings;
    } else {
        figures.point_get = point_get;
        figures.shapes = timings;
    }
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
