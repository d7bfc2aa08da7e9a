//! Drives the real `strata` binary: import, query in every format, explain, get, the
//! administration commands, the demo, and what every mistake prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value as Json;

/// A database directory, and the binary run against it.
struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Db {
    fn new() -> Db {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db");
        Db { _dir: dir, path }
    }

    /// Runs `strata --db DIR args…`.
    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["--db", self.path.to_str().expect("UTF-8 path")];
        all.extend_from_slice(args);
        strata(&all)
    }

    /// Runs and expects success; returns standard output.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "strata {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }

    /// Runs and expects failure; returns the one line of standard error.
    fn fails(&self, args: &[&str]) -> String {
        one_line_error(&self.run(args), args)
    }

    /// A file in the test's directory.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.path.with_file_name(name);
        std::fs::write(&path, text).expect("write input");
        path.to_str().expect("UTF-8 path").to_owned()
    }

    /// The rows of a JSON query.
    fn rows(&self, table: &str, args: &[&str]) -> Vec<Json> {
        let mut all = vec!["query", table, "--format", "json"];
        all.extend_from_slice(args);
        self.ok(&all)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }
}

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run strata")
}

/// Asserts a failure printed exactly one line, `strata: …`, and no panic.
fn one_line_error(out: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "strata {args:?} succeeded");
    assert_eq!(
        stderr.lines().count(),
        1,
        "strata {args:?}: not one line: {stderr}"
    );
    assert!(stderr.starts_with("strata: "), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
    stderr.trim_end().to_owned()
}

const PEOPLE: &str = "\
id,name,town,zip,score,age,note
1,Ada,Redmond,02134,3.5,36,
2,Alan,Seattle,98101,4,41,\"likes, commas\"
3,Grace,Seattle,98102,2.25,,\"says \"\"hi\"\"\"
4,Edsger,Ely,00501,1,70,
";

fn people(db: &Db) {
    db.ok(&["table", "create", "people", "--key", "id"]);
    db.ok(&[
        "index",
        "create",
        "people",
        "by_town",
        "--on",
        "town",
        "--include",
        "name",
    ]);
    let csv = db.file("people.csv", PEOPLE);
    let out = db.ok(&["import", "people", &csv]);
    assert!(
        out.contains(
            "columns: id integer, name text, town text, zip text, score float, age integer, \
             note text"
        ),
        "{out}"
    );
    assert!(out.contains("imported 4 rows into people"), "{out}");
    assert!(out.contains("rows/s"), "{out}");
}

#[test]
fn a_csv_imports_with_inferred_types_and_queries_back_in_every_format() {
    let db = Db::new();
    people(&db);

    let rows = db.rows("people", &["--where", "town = 'Seattle'"]);
    assert_eq!(rows.len(), 2);
    let grace = rows.iter().find(|r| r["id"] == 3).expect("Grace");
    assert_eq!(grace["name"], "Grace");
    assert_eq!(grace["zip"], "98102", "a ZIP code stays text");
    assert_eq!(grace["score"], 2.25);
    assert_eq!(grace["note"], "says \"hi\"");
    assert!(grace.get("age").is_none(), "an empty cell is NULL: {grace}");
    let alan = rows.iter().find(|r| r["id"] == 2).expect("Alan");
    assert!(alan["score"].is_f64(), "4 in a float column is a float");
    assert!(alan["age"].is_i64());

    // --select orders the fields; --limit stops.
    let out = db.ok(&[
        "query", "people", "--select", "name,id", "--limit", "2", "--format", "json",
    ]);
    assert_eq!(
        out,
        "{\"name\":\"Ada\",\"id\":1}\n{\"name\":\"Alan\",\"id\":2}\n"
    );

    // Every operator.
    let ids = |expr: &str| -> Vec<i64> {
        let mut ids: Vec<i64> = db
            .rows("people", &["--where", expr])
            .iter()
            .map(|r| r["id"].as_i64().expect("id"))
            .collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids("score >= 2.25 AND score < 4"), [1, 3]);
    assert_eq!(ids("town != 'Seattle'"), [1, 4]);
    assert_eq!(ids("id IN (1, 4, 9)"), [1, 4]);
    assert_eq!(ids("age BETWEEN 36 AND 41"), [1, 2]);
    assert_eq!(ids("age IS NULL"), [3]);
    assert_eq!(ids("note IS NULL AND age > 40"), [4]);
    assert_eq!(ids("zip <= '02134'"), [1, 4]);

    // The table format: a header, aligned columns, a count.
    let table = db.ok(&[
        "query",
        "people",
        "--where",
        "town = 'Seattle'",
        "--select",
        "id,name,age",
    ]);
    assert_eq!(
        table,
        "id | name  | age\n\
         ---+-------+-----\n \
         2 | Alan  |   41\n \
         3 | Grace | NULL\n\
         (2 rows)\n"
    );

    // CSV: quoted where needed, NULL empty, floats with their point.
    let csv = db.ok(&[
        "query",
        "people",
        "--where",
        "id <= 3",
        "--select",
        "id,note,score,age",
        "--format",
        "csv",
    ]);
    assert_eq!(
        csv,
        "id,note,score,age\n1,,3.5,36\n2,\"likes, commas\",4.0,41\n3,\"says \"\"hi\"\"\",2.25,\n"
    );
}

