//! Tables against SQLite, on the same CSV file: import throughput without and with three
//! indexes, an indexed point query and a selective index query.
//!
//! - The file: `--rows` customers (default 1,000,000; id, first, last, town, age, email,
//!   balance), about 80 bytes a line, generated once from a fixed seed. Towns are skewed
//!   (Zipf over 300), so the rare ones make selective queries.
//! - Strata imports through `strata_cli::import::import`, the code of `strata import`: both
//!   of its passes (check and infer types, then atomic batches of 1,000), logs synced at the
//!   end. The indexes are `by_town (town)`, `by_town_last (town, last)` and
//!   `by_email (email)`, keys only, maintained in each batch.
//! - SQLite does what the `sqlite3` shell's `.import` does on an existing table: one
//!   transaction, a prepared `INSERT` per row with every field bound as text (the declared
//!   column types convert them), with the shell's defaults (`journal_mode=DELETE`,
//!   `synchronous=FULL`). Its indexes are the same three, created before the import.
//! - Point query: `--lookups` random ids, the whole row (`Db::get`; `SELECT * … WHERE id = ?`).
//! - Selective index query: the whole rows of one of the 100 rarest towns, `--queries` times
//!   (`town = ?` through the planner; the same `SELECT` through SQLite's).
//!
//! Each engine runs with its defaults, after `analyze` / `ANALYZE`. With `--rounds N` the
//! engines take turns N times and each figure is the median.
//!
//! Usage: `strata-compare-tables [--rows N] [--lookups N] [--queries N] [--rounds N]
//! [--dir DIR]`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use strata::{Db, Options, Predicate, Projection, Query, Value};
use strata_cli::import::{Format, ImportOptions, import};

struct Config {
    rows: u64,
    lookups: u64,
    queries: u64,
    rounds: usize,
    dir: PathBuf,
}

fn parse_args() -> Config {
    let mut config = Config {
        rows: 1_000_000,
        lookups: 100_000,
        queries: 2_000,
        rounds: 1,
        dir: std::env::temp_dir().join("strata-compare-tables"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("{arg} needs a value");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "--rows" => config.rows = value().parse().expect("--rows: a number"),
            "--lookups" => config.lookups = value().parse().expect("--lookups: a number"),
            "--queries" => config.queries = value().parse().expect("--queries: a number"),
            "--rounds" => config.rounds = value().parse().expect("--rounds: a number"),
            "--dir" => config.dir = PathBuf::from(value()),
            other => {
                eprintln!(
                    "unknown argument {other}\nusage: strata-compare-tables [--rows N] \
                     [--lookups N] [--queries N] [--rounds N] [--dir DIR]"
                );
                std::process::exit(2)
            }
        }
    }
    config.rounds = config.rounds.max(1);
    config
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const TOWNS: usize = 300;
const FIRST: [&str; 12] = [
    "Ada", "Alan", "Barbara", "Claude", "Edsger", "Frances", "Grace", "John", "Leslie", "Margaret",
    "Niklaus", "Tony",
];
const LAST: [&str; 16] = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Lopez",
    "Wilson", "Anderson", "Taylor", "Moore", "Lee", "Walker", "Knuth",
];

fn town(i: usize) -> String {
    format!("Town{i:03}")
}

