//! sqllogictest-style files (`tests/slt/*.slt`), run against a fresh database each.
//!
//! ```text
//! statement ok                  -- the statement succeeds
//! CREATE TABLE t (…)
//!
//! statement error <text>        -- it fails, its message containing <text>
//! INSERT INTO t VALUES (1)
//!
//! query [rowsort]               -- its rows, columns joined by `|`, NULL as NULL
//! SELECT a, b FROM t
//! ----
//! 1|x
//!
//! connection <name>             -- later records run in session <name> (default: main)
//! ```
//!
//! Records are separated by blank lines; `#` starts a comment line.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::{Db, Options};
use strata_sql::SqlSession;
use strata_sql::datafusion::arrow::array::RecordBatch;
use strata_sql::datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

fn rendered(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

fn run_file(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), Options::default()).unwrap());
    let mut sessions: BTreeMap<String, SqlSession> = BTreeMap::new();
    let mut current = "main".to_owned();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut records = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let at = i + 1;
        let header = line;
        i += 1;
        if let Some(name) = header.strip_prefix("connection ") {
            current = name.trim().to_owned();
            continue;
        }
        let mut sql = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let sql = sql.join("\n");
        let mut expected = Vec::new();
        if i < lines.len() && lines[i].trim() == "----" {
            i += 1;
            while i < lines.len() && !lines[i].trim().is_empty() {
                expected.push(lines[i].trim_end().to_owned());
                i += 1;
            }
        }
        let session = sessions
            .entry(current.clone())
            .or_insert_with(|| SqlSession::new(Arc::clone(&db)).unwrap());
        let result = session.execute(&sql);
        let place = format!("{name}:{at}: {sql}");
        records += 1;
        if header == "statement ok" {
            if let Err(e) = result {
                panic!("{place}\nfailed: {e}");
            }
        } else if let Some(wanted) = header.strip_prefix("statement error") {
            match result {
                Ok(_) => panic!("{place}\nsucceeded; expected an error"),
                Err(e) => assert!(
                    e.to_string().contains(wanted.trim()),
                    "{place}\nfailed with {e:?}: {e}\nexpected it to say {:?}",
                    wanted.trim()
                ),
            }
        } else if let Some(mode) = header.strip_prefix("query") {
            let batches = result.unwrap_or_else(|e| panic!("{place}\nfailed: {e}"));
            let mut rows = rendered(&batches);
            if mode.trim() == "rowsort" {
                rows.sort();
                expected.sort();
            }
            assert_eq!(rows, expected, "{place}");
        } else {
            panic!("{name}:{at}: unknown record {header:?}");
        }
    }
    assert!(records > 0, "{name} has no records");
}

#[test]
fn sqllogictest_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "the slt files are missing: {files:?}");
    for file in files {
        run_file(&file);
    }
}
