//! SQL against SQLite (`tables --sql`): the same statements, with the same parameters, through
//! Strata's SQL (`strata-sql`: prepared statements, DataFusion for joins and aggregates) and
//! SQLite's prepared statements, on the same three tables loaded as the tables comparison
//! loads them (SQLite given the same memory); and through DataFusion alone over the same rows
//! as Parquet files (no indexes), to show what pushing filters into Strata buys.
//!
//! For each statement: µs a statement (every row consumed), rows a statement (equal across
//! engines, checked), and the share of the prepared statement's time spent in DataFusion
//! (planning, joining, aggregating: the statement's time less its scans' `strata_time`, read
//! from the plans of a tenth of its runs again, `Prepared::execute_with_plan`).
//!
//! A round loads both engines, then runs each statement on the two in turns, a tenth of its
//! repetitions at a time (`run_round`); DataFusion over Parquet runs after them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion::scalar::ScalarValue;
use strata::{Db, Predicate, Query, Value};
use strata_compare::median;
use strata_sql::SqlSession;
use strata_sql::scan::STRATA_TIME;

use crate::data::{Data, Rng, signup_date};
use crate::spec::TableSpec;
use crate::sqlite_side::{load_sqlite, to_sql};
use crate::strata_side::{dir_bytes, load_strata};
use crate::{Config, geometric_mean};

/// One statement: its SQL with `$1`, `$2` … (SQLite gets `?1`, `?2` …), how its parameters
/// are drawn, and how many times it runs a round.
pub struct SqlShape {
    pub name: &'static str,
    pub sql: &'static str,
    pub params: fn(&mut Rng, &Data) -> Vec<Value>,
    pub reps: u64,
}

fn date(v: &str) -> Value {
    Value::from(v)
}

pub fn sql_shapes() -> Vec<SqlShape> {
    vec![
        SqlShape {
            name: "point: customers by primary key",
            sql: "SELECT * FROM customers WHERE customer_id = $1",
            params: |r, d| vec![Value::Int(1 + r.below(d.rows) as i64)],
            reps: 20_000,
        },
        SqlShape {
            name: "index: customers of a group (~30)",
            sql: "SELECT customer_id, first_name, last_name, account_balance FROM customers \
                  WHERE group_id = $1",
            params: |r, d| vec![Value::Int(r.below(crate::data::groups(d.rows)) as i64)],
            reps: 5_000,
        },
        SqlShape {
            name: "index: customers who signed up on a day",
            sql: "SELECT customer_id, email_address FROM customers WHERE signup_date = $1",
            params: |r, d| vec![date(&signup_date(1 + r.below(d.rows), d.rows))],
            reps: 5_000,
        },
        SqlShape {
            name: "index + order: a day's first 10 orders by key",
            sql: "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate = $1 \
                  ORDER BY o_orderkey LIMIT 10",
            params: |r, d| {
                let dates = &d.tpch.order_dates;
                vec![date(&dates[r.below(dates.len() as u64) as usize])]
            },
            reps: 5_000,
        },
        SqlShape {
            name: "join: a customer's orders and their lines",
            sql: "SELECT o.o_orderkey, o.o_orderdate, l.l_linenumber, l.l_extendedprice \
                  FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey \
                  WHERE o.o_custkey = $1",
            params: |r, d| vec![Value::Int(1 + r.below(d.tpch.customers) as i64)],
            reps: 1_000,
        },
        SqlShape {
            name: "semi-join: a day's orders with a returned line",
            sql: "SELECT o_orderkey, o_totalprice FROM orders WHERE o_orderdate = $1 \
                  AND o_orderkey IN (SELECT l_orderkey FROM lineitem WHERE l_returnflag = 'R')",
            params: |r, d| {
                let dates = &d.tpch.order_dates;
                vec![date(&dates[r.below(dates.len() as u64) as usize])]
            },
            reps: 300,
        },
        SqlShape {
            name: "aggregate over a join: a week's revenue by priority",
            sql: "SELECT o.o_orderpriority, count(*) AS lines, sum(l.l_extendedprice) AS revenue \
                  FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey \
                  WHERE o.o_orderdate BETWEEN $1 AND $2 \
                  GROUP BY o.o_orderpriority ORDER BY o.o_orderpriority",
            params: |r, d| {
                let dates = &d.tpch.order_dates;
                let first = r.below(dates.len().saturating_sub(8).max(1) as u64) as usize;
                let last = (first + 7).min(dates.len() - 1);
                vec![date(&dates[first]), date(&dates[last])]
            },
            reps: 200,
        },
        SqlShape {
            name: "GROUP BY over an index: a town's accounts",
            sql: "SELECT account_status, count(*) AS n, avg(account_balance) AS balance \
                  FROM customers WHERE home_town = $1 \
                  GROUP BY account_status ORDER BY account_status",
            params: |r, d| {
                let towns = d.thousand_towns();
                vec![Value::from(
                    towns[r.below(towns.len() as u64) as usize].as_str(),
                )]
            },
            reps: 1_000,
        },
    ]
}

