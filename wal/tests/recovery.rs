//! Named recovery scenarios: recycled files, zero-filled tails, the known durable length, the
//! writer's failure and size rules, and regressions found by the property tests.

mod common;

use std::io::{self, Write};

use common::{Op, data_of, read_all, write};
use strata_wal::{
    BLOCK_SIZE, Damage, Error, HEADER_SIZE, LogEnd, LogReader, LogWriter, MAX_RECORD_BYTES,
    RecoveryMode, SYNC_PAYLOAD_SIZE, peek_log_number,
};

fn records(n: usize, len: usize) -> Vec<Op> {
    (0..n).map(|i| Op::Record(vec![i as u8; len])).collect()
}

/// Regression (found by `roundtrip::any_records_read_back_identically`): a sync marker was
/// started when the block had room for its header but not for its 8-byte payload, and the
/// writer's own assertion fired. Now the writer pads, and the reader takes an all-zero block
/// remainder shorter than header + marker as padding.
#[test]
fn a_sync_marker_that_does_not_fit_the_block_end_moves_to_the_next_block() {
    for leave in HEADER_SIZE..HEADER_SIZE + SYNC_PAYLOAD_SIZE {
        let mut writer = LogWriter::new(Vec::new(), 5);
        writer.add_record(b"a").expect("vec");
        writer.sync(|_| Ok(())).expect("vec");
        // Fill the first block so that exactly `leave` bytes remain in it.
        let fill = BLOCK_SIZE - writer.offset() as usize - HEADER_SIZE - leave;
        writer.add_record(&vec![9; fill]).expect("vec");
        assert_eq!(BLOCK_SIZE - writer.offset() as usize, leave);
        let durable = writer
            .sync(|_| Ok(()))
            .expect("a marker that needs padding");
        assert_eq!(
            durable,
            (BLOCK_SIZE + HEADER_SIZE + SYNC_PAYLOAD_SIZE) as u64
        );
        writer.add_record(b"after").expect("vec");
        let log = writer.into_inner();
        let (read, error) = read_all(&log, 5, RecoveryMode::AbsoluteConsistency);
        assert!(error.is_none(), "leave {leave}: {error:?}");
        assert_eq!(data_of(&read), [&b"a"[..], &vec![9; fill], b"after"]);
    }
}

#[test]
fn stale_records_of_a_recycled_file_are_never_returned() {
    // Log 1 fills the file; log 2 reuses it and overwrites only the beginning.
    let old = write(1, &records(40, 3000));
    let new = write(2, &records(5, 100));
    let mut file = old.log.clone();
    file[..new.log.len()].copy_from_slice(&new.log);

    let (read, error) = read_all(&file, 2, RecoveryMode::TolerateTornTail);
    assert!(error.is_none());
    assert_eq!(data_of(&read), data_of_ops(&new.records));

    // Even when salvaging, log 1's intact fragments are skipped as belonging to another log.
    let mut reader = LogReader::new(&file, 2, RecoveryMode::SkipCorrupted);
    let mut salvaged = Vec::new();
    while let Some(record) = reader.next_record().expect("skip never errs") {
        salvaged.push(record.data.into_owned());
    }
    assert_eq!(salvaged, new.records);
    assert!(
        reader
            .skipped()
            .iter()
            .any(|r| r.reason == Damage::OtherLog { found: 1 })
    );
}

fn data_of_ops(records: &[Vec<u8>]) -> Vec<&[u8]> {
    records.iter().map(Vec::as_slice).collect()
}

#[test]
fn a_zero_filled_tail_is_a_torn_tail_and_one_merged_region_when_salvaging() {
    let written = write(3, &records(3, 500));
    let mut file = written.log.clone();
    file.resize(written.log.len() + 3 * BLOCK_SIZE, 0); // preallocated space

    let mut reader = LogReader::new(&file, 3, RecoveryMode::TolerateTornTail);
    let mut count = 0;
    while reader
        .next_record()
        .expect("zeros past the end are a torn tail")
        .is_some()
    {
        count += 1;
    }
    assert_eq!(count, 3);
    let end = written.log.len() as u64;
    assert_eq!(reader.end(), Some(LogEnd::TornTail { offset: end }));

    let mut reader = LogReader::new(&file, 3, RecoveryMode::SkipCorrupted);
    while reader.next_record().expect("skip never errs").is_some() {}
    assert_eq!(reader.skipped().len(), 1, "{:?}", reader.skipped());
    let region = &reader.skipped()[0];
    assert_eq!((region.offset, region.len), (end, file.len() as u64 - end));
    assert_eq!(region.reason, Damage::ZeroFilled);

    assert!(matches!(
        read_all(&file, 3, RecoveryMode::AbsoluteConsistency).1,
        Some(Error::Corruption { offset, reason: Damage::ZeroFilled }) if offset == end
    ));
}

#[test]
fn damage_after_the_last_sync_is_a_torn_tail_unless_the_durable_length_is_known() {
    let mut ops = records(4, 200);
    ops.push(Op::Sync);
    ops.extend(records(4, 200));
    ops.push(Op::Sync);
    let written = write(4, &ops);
    let last_sync = written.markers.last().expect("markers").end;
    // Damage the last record, which the last sync made durable but no marker attests.
    let mut file = written.log.clone();
    let victim = written.extents.last().expect("records").start as usize + HEADER_SIZE + 3;
    file[victim] ^= 0x40;

    let (read, error) = read_all(&file, 4, RecoveryMode::TolerateTornTail);
    assert!(
        error.is_none(),
        "without outside knowledge this is a torn tail"
    );
    assert_eq!(read.len(), 7);

    let mut reader =
        LogReader::new(&file, 4, RecoveryMode::TolerateTornTail).with_known_durable(last_sync);
    let outcome: Result<Vec<_>, _> = reader.by_ref().collect();
    assert!(matches!(outcome, Err(Error::Corruption { .. })));
    assert!(matches!(reader.end(), Some(LogEnd::Failed { .. })));
    assert!(reader.next().is_none(), "a failed reader stays ended");
}

