//! A Strata table's columns as SQL sees them, and its rows as Arrow record batches.
//!
//! A table that declares its columns (`CREATE TABLE`, `strata import`) has them: Strata
//! holds every write to them. Otherwise a Strata row names its own fields and may hold any
//! kind of value in any of them, while SQL wants one type per column, so the columns are
//! inferred: the primary-key fields first, then the
//! other fields in the order the first [`SAMPLE_ROWS`] rows show them, then fields only the
//! table's statistics know (seen by `analyze` further on). Each column's type is the kind
//! its sampled values share:
//!
//! | values | column |
//! |---|---|
//! | integers | `BIGINT` (`Int64`) |
//! | floats, or integers and floats | `DOUBLE` (`Float64`; integers widen) |
//! | text | `VARCHAR` (`Utf8`) |
//! | booleans | `BOOLEAN` |
//! | bytes | `BYTEA` (`Binary`) |
//! | several of those kinds (not only numbers) | `VARCHAR`, each value written as text |
//! | none (NULL or missing everywhere) | `VARCHAR` |
//!
//! A value read later that does not fit its column (text in a `BIGINT` column, found past
//! the sample) is an error naming the table, the row's key and the field, never a silent
//! NULL. A `VARCHAR` column of mixed kinds is the documented lenient case: its values are
//! written as their SQL literals would read (`7`, `2.5`, `true`, `\x01ff`).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch,
    RecordBatchOptions, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::DataFusionError;
use strata::{Db, Query, Record, Value};

/// Rows read to infer a table's columns.
pub const SAMPLE_ROWS: u64 = 1_000;

/// Rows per record batch a scan produces.
pub const BATCH_ROWS: usize = 8_192;

pub use strata::ColumnType;

/// A column type's Arrow type.
pub fn data_type(kind: ColumnType) -> DataType {
    match kind {
        ColumnType::Int => DataType::Int64,
        ColumnType::Float => DataType::Float64,
        ColumnType::Text => DataType::Utf8,
        ColumnType::Bool => DataType::Boolean,
        ColumnType::Bytes => DataType::Binary,
    }
}

/// One column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The field's name.
    pub name: String,
    /// Its type.
    pub kind: ColumnType,
    /// Its sampled values were of more than one kind (integers and floats in a `DOUBLE`,
    /// anything in a lenient `VARCHAR`): a comparison on it means something else to Strata
    /// (which orders kinds, and tells `1` from `1.0`) than to SQL, so none is pushed down.
    pub mixed: bool,
}

/// A table's columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// The table.
    pub table: String,
    /// Its primary-key fields.
    pub primary_key: Vec<String>,
    /// The columns, primary key first.
    pub columns: Vec<Column>,
}

/// What a column's sampled values were.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    int: bool,
    float: bool,
    text: bool,
    bool: bool,
    bytes: bool,
}

impl Seen {
    fn add(&mut self, v: &Value) {
        match v {
            Value::Null => {}
            Value::Int(_) => self.int = true,
            Value::Float(_) => self.float = true,
            Value::Str(_) => self.text = true,
            Value::Bool(_) => self.bool = true,
            Value::Bytes(_) => self.bytes = true,
        }
    }

    fn column(self, name: String) -> Column {
        let kinds = [self.int, self.float, self.text, self.bool, self.bytes]
            .iter()
            .filter(|k| **k)
            .count();
        let (kind, mixed) = match (self.int, self.float, self.text, self.bool, self.bytes) {
            (true, false, false, false, false) => (ColumnType::Int, false),
            (_, true, false, false, false) => (ColumnType::Float, kinds > 1),
            (false, false, false, true, false) => (ColumnType::Bool, false),
            (false, false, false, false, true) => (ColumnType::Bytes, false),
            (false, false, true, false, false) => (ColumnType::Text, false),
            _ => (ColumnType::Text, kinds > 1),
        };
        Column { name, kind, mixed }
    }
}

impl TableSchema {
    /// `table`'s columns: those it declares ([`strata::ColumnDef`]: `CREATE TABLE`,
    /// `strata import`), else inferred from its first [`SAMPLE_ROWS`] rows and its
    /// statistics.
    pub fn infer(db: &Db, table: &str) -> strata::Result<TableSchema> {
        let def = db.table(table)?;
        if !def.columns.is_empty() {
            return Ok(TableSchema {
                table: table.to_owned(),
                primary_key: def.primary_key,
                columns: def
                    .columns
                    .iter()
                    .map(|c| Column {
                        name: c.name.clone(),
                        kind: c.kind,
                        mixed: false,
                    })
                    .collect(),
            });
        }
        let mut names: Vec<String> = def.primary_key.clone();
        let mut seen: Vec<Seen> = vec![Seen::default(); names.len()];
        let place = |name: &str, names: &mut Vec<String>, seen: &mut Vec<Seen>| match names
            .iter()
            .position(|n| n == name)
        {
            Some(i) => i,
            None => {
                names.push(name.to_owned());
                seen.push(Seen::default());
                names.len() - 1
            }
        };
        for row in db.query(table, &Query::default().limit(SAMPLE_ROWS))? {
            let row = row?;
            for (name, value) in row.iter() {
                let i = place(name, &mut names, &mut seen);
                seen[i].add(value);
            }
        }
        let stats = db.planning_statistics(table)?;
        for (name, column) in &stats.columns {
            let i = place(name, &mut names, &mut seen);
            for v in column.min.iter().chain(&column.max) {
                seen[i].add(v);
            }
        }
        Ok(TableSchema {
            table: table.to_owned(),
            primary_key: def.primary_key,
            columns: names
                .into_iter()
                .zip(seen)
                .map(|(name, seen)| seen.column(name))
                .collect(),
        })
    }

