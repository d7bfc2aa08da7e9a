//! WAL append and read throughput for 100-byte and 4 KiB records, unsynced and in memory, so
//! what is measured is the format code (framing, checksums, copies), not the disk.
//!
//! Run: `cargo bench -p strata-benches --bench wal`. Figures go in `docs/benchmarks.md`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_benches::records;
use strata_wal::{LogReader, LogWriter, RecoveryMode};

/// Payload bytes written or read per iteration: 4 MiB, large enough that per-iteration setup
/// is noise and the log spans 128 blocks.
const BYTES_PER_ITERATION: usize = 4 * 1024 * 1024;

const RECORD_SIZES: [(&str, usize); 2] = [("100B", 100), ("4KiB", 4096)];

fn write_log(records: &[Vec<u8>], buffer: Vec<u8>) -> Vec<u8> {
    let mut writer = LogWriter::new(buffer, 1);
    for record in records {
        writer
            .add_record(record)
            .expect("writing to a Vec cannot fail");
    }
    writer.into_inner()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("wal_append");
    for (name, size) in RECORD_SIZES {
        let records = records(BYTES_PER_ITERATION / size, size);
        group.throughput(Throughput::Bytes((records.len() * size) as u64));
        let capacity = write_log(&records, Vec::new()).len();
        let mut buffer = Vec::with_capacity(capacity);
        group.bench_function(name, |b| {
            b.iter(|| {
                buffer.clear();
                buffer = write_log(black_box(&records), std::mem::take(&mut buffer));
            })
        });
    }
    group.finish();
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("wal_read");
    for (name, size) in RECORD_SIZES {
        let records = records(BYTES_PER_ITERATION / size, size);
        group.throughput(Throughput::Bytes((records.len() * size) as u64));
        let log = write_log(&records, Vec::new());
        group.bench_function(name, |b| {
            b.iter(|| {
                let reader = LogReader::new(black_box(&log), 1, RecoveryMode::TolerateTornTail);
                let mut count = 0usize;
                for record in reader {
                    let record = record.expect("the log is intact");
                    count += black_box(record.data.len());
                }
                assert_eq!(count, records.len() * size);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, append, read);
criterion_main!(benches);