#[test]
fn csv_output_imports_back_to_the_same_rows() {
    let db = Db::new();
    people(&db);
    let csv = db.ok(&["query", "people", "--format", "csv"]);
    let copy = db.file("copy.csv", &csv);
    db.ok(&["table", "create", "copy", "--key", "id"]);
    db.ok(&["import", "copy", &copy]);
    assert_eq!(db.rows("copy", &[]), db.rows("people", &[]));
}

#[test]
fn explain_prints_the_plan_and_every_candidate() {
    let db = Db::new();
    people(&db);
    db.ok(&["analyze"]);
    let text = db.ok(&["query", "people", "--where", "town = 'Ely'", "--explain"]);
    assert!(text.starts_with("plan: "), "{text}");
    assert!(text.contains("candidates:"), "{text}");

    let json: Json = serde_json::from_str(
        db.ok(&[
            "query",
            "people",
            "--where",
            "town = 'Ely'",
            "--select",
            "name",
            "--explain",
            "--format",
            "json",
        ])
        .trim(),
    )
    .expect("one JSON object");
    for field in ["plan", "index", "estimated_rows", "cost", "candidates"] {
        assert!(json.get(field).is_some(), "{field} missing: {json}");
    }
    let candidates = json["candidates"].as_array().expect("candidates");
    assert_eq!(candidates.len(), 2, "the scan and by_town: {json}");
    for c in candidates {
        for field in ["plan", "index", "estimated_rows", "cost"] {
            assert!(c.get(field).is_some(), "{field} missing: {c}");
        }
    }
    assert!(
        candidates
            .iter()
            .any(|c| c["plan"] == "scan" && c["index"].is_null()),
        "{json}"
    );
    assert!(
        candidates
            .iter()
            .any(|c| c["plan"] == "index" && c["index"] == "by_town"),
        "{json}"
    );

    // Hints force a plan; --analyze runs it and reports what it read.
    let forced: Json = serde_json::from_str(
        db.ok(&[
            "query",
            "people",
            "--where",
            "town = 'Ely'",
            "--scan",
            "--analyze",
            "--format",
            "json",
        ])
        .trim(),
    )
    .expect("one JSON object");
    assert_eq!(forced["plan"], "scan");
    assert_eq!(forced["actual"]["rows_returned"], 1);
    assert_eq!(forced["actual"]["rows_read"], 4);
    // A scan fetches nothing, by lookups or walking along the table.
    assert_eq!(forced["actual"]["fetches"], 0);
    assert_eq!(forced["actual"]["fetches_merged"], 0);
    let by_index: Json = serde_json::from_str(
        db.ok(&[
            "query",
            "people",
            "--use-index",
            "by_town",
            "--explain",
            "--format",
            "json",
        ])
        .trim(),
    )
    .expect("one JSON object");
    assert_eq!(by_index["index"], "by_town");
    let key: Json = serde_json::from_str(
        db.ok(&[
            "query",
            "people",
            "--where",
            "id = 2",
            "--explain",
            "--format",
            "json",
        ])
        .trim(),
    )
    .expect("one JSON object");
    assert_eq!(key["plan"], "primary_key");
}

