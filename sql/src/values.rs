//! Arrow values as Strata values, for the rows `INSERT` and `UPDATE` write, and Strata values
//! as DataFusion scalars, for a prepared statement's parameters.
//!
//! Strata stores integers, floats, text, booleans and bytes. Every Arrow integer type is an
//! integer (an unsigned one above `i64::MAX` is an error), every float and decimal a float,
//! dates and timestamps their ISO text (which Strata's planner reads as dates), and NULL no
//! field at all. Any other type (lists, structs, intervals) is an error naming the column.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::{DataFusionError, Result};
use datafusion::scalar::ScalarValue;
use strata::{Record, Value};

/// The value at `row` of `array`, the column `name`.
pub fn value_at(array: &ArrayRef, row: usize, name: &str) -> Result<Value> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    let v = match array.data_type() {
        DataType::Null => Value::Null,
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        DataType::Int8 => Value::Int(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => Value::Int(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => Value::Int(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => Value::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::Int(array.as_primitive::<UInt8Type>().value(row).into()),
        DataType::UInt16 => Value::Int(array.as_primitive::<UInt16Type>().value(row).into()),
        DataType::UInt32 => Value::Int(array.as_primitive::<UInt32Type>().value(row).into()),
        DataType::UInt64 => {
            let v = array.as_primitive::<UInt64Type>().value(row);
            Value::Int(i64::try_from(v).map_err(|_| {
                DataFusionError::Execution(format!(
                    "column {name}: {v} is larger than the largest integer Strata stores"
                ))
            })?)
        }
        DataType::Float16 => Value::Float(array.as_primitive::<Float16Type>().value(row).into()),
        DataType::Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row).into()),
        DataType::Float64 => Value::Float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 => Value::Str(array.as_string::<i32>().value(row).to_owned()),
        DataType::LargeUtf8 => Value::Str(array.as_string::<i64>().value(row).to_owned()),
        DataType::Utf8View => Value::Str(array.as_string_view().value(row).to_owned()),
        DataType::Binary => Value::Bytes(array.as_binary::<i32>().value(row).to_vec()),
        DataType::LargeBinary => Value::Bytes(array.as_binary::<i64>().value(row).to_vec()),
        DataType::BinaryView => Value::Bytes(array.as_binary_view().value(row).to_vec()),
        DataType::Decimal128(..) | DataType::Decimal256(..) => {
            let text = formatted(array, row)?;
            Value::Float(text.parse().map_err(|_| {
                DataFusionError::Execution(format!("column {name}: {text} is not a number"))
            })?)
        }
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) => {
            Value::Str(formatted(array, row)?)
        }
        other => {
            return Err(DataFusionError::Execution(format!(
                "column {name}: Strata cannot store values of type {other} (it stores integers, \
                 floats, text, booleans and bytes)"
            )));
        }
    };
    Ok(v)
}

fn formatted(array: &ArrayRef, row: usize) -> Result<String> {
    let options = FormatOptions::default();
    let formatter = ArrayFormatter::try_new(array.as_ref(), &options)?;
    Ok(formatter.value(row).to_string())
}

/// Row `row` of `batch` as a record, its fields named `names` (one per column, in order);
/// NULLs are left out.
pub fn record_at(batch: &RecordBatch, row: usize, names: &[String]) -> Result<Record> {
    let mut record = Record::new();
    for (column, name) in batch.columns().iter().zip(names) {
        let v = value_at(column, row, name)?;
        if !v.is_null() {
            record.set(name.as_str(), v);
        }
    }
    Ok(record)
}

/// `v` as a DataFusion scalar.
pub fn scalar_of(v: &Value) -> ScalarValue {
    match v {
        Value::Null => ScalarValue::Null,
        Value::Bool(b) => ScalarValue::Boolean(Some(*b)),
        Value::Int(i) => ScalarValue::Int64(Some(*i)),
        Value::Float(f) => ScalarValue::Float64(Some(*f)),
        Value::Str(s) => ScalarValue::Utf8(Some(s.clone())),
        Value::Bytes(b) => ScalarValue::Binary(Some(b.clone())),
    }
}

/// The value of placeholder `id` (`$1` …).
pub(crate) fn param<'p>(id: &str, params: &'p [Value]) -> crate::Result<&'p Value> {
    id.strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| params.get(i))
        .ok_or_else(|| crate::Error::Invalid(format!("no value for the parameter {id}")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{
        Date32Array, Decimal128Array, Float32Array, Int32Array, ListArray, StringArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    #[test]
    fn arrow_values_become_strata_values_or_a_clear_error() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(7), None]));
        assert_eq!(value_at(&ints, 0, "a").unwrap(), Value::Int(7));
        assert_eq!(value_at(&ints, 1, "a").unwrap(), Value::Null);
        let floats: ArrayRef = Arc::new(Float32Array::from(vec![2.5]));
        assert_eq!(value_at(&floats, 0, "a").unwrap(), Value::Float(2.5));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["Ely"]));
        assert_eq!(value_at(&text, 0, "a").unwrap(), Value::from("Ely"));
        let date: ArrayRef = Arc::new(Date32Array::from(vec![19_000]));
        assert_eq!(value_at(&date, 0, "a").unwrap(), Value::from("2022-01-08"));
        let decimal: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1234])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        assert_eq!(value_at(&decimal, 0, "a").unwrap(), Value::Float(12.34));
        let huge: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX]));
        let e = value_at(&huge, 0, "n").unwrap_err();
        assert!(e.to_string().contains("column n"), "{e}");
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
        ]));
        let e = value_at(&list, 0, "tags").unwrap_err();
        assert!(e.to_string().contains("cannot store"), "{e}");
    }
}
