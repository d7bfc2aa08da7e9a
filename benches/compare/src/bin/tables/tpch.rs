//! Two tables of TPC-H's shape, from its public generator (`tpchgen`, the Rust port of
//! `dbgen`): `lineitem` (16 fields, the wide table: text dates, comments of 10 to 43 bytes,
//! skewed low-cardinality codes) and `orders` (9 fields, the narrow 1M-row table). Neither
//! shape is ours.
//!
//! One change to what `dbgen` writes, so that rows arrive as an application writes them: in
//! time order. `dbgen`'s order keys are in no date order; here each table's orders are
//! numbered again in order of `o_orderdate` (ties by the old key), and `lineitem` is written
//! in that order. An index on a date is then clustered with the primary key, as in a table
//! that grows by appending, while an index on a part, supplier, customer or clerk is not.
//!
//! - `lineitem` at scale factor `sf` (default 0.2: 1.2M rows), primary key
//!   `(l_orderkey, l_linenumber)`.
//! - `orders` at 3.5 × `sf` (default 0.7: 1.05M rows), primary key `o_orderkey`.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use strata::{Predicate, Query, Value};
use tpchgen::generators::{LineItemGenerator, OrderGenerator};

use crate::data::Rng;
use crate::shapes::{Shape, same};

/// What the TPC-H shapes need to know of the two tables.
#[derive(Default)]
pub struct TpchData {
    pub lineitem_rows: u64,
    /// `lineitem`'s orders (its keys run 1 to this).
    pub lineitem_orders: u64,
    /// The ship dates `lineitem` holds, sorted.
    pub ship_dates: Vec<String>,
    pub parts: u64,
    pub suppliers: u64,
    pub orders_rows: u64,
    /// The order dates `orders` holds, sorted.
    pub order_dates: Vec<String>,
    pub customers: u64,
    pub clerks: u64,
}

/// The orders of scale factor `sf` in date order: (date, the old key), each line's text after
/// the key. Their new key is their place in the result, from 1.
fn orders_by_date(sf: f64) -> Vec<(String, i64, String)> {
    let mut orders: Vec<(String, i64, String)> = OrderGenerator::new(sf, 1, 1)
        .iter()
        .map(|o| {
            let rest = format!(
                "{},{},{},{},{},{},{},\"{}\"",
                o.o_custkey,
                o.o_orderstatus,
                o.o_totalprice,
                o.o_orderdate,
                o.o_orderpriority,
                o.o_clerk,
                o.o_shippriority,
                o.o_comment
            );
            (o.o_orderdate.to_string(), o.o_orderkey, rest)
        })
        .collect();
    orders.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    orders
}

/// Writes `lineitem.csv` and `orders.csv` into `dir` unless they are there, and returns what
/// the shapes need to know of them.
pub fn generate(dir: &Path, sf: f64) -> TpchData {
    let lineitem = dir.join(format!("lineitem-{sf}.csv"));
    let orders = dir.join(format!("orders-{}.csv", sf * 3.5));
    let mut data = TpchData {
        parts: (200_000.0 * sf) as u64,
        suppliers: (10_000.0 * sf) as u64,
        customers: (150_000.0 * sf * 3.5) as u64,
        clerks: ((1_000.0 * sf * 3.5) as u64).max(1),
        ..TpchData::default()
    };

    // lineitem: its orders' new keys first.
    let by_date = orders_by_date(sf);
    data.lineitem_orders = by_date.len() as u64;
    let new_key: HashMap<i64, i64> = by_date
        .iter()
        .enumerate()
        .map(|(i, (_, old, _))| (*old, i as i64 + 1))
        .collect();
    drop(by_date);
    let mut dates: Vec<String> = Vec::new();
    let mut lines: Vec<(i64, i32, String)> = LineItemGenerator::new(sf, 1, 1)
        .iter()
        .map(|l| {
            dates.push(l.l_shipdate.to_string());
            let text = format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"",
                l.l_partkey,
                l.l_suppkey,
                l.l_linenumber,
                l.l_quantity,
                l.l_extendedprice,
                l.l_discount,
                l.l_tax,
                l.l_returnflag,
                l.l_linestatus,
                l.l_shipdate,
                l.l_commitdate,
                l.l_receiptdate,
                l.l_shipinstruct,
                l.l_shipmode,
                l.l_comment
            );
            (new_key[&l.l_orderkey], l.l_linenumber, text)
        })
        .collect();
    lines.sort_by_key(|l| (l.0, l.1));
    data.lineitem_rows = lines.len() as u64;
    dates.sort_unstable();
    dates.dedup();
    data.ship_dates = dates;
    if !lineitem.exists() {
        eprintln!(
            "generating lineitem (sf {sf}) into {} ...",
            lineitem.display()
        );
        let mut out = std::io::BufWriter::new(std::fs::File::create(&lineitem).expect("create"));
        writeln!(
            out,
            "l_orderkey,l_partkey,l_suppkey,l_linenumber,l_quantity,l_extendedprice,l_discount,\
             l_tax,l_returnflag,l_linestatus,l_shipdate,l_commitdate,l_receiptdate,\
             l_shipinstruct,l_shipmode,l_comment"
        )
        .expect("write");
        for (key, _, text) in &lines {
            writeln!(out, "{key},{text}").expect("write");
        }
        out.flush().expect("flush");
    }
    drop(lines);

    let by_date = orders_by_date(sf * 3.5);
    data.orders_rows = by_date.len() as u64;
    let mut dates: Vec<String> = by_date.iter().map(|o| o.0.clone()).collect();
    dates.dedup();
    data.order_dates = dates;
    if !orders.exists() {
        eprintln!(
            "generating orders (sf {}) into {} ...",
            sf * 3.5,
            orders.display()
        );
        let mut out = std::io::BufWriter::new(std::fs::File::create(&orders).expect("create"));
        writeln!(
            out,
            "o_orderkey,o_custkey,o_orderstatus,o_totalprice,o_orderdate,o_orderpriority,\
             o_clerk,o_shippriority,o_comment"
        )
        .expect("write");
        for (i, (_, _, rest)) in by_date.iter().enumerate() {
            writeln!(out, "{},{rest}", i + 1).expect("write");
        }
        out.flush().expect("flush");
    }
    data
}

