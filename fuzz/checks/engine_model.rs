//! Checks for the `engine_model` fuzz target: the bytes are a program of table operations on
//! a database over `SimFs`. The operations are inserts, upserts, deletes, synced writes,
//! flushes, compactions, pauses of the indexer, reopens and simulated power cuts. After each
//! step the database must agree with a model.
//!
//! - A write returns an error only when the model says it must: an insert of a key that
//!   exists. No I/O fails here, so any other error is a finding.
//! - A full scan returns exactly the model's rows. So do a lookup through the sync index and
//!   one through the async index with `Consistency::Strong`, which folds in what the indexer
//!   has not applied yet.
//! - After a reopen, the model holds as it is. After a power cut, every row is as the last
//!   synced write left it or as a later write did, and never older or invented. The model
//!   then becomes what survived.
//! - After each reopen or power cut, once the indexer has caught up, `verify` finds every
//!   index entry matching its row.
//!
//! - Transactions: a few reads and writes, then a commit (synced or not) or a rollback; some
//!   meet a plain write, after their snapshot, to a key they read, and must then fail their
//!   commit retryably and write nothing. A batch or transaction is all or nothing across
//!   shards: after a power cut, of the rows a commit wrote last, either all show its values
//!   or none does.
//!
//! - Change feeds: a feed over the table from the start. Draining it from its acknowledged
//!   position onto the rows as of that position rebuilds the model exactly (every committed
//!   change delivered, in commit order, none invented), after reopens and power cuts too
//!   (what a poll delivered is durable).
//! - Checkpoints: a checkpoint opens as a database holding exactly the model, and `verify` is
//!   clean on it.
//!
//! The table has 1 or 2 shards (from the first byte), a local sync index on `g`, and an
//! async index on `n` (local, or global on 2 shards) that includes `g`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strata::StoreOptions;
use strata::fs::SimFs;
use strata::{
    Consistency, Db, Error, IndexOptions, Options, Predicate, Projection, Query, Record,
    TableBatch, Value, WriteOptions,
};

const DIR: &str = "/fuzz";
const MAX_STEPS: usize = 96;

fn options(fs: &SimFs) -> Options {
    Options {
        store: StoreOptions {
            fs: Arc::new(fs.clone()),
            write_buffer_bytes: 4 << 10,
            max_total_wal_bytes: 32 << 10,
            num_levels: 3,
            l0_compaction_trigger: 2,
            level1_bytes: 16 << 10,
            level_size_ratio: 4,
            target_table_bytes: 4 << 10,
            compaction_threads: 1,
            ..StoreOptions::default()
        },
        auto_analyze: false,
        ..Options::default()
    }
}

struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = self.data.get(self.at).copied();
        self.at += 1;
        b
    }
}

type Rows = BTreeMap<i64, Record>;

fn row(id: i64, g: u8, n: u8, pad: u8) -> Record {
    let mut r = Record::new();
    r.set("id", id);
    r.set("g", i64::from(g % 4));
    if !n.is_multiple_of(5) {
        r.set("n", i64::from(n % 7));
    }
    r.set("pad", "x".repeat(usize::from(pad) * 4));
    r
}

fn id_of(r: &Record) -> i64 {
    match r.value("id") {
        Value::Int(id) => *id,
        other => panic!("a row's id is {other}"),
    }
}

fn open(fs: &SimFs, shards: u32, create: bool) -> Db {
    let db = Db::open(DIR, options(fs)).expect("the database opens");
    if create {
        db.create_table("t", ["id"], strata::TableOptions::default().shards(shards))
            .expect("create table");
        db.create_index("t", "by_g", ["g"], Projection::KeysOnly)
            .expect("sync index");
        let scope = if shards > 1 {
            IndexOptions::global()
        } else {
            IndexOptions::local_async()
        };
        db.create_index(
            "t",
            "by_n",
            ["n"],
            scope.projection(Projection::Include(vec!["g".into()])),
        )
        .expect("async index");
        db.create_feed("f", &["t"]).expect("feed");
    }
    db
}