#[test]
fn a_log_shorter_than_its_known_durable_length_is_corrupt() {
    let written = write(6, &records(3, 100));
    let short = &written.log[..written.extents[1].end as usize];
    let durable = written.log.len() as u64;
    let mut reader =
        LogReader::new(short, 6, RecoveryMode::TolerateTornTail).with_known_durable(durable);
    assert!(reader.next_record().expect("first").is_some());
    assert!(reader.next_record().expect("second").is_some());
    assert!(matches!(
        reader.next_record(),
        Err(Error::Corruption {
            reason: Damage::ShorterThanDurable { .. },
            ..
        })
    ));

    let mut reader =
        LogReader::new(short, 6, RecoveryMode::PointInTime).with_known_durable(durable);
    while reader
        .next_record()
        .expect("point-in-time never errs")
        .is_some()
    {}
    assert_eq!(reader.skipped().len(), 1);
    assert_eq!(reader.skipped()[0].len, durable - short.len() as u64);
}

/// Accepts `budget` bytes, then fails every write.
struct FailingWriter {
    written: Vec<u8>,
    budget: usize,
}

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failed_write_poisons_the_writer_and_leaves_a_readable_prefix() {
    let inner = FailingWriter {
        written: Vec::new(),
        budget: 1000,
    };
    let mut writer = LogWriter::new(inner, 8);
    assert!(writer.add_record(&[1; 300]).is_ok());
    assert!(writer.add_record(&[2; 300]).is_ok());
    let failed_at = writer.offset();
    assert!(matches!(writer.add_record(&[3; 600]), Err(Error::Io(_))));
    assert!(matches!(
        writer.add_record(b"x"),
        Err(Error::Poisoned { offset }) if offset == failed_at
    ));
    assert!(matches!(
        writer.sync(|_| Ok(())),
        Err(Error::Poisoned { .. })
    ));
    let file = writer.into_inner().written;
    let (read, error) = read_all(&file, 8, RecoveryMode::TolerateTornTail);
    assert!(error.is_none());
    assert_eq!(data_of(&read), [&[1u8; 300][..], &[2; 300]]);
}

#[test]
fn a_failed_sync_poisons_the_writer() {
    let mut writer = LogWriter::new(Vec::new(), 8);
    writer.add_record(b"batch").expect("vec");
    let outcome = writer.sync(|_| Err(io::Error::other("fsync failed")));
    assert!(matches!(outcome, Err(Error::Io(_))));
    assert_eq!(writer.durable_offset(), 0);
    assert!(matches!(
        writer.add_record(b"more"),
        Err(Error::Poisoned { .. })
    ));
}

#[test]
fn an_oversized_record_is_refused_and_the_writer_stays_usable() {
    let mut writer = LogWriter::new(Vec::new(), 9);
    let huge = vec![0u8; MAX_RECORD_BYTES + 1];
    assert!(matches!(
        writer.add_record(&huge),
        Err(Error::RecordTooLarge { len, max }) if len == huge.len() && max == MAX_RECORD_BYTES
    ));
    assert_eq!(writer.offset(), 0, "nothing was written");
    writer.add_record(b"fine").expect("still usable");
    let log = writer.into_inner();
    let (read, _) = read_all(&log, 9, RecoveryMode::AbsoluteConsistency);
    assert_eq!(data_of(&read), [b"fine"]);
}

#[test]
fn appending_to_an_existing_log_continues_its_blocks() {
    let first = write(10, &records(20, 3000));
    let mut writer = LogWriter::append_to(first.log.clone(), 10, first.log.len() as u64);
    writer.add_record(&[0xee; 50_000]).expect("vec");
    writer.sync(|_| Ok(())).expect("vec");
    let log = writer.into_inner();
    let (read, error) = read_all(&log, 10, RecoveryMode::AbsoluteConsistency);
    assert!(error.is_none());
    assert_eq!(read.len(), 21);
    assert_eq!(&*read[20].data, &[0xee; 50_000][..]);
}

#[test]
fn the_log_number_can_be_read_from_the_file() {
    let written = write(0xabcd, &records(2, 10));
    assert_eq!(peek_log_number(&written.log), Some(0xabcd));
    assert_eq!(peek_log_number(&[]), None);
    assert_eq!(peek_log_number(&[0u8; 100]), None);
    // A damaged first block does not hide the number in the second.
    let big = write(0x77, &records(3, 20_000));
    let mut file = big.log.clone();
    file[2] ^= 1;
    assert_eq!(peek_log_number(&file), Some(0x77));
}

/// Regression (found reading the code): a fragment of another log that filled its block
/// exactly made the reader resume one block too far, skipping a block of good records.
#[test]
fn a_stale_fragment_filling_its_block_does_not_hide_the_next_block() {
    let mut old = LogWriter::new(Vec::new(), 1);
    old.add_record(&vec![0x11; BLOCK_SIZE - HEADER_SIZE])
        .expect("vec");
    let mut file = old.into_inner();
    assert_eq!(file.len(), BLOCK_SIZE);
    let mut new = LogWriter::append_to(Vec::new(), 2, BLOCK_SIZE as u64);
    new.add_record(b"survivor").expect("vec");
    file.extend_from_slice(&new.into_inner());

    let (read, error) = read_all(&file, 2, RecoveryMode::SkipCorrupted);
    assert!(error.is_none());
    assert_eq!(data_of(&read), [b"survivor"]);
}
