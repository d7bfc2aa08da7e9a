//! Checkpoints and backups of a large database under writes (issue 47's targets), on the
//! real file system:
//!
//! - `checkpoint/under_writes`: `Db::checkpoint` of a database of `STRATA_CHECKPOINT_MB`
//!   (default 1,024) MB of table files while a writer upserts; the writer's longest write
//!   during the checkpoints and one memtable flush's time are printed beside it (target: well
//!   under a second; no write stalled longer than a flush).
//! - `backup/{full,incremental}`: `Db::backup` into an empty directory, and into one that
//!   holds an earlier backup after 1,000 more writes (throughput in bytes of the database).
//!
//! Run: `cargo bench -p strata-benches --bench checkpoint`. Figures go in
//! `docs/benchmarks.md`.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{mix, options};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::{Db, Projection, TableOptions, record};

fn row(id: i64, version: i64) -> strata::Record {
    let h = mix(id);
    record! {
        "id" => id,
        "town" => format!("town{}", h % 5000),
        "score" => (h + version) % 1000,
        "note" => format!("{:016x}{:016x}", h, mix(id + 1)),
    }
}

/// A writer that upserts until stopped and records its longest write in each window.
struct Writer {
    stop: Arc<AtomicBool>,
    longest: Arc<std::sync::Mutex<Duration>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    fn start(db: &Arc<Db>, rows: i64) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let longest = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let (db, s, l) = (Arc::clone(db), Arc::clone(&stop), Arc::clone(&longest));
        let thread = std::thread::spawn(move || {
            let mut i = 0i64;
            while !s.load(Ordering::Relaxed) {
                i += 1;
                let started = Instant::now();
                db.upsert("t", row(mix(i).rem_euclid(rows), i))
                    .expect("upsert");
                let took = started.elapsed();
                let mut longest = l.lock().expect("lock");
                *longest = (*longest).max(took);
            }
        });
        Writer {
            stop,
            longest,
            thread: Some(thread),
        }
    }

    fn take_longest(&self) -> Duration {
        std::mem::take(&mut *self.longest.lock().expect("lock"))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn checkpoints(c: &mut Criterion) {
    let mb: i64 = std::env::var("STRATA_CHECKPOINT_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_024);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(Db::open(dir.path().join("db"), options()).expect("open"));
    // Runs of a million rows (with a less compressible note) until the files hold `mb`.
    db.create_table("t", ["id"], TableOptions::default())
        .expect("table");
    db.create_index("t", "by_town", ["town"], Projection::KeysOnly)
        .expect("index");
    let mut rows = 0i64;
    while dir_bytes(&dir.path().join("db")) < (mb as u64) << 20 {
        let mut load = db.bulk_load("t").expect("load");
        for id in rows..rows + 1_000_000 {
            load.insert(row(id, 0)).expect("row");
        }
        load.finish().expect("load");
        rows += 1_000_000;
    }
    let size = dir_bytes(&dir.path().join("db"));
    eprintln!("checkpoint bench: {rows} rows, {} MB on disk", size >> 20);
    // One memtable's flush, the stall a checkpoint must stay under: fill, then time it.
    for i in 0..200_000 {
        db.upsert("t", row(i, 1)).expect("upsert");
    }
    let started = Instant::now();
    db.flush().expect("flush");
    eprintln!(
        "checkpoint bench: one flush of 200,000 upserts took {:?}",
        started.elapsed()
    );

    let mut group = c.benchmark_group("checkpoint");
    group.sample_size(10);
    let writer = Writer::start(&db, rows);
    let mut n = 0;
    let mut worst = Duration::ZERO;
    group.bench_function("under_writes", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let target = dir.path().join(format!("cp{n}"));
                writer.take_longest();
                let started = Instant::now();
                let cp = db.checkpoint(&target).expect("checkpoint");
                total += started.elapsed();
                worst = worst.max(writer.take_longest());
                black_box(cp);
                std::fs::remove_dir_all(&target).expect("remove");
            }
            total
        })
    });
    eprintln!("checkpoint bench: the longest write during a checkpoint took {worst:?}");
    drop(writer);
    group.finish();

    let mut group = c.benchmark_group("backup");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(size));
    group.bench_function("full", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let target = dir.path().join("backups-full");
                let started = Instant::now();
                black_box(db.backup(&target).expect("backup"));
                total += started.elapsed();
                std::fs::remove_dir_all(&target).expect("remove");
            }
            total
        })
    });
    let target = dir.path().join("backups-inc");
    db.backup(&target).expect("first backup");
    let mut i = 0i64;
    group.bench_function("incremental", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for _ in 0..1_000 {
                    i += 1;
                    db.upsert("t", row(i % rows, i)).expect("upsert");
                }
                let started = Instant::now();
                let info = db.backup(&target).expect("backup");
                total += started.elapsed();
                black_box(info);
            }
            total
        })
    });
    let last = strata::backup::list(&target).expect("list");
    if let Some(info) = last.last() {
        eprintln!(
            "backup bench: the last incremental backup copied {} of {} bytes",
            info.bytes_copied, info.bytes
        );
    }
    group.finish();
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("dir") {
        let entry = entry.expect("entry");
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

criterion_group!(benches, checkpoints);
criterion_main!(benches);
