//! Strata's side: import through `strata import`'s code, the queries through `Db::query`,
//! planning, per-row costs and the `strata query` process.

use std::path::Path;
use std::time::{Duration, Instant};

use strata::{Db, Options, Predicate, Projection, Query, Value};
use strata_cli::import::{Format, ImportOptions, import};

use crate::data::{Data, Rng};
use crate::shapes::{Shape, shapes};
use crate::spec::TableSpec;
use strata_compare::median;

use crate::{Bytes, Config, Figures, Timing};

pub fn reps(shape: &Shape, config: &Config) -> u64 {
    ((shape.reps as f64 * config.scale).round() as u64).max(1)
}

pub fn import_options() -> ImportOptions {
    ImportOptions {
        progress: false,
        ..ImportOptions::new(Format::Csv)
    }
}

/// Loads `spec` into `db` through `strata import`'s code, with its import indexes first when
/// `indexed`; rows a second.
pub fn strata_import(db: &Db, spec: &TableSpec, indexed: bool) -> f64 {
    db.create_table(spec.name, spec.key, strata::TableOptions::default())
        .expect("table");
    if indexed {
        for (name, fields) in &spec.import_indexes {
            db.create_index(spec.name, name, *fields, Projection::KeysOnly)
                .expect("index");
        }
    }
    let start = Instant::now();
    let report = import(db, spec.name, &spec.csv, &import_options()).expect("import");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(report.rows, spec.rows, "{}", spec.name);
    spec.rows as f64 / secs
}

pub fn run_strata(tables: &[TableSpec], data: &Data, config: &Config) -> Figures {
    let mut figures = Figures::default();
    let dir = config.dir.join("strata");
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = Db::open(&dir, Options::default()).expect("open");
        figures.import_plain = strata_import(&db, &tables[0], false);
        db.close().expect("close");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (db, rates) = load_strata(tables, &dir);
    figures.import_indexed = rates;
    figures.table_files = table_files(&dir);

    let mut rng = Rng(11);
    let lookups = (20_000.0 * config.scale).max(1.0) as u64;
    let start = Instant::now();
    for _ in 0..lookups {
        let id = 1 + rng.below(config.rows) as i64;
        let row = db.get("customers", &[Value::Int(id)]).expect("get");
        assert!(row.is_some());
    }
    figures.point_get = start.elapsed().as_secs_f64() * 1e6 / lookups as f64;

    for (i, shape) in shapes().iter().enumerate() {
        let mut rng = Rng(100 + i as u64);
        let n = reps(shape, config);
        let queries: Vec<Query> = (0..n)
            .map(|_| (shape.strata)(&(shape.params)(&mut rng, data)))
            .collect();
        let plan = db.explain(shape.table, &queries[0]).expect("explain");
        figures.plans.push(match &plan.chosen.index {
            Some(index) => format!("{} {index}", plan.chosen.plan),
            None => plan.chosen.plan.to_string(),
        });
        let mut rows = 0u64;
        let start = Instant::now();
        for query in &queries {
            for row in db.query(shape.table, query).expect("query") {
                let row = row.expect("row");
                for (_, value) in row.iter() {
                    std::hint::black_box(value);
                }
                rows += 1;
            }
        }
        let micros = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        figures.shapes.push(Timing {
            micros,
            rows: rows as f64 / n as f64,
        });
        // Planning alone, on the same queries (taken in turn, at least 200 plans).
        let start = Instant::now();
        let planned = queries.len().clamp(200, 2_000);
        for query in queries.iter().cycle().take(planned) {
            std::hint::black_box(db.explain(shape.table, query).expect("explain"));
        }
        figures
            .planning_us
            .push(start.elapsed().as_secs_f64() * 1e6 / planned as f64);
    }
    figures.per_row = per_row_costs(&db, data);
    db.flush().expect("flush");
    figures.bytes = tables.iter().map(|t| table_bytes(&db, t)).collect();
    figures.total_bytes = dir_bytes(&dir);
    for spec in tables {
        db.compact(spec.name).expect("compact");
    }
    figures.compacted_bytes = tables.iter().map(|t| table_bytes(&db, t)).collect();
    figures.total_compacted_bytes = dir_bytes(&dir);
    db.close().expect("close");
    if let Some(bin) = &config.strata_bin {
        figures.process_ms = Some(process_query(bin, &dir, config.rows));
    }
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

/// A new database at `dir` with every table imported (its import indexes first), its query
/// indexes created and analysed; and each import's rows a second.
pub fn load_strata(tables: &[TableSpec], dir: &Path) -> (Db, Vec<f64>) {
    let db = Db::open(dir, Options::default()).expect("open");
    let rates = tables
        .iter()
        .map(|spec| strata_import(&db, spec, true))
        .collect();
    for spec in tables {
        for (name, fields, carried) in &spec.query_indexes {
            let projection = if carried.is_empty() {
                Projection::KeysOnly
            } else {
                Projection::Include(carried.iter().map(|f| f.to_string()).collect())
            };
            db.create_index(spec.name, name, *fields, projection)
                .expect("index");
        }
        db.analyze(spec.name).expect("analyze");
    }
    (db, rates)
}

/// The bytes `spec`'s rows take (its fact family, every shard) and its indexes take (every
/// index family), in table files and memtables.
pub fn table_bytes(db: &Db, spec: &TableSpec) -> Bytes {
    let def = db.table(spec.name).expect("definition");
    let mut bytes = Bytes::default();
    db.for_each_store(|_, store| {
        let fact = store.cf(&def.fact_cf())?;
        let sizes = store.sizes(&fact)?;
        bytes.rows += sizes.table_bytes + sizes.memtable_bytes;
        for index in &def.indexes {
            let Ok(cf) = store.cf(&strata::table::catalog::index_cf(spec.name, &index.name)) else {
                continue;
            };
            let sizes = store.sizes(&cf)?;
            bytes.indexes += sizes.table_bytes + sizes.memtable_bytes;
            bytes.index_entries += sizes.table_entries + sizes.memtable_entries;
        }
        Ok(())
    })
    .expect("sizes");
    bytes
}

/// Every file's bytes under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    each_file(dir, |entry| {
        n += entry.metadata().map(|m| m.len()).unwrap_or(0)
    });
    n
}

