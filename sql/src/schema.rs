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

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::DataFusionError;
use strata::{Db, FieldNames, Query, Record, RowRef, Value, ValueRef};

use laid_out::{LaidOut, Words};

mod laid_out;

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

/// Bytes of text and byte values a batch holds before it is full (a record is at most 4 MiB,
/// so a column's values in one batch stay far below Arrow's 2 GiB offsets).
pub const BATCH_BYTES: usize = 64 << 20;

/// Builds record batches of the columns `columns` (in order) from records.
///
/// Values are staged column by column, each column's in a buffer of its kind (integers,
/// floats, booleans, text offsets and bytes) kept from batch to batch; a batch then copies
/// each column's buffer whole into one Arrow buffer that its columns share as slices. A row
/// so costs a push a value (no room made for it in advance, no second pass that gathers a
/// column from the rows), and a batch of one row (a point query's) a handful of allocations
/// rather than several per column.
pub struct Batcher {
    table: Arc<TableSchema>,
    columns: Arc<[Column]>,
    schema: SchemaRef,
    /// Whether `schema` has a nullable field of each column's type, in the columns' order:
    /// the arrays `finish` makes then fit it without being checked again.
    schema_fits: bool,
    /// Each column's place among the columns of its kind's section ([`LaidOut`]).
    slots: Vec<usize>,
    /// The columns' positions, in their names' order (a record's fields' order).
    by_name: Vec<usize>,
    /// The field layouts met lately ([`Layout`]), the last record's first: the rows of a
    /// query share a few lists of names (a field some rows lack makes another), so their
    /// fields are matched to columns once a list, not by comparing names in every row.
    layouts: Vec<Layout>,
    /// How many columns of each kind's section.
    ints: usize,
    floats: usize,
    bools: usize,
    texts: usize,
    staged: Staged,
    rows: usize,
}

/// A list of field names, `(field, column)` for each column one of its fields fills, and
/// the columns none fills (NULL in each row of the list).
struct Layout {
    names: FieldNames,
    places: Vec<(usize, usize)>,
    absent: Vec<usize>,
}

/// How many layouts a [`Batcher`] remembers: rows of one table seldom have more, and a
/// record's names are compared with each before it is matched anew.
const LAYOUTS: usize = 4;

/// The values of the rows since the last batch, column by column.
#[derive(Default)]
struct Staged {
    /// One a column, in the columns' order.
    columns: Vec<Stage>,
    /// Bytes of text and byte values staged, all columns together.
    text_bytes: usize,
}

/// One column's values since the last batch.
struct Stage {
    values: Values,
    /// The rows (counted from the batch's first) whose value is NULL, in order.
    nulls: Vec<u32>,
}

