//! The bank under crashes (the concurrent bank is in `transactions.rs`): accounts spread over
//! four shards, a ledger table, transfers in transactions. Whatever survives, the total of the
//! balances is what the bank opened with, every ledger row's transfer is in the balances (and
//! no transfer is there without its ledger row), every transfer the writer acknowledged is
//! there (every synced one, after a power cut), and `verify` is clean.
//!
//! - SIGKILL: a child process transfers until killed; the parent reopens and checks, round
//!   after round.
//! - SimFs power cuts: a crashed copy of the files at random moments.
//! - SimFs I/O faults: the `n`-th write, sync, rename or directory sync fails; the run stops
//!   at its first error, and the files as they are and a crashed copy both check out.
//!
//! Transfer `i` is a pure function of `(seed, i)`; its ledger row has id `i`.

mod common;

use std::time::{Duration, Instant};

use common::Rng;
use common::bank::{check, create, sim_options, store_options, transfer, transfer_of};
use common::crash_child::{ChildTask, another_round, crash_child};
use strata::fs::{OpKind, SimFs};
use strata::{Db, Options};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn sigkill_keeps_every_acknowledged_transfer_and_the_total() {
    let seed = env_or("STRATA_BANK_CRASH_SEED", 3);
    let rounds = env_or("STRATA_BANK_CRASH_ROUNDS", 8);
    let budget = Duration::from_secs(env_or("STRATA_BANK_CRASH_SECONDS", 20));
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::from(store_options())).unwrap();
        create(&db).unwrap();
        db.close().unwrap();
    }
    let mut rng = Rng::new(seed);
    let mut applied = 0u64;
    let started = Instant::now();
    let mut round = 0;
    while another_round(round, rounds, started, budget) {
        let lifetime = Duration::from_millis(30 + rng.below(400));
        let run = crash_child(
            "bank_writer_child",
            dir.path(),
            seed,
            applied,
            lifetime,
            Duration::from_secs(60),
        );
        if let Some(why) = run.failure {
            panic!("the child's transfer failed: {why}");
        }
        let db = Db::open(dir.path(), Options::from(store_options()))
            .expect("the bank opens after SIGKILL");
        let context = format!("seed {seed} round {round}, {} acknowledged", run.acked);
        // A SIGKILL loses nothing the child wrote: every acknowledged transfer, and the one
        // in flight whole or not at all.
        applied = check(&db, seed, run.acked, run.acked + 1, &context);
        db.close().unwrap();
        round += 1;
    }
    println!("bank SIGKILL: {round} kills, {applied} transfers");
    assert!(applied > 0, "the children transferred nothing");
}

/// Run only as a child of the test above.
#[test]
#[ignore = "the writer process of the bank SIGKILL test"]
fn bank_writer_child() {
    let ChildTask { dir, seed, start } = ChildTask::from_env();
    let db = Db::open(&dir, Options::from(store_options())).unwrap();
    println!("ready");
    for i in start.. {
        match transfer(&db, seed, i) {
            Ok(()) => println!("acked {i}"),
            Err(e) => {
                println!("failed {i}: {e}");
                return;
            }
        }
    }
}

#[test]
fn power_cuts_keep_every_synced_transfer_and_the_total() {
    for seed in 1..=4u64 {
        let fs = SimFs::new();
        let db = Db::open("/bank", sim_options(&fs)).unwrap();
        create(&db).unwrap();
        let mut rng = Rng::new(seed);
        let mut durable = 0u64;
        for i in 0..160u64 {
            transfer(&db, seed, i).unwrap();
            if transfer_of(seed, i).3 {
                durable = i + 1;
            }
            if rng.chance(10) {
                let context = format!("seed {seed}: power cut after transfer {i}");
                let copy = Db::open("/bank", sim_options(&fs.crashed_copy()))
                    .unwrap_or_else(|e| panic!("{context}: does not open: {e}"));
                check(&copy, seed, durable, i + 1, &context);
            }
        }
        db.close().unwrap();
        let db = Db::open("/bank", sim_options(&fs)).unwrap();
        assert_eq!(check(&db, seed, 160, 160, "after a clean close"), 160);
    }
}

#[test]
fn io_faults_lose_no_acknowledged_transfer_and_keep_the_total() {
    let seed = 11;
    let clean = SimFs::new();
    let run = |fs: &SimFs, acked: &mut u64, durable: &mut u64| -> strata::Result<()> {
        let db = Db::open("/bank", sim_options(fs))?;
        create(&db)?;
        for i in 0..60u64 {
            transfer(&db, seed, i)?;
            *acked = i + 1;
            if transfer_of(seed, i).3 {
                *durable = i + 1;
            }
        }
        db.close()
    };
    run(&clean, &mut 0, &mut 0).expect("the clean run succeeds");
    let mut injected = 0;
    for kind in [OpKind::Write, OpKind::Sync, OpKind::Rename, OpKind::SyncDir] {
        let total = clean.op_count(kind);
        let step = (total / 8).max(1);
        for n in (1..=total).step_by(step as usize) {
            let fs = SimFs::new();
            fs.fail_nth(kind, n);
            let (mut acked, mut durable) = (0, 0);
            let outcome = run(&fs, &mut acked, &mut durable);
            fs.clear_faults();
            injected += 1;
            let context = format!("{kind:?} #{n} of {total} ({outcome:?})");
            // The failed transfer, if any, may be there whole.
            let at_most = acked + u64::from(outcome.is_err());
            let copy = Db::open("/bank", sim_options(&fs.crashed_copy()))
                .unwrap_or_else(|e| panic!("{context}: a crashed copy does not open: {e}"));
            check(
                &copy,
                seed,
                durable,
                at_most,
                &format!("power cut: {context}"),
            );
            drop(copy);
            let db = Db::open("/bank", sim_options(&fs))
                .unwrap_or_else(|e| panic!("{context}: does not reopen: {e}"));
            check(&db, seed, acked, at_most, &context);
        }
    }
    assert!(injected >= 20, "only {injected} faults injected");
}
