//! Sharded tables, global indexes and async maintenance, against a brute-force model.
//!
//! - Differential: tables of 1, 3 and 8 shards with local sync, local async and global
//!   indexes of all three projections; writes go on while the indexer runs (or is paused, so
//!   a backlog is certain). A strong read through every plan equals a brute-force filter at
//!   every moment; an eventual read never returns a row that does not match, nor one twice;
//!   after `wait_for_indexes`, eventual reads equal it too, and `verify` is clean.
//! - Crash: random writes on `SimFs` with the indexer applying (or paused with a backlog); after
//!   a crash at any moment, the reopened database holds every synced write and, once its
//!   indexes caught up, verifies clean.
//! - The outbox's life: lag, back-pressure, an index dropped and recreated with entries
//!   pending, shard directories.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::Rng;
use common::tables::{
    Model, brute_force, load, random_index, random_predicate, random_record, sorted,
};
use strata::StoreOptions;
use strata::fs::SimFs;
use strata::{
    Consistency, Db, Hint, IndexOptions, Options, Predicate, Projection, Query, Record, TableBatch,
    Value, WriteOptions, record,
};

fn run(db: &Db, q: &Query) -> Vec<Record> {
    db.query("t", q).unwrap().collect::<Result<_, _>>().unwrap()
}

/// Every query, through every plan: strong reads equal the model; eventual ones are a subset
/// of it without duplicates (equal, when `caught_up`).
fn check_queries(
    db: &Db,
    all: &Model,
    names: &[String],
    rng: &mut Rng,
    label: &str,
    caught_up: bool,
) {
    for _ in 0..40 {
        let mut q = Query::default();
        for _ in 0..1 + rng.below(3) {
            q.predicates.push(random_predicate(rng));
        }
        let expect = sorted(brute_force(all, &q));
        let mut hints: Vec<Option<Hint>> = vec![None, Some(Hint::Scan)];
        hints.extend(names.iter().map(|n| Some(Hint::Index(n.clone()))));
        for hint in hints {
            let mut q = q.clone();
            q.hint = hint;
            let strong = run(db, &q.clone().consistency(Consistency::Strong));
            assert_eq!(
                sorted(strong),
                expect,
                "{label}: strong {q:?}\n{}",
                db.explain("t", &q).unwrap()
            );
            let eventual = sorted(run(db, &q));
            for pair in eventual.windows(2) {
                assert_ne!(pair[0], pair[1], "{label}: a row twice for {q:?}");
            }
            for row in &eventual {
                assert!(
                    expect.contains(row),
                    "{label}: eventual {q:?} returned {row:?}"
                );
            }
            if caught_up {
                assert_eq!(eventual, expect, "{label}: caught-up eventual {q:?}");
            }
        }
        // Ordered with a limit: the shards' streams merge in index order.
        let ordered = q.clone().order_by(["u", "id", "sub"], false).limit(7);
        let mut expect = brute_force(all, &ordered);
        expect.sort_by_key(|r| {
            [
                r.value("u").clone(),
                r.value("id").clone(),
                r.value("sub").clone(),
            ]
        });
        expect.truncate(7);
        let got = run(db, &ordered.consistency(Consistency::Strong));
        assert_eq!(got, expect, "{label}: ordered {q:?}");
    }
}

