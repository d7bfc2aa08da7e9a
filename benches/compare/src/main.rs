//! The key-value benchmark, side by side: the same workloads (after RocksDB's `db_bench`) on
//! Strata, RocksDB and fjall, one engine after another in one run, and a table of ops/s with
//! Strata's ratio to each peer and to the best of them.
//!
//! The same settings for all three:
//! - 16-byte keys (`{:016}` of a number below `--keys`) and 100-byte values of random,
//!   incompressible bytes;
//! - no compression; bloom filters of 10 bits per key; a 64 MiB block cache; 64 MiB
//!   memtables;
//! - unsynced writes are handed to the operating system before the write returns (they
//!   survive the process, not the machine): RocksDB's and Strata's default, and fjall's
//!   `PersistMode::Buffer`; synced writes wait for `fdatasync` (fjall: `SyncData`).
//!
//! Usage: `strata-compare [--keys N] [--synced N] [--engines strata,rocksdb,fjall]
//! [--rounds N] [--dir DIR]`. With `--rounds N` (default 1) the engines take turns N times
//! (strata, rocksdb, fjall, strata, ...) and each figure is the median of its N runs: on a
//! noisy machine one run moves by 10 % or more. `benches/compare/run.sh` installs what
//! RocksDB's build needs and runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_compare::median;

const VALUE_BYTES: usize = 100;
const CACHE_BYTES: usize = 64 << 20;
const MEMTABLE_BYTES: usize = 64 << 20;

/// What every engine is asked to do.
#[cfg(feature = "rocksdb")]
mod rocks;
mod txn;

trait Engine: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8], sync: bool);
    /// Whether the key was found.
    fn get(&self, key: &[u8]) -> bool;
    /// Reads every entry in key order; returns how many.
    fn scan(&self) -> u64;
    /// Seeks to `key` (a new iterator each time) and reads up to `n` entries from there.
    fn seek_next(&self, key: &[u8], n: usize) -> usize;
    /// Flushes memtables and compacts everything, waiting until done.
    fn compact(&self);
}

struct Strata {
    store: strata::Store,
    cf: strata::lsm::ColumnFamily,
}

impl Strata {
    fn open(dir: &Path) -> Strata {
        let options = strata::StoreOptions {
            write_buffer_bytes: MEMTABLE_BYTES,
            block_cache_bytes: CACHE_BYTES,
            ..strata::StoreOptions::default()
        };
        let store = strata::Store::open(dir, options).expect("strata opens");
        let cf = store.default_cf();
        Strata { store, cf }
    }
}

impl Engine for Strata {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) {
        let mut batch = strata::lsm::WriteBatch::new();
        batch.put(&self.cf, key, value).expect("put");
        let options = if sync {
            strata::WriteOptions::synced()
        } else {
            strata::WriteOptions::default()
        };
        self.store.write(batch, options).expect("write");
    }

    fn get(&self, key: &[u8]) -> bool {
        self.store.get(&self.cf, key).expect("get").is_some()
    }

    fn scan(&self) -> u64 {
        let mut cursor = self
            .store
            .cursor(&self.cf, strata::lsm::ReadOptions::default())
            .expect("cursor");
        cursor.seek_to_first();
        let mut n = 0;
        while cursor.valid() {
            std::hint::black_box(cursor.value());
            n += 1;
            cursor.next();
        }
        cursor.status().expect("scan");
        n
    }

    fn seek_next(&self, key: &[u8], n: usize) -> usize {
        let mut cursor = self
            .store
            .cursor(&self.cf, strata::lsm::ReadOptions::default())
            .expect("cursor");
        cursor.seek(key);
        let mut read = 0;
        while cursor.valid() && read < n {
            std::hint::black_box(cursor.value());
            read += 1;
            cursor.next();
        }
        read
    }

    fn compact(&self) {
        self.store.compact_range(&self.cf, ..).expect("compact");
    }
}

struct Fjall {
    db: fjall::Database,
    keyspace: fjall::Keyspace,
}

impl Fjall {
    fn open(dir: &Path) -> Fjall {
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE_BYTES as u64)
            .open()
            .expect("fjall opens");
        let keyspace = db
            .keyspace("bench", fjall_keyspace_options)
            .expect("keyspace");
        Fjall { db, keyspace }
    }
}

