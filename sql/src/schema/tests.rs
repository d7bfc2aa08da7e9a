//! The batcher's tests: rows of many layouts, NULLs, misfits, full batches, and batches
//! made unchecked against the same made checked.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use strata::record;

use super::*;

fn column(name: &str, kind: ColumnType) -> Column {
    Column {
        name: name.into(),
        kind,
        mixed: false,
    }
}

fn batcher() -> Batcher {
    let columns = vec![
        column("id", ColumnType::Int),
        column("name", ColumnType::Text),
        column("score", ColumnType::Float),
        column("n", ColumnType::Int),
        column("ok", ColumnType::Bool),
        column("raw", ColumnType::Bytes),
        column("town", ColumnType::Text),
    ];
    let table = Arc::new(TableSchema {
        table: "t".into(),
        primary_key: vec!["id".into()],
        columns: columns.clone(),
    });
    Batcher::new(&table, columns.into())
}

/// Rows `ids`, each with some NULLs, as `batcher` should see them.
fn row(id: i64) -> Record {
    let mut r = record! { "id" => id, "name" => format!("name-{id}"), "score" => id as f64 / 2.0 };
    if id % 2 == 0 {
        r.set("n", id * 10);
        r.set("raw", vec![id as u8; id as usize % 5]);
    }
    if id % 3 != 0 {
        r.set("ok", id % 3 == 1);
        r.set("town", "é".repeat(id as usize % 4));
    }
    r
}

fn check(batch: &RecordBatch, ids: &[i64]) {
    assert_eq!(batch.num_rows(), ids.len());
    let c = |name: &str| batch.column_by_name(name).unwrap();
    for (i, &id) in ids.iter().enumerate() {
        let want = row(id);
        assert_eq!(c("id").as_primitive::<Int64Type>().value(i), id);
        assert_eq!(c("name").as_string::<i32>().value(i), format!("name-{id}"));
        let score = c("score").as_primitive::<datafusion::arrow::datatypes::Float64Type>();
        assert_eq!(score.value(i), id as f64 / 2.0);
        let n = c("n").as_primitive::<Int64Type>();
        let ok = c("ok").as_boolean();
        let raw = c("raw").as_binary::<i32>();
        let town = c("town").as_string::<i32>();
        match want.get("n") {
            Some(Value::Int(x)) => assert_eq!(n.value(i), *x),
            _ => assert!(n.is_null(i), "n of {id}"),
        }
        match want.get("raw") {
            Some(Value::Bytes(x)) => assert_eq!(raw.value(i), &x[..]),
            _ => assert!(raw.is_null(i), "raw of {id}"),
        }
        match want.get("ok") {
            Some(Value::Bool(x)) => assert_eq!(ok.value(i), *x),
            _ => assert!(ok.is_null(i), "ok of {id}"),
        }
        match want.get("town") {
            Some(Value::Str(x)) => assert_eq!(town.value(i), x),
            _ => assert!(town.is_null(i), "town of {id}"),
        }
    }
}

#[test]
fn batches_hold_each_columns_values_and_nulls_batch_after_batch() {
    let mut batcher = batcher();
    for ids in [vec![1], (2..40).collect::<Vec<_>>(), vec![], vec![3, 6, 9]] {
        for &id in &ids {
            batcher.add(&row(id)).unwrap();
        }
        assert_eq!(batcher.rows(), ids.len());
        check(&batcher.finish().unwrap(), &ids);
        assert_eq!(batcher.rows(), 0);
    }
}

/// Rows of more field layouts than a batcher remembers (here 20: a field no column reads
/// makes five of each of `row`'s four), met in turn and out of turn.
#[test]
fn rows_of_more_layouts_than_remembered_fill_their_columns() {
    let mut batcher = batcher();
    let ids: Vec<i64> = (1..70).chain([5, 5, 12, 1, 60, 2]).collect();
    for &id in &ids {
        let mut r = row(id);
        r.set(format!("unread{}", id % 5), id);
        batcher.add(&r).unwrap();
    }
    check(&batcher.finish().unwrap(), &ids);
}

