//! `strata import`: loads a CSV or JSON-lines file into a table.
//!
//! Two passes over the file:
//! 1. **Check.** Parse every line, check each has the header's field count (CSV) or is a JSON
//!    object of scalars (JSON lines), that every primary-key field is present and not empty,
//!    and infer each CSV column's type: integer if every non-empty cell is one, else float if
//!    every non-empty cell is a number, else text. A malformed line stops the import here,
//!    before anything is written, with its line number.
//! 2. **Load.** Parse again and build typed records. By default (bulk mode) the rows are
//!    inserts loaded through [`Db::bulk_load`]: runs of about 64 MiB, each sorted by key and
//!    written straight into table files with its index entries when no stored row falls in
//!    its key range, or as ordinary inserts in batches of 1,000 when one does. With
//!    `replace`, or with bulk mode off (`strata import --batch N`), rows go in atomic writes
//!    of [`ImportOptions::batch_rows`]. When a run or batch fails (a key that exists, an
//!    oversized record, an I/O error), the error names the line; every row before the
//!    failing run or batch is committed (and, of a run written as inserts, the batches of it
//!    before the failing one), nothing after. The logs are synced at the end, so a finished
//!    import survives a crash (a loaded run is durable as soon as it is loaded).
//!
//! Numbers keep their text's meaning: a cell with a leading zero (`007`, a ZIP code) is
//! text, not the integer 7, and an integer column whose cells are all integers stays integer.
//! An empty CSV cell is NULL (the field is absent from the record).

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Seek};
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use strata::table::format::MAX_RECORD_BYTES;
use strata::{BulkLoad, Db, FieldNames, Record, TableBatch, Value, WriteOptions};

use crate::expr::number;

/// The input's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header line naming the fields (RFC 4180 quoting).
    Csv,
    /// One JSON object per line; blank lines are skipped.
    Jsonl,
}

impl Format {
    /// The format a file's extension suggests: `.jsonl`, `.ndjson` and `.json` are JSON lines,
    /// anything else CSV.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if ["jsonl", "ndjson", "json"].contains(&e.to_ascii_lowercase().as_str()) => {
                Format::Jsonl
            }
            _ => Format::Csv,
        }
    }
}

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The input's format.
    pub format: Format,
    /// Rows per atomic write, when not in bulk mode.
    pub batch_rows: usize,
    /// Bulk mode (inserts only, so not with `replace`): rows go into runs of about
    /// [`strata::table::RUN_BYTES`] loaded straight into table files (`Db::bulk_load`), each
    /// run one atomic load; a run whose key range meets stored rows goes through ordinary
    /// inserts in batches. Off, rows go through atomic writes of `batch_rows`.
    pub bulk: bool,
    /// Replace rows whose key exists (upsert) instead of failing on them.
    pub replace: bool,
    /// Show a progress bar (on standard error).
    pub progress: bool,
}

impl ImportOptions {
    /// Defaults for `format`: inserts in bulk mode, a progress bar when standard error is a
    /// terminal.
    pub fn new(format: Format) -> Self {
        ImportOptions {
            format,
            batch_rows: 1000,
            bulk: true,
            replace: false,
            progress: std::io::stderr().is_terminal(),
        }
    }
}

/// A CSV column's inferred type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ColumnType {
    /// Every cell was empty: the field is NULL in every row.
    Empty,
    /// Every non-empty cell is a 64-bit integer.
    Integer,
    /// Every non-empty cell is a number, some not integers.
    Float,
    /// Anything else.
    Text,
}

impl ColumnType {
    /// The type a table declares for a column of this type (an empty column: text).
    pub fn declared(self) -> strata::ColumnType {
        match self {
            ColumnType::Integer => strata::ColumnType::Int,
            ColumnType::Float => strata::ColumnType::Float,
            ColumnType::Empty | ColumnType::Text => strata::ColumnType::Text,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ColumnType::Empty => "empty",
            ColumnType::Integer => "integer",
            ColumnType::Float => "float",
            ColumnType::Text => "text",
        })
    }
}

/// What an import did.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// Rows written.
    pub rows: u64,
    /// Bytes of input.
    pub bytes: u64,
    /// Wall time of both passes.
    pub elapsed: Duration,
    /// The columns and their inferred types (CSV; empty for JSON lines).
    pub columns: Vec<(String, ColumnType)>,
}

