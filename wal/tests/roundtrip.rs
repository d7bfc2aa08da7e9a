//! Any sequence of records and syncs, of any sizes including empty and multi-block ones, reads
//! back identically, with correct offsets, in every recovery mode.

mod common;

use common::{Op, data_of, read_all, write};
use proptest::prelude::*;
use strata_wal::{BLOCK_SIZE, LogEnd, LogReader, RecoveryMode};

const MODES: [RecoveryMode; 4] = [
    RecoveryMode::TolerateTornTail,
    RecoveryMode::AbsoluteConsistency,
    RecoveryMode::PointInTime,
    RecoveryMode::SkipCorrupted,
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Small records, the common case.
        6 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Op::Record),
        // Sizes around the block and header boundaries.
        2 => (0usize..3 * BLOCK_SIZE).prop_map(|n| Op::Record(vec![(n % 251) as u8; n])),
        1 => (BLOCK_SIZE - 16..BLOCK_SIZE + 16).prop_map(|n| Op::Record(vec![7; n])),
        2 => Just(Op::Sync),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_records_read_back_identically(ops in prop::collection::vec(op(), 0..40), log_number: u32) {
        let written = write(log_number, &ops);
        for mode in MODES {
            let mut reader = LogReader::new(&written.log, log_number, mode);
            let mut records = Vec::new();
            while let Some(record) = reader.next_record().expect("an intact log never errs") {
                records.push(record);
            }
            let expected: Vec<&[u8]> = written.records.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(data_of(&records), expected);
            let extents: Vec<(u64, u64)> = records.iter().map(|r| (r.offset, r.end_offset)).collect();
            let expected: Vec<(u64, u64)> = written.extents.iter().map(|e| (e.start, e.end)).collect();
            prop_assert_eq!(extents, expected);
            prop_assert!(reader.skipped().is_empty());
            prop_assert_eq!(reader.end(), Some(LogEnd::Complete));
            prop_assert_eq!(reader.next_record().expect("ended"), None);
        }
    }

    #[test]
    fn a_log_read_with_another_number_yields_nothing(ops in prop::collection::vec(op(), 1..10), log_number: u32) {
        let written = write(log_number, &ops);
        let (records, error) = read_all(&written.log, log_number.wrapping_add(1), RecoveryMode::SkipCorrupted);
        prop_assert!(records.is_empty());
        prop_assert!(error.is_none());
    }
}

#[test]
fn the_empty_log_is_complete_and_empty() {
    for mode in MODES {
        let mut reader = LogReader::new(&[], 1, mode);
        assert_eq!(reader.next_record().expect("empty is fine"), None);
        assert_eq!(reader.end(), Some(LogEnd::Complete));
    }
}

#[test]
fn single_fragment_records_are_borrowed_and_spanning_ones_owned() {
    let written = write(
        3,
        &[Op::Record(vec![1; 10]), Op::Record(vec![2; 3 * BLOCK_SIZE])],
    );
    let (records, error) = read_all(&written.log, 3, RecoveryMode::AbsoluteConsistency);
    assert!(error.is_none());
    assert!(matches!(records[0].data, std::borrow::Cow::Borrowed(_)));
    assert!(matches!(records[1].data, std::borrow::Cow::Owned(_)));
    assert_eq!(records[1].data.len(), 3 * BLOCK_SIZE);
}
