//! Tables against SQLite, on the same generated CSV file: import without and with three
//! indexes, then fourteen query shapes through `Db::query`, planning included, against
//! SQLite's prepared statements, plus Strata's planning time and `strata query` as a process.
//!
//! - The file: `--rows` customers (default 1,000,000), generated once from a fixed seed:
//!   `id` (the key), `first` and `last` (text, uniform over 12 and 16 names), `town` (text,
//!   Zipf s = 1 over 1,000 towns), `status` (text, low cardinality: 60 / 35 / 5 %), `age`
//!   (int, uniform 18–87), `grp` (int, uniform over rows / 30 values), `score` (int, uniform
//!   below 100,000, never indexed), `balance` (float, uniform 0–100,000), `phone` (text,
//!   NULL in 0.25 % of rows), `referrer` (int, NULL in 99 % of rows), `email` (text, unique).
//! - Import: Strata through `strata_cli::import::import`, the code of `strata import` (both
//!   passes, atomic batches of 1,000, logs synced at the end); SQLite as the `sqlite3` shell's
//!   `.import` does (one transaction, a prepared `INSERT` per row, every field bound as text,
//!   `journal_mode=DELETE`, `synchronous=FULL`). With indexes: `by_town (town)`,
//!   `by_town_last (town, last)`, `by_email (email)`, created before the import.
//! - Queries: after the indexed import, seven more indexes (ten in all) and `analyze` /
//!   `ANALYZE`. Keys-only indexes `by_grp`, `by_balance`, `by_status_age (status, age)`,
//!   `by_phone`, `by_referrer`; covering ones `by_grp_cover` and `by_town_cover`, which carry
//!   `age` and `balance` (`Include` in Strata, the same columns appended to the index in
//!   SQLite, which has no INCLUDE). Every query's parameters come from one seeded generator,
//!   the same for both engines, every row is consumed (every field read), and the engines
//!   must return the same number of rows.
//! - Planning: the median time of `Db::explain` over every shape, on the ten-index table as
//!   the import left it (many table files). `--strata-bin PATH`: the median wall time of
//!   `strata query` for one primary key, as a whole process.
//!
//! With `--rounds N` the engines take turns N times; each figure is the median. Ratios are
//! SQLite's time over Strata's: above 1 means Strata is faster.
//!
//! Usage: `strata-compare-tables [--rows N] [--rounds N] [--scale X] [--dir DIR]
//! [--strata-bin PATH]` (`--scale` multiplies every query's repetitions).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use strata::{Db, Options, Predicate, Projection, Query, Value};
use strata_cli::import::{Format, ImportOptions, import};

struct Config {
    rows: u64,
    rounds: usize,
    scale: f64,
    dir: PathBuf,
    strata_bin: Option<PathBuf>,
}

fn parse_args() -> Config {
    let mut config = Config {
        rows: 1_000_000,
        rounds: 1,
        scale: 1.0,
        dir: std::env::temp_dir().join("strata-compare-tables"),
        strata_bin: None,
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
            "--rounds" => config.rounds = value().parse().expect("--rounds: a number"),
            "--scale" => config.scale = value().parse().expect("--scale: a number"),
            "--dir" => config.dir = PathBuf::from(value()),
            "--strata-bin" => config.strata_bin = Some(PathBuf::from(value())),
            other => {
                eprintln!(
                    "unknown argument {other}\nusage: strata-compare-tables [--rows N] \
                     [--rounds N] [--scale X] [--dir DIR] [--strata-bin PATH]"
                );
                std::process::exit(2)
            }
        }
    }
    config.rounds = config.rounds.max(1);
    config.rows = config.rows.max(1_000);
    config
}

/// SplitMix64.
#[derive(Clone)]
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

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const TOWNS: usize = 1000;
const FIRST: [&str; 12] = [
    "Ada", "Alan", "Barbara", "Claude", "Edsger", "Frances", "Grace", "John", "Leslie", "Margaret",
    "Niklaus", "Tony",
];
const LAST: [&str; 16] = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Lopez",
    "Wilson", "Anderson", "Taylor", "Moore", "Lee", "Walker", "Knuth",
];
const FIELDS: usize = 12;