/// Drains feed `f` onto `acked` (the rows as of its acknowledged position) and checks that
/// the result is `model`; with `ack`, acknowledges and makes the result the new `acked`.
fn replay_feed(db: &Db, acked: &mut Rows, model: &Rows, ack: bool, step: usize) {
    let mut feed = db.feed("f").expect("the feed");
    let mut replica = acked.clone();
    let mut last = None;
    let mut commit = 0;
    loop {
        let changes = feed.poll(7, std::time::Duration::ZERO).expect("a poll");
        if changes.is_empty() {
            break;
        }
        for c in changes {
            assert!(
                c.commit >= commit,
                "step {step}: the feed went back in commit order"
            );
            commit = c.commit;
            let id = match c.key.as_slice() {
                [Value::Int(id)] => *id,
                other => panic!("step {step}: a change keyed {other:?}"),
            };
            assert_eq!(
                c.before.as_ref(),
                replica.get(&id),
                "step {step}: a change's row before is not the row the feed left"
            );
            match c.after {
                Some(r) => replica.insert(id, r),
                None => replica.remove(&id),
            };
            last = Some(c.position);
        }
    }
    assert_eq!(
        &replica, model,
        "step {step}: the feed does not rebuild the table"
    );
    if ack && let Some(position) = last {
        feed.ack(position).expect("an ack");
        *acked = replica;
    }
}

/// A checkpoint of `db` opens as a database holding exactly `model`.
fn checkpoint_holds(fs: &SimFs, db: &Db, model: &Rows, step: usize) {
    let target = format!("/checkpoint-{step}");
    db.checkpoint(&target).expect("a checkpoint");
    let copy = Db::open(&target, options(fs)).expect("the checkpoint opens");
    assert_eq!(&scan(&copy), model, "step {step}: the checkpoint differs");
    caught_up_and_clean(&copy, step);
    copy.close().expect("close the checkpoint");
}

fn scan(db: &Db) -> Rows {
    let query = Query::default().hint(strata::Hint::Scan);
    db.query("t", &query)
        .expect("scan")
        .map(|r| {
            let r = r.expect("a scanned row");
            (id_of(&r), r)
        })
        .collect()
}

fn through(db: &Db, index: &str, predicate: Predicate) -> Rows {
    let query = Query::default()
        .filter(predicate)
        .hint(strata::Hint::Index(index.into()))
        .consistency(Consistency::Strong);
    db.query("t", &query)
        .expect("an index query")
        .map(|r| {
            let r = r.expect("an index row");
            (id_of(&r), r)
        })
        .collect()
}

fn agree(db: &Db, model: &Rows, step: usize) {
    assert_eq!(
        &scan(db),
        model,
        "step {step}: the scan differs from the model"
    );
    for g in 0..4i64 {
        let want: Rows = model
            .iter()
            .filter(|(_, r)| r.value("g") == &Value::Int(g))
            .map(|(k, r)| (*k, r.clone()))
            .collect();
        assert_eq!(
            through(db, "by_g", Predicate::eq("g", g)),
            want,
            "step {step}: the sync index on g = {g}"
        );
    }
    for n in [0i64, 3, 6] {
        let want: Rows = model
            .iter()
            .filter(|(_, r)| r.value("n") == &Value::Int(n))
            .map(|(k, r)| (*k, r.clone()))
            .collect();
        assert_eq!(
            through(db, "by_n", Predicate::eq("n", n)),
            want,
            "step {step}: the async index on n = {n}, strongly consistent"
        );
    }
}

fn caught_up_and_clean(db: &Db, step: usize) {
    db.resume_indexer();
    db.wait_for_indexes().expect("the indexes catch up");
    let report = db.verify("t").expect("verify");
    assert!(report.is_clean(), "step {step}: {report}");
}

/// Records a commit of `written` that left `model`: a synced one (or a sync, with nothing
/// written) makes the model durable and forgets the commits before it.
fn committed(
    durable: &mut Rows,
    commits: &mut Vec<Vec<(i64, Option<Record>)>>,
    model: &Rows,
    written: &[(i64, Option<Record>)],
    sync: bool,
) {
    if sync {
        *durable = model.clone();
        commits.clear();
    } else {
        commits.push(last_values(written));
    }
}

/// Each row's last value among `written`.
fn last_values(written: &[(i64, Option<Record>)]) -> Vec<(i64, Option<Record>)> {
    let mut last: BTreeMap<i64, Option<Record>> = BTreeMap::new();
    for (id, v) in written {
        last.insert(*id, v.clone());
    }
    last.into_iter().collect()
}