#[test]
fn a_row_that_does_not_fit_leaves_the_rows_before_and_after_it_whole() {
    let mut batcher = batcher();
    batcher.add(&row(1)).unwrap();
    batcher.add(&row(2)).unwrap();
    // Its text, float and (NULL) integer columns are staged before `ok` fails.
    let mut bad = row(4);
    bad.set("ok", "yes");
    let error = batcher.add(&bad).unwrap_err().to_string();
    assert!(error.contains("table t, key (4), field ok"), "{error}");
    batcher.add(&row(5)).unwrap();
    assert_eq!(batcher.rows(), 3);
    check(&batcher.finish().unwrap(), &[1, 2, 5]);
}

/// A row taken back gives back what it staged: its texts' bytes count no more towards a full
/// batch, its NULLs are no batch's, and the rows after it fill the columns it had reached.
#[test]
fn a_row_that_does_not_fit_gives_back_its_bytes_and_nulls() {
    let mut batcher = batcher();
    batcher.add(&row(2)).unwrap();
    // `n` (a NULL) and `name` (a text) are staged before `ok` fails.
    let mut bad = row(3);
    bad.set("n", Value::Null);
    bad.set("name", "x".repeat(BATCH_BYTES));
    bad.set("ok", 7);
    assert!(batcher.add(&bad).is_err());
    assert!(!batcher.full(), "the misfit's bytes still count");
    batcher.add(&row(4)).unwrap();
    let batch = batcher.finish().unwrap();
    check(&batch, &[2, 4]);
    assert_eq!(batch.column_by_name("n").unwrap().null_count(), 0);
}

/// Several columns of each kind (each a slot of its kind's section), integers widened in a
/// float column, NULLs and missing fields, read back the same from batches made checked and
/// unchecked.
#[test]
fn several_columns_of_each_kind_hold_their_own_values() {
    let columns: Vec<Column> = vec![
        column("id", ColumnType::Int),
        column("f1", ColumnType::Float),
        column("b1", ColumnType::Bool),
        column("t1", ColumnType::Text),
        column("f2", ColumnType::Float),
        column("b2", ColumnType::Bool),
        column("t2", ColumnType::Text),
        column("i2", ColumnType::Int),
    ];
    let table = Arc::new(TableSchema {
        table: "t".into(),
        primary_key: vec!["id".into()],
        columns: columns.clone(),
    });
    let columns: Arc<[Column]> = columns.into();
    let rows: Vec<Record> = (0..70i64)
        .map(|id| {
            let mut r = record! { "id" => id, "f1" => id, "f2" => id as f64 + 0.5 };
            r.set("b1", id % 2 == 0);
            if id % 3 != 0 {
                r.set("b2", id % 5 == 0);
                r.set("t2", "ü".repeat(id as usize % 4));
            }
            r.set(
                "t1",
                if id % 7 == 0 {
                    Value::Null
                } else {
                    format!("t{id}").into()
                },
            );
            if id % 4 == 0 {
                r.set("i2", -id);
            }
            r
        })
        .collect();
    for check in [true, false] {
        let mut batcher = Batcher::new(&table, Arc::clone(&columns));
        for r in &rows {
            batcher.add(r).unwrap();
        }
        let batch = batcher.finish_checked(check).unwrap();
        for column in batch.columns() {
            column.to_data().validate_full().unwrap();
        }
        let floats = |name| {
            let c = batch.column_by_name(name).unwrap();
            c.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .clone()
        };
        let (f1, f2) = (floats("f1"), floats("f2"));
        let (b1, b2) = (
            batch.column_by_name("b1").unwrap().as_boolean().clone(),
            batch.column_by_name("b2").unwrap().as_boolean().clone(),
        );
        let t1 = batch
            .column_by_name("t1")
            .unwrap()
            .as_string::<i32>()
            .clone();
        let t2 = batch
            .column_by_name("t2")
            .unwrap()
            .as_string::<i32>()
            .clone();
        let i2 = batch
            .column_by_name("i2")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone();
        for (i, id) in (0..70i64).enumerate() {
            assert_eq!(f1.value(i), id as f64, "row {id} (check: {check})");
            assert_eq!(f2.value(i), id as f64 + 0.5, "row {id}");
            assert_eq!(b1.value(i), id % 2 == 0, "row {id}");
            assert_eq!(b2.is_null(i), id % 3 == 0, "row {id}");
            assert_eq!(t2.is_null(i), id % 3 == 0, "row {id}");
            if id % 3 != 0 {
                assert_eq!(b2.value(i), id % 5 == 0, "row {id}");
                assert_eq!(t2.value(i), "ü".repeat(id as usize % 4), "row {id}");
            }
            assert_eq!(t1.is_null(i), id % 7 == 0, "row {id}");
            if id % 7 != 0 {
                assert_eq!(t1.value(i), format!("t{id}"), "row {id}");
            }
            assert_eq!(i2.is_null(i), id % 4 != 0, "row {id}");
            if id % 4 == 0 {
                assert_eq!(i2.value(i), -id, "row {id}");
            }
        }
    }
}