#[test]
fn or_like_not_in_and_order_by_from_the_command_line() {
    let db = Db::new();
    people(&db);
    db.ok(&["index", "create", "people", "by_age", "--on", "age"]);
    db.ok(&["analyze"]);
    let ids = |args: &[&str]| -> Vec<i64> {
        db.rows("people", args)
            .iter()
            .map(|r| r["id"].as_i64().expect("an id"))
            .collect()
    };
    let or = "town = 'Ely' OR age < 40";
    assert_eq!(ids(&["--where", or, "--order-by", "id"]), [1, 4]);
    // Every way of reading it returns the same rows.
    for forced in ["--scan", "--union"] {
        assert_eq!(
            ids(&["--where", or, "--order-by", "id desc", forced]),
            [4, 1]
        );
    }
    assert_eq!(
        ids(&[
            "--where",
            "(town = 'Seattle' OR town = 'Ely') AND NOT name LIKE 'G%'"
        ]),
        [2, 4]
    );
    assert_eq!(
        ids(&["--where", "name LIKE '_d%'", "--order-by", "id"]),
        [1, 4]
    );
    assert_eq!(
        ids(&["--where", "id NOT IN (1, 2)", "--order-by", "id"]),
        [3, 4]
    );
    assert_eq!(
        ids(&[
            "--order-by",
            "age DESC",
            "--limit",
            "2",
            "--select",
            "id,age"
        ]),
        [4, 2]
    );
    // The union's parts and each part of the WHERE show their estimates.
    let text = db.ok(&["query", "people", "--where", or, "--union", "--explain"]);
    assert!(text.starts_with("plan: union of 2 parts"), "{text}");
    assert!(
        text.contains("part 1: town = 'Ely' by index by_town"),
        "{text}"
    );
    assert!(text.contains("part 2: age < 40 by index by_age"), "{text}");
    assert!(
        text.contains("estimate: (town = 'Ely' OR age < 40) keeps"),
        "{text}"
    );
    let json: Json = serde_json::from_str(
        db.ok(&[
            "query",
            "people",
            "--where",
            or,
            "--union",
            "--explain",
            "--format",
            "json",
        ])
        .trim(),
    )
    .expect("one JSON object");
    assert_eq!(json["plan"], "union");
    let union = json["candidates"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["plan"] == "union"))
        .expect("the union among the candidates");
    let parts = union["access"]["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 2, "{json}");
    assert!(parts[0]["estimated_rows"].as_f64().is_some(), "{json}");
    assert!(json["estimates"][0]["rows"].as_f64().is_some(), "{json}");
}

#[test]
fn statistics_options_are_set_shown_and_cleared() {
    let db = Db::new();
    people(&db);
    assert_eq!(
        db.ok(&["table", "statistics", "people"]).trim(),
        "table people: default statistics"
    );
    let set = db.ok(&[
        "table",
        "statistics",
        "people",
        "--group",
        "town,zip",
        "--target",
        "name=500",
    ]);
    assert!(set.contains("table people: group (town, zip)"), "{set}");
    assert!(set.contains("table people: target name = 500"), "{set}");
    assert!(
        db.fails(&["table", "statistics", "people", "--target", "name=0"])
            .contains("statistics target is 1 to 10000")
    );
    assert!(
        db.fails(&["table", "statistics", "people", "--target", "name"])
            .contains("expected FIELD=N")
    );
    db.ok(&["analyze"]);
    assert_eq!(
        db.ok(&["table", "statistics", "people", "--clear"]).trim(),
        "table people: default statistics"
    );
}