pub fn check(data: &[u8]) {
    let mut input = Input { data, at: 0 };
    let Some(first) = input.byte() else {
        return;
    };
    let shards = 1 + u32::from(first % 2);
    let mut fs = SimFs::new();
    let mut db = open(&fs, shards, true);
    let mut model = Rows::new();
    // The model as of the last synced write, and each commit since: the rows it wrote, as
    // it left them.
    let mut durable = Rows::new();
    let mut commits: Vec<Vec<(i64, Option<Record>)>> = Vec::new();
    let mut paused = false;
    // The rows as of the feed's acknowledged position.
    let mut acked = Rows::new();
    for step in 0..MAX_STEPS {
        let Some(op) = input.byte() else { break };
        let arg = input.byte().unwrap_or(0);
        let id = i64::from(arg % 24);
        match op % 14 {
            0..=4 => {
                // A batch of one to three changes, synced when the op says so.
                let count = 1 + usize::from(op / 12 % 3);
                let sync = op / 36 % 2 == 1;
                let mut batch = TableBatch::new();
                let mut after = model.clone();
                let mut conflict = false;
                let mut written = Vec::new();
                for k in 0..count {
                    let b = input.byte().unwrap_or(0);
                    let id = i64::from((u16::from(arg) + k as u16 * 7) % 24);
                    match b % 4 {
                        0 => {
                            batch.delete(vec![Value::Int(id)]);
                            after.remove(&id);
                            written.push((id, None));
                        }
                        1 => {
                            let r = row(id, b >> 2, b >> 4, b);
                            conflict |= after.contains_key(&id);
                            batch.insert(r.clone());
                            after.insert(id, r.clone());
                            written.push((id, Some(r)));
                        }
                        _ => {
                            let r = row(id, b >> 2, b >> 4, b);
                            batch.upsert(r.clone());
                            after.insert(id, r.clone());
                            written.push((id, Some(r)));
                        }
                    }
                }
                let options = if sync {
                    WriteOptions::synced()
                } else {
                    WriteOptions::default()
                };
                match db.write("t", batch, options) {
                    Ok(()) => {
                        assert!(
                            !conflict,
                            "step {step}: an insert of an existing key passed"
                        );
                        model = after;
                        committed(&mut durable, &mut commits, &model, &written, sync);
                    }
                    // A refused batch writes nothing and syncs nothing.
                    Err(Error::Conflict(_)) => {
                        assert!(conflict, "step {step}: a conflict the model does not see");
                    }
                    Err(e) => panic!("step {step}: a write failed: {e}"),
                }
            }
            5 => {
                db.delete("t", &[Value::Int(id)]).expect("delete");
                model.remove(&id);
                committed(&mut durable, &mut commits, &model, &[(id, None)], false);
            }
            6 => {
                db.flush().expect("flush");
                committed(&mut durable, &mut commits, &model, &[], true);
            }
            7 => {
                // Compaction of the table's families: it must not make anything less durable
                // than it was, nor more (the model assumes nothing new is synced).
                db.compact("t").expect("compact");
            }
            8 => {
                if paused {
                    db.resume_indexer();
                } else {
                    db.pause_indexer();
                }
                paused = !paused;
            }
            9 => {
                db.close().expect("close");
                db = open(&fs, shards, false);
                paused = false;
                committed(&mut durable, &mut commits, &model, &[], true);
                caught_up_and_clean(&db, step);
            }
            10 => {
                // A power cut now: reopen on what it leaves.
                let survivor = fs.crashed_copy();
                drop(db);
                fs = survivor;
                db = open(&fs, shards, false);
                paused = false;
                caught_up_and_clean(&db, step);
                let found = scan(&db);
                let ids: BTreeSet<i64> = found
                    .keys()
                    .chain(model.keys())
                    .chain(durable.keys())
                    .copied()
                    .collect();
                for id in ids {
                    let got = found.get(&id);
                    let ok = got == durable.get(&id)
                        || commits
                            .iter()
                            .flatten()
                            .any(|(k, v)| *k == id && v.as_ref() == got);
                    assert!(
                        ok,
                        "step {step}: after a power cut row {id} is {got:?}; the last sync left \
                         {:?}",
                        durable.get(&id)
                    );
                }
                // All or nothing: of the rows a commit wrote last, all show its values or
                // none does.
                for (i, commit) in commits.iter().enumerate() {
                    let last: Vec<&(i64, Option<Record>)> = commit
                        .iter()
                        .filter(|(id, _)| !commits[i + 1..].iter().flatten().any(|(k, _)| k == id))
                        .collect();
                    // A row tells only if no earlier state had the commit's value.
                    let tells = |id: &i64, v: &Option<Record>| {
                        durable.get(id) != v.as_ref()
                            && !commits[..i]
                                .iter()
                                .flatten()
                                .any(|(k, w)| k == id && w == v)
                    };
                    let telling: Vec<_> = last.iter().filter(|(id, v)| tells(id, v)).collect();
                    let shown = telling
                        .iter()
                        .filter(|(id, v)| found.get(id) == v.as_ref())
                        .count();
                    assert!(
                        shown == 0 || shown == telling.len(),
                        "step {step}: after a power cut commit {i} is there in part: {shown} \
                         of its {} changed rows",
                        telling.len()
                    );
                }
                model = found;
                committed(&mut durable, &mut commits, &model, &[], true);
                // What the feed acknowledged survived; the rest comes again.
                replay_feed(&db, &mut acked, &model, false, step);
            }
            11 => {
                // A transaction: reads and writes, then commit, rollback, or a conflict.
                let count = 1 + usize::from(arg % 3);
                let mut tx = db.begin().expect("begin");
                let mut after = model.clone();
                let mut written = Vec::new();
                let mut read = Vec::new();
                for k in 0..count {
                    let b = input.byte().unwrap_or(0);
                    let id = i64::from((u16::from(arg) + k as u16 * 5) % 24);
                    let got = tx.get("t", &[Value::Int(id)]).expect("a read");
                    assert_eq!(
                        got.as_ref(),
                        after.get(&id),
                        "step {step}: a transaction read"
                    );
                    read.push(id);
                    match b % 3 {
                        0 => {
                            tx.delete("t", &[Value::Int(id)]).expect("delete");
                            after.remove(&id);
                            written.push((id, None));
                        }
                        1 => {
                            let r = row(id, b >> 2, b >> 4, b);
                            match tx.insert("t", r.clone()) {
                                Ok(()) => {
                                    assert!(!after.contains_key(&id), "step {step}: insert");
                                    after.insert(id, r.clone());
                                    written.push((id, Some(r)));
                                }
                                Err(Error::Conflict(_)) => {
                                    assert!(after.contains_key(&id), "step {step}: a conflict");
                                }
                                Err(e) => panic!("step {step}: a transaction insert: {e}"),
                            }
                        }
                        _ => {
                            let r = row(id, b >> 2, b >> 4, b);
                            tx.upsert("t", r.clone()).expect("upsert");
                            after.insert(id, r.clone());
                            written.push((id, Some(r)));
                        }
                    }
                }
                let how = input.byte().unwrap_or(0);
                if how.is_multiple_of(4) {
                    tx.rollback();
                } else if how % 4 == 1 {
                    // A plain write to a key the transaction read, after its snapshot.
                    let id = read[usize::from(how / 4) % read.len()];
                    let r = row(id, how, how >> 3, how);
                    db.upsert("t", r.clone()).expect("a plain write");
                    model.insert(id, r.clone());
                    committed(&mut durable, &mut commits, &model, &[(id, Some(r))], false);
                    match tx.commit() {
                        // It wrote nothing: a read-only transaction never conflicts.
                        Ok(()) => assert!(written.is_empty(), "step {step}: a lost update"),
                        Err(e) => assert!(e.is_retryable(), "step {step}: {e}"),
                    }
                } else {
                    let sync = how % 4 == 3;
                    let options = if sync {
                        WriteOptions::synced()
                    } else {
                        WriteOptions::default()
                    };
                    tx.commit_with(options).expect("a commit with no rival");
                    model = after;
                    committed(&mut durable, &mut commits, &model, &written, sync);
                }
            }
            12 => replay_feed(&db, &mut acked, &model, arg.is_multiple_of(2), step),
            13 => checkpoint_holds(&fs, &db, &model, step),
            _ => {}
        }
        agree(&db, &model, step);
    }
    caught_up_and_clean(&db, MAX_STEPS);
    replay_feed(&db, &mut acked, &model, true, MAX_STEPS);
    db.close().expect("the final close");
}