/// A shape's figures in one round.
#[derive(Clone, Copy, Default)]
pub struct SqlTiming {
    pub micros: f64,
    pub rows: f64,
    /// Strata only: the share of its time in DataFusion (NaN on the fast path).
    pub datafusion_share: f64,
}

/// One engine's figures in one round.
#[derive(Default)]
pub struct SqlFigures {
    pub shapes: Vec<SqlTiming>,
    /// Strata only: `Db::query` for the point query, µs, and the prepared point query
    /// beside it (the two alternating on the same keys, in the same state of the database).
    pub db_query_point: f64,
    pub sql_point_beside: f64,
    /// Strata only: the group query as text through `SqlSession::execute` (parsed and planned
    /// each time), µs.
    pub unprepared_index: f64,
    pub bytes: u64,
    pub config: String,
}

fn reps(shape: &SqlShape, config: &Config) -> u64 {
    ((shape.reps as f64 * config.scale).round() as u64).max(1)
}

fn params_of(shape: &SqlShape, i: usize, data: &Data, n: u64) -> Vec<Vec<Value>> {
    let mut rng = Rng(500 + i as u64);
    (0..n).map(|_| (shape.params)(&mut rng, data)).collect()
}

fn rows(batches: &[RecordBatch]) -> u64 {
    batches.iter().map(|b| b.num_rows() as u64).sum()
}

/// `sql` with its parameters written in as literals.
fn literal_sql(sql: &str, params: &[Value]) -> String {
    let mut out = sql.to_owned();
    for (i, v) in params.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), &v.sql_literal().to_string());
    }
    out
}

/// Chunks a statement's repetitions are cut into, the two engines taking turns chunk by
/// chunk (each first in every other chunk): what the machine does meanwhile (another guest's
/// load, the page cache's writeback) then falls on both alike, where timing one engine's
/// whole loop before the other's let it land on one side (SQLite's own times moved by up to
/// a fifth between runs of the same build).
const CHUNKS: u64 = 10;