impl ImportReport {
    /// Rows written per second.
    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Why an import stopped, and how much of it is committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// The input line at fault, when one is.
    pub line: Option<u64>,
    /// What is wrong.
    pub message: String,
    /// Rows committed before the failure (whole batches).
    pub imported: u64,
    /// The last input line of the committed rows (0: none).
    pub imported_through: u64,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{}", self.message)?;
        if self.imported == 0 {
            write!(f, "; nothing was imported")
        } else {
            write!(
                f,
                "; the {} rows through line {} were imported, nothing after them",
                self.imported, self.imported_through
            )
        }
    }
}

impl std::error::Error for ImportError {}

fn fail(line: Option<u64>, message: impl Into<String>) -> ImportError {
    ImportError {
        line,
        message: message.into(),
        imported: 0,
        imported_through: 0,
    }
}

/// A cell's type alone.
fn cell_type(cell: &str) -> ColumnType {
    if cell.is_empty() {
        return ColumnType::Empty;
    }
    let digits = cell.strip_prefix('-').unwrap_or(cell);
    let (whole, _) = digits.split_once(['.', 'e', 'E']).unwrap_or((digits, ""));
    if whole.len() > 1 && whole.starts_with('0') {
        return ColumnType::Text; // `007`, `0123.5`: an identifier, not a quantity
    }
    if cell.starts_with('+') {
        return ColumnType::Text;
    }
    match number(cell) {
        Some(Value::Int(_)) => ColumnType::Integer,
        Some(_) => ColumnType::Float,
        None => ColumnType::Text,
    }
}

/// The value of `cell` in a column of type `column` (the cell's own type is at most it).
fn cell_value(cell: &str, column: ColumnType) -> Option<Value> {
    if cell.is_empty() {
        return None;
    }
    Some(match column {
        ColumnType::Integer => number(cell).unwrap_or_else(|| Value::Str(cell.to_owned())),
        ColumnType::Float => match number(cell) {
            Some(Value::Int(i)) => Value::Float(i as f64),
            Some(v) => v,
            None => Value::Str(cell.to_owned()),
        },
        ColumnType::Empty | ColumnType::Text => Value::Str(cell.to_owned()),
    })
}

/// A JSON value as a field value; nested arrays and objects are refused.
fn json_value(field: &str, v: serde_json::Value) -> Result<Value, String> {
    Ok(match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if n.is_u64() {
                return Err(format!(
                    "field {field:?}: {n} does not fit a 64-bit signed integer"
                ));
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => Value::Str(s),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
            return Err(format!(
                "field {field:?} is an array or object; only numbers, strings, booleans and \
                 null can be stored"
            ));
        }
    })
}

/// Reads rows of one format; `each` gets the line number, the record, and the bytes read so
/// far. In the check pass, `types` is filled; in the load pass, it is read. A CSV check pass
/// reads cells without building rows: its records are empty.
struct Input<'a> {
    path: &'a Path,
    format: Format,
    key: &'a [String],
}

type Sink<'s> = dyn FnMut(u64, Record, u64) -> Result<(), ImportError> + 's;

