//! Replays the checked-in corpora of the `write_batch` and `manifest` fuzz targets through the
//! same checks the targets run (`fuzz/checks/`), so stable `cargo test` exercises them.
//!
//! The seeds are made by `cargo test -p strata --test fuzz_corpus -- --ignored`.

mod common;

#[path = "../../fuzz/checks/backup_manifest.rs"]
mod backup_manifest;
#[path = "../../fuzz/checks/change_log.rs"]
mod change_log;
#[path = "../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../fuzz/checks/engine_model.rs"]
mod engine_model;
#[path = "../../fuzz/checks/key_codec.rs"]
mod key_codec;
#[path = "../../fuzz/checks/manifest.rs"]
mod manifest;
#[path = "../../fuzz/checks/outbox.rs"]
mod outbox;
#[path = "../../fuzz/checks/record.rs"]
mod record;
#[path = "../../fuzz/checks/stats_sketch.rs"]
mod stats_sketch;
#[path = "../../fuzz/checks/txn_state.rs"]
mod txn_state;
#[path = "../../fuzz/checks/write_batch.rs"]
mod write_batch;

use std::path::{Path, PathBuf};

use common::*;
use strata::Store;
use strata::StoreOptions;
use strata::fs::{FileSystem, SimFs};
use strata::lsm::wal::{LogReader, RecoveryMode, peek_log_number};

fn corpus(target: &str) -> PathBuf {
    corpus::dir(target)
}

fn replay(target: &str, check: fn(&[u8])) {
    corpus::replay(target, 4, check);
}

#[test]
fn the_write_batch_corpus_passes_the_fuzz_checks() {
    replay("write_batch", write_batch::check);
}

#[test]
fn the_txn_state_corpus_passes_the_fuzz_checks() {
    replay("txn_state", txn_state::check);
}

/// Writes the seed corpus of the transaction state file, and a write batch with a
/// transaction trailer for the `write_batch` corpus.
#[test]
#[ignore = "regenerates fuzz/corpus/txn_state and a write_batch seed; run by hand"]
fn write_txn_state_seed_corpus() {
    use strata::table::txn_state::TxnState;
    let dir = corpus("txn_state");
    std::fs::create_dir_all(&dir).expect("dir");
    let states = [
        TxnState::default(),
        TxnState {
            complete_through: 1234,
            cut: vec![(1235, 1300)],
        },
        TxnState {
            complete_through: 9,
            cut: vec![(3, 4), (10, 10), (20, 1 << 40)],
        },
    ];
    for (i, s) in states.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i}")), s.encode()).expect("write");
    }
    // A damaged one: the fuzzer starts from refusals too.
    let mut damaged = states[2].encode();
    damaged[30] ^= 1;
    std::fs::write(dir.join("seed-damaged"), damaged).expect("write");
    use strata::fuzzing::{BatchEntry, TransactionTrailer, encode_batch};
    let entry = BatchEntry {
        cf_id: 2,
        seqno: 0,
        kind: strata::fuzzing::ValueKind::Put,
        key: bytes::Bytes::from_static(b"t/k"),
        value: bytes::Bytes::from_static(b"row"),
    };
    let txn = TransactionTrailer {
        id: 77,
        participants: vec![0, 2, 3],
    };
    let batch = encode_batch(77, &[entry], Some(&txn)).expect("encodes");
    std::fs::write(corpus("write_batch").join("seed-transaction-part"), &batch).expect("write");
}

#[test]
fn the_manifest_corpus_passes_the_fuzz_checks() {
    replay("manifest", manifest::check);
}

#[test]
fn the_engine_model_corpus_passes_the_fuzz_checks() {
    corpus::replay("engine_model", 8, engine_model::check);
}

#[test]
fn the_key_codec_corpus_passes_the_fuzz_checks() {
    replay("key_codec", key_codec::check);
}

#[test]
fn the_record_corpus_passes_the_fuzz_checks() {
    replay("record", record::check);
}

#[test]
fn the_outbox_corpus_passes_the_fuzz_checks() {
    replay("outbox", outbox::check);
}

