//! The parent's side of a SIGKILL crash test (the store's `crash.rs`, the tables'
//! `table_crash.rs`): run this test binary again as a writer child, kill it at a chosen moment,
//! and report what it acknowledged.
//!
//! The child speaks one line at a time on stdout: `ready` once its store is open, `acked N`
//! when batch `N` is acknowledged (or its outcome otherwise known), `failed WHY` when a write
//! fails in a way the test must report.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The environment variable naming the child's directory.
pub const CHILD_DIR: &str = "STRATA_CRASH_CHILD_DIR";
/// The environment variable holding the child's seed.
pub const CHILD_SEED: &str = "STRATA_CRASH_CHILD_SEED";
/// The environment variable holding the first batch number the child writes.
pub const CHILD_START: &str = "STRATA_CRASH_CHILD_START";

/// The child's side: what its parent asked of it (its directory, seed and first batch
/// number), from the environment [`crash_child`] set. Panics when run other than as a child.
pub struct ChildTask {
    pub dir: std::path::PathBuf,
    pub seed: u64,
    pub start: u64,
}

impl ChildTask {
    /// The task the parent set, read from the environment.
    pub fn from_env() -> ChildTask {
        let number = |name: &str| -> u64 {
            std::env::var(name)
                .expect("run as a child by the parent test")
                .parse()
                .expect("a number")
        };
        ChildTask {
            dir: std::env::var_os(CHILD_DIR)
                .expect("run as a child by the parent test")
                .into(),
            seed: number(CHILD_SEED),
            start: number(CHILD_START),
        }
    }
}

/// What one child did before it was killed.
pub struct ChildRun {
    /// Batches acknowledged in all: `start` plus what this child acknowledged.
    pub acked: u64,
    /// The child's `failed` line, if it printed one.
    pub failure: Option<String>,
}

/// Runs the ignored test `child_test` of this binary as a writer of `dir` from batch `start`,
/// kills it with SIGKILL `lifetime` after it is ready (or after `ready_timeout` if it never
/// is), and returns what it acknowledged.
pub fn crash_child(
    child_test: &str,
    dir: &Path,
    seed: u64,
    start: u64,
    lifetime: Duration,
    ready_timeout: Duration,
) -> ChildRun {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--ignored", "--exact", child_test, "--nocapture"])
        .env(CHILD_DIR, dir)
        .env(CHILD_SEED, seed.to_string())
        .env(CHILD_START, start.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child starts");
    let stdout = child.stdout.take().expect("piped");
    let acked = Arc::new(Mutex::new(start));
    let failure = Arc::new(Mutex::new(None));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let reader = {
        let acked = Arc::clone(&acked);
        let failure = Arc::clone(&failure);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "ready" {
                    let _ = ready_tx.send(());
                } else if let Some(n) = line.strip_prefix("acked ") {
                    let n: u64 = n.parse().expect("a batch number");
                    *acked.lock().expect("lock") = n + 1;
                } else if let Some(why) = line.strip_prefix("failed ") {
                    *failure.lock().expect("lock") = Some(why.to_owned());
                }
            }
        })
    };
    // A child that never gets ready (it failed to open) is killed at the deadline all the
    // same, and the caller's checks find it wrote nothing.
    let _ = ready_rx.recv_timeout(ready_timeout);
    std::thread::sleep(lifetime);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    reader.join().expect("reader");
    let acked = *acked.lock().expect("lock");
    let failure = failure.lock().expect("lock").take();
    ChildRun { acked, failure }
}

/// Rounds of a crash test: `wanted` (from the environment), or fewer when `budget` runs out,
/// but never fewer than [`MIN_ROUNDS`] however slow the machine: a busy machine makes the test
/// slower, never weaker.
pub fn another_round(
    round: u64,
    wanted: u64,
    started: std::time::Instant,
    budget: Duration,
) -> bool {
    round < wanted && (round < MIN_ROUNDS || started.elapsed() < budget)
}

/// The fewest kills a crash test makes.
pub const MIN_ROUNDS: u64 = 3;