impl Input<'_> {
    fn open(&self) -> Result<File, ImportError> {
        File::open(self.path)
            .map_err(|e| fail(None, format!("cannot read {}: {e}", self.path.display())))
    }

    fn check_key(&self, line: u64, record: &Record) -> Result<(), ImportError> {
        for field in self.key {
            if record.value(field).is_null() {
                return Err(fail(
                    Some(line),
                    format!("the primary-key field {field:?} is missing or empty"),
                ));
            }
        }
        Ok(())
    }

    /// The CSV header, checked.
    fn csv_header(&self, reader: &mut csv::Reader<File>) -> Result<Vec<String>, ImportError> {
        let header = reader
            .headers()
            .map_err(|e| csv_error(&e, "the header"))?
            .iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if header.is_empty() || header.iter().all(String::is_empty) {
            return Err(fail(Some(1), "the header line names no fields"));
        }
        for (i, name) in header.iter().enumerate() {
            strata::table::catalog::validate_field(name)
                .map_err(|e| fail(Some(1), format!("column {}: {e}", i + 1)))?;
            if header[..i].contains(name) {
                return Err(fail(Some(1), format!("the column {name:?} appears twice")));
            }
        }
        for field in self.key {
            if !header.contains(field) {
                return Err(fail(
                    Some(1),
                    format!("the header has no column for the primary-key field {field:?}"),
                ));
            }
        }
        Ok(header)
    }

    fn csv(
        &self,
        types: &mut Vec<ColumnType>,
        check: bool,
        each: &mut Sink,
    ) -> Result<(), ImportError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(self.open()?);
        let header = self.csv_header(&mut reader)?;
        if check {
            *types = vec![ColumnType::Empty; header.len()];
        }
        // Cells are taken in name order, so a row's values are in its names' order; each
        // set of non-empty columns has its list of names made once and shared by its rows.
        let mut order: Vec<usize> = (0..header.len()).collect();
        order.sort_by(|&a, &b| header[a].cmp(&header[b]));
        let mut lists = NameLists::new(order.iter().map(|&i| header[i].as_str()).collect());
        let key_columns: Vec<(usize, &String)> = self
            .key
            .iter()
            .filter_map(|k| Some((header.iter().position(|h| h == k)?, k)))
            .collect();
        // Both passes read ahead on a second thread: parsing a line and checking or loading
        // the one before run side by side.
        read_csv(reader, |row, read| {
            let line = row.position().map_or(0, csv::Position::line);
            if let Some((_, field)) = key_columns.iter().find(|(i, _)| row[*i].is_empty()) {
                return Err(fail(
                    Some(line),
                    format!("the primary-key field {field:?} is missing or empty"),
                ));
            }
            let record = if check {
                for (ty, cell) in types.iter_mut().zip(row.iter()) {
                    // Text is the widest type: a text column's cells need no look.
                    if *ty != ColumnType::Text {
                        *ty = (*ty).max(cell_type(cell));
                    }
                }
                Record::new()
            } else {
                let mut values = Vec::with_capacity(order.len());
                lists.present.clear();
                for &i in &order {
                    let value = cell_value(&row[i], types[i]);
                    lists.present.push(value.is_some());
                    values.extend(value);
                }
                let names = lists
                    .current()
                    .map_err(|e| fail(Some(line), e.to_string()))?;
                Record::with_names(names, values).map_err(|e| fail(Some(line), e.to_string()))?
            };
            each(line, record, read)
        })
    }

    fn jsonl(&self, each: &mut Sink) -> Result<(), ImportError> {
        let mut reader = BufReader::new(self.open()?);
        let mut text = String::new();
        let mut line = 0u64;
        let mut read = 0u64;
        loop {
            text.clear();
            let n = match reader.read_line(&mut text) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(fail(Some(line + 1), "not UTF-8"));
                }
                Err(e) => return Err(fail(Some(line + 1), format!("cannot read: {e}"))),
            };
            line += 1;
            read += n as u64;
            if text.trim().is_empty() {
                continue;
            }
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text)
                .map_err(|e| {
                    let what = if e.is_data() {
                        "not a JSON object".to_owned()
                    } else {
                        format!("invalid JSON at column {}: {e}", e.column())
                    };
                    fail(Some(line), what)
                })?;
            let mut record = Record::new();
            for (field, v) in object {
                strata::table::catalog::validate_field(&field)
                    .map_err(|e| fail(Some(line), e.to_string()))?;
                let v = json_value(&field, v).map_err(|e| fail(Some(line), e))?;
                if !v.is_null() {
                    record.set(field, v);
                }
            }
            self.check_key(line, &record)?;
            each(line, record, read)?;
        }
    }

    fn rows(
        &self,
        types: &mut Vec<ColumnType>,
        check: bool,
        each: &mut Sink,
    ) -> Result<(), ImportError> {
        match self.format {
            Format::Csv => self.csv(types, check, each),
            Format::Jsonl => self.jsonl(each),
        }
    }
}

/// Rows a reading thread hands over at a time.
/// TUNING: enough that a hand-over costs nothing per row, few enough that the rows in flight
/// stay small and the loader starts at once.
const HANDOVER_ROWS: usize = 512;

