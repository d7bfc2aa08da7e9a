//! What a one-row result costs as Arrow: a point query's row of the comparison's `customers`
//! (14 columns: 5 integers, 1 float, 8 texts, 2 of them NULL) made into a record batch and
//! dropped, by the `Batcher` every Strata scan and the fast path use, and by Arrow's plainest
//! constructors (one array per column from a vector) for comparison. The difference between a
//! SQL point query and `Db::query` cannot fall below the cheaper of the two.
//!
//! `cargo bench --manifest-path sql/Cargo.toml --bench batches`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use strata::{Record, Value};
use strata_sql::schema::{Batcher, Column, ColumnType, TableSchema, arrow_schema};

/// The customers' columns, in name order, with one row's values.
fn customer() -> (Vec<Column>, Record) {
    let fields: [(&str, ColumnType, Value); 14] = [
        ("account_balance", ColumnType::Float, Value::Float(1234.56)),
        ("account_status", ColumnType::Text, Value::from("active")),
        ("age_years", ColumnType::Int, Value::Int(43)),
        ("credit_score", ColumnType::Int, Value::Int(71234)),
        ("customer_id", ColumnType::Int, Value::Int(501234)),
        (
            "email_address",
            ColumnType::Text,
            Value::from("grace.hopper501234@example.com"),
        ),
        ("first_name", ColumnType::Text, Value::from("Grace")),
        ("group_id", ColumnType::Int, Value::Int(16707)),
        ("home_town", ColumnType::Text, Value::from("Town0042")),
        ("last_name", ColumnType::Text, Value::from("Hopper")),
        ("notes", ColumnType::Text, Value::Null),
        (
            "phone_number",
            ColumnType::Text,
            Value::from("+44 7700 912345"),
        ),
        ("referrer_id", ColumnType::Int, Value::Null),
        ("signup_date", ColumnType::Text, Value::from("2019-06-14")),
    ];
    let mut record = Record::new();
    let mut columns = Vec::new();
    for (name, kind, value) in fields {
        columns.push(Column {
            name: name.into(),
            kind,
            mixed: false,
        });
        record.set(name, value);
    }
    (columns, record)
}

fn batches(c: &mut Criterion) {
    let (columns, record) = customer();
    let table = Arc::new(TableSchema {
        table: "customers".into(),
        primary_key: vec!["customer_id".into()],
        columns: columns.clone(),
    });
    let schema = arrow_schema(&columns);
    let mut batcher =
        Batcher::with_capacity(&table, Arc::from(columns.clone()), Arc::clone(&schema), 1);
    c.bench_function("one_row_batch_batcher", |b| {
        b.iter(|| {
            batcher.add(black_box(&record)).expect("add");
            drop(black_box(batcher.finish().expect("finish")));
        })
    });
    c.bench_function("one_row_batch_arrow_arrays", |b| {
        b.iter(|| {
            let record = black_box(&record);
            let arrays: Vec<ArrayRef> = columns
                .iter()
                .map(|column| {
                    let v = record.value(&column.name);
                    match column.kind {
                        ColumnType::Int => Arc::new(Int64Array::from(vec![v.as_i64()])) as ArrayRef,
                        ColumnType::Float => Arc::new(Float64Array::from(vec![v.as_f64()])),
                        _ => Arc::new(StringArray::from(vec![v.as_str()])),
                    }
                })
                .collect();
            let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).expect("batch");
            drop(black_box(batch));
        })
    });
}

criterion_group!(benches, batches);
criterion_main!(benches);
