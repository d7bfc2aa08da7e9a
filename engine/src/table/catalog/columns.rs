//! Declared columns: a table may name its fields and their types (`CREATE TABLE` in SQL,
//! `strata import`, [`crate::TableOptions::columns`]). A table that declares them is held to
//! them on every write, whatever API wrote it: each field of a row is a declared column, its
//! value is of the column's type or NULL (an integer fits a `Float` column), and a `not_null`
//! column or a primary-key field has a value. A table that declares none takes any fields.

use serde::{Deserialize, Serialize};
use strata_planner::Value;

use crate::error::{Error, Result};
use crate::table::catalog::validate_field;
use crate::table::codec::record::Record;

/// The most columns a table may declare.
pub const MAX_COLUMNS: usize = 1_000;

/// A declared column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// 64-bit integers (`BIGINT`).
    Int,
    /// 64-bit floats (`DOUBLE`); integers fit and are kept as integers.
    Float,
    /// UTF-8 text (`VARCHAR`).
    Text,
    /// Booleans.
    Bool,
    /// Byte strings (`BYTEA`).
    Bytes,
}

impl ColumnType {
    /// Whether `v` fits a column of this type (NULL fits any).
    pub fn admits(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (_, Value::Null)
                | (ColumnType::Int, Value::Int(_))
                | (ColumnType::Float, Value::Float(_) | Value::Int(_))
                | (ColumnType::Text, Value::Str(_))
                | (ColumnType::Bool, Value::Bool(_))
                | (ColumnType::Bytes, Value::Bytes(_))
        )
    }

    /// Its SQL name.
    pub fn sql_name(self) -> &'static str {
        match self {
            ColumnType::Int => "BIGINT",
            ColumnType::Float => "DOUBLE",
            ColumnType::Text => "VARCHAR",
            ColumnType::Bool => "BOOLEAN",
            ColumnType::Bytes => "BYTEA",
        }
    }
}

impl std::fmt::Display for ColumnType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.sql_name())
    }
}

/// One declared column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// The field's name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: ColumnType,
    /// Whether every row must have a value (primary-key fields always must).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_null: bool,
}

impl ColumnDef {
    /// A nullable column.
    pub fn new(name: &str, kind: ColumnType) -> ColumnDef {
        ColumnDef {
            name: name.to_owned(),
            kind,
            not_null: false,
        }
    }

    /// This column, `NOT NULL`.
    pub fn not_null(mut self) -> ColumnDef {
        self.not_null = true;
        self
    }
}

/// Checks a table's declared columns: valid, distinct names, at most [`MAX_COLUMNS`], and
/// every primary-key field among them (when any is declared).
pub fn validate_columns(columns: &[ColumnDef], primary_key: &[String]) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    if columns.len() > MAX_COLUMNS {
        return Err(Error::InvalidArgument(format!(
            "a table declares at most {MAX_COLUMNS} columns, got {}",
            columns.len()
        )));
    }
    for (i, c) in columns.iter().enumerate() {
        validate_field(&c.name)?;
        if columns[..i].iter().any(|d| d.name == c.name) {
            return Err(Error::InvalidArgument(format!(
                "column {:?} is declared twice",
                c.name
            )));
        }
    }
    for k in primary_key {
        if !columns.iter().any(|c| &c.name == k) {
            return Err(Error::InvalidArgument(format!(
                "primary-key field {k:?} is not among the declared columns"
            )));
        }
    }
    Ok(())
}

/// Checks a row of `table` against its declared columns (nothing when it declares none).
pub(crate) fn check_row(table: &str, columns: &[ColumnDef], row: &Record) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    for (name, value) in row.iter() {
        let Some(column) = columns.iter().find(|c| c.name == name) else {
            return Err(Error::InvalidArgument(format!(
                "table {table:?} has no column {name:?} (its columns are declared)"
            )));
        };
        if !column.kind.admits(value) {
            return Err(Error::InvalidArgument(format!(
                "table {table:?}, column {name:?} is {}: the value {} does not fit",
                column.kind,
                value.sql_literal()
            )));
        }
    }
    for column in columns.iter().filter(|c| c.not_null) {
        let present = row
            .iter()
            .any(|(name, v)| name == column.name && !v.is_null());
        if !present {
            return Err(Error::InvalidArgument(format!(
                "table {table:?}, column {:?} is NOT NULL: a row has no value for it",
                column.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Vec<ColumnDef> {
        vec![
            ColumnDef::new("id", ColumnType::Int).not_null(),
            ColumnDef::new("price", ColumnType::Float),
            ColumnDef::new("name", ColumnType::Text),
        ]
    }

    fn check(fields: &[(&str, Value)]) -> Result<()> {
        let mut row = Record::new();
        for (name, value) in fields {
            row.set(*name, value.clone());
        }
        check_row("t", &columns(), &row)
    }

    #[test]
    fn a_row_fits_its_declared_columns_or_is_refused_with_the_column_named() {
        check(&[("id", Value::Int(1)), ("price", Value::Int(3))]).unwrap();
        check(&[("id", Value::Int(1)), ("name", Value::Null)]).unwrap();
        let e = check(&[("id", Value::Int(1)), ("price", Value::from("dear"))]).unwrap_err();
        assert!(e.to_string().contains("\"price\" is DOUBLE"), "{e}");
        let e = check(&[("id", Value::Int(1)), ("colour", Value::Int(2))]).unwrap_err();
        assert!(e.to_string().contains("no column \"colour\""), "{e}");
        let e = check(&[("price", Value::Float(1.5))]).unwrap_err();
        assert!(e.to_string().contains("NOT NULL"), "{e}");
        // A table that declares nothing takes anything.
        let mut row = Record::new();
        row.set("x", Value::Int(1));
        check_row("t", &[], &row).unwrap();
    }

    #[test]
    fn declarations_are_checked() {
        validate_columns(&columns(), &["id".to_owned()]).unwrap();
        assert!(validate_columns(&columns(), &["sku".to_owned()]).is_err());
        let mut twice = columns();
        twice.push(ColumnDef::new("id", ColumnType::Text));
        assert!(validate_columns(&twice, &["id".to_owned()]).is_err());
        assert!(validate_columns(&[], &["id".to_owned()]).is_ok());
    }
}
