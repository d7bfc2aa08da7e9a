//! The read-modify-write workload in transactions (issue 27): read two keys, write both back,
//! commit, retrying on a conflict. Each engine's transactional flavour: Strata's
//! `Db::begin` on a table of (key, value) rows, RocksDB's `OptimisticTransactionDB`, fjall's
//! `OptimisticTxDatabase`; unsynced commits, as the other unsynced rows.

use std::path::Path;

use crate::{CACHE_BYTES, MEMTABLE_BYTES};

/// A store with transactions.
pub(crate) trait TxEngine: Send + Sync {
    /// Writes `key` → `value` outside a transaction (the load).
    fn load(&self, key: u64, value: &[u8]);
    /// Reads `a` and `b` and writes `value` to both, in one transaction; false on a
    /// conflict (nothing written).
    fn rmw(&self, a: u64, b: u64, value: &[u8]) -> bool;
}

pub(crate) fn open(name: &str, dir: &Path) -> Box<dyn TxEngine> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("bench directory");
    match name {
        "strata" => Box::new(StrataTx::open(dir)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(RocksTx::open(dir)),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" => panic!("this build has no RocksDB"),
        "fjall" => Box::new(FjallTx::open(dir)),
        other => panic!("unknown engine {other}"),
    }
}

struct StrataTx {
    db: strata::Db,
}

impl StrataTx {
    fn open(dir: &Path) -> StrataTx {
        let options = strata::Options {
            store: strata::StoreOptions {
                write_buffer_bytes: MEMTABLE_BYTES,
                block_cache_bytes: CACHE_BYTES,
                ..strata::StoreOptions::default()
            },
            auto_analyze: false,
            ..strata::Options::default()
        };
        let db = strata::Db::open(dir, options).expect("strata opens");
        db.create_table("kv", ["k"], strata::TableOptions::default())
            .expect("table");
        StrataTx { db }
    }

    fn row(key: u64, value: &[u8]) -> strata::Record {
        strata::record! { "k" => key as i64, "v" => strata::Value::Bytes(value.to_vec()) }
    }
}

impl TxEngine for StrataTx {
    fn load(&self, key: u64, value: &[u8]) {
        self.db.upsert("kv", Self::row(key, value)).expect("load");
    }

    fn rmw(&self, a: u64, b: u64, value: &[u8]) -> bool {
        let mut tx = self.db.begin().expect("begin");
        let ra = tx.get("kv", &[strata::Value::Int(a as i64)]).expect("get");
        let rb = tx.get("kv", &[strata::Value::Int(b as i64)]).expect("get");
        std::hint::black_box((ra, rb));
        tx.upsert("kv", Self::row(a, value)).expect("upsert");
        tx.upsert("kv", Self::row(b, value)).expect("upsert");
        match tx.commit() {
            Ok(()) => true,
            Err(e) if e.is_retryable() => false,
            Err(e) => panic!("commit: {e}"),
        }
    }
}

#[cfg(feature = "rocksdb")]
struct RocksTx {
    db: rocksdb::OptimisticTransactionDB,
}

#[cfg(feature = "rocksdb")]
impl RocksTx {
    fn open(dir: &Path) -> RocksTx {
        let options = crate::rocks::options();
        RocksTx {
            db: rocksdb::OptimisticTransactionDB::open(&options, dir).expect("rocksdb opens"),
        }
    }
}

#[cfg(feature = "rocksdb")]
impl TxEngine for RocksTx {
    fn load(&self, key: u64, value: &[u8]) {
        self.db.put(crate::key(key), value).expect("load");
    }

    fn rmw(&self, a: u64, b: u64, value: &[u8]) -> bool {
        let txn = self.db.transaction();
        let (ka, kb) = (crate::key(a), crate::key(b));
        let ra = txn.get_for_update(ka, true).expect("get");
        let rb = txn.get_for_update(kb, true).expect("get");
        std::hint::black_box((ra, rb));
        txn.put(ka, value).expect("put");
        txn.put(kb, value).expect("put");
        match txn.commit() {
            Ok(()) => true,
            Err(e)
                if e.kind() == rocksdb::ErrorKind::Busy
                    || e.kind() == rocksdb::ErrorKind::TryAgain =>
            {
                false
            }
            Err(e) => panic!("commit: {e}"),
        }
    }
}

struct FjallTx {
    db: fjall::OptimisticTxDatabase,
    keyspace: fjall::OptimisticTxKeyspace,
}

impl FjallTx {
    fn open(dir: &Path) -> FjallTx {
        let db = fjall::OptimisticTxDatabase::builder(dir)
            .cache_size(CACHE_BYTES as u64)
            .open()
            .expect("fjall opens");
        let keyspace = db
            .keyspace("bench", crate::fjall_keyspace_options)
            .expect("keyspace");
        FjallTx { db, keyspace }
    }
}

impl TxEngine for FjallTx {
    fn load(&self, key: u64, value: &[u8]) {
        self.keyspace.insert(crate::key(key), value).expect("load");
    }

    fn rmw(&self, a: u64, b: u64, value: &[u8]) -> bool {
        use fjall::Readable;
        let mut tx = self
            .db
            .write_tx()
            .expect("begin")
            .durability(Some(fjall::PersistMode::Buffer));
        let (ka, kb) = (crate::key(a), crate::key(b));
        let ra = tx.get(&self.keyspace, ka).expect("get");
        let rb = tx.get(&self.keyspace, kb).expect("get");
        std::hint::black_box((ra, rb));
        tx.insert(&self.keyspace, ka, value);
        tx.insert(&self.keyspace, kb, value);
        tx.commit().expect("commit").is_ok()
    }
}
