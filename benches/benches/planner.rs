//! Planning time: a table with 10 indexes and a 5-predicate query (target: at most 20 µs).

use criterion::{Criterion, criterion_group, criterion_main};
use strata_planner::*;

fn table_and_stats() -> (TableInfo, TableStats) {
    let fields = ["f0", "f1", "f2", "f3", "f4", "f5"];
    let mut indexes = Vec::new();
    for i in 0..10 {
        let first = fields[i % fields.len()];
        let second = fields[(i + 1) % fields.len()];
        let projection = match i % 3 {
            0 => Projection::KeysOnly,
            1 => Projection::Include(vec![fields[(i + 2) % fields.len()].into()]),
            _ => Projection::All,
        };
        indexes.push(IndexInfo::new(
            &format!("index{i}"),
            &[first, second],
            projection,
        ));
    }
    let table = TableInfo::new("t", &["id"], indexes);
    let mut builder = TableStatsBuilder::new(
        &fields.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        &table
            .indexes
            .iter()
            .map(|i| i.fields.clone())
            .collect::<Vec<_>>(),
    );
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    for _ in 0..20_000 {
        let values: Vec<Value> = (0..fields.len() as u64)
            .map(|i| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                // Skewed: a quarter of the rows share value 0.
                let v = if rng.is_multiple_of(4) {
                    0
                } else {
                    (rng >> 8) % (10 + 90 * i)
                };
                Value::Int(v as i64)
            })
            .collect();
        builder.add_row(
            |f| fields.iter().position(|x| *x == f).map(|i| &values[i]),
            100,
        );
    }
    (table, builder.finish())
}

fn planning(c: &mut Criterion) {
    let (table, stats) = table_and_stats();
    let query = Query {
        predicates: vec![
            Predicate::eq("f0", 3i64),
            Predicate::in_list("f1", [Value::Int(1), Value::Int(2), Value::Int(7)]),
            Predicate::new("f2", Op::Between(Value::Int(10), Value::Int(40))),
            Predicate::new("f3", Op::Gt(Value::Int(5))),
            Predicate::eq("f4", 0i64),
        ],
        projection: Some(vec!["id".into(), "f0".into()]),
        limit: Some(100),
        ..Query::default()
    };
    let model = CostModel::default();
    c.bench_function("planner/choose_10_indexes_5_predicates", |b| {
        b.iter(|| choose(&query, &table, &stats, &model).expect("plans"))
    });
    // An OR of three members each binding an index, with a LIKE and a NOT IN beside it, in
    // an ORDER BY … LIMIT: the union planned member by member against every index.
    let or = Query::default()
        .filter(Predicate::not_in("f5", [Value::Int(1), Value::Int(2)]))
        .filter(Predicate::like("f6", "a%"))
        .filter_where(Condition::any([
            Predicate::eq("f0", 3i64),
            Predicate::between("f1", 10i64, 20i64),
            Predicate::eq("f2", 0i64),
        ]))
        .order_by(["f3"], true)
        .limit(10);
    c.bench_function("planner/choose_10_indexes_or_of_3", |b| {
        b.iter(|| choose(&or, &table, &stats, &model).expect("plans"))
    });
}

criterion_group!(benches, planning);
criterion_main!(benches);
