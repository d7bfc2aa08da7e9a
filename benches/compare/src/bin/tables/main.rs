//! Tables against SQLite: the same CSV files loaded into both, then the same questions through
//! `Db::query` (planning included) and SQLite's prepared statements, every row consumed, plus
//! Strata's planning time, `strata query` as a process, and the bytes each takes on disk.
//!
//! - The tables (STYLE #19): `customers` (`--rows`, default 1,000,000; generated here from a
//!   fixed seed, `data.rs`: 14 fields with real-length names, a sign-up date as text in key
//!   order, NULL-heavy `referrer_id` and `notes`, Zipf-skewed `home_town`), and two tables of
//!   TPC-H's shape from its public generator (`tpch.rs`, `--tpch SF`, default 0.2):
//!   `lineitem` (1.2M rows, 16 fields, composite primary key) and `orders` (1.05M rows, 9
//!   fields), both in time order.
//! - SQLite is given the same memory as Strata (STYLE #18): `cache_size` equal to Strata's
//!   block cache (64 MiB) and `mmap_size` covering the whole file, as Strata maps its table
//!   files; the same queries then run again on a new connection with SQLite's defaults (2 MiB
//!   cache, no map), reported beside. Both engines are durable at the end of an import
//!   (`synchronous=FULL`; Strata syncs its logs).
//! - Import: Strata through `strata_cli::import::import`, the code of `strata import`; SQLite
//!   as the `sqlite3` shell's `.import` does (one transaction, a prepared `INSERT` per row,
//!   every field bound as text and converted by the column's type). `customers` once without
//!   indexes, then every table with its import indexes created first.
//! - Queries: after the import, more indexes per table (keys-only, and two covering ones on
//!   `customers`: `Include` in Strata, the carried columns appended to the index in SQLite,
//!   which has no INCLUDE), then `analyze` / `ANALYZE`. Every query's parameters come from one
//!   seeded generator, the same for both engines, and the engines must return the same
//!   number of rows.
//! - Bytes: each table's rows and indexes (Strata: its families' table files and memtables
//!   after a flush; SQLite: `dbstat`), and the whole database on disk; Strata again after
//!   compacting every table.
//!
//! With `--rounds N` the engines take turns N times; each figure is the median. Ratios are
//! SQLite's time over Strata's: above 1 means Strata is faster.
//!
//! Usage: `tables [--rows N] [--tpch SF] [--rounds N] [--scale X] [--dir DIR]
//! [--strata-bin PATH] [--sql]` (`--scale` multiplies every query's repetitions; `--sql`
//! compares SQL statements instead, `sql_side.rs`).

mod data;
mod shapes;
mod spec;
#[cfg(feature = "sql")]
mod sql_side;
mod sqlite_side;
mod strata_side;
mod tpch;

use std::path::PathBuf;

use data::generate;
use shapes::shapes;
use sqlite_side::run_sqlite;
use strata_compare::median;
use strata_side::run_strata;

struct Config {
    rows: u64,
    tpch: f64,
    rounds: usize,
    scale: f64,
    dir: PathBuf,
    strata_bin: Option<PathBuf>,
    /// SQL against SQLite instead (`sql_side.rs`).
    sql: bool,
}