#[test]
fn strong_reads_equal_a_scan_and_eventual_reads_never_return_a_wrong_row() {
    for (shards, seed) in [(1u32, 1u64), (3, 2), (8, 3), (3, 4)] {
        let label = format!("{shards} shards, seed {seed}");
        let mut rng = Rng::raw(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.create_table(
            "t",
            ["id", "sub"],
            strata::TableOptions::default().shards(shards),
        )
        .unwrap();
        let mut all = Model::new();
        load(&db, &mut all, &mut rng, 80);
        let kinds = [
            IndexOptions::local(),
            IndexOptions::local_async(),
            IndexOptions::global(),
            IndexOptions::global(),
        ];
        let mut names = Vec::new();
        for (i, kind) in kinds.into_iter().enumerate() {
            let (fields, projection) = random_index(&mut rng);
            let name = format!("ix{i}");
            db.create_index("t", &name, &fields, kind.projection(projection))
                .unwrap();
            names.push(name);
        }
        // With the indexer running.
        for _ in 0..4 {
            load(&db, &mut all, &mut rng, 30);
            check_queries(&db, &all, &names, &mut rng, &label, false);
        }
        // With a certain backlog.
        db.pause_indexer();
        for _ in 0..3 {
            load(&db, &mut all, &mut rng, 30);
        }
        assert!(db.index_lag().unwrap().pending_entries > 0, "{label}");
        check_queries(&db, &all, &names, &mut rng, &label, false);
        db.resume_indexer();
        db.wait_for_indexes().unwrap();
        assert_eq!(db.index_lag().unwrap().pending_entries, 0, "{label}");
        check_queries(&db, &all, &names, &mut rng, &label, true);
        if seed % 2 == 0 {
            db.analyze("t").unwrap();
            db.flush().unwrap();
            check_queries(&db, &all, &names, &mut rng, &label, true);
        }
        let report = db.verify("t").unwrap();
        assert!(report.is_clean(), "{label}: {report}");
        assert_eq!(report.rows, all.len() as u64, "{label}");
        db.close().unwrap();
    }
}

fn sim_options(fs: &SimFs) -> Options {
    Options::from(StoreOptions {
        fs: Arc::new(fs.clone()),
        write_buffer_bytes: 16 << 10,
        ..StoreOptions::default()
    })
}

fn reopen_caught_up(fs: &SimFs, label: &str) -> Db {
    let db = Db::open("/db", sim_options(fs)).unwrap();
    db.wait_for_indexes().unwrap();
    let report = db.verify("t").unwrap();
    assert!(report.is_clean(), "{label}: {report}");
    db
}

#[test]
fn after_a_crash_with_the_indexer_mid_way_the_indexes_catch_up_clean() {
    for seed in 1..=6u64 {
        let mut rng = Rng::raw(seed.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let fs = SimFs::new();
        let db = Db::open("/db", sim_options(&fs)).unwrap();
        db.create_table(
            "t",
            ["id", "sub"],
            strata::TableOptions::default().shards(3),
        )
        .unwrap();
        db.create_index("t", "by_u", ["u"], Projection::KeysOnly)
            .unwrap();
        db.create_index(
            "t",
            "by_s",
            ["s"],
            IndexOptions::global().projection(Projection::All),
        )
        .unwrap();
        db.create_index(
            "t",
            "by_skew",
            ["skew", "f"],
            IndexOptions::local_async().projection(Projection::Include(vec!["n".into()])),
        )
        .unwrap();
        let mut model: BTreeMap<(i64, i64), Option<Record>> = BTreeMap::new();
        for step in 0..40 {
            let label = format!("seed {seed} step {step}");
            if step % 10 == 5 {
                db.pause_indexer();
            } else if step % 10 == 8 {
                db.resume_indexer();
            }
            let mut batch = TableBatch::new();
            let mut written = BTreeMap::new();
            for _ in 0..1 + rng.below(20) {
                let (id, sub) = (rng.below(200) as i64, rng.below(2) as i64);
                if rng.below(5) == 0 {
                    batch.delete([Value::Int(id), Value::Int(sub)]);
                    written.insert((id, sub), None);
                } else {
                    let r = random_record(&mut rng, id, sub);
                    batch.upsert(r.clone());
                    written.insert((id, sub), Some(r));
                }
            }
            let sync = rng.below(3) == 0;
            let options = if sync {
                WriteOptions::synced()
            } else {
                WriteOptions::default()
            };
            db.write("t", batch, options).unwrap();
            model.extend(written.clone());
            if sync {
                // Every row of a synced batch survives (with the earlier writes of the shards
                // it reached); whatever survives, the indexes catch up with it.
                let survivor = reopen_caught_up(&fs.crashed_copy(), &label);
                for ((id, sub), want) in &written {
                    let got = survivor
                        .get("t", &[Value::Int(*id), Value::Int(*sub)])
                        .unwrap();
                    assert_eq!(
                        got.as_ref(),
                        want.as_ref(),
                        "{label}: synced row ({id}, {sub})"
                    );
                }
                survivor.close().unwrap();
            } else if rng.below(3) == 0 {
                // The indexer may be between an index shard's write and the outbox delete.
                reopen_caught_up(&fs.crashed_copy(), &label)
                    .close()
                    .unwrap();
            }
            if step == 20 {
                // A global index backfilled while crashes are taken: an interrupted backfill
                // resumes at open, and no entry outlives its row.
                std::thread::scope(|s| {
                    let h = s.spawn(|| {
                        db.create_index("t", "by_u_global", ["u", "s"], IndexOptions::global())
                    });
                    for _ in 0..4 {
                        reopen_caught_up(&fs.crashed_copy(), &label)
                            .close()
                            .unwrap();
                    }
                    h.join().unwrap().unwrap();
                });
            }
        }
        db.resume_indexer();
        db.wait_for_indexes().unwrap();
        assert!(db.verify("t").unwrap().is_clean());
        db.close().unwrap();
        let db = reopen_caught_up(&fs, &format!("seed {seed} after close"));
        for ((id, sub), want) in &model {
            let got = db.get("t", &[Value::Int(*id), Value::Int(*sub)]).unwrap();
            assert_eq!(
                got.as_ref(),
                want.as_ref(),
                "seed {seed}: row ({id}, {sub})"
            );
        }
    }
}

/// An async index's entry can be left over from an earlier version of its row (a global
/// index's old and new entries are written to two shards one after the other); a read
/// through it re-derives the entry from the row it fetched, so the row comes back once.
#[test]
fn a_leftover_async_entry_never_yields_a_row_twice() {
    use strata::table::key::encode_key;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("t", "by_x", ["x"], IndexOptions::local_async())
        .unwrap();
    db.insert("t", record! { "id" => 1, "x" => 20 }).unwrap();
    db.wait_for_indexes().unwrap();
    // The entry the row had when x was 10, as if its removal had not been applied yet.
    let mut stale = encode_key([&Value::Int(10)]);
    stale.extend(encode_key([&Value::Int(1)]));
    let cf = db.raw_store().cf("i/t/by_x").unwrap();
    db.raw_store().put(&cf, &stale, &[1, 0]).unwrap();

    let q = Query::default()
        .filter(Predicate::new("x", strata::Op::Ge(Value::Int(0))))
        .hint(Hint::Index("by_x".into()));
    for consistency in [Consistency::Eventual, Consistency::Strong] {
        let rows = run(&db, &q.clone().consistency(consistency));
        assert_eq!(
            rows,
            vec![record! { "id" => 1, "x" => 20 }],
            "{consistency:?}"
        );
    }
    // `verify` sees it for what it is.
    let report = db.verify("t").unwrap();
    assert_eq!(report.problem_count(), 1, "{report}");
}

#[test]
fn lag_is_observable_and_writers_wait_when_the_outbox_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        max_pending_index_entries: 5,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .unwrap();
    db.create_index("t", "by_x", ["x"], IndexOptions::global())
        .unwrap();
    db.pause_indexer();
    for id in 0..5 {
        db.insert("t", record! { "id" => id, "x" => id * 10 })
            .unwrap();
    }
    let lag = db.index_lag().unwrap();
    assert_eq!(lag.pending_entries, 5);
    // The age is wall-clock time (entries outlive the process), which a clock step can move
    // either way: the test asks only that pending entries have one, and none once applied.
    assert!(lag.oldest_pending.is_some(), "{lag:?}");
    assert!(
        db.wait_for_indexes().is_err(),
        "waiting on a paused indexer fails"
    );
    std::thread::scope(|s| {
        let writer = s.spawn(|| db.insert("t", record! { "id" => 99, "x" => 990 }));
        while db.index_lag().unwrap().throttled_writes == 0 {
            std::thread::yield_now();
        }
        assert!(
            !writer.is_finished(),
            "the sixth write waits for the indexer"
        );
        db.resume_indexer();
        writer.join().unwrap().unwrap();
    });
    db.wait_for_indexes().unwrap();
    let lag = db.index_lag().unwrap();
    assert_eq!((lag.pending_entries, lag.oldest_pending), (0, None));
    assert_eq!(lag.throttled_writes, 1);
    assert!(lag.applied_entries >= 6);
    let q = Query::default().filter(Predicate::eq("x", 990));
    assert_eq!(run(&db, &q).len(), 1);
}

#[test]
fn entries_of_a_dropped_index_are_not_applied_to_its_namesake() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default().shards(3))
        .unwrap();
    db.create_index("t", "ix", ["x"], IndexOptions::global())
        .unwrap();
    db.pause_indexer();
    for id in 0..20 {
        db.insert("t", record! { "id" => id, "x" => id % 4, "y" => id % 5 })
            .unwrap();
    }
    // Same name, other field: the pending entries name the old index's id.
    db.drop_index("t", "ix").unwrap();
    db.create_index("t", "ix", ["y"], IndexOptions::global())
        .unwrap();
    db.resume_indexer();
    db.wait_for_indexes().unwrap();
    let report = db.verify("t").unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.indexes[0].entries, 20);
}