/// A column's values, in a buffer of its kind; a NULL holds its place with a zero (or an
/// empty text).
enum Values {
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Bools(Vec<bool>),
    /// Text or byte values: their bytes one after another, and where each ends (`offsets`
    /// starts with 0 and has one more than the rows).
    Texts {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
    },
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
    /// its buffers first sized for `rows` rows (at most [`BATCH_ROWS`]; they grow): a point
    /// query's batch of one row should not allocate room for thousands.
    pub fn with_capacity(
        table: &Arc<TableSchema>,
        columns: Arc<[Column]>,
        schema: SchemaRef,
        rows: usize,
    ) -> Batcher {
        let rows = rows.clamp(1, BATCH_ROWS);
        let (mut ints, mut floats, mut bools, mut texts) = (0, 0, 0, 0);
        let slots = columns
            .iter()
            .map(|c| {
                let count = match c.kind {
                    ColumnType::Int => &mut ints,
                    ColumnType::Float => &mut floats,
                    ColumnType::Bool => &mut bools,
                    ColumnType::Text | ColumnType::Bytes => &mut texts,
                };
                *count += 1;
                *count - 1
            })
            .collect();
        let staged = Staged {
            columns: columns.iter().map(|c| Stage::new(c.kind, rows)).collect(),
            text_bytes: 0,
        };
        let mut by_name: Vec<usize> = (0..columns.len()).collect();
        by_name.sort_by(|&a, &b| columns[a].name.cmp(&columns[b].name));
        let fields = schema.fields();
        let schema_fits = fields.len() == columns.len()
            && (fields.iter().zip(columns.iter()))
                .all(|(f, c)| f.is_nullable() && *f.data_type() == data_type(c.kind));
        Batcher {
            table: Arc::clone(table),
            by_name,
            layouts: Vec::with_capacity(LAYOUTS),
            columns,
            schema,
            schema_fits,
            slots,
            ints,
            floats,
            bools,
            texts,
            staged,
            rows: 0,
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

    /// The bytes its buffers hold room for.
    pub fn capacity_bytes(&self) -> usize {
        self.staged.columns.iter().map(Stage::capacity_bytes).sum()
    }

    /// Whether the rows added since the last batch make a full batch: [`BATCH_ROWS`] rows,
    /// or [`BATCH_BYTES`] of text and byte values.
    pub fn full(&self) -> bool {
        self.rows >= BATCH_ROWS || self.staged.text_bytes >= BATCH_BYTES
    }

    /// Adds `record`'s values; a value that does not fit its column is an error naming the
    /// table, the row's key and the field (and the row is not added).
    pub fn add(&mut self, record: &Record) -> Result<(), DataFusionError> {
        self.add_ref(&RowRef::from(record))
    }

    /// Adds the values of `record`, a row lent where it lies ([`strata::Rows::next_ref`],
    /// [`strata::Rows::for_each_ref`]):
    /// each copied from the stored row straight into the batch's buffers. A value that does
    /// not fit its column is an error naming the table, the row's key and the field; a damaged
    /// stored value is the engine's error naming the family and the stored key of its row (as
    /// [`DataFusionError::External`]). Either way the row is not added.
    pub fn add_ref(&mut self, record: &RowRef<'_>) -> Result<(), DataFusionError> {
        let known = match self.layouts.first() {
            Some(l) if record.shares_names(&l.names) => true,
            Some(l) if record.has_names(&l.names) => {
                self.keep_lasting_names(0, record);
                true
            }
            _ => false,
        };
        if !known {
            self.learn(record);
        }
        // A record's values are read from it directly, without the engine's error (the lent
        // row's `checked_value`): beside it, each value came back through memory in pieces
        // that staging then waited on, a stall on 17 % of `add_ref`'s samples (`perf record
        // -e cpu-clock`). A value that does not read is read again by `failure`, for its error.
        let (layout, columns, row) = (&self.layouts[0], &self.columns, self.rows);
        let staged = &mut self.staged;
        let staging = match record.as_record() {
            Some(built) => {
                let values = built.values();
                staged.stage_row(row, layout, columns, |j| values.get(j).map(ValueRef::from))
            }
            None => staged.stage_row(row, layout, columns, |j| record.checked_value(j)),
        };
        match staging {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(at) => {
                self.staged.rewind(row);
                Err(self.failure(record, self.layouts[0].places[at]))
            }
        }
    }

    /// Why the value of field `j` of `record` was not staged as column `i`'s: read again, as
    /// staging read it (the hot path carries only where it stopped: an error with the value
    /// in it came back through memory, ~30 instructions a value).
    #[cold]
    fn failure(&self, record: &RowRef<'_>, (j, i): (usize, usize)) -> DataFusionError {
        let column = &self.columns[i];
        match record.value(j) {
            Err(e) => DataFusionError::External(Box::new(e)),
            Ok(v) if fits(column, v) => DataFusionError::Execution(format!(
                "table {}: a column of a record batch cannot hold more than {} bytes of text",
                self.table.table,
                i32::MAX
            )),
            Ok(v) => self.misfit(record, column, &v.to_value()),
        }
    }

    /// Puts the layout of `record`'s names first: one remembered, else learnt — where its
    /// fields go, found in one walk of its fields and the columns in name order (a field two
    /// columns read goes to both) — in the place of the one met longest ago.
    #[cold]
    fn learn(&mut self, record: &RowRef<'_>) {
        if let Some(at) = self.layouts.iter().position(|l| record.has_names(&l.names)) {
            self.keep_lasting_names(at, record);
            self.layouts[..=at].rotate_right(1);
            return;
        }
        let mut places = Vec::with_capacity(self.columns.len());
        let mut absent = Vec::new();
        let mut fields = record.names().enumerate().peekable();
        for &i in &self.by_name {
            let name = self.columns[i].name.as_str();
            while fields.next_if(|(_, field)| *field < name).is_some() {}
            match fields.peek().filter(|(_, field)| *field == name) {
                Some((j, _)) => places.push((*j, i)),
                None => absent.push(i),
            }
        }
        if self.layouts.len() == LAYOUTS {
            self.layouts.pop();
        }
        let names = record.field_names();
        let layout = Layout {
            names,
            places,
            absent,
        };
        self.layouts.insert(0, layout);
    }

    /// Keeps `record`'s list of names for layout `at` (whose names it has) if the list lasts
    /// (`Record::names_are_lasting`): the rows after it that share it are then known by one
    /// pointer compared, not by their names (~200 instructions a row, callgrind). A list
    /// that does not last (each row's own, or a reader's before its layout is interned) is
    /// not taken up: rows that alternate between such lists would swap them at every row.
    fn keep_lasting_names(&mut self, at: usize, record: &RowRef<'_>) {
        if record.names_are_lasting() {
            self.layouts[at].names = record.field_names();
        }
    }

    /// The error for `v`, of `record`, not fitting `column`.
    #[cold]
    fn misfit(&self, record: &RowRef<'_>, column: &Column, v: &Value) -> DataFusionError {
        let key: Vec<String> = self
            .table
            .primary_key
            .iter()
            .map(|f| {
                let value = record.get(f).ok().flatten().map(|v| v.to_value());
                value.unwrap_or(Value::Null).sql_literal().to_string()
            })
            .collect();
        DataFusionError::Execution(format!(
            "table {}, key ({}), field {}: the value {} does not fit the column's type {} \
             (inferred from the table's first rows)",
            self.table.table,
            key.join(", "),
            column.name,
            v.sql_literal(),
            data_type(column.kind)
        ))
    }

    /// The rows added so far as one batch, and a fresh start.
    pub fn finish(&mut self) -> Result<RecordBatch, DataFusionError> {
        self.finish_checked(cfg!(debug_assertions))
    }

    /// [`Batcher::finish`], the arrays checked as Arrow checks them when `check`, else taken
    /// as made (a batch's texts' UTF-8, its NULL counts, its arrays against its schema were
    /// ~2,500 of a SQL point query's ~30,000 instructions, callgrind). Release builds skip
    /// the checks; debug builds, and the tests, which also build batches unchecked and
    /// validate them in full, make them.
    fn finish_checked(&mut self, check: bool) -> Result<RecordBatch, DataFusionError> {
        let rows = std::mem::take(&mut self.rows);
        let laid = self.lay_out(rows);
        let arrays = laid.and_then(|laid| self.arrays(&laid, rows, check));
        // Cleared whatever happened: a batch that failed leaves no rows to the next one.
        self.clear();
        let arrays = arrays?;
        if self.schema_fits && !check {
            #[expect(
                unsafe_code,
                reason = "Arrow's checks of arrays made to fit their schema: ~1,100 of a SQL \
                          point query's ~30,000 instructions (callgrind)"
            )]
            // SAFETY: `schema_fits` says the schema has one field for each column, of the type
            // `LaidOut::column` gives that column's array (and nullable, though `new_unchecked`
            // needs no more than the types); every array holds `rows` values, the count given.
            // `try_new_with_options` below checks no more than this; the tests build batches
            // both ways and compare them.
            return Ok(unsafe { RecordBatch::new_unchecked(self.schema(), arrays, rows) });
        }
        // No columns (`count(*)`): the batch still says how many rows it stands for.
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.schema(),
            arrays,
            &options,
        )?)
    }

    /// Each column's array of the batch `laid` (of `rows` rows).
    fn arrays(
        &self,
        laid: &LaidOut,
        rows: usize,
        check: bool,
    ) -> Result<Vec<ArrayRef>, DataFusionError> {
        let mut with_nulls = 0;
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for (i, column) in self.columns.iter().enumerate() {
            let count = self.staged.columns[i].nulls.len();
            let nulls = if count > 0 {
                with_nulls += 1;
                Some(laid.nulls(with_nulls - 1, rows, count, check)?)
            } else {
                None
            };
            arrays.push(laid.column(column.kind, self.slots[i], rows, nulls, check)?);
        }
        Ok(arrays)
    }

    /// The staged `rows` laid out column after column in one buffer, each kind in its section
    /// ([`LaidOut`]), each column copied as it was staged; a kind no column has takes no room.
    fn lay_out(&mut self, rows: usize) -> Result<LaidOut, DataFusionError> {
        let staged = &self.staged.columns;
        // What the arrays are made on without Arrow's checks: each column holds a value a
        // row, and lists NULL rows among them (`add_ref` takes a failed row back whole).
        if let Some(i) = staged.iter().position(|s| !s.holds(rows)) {
            return Err(DataFusionError::Internal(format!(
                "table {}: column {} was staged with other than {rows} rows",
                self.table.table, self.columns[i].name
            )));
        }
        let with_nulls = staged.iter().filter(|s| !s.nulls.is_empty()).count();
        let words = (self.ints + self.floats) * rows
            + (self.texts * (rows + 1)).div_ceil(2)
            + self.staged.text_bytes.div_ceil(8)
            + (with_nulls * rows).div_ceil(64)
            + (self.bools * rows).div_ceil(64)
            + self.texts
            + 3;
        let mut out = Words::with_capacity(words);
        let ints = out.len();
        for stage in staged {
            if let Values::Ints(values) = &stage.values {
                out.put(values);
            }
        }
        let floats = out.len();
        for stage in staged {
            if let Values::Floats(values) = &stage.values {
                out.put(values);
            }
        }
        // Each column's offsets (from 0 in its own bytes), then each column's bytes, each
        // copied as staged.
        let texts = || {
            staged.iter().filter_map(|s| match &s.values {
                Values::Texts { offsets, bytes } => Some((offsets, bytes)),
                _ => None,
            })
        };
        let offsets = out.len();
        for (column_offsets, _) in texts() {
            out.put(column_offsets);
        }
        out.align();
        let bytes = out.len();
        let mut starts = Vec::with_capacity(self.texts + 1);
        let mut at = 0usize;
        for (_, column_bytes) in texts() {
            starts.push(at);
            out.put(column_bytes);
            at += column_bytes.len();
        }
        starts.push(at);
        out.align();
        let validity = out.len();
        out.put_bits(
            staged
                .iter()
                .filter(|s| !s.nulls.is_empty())
                .flat_map(|s| s.validity(rows)),
        );
        out.align();
        let bools = out.len();
        out.put_bits(staged.iter().flat_map(|s| {
            match &s.values {
                Values::Bools(values) => values.as_slice(),
                _ => &[],
            }
            .iter()
            .copied()
        }));
        Ok(LaidOut {
            buffer: out.finish(),
            ints,
            floats,
            offsets,
            bytes,
            starts,
            validity,
            bools,
        })
    }

    /// Forgets the staged rows, keeping the buffers.
    fn clear(&mut self) {
        // Each text column keeps the room its largest batch took; should those add up to
        // more than a batch's worth twice over (a scan whose large values move from column
        // to column), they are let go. They are counted only after a batch of at least a
        // batch's worth shared among the text columns: while every batch has fewer bytes,
        // no column's room (at most twice its bytes) takes it past its share of that bound.
        let kept: usize = if self.staged.text_bytes * self.texts >= BATCH_BYTES {
            (self.staged.columns.iter())
                .map(|s| match &s.values {
                    Values::Texts { bytes, .. } => bytes.capacity(),
                    _ => 0,
                })
                .sum()
        } else {
            0
        };
        for stage in &mut self.staged.columns {
            stage.truncate(0);
            if kept > 2 * BATCH_BYTES
                && let Values::Texts { bytes, .. } = &mut stage.values
            {
                bytes.shrink_to_fit();
            }
        }
        self.staged.text_bytes = 0;
        self.rows = 0;
    }
}

