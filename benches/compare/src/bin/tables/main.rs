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

mod data;
mod shapes;
mod sqlite_side;
mod strata_side;

use std::path::PathBuf;

use data::generate;
use shapes::shapes;
use sqlite_side::run_sqlite;
use strata_compare::median;
use strata_side::run_strata;

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

/// A shape's result in one round: µs per query and rows per query.
#[derive(Clone, Copy, Default)]
pub struct Timing {
    pub micros: f64,
    pub rows: f64,
}

/// One engine's figures in one round.
#[derive(Default)]
pub struct Figures {
    pub import_plain: f64,
    pub import_indexed: f64,
    pub point_get: f64,
    pub shapes: Vec<Timing>,
    pub plans: Vec<String>,
    pub planning_us: Vec<f64>,
    pub table_files: u64,
    pub process_ms: Option<f64>,
    pub per_row: Vec<(String, f64)>,
}

pub fn geometric_mean(ratios: &[f64]) -> f64 {
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
