//! `INSERT`, `INSERT OR REPLACE`, `UPDATE` and `DELETE` on Strata tables, in a transaction.
//!
//! Each statement's rows are found by a query DataFusion runs — the `INSERT`'s source, or
//! `SELECT <key>, <new values> FROM t WHERE <condition>` for `UPDATE` and `DELETE` — reading
//! through the transaction, so the rows it read are validated at commit and it sees the
//! transaction's own writes. Its `WHERE` is whatever DataFusion can evaluate, subqueries
//! included: nothing depends on a provider being handed the right filters (DataFusion's
//! `delete_from`/`update` are not used; upstream apache/datafusion#24654 hands them none for
//! a `WHERE … IN (SELECT …)` and would change every row).
//!
//! - `INSERT` fails on a key that exists (not retryably), `INSERT OR REPLACE` / `REPLACE`
//!   replaces the row. Columns not listed are left out (NULL).
//! - `UPDATE` reads each matched row whole by its key and writes it back with the new values
//!   (a NULL removes the field); a new key moves the row (an existing row at the new key is
//!   an error).
//! - Values are converted to the table's declared column types the way SQL assigns them
//!   (`CAST`, failing on a value that does not convert); a table without declared columns
//!   takes the values as they are ([`crate::values`]).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::execution::context::SessionContext;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Delete, FromTable, Insert, SqliteOnConflict, Statement, TableFactor,
    TableObject, TableWithJoins, Update,
};
use strata::{ColumnDef, Db, OwnedTransaction, Record, TableDef, Value};

use crate::ddl::{ident, object_name};
use crate::schema::TableSchema;
use crate::session::SharedTransaction;
use crate::values::value_at;
use crate::{Error, Result};

/// Runs one DML statement in `tx`; `context`'s scans read through it. Returns the rows
/// written.
pub async fn run(
    db: &Arc<Db>,
    context: &SessionContext,
    tx: &SharedTransaction,
    statement: &Statement,
) -> Result<u64> {
    match statement {
        Statement::Insert(insert) => run_insert(db, context, tx, insert).await,
        Statement::Update(update) => run_update(db, context, tx, update).await,
        Statement::Delete(delete) => run_delete(db, context, tx, delete).await,
        other => Err(Error::Unsupported(format!("the statement {other}"))),
    }
}

/// Runs `sql` (a query) in `context` and collects its batches.
async fn rows_of(context: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(context.sql(sql).await?.collect().await?)
}

/// Applies `f` to the open transaction.
fn with_tx<T>(
    tx: &SharedTransaction,
    f: impl FnOnce(&mut OwnedTransaction) -> Result<T>,
) -> Result<T> {
    let mut cell = tx.lock().unwrap_or_else(|e| e.into_inner());
    let tx = cell.as_mut().ok_or(Error::NoTransaction)?;
    f(tx)
}

/// The columns a table's values are written as: the declared ones, or those inferred.
fn table_columns(db: &Db, def: &TableDef) -> Result<Vec<String>> {
    if !def.columns.is_empty() {
        return Ok(def.columns.iter().map(|c| c.name.clone()).collect());
    }
    Ok(TableSchema::infer(db, &def.name)?
        .columns
        .into_iter()
        .map(|c| c.name)
        .collect())
}

/// `array` as the declared column's type, as SQL assignment casts it; unchanged when the
/// column is not declared.
fn assigned(array: &ArrayRef, column: Option<&ColumnDef>, name: &str) -> Result<ArrayRef> {
    let Some(column) = column else {
        return Ok(Arc::clone(array));
    };
    let target = crate::schema::data_type(column.kind);
    if array.data_type() == &target {
        return Ok(Arc::clone(array));
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(array, &target, &options).map_err(|e| {
        Error::Invalid(format!(
            "column {name} is {}: a value of type {} does not convert ({e})",
            column.kind,
            array.data_type()
        ))
    })
}

fn declared<'d>(def: &'d TableDef, name: &str) -> Option<&'d ColumnDef> {
    def.columns.iter().find(|c| c.name == name)
}