#[test]
fn a_malformed_line_is_reported_and_nothing_is_written() {
    let db = Db::new();
    db.ok(&["table", "create", "t", "--key", "id"]);
    let bad = db.file("bad.csv", "id,v\n1,a\n2,b\n3,c,extra\n4,d\n");
    let error = db.fails(&["import", "t", &bad]);
    assert_eq!(
        error,
        "strata: line 4: 3 fields, but the header has 2; nothing was imported"
    );
    assert!(db.rows("t", &[]).is_empty());

    let no_key = db.file("nokey.csv", "id,v\n1,a\n,b\n");
    assert_eq!(
        db.fails(&["import", "t", &no_key]),
        "strata: line 3: the primary-key field \"id\" is missing or empty; nothing was imported"
    );
    let no_key_column = db.file("nokeycol.csv", "v,w\n1,a\n");
    assert_eq!(
        db.fails(&["import", "t", &no_key_column]),
        "strata: line 1: the header has no column for the primary-key field \"id\"; nothing \
         was imported"
    );
    let float_key = db.file("floatkey.csv", "id,v\n1,a\n2.5,b\n");
    assert_eq!(
        db.fails(&["import", "t", &float_key]),
        "strata: the primary-key column \"id\" holds numbers that are not integers, and a key \
         cannot be a float; nothing was imported"
    );
    let jsonl = db.file(
        "bad.jsonl",
        "{\"id\": 1, \"v\": \"a\"}\n\n{\"id\": 2, \"v\": [1, 2]}\n",
    );
    assert_eq!(
        db.fails(&["import", "t", &jsonl]),
        "strata: line 3: field \"v\" is an array or object; only numbers, strings, booleans \
         and null can be stored; nothing was imported"
    );
    let broken = db.file("broken.jsonl", "{\"id\": 1}\n{\"id\": 2\n");
    let error = db.fails(&["import", "t", &broken]);
    assert!(
        error.starts_with("strata: line 2: invalid JSON at column"),
        "{error}"
    );
    assert!(db.rows("t", &[]).is_empty(), "nothing of any of them");
}

