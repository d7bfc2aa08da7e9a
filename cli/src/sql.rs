//! `strata sql`: runs the SQL shell, the `strata-sql` binary of the `strata-sql` crate.
//!
//! The shell is built on Apache DataFusion (~210 crates, minutes to build), which `strata`
//! itself does not link, so that the engine's command and tests stay quick to build. As
//! `git` and `cargo` do with their external subcommands, `strata sql ARGS` runs
//! `strata-sql --db DIR ARGS`: the one beside the running `strata` if there is one, else the
//! first on `PATH`. Install both with `cargo install --path cli && cargo install --path sql`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shell's binary name.
pub const SHELL: &str = "strata-sql";

/// Where the shell is: beside `strata`, else found on `PATH` when run.
fn shell() -> PathBuf {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(SHELL)))
        .filter(|p| p.is_file());
    beside.unwrap_or_else(|| PathBuf::from(SHELL))
}

/// Runs the shell over `db` with `args`, its standard streams this process's; returns its
/// exit status (the shell prints its own errors).
pub fn run(db: &Path, args: &[String]) -> Result<i32, String> {
    let mut command = Command::new(shell());
    command.arg("--db").arg(db).args(args);
    match command.status() {
        Ok(status) => Ok(status.code().unwrap_or(1)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "`strata sql` runs the SQL shell `{SHELL}`, which is not installed: \
             `cargo install --path sql` (it is built apart from `strata` because DataFusion \
             takes minutes to build), or run it from the source tree with \
             `cargo run --release --manifest-path sql/Cargo.toml -- --db {}`",
            db.display()
        )),
        Err(e) => Err(format!("cannot run {SHELL}: {e}")),
    }
}