/// Hand-overs in flight: the reading thread runs at most this far ahead.
const HANDOVER_DEPTH: usize = 4;

/// Rows read ahead and handed over, with the bytes read after each; the rows are read into
/// again when the batch comes back, so no memory is allocated on one thread and freed on the
/// other (which the allocator makes each thread wait on).
struct Handover {
    rows: Vec<csv::StringRecord>,
    read: Vec<u64>,
    len: usize,
    /// How reading ended, in the last batch.
    end: Option<Result<(), ImportError>>,
}

/// Reads the rows of `reader` and gives each to `each` with the bytes read through it, in
/// order, stopping at the first error (of reading or of `each`). A second thread reads
/// (parsing and checking the UTF-8) while `each` runs on this one.
fn read_csv(
    mut reader: csv::Reader<File>,
    mut each: impl FnMut(&csv::StringRecord, u64) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    std::thread::scope(|scope| {
        let (full, filled) = std::sync::mpsc::sync_channel::<Handover>(HANDOVER_DEPTH);
        let (empty, emptied) = std::sync::mpsc::channel::<Handover>();
        for _ in 0..=HANDOVER_DEPTH {
            let batch = Handover {
                rows: Vec::new(),
                read: Vec::new(),
                len: 0,
                end: None,
            };
            let _ = empty.send(batch);
        }
        // When this thread stops early, its ends of both channels close and the reader's
        // next send or receive fails: it stops too.
        scope.spawn(move || {
            while let Ok(mut batch) = emptied.recv() {
                batch.len = 0;
                while batch.len < HANDOVER_ROWS && batch.end.is_none() {
                    if batch.rows.len() == batch.len {
                        batch.rows.push(csv::StringRecord::new());
                        batch.read.push(0);
                    }
                    match reader.read_record(&mut batch.rows[batch.len]) {
                        Ok(true) => {
                            batch.read[batch.len] = reader.position().byte();
                            batch.len += 1;
                        }
                        Ok(false) => batch.end = Some(Ok(())),
                        Err(e) => batch.end = Some(Err(csv_error(&e, "a row"))),
                    }
                }
                let last = batch.end.is_some();
                if full.send(batch).is_err() || last {
                    return;
                }
            }
        });
        for mut batch in filled.iter() {
            for (row, &read) in batch.rows.iter().zip(&batch.read).take(batch.len) {
                each(row, read)?;
            }
            if let Some(end) = batch.end.take() {
                return end;
            }
            let _ = empty.send(batch);
        }
        Err(fail(None, "the reading thread stopped"))
    })
}

/// The field-name lists of CSV rows, one for each set of non-empty cells, made once and
/// shared by the rows of that set (a few sets at a time: a file's rows mostly miss their
/// optional fields in a few combinations).
struct NameLists<'h> {
    /// The columns' names, in name order.
    columns: Vec<&'h str>,
    /// Which columns the row being read has (not empty), in name order.
    present: Vec<bool>,
    /// Lists made, by the columns they hold.
    made: Vec<(Vec<bool>, FieldNames)>,
    /// The list replaced next when all places are taken.
    next: usize,
}

impl<'h> NameLists<'h> {
    /// TUNING: how many lists are kept; a row of another set makes its list again.
    const KEPT: usize = 8;

    fn new(columns: Vec<&'h str>) -> Self {
        NameLists {
            columns,
            present: Vec::new(),
            made: Vec::new(),
            next: 0,
        }
    }

    /// The list of the columns `present` marks.
    fn current(&mut self) -> strata::Result<&FieldNames> {
        if let Some(at) = self.made.iter().position(|(p, _)| *p == self.present) {
            return Ok(&self.made[at].1);
        }
        let names = self
            .columns
            .iter()
            .zip(&self.present)
            .filter_map(|(name, &present)| present.then_some(*name));
        let list = (self.present.clone(), FieldNames::new(names)?);
        let at = if self.made.len() < Self::KEPT {
            self.made.push(list);
            self.made.len() - 1
        } else {
            let at = self.next;
            self.made[at] = list;
            self.next = (at + 1) % Self::KEPT;
            at
        };
        Ok(&self.made[at].1)
    }
}