#[test]
fn a_failing_batch_leaves_the_batches_before_it_and_nothing_after() {
    let db = Db::new();
    db.ok(&["table", "create", "t", "--key", "id"]);
    // Batches of two rows: lines 2–3, 4–5, then 6–7, where line 7 repeats the key of line 2.
    let dup = db.file("dup.csv", "id,v\n1,a\n2,b\n3,c\n4,d\n5,e\n1,again\n6,f\n");
    let error = db.fails(&["import", "t", &dup, "--batch", "2"]);
    assert!(error.starts_with("strata: line 7: conflict: "), "{error}");
    assert!(
        error.ends_with("the 4 rows through line 5 were imported, nothing after them"),
        "{error}"
    );
    let ids: Vec<i64> = db
        .rows("t", &[])
        .iter()
        .map(|r| r["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [1, 2, 3, 4],
        "the batch of lines 6-7 is not half-written"
    );

    // --replace upserts instead.
    db.ok(&["import", "t", &dup, "--replace"]);
    let rows = db.rows("t", &["--where", "id = 1"]);
    assert_eq!(rows[0]["v"], "again");
    assert_eq!(db.rows("t", &[]).len(), 6);
}

/// The load pass reads ahead on a second thread, in hand-overs of a few hundred rows: a file of
/// many hand-overs imports every row with the fields its cells give (empty cells in many
/// combinations of columns), and a failing batch deep in it still names its line and what
/// committed before it.
#[test]
fn a_long_file_read_ahead_imports_in_order_and_stops_where_a_batch_fails() {
    let db = Db::new();
    db.ok(&["table", "create", "t", "--key", "id"]);
    let mut text = String::from("id,a,b,c,d\n");
    for id in 1..=5_000 {
        // Sixteen combinations of empty cells, more than the import keeps name lists for.
        let cell = |bit: u32, v: String| {
            if (id % 16) & (1 << bit) != 0 {
                v
            } else {
                String::new()
            }
        };
        let (a, b) = (cell(0, format!("a{id}")), cell(1, format!("{}", id * 3)));
        let (c, d) = (cell(2, format!("{}.5", id)), cell(3, "x".to_owned()));
        text.push_str(&format!("{id},{a},{b},{c},{d}\n"));
    }
    let all = db.file("all.csv", &text);
    let out = db.ok(&["import", "t", &all]);
    assert!(out.contains("imported 5000 rows into t"), "{out}");
    let rows = db.rows("t", &["--where", "id = 4999"]);
    // 4999 % 16 = 7: a, b and c, no d.
    assert_eq!(rows[0]["a"], "a4999");
    assert_eq!(rows[0]["b"], 14_997);
    assert_eq!(rows[0]["c"], 4999.5);
    assert!(
        rows[0].get("d").is_none_or(|d| d.is_null()),
        "{:?}",
        rows[0]
    );
    let with_d = (1..=5_000).filter(|id| (id % 16) & 8 != 0).count();
    assert_eq!(db.rows("t", &["--where", "d = 'x'"]).len(), with_d);

    db.ok(&["table", "create", "u", "--key", "id"]);
    // Line 4,802 repeats the key of line 2: the batch of lines 4,002–5,001 fails.
    let mut dup = String::from("id,v\n");
    for line in 2..=6_000 {
        let id = if line == 4_802 { 1 } else { line - 1 };
        dup.push_str(&format!("{id},v{line}\n"));
    }
    let dup = db.file("dup.csv", &dup);
    let error = db.fails(&["import", "u", &dup, "--batch", "1000"]);
    assert!(
        error.starts_with("strata: line 4802: conflict: "),
        "{error}"
    );
    assert!(
        error.ends_with("the 4000 rows through line 4001 were imported, nothing after them"),
        "{error}"
    );
    assert_eq!(db.rows("u", &[]).len(), 4_000);
}

#[test]
fn a_bulk_import_loads_a_run_whole_or_names_the_row_that_stops_it() {
    let db = Db::new();
    db.ok(&["table", "create", "t", "--key", "id"]);
    db.ok(&["index", "create", "t", "by_v", "--on", "v"]);
    // Without --batch, one run: a key given twice (lines 2 and 7) loads nothing of it.
    let dup = db.file("dup.csv", "id,v\n1,a\n2,b\n3,c\n4,d\n5,e\n1,again\n6,f\n");
    let error = db.fails(&["import", "t", &dup]);
    assert!(error.starts_with("strata: line 7: conflict: "), "{error}");
    assert!(error.ends_with("nothing was imported"), "{error}");
    assert!(db.rows("t", &[]).is_empty());

    // New keys load; a later file whose range meets them goes through inserts, which stop at
    // the stored key and name its line.
    let first = db.file("first.csv", "id,v\n10,a\n30,b\n20,a\n");
    let out = db.ok(&["import", "t", &first]);
    assert!(out.contains("imported 3 rows into t"), "{out}");
    let second = db.file("second.csv", "id,v\n15,x\n25,x\n30,x\n35,x\n");
    let error = db.fails(&["import", "t", &second]);
    assert!(error.starts_with("strata: line 4: conflict: "), "{error}");
    assert_eq!(
        db.rows("t", &[]).len(),
        3,
        "the run's one batch wrote nothing"
    );
    assert_eq!(db.rows("t", &["--where", "v = 'a'"]).len(), 2);
    db.ok(&["verify", "t"]);
}

#[test]
fn json_lines_import_keeps_json_types() {
    let db = Db::new();
    db.ok(&[
        "table", "create", "events", "--key", "day,seq", "--shards", "3",
    ]);
    db.ok(&[
        "index", "create", "events", "by_kind", "--on", "kind", "--global",
    ]);
    let input = db.file(
        "events.jsonl",
        "{\"day\": \"2026-11-21\", \"seq\": 1, \"kind\": \"click\", \"ok\": true, \"ms\": 1.5}\n\
         {\"day\": \"2026-11-21\", \"seq\": 2, \"kind\": \"view\", \"ok\": false, \"ms\": null}\n",
    );
    db.ok(&["import", "events", &input]);
    let rows = db.rows("events", &["--where", "kind = 'click'"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["ok"], true);
    assert_eq!(rows[0]["ms"], 1.5);
    let out = db.ok(&["get", "events", "2026-11-21", "2", "--format", "json"]);
    assert_eq!(
        out,
        "{\"day\":\"2026-11-21\",\"kind\":\"view\",\"ok\":false,\"seq\":2}\n"
    );
    assert!(
        db.ok(&["table", "list"])
            .contains("index by_kind on (kind)")
    );
    assert!(db.ok(&["verify"]).contains("table events: 2 rows"));
}

#[test]
fn the_administration_commands_report_what_they_did() {
    let db = Db::new();
    people(&db);
    assert!(db.ok(&["analyze", "people"]).starts_with("people: 4 rows"));
    let stats = db.ok(&["stats", "people"]);
    assert!(stats.starts_with("people: 4 rows"), "{stats}");
    assert!(stats.contains("town: 3 distinct"), "{stats}");
    let verify = db.ok(&["verify", "people"]);
    assert!(
        verify.contains("index by_town (Ready): 4 entries, 0 missing, 0 dangling, 0 stale"),
        "{verify}"
    );
    assert!(db.ok(&["compact"]).starts_with("people: compacted"));
    assert!(db.ok(&["advice"]).contains("people.by_town"));
    let get = db.ok(&["get", "people", "2"]);
    assert!(get.contains("Alan"), "{get}");
    assert!(
        db.ok(&["index", "drop", "people", "by_town"])
            .contains("dropped")
    );
    assert!(db.ok(&["table", "drop", "people"]).contains("dropped"));
    assert_eq!(db.ok(&["table", "list"]), "no tables\n");
}

#[test]
fn checkpoints_backups_and_feeds_from_the_command_line() {
    let db = Db::new();
    people(&db);
    let sibling = |name: &str| {
        db.path
            .with_file_name(name)
            .to_str()
            .expect("UTF-8")
            .to_owned()
    };
    // A feed started before more rows arrive.
    assert!(
        db.ok(&["feed", "create", "audit", "--tables", "people"])
            .contains("created feed audit")
    );
    let more = db.file("more.csv", "id,name,town\n5,Barbara,Boston\n");
    db.ok(&["import", "people", &more]);
    let tail = db.ok(&["feed", "tail", "audit", "--format", "json"]);
    let changes: Vec<Json> = tail
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(changes.len(), 1, "{tail}");
    assert_eq!(changes[0]["op"], "insert");
    assert_eq!(changes[0]["after"]["name"], "Barbara");
    assert_eq!(
        db.ok(&["feed", "tail", "audit"]),
        "",
        "tail acknowledged what it printed"
    );
    let list = db.ok(&["feed", "list", "--format", "json"]);
    let feed: Json = serde_json::from_str(list.trim()).expect("json");
    assert_eq!(feed["state"], "active");
    // A checkpoint is a database.
    let copy = sibling("copy");
    assert!(
        db.ok(&["checkpoint", &copy])
            .starts_with("checkpoint of commit")
    );
    let rows = strata(&["--db", &copy, "query", "people", "--format", "json"]);
    assert_eq!(String::from_utf8_lossy(&rows.stdout).lines().count(), 5);
    // Backups: create twice, list, verify, restore, purge.
    let backups = sibling("backups");
    assert!(
        db.ok(&["backup", "create", &backups])
            .starts_with("backup 1 ")
    );
    let again = db.file("again.csv", "id,name\n6,Niklaus\n");
    db.ok(&["import", "people", &again]);
    assert!(
        db.ok(&["backup", "create", &backups])
            .starts_with("backup 2 ")
    );
    let list = strata(&["backup", "list", &backups, "--format", "json"]);
    let ids: Vec<u64> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Json>(l).expect("json")["id"]
                .as_u64()
                .expect("id")
        })
        .collect();
    assert_eq!(ids, [1, 2]);
    let verified = strata(&["backup", "verify", &backups, "2"]);
    assert!(String::from_utf8_lossy(&verified.stdout).contains("backup 2 is whole"));
    let restored = sibling("restored");
    assert!(
        strata(&["backup", "restore", &backups, "1", &restored])
            .status
            .success()
    );
    let rows = strata(&["--db", &restored, "query", "people", "--format", "json"]);
    assert_eq!(String::from_utf8_lossy(&rows.stdout).lines().count(), 5);
    let purged = strata(&["backup", "purge", &backups, "--keep", "1"]);
    assert!(String::from_utf8_lossy(&purged.stdout).starts_with("removed 1 backup"));
    // Mistakes: one line each, nothing changed.
    let args = [
        "backup",
        "restore",
        backups.as_str(),
        "2",
        restored.as_str(),
    ];
    assert!(one_line_error(&strata(&args), &args).contains("not empty"));
    let args = ["backup", "list", copy.as_str()];
    assert!(one_line_error(&strata(&args), &args).contains("not a backup directory"));
    assert!(db.fails(&["checkpoint", &copy]).contains("not empty"));
    assert!(
        db.fails(&["feed", "create", "x", "--tables", "nope"])
            .contains("not found")
    );
    assert!(db.fails(&["feed", "tail", "nope"]).contains("not found"));
    assert!(db.ok(&["feed", "drop", "audit"]).contains("dropped"));
}