/// The CSV files [`generate`] writes.
pub fn csv_paths(dir: &Path, sf: f64) -> (std::path::PathBuf, std::path::PathBuf) {
    (
        dir.join(format!("lineitem-{sf}.csv")),
        dir.join(format!("orders-{}.csv", sf * 3.5)),
    )
}

pub const LINEITEM_SQL: &str = "l_orderkey INTEGER, l_partkey INTEGER, l_suppkey INTEGER, \
     l_linenumber INTEGER, l_quantity INTEGER, l_extendedprice REAL, l_discount REAL, \
     l_tax REAL, l_returnflag TEXT, l_linestatus TEXT, l_shipdate TEXT, l_commitdate TEXT, \
     l_receiptdate TEXT, l_shipinstruct TEXT, l_shipmode TEXT, l_comment TEXT, \
     PRIMARY KEY (l_orderkey, l_linenumber)";
pub const LINEITEM_KEY: &[&str] = &["l_orderkey", "l_linenumber"];
pub const LINEITEM_IMPORT_INDEXES: &[(&str, &[&str])] = &[
    ("l_by_shipdate", &["l_shipdate"]),
    ("l_by_partkey", &["l_partkey"]),
];
pub const LINEITEM_QUERY_INDEXES: &[(&str, &[&str], &[&str])] = &[
    ("l_by_suppkey", &["l_suppkey"], &[]),
    ("l_by_mode_date", &["l_shipmode", "l_shipdate"], &[]),
    ("l_by_returnflag", &["l_returnflag"], &[]),
];

pub const ORDERS_SQL: &str = "o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER, \
     o_orderstatus TEXT, o_totalprice REAL, o_orderdate TEXT, o_orderpriority TEXT, \
     o_clerk TEXT, o_shippriority INTEGER, o_comment TEXT";
pub const ORDERS_KEY: &[&str] = &["o_orderkey"];
pub const ORDERS_IMPORT_INDEXES: &[(&str, &[&str])] = &[
    ("o_by_orderdate", &["o_orderdate"]),
    ("o_by_custkey", &["o_custkey"]),
];
pub const ORDERS_QUERY_INDEXES: &[(&str, &[&str], &[&str])] = &[
    ("o_by_clerk", &["o_clerk"], &[]),
    (
        "o_by_status_priority",
        &["o_orderstatus", "o_orderpriority"],
        &[],
    ),
];

/// A random date of `dates` with `span` more after it: (first, last).
fn date_span(rng: &mut Rng, dates: &[String], span: usize) -> (Value, Value) {
    let first = rng.below(dates.len().saturating_sub(span).max(1) as u64) as usize;
    let last = (first + span).min(dates.len().saturating_sub(1));
    (
        Value::from(dates[first].clone()),
        Value::from(dates[last].clone()),
    )
}

