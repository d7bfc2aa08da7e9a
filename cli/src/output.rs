//! Printing rows and plans: an aligned table, JSON (one object per row), or CSV.

use std::io::{self, Write};

use strata::{Access, Candidate};
use strata::{Analysis, Plan, Record, TableDef, Value};

/// How rows are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns with a header, for people.
    Table,
    /// One JSON object per line, fields in the record's (or `--select`'s) order.
    Json,
    /// CSV with a header; NULL is an empty cell (as `import` reads it back).
    Csv,
}

/// The rows a table or CSV printer reads before fixing its columns (for a query without
/// `--select`; JSON needs no columns).
pub const COLUMN_SAMPLE_ROWS: usize = 1000;

/// A value as JSON: bytes as a `\x`-prefixed hex string (PostgreSQL's `bytea` text), a
/// non-finite float as null.
pub fn json_value(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(x) => serde_json::Value::from(*x),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::Bytes(b) => serde_json::Value::String(hex(b)),
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("\\x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A value as a cell: text unquoted, a float always with a decimal point or exponent (so it
/// reads back as a float), NULL as `null_text`.
pub fn cell(value: &Value, null_text: &str) -> String {
    match value {
        Value::Null => null_text.to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => format!("{x:?}"),
        Value::Str(s) => s.clone(),
        Value::Bytes(b) => hex(b),
    }
}

/// One record as a JSON object, its fields in the order of `columns` when given.
pub fn record_json(record: &Record, columns: Option<&[String]>) -> String {
    let mut out = String::from("{");
    let mut field = |name: &str, value: &Value| {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String(name.to_owned()).to_string());
        out.push(':');
        out.push_str(&json_value(value).to_string());
    };
    match columns {
        Some(columns) => columns.iter().for_each(|c| field(c, record.value(c))),
        None => record.iter().for_each(|(k, v)| field(k, v)),
    }
    out.push('}');
    out
}

/// The columns to show for `rows`: `selected` when given, else the key fields, then every
/// other field in the order first seen.
pub fn columns(selected: Option<&[String]>, key: &[String], rows: &[Record]) -> Vec<String> {
    if let Some(selected) = selected {
        return selected.to_vec();
    }
    let mut columns: Vec<String> = key.to_vec();
    for row in rows {
        for (name, _) in row.iter() {
            if !columns.iter().any(|c| c == name) {
                columns.push(name.to_owned());
            }
        }
    }
    columns
}

/// Prints rows as an aligned table, streaming: the column widths and alignment come from a
/// sample of the first rows (a longer cell later just widens its line). Numbers are
/// right-aligned; NULL shows as `NULL`.
pub struct TablePrinter {
    columns: Vec<String>,
    widths: Vec<usize>,
    numeric: Vec<bool>,
}

impl TablePrinter {
    /// A printer for `columns`, sized to `sample`.
    pub fn new(columns: Vec<String>, sample: &[Record]) -> Self {
        let widths = columns
            .iter()
            .map(|c| {
                sample
                    .iter()
                    .map(|r| cell(r.value(c), "NULL").chars().count())
                    .chain([c.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let numeric = columns
            .iter()
            .map(|c| {
                sample
                    .iter()
                    .all(|r| matches!(r.value(c), Value::Int(_) | Value::Float(_) | Value::Null))
            })
            .collect();
        TablePrinter {
            columns,
            widths,
            numeric,
        }
    }

    fn line(&self, out: &mut impl Write, values: &[String], header: bool) -> io::Result<()> {
        let mut text = String::new();
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                text.push_str(" | ");
            }
            let pad = self.widths[i].saturating_sub(v.chars().count());
            if self.numeric[i] && !header {
                text.push_str(&" ".repeat(pad));
                text.push_str(v);
            } else {
                text.push_str(v);
                text.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", text.trim_end())
    }

    /// The header line and the rule under it.
    pub fn header(&self, out: &mut impl Write) -> io::Result<()> {
        self.line(out, &self.columns, true)?;
        let rule: Vec<String> = self.widths.iter().map(|w| "-".repeat(*w)).collect();
        writeln!(out, "{}", rule.join("-+-"))
    }

    /// One row.
    pub fn row(&self, out: &mut impl Write, row: &Record) -> io::Result<()> {
        let cells: Vec<String> = self
            .columns
            .iter()
            .map(|c| cell(row.value(c), "NULL"))
            .collect();
        self.line(out, &cells, false)
    }

    /// The row count.
    pub fn footer(&self, out: &mut impl Write, rows: u64) -> io::Result<()> {
        writeln!(out, "({rows} row{})", if rows == 1 { "" } else { "s" })
    }
}

/// Prints `rows` as a table in one go (see [`TablePrinter`]).
pub fn print_table(out: &mut impl Write, columns: &[String], rows: &[Record]) -> io::Result<()> {
    let printer = TablePrinter::new(columns.to_vec(), rows);
    printer.header(out)?;
    for row in rows {
        printer.row(out, row)?;
    }
    printer.footer(out, rows.len() as u64)
}

/// Writes the CSV header.
pub fn csv_header(out: &mut csv::Writer<impl Write>, columns: &[String]) -> io::Result<()> {
    out.write_record(columns).map_err(io::Error::other)
}

/// Writes one row as CSV.
pub fn csv_row(
    out: &mut csv::Writer<impl Write>,
    columns: &[String],
    row: &Record,
) -> io::Result<()> {
    out.write_record(columns.iter().map(|c| cell(row.value(c), "")))
        .map_err(io::Error::other)
}

/// What `explain_analyze` measured, as JSON: counts, and times in milliseconds.
fn actual_json(analysis: &Analysis) -> serde_json::Value {
    let a = &analysis.actual;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    serde_json::json!({
        "rows_read": a.rows_read,
        "fetches": a.fetches,
        "fetches_merged": a.fetches_merged,
        "rows_matched": a.rows_matched,
        "rows_returned": a.rows_returned,
        "plan_ms": ms(a.plan_time),
        "read_ms": ms(a.read_time),
        "fetch_ms": ms(a.fetch_time),
        "filter_ms": ms(a.filter_time),
        "sort_ms": ms(a.sort_time),
        "total_ms": ms(analysis.total_time),
    })
}

/// One candidate plan as JSON, its fields in this order.
#[derive(serde::Serialize)]
struct CandidateJson<'p> {
    plan: &'static str,
    index: Option<&'p str>,
    estimated_rows: f64,
    cost: f64,
    rows_read: f64,
    stops_early: bool,
    access: &'p Access,
    formula: String,
}

impl<'p> CandidateJson<'p> {
    fn new(c: &'p Candidate) -> Self {
        CandidateJson {
            plan: c.plan,
            index: c.index.as_deref(),
            estimated_rows: c.estimated_rows,
            cost: c.cost,
            rows_read: c.rows_read,
            stops_early: c.stops_early,
            access: &c.access,
            formula: c.formula.to_string(),
        }
    }
}

/// A plan as JSON, its fields in this order.
#[derive(serde::Serialize)]
struct PlanJson<'p> {
    plan: &'static str,
    index: Option<&'p str>,
    estimated_rows: f64,
    cost: f64,
    reason: &'p str,
    /// What each part of the `WHERE` keeps alone.
    estimates: &'p [strata::PartEstimate],
    candidates: Vec<CandidateJson<'p>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<serde_json::Value>,
}

/// A plan as one JSON object: the chosen plan's `plan` (`scan`, `index`, `primary_key` or
/// `union`), `index`, `estimated_rows` and `cost`, the `reason`, what each part of the
/// `WHERE` keeps alone (`estimates`: `part` and `rows`), and every candidate with the same
/// fields (and how it reads), cheapest first; with `analysis`, also what running it did
/// (`actual`: counts, and times in milliseconds).
pub fn plan_json(plan: &Plan, analysis: Option<&Analysis>) -> String {
    let json = PlanJson {
        plan: plan.chosen.plan,
        index: plan.chosen.index.as_deref(),
        estimated_rows: plan.chosen.estimated_rows,
        cost: plan.chosen.cost,
        reason: &plan.reason,
        estimates: &plan.estimates,
        candidates: plan.candidates.iter().map(CandidateJson::new).collect(),
        actual: analysis.map(actual_json),
    };
    serde_json::to_string(&json).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::record;

    #[test]
    fn rows_print_as_json_objects_in_the_selected_order() {
        let r = record! { "id" => 1, "name" => "Ada \"the\" first", "score" => 2.0,
        "photo" => vec![1u8, 255], "nick" => None::<&str> };
        assert_eq!(
            record_json(&r, Some(&["score".into(), "id".into(), "none".into()])),
            r#"{"score":2.0,"id":1,"none":null}"#
        );
        let all = record_json(&r, None);
        let parsed: serde_json::Value = serde_json::from_str(&all).unwrap();
        assert_eq!(parsed["name"], "Ada \"the\" first");
        assert_eq!(parsed["photo"], "\\x01ff");
        assert_eq!(parsed["nick"], serde_json::Value::Null);
    }

    #[test]
    fn cells_read_back_as_their_type() {
        assert_eq!(cell(&Value::Float(3.0), ""), "3.0");
        assert_eq!(cell(&Value::Int(3), ""), "3");
        assert_eq!(cell(&Value::Null, ""), "");
        assert_eq!(cell(&Value::Null, "NULL"), "NULL");
    }

    #[test]
    fn a_table_aligns_its_columns() {
        let rows = vec![
            record! { "id" => 7, "town" => "Redmond" },
            record! { "id" => 12, "town" => "Ely", "vip" => true },
        ];
        let columns = columns(None, &["id".into()], &rows);
        assert_eq!(columns, ["id", "town", "vip"]);
        let mut out = Vec::new();
        print_table(&mut out, &columns, &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id | town    | vip\n\
             ---+---------+-----\n \
             7 | Redmond | NULL\n\
             12 | Ely     | true\n\
             (2 rows)\n"
        );
    }
}

/// Prints `rows` in `format`, streaming: the table and CSV printers fix their columns from
/// the first rows.
pub fn print_rows(
    def: &TableDef,
    selected: Option<&[String]>,
    format: Format,
    mut rows: impl Iterator<Item = Result<Record, String>>,
) -> Result<(), PrintError> {
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    {
        match format {
            Format::Json => {
                for row in rows {
                    writeln!(stdout, "{}", record_json(&row?, selected))?;
                }
            }
            Format::Table | Format::Csv => {
                let mut sample = Vec::new();
                for row in rows.by_ref() {
                    sample.push(row?);
                    if sample.len() == COLUMN_SAMPLE_ROWS {
                        break;
                    }
                }
                let columns = columns(selected, &def.primary_key, &sample);
                if matches!(format, Format::Csv) {
                    let mut csv = csv::Writer::from_writer(&mut stdout);
                    csv_header(&mut csv, &columns)?;
                    for row in &sample {
                        csv_row(&mut csv, &columns, row)?;
                    }
                    for row in rows {
                        csv_row(&mut csv, &columns, &row?)?;
                    }
                    csv.flush()?;
                } else {
                    let printer = TablePrinter::new(columns, &sample);
                    printer.header(&mut stdout)?;
                    let mut n = 0u64;
                    for row in &sample {
                        printer.row(&mut stdout, row)?;
                        n += 1;
                    }
                    for row in rows {
                        printer.row(&mut stdout, &row?)?;
                        n += 1;
                    }
                    printer.footer(&mut stdout, n)?;
                }
            }
        }
    }
    stdout.flush()?;
    Ok(())
}

/// Why printing rows stopped.
#[derive(Debug)]
pub enum PrintError {
    /// The query failed.
    Query(String),
    /// Standard output failed.
    Io(io::Error),
}

impl From<String> for PrintError {
    fn from(e: String) -> Self {
        PrintError::Query(e)
    }
}

impl From<io::Error> for PrintError {
    fn from(e: io::Error) -> Self {
        PrintError::Io(e)
    }
}

/// `strata stats`'s text: the row count, then per field its distinct count, nulls, range and
/// most common values.
pub fn stats_text(table: &str, stats: &strata::TableStats) -> String {
    let mut text = format!(
        "{table}: {} rows, {:.0} bytes a row on average",
        stats.row_count, stats.avg_row_bytes
    );
    if stats.collected_rows > 0 && stats.collected_rows != stats.row_count {
        text.push_str(&format!(
            " (distributions from {} rows)",
            stats.collected_rows
        ));
    }
    if stats.columns.is_empty() {
        text.push_str(
            "
no field statistics yet: `strata analyze` gathers them",
        );
    }
    for (name, c) in &stats.columns {
        let range = match (&c.min, &c.max) {
            (Some(min), Some(max)) => format!(", {min} to {max}"),
            _ => String::new(),
        };
        text.push_str(&format!(
            "
  {name}: {:.0} distinct, {:.1} % null{range}, {} histogram bounds",
            c.distinct,
            c.null_fraction * 100.0,
            c.histogram.bounds().len()
        ));
        if !c.most_common.is_empty() {
            let common: Vec<String> = c
                .most_common
                .iter()
                .take(5)
                .map(|(v, f)| format!("{v} {:.1} %", f * 100.0))
                .collect();
            let more = c.most_common.len().saturating_sub(5);
            text.push_str(&format!(
                "
    most common: {}{}",
                common.join(", "),
                if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                }
            ));
        }
    }
    for p in &stats.prefixes {
        text.push_str(&format!(
            "
  ({}): {:.0} distinct",
            p.fields.join(", "),
            p.distinct
        ));
    }
    text
}