#[test]
fn every_mistake_is_one_line_and_a_failure() {
    let db = Db::new();
    // Before the database exists.
    let missing = db.fails(&["query", "people"]);
    assert!(missing.contains("holds no Strata database"), "{missing}");
    assert!(
        !Path::new(&db.path).join("CURRENT").exists(),
        "nothing created"
    );
    people(&db);
    let cases: &[(&[&str], &str)] = &[
        (&["query", "nope"], "not found: table \"nope\""),
        (
            &["query", "people", "--where", "town = Ely"],
            "--where: at column 8: expected a number or a quoted string, found Ely",
        ),
        (
            &["query", "people", "--where", "town = 'Ely' OR"],
            "--where: at column 16: expected a field, found the end",
        ),
        (
            &["query", "people", "--order-by", "age desc, id"],
            "--order-by: at column 13: every field goes the same way",
        ),
        (
            &["query", "people", "--where", "id = 1", "--union"],
            "no union to force",
        ),
        (
            &["query", "people", "--use-index", "nope"],
            "no index named \"nope\"",
        ),
        (
            &["query", "people", "--explain", "--analyze"],
            "cannot be used with",
        ),
        (
            &["query", "people", "--format", "xml"],
            "invalid value 'xml'",
        ),
        (&["get", "people", "99"], "no row in people with key (99)"),
        (&["get", "people", "1", "2"], "key"),
        (&["table", "create", "people", "--key", "id"], "people"),
        (
            &["table", "create", "9lives", "--key", "id"],
            "must be 1 to 64 ASCII",
        ),
        (
            &["table", "create", "t", "--key", "id", "--shards", "0"],
            "shard",
        ),
        (&["index", "create", "nope", "i", "--on", "x"], "nope"),
        (
            &["index", "create", "people", "by_town", "--on", "town"],
            "by_town",
        ),
        (
            &["import", "people", "/no/such/file.csv"],
            "cannot read /no/such/file.csv",
        ),
        (
            &["import", "nope", "/no/such/file.csv"],
            "not found: table \"nope\"",
        ),
        (&["stats", "nope"], "nope"),
        (&["verify", "nope"], "nope"),
        (&["no-such-command"], "unrecognized subcommand"),
    ];
    for (args, expected) in cases {
        let error = db.fails(args);
        assert!(
            error.contains(expected),
            "strata {args:?}: {error:?} does not mention {expected:?}"
        );
    }
    let no_db = one_line_error(&strata(&["query", "people"]), &["query", "people"]);
    assert!(no_db.contains("--db DIR"), "{no_db}");
    // Nothing above changed the table.
    assert_eq!(db.rows("people", &[]).len(), 4);
}