fn town(i: usize) -> String {
    format!("Town{i:04}")
}

fn groups(rows: u64) -> u64 {
    (rows / 30).max(1)
}

/// What the queries need to know of the data: how many rows each town has.
struct Data {
    rows: u64,
    town_rows: Vec<u64>,
}

impl Data {
    /// Towns with 800 to 1,250 rows: the "about a thousand rows" equality.
    fn thousand_towns(&self) -> Vec<String> {
        let towns: Vec<String> = (0..TOWNS)
            .filter(|&t| (800..=1250).contains(&self.town_rows[t]))
            .map(town)
            .collect();
        if towns.is_empty() {
            // A small table: the most common town.
            let most = (0..TOWNS).max_by_key(|&t| self.town_rows[t]).unwrap_or(0);
            return vec![town(most)];
        }
        towns
    }
}

/// Writes the CSV unless it exists with the right number of rows; returns its town counts.
fn generate(path: &Path, rows: u64) -> Data {
    let counts = path.with_extension(format!("{rows}.towns"));
    if let (true, Ok(text)) = (path.exists(), std::fs::read_to_string(&counts)) {
        let town_rows: Vec<u64> = text.lines().filter_map(|l| l.parse().ok()).collect();
        if town_rows.len() == TOWNS {
            return Data { rows, town_rows };
        }
    }
    eprintln!("generating {rows} rows into {} ...", path.display());
    let mut cumulative = Vec::with_capacity(TOWNS);
    let mut total = 0.0;
    for k in 0..TOWNS {
        total += 1.0 / (k + 1) as f64;
        cumulative.push(total);
    }
    let mut town_rows = vec![0u64; TOWNS];
    let mut rng = Rng(7);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create CSV"));
    writeln!(
        out,
        "id,first,last,town,status,age,grp,score,balance,phone,referrer,email"
    )
    .expect("write");
    for id in 1..=rows {
        let first = FIRST[rng.below(FIRST.len() as u64) as usize];
        let last = LAST[rng.below(LAST.len() as u64) as usize];
        let x = rng.unit() * total;
        let t = cumulative.partition_point(|c| *c < x).min(TOWNS - 1);
        town_rows[t] += 1;
        let status = match rng.below(100) {
            0..60 => "active",
            60..95 => "closed",
            _ => "frozen",
        };
        let phone = if rng.below(400) == 0 {
            String::new()
        } else {
            format!("+44 7700 9{:05}", rng.below(100_000))
        };
        let referrer = if rng.below(100) == 0 {
            (1 + rng.below(rows)).to_string()
        } else {
            String::new()
        };
        writeln!(
            out,
            "{id},{first},{last},{},{status},{},{},{},{}.{:02},{phone},{referrer},{}.{}{id}@example.com",
            town(t),
            18 + rng.below(70),
            rng.below(groups(rows)),
            rng.below(100_000),
            rng.below(100_000),
            rng.below(100),
            first.to_lowercase(),
            last.to_lowercase(),
        )
        .expect("write");
    }
    out.flush().expect("flush");
    let text: String = town_rows.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(counts, text).expect("town counts");
    Data { rows, town_rows }
}

const IMPORT_INDEXES: [(&str, &[&str]); 3] = [
    ("by_town", &["town"]),
    ("by_town_last", &["town", "last"]),
    ("by_email", &["email"]),
];

/// Indexes added for the queries: name, fields, the fields a covering index carries.
const QUERY_INDEXES: [(&str, &[&str], &[&str]); 7] = [
    ("by_grp", &["grp"], &[]),
    ("by_grp_cover", &["grp"], &["age", "balance"]),
    ("by_town_cover", &["town"], &["age", "balance"]),
    ("by_balance", &["balance"], &[]),
    ("by_status_age", &["status", "age"], &[]),
    ("by_phone", &["phone"], &[]),
    ("by_referrer", &["referrer"], &[]),
];