/// Whether a value of `v`'s kind fits `column` (NULL fits any; a lenient text column takes
/// anything): what [`Stage::stage`]'s arms take (a test holds the two to each other), so a
/// value that fits and was not staged found no room. The engine's rule for declared columns
/// (`ColumnType::admits`), read for an error only: the value is copied out.
fn fits(column: &Column, v: ValueRef<'_>) -> bool {
    column.kind.admits(&v.to_value()) || (column.mixed && column.kind == ColumnType::Text)
}

impl Staged {
    /// Stages row `row` (counted from the batch's first): for each `(field, column)` of
    /// `layout`'s places, the field's value (`value` of its place among the row's fields) as
    /// the column's, and a NULL in each column the layout has no field for. An error is the
    /// place in the layout's places of the value that did not read or fit
    /// ([`Batcher::failure`] says which and why); the columns staged before it are then
    /// ahead of the others, until [`Staged::rewind`].
    #[inline(always)]
    fn stage_row<'v>(
        &mut self,
        row: usize,
        layout: &Layout,
        columns: &[Column],
        value: impl Fn(usize) -> Option<ValueRef<'v>>,
    ) -> Result<(), usize> {
        for (at, &(j, i)) in layout.places.iter().enumerate() {
            let Some(v) = value(j) else {
                return Err(at);
            };
            if !self.columns[i].stage(row, &columns[i], v, &mut self.text_bytes) {
                return Err(at);
            }
        }
        for &i in &layout.absent {
            self.columns[i].stage_null(row);
        }
        Ok(())
    }

    /// Takes back what a row at `row` staged in any column (it did not fit).
    #[cold]
    fn rewind(&mut self, row: usize) {
        for stage in &mut self.columns {
            stage.truncate(row);
        }
        self.text_bytes = (self.columns.iter())
            .map(|s| match &s.values {
                Values::Texts { bytes, .. } => bytes.len(),
                _ => 0,
            })
            .sum();
    }
}