#[test]
fn the_change_log_corpus_passes_the_fuzz_checks() {
    replay("change_log", change_log::check);
}

#[test]
fn the_backup_manifest_corpus_passes_the_fuzz_checks() {
    replay("backup_manifest", backup_manifest::check);
}

/// Writes the seed corpora of the change log (entries from a real feed's writes, a
/// definition, a position) and of backup manifests (from real backups).
#[test]
#[ignore = "regenerates fuzz/corpus/{change_log,backup_manifest}; run by hand"]
fn write_change_log_and_backup_seed_corpus() {
    use strata::{Db, Options, TableBatch, record};

    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(dir.path().join("db"), Options::default()).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .expect("table");
    db.create_feed("f", &["t"]).expect("feed");
    db.insert("t", record! { "id" => 1, "name" => "Ada", "score" => 3.5 })
        .expect("insert");
    db.upsert("t", record! { "id" => 1, "name" => "Ada", "score" => 4.0 })
        .expect("update");
    let mut batch = TableBatch::new();
    batch.delete([strata::Value::Int(1)]);
    batch.insert(record! { "id" => 2, "tags" => strata::Value::Bytes(vec![0, 1, 2]) });
    db.write("t", batch, Default::default()).expect("batch");
    let out = corpus("change_log");
    std::fs::create_dir_all(&out).expect("dir");
    let mut n = 0;
    db.for_each_store(|_, store| {
        let cf = store.cf("sys/changes")?;
        for item in store.iter(&cf, Default::default())? {
            let (_, value) = item?;
            std::fs::write(out.join(format!("seed-entry-{n}")), &value).expect("write");
            n += 1;
        }
        let feeds = store.cf("sys/feeds");
        if let Ok(feeds) = feeds {
            for item in store.iter(&feeds, Default::default())? {
                let (key, value) = item?;
                let name = String::from_utf8_lossy(&key).replace('/', "-");
                std::fs::write(out.join(format!("seed-feeds-{name}")), &value).expect("write");
            }
        }
        Ok(())
    })
    .expect("entries");
    let backups = dir.path().join("backups");
    db.backup(&backups).expect("backup");
    db.insert("t", record! { "id" => 3 }).expect("insert");
    db.backup(&backups).expect("backup");
    let out = corpus("backup_manifest");
    std::fs::create_dir_all(&out).expect("dir");
    for entry in std::fs::read_dir(backups.join("meta")).expect("meta") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_owned();
        std::fs::copy(&path, out.join(format!("seed-{name}"))).expect("copy");
    }
}

#[test]
fn the_stats_sketch_corpus_passes_the_fuzz_checks() {
    replay("stats_sketch", stats_sketch::check);
}

/// Writes the seed corpus of table files' statistics sketches: real ones, from flushes of
/// a table with a skewed, a composite and a sparse field, and a tombstone-only file.
#[test]
#[ignore = "regenerates fuzz/corpus/stats_sketch; run by hand"]
fn write_stats_sketch_seed_corpus() {
    use strata::table::sketch::STATS_PROPERTY;
    use strata::{Db, Options, Projection, record};

    let dir = tempfile::tempdir().expect("dir");
    // No compaction: each flush's file keeps its own sketch.
    let options = Options::from(StoreOptions {
        l0_compaction_trigger: 16,
        ..StoreOptions::default()
    });
    let db = Db::open(dir.path(), options).expect("open");
    db.create_table("t", ["id"], strata::TableOptions::default())
        .expect("table");
    db.create_index("t", "by_ab", ["a", "b"], Projection::KeysOnly)
        .expect("index");
    let out = corpus("stats_sketch");
    std::fs::create_dir_all(&out).expect("dir");
    for round in 0..5i64 {
        for id in 0..(10 + round * 40) {
            let r = match round {
                3 => record! { "id" => id, "a" => 1.5f64 * id as f64 },
                _ => record! { "id" => id, "a" => id % 3, "b" => format!("b{}", id % (round + 2)) },
            };
            db.upsert("t", r).expect("write");
        }
        if round == 4 {
            for id in 0..10i64 {
                db.delete("t", &[id.into()]).expect("delete");
            }
        }
        db.flush().expect("flush");
    }
    db.for_each_store(|_, store| {
        let cf = store.cf("t/t")?;
        for (i, table) in store
            .collected(&cf, STATS_PROPERTY)?
            .into_iter()
            .enumerate()
        {
            if let Some(bytes) = table.property {
                std::fs::write(out.join(format!("seed-{i}")), bytes).expect("write");
            }
        }
        Ok(())
    })
    .expect("sketches");
}