pub fn tpch_shapes() -> Vec<Shape> {
    vec![
        Shape {
            table: "lineitem",
            name: "lineitem: primary key, one row",
            reps: 20_000,
            params: |rng, d| {
                vec![
                    Value::Int(1 + rng.below(d.tpch.lineitem_orders) as i64),
                    Value::Int(1),
                ]
            },
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("l_orderkey", p[0].clone()))
                    .filter(Predicate::eq("l_linenumber", p[1].clone()))
            },
            sql: "SELECT * FROM lineitem WHERE l_orderkey = ?1 AND l_linenumber = ?2",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: key prefix, one order (~4 rows)",
            reps: 10_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.tpch.lineitem_orders) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("l_orderkey", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_orderkey = ?1",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: index =, one ship date (clustered)",
            reps: 100,
            params: |rng, d| {
                let (day, _) = date_span(rng, &d.tpch.ship_dates, 0);
                vec![day]
            },
            strata: |p| Query::default().filter(Predicate::eq("l_shipdate", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_shipdate = ?1",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: index range, 3 ship dates (clustered)",
            reps: 50,
            params: |rng, d| {
                let (a, b) = date_span(rng, &d.tpch.ship_dates, 2);
                vec![a, b]
            },
            strata: |p| {
                Query::default().filter(Predicate::between(
                    "l_shipdate",
                    p[0].clone(),
                    p[1].clone(),
                ))
            },
            sql: "SELECT * FROM lineitem WHERE l_shipdate BETWEEN ?1 AND ?2",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: index =, one part (~30 scattered)",
            reps: 2_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.tpch.parts) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("l_partkey", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_partkey = ?1",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: index =, one supplier (~600 scattered)",
            reps: 100,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.tpch.suppliers) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("l_suppkey", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_suppkey = ?1",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: composite (mode =, 30 ship dates)",
            reps: 50,
            params: |rng, d| {
                let (a, b) = date_span(rng, &d.tpch.ship_dates, 29);
                vec![Value::from("AIR"), a, b]
            },
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("l_shipmode", p[0].clone()))
                    .filter(Predicate::between("l_shipdate", p[1].clone(), p[2].clone()))
            },
            sql: "SELECT * FROM lineitem WHERE l_shipmode = ?1 AND l_shipdate BETWEEN ?2 AND ?3",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: scan, two unindexed fields",
            reps: 3,
            params: |_, _| vec![Value::from("TAKE BACK RETURN"), Value::Int(45)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("l_shipinstruct", p[0].clone()))
                    .filter(Predicate::gt("l_quantity", p[1].clone()))
            },
            sql: "SELECT * FROM lineitem WHERE l_shipinstruct = ?1 AND l_quantity > ?2",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: scan, filter on comment text",
            reps: 3,
            params: |_, _| vec![Value::from("b")],
            strata: |p| Query::default().filter(Predicate::lt("l_comment", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_comment < ?1",
            sql_params: same,
        },
        Shape {
            table: "lineitem",
            name: "lineitem: low-cardinality =, 25 % (scan)",
            reps: 2,
            params: |_, _| vec![Value::from("R")],
            strata: |p| Query::default().filter(Predicate::eq("l_returnflag", p[0].clone())),
            sql: "SELECT * FROM lineitem WHERE l_returnflag = ?1",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: primary key, one row",
            reps: 20_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.tpch.orders_rows) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("o_orderkey", p[0].clone())),
            sql: "SELECT * FROM orders WHERE o_orderkey = ?1",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: index =, one customer (~10 scattered)",
            reps: 5_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.tpch.customers) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("o_custkey", p[0].clone())),
            sql: "SELECT * FROM orders WHERE o_custkey = ?1",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: index =, one order date (clustered)",
            reps: 200,
            params: |rng, d| {
                let (day, _) = date_span(rng, &d.tpch.order_dates, 0);
                vec![day]
            },
            strata: |p| Query::default().filter(Predicate::eq("o_orderdate", p[0].clone())),
            sql: "SELECT * FROM orders WHERE o_orderdate = ?1",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: index range, one week (clustered)",
            reps: 50,
            params: |rng, d| {
                let (a, b) = date_span(rng, &d.tpch.order_dates, 6);
                vec![a, b]
            },
            strata: |p| {
                Query::default().filter(Predicate::between(
                    "o_orderdate",
                    p[0].clone(),
                    p[1].clone(),
                ))
            },
            sql: "SELECT * FROM orders WHERE o_orderdate BETWEEN ?1 AND ?2",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: index =, one clerk (scattered)",
            reps: 50,
            params: |rng, d| {
                vec![Value::from(format!(
                    "Clerk#{:09}",
                    1 + rng.below(d.tpch.clerks)
                ))]
            },
            strata: |p| Query::default().filter(Predicate::eq("o_clerk", p[0].clone())),
            sql: "SELECT * FROM orders WHERE o_clerk = ?1",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: composite =, (status, priority)",
            reps: 20,
            params: |_, _| vec![Value::from("P"), Value::from("1-URGENT")],
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("o_orderstatus", p[0].clone()))
                    .filter(Predicate::eq("o_orderpriority", p[1].clone()))
            },
            sql: "SELECT * FROM orders WHERE o_orderstatus = ?1 AND o_orderpriority = ?2",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: scan, two-field filter",
            reps: 3,
            params: |_, _| vec![Value::from("F"), Value::Float(400_000.0)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("o_orderstatus", p[0].clone()))
                    .filter(Predicate::gt("o_totalprice", p[1].clone()))
            },
            sql: "SELECT * FROM orders WHERE o_orderstatus = ?1 AND o_totalprice > ?2",
            sql_params: same,
        },
        Shape {
            table: "orders",
            name: "orders: date range, last 14 % (planner's choice)",
            reps: 3,
            params: |_, d| {
                let dates = &d.tpch.order_dates;
                vec![Value::from(dates[dates.len() * 86 / 100].clone())]
            },
            strata: |p| Query::default().filter(Predicate::ge("o_orderdate", p[0].clone())),
            sql: "SELECT * FROM orders WHERE o_orderdate >= ?1",
            sql_params: same,
        },
    ]
}