/// One round: both engines loaded (the first as `strata_first` says), then every statement
/// run on both in turns, chunk by chunk; Strata's references after.
pub fn run_round(
    tables: &[TableSpec],
    data: &Data,
    config: &Config,
    strata_first: bool,
) -> (SqlFigures, SqlFigures) {
    let strata_dir = config.dir.join("strata-sql");
    let sqlite_dir = config.dir.join("sqlite-sql");
    let sqlite_path = sqlite_dir.join("tables.db");
    let load_strata_side = || {
        let _ = std::fs::remove_dir_all(&strata_dir);
        Arc::new(load_strata(tables, &strata_dir).0)
    };
    let load_sqlite_side = || {
        let _ = std::fs::remove_dir_all(&sqlite_dir);
        std::fs::create_dir_all(&sqlite_dir).expect("dir");
        drop(load_sqlite(tables, &sqlite_path));
        // A new connection, given the same memory as Strata (`load_sqlite`'s pragmas were
        // for the load's connection).
        crate::sqlite_side::open(&sqlite_path)
    };
    let (db, lite) = if strata_first {
        let db = load_strata_side();
        (db, load_sqlite_side())
    } else {
        let lite = load_sqlite_side();
        (load_strata_side(), lite)
    };
    let session = SqlSession::new(Arc::clone(&db)).expect("session");
    let mut strata = SqlFigures {
        config: "64 MiB block cache, table files memory-mapped".into(),
        ..SqlFigures::default()
    };
    let mut sqlite = SqlFigures {
        config: crate::sqlite_side::fair_pragmas(&lite),
        ..SqlFigures::default()
    };
    for (i, shape) in sql_shapes().iter().enumerate() {
        let n = reps(shape, config);
        let all = params_of(shape, i, data, n);
        let prepared = session.prepare(shape.sql).expect("prepare");
        let mut statement = lite
            .prepare_cached(&shape.sql.replace('$', "?"))
            .expect("prepare");
        let columns = statement.column_count();
        let (mut strata_time, mut sqlite_time) = (Duration::ZERO, Duration::ZERO);
        let (mut strata_rows, mut sqlite_rows) = (0u64, 0u64);
        let chunk = (n / CHUNKS).max(1) as usize;
        for (k, part) in all.chunks(chunk).enumerate() {
            let strata_turn = (k % 2 == 0) == strata_first;
            for turn in [strata_turn, !strata_turn] {
                let start = Instant::now();
                if turn {
                    for params in part {
                        strata_rows += rows(&prepared.execute(params).expect("execute"));
                    }
                    strata_time += start.elapsed();
                } else {
                    for params in part {
                        let bound = rusqlite::params_from_iter(params.iter().map(to_sql));
                        let mut found = statement.query(bound).expect("query");
                        while let Some(row) = found.next().expect("row") {
                            for c in 0..columns {
                                std::hint::black_box(row.get_ref(c).expect("cell"));
                            }
                            sqlite_rows += 1;
                        }
                    }
                    sqlite_time += start.elapsed();
                }
            }
        }
        strata.shapes.push(SqlTiming {
            micros: strata_time.as_secs_f64() * 1e6 / n as f64,
            rows: strata_rows as f64 / n as f64,
            datafusion_share: datafusion_share(&prepared, &all),
        });
        sqlite.shapes.push(SqlTiming {
            micros: sqlite_time.as_secs_f64() * 1e6 / n as f64,
            rows: sqlite_rows as f64 / n as f64,
            datafusion_share: f64::NAN,
        });
    }
    strata_references(&db, &session, data, config, &mut strata);
    drop(lite);
    sqlite.bytes = std::fs::metadata(&sqlite_path).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&sqlite_dir);
    drop(session);
    db.flush().expect("flush");
    strata.bytes = dir_bytes(&strata_dir);
    drop(db);
    let _ = std::fs::remove_dir_all(&strata_dir);
    (strata, sqlite)
}

/// DataFusion's share of a prepared statement's time: a tenth of its runs again, each timed
/// and its plan's Strata scan times read (`Prepared::execute_with_plan`). The scans' times
/// are summed over partitions, which may overlap in time: the share is then a lower bound
/// (and 0 where they add up to more than the runs took). NaN on the fast path.
fn datafusion_share(prepared: &strata_sql::Prepared, all: &[Vec<Value>]) -> f64 {
    if prepared.is_fast() {
        return f64::NAN;
    }
    let runs = (all.len() / 10).max(1);
    let (mut total_secs, mut strata_secs) = (0.0, 0.0);
    for params in all.iter().take(runs) {
        let start = Instant::now();
        let (batches, plan) = prepared.execute_with_plan(params).expect("execute");
        total_secs += start.elapsed().as_secs_f64();
        std::hint::black_box(batches);
        let plan = plan.expect("a plan through DataFusion");
        strata_secs += scan_nanos(&plan) as f64 / 1e9;
    }
    (1.0 - strata_secs / total_secs).max(0.0)
}

