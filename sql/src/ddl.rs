//! SQL DDL on Strata's catalog: `CREATE TABLE`, `CREATE [UNIQUE] INDEX`, `DROP TABLE`,
//! `DROP INDEX`, `ANALYZE`.
//!
//! - `CREATE TABLE t (id BIGINT, name VARCHAR NOT NULL, PRIMARY KEY (id))` declares the
//!   table's columns ([`strata::ColumnDef`]): Strata holds every later write to them. A table
//!   needs a primary key (a column's `PRIMARY KEY` or the table's); a column's `UNIQUE` (or a
//!   table's `UNIQUE (…)`) becomes a unique index `<table>_<fields>_key`. Types: integer
//!   types are `BIGINT`; `REAL`, `FLOAT`, `DOUBLE`, `DECIMAL` and `NUMERIC` are `DOUBLE`;
//!   character types, `DATE` and `TIMESTAMP` (kept as ISO text) are `VARCHAR`; `BOOLEAN`;
//!   `BYTEA`, `BLOB` and binary types are `BYTEA`.
//! - `CREATE [UNIQUE] INDEX name ON t (a, b) [INCLUDE (c)]`: a local, sync index (unique
//!   when asked); without a name, `<table>_<fields>_idx`.
//! - `DROP INDEX name` finds the table that has an index `name` (`DROP INDEX t.name` names
//!   it when several do).
//! - `ANALYZE t`, or `ANALYZE` alone for every table.
//!
//! Unquoted names are lower-cased, as DataFusion does; quoted ones are kept.

use datafusion::sql::sqlparser::ast::{
    ColumnOption, CreateIndex, CreateTable, Expr, Ident, ObjectName, ObjectNamePart, ObjectType,
    Statement, TableConstraint,
};
use strata::{ColumnDef, ColumnType, Db, IndexOptions, Projection, TableOptions};

use crate::{Error, Result};

/// Runs one DDL statement.
pub fn run(db: &Db, statement: &Statement) -> Result<()> {
    match statement {
        Statement::CreateTable(create) => create_table(db, create),
        Statement::CreateIndex(create) => create_index(db, create),
        Statement::Drop {
            object_type,
            if_exists,
            names,
            table,
            ..
        } => {
            for name in names {
                match object_type {
                    ObjectType::Table => drop_table(db, name, *if_exists)?,
                    ObjectType::Index => drop_index(db, name, table.as_ref(), *if_exists)?,
                    other => return Err(Error::Unsupported(format!("DROP {other}"))),
                }
            }
            Ok(())
        }
        Statement::Analyze(analyze) => {
            let tables = match &analyze.table_name {
                Some(name) => vec![object_name(name)?],
                None => db.tables().into_iter().map(|t| t.name).collect(),
            };
            for table in tables {
                db.analyze(&table)?;
            }
            Ok(())
        }
        other => Err(Error::Unsupported(format!("the statement {other}"))),
    }
}

/// An identifier as DataFusion resolves it: lower-cased unless quoted.
pub fn ident(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// The last part of a (possibly qualified) name: `strata.public.t` is `t`.
pub fn object_name(name: &ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => Ok(ident(i)),
        _ => Err(Error::Unsupported(format!("the name {name}"))),
    }
}

/// A column of an index or key list: a plain column name.
fn column_of(expr: &Expr) -> Result<String> {
    match expr {
        Expr::Identifier(i) => Ok(ident(i)),
        other => Err(Error::Unsupported(format!(
            "{other} in a key or index (only column names)"
        ))),
    }
}

/// The Strata type of a SQL type.
fn column_type(sql: &str) -> Result<ColumnType> {
    let upper = sql.to_uppercase();
    let base = upper.split('(').next().unwrap_or_default().trim();
    let kind = match base {
        "BIGINT" | "INT" | "INTEGER" | "INT2" | "INT4" | "INT8" | "INT64" | "SMALLINT"
        | "TINYINT" | "MEDIUMINT" | "BIGINT UNSIGNED" | "INT UNSIGNED" => ColumnType::Int,
        "REAL" | "FLOAT" | "FLOAT4" | "FLOAT8" | "FLOAT64" | "DOUBLE" | "DOUBLE PRECISION"
        | "DECIMAL" | "NUMERIC" | "DEC" => ColumnType::Float,
        "VARCHAR" | "CHAR" | "CHARACTER" | "CHARACTER VARYING" | "TEXT" | "STRING" | "NVARCHAR"
        | "NCHAR" | "CLOB" | "DATE" | "TIMESTAMP" | "DATETIME" => ColumnType::Text,
        "BOOLEAN" | "BOOL" => ColumnType::Bool,
        "BYTEA" | "BLOB" | "BINARY" | "VARBINARY" | "BYTES" => ColumnType::Bytes,
        _ => {
            return Err(Error::Unsupported(format!(
                "the column type {sql} (Strata stores BIGINT, DOUBLE, VARCHAR, BOOLEAN and BYTEA)"
            )));
        }
    };
    Ok(kind)
}

