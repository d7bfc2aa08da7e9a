//! Truncating a log at every byte offset yields exactly a prefix of its records: the records
//! that ended at or before the cut. That is what a crash in the middle of a write leaves.

mod common;

use common::{data_of, read_all, small_ops, write};
use strata_wal::{LogEnd, LogReader, RecoveryMode};

#[test]
fn truncation_at_every_offset_yields_exactly_a_prefix() {
    let written = write(9, &small_ops());
    assert!(
        written.log.len() > strata_wal::BLOCK_SIZE,
        "the log must span blocks"
    );
    for cut in 0..=written.log.len() {
        let log = &written.log[..cut];
        let complete = written
            .extents
            .iter()
            .filter(|e| e.end <= cut as u64)
            .count();
        let prefix: Vec<&[u8]> = written.records[..complete]
            .iter()
            .map(Vec::as_slice)
            .collect();
        let inside_a_record = written
            .extents
            .iter()
            .any(|e| e.start < cut as u64 && (cut as u64) < e.end);

        for mode in [
            RecoveryMode::TolerateTornTail,
            RecoveryMode::PointInTime,
            RecoveryMode::SkipCorrupted,
        ] {
            let (records, error) = read_all(log, 9, mode);
            assert!(error.is_none(), "{mode:?} at cut {cut}: {error:?}");
            assert_eq!(data_of(&records), prefix, "{mode:?} at cut {cut}");
        }

        let (records, error) = read_all(log, 9, RecoveryMode::AbsoluteConsistency);
        match error {
            None => assert_eq!(data_of(&records), prefix, "absolute at cut {cut}"),
            Some(_) => assert_eq!(data_of(&records), prefix, "absolute at cut {cut}: records"),
        }
        if inside_a_record {
            assert!(
                error_of(log).is_some(),
                "absolute must fail on a cut inside a record at {cut}"
            );
        }
    }
}

fn error_of(log: &[u8]) -> Option<strata_wal::Error> {
    read_all(log, 9, RecoveryMode::AbsoluteConsistency).1
}

#[test]
fn a_torn_tail_is_reported_as_one_region_to_the_end() {
    let written = write(9, &small_ops());
    let last = written.extents.last().expect("records").clone();
    let cut = (last.start + 5) as usize; // inside the last record's header
    let mut reader = LogReader::new(&written.log[..cut], 9, RecoveryMode::TolerateTornTail);
    while reader
        .next_record()
        .expect("a torn tail is tolerated")
        .is_some()
    {}
    assert_eq!(reader.end(), Some(LogEnd::TornTail { offset: last.start }));
    let skipped = reader.skipped();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].offset, last.start);
    assert_eq!(skipped[0].len, cut as u64 - last.start);
    assert_eq!(skipped[0].reason, strata_wal::Damage::Truncated);
}
