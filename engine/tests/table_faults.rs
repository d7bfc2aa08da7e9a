//! I/O faults under the table layer (the store's own are `faults.rs`). A mixed workload runs
//! on `SimFs`: a 2-shard table with a local sync index and a global async one, upserts and
//! deletes, synced and not, a flush, compactions, the indexer, close and reopen. Each run
//! fails one operation: the `n`-th write, sync, rename, read, file open, removal or directory
//! sync, for `n` spread over the clean run's count of that kind. Each outcome must hold:
//!
//! - the workload gets an error or succeeds, and never panics;
//! - after a clean restart the database opens, the async indexes catch up, `verify` finds
//!   every index matching its rows, and every acknowledged batch is there;
//! - after a simulated power cut at that moment, the same, for every acknowledged *synced*
//!   batch.
//!
//! Each shard has its own log, so after a power cut the unsynced batches may survive in one
//! shard and not in another, and a batch that failed may be there in part. So the check is
//! per row: a row's value is the one it had after the last batch that must survive, or one
//! it took later, and never an older or invented one.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::Rng;
use strata::fs::{OpKind, SimFs};
use strata::{
    Db, IndexOptions, Options, Projection, Query, Record, StoreOptions, TableBatch, Value,
    WriteOptions,
};

const DIR: &str = "/db";
const BATCHES: usize = 24;

fn options(fs: &SimFs) -> Options {
    Options::from(StoreOptions {
        fs: Arc::new(fs.clone()),
        write_buffer_bytes: 8 << 10,
        max_total_wal_bytes: 64 << 10,
        num_levels: 4,
        l0_compaction_trigger: 2,
        level1_bytes: 24 << 10,
        level_size_ratio: 4,
        target_table_bytes: 8 << 10,
        compaction_threads: 1,
        ..StoreOptions::default()
    })
}

/// One batch: each row's new value (`None`: deleted).
type Changes = BTreeMap<i64, Option<Record>>;