/// The references: `Db::query` for the point query, and the group query unprepared.
/// `Db::query` is timed beside the prepared point query, chunk by chunk on the same keys,
/// each of the two first in every other chunk: the statements before warmed the database's
/// mapping and block checks, which a lone `Db::query` loop run now would count to its favour.
fn strata_references(
    db: &Db,
    session: &SqlSession,
    data: &Data,
    config: &Config,
    figures: &mut SqlFigures,
) {
    let shapes = sql_shapes();
    let n = reps(&shapes[0], config);
    let keys = params_of(&shapes[0], 0, data, n);
    let prepared = session.prepare(shapes[0].sql).expect("prepare");
    let (mut sql_time, mut db_time) = (Duration::ZERO, Duration::ZERO);
    for (i, chunk) in keys.chunks(1_000).enumerate() {
        let sql = || {
            let start = Instant::now();
            for key in chunk {
                std::hint::black_box(rows(&prepared.execute(key).expect("execute")));
            }
            start.elapsed()
        };
        let db_query = || {
            let start = Instant::now();
            for key in chunk {
                let query = Query::default().filter(Predicate::eq("customer_id", key[0].clone()));
                for row in db.query("customers", &query).expect("query") {
                    std::hint::black_box(row.expect("row"));
                }
            }
            start.elapsed()
        };
        if i % 2 == 0 {
            sql_time += sql();
            db_time += db_query();
        } else {
            db_time += db_query();
            sql_time += sql();
        }
    }
    figures.db_query_point = db_time.as_secs_f64() * 1e6 / n as f64;
    figures.sql_point_beside = sql_time.as_secs_f64() * 1e6 / n as f64;
    let n = reps(&shapes[1], config) / 5;
    let groups = params_of(&shapes[1], 1, data, n);
    let start = Instant::now();
    for params in &groups {
        std::hint::black_box(
            session
                .execute(&literal_sql(shapes[1].sql, params))
                .expect("execute"),
        );
    }
    figures.unprepared_index = start.elapsed().as_secs_f64() * 1e6 / n as f64;
}

/// The time the Strata scans of `plan` spent in Strata, in nanoseconds.
fn scan_nanos(plan: &Arc<dyn ExecutionPlan>) -> usize {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(STRATA_TIME))
        .map_or(0, |v| v.as_usize());
    own + plan.children().into_iter().map(scan_nanos).sum::<usize>()
}