/// One query shape: the same question to both engines.
struct Shape {
    name: &'static str,
    /// Repetitions at `--scale 1`.
    reps: u64,
    /// The parameters of one repetition.
    params: fn(&mut Rng, &Data) -> Vec<Value>,
    strata: fn(&[Value]) -> Query,
    sql: &'static str,
    /// The SQL's parameters, when not the same list.
    sql_params: fn(Vec<Value>) -> Vec<Value>,
}

fn same(params: Vec<Value>) -> Vec<Value> {
    params
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an int: {other}"),
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        other => panic!("not a float: {other}"),
    }
}

const COVERED: [&str; 3] = ["id", "age", "balance"];

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "primary key, Db::query",
            reps: 20_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.rows) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("id", p[0].clone())),
            sql: "SELECT * FROM customers WHERE id = ?1",
            sql_params: same,
        },
        Shape {
            name: "index =, ~30 rows, fetches",
            reps: 2_000,
            params: |rng, d| vec![Value::Int(rng.below(groups(d.rows)) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("grp", p[0].clone())),
            sql: "SELECT * FROM customers WHERE grp = ?1",
            sql_params: same,
        },
        Shape {
            name: "index =, ~1,000 rows, fetches",
            reps: 100,
            params: |rng, d| {
                let towns = d.thousand_towns();
                vec![Value::from(
                    towns[rng.below(towns.len() as u64) as usize].clone(),
                )]
            },
            strata: |p| Query::default().filter(Predicate::eq("town", p[0].clone())),
            sql: "SELECT * FROM customers WHERE town = ?1",
            sql_params: same,
        },
        Shape {
            name: "covering =, ~30 rows",
            reps: 4_000,
            params: |rng, d| vec![Value::Int(rng.below(groups(d.rows)) as i64)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("grp", p[0].clone()))
                    .select(&COVERED)
            },
            sql: "SELECT id, age, balance FROM customers WHERE grp = ?1",
            sql_params: same,
        },
        Shape {
            name: "covering =, ~1,000 rows",
            reps: 300,
            params: |rng, d| {
                let towns = d.thousand_towns();
                vec![Value::from(
                    towns[rng.below(towns.len() as u64) as usize].clone(),
                )]
            },
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("town", p[0].clone()))
                    .select(&COVERED)
            },
            sql: "SELECT id, age, balance FROM customers WHERE town = ?1",
            sql_params: same,
        },
        Shape {
            name: "index range, ~700 rows",
            reps: 100,
            params: |rng, _| {
                let low = rng.below(99_900) as f64;
                vec![Value::Float(low), Value::Float(low + 70.0)]
            },
            strata: |p| {
                Query::default().filter(Predicate::between("balance", float(&p[0]), float(&p[1])))
            },
            sql: "SELECT * FROM customers WHERE balance BETWEEN ?1 AND ?2",
            sql_params: same,
        },
        Shape {
            name: "composite prefix (=, range), ~1,400 rows",
            reps: 50,
            params: |rng, _| {
                let age = 18 + rng.below(69) as i64;
                vec![Value::from("frozen"), Value::Int(age), Value::Int(age + 1)]
            },
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("status", p[0].clone()))
                    .filter(Predicate::between("age", int(&p[1]), int(&p[2])))
            },
            sql: "SELECT * FROM customers WHERE status = ?1 AND age BETWEEN ?2 AND ?3",
            sql_params: same,
        },
        Shape {
            name: "IN (10 values), ~300 rows",
            reps: 300,
            params: |rng, d| {
                (0..10)
                    .map(|_| Value::Int(rng.below(groups(d.rows)) as i64))
                    .collect()
            },
            strata: |p| Query::default().filter(Predicate::in_list("grp", p.to_vec())),
            sql: "SELECT * FROM customers WHERE grp IN (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            sql_params: same,
        },
        Shape {
            name: "IS NULL, indexed, 0.25 %",
            reps: 20,
            params: |_, _| Vec::new(),
            strata: |_| Query::default().filter(Predicate::is_null("phone")),
            sql: "SELECT * FROM customers WHERE phone IS NULL",
            sql_params: same,
        },
        Shape {
            name: "IS NOT NULL, indexed, 1 %",
            reps: 10,
            params: |_, _| Vec::new(),
            strata: |_| Query::default().filter(Predicate::is_not_null("referrer")),
            sql: "SELECT * FROM customers WHERE referrer IS NOT NULL",
            sql_params: same,
        },
        Shape {
            name: "scan, filter keeps 1 %",
            reps: 3,
            params: |_, _| vec![Value::Int(1_000)],
            strata: |p| Query::default().filter(Predicate::lt("score", p[0].clone())),
            sql: "SELECT * FROM customers WHERE score < ?1",
            sql_params: same,
        },
        Shape {
            name: "scan, half the table",
            reps: 2,
            params: |_, _| vec![Value::Int(53)],
            strata: |p| Query::default().filter(Predicate::ge("age", p[0].clone())),
            sql: "SELECT * FROM customers WHERE age >= ?1",
            sql_params: same,
        },
        Shape {
            name: "low-cardinality =, 60 % (scan)",
            reps: 2,
            params: |_, _| vec![Value::from("active")],
            strata: |p| Query::default().filter(Predicate::eq("status", p[0].clone())),
            sql: "SELECT * FROM customers WHERE status = ?1",
            sql_params: same,
        },
        Shape {
            name: "ORDER BY balance DESC LIMIT 10",
            reps: 2_000,
            params: |rng, _| vec![Value::Float(rng.below(100_000) as f64)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::lt("balance", float(&p[0])))
                    .order_by(&["balance"], true)
                    .limit(10)
            },
            sql: "SELECT * FROM customers WHERE balance < ?1 ORDER BY balance DESC LIMIT 10",
            sql_params: same,
        },
    ]
}

