//! The bank (accounts over four shards, a ledger, transfers in transactions) and its check,
//! shared by the crash tests (`bank.rs`) and the checkpoint and backup tests (`backups.rs`).

use std::sync::Arc;

use super::Rng;
use strata::fs::SimFs;
use strata::{Db, Options, Query, Record, StoreOptions, Value, WriteOptions, record};

pub const ACCOUNTS: i64 = 24;
pub const OPENING: i64 = 1_000;

/// Small memtables, so runs flush (and the flush rule is exercised) and compact.
pub fn store_options() -> StoreOptions {
    StoreOptions {
        write_buffer_bytes: 16 << 10,
        max_total_wal_bytes: 256 << 10,
        num_levels: 4,
        l0_compaction_trigger: 2,
        level1_bytes: 64 << 10,
        target_table_bytes: 16 << 10,
        compaction_threads: 1,
        ..StoreOptions::default()
    }
}

pub fn sim_options(fs: &SimFs) -> Options {
    Options::from(StoreOptions {
        fs: Arc::new(fs.clone()),
        ..store_options()
    })
}

/// Opens the bank: accounts over four shards, the ledger in one.
pub fn create(db: &Db) -> strata::Result<()> {
    db.create_table(
        "accounts",
        ["id"],
        strata::TableOptions::default().shards(4),
    )?;
    db.create_table("ledger", ["id"], strata::TableOptions::default())?;
    let mut tx = db.begin()?;
    for id in 0..ACCOUNTS {
        tx.insert("accounts", record! { "id" => id, "balance" => OPENING })?;
    }
    tx.commit_with(WriteOptions::synced())
}

/// Transfer `i`: from, to, amount, and whether it commits synced.
pub fn transfer_of(seed: u64, i: u64) -> (i64, i64, i64, bool) {
    let mut rng = Rng::new(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let from = rng.below(ACCOUNTS as u64) as i64;
    let to = (from + 1 + rng.below(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
    (from, to, 1 + rng.below(40) as i64, rng.chance(15))
}

pub fn int(r: &Record, field: &str) -> i64 {
    match r.value(field) {
        Value::Int(i) => *i,
        other => panic!("{field} is {other:?}"),
    }
}

/// Runs transfer `i` in a transaction.
pub fn transfer(db: &Db, seed: u64, i: u64) -> strata::Result<()> {
    let (from, to, amount, sync) = transfer_of(seed, i);
    loop {
        let mut tx = db.begin()?;
        let a = tx.get("accounts", &[Value::Int(from)])?.expect("account");
        let b = tx.get("accounts", &[Value::Int(to)])?.expect("account");
        tx.upsert(
            "accounts",
            record! { "id" => from, "balance" => int(&a, "balance") - amount },
        )?;
        tx.upsert(
            "accounts",
            record! { "id" => to, "balance" => int(&b, "balance") + amount },
        )?;
        tx.insert(
            "ledger",
            record! { "id" => i as i64, "from" => from, "to" => to, "amount" => amount },
        )?;
        let options = if sync {
            WriteOptions::synced()
        } else {
            WriteOptions::default()
        };
        match tx.commit_with(options) {
            Err(e) if e.is_retryable() => continue,
            other => return other,
        }
    }
}

/// Checks a reopened bank: the total, the ledger against the balances, the transfers that
/// must be there (`0..required`) and the ones that may be (`..=at_most`), `verify`. Returns
/// how many ledger rows it found.
pub fn check(db: &Db, seed: u64, required: u64, at_most: u64, context: &str) -> u64 {
    if db.table("accounts").is_err() || db.table("ledger").is_err() {
        assert_eq!(required, 0, "{context}: the bank is gone");
        return 0;
    }
    let accounts: Vec<Record> = db
        .query("accounts", &Query::default())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    if accounts.is_empty() {
        // The opening commit itself did not survive.
        assert_eq!(required, 0, "{context}: the accounts are gone");
        return 0;
    }
    assert_eq!(accounts.len() as i64, ACCOUNTS, "{context}: accounts");
    let total: i64 = accounts.iter().map(|r| int(r, "balance")).sum();
    assert_eq!(total, ACCOUNTS * OPENING, "{context}: the total changed");
    let ledger: Vec<Record> = db
        .query("ledger", &Query::default())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut expect = vec![OPENING; ACCOUNTS as usize];
    let mut ids = std::collections::BTreeSet::new();
    for row in &ledger {
        let i = int(row, "id") as u64;
        let (from, to, amount, _) = transfer_of(seed, i);
        assert_eq!(
            (int(row, "from"), int(row, "to"), int(row, "amount")),
            (from, to, amount),
            "{context}: ledger row {i}"
        );
        expect[from as usize] -= amount;
        expect[to as usize] += amount;
        ids.insert(i);
    }
    for r in &accounts {
        let id = int(r, "id");
        assert_eq!(
            int(r, "balance"),
            expect[id as usize],
            "{context}: account {id} disagrees with the ledger"
        );
    }
    // The survivors are a prefix of the transfers (they ran one after another).
    let found = ids.len() as u64;
    assert!(
        ids.iter().copied().eq(0..found),
        "{context}: the ledger has gaps: {ids:?}"
    );
    assert!(
        found >= required,
        "{context}: {found} transfers, {required} acknowledged"
    );
    assert!(
        found <= at_most,
        "{context}: {found} transfers, at most {at_most} attempted"
    );
    for table in ["accounts", "ledger"] {
        let report = db.verify(table).unwrap();
        assert!(report.is_clean(), "{context}: {report}");
    }
    found
}