    /// The Arrow schema (every column nullable: a row may lack any field but its key).
    pub fn arrow(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| Field::new(&c.name, data_type(c.kind), true))
                .collect::<Vec<_>>(),
        ))
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// One column's values, being built.
enum Builder {
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Bool(BooleanBuilder),
    Bytes(BinaryBuilder),
}

impl Builder {
    fn new(kind: ColumnType, rows: usize) -> Builder {
        match kind {
            ColumnType::Int => Builder::Int(Int64Builder::with_capacity(rows)),
            ColumnType::Float => Builder::Float(Float64Builder::with_capacity(rows)),
            ColumnType::Text => Builder::Text(StringBuilder::with_capacity(rows, rows * 16)),
            ColumnType::Bool => Builder::Bool(BooleanBuilder::with_capacity(rows)),
            ColumnType::Bytes => Builder::Bytes(BinaryBuilder::with_capacity(rows, rows * 16)),
        }
    }

    /// Appends `v`; `false` when it does not fit.
    fn append(&mut self, v: &Value, lenient: bool) -> bool {
        match (self, v) {
            (Builder::Int(b), Value::Null) => b.append_null(),
            (Builder::Float(b), Value::Null) => b.append_null(),
            (Builder::Text(b), Value::Null) => b.append_null(),
            (Builder::Bool(b), Value::Null) => b.append_null(),
            (Builder::Bytes(b), Value::Null) => b.append_null(),
            (Builder::Int(b), Value::Int(x)) => b.append_value(*x),
            (Builder::Float(b), Value::Float(x)) => b.append_value(*x),
            (Builder::Float(b), Value::Int(x)) => b.append_value(*x as f64),
            (Builder::Text(b), Value::Str(s)) => b.append_value(s),
            (Builder::Text(b), other) if lenient => b.append_value(other.sql_literal().to_string()),
            (Builder::Bool(b), Value::Bool(x)) => b.append_value(*x),
            (Builder::Bytes(b), Value::Bytes(x)) => b.append_value(x),
            _ => return false,
        }
        true
    }

    fn finish(self) -> ArrayRef {
        match self {
            Builder::Int(mut b) => Arc::new(b.finish()),
            Builder::Float(mut b) => Arc::new(b.finish()),
            Builder::Text(mut b) => Arc::new(b.finish()),
            Builder::Bool(mut b) => Arc::new(b.finish()),
            Builder::Bytes(mut b) => Arc::new(b.finish()),
        }
    }
}

/// Builds record batches of the columns `columns` (in order) from records.
pub struct Batcher {
    table: Arc<TableSchema>,
    columns: Arc<[Column]>,
    schema: SchemaRef,
    /// Empty after a batch, until the next row.
    builders: Vec<Builder>,
    rows: usize,
    /// Rows its buffers are first sized for.
    capacity: usize,
}

/// The Arrow schema of `columns`, named as the table names them.
pub fn arrow_schema(columns: &[Column]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(&c.name, data_type(c.kind), true))
            .collect::<Vec<_>>(),
    ))
}

impl Batcher {
    /// A batcher for `columns` of `table`.
    pub fn new(table: &Arc<TableSchema>, columns: Arc<[Column]>) -> Batcher {
        let schema = arrow_schema(&columns);
        Batcher::with_capacity(table, columns, schema, BATCH_ROWS)
    }

    /// [`Batcher::new`] making batches of `schema` (the columns' types, under any names),
    /// its columns' buffers first sized for `rows` rows (at most [`BATCH_ROWS`]; they grow):
    /// a point query's batch of one row should not allocate room for thousands.
    pub fn with_capacity(
        table: &Arc<TableSchema>,
        columns: Arc<[Column]>,
        schema: SchemaRef,
        rows: usize,
    ) -> Batcher {
        let capacity = rows.clamp(1, BATCH_ROWS);
        Batcher {
            table: Arc::clone(table),
            columns,
            schema,
            builders: Vec::new(),
            rows: 0,
            capacity,
        }
    }

    /// The batches' schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// Rows added since the last batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds `record`'s values; a value that does not fit its column is an error naming the
    /// table, the row's key and the field.
    pub fn add(&mut self, record: &Record) -> Result<(), DataFusionError> {
        if self.builders.len() != self.columns.len() {
            self.builders = self
                .columns
                .iter()
                .map(|c| Builder::new(c.kind, self.capacity))
                .collect();
        }
        for (column, builder) in self.columns.iter().zip(&mut self.builders) {
            let v = record.value(&column.name);
            if !builder.append(v, column.mixed && column.kind == ColumnType::Text) {
                let key: Vec<String> = self
                    .table
                    .primary_key
                    .iter()
                    .map(|f| record.value(f).sql_literal().to_string())
                    .collect();
                return Err(DataFusionError::Execution(format!(
                    "table {}, key ({}), field {}: the value {} does not fit the column's type {} \
                     (inferred from the table's first rows)",
                    self.table.table,
                    key.join(", "),
                    column.name,
                    v.sql_literal(),
                    data_type(column.kind)
                )));
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// The rows added so far as one batch, and a fresh start.
    pub fn finish(&mut self) -> Result<RecordBatch, DataFusionError> {
        let builders = std::mem::take(&mut self.builders);
        let rows = std::mem::take(&mut self.rows);
        let columns: Vec<ArrayRef> = if builders.is_empty() {
            self.columns
                .iter()
                .map(|c| Builder::new(c.kind, 0).finish())
                .collect()
        } else {
            builders.into_iter().map(Builder::finish).collect()
        };
        // No columns (`count(*)`): the batch still says how many rows it stands for.
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema(),
            columns,
            &options,
        )?)
    }
}