/// Writes the seed corpora of the table formats: keys, records, entries, definitions, outbox
/// entries.
#[test]
#[ignore = "regenerates fuzz/corpus/{key_codec,record,outbox}; run by hand"]
fn write_table_seed_corpora() {
    use strata::table::catalog::{IndexDef, TableDef};
    use strata::table::entry::index_entry;
    use strata::table::key::{KeyFormat, encode_key};
    use strata::{IndexState, Maintenance, Projection, Scope, Value, record};

    let keys = corpus("key_codec");
    std::fs::create_dir_all(&keys).expect("dir");
    let tuples: Vec<Vec<Value>> = vec![
        vec![Value::Int(-5), Value::from("a\0b")],
        vec![Value::Null, Value::Bool(true), Value::Float(-0.0)],
        vec![Value::Int(i64::MAX), Value::Bytes(vec![0, 0xff, 1])],
        vec![Value::Float(f64::NAN), Value::from("")],
        vec![
            Value::Int((1 << 53) + 1),
            Value::Float(9_007_199_254_740_992.0),
        ],
        vec![Value::Int(1 << 53)],
        // Round to 2^53 + 4 from below and above: both kinds of integer with a distance.
        vec![Value::Int((1 << 53) + 3), Value::Int(-7)],
        vec![Value::Float(9_007_199_254_740_996.0)],
        vec![Value::Int((1 << 53) + 5), Value::Int(i64::MIN)],
    ];
    for (format, name) in [
        (KeyFormat::F64, "seed"),
        (KeyFormat::Compact, "seed-compact"),
    ] {
        for (i, pair) in tuples.windows(2).enumerate() {
            let (a, b) = (format.encode_key(&pair[0]), format.encode_key(&pair[1]));
            let mut input = vec![a.len() as u8];
            input.extend(a);
            input.extend(b);
            std::fs::write(keys.join(format!("{name}-{i}")), input).expect("write");
        }
    }
    let records = corpus("record");
    std::fs::create_dir_all(&records).expect("dir");
    // The seeds of version-1 records (`seed-record-v1`, `seed-entry-{1,2}-v1`) were written by
    // the version-1 encoder and stay in the corpus; these are the current version's.
    let r = record! { "id" => 7, "f" => "Redmond", "a" => 2.5, "b" => vec![0u8, 1], "c" => true };
    std::fs::write(records.join("seed-record"), r.encode()).expect("write");
    let wide = record! { "a" => 1, "b" => "x".repeat(300) };
    std::fs::write(records.join("seed-record-wide"), wide.encode()).expect("write");
    let pk = encode_key([&Value::Int(7)]);
    for (i, projection) in [
        Projection::KeysOnly,
        Projection::Include(vec!["a".into()]),
        Projection::All,
    ]
    .into_iter()
    .enumerate()
    {
        let index = IndexDef {
            id: 2,
            name: "ix".into(),
            fields: vec!["f".into()],
            projection,
            state: IndexState::Ready,
            scope: Scope::Local,
            maintenance: Maintenance::Sync,
            unique: false,
        };
        let (k, v) = index_entry(KeyFormat::NEWEST, &index, 0, &pk, &r).expect("entry");
        // The check splits its input in halves: pad the shorter part so the key is the first.
        let mut input = k.clone();
        if v.len() >= k.len() {
            input.resize(v.len(), 0);
        }
        input.extend(&v);
        std::fs::write(records.join(format!("seed-entry-{i}")), input).expect("write");
        let def = TableDef {
            format: 1,
            id: 3,
            name: "customers".into(),
            primary_key: vec!["id".into()],
            shards: 1,
            indexes: vec![index],
            keys: KeyFormat::NEWEST.number(),
            statistics: Default::default(),
            columns: Vec::new(),
        };
        std::fs::write(
            records.join(format!("seed-table-{i}")),
            def.encode().expect("encode"),
        )
        .expect("write");
    }

    use strata::table::outbox::{OutboxEntry, OutboxOp};
    let outbox = corpus("outbox");
    std::fs::create_dir_all(&outbox).expect("dir");
    let pk = encode_key([&Value::Int(7)]);
    let old = {
        let mut k = encode_key([&Value::from("Redmond")]);
        k.extend(&pk);
        k
    };
    let new = {
        let mut k = encode_key([&Value::from("Seattle")]);
        k.extend(&pk);
        k
    };
    let entries = [
        OutboxEntry {
            table_id: 3,
            written_micros: 1_795_000_000_000_000,
            ops: vec![
                OutboxOp {
                    index_id: 4,
                    shard: 2,
                    key: old,
                    value: None,
                },
                OutboxOp {
                    index_id: 4,
                    shard: 0,
                    key: new,
                    value: Some(vec![1, 1]),
                },
            ],
        },
        OutboxEntry {
            table_id: 9,
            written_micros: 0,
            ops: Vec::new(),
        },
        OutboxEntry {
            table_id: 300,
            written_micros: 1,
            ops: vec![OutboxOp {
                index_id: 301,
                shard: 255,
                key: vec![0x20; 40],
                value: Some(r.encode()),
            }],
        },
        OutboxEntry {
            table_id: 5,
            written_micros: u64::MAX,
            ops: vec![OutboxOp {
                index_id: u64::MAX,
                shard: u32::MAX,
                key: Vec::new(),
                value: None,
            }],
        },
    ];
    for (i, e) in entries.iter().enumerate() {
        std::fs::write(outbox.join(format!("seed-entry-{i}")), e.encode()).expect("write");
    }
}