/// The table files under `dir`.
pub fn table_files(dir: &Path) -> u64 {
    let mut n = 0;
    each_file(dir, |entry| {
        n += u64::from(entry.path().extension().is_some_and(|e| e == "sst"))
    });
    n
}

/// Calls `f` on every file under `dir`, in every folder below it.
fn each_file(dir: &Path, mut f: impl FnMut(&std::fs::DirEntry)) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                f(&entry);
            }
        }
    }
}

/// µs a row of each step, from `explain_analyze`: reading and decoding (a scan of half the
/// table), filtering, and fetching (the ~1,000-row keys-only equality).
pub fn per_row_costs(db: &Db, data: &Data) -> Vec<(String, f64)> {
    let scan = db
        .explain_analyze(
            "customers",
            &Query::default().filter(Predicate::ge("age_years", 53)),
        )
        .expect("analyze");
    let towns = data.thousand_towns();
    let fetch = db
        .explain_analyze(
            "customers",
            &Query::default().filter(Predicate::eq("home_town", towns[0].clone())),
        )
        .expect("analyze");
    let per = |d: Duration, n: u64| d.as_secs_f64() * 1e6 / n.max(1) as f64;
    let total = |a: &strata::Analysis| per(a.total_time, a.actual.rows_read);
    vec![
        (
            "scan: read and decode".into(),
            per(scan.actual.read_time, scan.actual.rows_read),
        ),
        (
            "scan: filter".into(),
            per(scan.actual.filter_time, scan.actual.rows_read),
        ),
        ("scan: whole query".into(), total(&scan)),
        (
            "index: read entry".into(),
            per(fetch.actual.read_time, fetch.actual.rows_read),
        ),
        (
            "index: fetch".into(),
            per(fetch.actual.fetch_time, fetch.actual.fetches),
        ),
        ("index: whole query".into(), total(&fetch)),
    ]
}

/// The median wall time of `strata query` for one primary key, as a process.
pub fn process_query(bin: &Path, dir: &Path, rows: u64) -> f64 {
    let mut times = Vec::new();
    let mut rng = Rng(5);
    for _ in 0..11 {
        let id = 1 + rng.below(rows);
        let start = Instant::now();
        let out = std::process::Command::new(bin)
            .arg("--db")
            .arg(dir)
            .args([
                "query",
                "customers",
                "--where",
                &format!("customer_id = {id}"),
            ])
            .output()
            .expect("run strata");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert!(
            out.status.success(),
            "strata query: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty());
    }
    median(times)
}