fn create_table(db: &Db, create: &CreateTable) -> Result<()> {
    if create.query.is_some() {
        return Err(Error::Unsupported(
            "CREATE TABLE … AS SELECT (create the table, then INSERT … SELECT)".into(),
        ));
    }
    let table = object_name(&create.name)?;
    if create.if_not_exists && db.table(&table).is_ok() {
        return Ok(());
    }
    let mut columns = Vec::new();
    let mut primary_key: Option<Vec<String>> = None;
    let mut unique: Vec<Vec<String>> = Vec::new();
    let set_key = |key: Vec<String>, primary_key: &mut Option<Vec<String>>| {
        if primary_key.replace(key).is_some() {
            return Err(Error::Invalid("two primary keys".into()));
        }
        Ok(())
    };
    for c in &create.columns {
        let name = ident(&c.name);
        let mut column = ColumnDef::new(&name, column_type(&c.data_type.to_string())?);
        for option in &c.options {
            match &option.option {
                ColumnOption::NotNull => column.not_null = true,
                ColumnOption::Null => {}
                ColumnOption::PrimaryKey(_) => {
                    column.not_null = true;
                    set_key(vec![name.clone()], &mut primary_key)?;
                }
                ColumnOption::Unique(_) => unique.push(vec![name.clone()]),
                other => {
                    return Err(Error::Unsupported(format!(
                        "the column option {other} (column {name})"
                    )));
                }
            }
        }
        columns.push(column);
    }
    for constraint in &create.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                let key = pk
                    .columns
                    .iter()
                    .map(|c| column_of(&c.column.expr))
                    .collect::<Result<Vec<_>>>()?;
                set_key(key, &mut primary_key)?;
            }
            TableConstraint::Unique(u) => unique.push(
                u.columns
                    .iter()
                    .map(|c| column_of(&c.column.expr))
                    .collect::<Result<Vec<_>>>()?,
            ),
            other => return Err(Error::Unsupported(format!("the constraint {other}"))),
        }
    }
    let primary_key = primary_key.ok_or_else(|| {
        Error::Unsupported(format!(
            "a table without a primary key: add PRIMARY KEY (…) to {table}"
        ))
    })?;
    for c in &mut columns {
        if primary_key.contains(&c.name) {
            c.not_null = true;
        }
    }
    db.create_table(
        &table,
        primary_key.clone(),
        TableOptions::default().columns(columns),
    )?;
    for fields in unique {
        if fields == primary_key {
            continue;
        }
        let name = format!("{table}_{}_key", fields.join("_"));
        if let Err(e) = db.create_index(&table, &name, fields, IndexOptions::local().unique()) {
            // The table and its index are one statement: without the index, no table.
            let _ = db.drop_table(&table);
            return Err(e.into());
        }
    }
    Ok(())
}

fn create_index(db: &Db, create: &CreateIndex) -> Result<()> {
    let table = object_name(&create.table_name)?;
    let fields = create
        .columns
        .iter()
        .map(|c| {
            if c.column.options.asc == Some(false) {
                return Err(Error::Unsupported(
                    "a descending index field (Strata reads an index backwards)".into(),
                ));
            }
            column_of(&c.column.expr)
        })
        .collect::<Result<Vec<_>>>()?;
    let name = match &create.name {
        Some(name) => object_name(name)?,
        None => format!("{table}_{}_idx", fields.join("_")),
    };
    if create.predicate.is_some() {
        return Err(Error::Unsupported("a partial index (WHERE)".into()));
    }
    if create.if_not_exists && db.table(&table)?.indexes.iter().any(|ix| ix.name == name) {
        return Ok(());
    }
    let mut options = IndexOptions::local();
    if !create.include.is_empty() {
        options = options.projection(Projection::Include(
            create.include.iter().map(ident).collect(),
        ));
    }
    if create.unique {
        options = options.unique();
    }
    db.create_index(&table, &name, fields, options)?;
    Ok(())
}

fn drop_table(db: &Db, name: &ObjectName, if_exists: bool) -> Result<()> {
    let table = object_name(name)?;
    match db.drop_table(&table) {
        Err(e) if if_exists && e.is_not_found() => Ok(()),
        other => Ok(other?),
    }
}

fn drop_index(db: &Db, name: &ObjectName, on: Option<&ObjectName>, if_exists: bool) -> Result<()> {
    let index = object_name(name)?;
    // `DROP INDEX t.ix` or `DROP INDEX ix ON t` name the table.
    let named = match (on, name.0.len()) {
        (Some(t), _) => Some(object_name(t)?),
        (None, n) if n >= 2 => match &name.0[n - 2] {
            ObjectNamePart::Identifier(t) => Some(ident(t)),
            _ => None,
        },
        _ => None,
    };
    let tables: Vec<String> = match named {
        Some(t) => vec![t],
        None => db
            .tables()
            .into_iter()
            .filter(|t| t.indexes.iter().any(|ix| ix.name == index))
            .map(|t| t.name)
            .collect(),
    };
    match tables.as_slice() {
        [table] => Ok(db.drop_index(table, &index)?),
        [] if if_exists => Ok(()),
        [] => Err(Error::Invalid(format!("no index {index}"))),
        several => Err(Error::Unsupported(format!(
            "tables {} each have an index {index}: DROP INDEX <table>.{index}",
            several.join(", ")
        ))),
    }
}