/// Writes the seed corpora from a real store: logged batches, and manifests.
#[test]
#[ignore = "regenerates fuzz/corpus/{write_batch,manifest}; run by hand"]
fn write_seed_corpora() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::open(dir, sim_options(&fs)).expect("open");
    let users = store.create_column_family("users").expect("create");
    let mut rng = Rng::new(3);
    for i in 0..6 {
        let ops = random_batch(&mut rng, &["default", "users"], 20, 4);
        write(&store, &ops, i % 2 == 0).expect("write");
    }
    store.delete(&users, b"gone").expect("delete");
    let log = *store.log_numbers().last().expect("a log");
    let log_bytes = fs
        .contents(&dir.join(format!("{log:06}.log")))
        .expect("log");
    let batches = corpus("write_batch");
    std::fs::create_dir_all(&batches).expect("dir");
    let mut reader = LogReader::new(
        &log_bytes,
        peek_log_number(&log_bytes).expect("a fragment"),
        RecoveryMode::AbsoluteConsistency,
    );
    let mut n = 0;
    while let Some(record) = reader.next_record().expect("an intact log") {
        std::fs::write(batches.join(format!("batch-{n}")), &record.data).expect("write");
        n += 1;
    }

    store.flush(&users).expect("flush");
    store.flush_all().expect("flush");
    let manifests = corpus("manifest");
    std::fs::create_dir_all(&manifests).expect("dir");
    for name in fs.list(dir).expect("list") {
        if name.starts_with("MANIFEST-") {
            let bytes = fs.contents(&dir.join(&name)).expect("manifest");
            std::fs::write(manifests.join("manifest-file"), &bytes).expect("write");
            let mut reader = LogReader::new(
                &bytes,
                peek_log_number(&bytes).expect("a fragment"),
                RecoveryMode::AbsoluteConsistency,
            );
            let mut i = 0;
            while let Some(record) = reader.next_record().expect("intact") {
                std::fs::write(manifests.join(format!("edit-{i}")), &record.data).expect("write");
                i += 1;
            }
        }
    }
}