fn parse_args() -> Config {
    let mut config = Config {
        rows: 1_000_000,
        tpch: 0.2,
        rounds: 1,
        scale: 1.0,
        dir: std::env::temp_dir().join("strata-compare-tables"),
        strata_bin: None,
        sql: false,
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
            "--tpch" => config.tpch = value().parse().expect("--tpch: a number"),
            "--rounds" => config.rounds = value().parse().expect("--rounds: a number"),
            "--scale" => config.scale = value().parse().expect("--scale: a number"),
            "--dir" => config.dir = PathBuf::from(value()),
            "--strata-bin" => config.strata_bin = Some(PathBuf::from(value())),
            "--sql" => config.sql = true,
            other => {
                eprintln!(
                    "unknown argument {other}\nusage: tables [--rows N] [--tpch SF] \
                     [--rounds N] [--scale X] [--dir DIR] [--strata-bin PATH] [--sql]"
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

/// What a table takes on disk: its rows, its indexes, and how many index entries.
#[derive(Clone, Copy, Default)]
pub struct Bytes {
    pub rows: u64,
    pub indexes: u64,
    pub index_entries: u64,
}

/// One engine's figures in one round.
#[derive(Default)]
pub struct Figures {
    /// `customers` without indexes, rows a second.
    pub import_plain: f64,
    /// Every table with its import indexes, rows a second.
    pub import_indexed: Vec<f64>,
    pub point_get: f64,
    pub shapes: Vec<Timing>,
    /// SQLite only: the same with its default configuration.
    pub default_point_get: f64,
    pub default_shapes: Vec<Timing>,
    pub sqlite_config: String,
    pub sqlite_default_config: String,
    /// Per table; Strata also after compacting every table.
    pub bytes: Vec<Bytes>,
    pub compacted_bytes: Vec<Bytes>,
    pub total_bytes: u64,
    pub total_compacted_bytes: u64,
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
    let csv = config.dir.join("customers-v2.csv");
    let mut data = generate(&csv, config.rows);
    data.tpch = tpch::generate(&config.dir, config.tpch);
    let tables = spec::tables(&csv, config.rows, &config.dir, config.tpch, &data.tpch);
    println!(
        "{}; median of {} round(s), repetitions x{}, in {}",
        tables
            .iter()
            .map(|t| format!("{} {} rows", t.name, t.rows))
            .collect::<Vec<_>>()
            .join(", "),
        config.rounds,
        config.scale,
        config.dir.display()
    );
    if config.sql {
        #[cfg(feature = "sql")]
        sql_side::run_sql(&tables, &data, &config);
        #[cfg(not(feature = "sql"))]
        eprintln!("--sql needs the harness built with its `sql` feature (a default one)");
        return;
    }
    let mut strata_runs = Vec::new();
    let mut sqlite_runs = Vec::new();
    for round in 1..=config.rounds {
        // Alternate which engine goes first, so neither always meets a cold page cache.
        let order = if round % 2 == 1 {
            [true, false]
        } else {
            [false, true]
        };
        for strata_turn in order {
            if strata_turn {
                eprintln!("round {round} of {}: strata ...", config.rounds);
                strata_runs.push(run_strata(&tables, &data, &config));
            } else {
                eprintln!("round {round} of {}: sqlite ...", config.rounds);
                sqlite_runs.push(run_sqlite(&tables, &data, &config));
            }
        }
    }
    report(&tables, &strata_runs, &sqlite_runs);
}

fn report(tables: &[spec::TableSpec], strata_runs: &[Figures], sqlite_runs: &[Figures]) {
    let med = |runs: &[Figures], f: &dyn Fn(&Figures) -> f64| median(runs.iter().map(f).collect());
    println!(
        "\nSQLite, fair: {}; as it comes: {}. Strata: 64 MiB block cache, table files memory-mapped.",
        sqlite_runs[0].sqlite_config, sqlite_runs[0].sqlite_default_config
    );
    println!(
        "\n| {:<42} | {:>13} | {:>13} | {:>9} |",
        "import (rows a second)", "strata", "sqlite", "ratio"
    );
    println!(
        "|{}|{}|{}|{}|",
        "-".repeat(44),
        "-".repeat(15),
        "-".repeat(15),
        "-".repeat(11)
    );
    let mut import_ratios = Vec::new();
    let (s, q) = (
        med(strata_runs, &|x| x.import_plain),
        med(sqlite_runs, &|x| x.import_plain),
    );
    println!(
        "| {:<42} | {s:>13.0} | {q:>13.0} | {:>9.2} |",
        "customers, no index",
        s / q
    );
    import_ratios.push(s / q);
    for (t, spec) in tables.iter().enumerate() {
        let (s, q) = (
            med(strata_runs, &|x| x.import_indexed[t]),
            med(sqlite_runs, &|x| x.import_indexed[t]),
        );
        let name = format!("{}, {} indexes", spec.name, spec.import_indexes.len());
        println!("| {name:<42} | {s:>13.0} | {q:>13.0} | {:>9.2} |", s / q);
        import_ratios.push(s / q);
    }
    println!(
        "import, geometric mean: {:.2}",
        geometric_mean(&import_ratios)
    );

    println!(
        "\n| {:<48} | {:>8} | {:>10} | {:>10} | {:>6} | {:>10} | {:>6} | {:>7} | {:<28} | sqlite's plan",
        "query (µs per query, every row consumed)",
        "rows",
        "strata",
        "sqlite",
        "ratio",
        "sqlite dflt",
        "ratio",
        "plan µs",
        "strata's plan"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|{}|{}|{}|---|",
        "-".repeat(50),
        "-".repeat(10),
        "-".repeat(12),
        "-".repeat(12),
        "-".repeat(8),
        "-".repeat(12),
        "-".repeat(8),
        "-".repeat(9),
        "-".repeat(30)
    );
    let (s, q, d) = (
        med(strata_runs, &|x| x.point_get),
        med(sqlite_runs, &|x| x.point_get),
        med(sqlite_runs, &|x| x.default_point_get),
    );
    println!(
        "| {:<48} | {:>8} | {s:>10.2} | {q:>10.2} | {:>6.2} | {d:>10.2} | {:>6.2} | {:>7} | {:<28} | |",
        "customers: primary key, Db::get (reference)",
        1,
        q / s,
        d / s,
        "",
        "get"
    );
    let mut ratios = Vec::new();
    let mut default_ratios = Vec::new();
    for (i, shape) in shapes().iter().enumerate() {
        let s = med(strata_runs, &|x| x.shapes[i].micros);
        let q = med(sqlite_runs, &|x| x.shapes[i].micros);
        let d = med(sqlite_runs, &|x| x.default_shapes[i].micros);
        let (rows_s, rows_q) = (strata_runs[0].shapes[i].rows, sqlite_runs[0].shapes[i].rows);
        assert!(
            (rows_s - rows_q).abs() < 1e-9,
            "{}: strata returned {rows_s} rows a query, sqlite {rows_q}",
            shape.name
        );
        ratios.push(q / s);
        default_ratios.push(d / s);
        let name = if shape.table == "customers" {
            format!("customers: {}", shape.name)
        } else {
            shape.name.to_string()
        };
        println!(
            "| {name:<48} | {rows_s:>8.0} | {s:>10.1} | {q:>10.1} | {:>6.2} | {d:>10.1} | {:>6.2} | {:>7.1} | {:<28} | {}",
            q / s,
            d / s,
            med(strata_runs, &|x| x.planning_us[i]),
            strata_runs[0].plans[i],
            sqlite_runs[0].plans[i]
        );
    }
    println!(
        "\ngeometric mean of the query ratios: {:.2} against SQLite with the same memory, {:.2} \
         against SQLite's defaults; {} of {} shapes at 1.0 or more (same memory)",
        geometric_mean(&ratios),
        geometric_mean(&default_ratios),
        ratios.iter().filter(|r| **r >= 1.0).count(),
        ratios.len()
    );
    let planning: Vec<f64> = (0..ratios.len())
        .map(|i| med(strata_runs, &|x| x.planning_us[i]))
        .collect();
    println!(
        "planning (Db::explain, {} table files): median {:.1} µs, worst shape {:.1} µs",
        strata_runs[0].table_files,
        median(planning.clone()),
        planning.iter().copied().fold(0.0, f64::max)
    );
    if strata_runs[0].process_ms.is_some() {
        println!(
            "`strata query` for one primary key, whole process: median {:.1} ms",
            med(strata_runs, &|x| x.process_ms.unwrap_or(f64::NAN))
        );
    }

    println!(
        "\n| {:<10} | {:>9} | {:>26} | {:>26} | {:>26} |",
        "bytes",
        "rows",
        "strata rows / indexes",
        "compacted rows / indexes",
        "sqlite rows / indexes"
    );
    println!(
        "|{}|{}|{}|{}|{}|",
        "-".repeat(12),
        "-".repeat(11),
        "-".repeat(28),
        "-".repeat(28),
        "-".repeat(28)
    );
    let per = |b: &Bytes, rows: u64| {
        format!(
            "{:>6.1} MB {:>4.0} / {:>3.0} B",
            (b.rows + b.indexes) as f64 / 1e6,
            b.rows as f64 / rows.max(1) as f64,
            b.indexes as f64 / b.index_entries.max(1) as f64
        )
    };
    for (t, spec) in tables.iter().enumerate() {
        println!(
            "| {:<10} | {:>9} | {:>26} | {:>26} | {:>26} |",
            spec.name,
            spec.rows,
            per(&strata_runs[0].bytes[t], spec.rows),
            per(&strata_runs[0].compacted_bytes[t], spec.rows),
            per(&sqlite_runs[0].bytes[t], spec.rows)
        );
    }
    let (s, c, q) = (
        strata_runs[0].total_bytes,
        strata_runs[0].total_compacted_bytes,
        sqlite_runs[0].total_bytes,
    );
    println!(
        "whole database on disk: strata {:.1} MB ({:.2}x sqlite), {:.1} MB compacted ({:.2}x); sqlite {:.1} MB \
         (bytes a row: the rows' bytes over the rows; bytes an entry: the indexes' bytes over their entries)",
        s as f64 / 1e6,
        s as f64 / q as f64,
        c as f64 / 1e6,
        c as f64 / q as f64,
        q as f64 / 1e6
    );

    println!("\nper-row costs (µs a row, explain_analyze, customers):");
    for (i, (name, _)) in strata_runs[0].per_row.iter().enumerate() {
        println!(
            "  {name:<24} {:>7.3}",
            med(strata_runs, &|x| x.per_row[i].1)
        );
    }
}
