//! The query shapes: the same question to both engines. The customers' shapes are here; the
//! TPC-H tables' are in `tpch.rs`.

use strata::{Predicate, Query, Value};

use crate::data::{Data, Rng, groups, signup_date};

/// One query shape: the same question to both engines.
pub struct Shape {
    /// The table it asks.
    pub table: &'static str,
    pub name: &'static str,
    /// Repetitions at `--scale 1`.
    pub reps: u64,
    /// The parameters of one repetition.
    pub params: fn(&mut Rng, &Data) -> Vec<Value>,
    pub strata: fn(&[Value]) -> Query,
    pub sql: &'static str,
    /// The SQL's parameters, when not the same list.
    pub sql_params: fn(Vec<Value>) -> Vec<Value>,
}

pub fn same(params: Vec<Value>) -> Vec<Value> {
    params
}

pub fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("not an int: {other}"),
    }
}

pub fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        other => panic!("not a float: {other}"),
    }
}

pub const COVERED: [&str; 3] = ["customer_id", "age_years", "account_balance"];

pub fn customer_shapes() -> Vec<Shape> {
    vec![
        Shape {
            table: "customers",
            name: "primary key, Db::query",
            reps: 20_000,
            params: |rng, d| vec![Value::Int(1 + rng.below(d.rows) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("customer_id", p[0].clone())),
            sql: "SELECT * FROM customers WHERE customer_id = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "index =, ~30 rows, fetches",
            reps: 2_000,
            params: |rng, d| vec![Value::Int(rng.below(groups(d.rows)) as i64)],
            strata: |p| Query::default().filter(Predicate::eq("group_id", p[0].clone())),
            sql: "SELECT * FROM customers WHERE group_id = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "index =, ~1,000 rows, fetches",
            reps: 100,
            params: |rng, d| {
                let towns = d.thousand_towns();
                vec![Value::from(
                    towns[rng.below(towns.len() as u64) as usize].clone(),
                )]
            },
            strata: |p| Query::default().filter(Predicate::eq("home_town", p[0].clone())),
            sql: "SELECT * FROM customers WHERE home_town = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "covering =, ~30 rows",
            reps: 4_000,
            params: |rng, d| vec![Value::Int(rng.below(groups(d.rows)) as i64)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("group_id", p[0].clone()))
                    .select(COVERED)
            },
            sql: "SELECT customer_id, age_years, account_balance FROM customers WHERE group_id = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
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
                    .filter(Predicate::eq("home_town", p[0].clone()))
                    .select(COVERED)
            },
            sql: "SELECT customer_id, age_years, account_balance FROM customers WHERE home_town = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "index range, ~700 rows",
            reps: 100,
            params: |rng, _| {
                let low = rng.below(99_900) as f64;
                vec![Value::Float(low), Value::Float(low + 70.0)]
            },
            strata: |p| {
                Query::default().filter(Predicate::between(
                    "account_balance",
                    float(&p[0]),
                    float(&p[1]),
                ))
            },
            sql: "SELECT * FROM customers WHERE account_balance BETWEEN ?1 AND ?2",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "composite prefix (=, range), ~1,400 rows",
            reps: 50,
            params: |rng, _| {
                let age = 18 + rng.below(69) as i64;
                vec![Value::from("frozen"), Value::Int(age), Value::Int(age + 1)]
            },
            strata: |p| {
                Query::default()
                    .filter(Predicate::eq("account_status", p[0].clone()))
                    .filter(Predicate::between("age_years", int(&p[1]), int(&p[2])))
            },
            sql: "SELECT * FROM customers WHERE account_status = ?1 AND age_years BETWEEN ?2 AND ?3",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "IN (10 values), ~300 rows",
            reps: 300,
            params: |rng, d| {
                (0..10)
                    .map(|_| Value::Int(rng.below(groups(d.rows)) as i64))
                    .collect()
            },
            strata: |p| Query::default().filter(Predicate::in_list("group_id", p.to_vec())),
            sql: "SELECT * FROM customers WHERE group_id IN (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "IS NULL, indexed, 0.25 %",
            reps: 20,
            params: |_, _| Vec::new(),
            strata: |_| Query::default().filter(Predicate::is_null("phone_number")),
            sql: "SELECT * FROM customers WHERE phone_number IS NULL",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "IS NOT NULL, indexed, 1 %",
            reps: 10,
            params: |_, _| Vec::new(),
            strata: |_| Query::default().filter(Predicate::is_not_null("referrer_id")),
            sql: "SELECT * FROM customers WHERE referrer_id IS NOT NULL",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "scan, filter keeps 1 %",
            reps: 3,
            params: |_, _| vec![Value::Int(1_000)],
            strata: |p| Query::default().filter(Predicate::lt("credit_score", p[0].clone())),
            sql: "SELECT * FROM customers WHERE credit_score < ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "scan, half the table",
            reps: 2,
            params: |_, _| vec![Value::Int(53)],
            strata: |p| Query::default().filter(Predicate::ge("age_years", p[0].clone())),
            sql: "SELECT * FROM customers WHERE age_years >= ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "low-cardinality =, 60 % (scan)",
            reps: 2,
            params: |_, _| vec![Value::from("active")],
            strata: |p| Query::default().filter(Predicate::eq("account_status", p[0].clone())),
            sql: "SELECT * FROM customers WHERE account_status = ?1",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "ORDER BY balance DESC LIMIT 10",
            reps: 2_000,
            params: |rng, _| vec![Value::Float(rng.below(100_000) as f64)],
            strata: |p| {
                Query::default()
                    .filter(Predicate::lt("account_balance", float(&p[0])))
                    .order_by(["account_balance"], true)
                    .limit(10)
            },
            sql: "SELECT * FROM customers WHERE account_balance < ?1 ORDER BY account_balance DESC LIMIT 10",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "index range, one week of sign-ups (clustered)",
            reps: 100,
            params: |rng, d| {
                let id = 1 + rng.below(d.rows);
                let week = 7 * d.rows / 3652;
                vec![
                    Value::from(signup_date(id, d.rows)),
                    Value::from(signup_date(id + week, d.rows)),
                ]
            },
            strata: |p| {
                Query::default().filter(Predicate::between(
                    "signup_date",
                    p[0].clone(),
                    p[1].clone(),
                ))
            },
            sql: "SELECT * FROM customers WHERE signup_date BETWEEN ?1 AND ?2",
            sql_params: same,
        },
        Shape {
            table: "customers",
            name: "scan, filter on free text (notes)",
            reps: 3,
            params: |_, _| vec![Value::from("VIP")],
            strata: |p| Query::default().filter(Predicate::eq("notes", p[0].clone())),
            sql: "SELECT * FROM customers WHERE notes = ?1",
            sql_params: same,
        },
    ]
}

/// Every shape: the customers', then the TPC-H tables'.
pub fn shapes() -> Vec<Shape> {
    let mut all = customer_shapes();
    all.extend(crate::tpch::tpch_shapes());
    all
}
