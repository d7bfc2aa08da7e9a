//! Helpers shared by the WAL integration tests: write a log while remembering where every
//! record and sync marker landed, so a test can say exactly what each recovery mode must return.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use strata_wal::{
    BLOCK_SIZE, HEADER_SIZE, LogReader, LogWriter, Record, RecoveryMode, SYNC_PAYLOAD_SIZE,
};

/// One step of a log's history.
#[derive(Clone, Debug)]
pub enum Op {
    Record(Vec<u8>),
    Sync,
}

/// Where a record landed: `[start, end)`, `start` being its first header (after any padding).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub end: u64,
}

/// A sync marker: its header's offset, its end, and the durable offset it attests.
#[derive(Clone, Debug)]
pub struct Marker {
    pub start: u64,
    pub end: u64,
    pub attests: u64,
}

/// A log and what is known about it.
#[derive(Debug)]
pub struct Written {
    pub log: Vec<u8>,
    pub records: Vec<Vec<u8>>,
    pub extents: Vec<Extent>,
    pub markers: Vec<Marker>,
}

/// The offset where a fragment with at least `min_payload` bytes, written at `offset`, starts
/// after any block-end padding.
pub fn header_start(offset: u64, min_payload: usize) -> u64 {
    let remaining = BLOCK_SIZE as u64 - offset % BLOCK_SIZE as u64;
    if remaining < (HEADER_SIZE + min_payload) as u64 {
        offset + remaining
    } else {
        offset
    }
}

pub fn write(log_number: u32, ops: &[Op]) -> Written {
    let mut writer = LogWriter::new(Vec::new(), log_number);
    let mut written = Written {
        log: Vec::new(),
        records: Vec::new(),
        extents: Vec::new(),
        markers: Vec::new(),
    };
    for op in ops {
        let before = writer.offset();
        match op {
            Op::Record(data) => {
                let end = writer.add_record(data).expect("writing to a Vec");
                written.records.push(data.clone());
                written.extents.push(Extent {
                    start: header_start(before, 0),
                    end,
                });
            }
            Op::Sync => {
                let attests = writer.durable_offset();
                let end = writer.sync(|_| Ok(())).expect("syncing a Vec");
                if end > before {
                    written.markers.push(Marker {
                        start: header_start(before, SYNC_PAYLOAD_SIZE),
                        end,
                        attests,
                    });
                }
            }
        }
    }
    written.log = writer.into_inner();
    written
}

/// Reads every record, stopping at the first error; returns the records and the error, if any.
pub fn read_all(
    log: &[u8],
    log_number: u32,
    mode: RecoveryMode,
) -> (Vec<Record<'_>>, Option<strata_wal::Error>) {
    let mut reader = LogReader::new(log, log_number, mode);
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(record)) => records.push(record),
            Ok(None) => return (records, None),
            Err(error) => return (records, Some(error)),
        }
    }
}

pub fn data_of<'r>(records: &'r [Record<'_>]) -> Vec<&'r [u8]> {
    records.iter().map(|r| &*r.data).collect()
}

/// A deterministic mix of record sizes: empty, small, around a block, several blocks; with a
/// sync after every third record. It spans about 150 KiB.
pub fn mixed_ops() -> Vec<Op> {
    let sizes = [
        0, 1, 100, 4096, 32_757, 32_758, 40_000, 7, 0, 65_600, 11, 1000, 3,
    ];
    let mut ops = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        ops.push(Op::Record(
            (0..size).map(|j| (i * 31 + j * 7) as u8).collect(),
        ));
        if i % 3 == 2 {
            ops.push(Op::Sync);
        }
    }
    ops
}

/// A smaller log (about 66 KiB: three blocks, padding at the end of the first, a record
/// spanning the second boundary, sync markers) for tests that read it once per byte.
pub fn small_ops() -> Vec<Op> {
    let mut ops = Vec::new();
    for (i, size) in [10usize, 300, 0, 5000, 20_000, 2, 7333, 30, 2900, 30_000, 40]
        .into_iter()
        .enumerate()
    {
        ops.push(Op::Record(vec![i as u8 ^ 0x5a; size]));
        if i % 2 == 1 {
            ops.push(Op::Sync);
        }
    }
    ops
}