fn csv_error(e: &csv::Error, what: &str) -> ImportError {
    let line = e.position().map(csv::Position::line);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields, but the header has {expected_len}"),
        csv::ErrorKind::Utf8 { .. } => "not UTF-8".to_owned(),
        csv::ErrorKind::Io(io) => format!("cannot read {what}: {io}"),
        _ => format!("cannot parse {what}: {e}"),
    };
    fail(line, message)
}

fn progress_bar(show: bool, total: u64, message: &'static str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>9} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// The second pass's state: the rows not yet committed, with each one's line and key (to
/// name the culprit of a failed batch or run), and what the committed ones hold.
struct Loader<'a> {
    db: &'a Db,
    table: &'a str,
    key_fields: &'a [String],
    replace: bool,
    batch_rows: usize,
    /// Bulk mode: rows go into runs loaded straight into table files.
    bulk: Option<BulkLoad<'a>>,
    pending: Pending,
    /// Rows committed.
    imported: u64,
    /// The last line of the last committed row.
    imported_through: u64,
}

struct Pending {
    /// Batch mode's rows.
    batch: TableBatch,
    lines: Vec<u64>,
    /// Their primary keys, one after the other (as many values a row as the key has fields).
    keys: Vec<Value>,
}

impl Loader<'_> {
    /// An error at `line` that reports what is committed.
    fn error(&self, line: Option<u64>, message: String) -> ImportError {
        ImportError {
            line,
            message,
            imported: self.imported,
            imported_through: self.imported_through,
        }
    }

    /// Adds the row read at `line`; commits the batch or run when it is full. Returns whether
    /// it committed.
    fn add(&mut self, line: u64, record: Record) -> Result<bool, ImportError> {
        // The encoded size is at most the names and strings plus a few bytes a field; only
        // a record that might be too large is encoded here (the write encodes it anyway).
        let bound: usize = record
            .iter()
            .map(|(name, v)| name.len() + 16 + if let Value::Str(s) = v { s.len() } else { 0 })
            .sum();
        let len = if bound > MAX_RECORD_BYTES {
            record.encode().len()
        } else {
            0
        };
        if len > MAX_RECORD_BYTES {
            let message =
                format!("the record is {len} bytes; a record may have at most {MAX_RECORD_BYTES}");
            return Err(self.error(Some(line), message));
        }
        let keys = self.pending.keys.len();
        let key = self.key_fields.iter().map(|f| record.value(f).clone());
        self.pending.keys.extend(key);
        let full = match self.bulk.as_mut() {
            Some(bulk) => match bulk.insert(record) {
                Ok(full) => full,
                Err(e) => {
                    self.pending.keys.truncate(keys);
                    return Err(self.error(Some(line), e.to_string()));
                }
            },
            None => {
                if self.replace {
                    self.pending.batch.upsert(record);
                } else {
                    self.pending.batch.insert(record);
                }
                self.pending.batch.len() >= self.batch_rows
            }
        };
        self.pending.lines.push(line);
        if !full {
            return Ok(false);
        }
        self.commit()?;
        Ok(true)
    }

    /// Commits the pending rows: one atomic batch, or one bulk-load run.
    fn commit(&mut self) -> Result<(), ImportError> {
        if self.pending.lines.is_empty() {
            return Ok(());
        }
        let (result, committed) = match self.bulk.as_mut() {
            Some(bulk) => {
                let before = bulk.loaded();
                let result = bulk.commit();
                (result, (bulk.loaded() - before) as usize)
            }
            None => {
                let batch = std::mem::take(&mut self.pending.batch);
                let n = batch.len();
                match self.db.write(self.table, batch, WriteOptions::default()) {
                    Ok(()) => (Ok(()), n),
                    Err(e) => (Err(e), 0),
                }
            }
        };
        // What committed is a prefix of the pending rows, in input order.
        self.imported += committed as u64;
        if committed > 0 {
            self.imported_through = self.pending.lines[committed - 1];
        }
        if let Err(e) = result {
            let line = culprit(self.db, self.table, &e, &self.pending, committed);
            return Err(self.error(line, e.to_string()));
        }
        self.pending.lines.clear();
        self.pending.keys.clear();
        Ok(())
    }
}

