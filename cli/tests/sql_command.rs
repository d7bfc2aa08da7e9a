//! `strata sql` runs the `strata-sql` shell (beside `strata`, else on `PATH`) with the
//! database and its arguments, and exits with its status; without it, one line says how to
//! install it.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

#[test]
fn strata_sql_runs_the_shell_with_the_database_and_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("strata-sql");
    let record = dir.path().join("args");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit 3\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = strata()
        .args([
            "--db",
            "/data/db",
            "sql",
            "-c",
            "SELECT 1; SELECT 2",
            "--format",
            "csv",
        ])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "the shell's status");
    let args = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "--db",
            "/data/db",
            "-c",
            "SELECT 1; SELECT 2",
            "--format",
            "csv"
        ]
    );
}

#[test]
fn without_the_shell_strata_sql_says_how_to_get_it() {
    let empty = tempfile::tempdir().unwrap();
    let out = strata()
        .args(["--db", "/data/db", "sql"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cargo install --path sql"), "{err}");
    let out = strata().args(["sql", "-c", "SELECT 1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db DIR"));
}