/// Writes the CSV unless it exists with the right number of rows.
fn generate(path: &Path, rows: u64) {
    let marker = path.with_extension(format!("{rows}.done"));
    if marker.exists() && path.exists() {
        return;
    }
    eprintln!("generating {rows} rows into {} ...", path.display());
    let mut cumulative = Vec::with_capacity(TOWNS);
    let mut total = 0.0;
    for k in 0..TOWNS {
        total += 1.0 / ((k + 1) as f64).powf(1.1);
        cumulative.push(total);
    }
    let mut rng = Rng(7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create CSV"));
    writeln!(out, "id,first,last,town,age,email,balance").expect("write");
    for id in 1..=rows {
        let first = FIRST[rng.below(FIRST.len() as u64) as usize];
        let last = LAST[rng.below(LAST.len() as u64) as usize];
        let x = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let t = cumulative.partition_point(|c| *c < x).min(TOWNS - 1);
        writeln!(
            out,
            "{id},{first},{last},{},{},{}.{}{id}@example.com,{}.{:02}",
            town(t),
            18 + rng.below(70),
            first.to_lowercase(),
            last.to_lowercase(),
            rng.below(100_000),
            rng.below(100)
        )
        .expect("write");
    }
    out.flush().expect("flush");
    std::fs::write(marker, b"").expect("marker");
}

/// One engine's figures: import rows/s without and with indexes, point lookups/s, selective
/// queries/s.
type Figures = [f64; 4];

const INDEXES: [(&str, &[&str]); 3] = [
    ("by_town", &["town"]),
    ("by_town_last", &["town", "last"]),
    ("by_email", &["email"]),
];

fn rare_town(rng: &mut Rng) -> String {
    town(TOWNS - 1 - rng.below(100) as usize)
}

fn run_strata(csv: &Path, config: &Config) -> Figures {
    let mut figures = [0.0; 4];
    for (slot, indexed) in [(0, false), (1, true)] {
        let dir = config.dir.join("strata");
        let _ = std::fs::remove_dir_all(&dir);
        let db = Db::open(&dir, Options::default()).expect("open");
        db.create_table("customers", &["id"]).expect("table");
        if indexed {
            for (name, fields) in INDEXES {
                db.create_index("customers", name, fields, Projection::KeysOnly)
                    .expect("index");
            }
        }
        let options = ImportOptions {
            progress: false,
            ..ImportOptions::new(Format::Csv)
        };
        let start = Instant::now();
        let report = import(&db, "customers", csv, &options).expect("import");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(report.rows, config.rows);
        figures[slot] = config.rows as f64 / secs;
        if !indexed {
            db.close().expect("close");
            continue;
        }
        db.analyze("customers").expect("analyze");
        let mut rng = Rng(11);
        let start = Instant::now();
        for _ in 0..config.lookups {
            let id = 1 + rng.below(config.rows) as i64;
            let row = db.get("customers", &[Value::Int(id)]).expect("get");
            assert!(row.is_some());
        }
        figures[2] = config.lookups as f64 / start.elapsed().as_secs_f64();
        let mut rows = 0usize;
        let start = Instant::now();
        for _ in 0..config.queries {
            let query = Query::default().filter(Predicate::eq("town", rare_town(&mut rng)));
            for row in db.query("customers", &query).expect("query") {
                std::hint::black_box(row.expect("row"));
                rows += 1;
            }
        }
        figures[3] = config.queries as f64 / start.elapsed().as_secs_f64();
        assert!(rows > 0);
        let plan = db
            .explain(
                "customers",
                &Query::default().filter(Predicate::eq("town", town(TOWNS - 1))),
            )
            .expect("explain");
        assert_eq!(plan.chosen.index.as_deref(), Some("by_town"), "{plan}");
        db.close().expect("close");
        let _ = std::fs::remove_dir_all(&dir);
    }
    figures
}

fn run_sqlite(csv: &Path, config: &Config) -> Figures {
    let mut figures = [0.0; 4];
    for (slot, indexed) in [(0, false), (1, true)] {
        let dir = config.dir.join("sqlite");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let mut db = rusqlite::Connection::open(dir.join("customers.db")).expect("open");
        db.execute_batch(
            "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;
             CREATE TABLE customers(id INTEGER PRIMARY KEY, first TEXT, last TEXT, town TEXT,
                                    age INTEGER, email TEXT, balance REAL);",
        )
        .expect("schema");
        if indexed {
            for (name, fields) in INDEXES {
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
        let mut rows = 0u64;
        {
            let mut insert = tx
                .prepare("INSERT INTO customers VALUES (?, ?, ?, ?, ?, ?, ?)")
                .expect("prepare");
            let mut record = csv::StringRecord::new();
            while reader.read_record(&mut record).expect("CSV row") {
                insert
                    .execute(rusqlite::params_from_iter(record.iter()))
                    .expect("insert");
                rows += 1;
            }
        }
        tx.commit().expect("commit");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(rows, config.rows);
        figures[slot] = config.rows as f64 / secs;
        if !indexed {
            continue;
        }
        db.execute_batch("ANALYZE").expect("analyze");
        let mut rng = Rng(11);
        let mut point = db
            .prepare("SELECT * FROM customers WHERE id = ?")
            .expect("prepare");
        let start = Instant::now();
        for _ in 0..config.lookups {
            let id = 1 + rng.below(config.rows) as i64;
            let found = point
                .query_row([id], |row| {
                    (0..7)
                        .map(|i| row.get::<_, rusqlite::types::Value>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .expect("point query");
            std::hint::black_box(found);
        }
        figures[2] = config.lookups as f64 / start.elapsed().as_secs_f64();
        let mut by_town = db
            .prepare("SELECT * FROM customers WHERE town = ?")
            .expect("prepare");
        let mut returned = 0usize;
        let start = Instant::now();
        for _ in 0..config.queries {
            let mut rows = by_town.query([rare_town(&mut rng)]).expect("query");
            while let Some(row) = rows.next().expect("row") {
                let values = (0..7)
                    .map(|i| row.get::<_, rusqlite::types::Value>(i))
                    .collect::<Result<Vec<_>, _>>()
                    .expect("values");
                std::hint::black_box(values);
                returned += 1;
            }
        }
        figures[3] = config.queries as f64 / start.elapsed().as_secs_f64();
        assert!(returned > 0);
        let plan: String = db
            .query_row(
                "EXPLAIN QUERY PLAN SELECT * FROM customers WHERE town = 'Town299'",
                [],
                |row| row.get(3),
            )
            .expect("plan");
        assert!(plan.contains("by_town"), "SQLite's plan: {plan}");
        drop(point);
        drop(by_town);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
    figures
}

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    let mid = figures.len() / 2;
    if figures.len().is_multiple_of(2) {
        (figures[mid - 1] + figures[mid]) / 2.0
    } else {
        figures[mid]
    }
}

fn main() {
    let config = parse_args();
    std::fs::create_dir_all(&config.dir).expect("bench directory");
    let csv = config.dir.join("customers.csv");
    generate(&csv, config.rows);
    let bytes = std::fs::metadata(&csv).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} rows ({:.0} MB of CSV), {} point queries, {} selective queries, median of {} \
         round(s), in {}",
        config.rows,
        bytes as f64 / 1e6,
        config.lookups,
        config.queries,
        config.rounds,
        config.dir.display()
    );
    let mut strata_runs = Vec::new();
    let mut sqlite_runs = Vec::new();
    for round in 1..=config.rounds {
        eprintln!("round {round} of {}: strata ...", config.rounds);
        strata_runs.push(run_strata(&csv, &config));
        eprintln!("round {round} of {}: sqlite ...", config.rounds);
        sqlite_runs.push(run_sqlite(&csv, &config));
    }
    let rows = [
        "import, no index (rows/s)",
        "import, 3 indexes (rows/s)",
        "point query by key (ops/s)",
        "rare town, whole rows (queries/s)",
    ];
    println!(
        "| {:<34} | {:>12} | {:>12} | {:>13} |",
        "workload", "strata", "sqlite", "strata/sqlite"
    );
    println!(
        "|{}|{}|{}|{}|",
        "-".repeat(36),
        "-".repeat(14),
        "-".repeat(14),
        "-".repeat(15)
    );
    for (i, name) in rows.iter().enumerate() {
        let s = median(strata_runs.iter().map(|f| f[i]).collect());
        let q = median(sqlite_runs.iter().map(|f| f[i]).collect());
        println!("| {name:<34} | {s:>12.0} | {q:>12.0} | {:>13.2} |", s / q);
    }
}