/// Imports `path` into `table`. See the module docs for what is checked and what a failure
/// leaves behind.
pub fn import(
    db: &Db,
    table: &str,
    path: &Path,
    options: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    let start = Instant::now();
    let def = db.table(table).map_err(|e| fail(None, e.to_string()))?;
    let bytes = {
        let mut f = File::open(path)
            .map_err(|e| fail(None, format!("cannot read {}: {e}", path.display())))?;
        f.seek(std::io::SeekFrom::End(0))
            .map_err(|e| fail(None, format!("cannot read {}: {e}", path.display())))?
    };
    let input = Input {
        path,
        format: options.format,
        key: &def.primary_key,
    };

    // 1. Check every line and infer the columns' types.
    let mut types = check_pass(&input, &def.primary_key, options, bytes)?;

    // A CSV loaded into an empty table that declares no columns declares the columns and
    // types inferred from all its lines (SQL sees them; later writes are held to them).
    let declare = options.format == Format::Csv
        && def.columns.is_empty()
        && db
            .query(table, &strata::Query::default().limit(1))
            .map_err(|e| fail(None, e.to_string()))?
            .next()
            .is_none();

    // 2. Load in atomic batches.
    let bar = progress_bar(options.progress, bytes, "importing");
    let batch_rows = options.batch_rows.max(1);
    let bulk = if options.bulk && !options.replace {
        Some(db.bulk_load(table).map_err(|e| fail(None, e.to_string()))?)
    } else {
        None
    };
    let mut loader = Loader {
        db,
        table,
        key_fields: &def.primary_key,
        replace: options.replace,
        batch_rows,
        bulk,
        pending: Pending {
            batch: TableBatch::new(),
            lines: Vec::with_capacity(batch_rows),
            keys: Vec::with_capacity(batch_rows * def.primary_key.len()),
        },
        imported: 0,
        imported_through: 0,
    };
    let loaded = input.rows(&mut types, false, &mut |line, record, read| {
        if loader.add(line, record)? {
            bar.set_position(read);
        }
        Ok(())
    });
    if let Err(mut e) = loaded {
        // A line that passed the check and fails now (the file changed between the passes)
        // says what the batches before it committed, as a failed batch does.
        if e.imported == 0 {
            e.imported = loader.imported;
            e.imported_through = loader.imported_through;
        }
        return Err(e);
    }
    loader.commit()?;
    // Durable when the command returns.
    db.write(table, TableBatch::new(), WriteOptions::synced())
        .map_err(|e| loader.error(None, format!("syncing the logs: {e}")))?;
    bar.finish_and_clear();
    let columns: Vec<(String, ColumnType)> = match options.format {
        Format::Csv => {
            let mut reader = csv::Reader::from_reader(input.open()?);
            let header = input.csv_header(&mut reader)?;
            header.into_iter().zip(types).collect()
        }
        Format::Jsonl => Vec::new(),
    };
    if declare {
        let declared = columns
            .iter()
            .map(|(name, kind)| {
                let column = strata::ColumnDef::new(name, kind.declared());
                if def.primary_key.contains(name) {
                    column.not_null()
                } else {
                    column
                }
            })
            .collect();
        db.set_columns(table, declared)
            .map_err(|e| loader.error(None, format!("declaring the columns: {e}")))?;
    }
    Ok(ImportReport {
        rows: loader.imported,
        bytes,
        elapsed: start.elapsed(),
        columns,
    })
}