/// A shape's result in one round: µs per query and rows per query.
#[derive(Clone, Copy, Default)]
struct Timing {
    micros: f64,
    rows: f64,
}

/// One engine's figures in one round.
#[derive(Default)]
struct Figures {
    import_plain: f64,
    import_indexed: f64,
    point_get: f64,
    shapes: Vec<Timing>,
    plans: Vec<String>,
    planning_us: Vec<f64>,
    table_files: u64,
    process_ms: Option<f64>,
    per_row: Vec<(String, f64)>,
}

fn reps(shape: &Shape, config: &Config) -> u64 {
    ((shape.reps as f64 * config.scale).round() as u64).max(1)
}

fn import_options() -> ImportOptions {
    ImportOptions {
        progress: false,
        ..ImportOptions::new(Format::Csv)
    }
}

fn strata_import(csv: &Path, dir: &Path, indexed: bool, rows: u64) -> (Db, f64) {
    let _ = std::fs::remove_dir_all(dir);
    let db = Db::open(dir, Options::default()).expect("open");
    db.create_table("customers", &["id"]).expect("table");
    if indexed {
        for (name, fields) in IMPORT_INDEXES {
            db.create_index("customers", name, fields, Projection::KeysOnly)
                .expect("index");
        }
    }
    let start = Instant::now();
    let report = import(&db, "customers", csv, &import_options()).expect("import");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(report.rows, rows);
    (db, rows as f64 / secs)
}