async fn run_insert(
    db: &Arc<Db>,
    context: &SessionContext,
    tx: &SharedTransaction,
    insert: &Insert,
) -> Result<u64> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(Error::Unsupported("INSERT into a table function".into()));
    };
    if insert.on.is_some() || insert.returning.is_some() || !insert.assignments.is_empty() {
        return Err(Error::Unsupported(
            "INSERT … ON CONFLICT, RETURNING or SET (use INSERT OR REPLACE)".into(),
        ));
    }
    let replace = match insert.or {
        None => insert.replace_into,
        Some(SqliteOnConflict::Replace) => true,
        Some(other) => return Err(Error::Unsupported(format!("INSERT OR {other}"))),
    };
    let table = object_name(name)?;
    let def = db.table(&table)?;
    let source = insert
        .source
        .as_ref()
        .ok_or_else(|| Error::Unsupported("INSERT without VALUES or SELECT".into()))?;
    let names: Vec<String> = if insert.columns.is_empty() {
        table_columns(db, &def)?
    } else {
        insert
            .columns
            .iter()
            .map(object_name)
            .collect::<Result<_>>()?
    };
    let batches = rows_of(context, &source.to_string()).await?;
    let mut count = 0;
    for batch in batches {
        if batch.num_columns() != names.len() {
            return Err(Error::Invalid(format!(
                "INSERT into {table} gives {} values for {} columns ({})",
                batch.num_columns(),
                names.len(),
                names.join(", ")
            )));
        }
        let columns = batch
            .columns()
            .iter()
            .zip(&names)
            .map(|(array, name)| assigned(array, declared(&def, name), name))
            .collect::<Result<Vec<_>>>()?;
        let mut records = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let mut record = Record::new();
            for (array, name) in columns.iter().zip(&names) {
                let v = value_at(array, row, name)?;
                if !v.is_null() {
                    record.set(name.as_str(), v);
                }
            }
            records.push(record);
        }
        count += records.len() as u64;
        with_tx(tx, |tx| {
            for record in records {
                if replace {
                    tx.upsert(&table, record)?;
                } else {
                    tx.insert(&table, record)?;
                }
            }
            Ok(())
        })?;
    }
    Ok(count)
}

/// The one table of an `UPDATE` or `DELETE`, with its alias as written.
fn target(from: &TableWithJoins) -> Result<String> {
    if !from.joins.is_empty() {
        return Err(Error::Unsupported(
            "UPDATE or DELETE of a join (use a subquery in WHERE)".into(),
        ));
    }
    match &from.relation {
        TableFactor::Table { name, .. } => object_name(name),
        other => Err(Error::Unsupported(format!("UPDATE or DELETE of {other}"))),
    }
}

/// `SELECT <key fields>, <extra> FROM <from> [WHERE <selection>]`.
fn key_query(
    def: &TableDef,
    from: &TableWithJoins,
    extra: &[String],
    selection: Option<&datafusion::sql::sqlparser::ast::Expr>,
) -> String {
    let mut items: Vec<String> = def
        .primary_key
        .iter()
        .map(|k| format!("\"{}\"", k.replace('"', "\"\"")))
        .collect();
    items.extend(extra.iter().cloned());
    let mut sql = format!("SELECT {} FROM {from}", items.join(", "));
    if let Some(selection) = selection {
        sql.push_str(&format!(" WHERE {selection}"));
    }
    sql
}

/// The key values of row `row` (the first `n` columns).
fn key_at(batch: &RecordBatch, row: usize, def: &TableDef) -> Result<Vec<Value>> {
    def.primary_key
        .iter()
        .enumerate()
        .map(|(i, k)| Ok(value_at(batch.column(i), row, k)?))
        .collect()
}