#[test]
fn shards_live_in_their_own_directories_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let options = || Options {
        shard_dirs: vec![elsewhere.path().join("one")],
        ..Options::default()
    };
    let db = Db::open(dir.path(), options()).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default().shards(3))
        .unwrap();
    db.create_index(
        "t",
        "by_x",
        ["x"],
        IndexOptions::global().projection(Projection::All),
    )
    .unwrap();
    for id in 0..300 {
        db.insert("t", record! { "id" => id, "x" => id % 100 })
            .unwrap();
    }
    db.close().unwrap();
    assert!(elsewhere.path().join("one").join("CURRENT").exists());
    assert!(dir.path().join("shard-2").join("CURRENT").exists());
    assert!(
        !dir.path().join("shard-1").exists(),
        "shard 1 lives elsewhere"
    );

    let db = Db::open(dir.path(), options()).unwrap();
    db.wait_for_indexes().unwrap();
    assert!(db.verify("t").unwrap().is_clean());
    let mut per_store = Vec::new();
    db.for_each_store(|n, store| {
        let cf = store.cf("t/t")?;
        per_store.push((n, store.iter(&cf, Default::default())?.count()));
        Ok(())
    })
    .unwrap();
    assert_eq!(per_store.iter().map(|(_, c)| c).sum::<usize>(), 300);
    assert!(
        per_store.iter().all(|(_, c)| *c > 50),
        "rows spread over shards: {per_store:?}"
    );
    let q = Query::default().filter(Predicate::eq("x", 3));
    let plan = db.explain("t", &q).unwrap();
    assert_eq!(plan.chosen.index.as_deref(), Some("by_x"), "{plan}");
    assert_eq!(run(&db, &q).len(), 3);
}