fn run_strata(csv: &Path, data: &Data, config: &Config) -> Figures {
    let mut figures = Figures::default();
    let dir = config.dir.join("strata");
    let (db, rate) = strata_import(csv, &dir, false, config.rows);
    figures.import_plain = rate;
    db.close().expect("close");
    let (db, rate) = strata_import(csv, &dir, true, config.rows);
    figures.import_indexed = rate;
    for (name, fields, carried) in QUERY_INDEXES {
        let projection = if carried.is_empty() {
            Projection::KeysOnly
        } else {
            Projection::Include(carried.iter().map(|f| f.to_string()).collect())
        };
        db.create_index("customers", name, fields, projection)
            .expect("index");
    }
    db.analyze("customers").expect("analyze");
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
        let plan = db.explain("customers", &queries[0]).expect("explain");
        figures.plans.push(match &plan.chosen.index {
            Some(index) => format!("{} {index}", plan.chosen.plan),
            None => plan.chosen.plan.to_string(),
        });
        let mut rows = 0u64;
        let start = Instant::now();
        for query in &queries {
            for row in db.query("customers", query).expect("query") {
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
            std::hint::black_box(db.explain("customers", query).expect("explain"));
        }
        figures
            .planning_us
            .push(start.elapsed().as_secs_f64() * 1e6 / planned as f64);
    }
    figures.per_row = per_row_costs(&db, data);
    db.close().expect("close");
    if let Some(bin) = &config.strata_bin {
        figures.process_ms = Some(process_query(bin, &dir, config.rows));
    }
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

/// The table files under `dir`.
fn table_files(dir: &Path) -> u64 {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "sst") {
                n += 1;
            }
        }
    }
    n
}