async fn run_delete(
    db: &Arc<Db>,
    context: &SessionContext,
    tx: &SharedTransaction,
    delete: &Delete,
) -> Result<u64> {
    if delete.using.is_some()
        || delete.returning.is_some()
        || delete.limit.is_some()
        || !delete.order_by.is_empty()
        || !delete.tables.is_empty()
    {
        return Err(Error::Unsupported(
            "DELETE with USING, RETURNING, ORDER BY or LIMIT (use a subquery in WHERE)".into(),
        ));
    }
    let from = match &delete.from {
        FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from) => from,
    };
    let [from] = from.as_slice() else {
        return Err(Error::Unsupported("DELETE from several tables".into()));
    };
    let table = target(from)?;
    let def = db.table(&table)?;
    let sql = key_query(&def, from, &[], delete.selection.as_ref());
    let mut count = 0;
    for batch in rows_of(context, &sql).await? {
        let keys = (0..batch.num_rows())
            .map(|row| key_at(&batch, row, &def))
            .collect::<Result<Vec<_>>>()?;
        count += keys.len() as u64;
        with_tx(tx, |tx| {
            for key in keys {
                tx.delete(&table, &key)?;
            }
            Ok(())
        })?;
    }
    Ok(count)
}

async fn run_update(
    db: &Arc<Db>,
    context: &SessionContext,
    tx: &SharedTransaction,
    update: &Update,
) -> Result<u64> {
    if update.from.is_some()
        || update.returning.is_some()
        || update.or.is_some()
        || update.limit.is_some()
        || !update.order_by.is_empty()
    {
        return Err(Error::Unsupported(
            "UPDATE with FROM, RETURNING, OR, ORDER BY or LIMIT (use a subquery)".into(),
        ));
    }
    let table = target(&update.table)?;
    let def = db.table(&table)?;
    let mut set: Vec<String> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for (i, a) in update.assignments.iter().enumerate() {
        let AssignmentTarget::ColumnName(name) = &a.target else {
            return Err(Error::Unsupported("UPDATE … SET (a, b) = …".into()));
        };
        let name = match name.0.last() {
            Some(datafusion::sql::sqlparser::ast::ObjectNamePart::Identifier(i)) => ident(i),
            _ => object_name(name)?,
        };
        if set.contains(&name) {
            return Err(Error::Invalid(format!("UPDATE sets {name} twice")));
        }
        values.push(format!("{} AS \"__strata_set_{i}\"", a.value));
        set.push(name);
    }
    let sql = key_query(&def, &update.table, &values, update.selection.as_ref());
    let keys = def.primary_key.len();
    let moves_key = set.iter().any(|s| def.primary_key.contains(s));
    let mut count = 0;
    for batch in rows_of(context, &sql).await? {
        let columns = set
            .iter()
            .enumerate()
            .map(|(i, name)| assigned(batch.column(keys + i), declared(&def, name), name))
            .collect::<Result<Vec<_>>>()?;
        let mut changes = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let key = key_at(&batch, row, &def)?;
            let new: Vec<Value> = columns
                .iter()
                .zip(&set)
                .map(|(array, name)| value_at(array, row, name))
                .collect::<datafusion::error::Result<_>>()?;
            changes.push((key, new));
        }
        count += with_tx(tx, |tx| {
            let mut written = 0;
            for (key, new) in changes {
                let Some(mut record) = tx.get(&table, &key)? else {
                    continue;
                };
                for (name, v) in set.iter().zip(new) {
                    if v.is_null() {
                        record.remove(name);
                    } else {
                        record.set(name.as_str(), v);
                    }
                }
                if moves_key {
                    let new_key: Vec<Value> = def
                        .primary_key
                        .iter()
                        .map(|k| record.value(k).clone())
                        .collect();
                    if new_key != key {
                        tx.delete(&table, &key)?;
                        tx.insert(&table, record)?;
                        written += 1;
                        continue;
                    }
                }
                tx.upsert(&table, record)?;
                written += 1;
            }
            Ok(written)
        })?;
    }
    Ok(count)
}
