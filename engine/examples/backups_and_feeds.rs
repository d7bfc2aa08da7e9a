//! Checkpoints, incremental backups and a change feed on a running database
//! (`docs/guide.md`, "Checkpoints and backups" and "Change feeds").
//!
//! ```sh
//! cargo run -p strata --example backups_and_feeds
//! ```

use std::time::Duration;

use strata::backup;
use strata::{Db, Options, TableOptions, Value, record};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Db::open(dir.path().join("live"), Options::default())?;
    db.create_table("accounts", ["id"], TableOptions::default().shards(2))?;
    db.create_table("ledger", ["id"], TableOptions::default())?;

    // A feed starts at the current commit: it will deliver every later change to these tables.
    db.create_feed("audit", &["accounts", "ledger"])?;

    let mut tx = db.begin()?;
    tx.insert("accounts", record! { "id" => 1, "balance" => 100 })?;
    tx.insert("accounts", record! { "id" => 2, "balance" => 0 })?;
    tx.commit()?;
    let mut tx = db.begin()?;
    tx.upsert("accounts", record! { "id" => 1, "balance" => 60 })?;
    tx.upsert("accounts", record! { "id" => 2, "balance" => 40 })?;
    tx.insert(
        "ledger",
        record! { "id" => 1, "from" => 1, "to" => 2, "amount" => 40 },
    )?;
    tx.commit()?;

    // Read the feed: whole transactions, in commit order, with the rows before and after.
    let mut feed = db.feed("audit")?;
    let changes = feed.poll(1000, Duration::from_millis(100))?;
    for c in &changes {
        let op = match (&c.before, &c.after) {
            (None, Some(_)) => "insert",
            (Some(_), None) => "delete",
            _ => "update",
        };
        println!("commit {:>3}  {:<8} {:?}  {op}", c.commit, c.table, c.key);
    }
    assert_eq!(changes.len(), 5);
    // Acknowledge: a reader opened later, even after a crash, resumes after this position.
    if let Some(last) = changes.last() {
        feed.ack(last.position)?;
    }
    drop(feed);

    // A checkpoint: a consistent copy of every shard store at one commit, opened as a
    // database of its own.
    let cp = db.checkpoint(dir.path().join("checkpoint"))?;
    println!(
        "checkpoint at commit {}: {} files linked, {} bytes copied",
        cp.commit, cp.files_linked, cp.bytes_copied
    );
    let copy = Db::open(dir.path().join("checkpoint"), Options::default())?;
    let row = copy.get("accounts", &[Value::Int(2)])?.ok_or("row 2")?;
    assert_eq!(row.get("balance"), Some(&Value::Int(40)));
    copy.close()?;

    // Incremental backups: the second copies only what the first does not have.
    let backups = dir.path().join("backups");
    let first = db.backup(&backups)?;
    db.insert(
        "ledger",
        record! { "id" => 2, "from" => 2, "to" => 1, "amount" => 5 },
    )?;
    let second = db.backup(&backups)?;
    println!(
        "backups: #{} copied {} bytes, #{} copied {} of {} bytes",
        first.id, first.bytes_copied, second.id, second.bytes_copied, second.bytes
    );
    for info in backup::list(&backups)? {
        backup::verify(&backups, info.id)?;
    }
    backup::restore(&backups, second.id, dir.path().join("restored"))?;
    let restored = Db::open(dir.path().join("restored"), Options::default())?;
    assert!(restored.get("ledger", &[Value::Int(2)])?.is_some());
    restored.close()?;
    let purged = backup::purge_old(&backups, 1)?;
    println!("purged backups {:?}", purged.backups);

    db.drop_feed("audit")?;
    db.close()?;
    Ok(())
}
