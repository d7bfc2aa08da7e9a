//! Helpers shared by the table layer's integration tests: random records and predicates over
//! a small schema, and the brute-force answer a query must equal.
//!
//! The brute force tests each row with its own evaluator ([`satisfies`], over [`order`]),
//! written from the documented semantics (`strata_planner::value`'s module docs and
//! `docs/architecture.md`, "Queries"), not with `Predicate::matches`, which the executor
//! uses: a disagreement about NULL, mixed types, NaN or -0.0 shows up as a differential
//! failure instead of being shared by both sides.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use strata::{
    Condition, Db, IndexOptions, Op, Predicate, Projection, Query, Record, TableBatch,
    TableOptions, Value, WriteOptions, record,
};

use super::Rng;

pub const FIELDS: [&str; 5] = ["u", "skew", "s", "f", "n"];

/// A field value: `u` uniform ints, `skew` 90% one value, `s` short strings, `f` floats
/// and ints mixed, `n` often missing.
pub fn value(rng: &mut Rng, field: &str) -> Value {
    match field {
        "u" => Value::Int(rng.below(50) as i64 - 10),
        "skew" => {
            if rng.below(10) < 9 {
                Value::from("common")
            } else {
                Value::from(format!("rare{}", rng.below(5)))
            }
        }
        "s" => {
            let choices = ["", "a", "a\0", "ab", "b", "\0", "zz"];
            Value::from(choices[rng.below(choices.len() as u64) as usize])
        }
        "f" => match rng.below(12) {
            // The floats whose order is easy to get wrong.
            0 => {
                let awkward = [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
                Value::Float(awkward[rng.below(awkward.len() as u64) as usize])
            }
            1..=6 => Value::Float(rng.below(20) as f64 / 4.0 - 2.0),
            _ => Value::Int(rng.below(6) as i64 - 2),
        },
        _ => {
            if rng.below(3) == 0 {
                Value::Null
            } else {
                Value::Int(rng.below(4) as i64)
            }
        }
    }
}

pub fn random_record(rng: &mut Rng, id: i64, sub: i64) -> Record {
    let mut r = record! { "id" => id, "sub" => sub };
    for f in FIELDS {
        let v = value(rng, f);
        if !v.is_null() {
            r.set(f, v);
        }
    }
    r
}

pub fn random_predicate(rng: &mut Rng) -> Predicate {
    let fields = ["u", "skew", "s", "f", "n", "id", "sub"];
    let field = fields[rng.below(fields.len() as u64) as usize];
    let v = |rng: &mut Rng| match field {
        "id" => Value::Int(rng.below(60) as i64),
        "sub" => Value::Int(rng.below(3) as i64),
        f => value(rng, f),
    };
    let patterns = [
        "a%", "%b", "_", "a_", "%", "rare%", "c%n", "\\%", "ab", "", "%a%",
    ];
    let pattern = |rng: &mut Rng| patterns[rng.below(patterns.len() as u64) as usize].to_owned();
    let op = match rng.below(14) {
        0 | 1 => Op::Eq(v(rng)),
        2 => Op::In((0..1 + rng.below(3)).map(|_| v(rng)).collect()),
        3 => Op::Lt(v(rng)),
        4 => Op::Le(v(rng)),
        5 => Op::Gt(v(rng)),
        6 => Op::Ge(v(rng)),
        7 => {
            let (a, b) = (v(rng), v(rng));
            Op::Between(a.clone().min(b.clone()), a.max(b))
        }
        8 => Op::Ne(v(rng)),
        9 => Op::IsNotNull,
        10 => Op::NotIn((0..1 + rng.below(3)).map(|_| v(rng)).collect()),
        11 => Op::Like(pattern(rng)),
        12 => Op::NotLike(pattern(rng)),
        _ => Op::IsNull,
    };
    Predicate::new(field, op)
}

/// An `OR` of two or three members, each a predicate, two ANDed, or (rarely) an `OR` of two
/// nested in an `AND`.
pub fn random_condition(rng: &mut Rng) -> Condition {
    let member = |rng: &mut Rng| match rng.below(6) {
        0..=2 => Condition::Is(random_predicate(rng)),
        3 | 4 => Condition::all([random_predicate(rng), random_predicate(rng)]),
        _ => Condition::All(vec![
            Condition::Is(random_predicate(rng)),
            Condition::any([random_predicate(rng), random_predicate(rng)]),
        ]),
    };
    Condition::Any((0..2 + rng.below(2)).map(|_| member(rng)).collect())
}

/// Whether the record passes `condition`, by [`satisfies`].
pub fn holds(condition: &Condition, r: &Record) -> bool {
    match condition {
        Condition::Is(p) => satisfies(&p.op, r.value(&p.field)),
        Condition::All(cs) => cs.iter().all(|c| holds(c, r)),
        Condition::Any(cs) => cs.iter().any(|c| holds(c, r)),
    }
}

/// SQL's `LIKE`, as documented: `%` any run, `_` one character, `\` escapes; by character,
/// case-sensitive. A plain recursion over characters (not the executor's matcher).
pub fn like(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('%', rest)) => (0..=text.len()).any(|i| like(rest, &text[i..])),
        Some(('_', rest)) => !text.is_empty() && like(rest, &text[1..]),
        Some(('\\', rest)) if !rest.is_empty() => {
            text.first() == Some(&rest[0]) && like(&rest[1..], &text[1..])
        }
        Some((c, rest)) => text.first() == Some(c) && like(rest, &text[1..]),
    }
}