/// µs a row of each step, from `explain_analyze`: reading and decoding (a scan of half the
/// table), filtering, and fetching (the ~1,000-row keys-only equality).
fn per_row_costs(db: &Db, data: &Data) -> Vec<(String, f64)> {
    let scan = db
        .explain_analyze(
            "customers",
            &Query::default().filter(Predicate::ge("age", 53)),
        )
        .expect("analyze");
    let towns = data.thousand_towns();
    let fetch = db
        .explain_analyze(
            "customers",
            &Query::default().filter(Predicate::eq("town", towns[0].clone())),
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
fn process_query(bin: &Path, dir: &Path, rows: u64) -> f64 {
    let mut times = Vec::new();
    let mut rng = Rng(5);
    for _ in 0..11 {
        let id = 1 + rng.below(rows);
        let start = Instant::now();
        let out = std::process::Command::new(bin)
            .arg("--db")
            .arg(dir)
            .args(["query", "customers", "--where", &format!("id = {id}")])
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

fn to_sql(v: &Value) -> rusqlite::types::Value {
    match v {
        Value::Null => rusqlite::types::Value::Null,
        Value::Int(i) => rusqlite::types::Value::Integer(*i),
        Value::Float(f) => rusqlite::types::Value::Real(*f),
        Value::Str(s) => rusqlite::types::Value::Text(s.clone()),
        other => panic!("no SQL form for {other}"),
    }
}

fn sqlite_import(csv: &Path, dir: &Path, indexed: bool, rows: u64) -> (rusqlite::Connection, f64) {
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

fn run_sqlite(csv: &Path, data: &Data, config: &Config) -> Figures {
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

fn sqlite_plan(db: &rusqlite::Connection, sql: &str, params: &[rusqlite::types::Value]) -> String {
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

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    let mid = figures.len() / 2;
    if figures.is_empty() {
        return f64::NAN;
    }
    if figures.len().is_multiple_of(2) {
        (figures[mid - 1] + figures[mid]) / 2.0
    } else {
        figures[mid]
    }
}

fn geometric_mean(ratios: &[f64]) -> f64 {
    let logs: f64 = ratios.iter().map(|r| r.ln()).sum();
    (logs / ratios.len().max(1) as f64).exp()
}

fn main() {
    let config = parse_args();
    std::fs::create_dir_all(&config.dir).expect("bench directory");
    let csv = config.dir.join("customers.csv");
    let data = generate(&csv, config.rows);
    let bytes = std::fs::metadata(&csv).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} rows ({:.0} MB of CSV), median of {} round(s), repetitions x{}, in {}",
        config.rows,
        bytes as f64 / 1e6,
        config.rounds,
        config.scale,
        config.dir.display()
    );
    let mut strata_runs = Vec::new();
    let mut sqlite_runs = Vec::new();
    for round in 1..=config.rounds {
        eprintln!("round {round} of {}: strata ...", config.rounds);
        strata_runs.push(run_strata(&csv, &data, &config));
        eprintln!("round {round} of {}: sqlite ...", config.rounds);
        sqlite_runs.push(run_sqlite(&csv, &data, &config));
    }
    let med = |runs: &[Figures], f: &dyn Fn(&Figures) -> f64| median(runs.iter().map(f).collect());

    println!(
        "\n| {:<42} | {:>12} | {:>12} | {:>9} |",
        "import", "strata rows/s", "sqlite rows/s", "ratio"
    );
    println!(
        "|{}|{}|{}|{}|",
        "-".repeat(44),
        "-".repeat(15),
        "-".repeat(15),
        "-".repeat(11)
    );
    for (name, f) in [
        (
            "no index",
            (|x: &Figures| x.import_plain) as fn(&Figures) -> f64,
        ),
        ("3 indexes", |x: &Figures| x.import_indexed),
    ] {
        let (s, q) = (med(&strata_runs, &f), med(&sqlite_runs, &f));
        println!("| {name:<42} | {s:>13.0} | {q:>13.0} | {:>9.2} |", s / q);
    }

    println!(
        "\n| {:<42} | {:>8} | {:>10} | {:>10} | {:>6} | {:>7} | {:<28} | sqlite's plan",
        "query (µs per query, every row consumed)",
        "rows",
        "strata",
        "sqlite",
        "ratio",
        "plan µs",
        "strata's plan"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|{}|---|",
        "-".repeat(44),
        "-".repeat(10),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(30)
    );
    let (s, q) = (
        med(&strata_runs, &|x| x.point_get),
        med(&sqlite_runs, &|x| x.point_get),
    );
    println!(
        "| {:<42} | {:>8} | {s:>10.2} | {q:>10.2} | {:>6.2} | {:>7} | {:<28} | |",
        "primary key, Db::get (reference)",
        1,
        q / s,
        "",
        "get"
    );
    let mut ratios = Vec::new();
    for (i, shape) in shapes().iter().enumerate() {
        let s = med(&strata_runs, &|x| x.shapes[i].micros);
        let q = med(&sqlite_runs, &|x| x.shapes[i].micros);
        let (rows_s, rows_q) = (strata_runs[0].shapes[i].rows, sqlite_runs[0].shapes[i].rows);
        assert!(
            (rows_s - rows_q).abs() < 1e-9,
            "{}: strata returned {rows_s} rows a query, sqlite {rows_q}",
            shape.name
        );
        ratios.push(q / s);
        println!(
            "| {:<42} | {rows_s:>8.0} | {s:>10.1} | {q:>10.1} | {:>6.2} | {:>7.1} | {:<28} | {}",
            shape.name,
            q / s,
            med(&strata_runs, &|x| x.planning_us[i]),
            strata_runs[0].plans[i],
            sqlite_runs[0].plans[i]
        );
    }
    println!(
        "\ngeometric mean of the query ratios: {:.2}",
        geometric_mean(&ratios)
    );
    let planning: Vec<f64> = (0..ratios.len())
        .map(|i| med(&strata_runs, &|x| x.planning_us[i]))
        .collect();
    println!(
        "planning (Db::explain, 10 indexes, {} table files): median {:.1} µs, worst shape {:.1} µs",
        strata_runs[0].table_files,
        median(planning.clone()),
        planning.iter().copied().fold(0.0, f64::max)
    );
    if strata_runs[0].process_ms.is_some() {
        println!(
            "`strata query` for one primary key, whole process: median {:.1} ms",
            med(&strata_runs, &|x| x.process_ms.unwrap_or(f64::NAN))
        );
    }
    println!("\nper-row costs (µs a row, explain_analyze):");
    for (i, (name, _)) in strata_runs[0].per_row.iter().enumerate() {
        println!(
            "  {name:<24} {:>7.3}",
            med(&strata_runs, &|x| x.per_row[i].1)
        );
    }
}