#[test]
fn a_field_read_twice_fills_both_columns() {
    let columns: Arc<[Column]> = vec![
        column("name", ColumnType::Text),
        column("id", ColumnType::Int),
        column("name", ColumnType::Text),
        column("absent", ColumnType::Int),
    ]
    .into();
    let table = batcher().table;
    let schema = Arc::new(Schema::new(
        (columns.iter().zip(["a", "b", "c", "d"]))
            .map(|(c, name)| Field::new(name, data_type(c.kind), true))
            .collect::<Vec<_>>(),
    ));
    let mut batcher = Batcher::with_capacity(&table, columns, schema, 1);
    batcher.add(&row(7)).unwrap();
    let batch = batcher.finish().unwrap();
    assert_eq!(batch.column(0).as_string::<i32>().value(0), "name-7");
    assert_eq!(batch.column(1).as_primitive::<Int64Type>().value(0), 7);
    assert_eq!(batch.column(2).as_string::<i32>().value(0), "name-7");
    assert!(batch.column(3).is_null(0));
}

#[test]
fn a_layout_keeps_a_lasting_list_of_its_names_and_no_other() {
    // Rows read from a table, their layout served long enough that its list lasts.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), strata::Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    for id in 1..=100i64 {
        db.insert("t", row(id)).unwrap();
    }
    let read: Vec<Record> = (db.query("t", &Query::default()).unwrap())
        .collect::<Result<_, _>>()
        .unwrap();
    let lasting = read.last().unwrap();
    assert!(lasting.names_are_lasting());
    let mut batcher = batcher();
    // A list of its own, equal: the layout is learnt with it.
    let first = row(100);
    assert!(!first.names_are_lasting() && !first.shares_names(&lasting.field_names()));
    batcher.add(&first).unwrap();
    // The lasting list is taken up: the rows that share it are known by it alone.
    batcher.add(lasting).unwrap();
    assert!(lasting.shares_names(&batcher.layouts[0].names));
    // Another list of its own, equal, is not: the lasting one stays.
    let names = FieldNames::new(first.iter().map(|(name, _)| name)).unwrap();
    let own = Record::with_names(&names, first.values().to_vec()).unwrap();
    batcher.add(&own).unwrap();
    assert!(lasting.shares_names(&batcher.layouts[0].names));
    assert!(!own.shares_names(&batcher.layouts[0].names));
    check(&batcher.finish().unwrap(), &[100, 100, 100]);
}