/// The harness's shared settings for fjall's keyspace (plain and transactional).
fn fjall_keyspace_options() -> fjall::KeyspaceCreateOptions {
    fjall::KeyspaceCreateOptions::default()
        .max_memtable_size(MEMTABLE_BYTES as u64)
        .data_block_compression_policy(fjall::config::CompressionPolicy::disabled())
}

impl Engine for Fjall {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) {
        let mode = if sync {
            fjall::PersistMode::SyncData
        } else {
            fjall::PersistMode::Buffer
        };
        let mut batch = self.db.batch().durability(Some(mode));
        batch.insert(&self.keyspace, key, value);
        batch.commit().expect("write");
    }

    fn get(&self, key: &[u8]) -> bool {
        self.keyspace.get(key).expect("get").is_some()
    }

    fn scan(&self) -> u64 {
        let mut n = 0;
        for guard in self.keyspace.iter() {
            let (_, value) = guard.into_inner().expect("scan");
            std::hint::black_box(value);
            n += 1;
        }
        n
    }

    fn seek_next(&self, key: &[u8], n: usize) -> usize {
        let mut read = 0;
        for guard in self.keyspace.range(key..).take(n) {
            let (_, value) = guard.into_inner().expect("seek");
            std::hint::black_box(value);
            read += 1;
        }
        read
    }

    fn compact(&self) {
        self.keyspace.rotate_memtable_and_wait().expect("flush");
        self.keyspace.major_compact().expect("compact");
    }
}

/// xorshift64*, so every engine sees the same keys in the same order.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn key(i: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key.copy_from_slice(format!("{i:016}").as_bytes());
    key
}

/// A key that is never written, sorting among the written ones: the 15-digit form of `i` and
/// an `x`, after every key of `i * 10 + digit` and before those of `(i + 1) * 10`. Table and
/// memtable key ranges cannot rule it out; only a search or a filter can.
fn missing_key(i: u64) -> [u8; 16] {
    let mut key = [0u8; 16];
    key.copy_from_slice(format!("{i:015}x").as_bytes());
    key
}

fn value(rng: &mut Rng) -> [u8; VALUE_BYTES] {
    let mut value = [0u8; VALUE_BYTES];
    for chunk in value.chunks_mut(8) {
        let bytes = rng.next().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    value
}

struct Config {
    keys: u64,
    synced: u64,
    engines: Vec<String>,
    rounds: usize,
    dir: PathBuf,
}

fn parse_args() -> Config {
    let mut config = Config {
        keys: 1_000_000,
        synced: 4000,
        engines: if cfg!(feature = "rocksdb") {
            vec!["strata".into(), "rocksdb".into(), "fjall".into()]
        } else {
            vec!["strata".into(), "fjall".into()]
        },
        rounds: 1,
        dir: std::env::temp_dir().join("strata-compare"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("{arg} needs a value");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "--keys" => config.keys = value().parse().expect("--keys: a number"),
            "--synced" => config.synced = value().parse().expect("--synced: a number"),
            "--engines" => config.engines = value().split(',').map(str::to_owned).collect(),
            "--dir" => config.dir = PathBuf::from(value()),
            "--rounds" => {
                config.rounds = value().parse().expect("--rounds: a number");
                assert!(config.rounds > 0, "--rounds: at least 1");
            }
            other => {
                eprintln!(
                    "unknown argument {other}\nusage: strata-compare [--keys N] [--synced N] \
                     [--engines strata,rocksdb,fjall] [--rounds N] [--dir DIR]"
                );
                std::process::exit(2)
            }
        }
    }
    config
}

const WORKLOADS: [&str; 16] = [
    "fillseq",
    "fillrandom",
    "readmissing",
    "overwrite",
    "readrandom",
    "readrandom, 2 threads",
    "compact (s)",
    "readrandom, compacted",
    "readseq",
    "seekrandom + next 10",
    "synced writes, 1 thread",
    "synced writes, 8 threads",
    "fillrandom, 2 threads",
    "synced writes, busy store",
    "read-modify-write txn",
    "read-modify-write txn, 2 thr",
];

fn open(name: &str, dir: &Path) -> Arc<dyn Engine> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("bench directory");
    match name {
        "strata" => Arc::new(Strata::open(dir)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Arc::new(rocks::Rocks::open(dir)),
        #[cfg(not(feature = "rocksdb"))]
        "rocksdb" => {
            panic!("this build has no RocksDB: build with the `rocksdb` feature (the default)")
        }
        "fjall" => Arc::new(Fjall::open(dir)),
        other => panic!("unknown engine {other}"),
    }
}

/// Ops per second of `ops` operations that took `elapsed`.
fn rate(ops: u64, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64()
}

fn timed(ops: u64, f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    rate(ops, started.elapsed())
}

/// Runs `ops` operations split evenly over `threads` threads, each calling `op` with its own
/// random numbers (thread `t` seeds them with `100 + t`); ops/s of the whole.
fn threaded(threads: u64, ops: u64, op: impl Fn(&mut Rng) + Sync) -> f64 {
    let per_thread = ops / threads;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let op = &op;
            scope.spawn(move || {
                let mut rng = Rng::new(100 + t);
                for _ in 0..per_thread {
                    op(&mut rng);
                }
            });
        }
    });
    rate(per_thread * threads, started.elapsed())
}

