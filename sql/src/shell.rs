//! The SQL shell behind `strata sql` (the `strata-sql` binary): statements separated by `;`,
//! from `-c`, a file, standard input, or typed at a prompt with history; meta-commands
//! `\d`, `\d TABLE`, `\timing`, `\q`, `\?`; results as a table, CSV or JSON lines.

use std::io::Write;
use std::time::Instant;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::arrow::util::pretty::pretty_format_batches_with_options;
use strata::{Projection, Value};

use crate::SqlSession;
use crate::schema::TableSchema;
use crate::values::value_at;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A boxed table and a row count (DML: `INSERT 2`, `UPDATE 1`, `DELETE 3`).
    Table,
    /// A header line and RFC 4180 rows.
    Csv,
    /// One JSON object per row, as `strata query --format json` prints.
    Json,
}

/// What the shell does after a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read on.
    Continue,
    /// `\q`.
    Quit,
}

/// Splits `text` into complete statements (each ending at a `;` outside quotes and
/// comments, without it) and what is left after the last one.
pub fn split_statements(text: &str) -> (Vec<String>, String) {
    let mut statements = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        // A doubled quote is one quote inside.
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b';' => {
                let statement = text[start..i].trim();
                if !is_blank(statement) {
                    statements.push(statement.to_owned());
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let rest = text
        .get(start..)
        .unwrap_or_default()
        .trim_start()
        .to_owned();
    (statements, rest)
}

/// Whether `sql` is only whitespace and comments.
fn is_blank(sql: &str) -> bool {
    sql.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with("--")
    })
}

/// A shell over one session, printing to `out`.
pub struct Shell<'s, W: Write> {
    session: &'s SqlSession,
    format: Format,
    timing: bool,
    out: W,
}

impl<'s, W: Write> Shell<'s, W> {
    /// A shell printing results to `out` in `format`.
    pub fn new(session: &'s SqlSession, format: Format, out: W) -> Self {
        Shell {
            session,
            format,
            timing: false,
            out,
        }
    }

    /// Runs a script: its statements in order, and each line that starts with `\\` between
    /// them as a meta-command, stopping at the first that fails (its error is the result);
    /// a last statement without its `;` runs too.
    pub fn run_script(&mut self, text: &str) -> Result<(), String> {
        let mut buffer = String::new();
        for line in text.lines() {
            if is_blank(&buffer) && line.trim_start().starts_with('\\') {
                buffer.clear();
                if self.meta(line.trim_start()[1..].trim())? == Flow::Quit {
                    return Ok(());
                }
                continue;
            }
            buffer.push_str(line);
            buffer.push('\n');
            let (statements, rest) = split_statements(&buffer);
            for statement in statements {
                self.statement(&statement)?;
            }
            buffer = rest;
        }
        if !is_blank(&buffer) {
            self.statement(buffer.trim())?;
        }
        Ok(())
    }

