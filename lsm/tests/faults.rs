//! I/O error injection at every operation of a write / flush / reopen sequence: the store
//! either succeeds or returns an error — never panics, never corrupts — and everything it
//! acknowledged is there after a reopen (every acknowledged write after a clean restart, every
//! acknowledged *synced* write after a crash).

mod common;

use std::path::Path;

use common::*;
use strata_lsm::Store;
use strata_lsm::fs::{OpKind, SimFs};

const DIR: &str = "/db";
const CFS: [&str; 2] = ["default", "extra"];

/// What the workload got acknowledged.
#[derive(Default)]
struct Acked {
    batches: Vec<Vec<Op>>,
    /// How many of `batches` must survive a crash.
    durable: usize,
    /// A batch that returned an error: it may or may not be there, but whole or not at all.
    failed: Option<Vec<Op>>,
}

/// The sequence under test. Stops at the first error, as an application would.
fn workload(fs: &SimFs, acked: &mut Acked) -> strata_lsm::Result<()> {
    let store = Store::open(Path::new(DIR), sim_options(fs))?;
    acked.durable = acked.batches.len(); // open leaves everything durable
    if store.cf("extra").is_err() {
        store.create_column_family("extra")?;
    }
    let mut rng = Rng::new(7);
    for i in 0..40 {
        let ops = random_batch(&mut rng, &CFS, 30, 4);
        let sync = i % 5 == 4;
        match write(&store, &ops, sync) {
            Ok(_) => {
                acked.batches.push(ops);
                if sync {
                    acked.durable = acked.batches.len();
                }
            }
            Err(error) => {
                acked.failed = Some(ops);
                return Err(error);
            }
        }
        if i == 20 {
            store.flush_all()?;
            acked.durable = acked.batches.len();
        }
    }
    store.close()?;
    acked.durable = acked.batches.len();
    // And a reopen, which flushes and rewrites the manifest.
    let store = Store::open(Path::new(DIR), sim_options(fs))?;
    store.close()
}

/// Checks the store on `fs` holds `required` batches, plus possibly later acknowledged ones
/// (in order) and the failed one.
fn check(fs: &SimFs, acked: &Acked, required: usize, context: &str) {
    let store = Store::open(Path::new(DIR), sim_options(fs))
        .unwrap_or_else(|e| panic!("{context}: reopening failed: {e}"));
    let found: Model = CFS
        .iter()
        .map(|name| {
            let kv = if store.cf(name).is_ok() {
                scan(&store, name)
            } else {
                Kv::new()
            };
            (name.to_string(), kv)
        })
        .collect();
    let mut candidates: Vec<Vec<Op>> = acked.batches.clone();
    candidates.extend(acked.failed.clone());
    let mut model = normalise(&Model::new(), &CFS);
    for ops in &candidates[..required] {
        apply(&mut model, ops);
    }
    for k in required..=candidates.len() {
        if model == found {
            return;
        }
        if let Some(ops) = candidates.get(k) {
            apply(&mut model, ops);
        }
    }
    panic!(
        "{context}: the store is no prefix of the {} acknowledged batches holding the first {required}",
        acked.batches.len()
    );
}

#[test]
fn every_failed_operation_loses_no_acknowledged_write() {
    // Count each kind's operations in a clean run.
    let clean = SimFs::new();
    let mut acked = Acked::default();
    workload(&clean, &mut acked).expect("the clean run succeeds");
    let kinds = [
        OpKind::Open,
        OpKind::Write,
        OpKind::Sync,
        OpKind::Read,
        OpKind::Rename,
        OpKind::Remove,
        OpKind::SyncDir,
    ];
    let totals: Vec<u64> = kinds.iter().map(|&kind| clean.op_count(kind)).collect();
    check(&clean, &acked, acked.batches.len(), "clean run");
    let mut injected = 0;
    let mut failed = 0;
    for (kind, total) in kinds.into_iter().zip(totals) {
        assert!(total > 0, "the workload performs {kind:?}");
        for n in 1..=total {
            let fs = SimFs::new();
            fs.fail_nth(kind, n);
            let mut acked = Acked::default();
            let outcome = workload(&fs, &mut acked);
            // Compaction threads make the counts vary: a fault the workload did not reach
            // must not fire in the checks' reopening instead.
            fs.clear_faults();
            let context = format!("{kind:?} #{n} of {total} ({outcome:?})");
            injected += 1;
            failed += usize::from(outcome.is_err());
            // After a crash at this point: every acknowledged synced write is there.
            check(&fs.crashed_copy(), &acked, acked.durable, &context);
            // After a clean restart: every acknowledged write is there.
            check(&fs, &acked, acked.batches.len(), &context);
        }
    }
    assert!(injected > 50, "only {injected} faults injected");
    // Some faults are absorbed (a failed removal of an obsolete file is retried later), but
    // most must surface as errors.
    assert!(
        failed * 2 > injected,
        "{failed} of {injected} faults surfaced"
    );
    println!("{injected} faults injected, {failed} surfaced as errors");
}
