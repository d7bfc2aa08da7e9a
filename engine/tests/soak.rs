//! The soak run: a bounded, mixed read/write load on a sharded table with a sync and a global
//! async index, long enough for flushes, compactions and the indexer to reach a steady state.
//! Every 10 s it samples the resident memory, the open file descriptors, the slowest write,
//! the index lag and the files per level. It then checks three things:
//!
//! - memory does not grow: the peak of the last quarter is within 10 % plus 16 MiB of the
//!   peak of the second quarter (the first quarter warms the caches and memtables);
//! - file descriptors do not grow: within the same quarters, at most 16 more;
//! - no write waits longer than `STRATA_SOAK_MAX_STALL_MS` (default 2,000 ms), the stall
//!   budget this run allows for a write stopped behind compaction.
//!
//! Not in CI: it runs for `STRATA_SOAK_SECONDS` (default 1,800). By hand, with figures in
//! `docs/reliability.md`:
//!
//! ```text
//! cargo test --release -p strata --test soak -- --ignored --nocapture
//! ```

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Rng;
use strata::StoreOptions;
use strata::{
    Db, IndexOptions, Options, Predicate, Projection, Query, TableBatch, Value, WriteOptions,
    record,
};

const KEYS: u64 = 200_000;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident memory in bytes (Linux).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Open file descriptors (Linux).
fn fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

struct Sample {
    at: f64,
    rss: u64,
    fds: u64,
    writes: u64,
    reads: u64,
    slowest_write_ms: f64,
    lag: u64,
}

#[test]
#[ignore = "a 30-minute soak; run by hand (see the module docs)"]
fn soak_holds_memory_files_and_stalls_steady() {
    let seconds = env_or("STRATA_SOAK_SECONDS", 1800);
    let max_stall = Duration::from_millis(env_or("STRATA_SOAK_MAX_STALL_MS", 2000));
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::from(StoreOptions {
        write_buffer_bytes: 4 << 20,
        block_cache_bytes: 16 << 20,
        ..StoreOptions::default()
    });
    let db = Arc::new(Db::open(dir.path(), options).expect("open"));
    db.create_table("t", ["id"], strata::TableOptions::default().shards(2))
        .expect("table");
    db.create_index("t", "by_g", ["g"], Projection::KeysOnly)
        .expect("sync index");
    db.create_index(
        "t",
        "by_name",
        ["name"],
        IndexOptions::global().projection(Projection::Include(vec!["g".into()])),
    )
    .expect("async index");

    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let reads = Arc::new(AtomicU64::new(0));
    let slowest_us = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for w in 0..2u64 {
        let (db, stop, writes, slowest_us) = (
            Arc::clone(&db),
            Arc::clone(&stop),
            Arc::clone(&writes),
            Arc::clone(&slowest_us),
        );
        workers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(100 + w);
            while !stop.load(Ordering::Relaxed) {
                let mut batch = TableBatch::new();
                for _ in 0..1 + rng.below(16) {
                    let id = rng.below(KEYS) as i64;
                    if rng.chance(15) {
                        batch.delete([Value::Int(id)]);
                    } else {
                        batch.upsert(record! {
                            "id" => id,
                            "g" => rng.below(50) as i64,
                            "name" => format!("name{}", rng.below(20_000)),
                            "pad" => "p".repeat(rng.below(400) as usize),
                        });
                    }
                }
                let sync = rng.chance(2);
                let options = if sync {
                    WriteOptions::synced()
                } else {
                    WriteOptions::default()
                };
                let started = Instant::now();
                db.write("t", batch, options).expect("write");
                let us = started.elapsed().as_micros() as u64;
                slowest_us.fetch_max(us, Ordering::Relaxed);
                writes.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    {
        let (db, stop, reads) = (Arc::clone(&db), Arc::clone(&stop), Arc::clone(&reads));
        workers.push(std::thread::spawn(move || {
            let mut rng = Rng::new(7);
            while !stop.load(Ordering::Relaxed) {
                match rng.below(3) {
                    0 => {
                        let id = rng.below(KEYS) as i64;
                        db.get("t", &[Value::Int(id)]).expect("get");
                    }
                    1 => {
                        let q = Query::default()
                            .filter(Predicate::eq("name", format!("name{}", rng.below(20_000))));
                        db.query("t", &q).expect("query").for_each(|r| {
                            r.expect("row");
                        });
                    }
                    _ => {
                        let low = rng.below(KEYS) as i64;
                        let q = Query::default()
                            .filter(Predicate::between("id", low, low + 50))
                            .limit(20);
                        db.query("t", &q).expect("range").for_each(|r| {
                            r.expect("row");
                        });
                    }
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(10).min(Duration::from_secs(seconds)));
        let sample = Sample {
            at: started.elapsed().as_secs_f64(),
            rss: rss(),
            fds: fds(),
            writes: writes.load(Ordering::Relaxed),
            reads: reads.load(Ordering::Relaxed),
            slowest_write_ms: slowest_us.swap(0, Ordering::Relaxed) as f64 / 1000.0,
            lag: db.index_lag().map_or(0, |l| l.pending_entries),
        };
        println!(
            "{:>7.0} s  rss {:>6.1} MiB  fds {:>4}  writes {:>9}  reads {:>9}  slowest write \
             {:>8.1} ms  index lag {:>6}",
            sample.at,
            sample.rss as f64 / (1 << 20) as f64,
            sample.fds,
            sample.writes,
            sample.reads,
            sample.slowest_write_ms,
            sample.lag
        );
        samples.push(sample);
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("worker");
    }
    db.wait_for_indexes().expect("indexes catch up");
    let report = db.verify("t").expect("verify");
    assert!(report.is_clean(), "{report}");

    let quarter = samples.len() / 4;
    assert!(quarter >= 1, "run at least 40 s");
    let peak = |from: usize, to: usize, f: fn(&Sample) -> u64| {
        samples[from..to].iter().map(f).max().unwrap_or(0)
    };
    let (early_rss, late_rss) = (
        peak(quarter, 2 * quarter, |s| s.rss),
        peak(3 * quarter, samples.len(), |s| s.rss),
    );
    let (early_fds, late_fds) = (
        peak(quarter, 2 * quarter, |s| s.fds),
        peak(3 * quarter, samples.len(), |s| s.fds),
    );
    let slowest = samples
        .iter()
        .map(|s| s.slowest_write_ms)
        .fold(0.0, f64::max);
    let last = samples.last().expect("samples");
    println!(
        "soak: {:.0} s, {} writes ({:.0}/s), {} reads ({:.0}/s); rss peak {:.1} MiB in the \
         second quarter, {:.1} MiB in the last; fds {early_fds} then {late_fds}; slowest write \
         {slowest:.1} ms",
        last.at,
        last.writes,
        last.writes as f64 / last.at,
        last.reads,
        last.reads as f64 / last.at,
        early_rss as f64 / (1 << 20) as f64,
        late_rss as f64 / (1 << 20) as f64,
    );
    assert!(
        late_rss <= early_rss + early_rss / 10 + (16 << 20),
        "memory grew: {early_rss} then {late_rss} bytes"
    );
    assert!(
        late_fds <= early_fds + 16,
        "file descriptors grew: {early_fds} then {late_fds}"
    );
    assert!(
        slowest <= max_stall.as_secs_f64() * 1000.0,
        "a write waited {slowest:.1} ms, over the {max_stall:?} budget"
    );
}
