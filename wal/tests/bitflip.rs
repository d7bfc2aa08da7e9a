//! A single flipped bit anywhere in a log is never returned as data, and each recovery mode
//! does exactly what it says with the damage. The flip visits every byte of a two-block log
//! (bit `offset % 8` of it), and proptest adds random (byte, bit) pairs.

mod common;

use common::{Extent, Written, data_of, read_all, small_ops, write};
use proptest::prelude::*;
use strata_wal::{BLOCK_SIZE, Error, LogEnd, LogReader, RecoveryMode};

const LOG_NUMBER: u32 = 0x0102_0304;

fn records_where(written: &Written, keep: impl Fn(&Extent) -> bool) -> Vec<&[u8]> {
    written
        .extents
        .iter()
        .zip(&written.records)
        .filter(|(extent, _)| keep(extent))
        .map(|(_, data)| data.as_slice())
        .collect()
}

/// Checks all four modes against `log`, a copy of `written.log`, with bit `bit` of byte `at`
/// flipped; `log` is restored before returning.
fn check_flip(written: &Written, log: &mut [u8], at: usize, bit: u8) {
    log[at] ^= 1 << bit;
    check_flipped(written, log, at);
    log[at] ^= 1 << bit;
}

fn check_flipped(written: &Written, log: &[u8], at: usize) {
    let p = at as u64;
    let before = records_where(written, |e| e.end <= p);

    // AbsoluteConsistency: any damage is an error; nothing at or after it was returned.
    let (records, error) = read_all(log, LOG_NUMBER, RecoveryMode::AbsoluteConsistency);
    assert!(
        matches!(error, Some(Error::Corruption { offset, .. }) if offset <= p),
        "absolute, flip at {at}: {error:?}"
    );
    assert_eq!(data_of(&records), before, "absolute, flip at {at}");

    // PointInTime: exactly the records before the damage, never an error.
    let mut reader = LogReader::new(log, LOG_NUMBER, RecoveryMode::PointInTime);
    let mut records = Vec::new();
    while let Some(record) = reader.next_record().expect("point-in-time never errs") {
        records.push(record);
    }
    assert_eq!(data_of(&records), before, "point-in-time, flip at {at}");
    assert!(matches!(reader.end(), Some(LogEnd::StoppedAtDamage { offset }) if offset <= p));

    // SkipCorrupted: everything outside the damaged block's remainder, and a report covering
    // the flipped byte.
    let block_end = (p / BLOCK_SIZE as u64 + 1) * BLOCK_SIZE as u64;
    let mut reader = LogReader::new(log, LOG_NUMBER, RecoveryMode::SkipCorrupted);
    let mut records = Vec::new();
    while let Some(record) = reader.next_record().expect("skip-corrupted never errs") {
        records.push(record);
    }
    let survivors = records_where(written, |e| e.end <= p || e.start >= block_end);
    assert_eq!(data_of(&records), survivors, "skip, flip at {at}");
    assert!(
        reader
            .skipped()
            .iter()
            .any(|r| r.offset <= p && p < r.offset + r.len),
        "skip, flip at {at}: no report covers it: {:?}",
        reader.skipped()
    );

    // TolerateTornTail: corruption if an intact sync marker attests the damaged byte was
    // durable, else a torn tail and exactly the records before it.
    let attested = written
        .markers
        .iter()
        .filter(|m| !(m.start <= p && p < m.end))
        .map(|m| m.attests)
        .max()
        .unwrap_or(0);
    let (records, error) = read_all(log, LOG_NUMBER, RecoveryMode::TolerateTornTail);
    if p < attested {
        assert!(
            matches!(error, Some(Error::Corruption { .. })),
            "torn-tail, flip at {at} before durable {attested}: {error:?}"
        );
    } else {
        assert!(
            error.is_none(),
            "torn-tail, flip at {at} after durable {attested}: {error:?}"
        );
    }
    assert_eq!(data_of(&records), before, "torn-tail, flip at {at}");
}

#[test]
fn a_flip_at_every_byte_is_caught_and_handled_per_mode() {
    let written = write(LOG_NUMBER, &small_ops());
    assert!(written.log.len() > BLOCK_SIZE, "the log must span blocks");
    assert!(
        written.markers.len() >= 3,
        "the log must carry sync markers"
    );
    let mut log = written.log.clone();
    for at in 0..written.log.len() {
        check_flip(&written, &mut log, at, (at % 8) as u8);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_flip_at_a_random_bit_is_caught(at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let written = write(LOG_NUMBER, &small_ops());
        let mut log = written.log.clone();
        check_flip(&written, &mut log, at.index(written.log.len()), bit);
    }
}

#[test]
fn the_flipped_log_has_padding_and_a_record_across_blocks() {
    let written = write(LOG_NUMBER, &small_ops());
    let mut ends: Vec<u64> = written.extents.iter().map(|e| e.end).collect();
    ends.extend(written.markers.iter().map(|m| m.end));
    let mut starts: Vec<u64> = written.extents.iter().map(|e| e.start).collect();
    starts.extend(written.markers.iter().map(|m| m.start));
    let block = BLOCK_SIZE as u64;
    // Padding: something starts at a block boundary while nothing ended exactly there.
    assert!(
        starts
            .iter()
            .any(|&s| s > 0 && s % block == 0 && !ends.contains(&s)),
        "no block-end padding; ends {ends:?}"
    );
    assert!(
        written
            .extents
            .iter()
            .any(|e| e.start / block != (e.end - 1) / block),
        "no record spans a block boundary"
    );
}