    /// Runs one statement and prints its result.
    pub fn statement(&mut self, sql: &str) -> Result<(), String> {
        let start = Instant::now();
        let batches = self.session.execute(sql).map_err(|e| e.to_string())?;
        let elapsed = start.elapsed();
        self.print(sql, &batches).map_err(|e| e.to_string())?;
        if self.timing {
            writeln!(self.out, "Time: {:.3} ms", elapsed.as_secs_f64() * 1e3)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Runs a meta-command (the text after `\`).
    pub fn meta(&mut self, command: &str) -> Result<Flow, String> {
        let mut words = command.split_whitespace();
        let out = |e: std::io::Error| e.to_string();
        match (words.next(), words.next()) {
            (Some("q" | "quit"), None) => return Ok(Flow::Quit),
            (Some("timing"), None) => {
                self.timing = !self.timing;
                let state = if self.timing { "on" } else { "off" };
                writeln!(self.out, "Timing is {state}.").map_err(out)?;
            }
            (Some("d"), None) => self.list_tables().map_err(|e| e.to_string())?,
            (Some("d"), Some(table)) => self.describe(table)?,
            (Some("?" | "h" | "help"), None) => writeln!(
                self.out,
                "\\d           list tables\n\\d TABLE     describe a table\n\\timing      \
                 show each statement's time (toggle)\n\\q           quit\n\
                 Statements end with ';'."
            )
            .map_err(out)?,
            _ => return Err(format!("unknown command \\{command} (\\? lists them)")),
        }
        Ok(Flow::Continue)
    }

    fn list_tables(&mut self) -> std::io::Result<()> {
        let tables = self.session.db().tables();
        if tables.is_empty() {
            return writeln!(self.out, "No tables.");
        }
        for t in tables {
            let indexes: Vec<&str> = t.indexes.iter().map(|ix| ix.name.as_str()).collect();
            write!(self.out, "{} (key: {})", t.name, t.primary_key.join(", "))?;
            if !indexes.is_empty() {
                write!(self.out, ", indexes: {}", indexes.join(", "))?;
            }
            writeln!(self.out)?;
        }
        Ok(())
    }

    fn describe(&mut self, table: &str) -> Result<(), String> {
        let db = self.session.db();
        let def = db.table(table).map_err(|e| e.to_string())?;
        let schema = TableSchema::infer(db, table).map_err(|e| e.to_string())?;
        let how = if def.columns.is_empty() {
            "inferred from its rows"
        } else {
            "declared"
        };
        let io = |e: std::io::Error| e.to_string();
        writeln!(self.out, "Table {table} (columns {how})").map_err(io)?;
        let width = schema
            .columns
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(0)
            .max(6);
        writeln!(self.out, "  {:width$}  {:8}  notes", "column", "type").map_err(io)?;
        for c in &schema.columns {
            let mut notes = Vec::new();
            if let Some(at) = def.primary_key.iter().position(|k| k == &c.name) {
                notes.push(format!("primary key ({})", at + 1));
            }
            if def.columns.iter().any(|d| d.name == c.name && d.not_null) {
                notes.push("not null".into());
            }
            if c.mixed {
                notes.push("mixed values".into());
            }
            let line = format!(
                "  {:width$}  {:8}  {}",
                c.name,
                c.kind.sql_name(),
                notes.join(", ")
            );
            writeln!(self.out, "{}", line.trim_end()).map_err(io)?;
        }
        if !def.indexes.is_empty() {
            writeln!(self.out, "Indexes:").map_err(io)?;
        }
        for ix in &def.indexes {
            let mut line = format!("  {} ({})", ix.name, ix.fields.join(", "));
            if ix.unique {
                line.push_str(" unique");
            }
            match &ix.projection {
                Projection::KeysOnly => {}
                Projection::Include(fields) => {
                    line.push_str(&format!(" include ({})", fields.join(", ")))
                }
                Projection::All => line.push_str(" include all"),
            }
            writeln!(self.out, "{line}").map_err(io)?;
        }
        Ok(())
    }

    fn print(
        &mut self,
        sql: &str,
        batches: &[RecordBatch],
    ) -> Result<(), Box<dyn std::error::Error>> {
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let columns = batches.first().map_or(0, RecordBatch::num_columns);
        if batches.is_empty() || columns == 0 {
            if self.format == Format::Table {
                writeln!(self.out, "OK")?;
            }
            return Ok(());
        }
        match self.format {
            Format::Table => {
                if let Some(tag) = dml_tag(sql, batches) {
                    writeln!(self.out, "{tag}")?;
                    return Ok(());
                }
                let options = FormatOptions::default().with_null("NULL");
                writeln!(
                    self.out,
                    "{}",
                    pretty_format_batches_with_options(batches, &options)?
                )?;
                let s = if rows == 1 { "" } else { "s" };
                writeln!(self.out, "({rows} row{s})")?;
            }
            Format::Csv => {
                let schema = batches[0].schema();
                let header: Vec<String> =
                    schema.fields().iter().map(|f| csv_cell(f.name())).collect();
                writeln!(self.out, "{}", header.join(","))?;
                let options = FormatOptions::default();
                for batch in batches {
                    let formatters = batch
                        .columns()
                        .iter()
                        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                        .collect::<Result<Vec<_>, _>>()?;
                    for row in 0..batch.num_rows() {
                        let cells: Vec<String> = formatters
                            .iter()
                            .zip(batch.columns())
                            .map(|(f, c)| {
                                if c.is_null(row) {
                                    String::new()
                                } else {
                                    csv_cell(&f.value(row).to_string())
                                }
                            })
                            .collect();
                        writeln!(self.out, "{}", cells.join(","))?;
                    }
                }
            }
            Format::Json => {
                for batch in batches {
                    let schema = batch.schema();
                    for row in 0..batch.num_rows() {
                        let mut object = serde_json::Map::new();
                        for (field, column) in schema.fields().iter().zip(batch.columns()) {
                            object.insert(field.name().clone(), json_cell(column, row)?);
                        }
                        writeln!(self.out, "{}", serde_json::Value::Object(object))?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `INSERT 2`, `UPDATE 1`, `DELETE 3` for a DML statement's count.
fn dml_tag(sql: &str, batches: &[RecordBatch]) -> Option<String> {
    let word = sql.split_whitespace().next()?.to_uppercase();
    let tag = match word.as_str() {
        "INSERT" | "REPLACE" => "INSERT",
        "UPDATE" => "UPDATE",
        "DELETE" => "DELETE",
        _ => return None,
    };
    let [batch] = batches else { return None };
    if batch.num_columns() != 1
        || batch.num_rows() != 1
        || batch.schema().field(0).name() != "count"
    {
        return None;
    }
    let count = value_at(batch.column(0), 0, "count").ok()?;
    Some(format!("{tag} {}", count.sql_literal()))
}

fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// A cell as JSON: numbers, text, booleans and NULL as themselves, bytes as hex text, any
/// other type as its text.
fn json_cell(
    column: &datafusion::arrow::array::ArrayRef,
    row: usize,
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    Ok(match value_at(column, row, "") {
        Ok(Value::Null) => serde_json::Value::Null,
        Ok(Value::Bool(b)) => serde_json::Value::Bool(b),
        Ok(Value::Int(i)) => serde_json::Value::from(i),
        Ok(Value::Float(f)) => serde_json::Number::from_f64(f)
            .map(serde_json::Value::Number)
            .unwrap_or_else(|| serde_json::Value::String(f.to_string())),
        Ok(Value::Str(s)) => serde_json::Value::String(s),
        Ok(Value::Bytes(b)) => {
            serde_json::Value::String(b.iter().map(|x| format!("{x:02x}")).collect())
        }
        Err(_) => {
            let options = FormatOptions::default();
            let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
            serde_json::Value::String(formatter.value(row).to_string())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        let (done, rest) = split_statements(
            "SELECT 'a;b'; -- c;d\nSELECT \"x;\" FROM t /* ; */ WHERE s = 'it''s;';\nSELECT 3",
        );
        assert_eq!(
            done,
            vec![
                "SELECT 'a;b'",
                "-- c;d\nSELECT \"x;\" FROM t /* ; */ WHERE s = 'it''s;'"
            ]
        );
        assert_eq!(rest, "SELECT 3");
        let (done, rest) = split_statements(";; -- only a comment\n;");
        assert!(done.is_empty(), "{done:?}");
        assert_eq!(rest, "");
    }

    #[test]
    fn csv_cells_are_quoted_when_they_must_be() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