fn batch(i: usize) -> Changes {
    let mut rng = Rng::new(0xFA17 ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut changes = Changes::new();
    for _ in 0..1 + rng.below(12) {
        let id = rng.below(120) as i64;
        if rng.chance(20) {
            changes.insert(id, None);
        } else {
            let mut r = Record::new();
            r.set("id", id);
            r.set("g", rng.below(5) as i64);
            r.set("name", format!("name{}", rng.below(40)));
            r.set("pad", "p".repeat(rng.below(300) as usize));
            changes.insert(id, Some(r));
        }
    }
    changes
}

/// What the workload got acknowledged.
#[derive(Default)]
struct Acked {
    batches: Vec<Changes>,
    /// How many of `batches` must survive a power cut.
    durable: usize,
    /// A batch that returned an error: each of its rows may or may not be there.
    failed: Option<Changes>,
}

/// The sequence under test; it stops at the first error, as an application would.
fn workload(fs: &SimFs, acked: &mut Acked) -> strata::Result<()> {
    let db = Db::open(DIR, options(fs))?;
    if db.table("t").is_err() {
        db.create_table("t", ["id"], strata::TableOptions::default().shards(2))?;
        db.create_index("t", "by_g", ["g"], Projection::KeysOnly)?;
        db.create_index(
            "t",
            "by_name",
            ["name"],
            IndexOptions::global().projection(Projection::Include(vec!["g".into()])),
        )?;
    }
    for i in 0..BATCHES {
        let changes = batch(i);
        let mut tb = TableBatch::new();
        for (id, row) in &changes {
            match row {
                Some(r) => tb.upsert(r.clone()),
                None => tb.delete([Value::Int(*id)]),
            };
        }
        let sync = i % 4 == 3;
        let options = if sync {
            WriteOptions::synced()
        } else {
            WriteOptions::default()
        };
        if let Err(e) = db.write("t", tb, options) {
            acked.failed = Some(changes);
            return Err(e);
        }
        acked.batches.push(changes);
        if sync {
            acked.durable = acked.batches.len();
        }
        if i == BATCHES / 2 {
            db.flush()?;
            acked.durable = acked.batches.len();
        }
    }
    db.close()?;
    acked.durable = acked.batches.len();
    // A reopen: it replays, flushes, and the indexer finishes the outbox.
    let db = Db::open(DIR, options(fs))?;
    db.wait_for_indexes()?;
    db.close()
}

/// Reopens the database on `fs` and checks it: it opens, its indexes catch up and match its
/// rows, and each row is as some batch from `required` on left it.
fn check(fs: &SimFs, acked: &Acked, required: usize, context: &str) {
    let db = Db::open(DIR, options(fs))
        .unwrap_or_else(|e| panic!("{context}: the database does not reopen: {e}"));
    if db.table("t").is_err() {
        // The table's creation itself did not survive: nothing can have been acknowledged.
        assert_eq!(required, 0, "{context}: the table is gone");
        assert!(acked.batches.is_empty(), "{context}: the table is gone");
        return;
    }
    db.wait_for_indexes()
        .unwrap_or_else(|e| panic!("{context}: the indexes do not catch up: {e}"));
    let report = db
        .verify("t")
        .unwrap_or_else(|e| panic!("{context}: verify fails: {e}"));
    assert!(report.is_clean(), "{context}: {report}");
    let found: BTreeMap<i64, Record> = db
        .query("t", &Query::default())
        .unwrap_or_else(|e| panic!("{context}: the scan fails: {e}"))
        .map(|r| {
            let r = r.unwrap_or_else(|e| panic!("{context}: a row fails: {e}"));
            let Value::Int(id) = *r.value("id") else {
                panic!("{context}: id {}", r.value("id"))
            };
            (id, r)
        })
        .collect();
    // Each row's history: its value after `required` batches, then each value it took.
    let mut state: BTreeMap<i64, Option<Record>> = BTreeMap::new();
    for changes in &acked.batches[..required] {
        state.extend(changes.clone());
    }
    let mut allowed: BTreeMap<i64, Vec<Option<Record>>> = BTreeMap::new();
    for id in 0..120 {
        allowed.insert(id, vec![state.get(&id).cloned().flatten()]);
    }
    for changes in acked.batches[required..].iter().chain(&acked.failed) {
        for (id, row) in changes {
            allowed.entry(*id).or_default().push(row.clone());
        }
    }
    for (id, values) in &allowed {
        let got = found.get(id).cloned();
        assert!(
            values.contains(&got),
            "{context}: row {id} is {got:?}; after the {required} batches that must survive it \
             can only be one of {values:?}"
        );
    }
    if let Some(id) = found.keys().find(|id| !allowed.contains_key(id)) {
        panic!("{context}: row {id} was never written");
    }
    db.close()
        .unwrap_or_else(|e| panic!("{context}: closing fails: {e}"));
}

#[test]
fn every_failed_operation_under_tables_loses_no_acknowledged_write() {
    let clean = SimFs::new();
    let mut acked = Acked::default();
    workload(&clean, &mut acked).expect("the clean run succeeds");
    check(&clean, &acked, acked.batches.len(), "clean run");
    let kinds = [
        OpKind::Write,
        OpKind::Sync,
        OpKind::Rename,
        OpKind::Read,
        OpKind::Open,
        OpKind::Remove,
        OpKind::SyncDir,
    ];
    // Faults per kind: spread over the clean run's count (all of them when fewer).
    let per_kind = std::env::var("STRATA_TABLE_FAULTS_PER_KIND")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(12);
    let mut injected = 0;
    let mut failed = 0;
    let mut surfaced: BTreeMap<String, usize> = BTreeMap::new();
    for kind in kinds {
        let total = clean.op_count(kind);
        assert!(total > 0, "the workload performs {kind:?}");
        let step = (total / per_kind).max(1);
        for n in (1..=total).step_by(step as usize) {
            let fs = SimFs::new();
            fs.fail_nth(kind, n);
            let mut acked = Acked::default();
            let outcome = workload(&fs, &mut acked);
            fs.clear_faults();
            let context = format!("{kind:?} #{n} of {total} ({outcome:?})");
            injected += 1;
            if outcome.is_err() {
                failed += 1;
                *surfaced.entry(format!("{kind:?}")).or_insert(0) += 1;
            }
            check(&fs.crashed_copy(), &acked, acked.durable, &context);
            check(&fs, &acked, acked.batches.len(), &context);
        }
    }
    println!("table faults: {injected} injected, {failed} surfaced as errors: {surfaced:?}");
    assert!(injected >= 40, "only {injected} faults injected");
    // The background threads make the operation counts, and so which operation each fault
    // hits, vary from run to run (a share of faults surfacing was a flaky threshold). What
    // holds every run: a failed write, sync, directory sync, open, read or rename reaches the
    // caller somewhere in the sequence; only removing an obsolete file may fail unnoticed.
    for kind in ["Write", "Sync", "SyncDir", "Open", "Read", "Rename"] {
        assert!(
            surfaced.get(kind).is_some_and(|&n| n > 0),
            "no failed {kind} surfaced as an error: {surfaced:?}"
        );
    }
}