#[test]
fn rows_lent_where_they_lie_make_the_batches_their_records_make() {
    // Rows of several layouts fetched through an index (lent from their stored bytes), and a
    // row whose stored value does not fit its column.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), strata::Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_k", ["k"], strata::Projection::KeysOnly)
        .unwrap();
    for id in 1..=3000i64 {
        let mut r = row(id);
        r.set("k", id % 100);
        db.insert("t", r).unwrap();
    }
    db.flush().unwrap();
    let mut query = Query::default().filter(strata::Predicate::eq("k", 7));
    query.projection = Some(batcher().columns.iter().map(|c| c.name.clone()).collect());
    let ids: Vec<i64> = (1..=3000).filter(|id| id % 100 == 7).collect();
    let plan = db.explain("t", &query).unwrap();
    assert!(
        matches!(plan.chosen.access, strata::Access::Index { .. }),
        "{plan}"
    );
    let (mut lent, mut built) = (batcher(), batcher());
    let mut rows = db.query("t", &query).unwrap();
    while let Some(r) = rows.next_ref().unwrap() {
        assert!(r.as_record().is_none(), "lent where it lies");
        lent.add_ref(&r).unwrap();
        built.add(&r.to_record().unwrap()).unwrap();
    }
    let (lent, built) = (lent.finish().unwrap(), built.finish().unwrap());
    check(&lent, &ids);
    assert_eq!(lent, built);
    // A text where the column holds numbers (the last row in the index's order): an error
    // naming the table, key and field, and the rows before it kept.
    db.insert("t", record! { "id" => 5000, "k" => 7, "n" => "many" })
        .unwrap();
    let mut batcher = batcher();
    let mut rows = db.query("t", &query).unwrap();
    let mut misfits = Vec::new();
    while let Some(r) = rows.next_ref().unwrap() {
        if let Err(e) = batcher.add_ref(&r) {
            misfits.push(e.to_string());
        }
    }
    assert_eq!(misfits.len(), 1, "{misfits:?}");
    assert!(
        misfits[0].contains("table t, key (5000), field n"),
        "{misfits:?}"
    );
    check(&batcher.finish().unwrap(), &ids);
}

#[test]
fn a_batch_made_unchecked_is_the_batch_made_checked_and_valid_in_full() {
    let mut columns = batcher().columns.to_vec();
    // A lenient column of mixed kinds, its values written as text.
    columns.push(Column {
        name: "mixed".into(),
        kind: ColumnType::Text,
        mixed: true,
    });
    let columns: Arc<[Column]> = columns.into();
    let table = batcher().table;
    let ids: Vec<i64> = (0..40).collect();
    let batch = |check: bool, rows: &[i64]| {
        let mut batcher = Batcher::new(&table, Arc::clone(&columns));
        for &id in rows {
            let mut r = row(id);
            match id % 4 {
                0 => r.set("mixed", id),
                1 => r.set("mixed", format!("ü{id}")),
                2 => r.set("mixed", ""),
                _ => None,
            };
            if id % 5 == 0 {
                r.set("name", "");
            }
            batcher.add(&r).unwrap();
        }
        batcher.finish_checked(check).unwrap()
    };
    for rows in [&ids[..], &ids[..1], &ids[3..4], &[]] {
        let (checked, unchecked) = (batch(true, rows), batch(false, rows));
        assert_eq!(unchecked, checked, "{} rows", rows.len());
        for (column, field) in unchecked.columns().iter().zip(unchecked.schema().fields()) {
            column.to_data().validate_full().unwrap();
            assert_eq!(column.data_type(), field.data_type());
            assert_eq!(column.len(), rows.len());
        }
        let again = RecordBatch::try_new(unchecked.schema(), unchecked.columns().to_vec());
        assert_eq!(again.unwrap(), checked);
    }
}

#[test]
fn only_a_schema_of_nullable_fields_of_the_columns_types_is_taken_as_fitting() {
    let columns: Arc<[Column]> = vec![
        column("id", ColumnType::Int),
        column("name", ColumnType::Text),
    ]
    .into();
    let table = batcher().table;
    let fits = |fields: Vec<Field>| {
        let schema = Arc::new(Schema::new(fields));
        Batcher::with_capacity(&table, Arc::clone(&columns), schema, 1).schema_fits
    };
    assert!(fits(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]));
    assert!(!fits(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Utf8, true),
    ]));
    assert!(!fits(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::LargeUtf8, true),
    ]));
    assert!(!fits(vec![Field::new("a", DataType::Int64, true)]));
    // A batch whose schema does not fit is checked: a NULL in a non-nullable field is an
    // error, not a batch that lies about its schema.
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, false),
    ]));
    let mut strict = Batcher::with_capacity(&table, columns, schema, 1);
    strict.add(&record! { "id" => 1 }).unwrap();
    assert!(strict.finish().is_err());
}