impl Stage {
    /// A column of `kind`, with room for `rows` values.
    fn new(kind: ColumnType, rows: usize) -> Stage {
        let values = match kind {
            ColumnType::Int => Values::Ints(Vec::with_capacity(rows)),
            ColumnType::Float => Values::Floats(Vec::with_capacity(rows)),
            ColumnType::Bool => Values::Bools(Vec::with_capacity(rows)),
            ColumnType::Text | ColumnType::Bytes => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Values::Texts {
                    offsets,
                    bytes: Vec::with_capacity(rows * 16),
                }
            }
        };
        Stage {
            values,
            nulls: Vec::new(),
        }
    }

    /// Stages `v` as the value of `column` in row `row`, counting a text's bytes in
    /// `text_bytes`. False when `v` does not fit the column, or the column has no room for
    /// its bytes.
    #[inline(always)]
    fn stage(
        &mut self,
        row: usize,
        column: &Column,
        v: ValueRef<'_>,
        text_bytes: &mut usize,
    ) -> bool {
        match (&mut self.values, v) {
            (_, ValueRef::Null) => {
                self.stage_null(row);
                true
            }
            (Values::Ints(values), ValueRef::Int(x)) => push(values, x),
            (Values::Floats(values), ValueRef::Float(x)) => push(values, x),
            (Values::Floats(values), ValueRef::Int(x)) => push(values, x as f64),
            (Values::Bools(values), ValueRef::Bool(x)) => push(values, x),
            (Values::Texts { offsets, bytes }, v) => {
                let text;
                let value = match (column.kind, v) {
                    (ColumnType::Text, ValueRef::Str(x)) => x.as_bytes(),
                    (ColumnType::Bytes, ValueRef::Bytes(x)) => x,
                    (ColumnType::Text, other) if column.mixed => {
                        text = other.to_value().sql_literal().to_string();
                        text.as_bytes()
                    }
                    _ => return false,
                };
                // Arrow's offsets are `i32`; [`Batcher::full`] says a batch is full long
                // before a column's bytes reach them.
                if value.len() > i32::MAX as usize - bytes.len() {
                    return false;
                }
                bytes.extend_from_slice(value);
                *text_bytes += value.len();
                // Under `i32::MAX`, checked above.
                offsets.push(bytes.len() as i32);
                true
            }
            _ => false,
        }
    }

    /// Stages a NULL in row `row`: a zero (or an empty text) holds its place.
    fn stage_null(&mut self, row: usize) {
        match &mut self.values {
            Values::Ints(values) => values.push(0),
            Values::Floats(values) => values.push(0.0),
            Values::Bools(values) => values.push(false),
            Values::Texts { offsets, bytes } => offsets.push(bytes.len() as i32),
        }
        // A batch's rows are at most `BATCH_ROWS`.
        self.nulls.push(row as u32);
    }

    /// Keeps the first `rows` values.
    fn truncate(&mut self, rows: usize) {
        match &mut self.values {
            Values::Ints(values) => values.truncate(rows),
            Values::Floats(values) => values.truncate(rows),
            Values::Bools(values) => values.truncate(rows),
            Values::Texts { offsets, bytes } => {
                offsets.truncate(rows + 1);
                bytes.truncate(offsets[rows] as usize);
            }
        }
        while self.nulls.last().is_some_and(|&r| r as usize >= rows) {
            self.nulls.pop();
        }
    }

    /// Whether it holds `rows` values, its NULL rows among them.
    fn holds(&self, rows: usize) -> bool {
        let values = match &self.values {
            Values::Ints(values) => values.len() == rows,
            Values::Floats(values) => values.len() == rows,
            Values::Bools(values) => values.len() == rows,
            Values::Texts { offsets, .. } => offsets.len() == rows + 1,
        };
        values && self.nulls.last().is_none_or(|&r| (r as usize) < rows)
    }

    /// Whether each of the first `rows` values is not NULL.
    fn validity(&self, rows: usize) -> impl Iterator<Item = bool> + '_ {
        let mut nulls = self.nulls.iter().peekable();
        (0..rows).map(move |row| nulls.next_if(|&&r| r as usize == row).is_none())
    }

    fn capacity_bytes(&self) -> usize {
        let values = match &self.values {
            Values::Ints(values) => values.capacity() * 8,
            Values::Floats(values) => values.capacity() * 8,
            Values::Bools(values) => values.capacity(),
            Values::Texts { offsets, bytes } => offsets.capacity() * 4 + bytes.capacity(),
        };
        values + self.nulls.capacity() * 4
    }
}

/// Stages `x` (a value that always fits).
#[inline(always)]
fn push<T>(values: &mut Vec<T>, x: T) -> bool {
    values.push(x);
    true
}

#[cfg(test)]
mod tests;