/// Runs every workload on one engine, in [`WORKLOADS`] order; one figure per workload (ops/s,
/// or seconds for the compaction).
fn run(name: &str, config: &Config) -> Vec<f64> {
    let dir = config.dir.join(name);
    let n = config.keys;
    let mut results = Vec::new();
    let mut values = Rng::new(42);

    let engine = open(name, &dir);
    results.push(timed(n, || {
        for i in 0..n {
            engine.put(&key(i), &value(&mut values), false);
        }
    }));
    drop(engine);

    let engine = open(name, &dir);
    let mut keys = Rng::new(1);
    results.push(timed(n, || {
        for _ in 0..n {
            engine.put(&key(keys.below(n)), &value(&mut values), false);
        }
    }));
    // Misses right after the fill, most of the data still in memtables.
    let mut missing = Rng::new(5);
    let mut found = 0u64;
    results.push(timed(n, || {
        for _ in 0..n {
            found += u64::from(engine.get(&missing_key(missing.below(n))));
        }
    }));
    assert_eq!(found, 0, "{name}: readmissing found keys never written");
    results.push(timed(n, || {
        for _ in 0..n {
            engine.put(&key(keys.below(n)), &value(&mut values), false);
        }
    }));
    let check_found = |found: u64| {
        // Two fills of n random keys cover about 1 - 1/e² of them.
        assert!(
            found > n / 2,
            "{name}: readrandom found only {found} of {n}"
        );
    };
    let read_random = |engine: &Arc<dyn Engine>, seed: u64| {
        let mut keys = Rng::new(seed);
        let mut found = 0u64;
        let ops = timed(n, || {
            for _ in 0..n {
                found += u64::from(engine.get(&key(keys.below(n))));
            }
        });
        check_found(found);
        ops
    };
    results.push(read_random(&engine, 2));
    let found = std::sync::atomic::AtomicU64::new(0);
    results.push(threaded(2, n, |rng| {
        if engine.get(&key(rng.below(n))) {
            found.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }));
    check_found(found.into_inner());
    let started = Instant::now();
    engine.compact();
    results.push(started.elapsed().as_secs_f64());
    results.push(read_random(&engine, 3));
    let mut scanned = 0;
    let readseq = timed(n, || scanned = engine.scan());
    results.push(readseq * scanned as f64 / n as f64);
    let seeks = n / 10;
    let mut seek_keys = Rng::new(4);
    results.push(timed(seeks, || {
        for _ in 0..seeks {
            std::hint::black_box(engine.seek_next(&key(seek_keys.below(n)), 10));
        }
    }));
    for threads in [1u64, 8] {
        results.push(threaded(threads, config.synced, |rng| {
            let k = key(rng.below(n));
            engine.put(&k, &value(rng), true);
        }));
    }
    drop(engine);

    let engine = open(name, &dir);
    results.push(threaded(2, n, |rng| {
        let k = key(rng.below(n));
        engine.put(&k, &value(rng), false);
    }));
    // One synced writer on the store that has just taken those writes: its flushes and
    // compactions still running write table files while each write waits for its log's sync.
    results.push(threaded(1, config.synced, |rng| {
        let k = key(rng.below(n));
        engine.put(&k, &value(rng), true);
    }));
    drop(engine);

    // Transactions: read two keys, write both, commit; a conflict retries (2 threads). On a
    // tenth of the keys, loaded first, so both threads meet now and then.
    let engine = txn::open(name, &dir);
    let keys = (n / 10).max(2);
    for i in 0..keys {
        engine.load(i, &value(&mut values));
    }
    let ops = n / 5;
    for threads in [1u64, 2] {
        let retries = std::sync::atomic::AtomicU64::new(0);
        results.push(threaded(threads, ops, |rng| {
            let (a, b) = (rng.below(keys), rng.below(keys));
            let v = value(rng);
            while !engine.rmw(a, b, &v) {
                retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
        eprintln!(
            "{name}: read-modify-write, {threads} thread(s): {} retries",
            retries.into_inner()
        );
    }
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    results
}

fn main() {
    let config = parse_args();
    println!(
        "{} keys of 16 bytes, values of {VALUE_BYTES} bytes, {} synced writes per synced \
         workload, median of {} round(s), in {}",
        config.keys,
        config.synced,
        config.rounds,
        config.dir.display()
    );
    let mut runs: Vec<Vec<Vec<f64>>> = vec![Vec::new(); config.engines.len()];
    for round in 1..=config.rounds {
        for (engine, name) in config.engines.iter().enumerate() {
            eprintln!("running {name} (round {round} of {}) ...", config.rounds);
            let started = Instant::now();
            runs[engine].push(run(name, &config));
            eprintln!("{name} done in {:.0} s", started.elapsed().as_secs_f64());
        }
    }
    let columns: Vec<(String, Vec<f64>)> = config
        .engines
        .iter()
        .zip(&runs)
        .map(|(name, runs)| {
            let medians = (0..WORKLOADS.len())
                .map(|row| median(runs.iter().map(|run| run[row]).collect()))
                .collect();
            (name.clone(), medians)
        })
        .collect();

    let mut header = format!("| {:<26} |", "workload (ops/s)");
    for (name, _) in &columns {
        header += &format!(" {name:>12} |");
    }
    let strata = columns.iter().position(|(name, _)| name == "strata");
    let peers: Vec<usize> = (0..columns.len()).filter(|&i| Some(i) != strata).collect();
    if strata.is_some() {
        for &peer in &peers {
            header += &format!(" strata/{:<7} |", columns[peer].0);
        }
        if peers.len() > 1 {
            header += " strata/best |";
        }
    }
    println!("{header}");
    println!(
        "|{}|",
        header[1..header.len() - 1]
            .split('|')
            .map(|cell| "-".repeat(cell.len()))
            .collect::<Vec<_>>()
            .join("|")
    );
    for (row, workload) in WORKLOADS.iter().enumerate() {
        let mut line = format!("| {workload:<26} |");
        for (_, results) in &columns {
            if workload.ends_with("(s)") {
                line += &format!(" {:>12.2} |", results[row]);
            } else {
                line += &format!(" {:>12.0} |", results[row]);
            }
        }
        if let Some(s) = strata {
            for &peer in &peers {
                // For the compaction time, lower is better: the ratio is peer/strata, so a
                // ratio above 1 means Strata is ahead in every row.
                let ratio = if workload.ends_with("(s)") {
                    columns[peer].1[row] / columns[s].1[row]
                } else {
                    columns[s].1[row] / columns[peer].1[row]
                };
                line += &format!(" {ratio:>14.2} |");
            }
            if peers.len() > 1 {
                let ratio = peers
                    .iter()
                    .map(|&peer| {
                        if workload.ends_with("(s)") {
                            columns[peer].1[row] / columns[s].1[row]
                        } else {
                            columns[s].1[row] / columns[peer].1[row]
                        }
                    })
                    .fold(f64::INFINITY, f64::min);
                line += &format!(" {ratio:>11.2} |");
            }
        }
        println!("{line}");
    }
}