#[test]
fn the_demo_shows_the_planner_choosing_and_refusing_indexes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("demo");
    let out = strata(&[
        "demo",
        "--rows",
        "4000",
        "--dir",
        path.to_str().expect("path"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan_of = |title: &str| -> String {
        let at = text
            .find(title)
            .unwrap_or_else(|| panic!("{title} missing:\n{text}"));
        text[at..]
            .lines()
            .find(|l| l.trim_start().starts_with("->"))
            .expect("a plan line")
            .to_owned()
    };
    assert!(plan_of("ids of the customers").contains("index by_town (covering"));
    assert!(plan_of("their names").contains("index by_town_names (covering"));
    assert!(plan_of("their whole records").contains("index by_town_all (covering"));
    assert!(plan_of("a 50/50 field").contains("full scan"));
    assert!(plan_of("the common value").contains("full scan"));
    assert!(plan_of("a rare value").contains("index by_status"));
    assert!(plan_of("one genre").contains("primary-key range"));
    assert!(plan_of("one actor's films").contains("index by_actor"));
    // The database is kept and the command works on it.
    let rows = strata(&[
        "--db",
        path.to_str().expect("path"),
        "query",
        "movies",
        "--where",
        "genre = 'noir'",
        "--limit",
        "1",
        "--format",
        "json",
    ]);
    assert!(rows.status.success());
    assert!(String::from_utf8_lossy(&rows.stdout).contains("\"genre\":\"noir\""));
    // A second demo into the same directory refuses rather than mixing data.
    let again = strata(&[
        "demo",
        "--rows",
        "4000",
        "--dir",
        path.to_str().expect("path"),
    ]);
    let error = one_line_error(&again, &["demo"]);
    assert!(error.contains("already holds the demo's tables"), "{error}");
}