/// DataFusion alone over Parquet files of the same rows (written once from Strata's tables,
/// through SQL), each statement planned with its parameters.
pub fn run_parquet(tables: &[TableSpec], data: &Data, config: &Config) -> SqlFigures {
    let dir = config.dir.join("parquet");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    if !dir.join("done").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let source = config.dir.join("parquet-source");
        let _ = std::fs::remove_dir_all(&source);
        let (db, _) = load_strata(tables, &source);
        let session = SqlSession::new(Arc::new(db)).expect("session");
        for spec in tables {
            let path = dir.join(format!("{}.parquet", spec.name));
            runtime.block_on(async {
                let df = session
                    .dataframe(&format!("SELECT * FROM {}", spec.name))
                    .await
                    .expect("select");
                write_parquet(&path, df.collect().await.expect("rows"));
            });
        }
        drop(session);
        let _ = std::fs::remove_dir_all(&source);
        std::fs::write(dir.join("done"), "").expect("marker");
    }
    let context = SessionContext::new();
    for spec in tables {
        let path = dir.join(format!("{}.parquet", spec.name));
        runtime
            .block_on(context.register_parquet(
                spec.name,
                path.to_str().expect("UTF-8 path"),
                ParquetReadOptions::default(),
            ))
            .expect("register");
    }
    let mut figures = SqlFigures::default();
    for (i, shape) in sql_shapes().iter().enumerate() {
        // Scans of whole files: a tenth of the repetitions (so its rows a statement, an
        // average over fewer statements, are not compared).
        let n = (reps(shape, config) / 10).max(3);
        let all = params_of(shape, i, data, n);
        let mut count = 0;
        let start = Instant::now();
        for params in &all {
            let scalars: Vec<ScalarValue> =
                params.iter().map(strata_sql::values::scalar_of).collect();
            let batches = runtime.block_on(async {
                context
                    .sql(shape.sql)
                    .await?
                    .with_param_values(scalars)?
                    .collect()
                    .await
            });
            count += rows(&batches.expect("parquet query"));
        }
        figures.shapes.push(SqlTiming {
            micros: start.elapsed().as_secs_f64() * 1e6 / n as f64,
            rows: count as f64 / n as f64,
            datafusion_share: 1.0,
        });
    }
    figures.bytes = (tables.iter())
        .map(|t| {
            std::fs::metadata(dir.join(format!("{}.parquet", t.name)))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum();
    figures.config = "DataFusion over Parquet, no indexes".into();
    figures
}

fn write_parquet(path: &Path, batches: Vec<RecordBatch>) {
    use datafusion::parquet::arrow::ArrowWriter;
    let file = std::fs::File::create(path).expect("parquet file");
    let schema = batches.first().expect("rows").schema();
    let mut writer = ArrowWriter::try_new(file, schema, None).expect("writer");
    for batch in &batches {
        writer.write(batch).expect("write");
    }
    writer.close().expect("close");
}

/// Alternating rounds of the three, then the table of medians and ratios.
pub fn run_sql(tables: &[TableSpec], data: &Data, config: &Config) {
    let mut strata = Vec::new();
    let mut sqlite = Vec::new();
    let mut parquet = Vec::new();
    for round in 1..=config.rounds {
        let strata_first = round % 2 == 1;
        eprintln!("round {round}: strata sql and sqlite, in turns ...");
        let (s, q) = run_round(tables, data, config, strata_first);
        strata.push(s);
        sqlite.push(q);
        eprintln!("round {round}: datafusion over parquet ...");
        parquet.push(run_parquet(tables, data, config));
    }
    let med =
        |runs: &[SqlFigures], f: &dyn Fn(&SqlFigures) -> f64| median(runs.iter().map(f).collect());
    println!(
        "\nSQLite: {}. Strata: {}. Ratios: SQLite's (or Parquet's) time over Strata's; above 1, \
         Strata is faster.",
        sqlite[0].config, strata[0].config
    );
    println!(
        "\n| {:<52} | {:>7} | {:>9} | {:>9} | {:>6} | {:>9} | {:>7} | {:>10} |",
        "statement (µs, every row consumed)",
        "rows",
        "strata",
        "sqlite",
        "ratio",
        "parquet",
        "ratio",
        "datafusion"
    );
    println!(
        "|{}|{}|{}|{}|{}|{}|{}|{}|",
        "-".repeat(54),
        "-".repeat(9),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(8),
        "-".repeat(11),
        "-".repeat(9),
        "-".repeat(12)
    );
    let mut ratios = Vec::new();
    for (i, shape) in sql_shapes().iter().enumerate() {
        let (s, q, p) = (
            med(&strata, &|x| x.shapes[i].micros),
            med(&sqlite, &|x| x.shapes[i].micros),
            med(&parquet, &|x| x.shapes[i].micros),
        );
        let (rs, rq) = (strata[0].shapes[i].rows, sqlite[0].shapes[i].rows);
        assert!(
            (rs - rq).abs() < 1e-9,
            "{}: strata returned {rs} rows a statement, sqlite {rq}",
            shape.name
        );
        let share = med(&strata, &|x| x.shapes[i].datafusion_share);
        let share = if share.is_nan() {
            "fast path".to_owned()
        } else {
            format!("{:.0} %", share * 100.0)
        };
        ratios.push(q / s);
        println!(
            "| {:<52} | {rs:>7.1} | {s:>9.1} | {q:>9.1} | {:>6.2} | {p:>9.0} | {:>7.1} | {share:>10} |",
            shape.name,
            q / s,
            p / s
        );
    }
    println!(
        "\ngeometric mean of the ratios against SQLite: {:.2}; {} of {} statements at 1.0 or more",
        geometric_mean(&ratios),
        ratios.iter().filter(|r| **r >= 1.0).count(),
        ratios.len()
    );
    let point = med(&strata, &|x| x.sql_point_beside);
    let db_query = med(&strata, &|x| x.db_query_point);
    println!(
        "point query, alternating on the same keys: prepared SQL {point:.2} µs, Db::query \
         {db_query:.2} µs ({:.2}x); the group query as unprepared text {:.1} µs",
        point / db_query,
        med(&strata, &|x| x.unprepared_index)
    );
    println!(
        "bytes on disk: strata {:.1} MB, sqlite {:.1} MB ({:.2}x), parquet {:.1} MB (no indexes)",
        strata[0].bytes as f64 / 1e6,
        sqlite[0].bytes as f64 / 1e6,
        strata[0].bytes as f64 / sqlite[0].bytes.max(1) as f64,
        parquet[0].bytes as f64 / 1e6
    );
}