pub fn brute_force(all: &BTreeMap<(i64, i64), Record>, q: &Query) -> Vec<Record> {
    all.values()
        .filter(|r| {
            q.predicates
                .iter()
                .all(|p| satisfies(&p.op, r.value(&p.field)))
                && q.conditions.iter().all(|c| holds(c, r))
        })
        .map(|r| match &q.projection {
            Some(fields) => r.project(fields),
            None => r.clone(),
        })
        .collect()
}

/// The documented order of values: `Null` < booleans < numbers < strings < bytes; integers
/// and floats by numeric value, an integer just before a float of equal value; floats in IEEE
/// total order (a negative NaN below -inf, a positive NaN above +inf, -0.0 below every value
/// that is numerically zero: 0.0 and the integer 0); strings by their UTF-8 bytes.
pub fn order(a: &Value, b: &Value) -> Ordering {
    fn kind(v: &Value) -> u8 {
        match v {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Str(_) => 3,
            Value::Bytes(_) => 4,
        }
    }
    // IEEE total order as an unsigned key: negative floats reversed below positive ones.
    fn float_key(x: f64) -> u64 {
        let bits = x.to_bits();
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    }
    // An integer against a float, by value; equal values put the integer first, but -0.0
    // sorts below every value that is numerically zero (0.0 and the integer 0 alike).
    fn int_float(i: i64, x: f64) -> Ordering {
        if x == 0.0 && x.is_sign_negative() {
            return match i.cmp(&0) {
                Ordering::Equal => Ordering::Greater,
                other => other,
            };
        }
        if x.is_nan() {
            return if x.is_sign_negative() {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        if x >= 9_223_372_036_854_775_808.0 {
            return Ordering::Less;
        }
        if x < -9_223_372_036_854_775_808.0 {
            return Ordering::Greater;
        }
        // |x| < 2^63 here, so its floor is an exact i64.
        match i.cmp(&(x.floor() as i64)) {
            Ordering::Equal => Ordering::Less,
            other => other,
        }
    }
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => float_key(*x).cmp(&float_key(*y)),
        (Value::Int(x), Value::Float(y)) => int_float(*x, *y),
        (Value::Float(x), Value::Int(y)) => int_float(*y, *x).reverse(),
        (Value::Str(x), Value::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        _ => kind(a).cmp(&kind(b)),
    }
}

/// Whether a stored `value` (`Null` for a missing field) satisfies `op`, as documented: SQL's
/// NULL rules (a comparison with NULL on either side is never true; `IS NULL` matches a
/// missing field; `!=` never matches NULL) and the one total [`order`] for everything else.
pub fn satisfies(op: &Op, value: &Value) -> bool {
    let null = matches!(value, Value::Null);
    let compare = |operand: &Value| match (null, operand) {
        (true, _) | (_, Value::Null) => None,
        _ => Some(order(value, operand)),
    };
    match op {
        Op::IsNull => null,
        Op::IsNotNull => !null,
        Op::Eq(x) => compare(x) == Some(Ordering::Equal),
        Op::Ne(x) => compare(x).is_some_and(Ordering::is_ne),
        Op::In(xs) => xs.iter().any(|x| compare(x) == Some(Ordering::Equal)),
        Op::Lt(x) => compare(x) == Some(Ordering::Less),
        Op::Le(x) => compare(x).is_some_and(Ordering::is_le),
        Op::Gt(x) => compare(x) == Some(Ordering::Greater),
        Op::Ge(x) => compare(x).is_some_and(Ordering::is_ge),
        Op::Between(low, high) => {
            compare(low).is_some_and(Ordering::is_ge) && compare(high).is_some_and(Ordering::is_le)
        }
        Op::NotIn(xs) => xs.iter().all(|x| compare(x).is_some_and(Ordering::is_ne)),
        Op::Like(p) | Op::NotLike(p) => match value {
            Value::Str(text) => {
                let p: Vec<char> = p.chars().collect();
                let text: Vec<char> = text.chars().collect();
                like(&p, &text) == matches!(op, Op::Like(_))
            }
            _ => false,
        },
    }
}

pub fn sorted(mut rows: Vec<Record>) -> Vec<Record> {
    rows.sort_by_key(|r| r.encode());
    rows
}

/// The rows of table `t`, by `(id, sub)`.
pub type Model = BTreeMap<(i64, i64), Record>;

/// Applies `n` random upserts and deletes (one in eight) over 60 × 3 keys to table `t` in one
/// batch, and to the model.
pub fn load(db: &Db, all: &mut Model, rng: &mut Rng, n: usize) {
    let mut batch = TableBatch::new();
    for _ in 0..n {
        let (id, sub) = (rng.below(60) as i64, rng.below(3) as i64);
        if rng.below(8) == 0 {
            batch.delete([Value::Int(id), Value::Int(sub)]);
            all.remove(&(id, sub));
        } else {
            let r = random_record(rng, id, sub);
            batch.upsert(r.clone());
            all.insert((id, sub), r);
        }
    }
    db.write("t", batch, WriteOptions::default()).unwrap();
}

/// The fields (one or two distinct ones of [`FIELDS`]) and projection of a random index.
pub fn random_index(rng: &mut Rng) -> (Vec<&'static str>, Projection) {
    let n_fields = 1 + rng.below(2) as usize;
    let mut fields: Vec<&'static str> = Vec::new();
    while fields.len() < n_fields {
        let f = FIELDS[rng.below(FIELDS.len() as u64) as usize];
        if !fields.contains(&f) {
            fields.push(f);
        }
    }
    let projections = [
        Projection::KeysOnly,
        Projection::Include(vec!["s".into(), "n".into()]),
        Projection::All,
    ];
    (fields, projections[rng.below(3) as usize].clone())
}

/// Every table's definition (as its debug text) and rows, for "nothing changed" checks.
pub type Snapshot = BTreeMap<String, (String, Vec<Record>)>;

/// Every table of `db`: its definition and its rows, read by forced scans.
pub fn snapshot(db: &Db) -> Snapshot {
    db.tables()
        .into_iter()
        .map(|def| {
            let rows = db
                .query(&def.name, &Query::default().hint(strata::Hint::Scan))
                .expect("scan")
                .collect::<Result<Vec<_>, _>>()
                .expect("rows");
            (def.name.clone(), (format!("{def:?}"), rows))
        })
        .collect()
}

/// Two tables: `t` keyed by `id` with 40 rows and an index on `g`, and `c` with a composite
/// key and 5 rows.
pub fn fill_two_tables(db: &Db) {
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("t");
    db.create_index("t", "by_g", ["g"], Projection::KeysOnly)
        .expect("index");
    db.create_table("c", ["a", "b"], strata::TableOptions::default())
        .expect("c");
    let mut batch = TableBatch::new();
    for id in 0..40i64 {
        batch.insert(record! { "id" => id, "g" => id % 4, "name" => format!("n{id}") });
    }
    db.write("t", batch, WriteOptions::synced()).expect("rows");
    for a in 0..5i64 {
        db.insert("c", record! { "a" => a, "b" => "x", "v" => a * 10 })
            .expect("c rows");
    }
}

/// Each query's rows from `table`, sorted by the field `id` (a query without `ORDER BY` may
/// answer in any order, and the plan may change with the statistics).
pub fn answers_by_id(db: &Db, table: &str, queries: &[Query]) -> Vec<Vec<Record>> {
    queries
        .iter()
        .map(|q| {
            let mut rows = db
                .query(table, q)
                .expect("query")
                .collect::<Result<Vec<_>, _>>()
                .expect("rows");
            rows.sort_by(|a, b| a.value("id").cmp(b.value("id")));
            rows
        })
        .collect()
}

/// A table `name` of `rows` rows (ids from 0) whose fields vary, so its rows have several
/// layouts — text, numbers, bytes, booleans and NULLs — indexed by `town` (`rows` spread over
/// `towns`, keys only, so reads through it fetch their rows) and, asynchronously, by `band`
/// (forty rows a band); flushed part way, so its rows are on disk and in the memtable both.
pub fn varied_table(db: &Db, name: &str, options: TableOptions, rows: i64, towns: i64) {
    db.create_table(name, ["id"], options).unwrap();
    db.create_index(name, "by_town", ["town"], Projection::KeysOnly)
        .unwrap();
    db.create_index(name, "by_band", ["band"], IndexOptions::local_async())
        .unwrap();
    for id in 0..rows {
        let mut r = record! {
            "id" => id,
            "town" => format!("town{}", id % towns),
            "band" => id / 40,
        };
        if id % 3 == 0 {
            r.set("nick", "n".repeat(id as usize % 40));
        }
        if id % 4 == 0 {
            r.set("score", id as f64 / 4.0);
        }
        if id % 7 == 0 {
            r.set("blob", Value::Bytes(vec![id as u8; 3]));
        }
        if id % 11 == 0 {
            r.set("nick", Value::Null);
        }
        if id % 13 == 0 {
            r.set("flag", id % 2 == 0);
        }
        db.insert(name, r).unwrap();
        if id == rows * 5 / 8 {
            db.flush().unwrap();
        }
    }
    db.wait_for_indexes().unwrap();
}