/// A global index's backfill writes entries into other shards' stores than the rows it read,
/// which may have been written unsynced: whichever log sync of the backfill fails (and the
/// machine then loses power), no entry survives its row, so after reopen — where the backfill
/// resumes — `verify` is clean.
#[test]
fn a_failed_sync_during_a_global_backfill_never_leaves_an_entry_without_its_row() {
    use strata::fs::OpKind;
    for nth in 1..=8u64 {
        let fs = SimFs::new();
        let options = || {
            Options::from(StoreOptions {
                fs: Arc::new(fs.clone()),
                ..StoreOptions::default()
            })
        };
        let db = Db::open("/db", options()).unwrap();
        db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
            .unwrap();
        for id in 0..200 {
            db.insert("t", record! { "id" => id, "x" => id % 13 })
                .unwrap();
        }
        fs.fail_nth(OpKind::Sync, fs.op_count(OpKind::Sync) + nth);
        let created = db.create_index("t", "by_x", ["x"], IndexOptions::global());
        let survivor = fs.crashed_copy();
        drop(db);
        let db = Db::open(
            "/db",
            Options::from(StoreOptions {
                fs: Arc::new(survivor),
                ..StoreOptions::default()
            }),
        )
        .unwrap();
        db.wait_for_indexes().unwrap();
        let Ok(report) = db.verify("t") else {
            // The index was never recorded (the first sync failed): nothing to check.
            assert!(
                created
                    .as_ref()
                    .is_err_and(|e| e.is_io() || e.is_read_only()),
                "sync {nth}: {created:?}"
            );
            continue;
        };
        assert!(report.is_clean(), "sync {nth} ({created:?}): {report}");
    }
}

/// Regression (found by the `engine_model` fuzz target): each shard store has its own log, and
/// a synced write used to sync only the stores it wrote. An unsynced row in another shard was
/// then lost to a power cut, though a synced write promises every earlier write is durable.
#[test]
fn a_synced_write_makes_earlier_writes_to_every_shard_durable() {
    let fs = SimFs::new();
    let db = Db::open("/db", sim_options(&fs)).unwrap();
    db.create_table("t", ["id"], strata::TableOptions::default().shards(4))
        .unwrap();
    db.create_table("other", ["id"], strata::TableOptions::default())
        .unwrap();
    // Unsynced rows in every shard, and in another table.
    for id in 0..32i64 {
        db.insert("t", record! { "id" => id }).unwrap();
    }
    db.insert("other", record! { "id" => 1 }).unwrap();
    // One synced row, in one shard.
    let mut batch = TableBatch::new();
    batch.insert(record! { "id" => 100 });
    db.write("t", batch, WriteOptions::synced()).unwrap();
    let survivor = fs.crashed_copy();
    let after = Db::open("/db", sim_options(&survivor)).unwrap();
    let rows = after.query("t", &Query::default()).unwrap().count();
    assert_eq!(
        rows, 33,
        "every row written before the synced one survives a power cut"
    );
    assert!(after.get("other", &[Value::Int(1)]).unwrap().is_some());
    after.close().unwrap();
    db.close().unwrap();
}
