//! The shell (`strata-sql`, run as `strata sql`) as a whole process: scripted sessions with
//! golden output, and errors as one line with a non-zero exit in `-c`, `-f` and script mode.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn shell(db: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata-sql"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn ok(db: &Path, args: &[&str], stdin: &str) -> String {
    let out = shell(db, args, stdin);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn database() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "-c",
            "CREATE TABLE people (id BIGINT PRIMARY KEY, name VARCHAR NOT NULL, town VARCHAR);
             INSERT INTO people VALUES (1, 'Ada', 'Ely'), (2, 'Bob', NULL), (3, 'Cy, Jr.', 'Rome');
             CREATE INDEX by_town ON people (town) INCLUDE (name)",
        ],
        "",
    );
    dir
}

const SCRIPT: &str = r"\d
\d people
-- a comment
SELECT id, name, town
  FROM people
 WHERE id < 3
 ORDER BY id;
UPDATE people SET town = 'York' WHERE town IS NULL;
SELECT town, count(*) AS n FROM people GROUP BY town ORDER BY town;
DELETE FROM people WHERE id = 3;
\q
SELECT 'never';
";

const GOLDEN: &str = "\
people (key: id), indexes: by_town
Table people (columns declared)
  column  type      notes
  id      BIGINT    primary key (1), not null
  name    VARCHAR   not null
  town    VARCHAR
Indexes:
  by_town (town) include (name)
+----+------+------+
| id | name | town |
+----+------+------+
| 1  | Ada  | Ely  |
| 2  | Bob  | NULL |
+----+------+------+
(2 rows)
UPDATE 1
+------+---+
| town | n |
+------+---+
| Ely  | 1 |
| Rome | 1 |
| York | 1 |
+------+---+
(3 rows)
DELETE 1
";

#[test]
fn a_scripted_session_prints_its_golden_output() {
    let db = database();
    assert_eq!(ok(db.path(), &[], SCRIPT), GOLDEN);
    // The same script from a file.
    let db = database();
    let file = db.path().join("script.sql");
    std::fs::write(&file, SCRIPT).unwrap();
    assert_eq!(ok(db.path(), &["-f", file.to_str().unwrap()], ""), GOLDEN);
}

#[test]
fn csv_and_json_formats() {
    let db = database();
    let sql = "SELECT id, name, town FROM people ORDER BY id";
    assert_eq!(
        ok(db.path(), &["--format", "csv", "-c", sql], ""),
        "id,name,town\n1,Ada,Ely\n2,Bob,\n3,\"Cy, Jr.\",Rome\n"
    );
    assert_eq!(
        ok(db.path(), &["--format", "json", "-c", sql], ""),
        "{\"id\":1,\"name\":\"Ada\",\"town\":\"Ely\"}\n\
         {\"id\":2,\"name\":\"Bob\",\"town\":null}\n\
         {\"id\":3,\"name\":\"Cy, Jr.\",\"town\":\"Rome\"}\n"
    );
}

#[test]
fn an_error_is_one_line_and_a_failure_status_and_stops_the_script() {
    let db = database();
    for (args, stdin) in [
        (vec!["-c", "SELEC 1"], ""),
        (vec!["-c", "SELECT * FROM nowhere"], ""),
        (
            vec!["-c", "INSERT INTO people VALUES (9, 'Zed', 'Ely', 'extra')"],
            "",
        ),
        (
            vec!["-c", "INSERT INTO people VALUES (1, 'Again', 'Ely')"],
            "",
        ),
        (vec!["-c", "SELECT name + 1 FROM people"], ""),
        (
            vec![],
            "SELECT 1;\nBOGUS;\nINSERT INTO people VALUES (7, 'Late', 'Ely');\n",
        ),
    ] {
        let out = shell(db.path(), &args, stdin);
        assert_eq!(out.status.code(), Some(1), "{args:?} {stdin:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("strata sql: "), "{err}");
    }
    // The script stopped at BOGUS: row 7 was not inserted.
    assert_eq!(
        ok(
            db.path(),
            &[
                "--format",
                "csv",
                "-c",
                "SELECT count(*) AS n FROM people WHERE id = 7"
            ],
            ""
        ),
        "n\n0\n"
    );
    let out = shell(Path::new("/nonexistent/db"), &["-c", "SELECT 1"], "");
    assert_eq!(out.status.code(), Some(1));
}