/// Pass one: reads every line, checks it and infers each CSV column's type from all its
/// cells; a CSV key column that holds non-integers is refused (a key cannot be a float).
fn check_pass(
    input: &Input<'_>,
    key_fields: &[String],
    options: &ImportOptions,
    bytes: u64,
) -> Result<Vec<ColumnType>, ImportError> {
    let mut types = Vec::new();
    let bar = progress_bar(options.progress, bytes, "checking");
    let mut rows = 0u64;
    input.rows(&mut types, true, &mut |_, _, read| {
        rows += 1;
        if rows.is_multiple_of(4096) {
            bar.set_position(read);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    if options.format == Format::Csv {
        let mut reader = csv::Reader::from_reader(input.open()?);
        let header = input.csv_header(&mut reader)?;
        for (name, ty) in header.iter().zip(&types) {
            if *ty == ColumnType::Float && key_fields.contains(name) {
                return Err(fail(
                    None,
                    format!(
                        "the primary-key column {name:?} holds numbers that are not \
                         integers, and a key cannot be a float"
                    ),
                ));
            }
        }
    }
    Ok(types)
}

/// The line of the row that made a batch or run fail, when the failure is a row's: a key
/// that exists (in the table, or earlier in the batch). The first `committed` pending rows
/// are in the table now, and not suspects.
fn culprit(
    db: &Db,
    table: &str,
    error: &strata::Error,
    pending: &Pending,
    committed: usize,
) -> Option<u64> {
    let lines = &pending.lines[committed..];
    if !matches!(error, strata::Error::Conflict(_)) {
        return lines.first().copied();
    }
    let mut seen = std::collections::HashSet::new();
    let width = pending.keys.len() / pending.lines.len().max(1);
    let keys = pending.keys[committed * width..].chunks(width.max(1));
    for (key, line) in keys.zip(lines) {
        let exists = db.get(table, key).ok().flatten().is_some();
        if exists || !seen.insert(format!("{key:?}")) {
            return Some(*line);
        }
    }
    lines.first().copied()
}

/// Reads a few bytes of `path` to tell whether it looks like JSON lines (its first non-blank
/// byte is `{`).
pub fn sniff(path: &Path) -> Option<Format> {
    let mut head = [0u8; 512];
    let n = File::open(path).ok()?.read(&mut head).ok()?;
    let first = head[..n].iter().find(|b| !b.is_ascii_whitespace())?;
    Some(if *first == b'{' {
        Format::Jsonl
    } else {
        Format::Csv
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_typed_by_their_text() {
        assert_eq!(cell_type(""), ColumnType::Empty);
        assert_eq!(cell_type("42"), ColumnType::Integer);
        assert_eq!(cell_type("-7"), ColumnType::Integer);
        assert_eq!(cell_type("0"), ColumnType::Integer);
        assert_eq!(cell_type("3.25"), ColumnType::Float);
        assert_eq!(cell_type("0.5"), ColumnType::Float);
        assert_eq!(cell_type("1e3"), ColumnType::Float);
        assert_eq!(cell_type("007"), ColumnType::Text);
        assert_eq!(cell_type("+7"), ColumnType::Text);
        assert_eq!(cell_type("12 "), ColumnType::Text);
        assert_eq!(cell_type("nan"), ColumnType::Text);
        assert_eq!(cell_type("inf"), ColumnType::Text);
        assert_eq!(cell_type("99999999999999999999"), ColumnType::Text);
        assert_eq!(cell_type("Seattle"), ColumnType::Text);
    }

    #[test]
    fn a_column_takes_the_widest_type_of_its_cells() {
        let widest = |cells: &[&str]| {
            cells
                .iter()
                .map(|c| cell_type(c))
                .fold(ColumnType::Empty, ColumnType::max)
        };
        assert_eq!(widest(&["1", "", "2"]), ColumnType::Integer);
        assert_eq!(widest(&["1", "2.5"]), ColumnType::Float);
        assert_eq!(widest(&["1", "x"]), ColumnType::Text);
        assert_eq!(cell_value("3", ColumnType::Float), Some(Value::Float(3.0)));
        assert_eq!(
            cell_value("3", ColumnType::Text),
            Some(Value::Str("3".into()))
        );
        assert_eq!(cell_value("", ColumnType::Integer), None);
    }

    #[test]
    fn json_values_are_scalars() {
        let v = |text: &str| json_value("f", serde_json::from_str(text).unwrap());
        assert_eq!(v("12"), Ok(Value::Int(12)));
        assert_eq!(v("1.5"), Ok(Value::Float(1.5)));
        assert_eq!(v("\"x\""), Ok(Value::Str("x".into())));
        assert_eq!(v("true"), Ok(Value::Bool(true)));
        assert_eq!(v("null"), Ok(Value::Null));
        assert!(v("[1]").unwrap_err().contains("array or object"));
        assert!(v("18446744073709551615").unwrap_err().contains("64-bit"));
    }
}