#[test]
fn a_batch_is_full_at_its_rows_or_its_bytes_of_text() {
    let mut batcher = batcher();
    let big = "x".repeat(1 << 20);
    let mut added = 0;
    while !batcher.full() {
        let mut r = row(1);
        r.set("name", big.as_str());
        batcher.add(&r).unwrap();
        added += 1;
    }
    assert_eq!(added, BATCH_BYTES / (1 << 20));
    let batch = batcher.finish().unwrap();
    assert_eq!(batch.num_rows(), added);
    assert!(!batcher.full());
    for _ in 0..BATCH_ROWS {
        batcher.add(&row(1)).unwrap();
    }
    assert!(batcher.full());
}

/// Batches whose large texts move from column to column leave the batcher with room for
/// about two batches' worth, not a batch's worth in every column.
#[test]
fn text_columns_keep_room_for_two_batches_at_most() {
    let columns: Vec<Column> = ["id", "a", "b", "c"]
        .iter()
        .map(|name| {
            column(
                name,
                if *name == "id" {
                    ColumnType::Int
                } else {
                    ColumnType::Text
                },
            )
        })
        .collect();
    let table = Arc::new(TableSchema {
        table: "t".into(),
        primary_key: vec!["id".into()],
        columns: columns.clone(),
    });
    let mut batcher = Batcher::new(&table, columns.into());
    let big = "x".repeat(1 << 20);
    for name in ["a", "b", "c", "a"] {
        while !batcher.full() {
            let mut r = record! { "id" => 1 };
            r.set(name, big.as_str());
            batcher.add(&r).unwrap();
        }
        batcher.finish().unwrap();
        let kept = batcher.capacity_bytes();
        assert!(
            kept <= 2 * BATCH_BYTES + (4 << 20),
            "{kept} bytes kept after {name}"
        );
    }
}

#[test]
fn a_batch_of_one_text_column_holds_its_texts_nulls_and_no_misfits_bytes() {
    let columns: Vec<Column> = vec![
        column("id", ColumnType::Int),
        column("name", ColumnType::Text),
        column("tally", ColumnType::Int),
    ];
    let table = Arc::new(TableSchema {
        table: "t".into(),
        primary_key: vec!["id".into()],
        columns: columns.clone(),
    });
    let columns: Arc<[Column]> = columns.into();
    let name = |id: i64| (id % 3 != 0).then(|| "é".repeat(id as usize % 5) + &id.to_string());
    for check in [true, false] {
        let mut batcher = Batcher::new(&table, Arc::clone(&columns));
        for id in 0..40i64 {
            let mut r = record! { "id" => id };
            if let Some(n) = name(id) {
                r.set("name", n);
            }
            batcher.add(&r).unwrap();
            // A row whose text is staged before the value after it (in name order) does
            // not fit: its bytes are rewound with it.
            let misfit = record! { "id" => -id, "name" => "dropped", "tally" => "not a number" };
            assert!(batcher.add(&misfit).is_err());
        }
        let batch = batcher.finish_checked(check).unwrap();
        assert_eq!(batch.num_rows(), 40);
        batch.column(1).to_data().validate_full().unwrap();
        let texts = batch.column(1).as_string::<i32>();
        for id in 0..40usize {
            match name(id as i64) {
                Some(n) => assert_eq!(texts.value(id), n, "row {id}"),
                None => assert!(texts.is_null(id), "row {id}"),
            }
        }
    }
}

/// `fits`, which names why a value was not staged, says what `stage` does: every kind of
/// value against every column type, lenient or not, with room for its bytes.
#[test]
fn a_value_fits_a_column_exactly_when_staging_takes_it() {
    let values = [
        ValueRef::Null,
        ValueRef::Bool(true),
        ValueRef::Int(-7),
        ValueRef::Float(2.5),
        ValueRef::Str("text"),
        ValueRef::Bytes(b"\x00\xff"),
    ];
    let kinds = [
        ColumnType::Int,
        ColumnType::Float,
        ColumnType::Bool,
        ColumnType::Text,
        ColumnType::Bytes,
    ];
    for kind in kinds {
        for mixed in [false, true] {
            let c = Column {
                name: "c".into(),
                kind,
                mixed,
            };
            for v in values {
                let mut stage = Stage::new(kind, 1);
                assert_eq!(
                    stage.stage(0, &c, v, &mut 0),
                    fits(&c, v),
                    "{kind:?} (mixed: {mixed}) and {v:?}"
                );
            }
        }
    }
}
