//! The `wal_reader` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `wal/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. No recovery mode panics; `SkipCorrupted` and `PointInTime` never return an error.
//! 2. Records lie inside the input, in order, without overlapping each other or any skipped
//!    region.
//! 3. The modes agree: `PointInTime` returns a prefix of what `SkipCorrupted` salvages;
//!    `TolerateTornTail` returns what `PointInTime` does, or fails after a prefix of it;
//!    `AbsoluteConsistency` succeeds only on an undamaged log, returning everything.
//! 4. Told that the whole input was durable, `TolerateTornTail` succeeds only on an undamaged
//!    log.
//! 5. What was salvaged, written again with a fresh writer, reads back identically.

use strata_wal::{LogReader, LogWriter, RecoveryMode, SkippedRegion, peek_log_number};

struct Outcome {
    records: Vec<(u64, u64, Vec<u8>)>,
    skipped: Vec<SkippedRegion>,
    failed: bool,
}

fn read(data: &[u8], log_number: u32, mode: RecoveryMode, known_durable: u64) -> Outcome {
    let mut reader = LogReader::new(data, log_number, mode).with_known_durable(known_durable);
    let mut records = Vec::new();
    let failed = loop {
        match reader.next_record() {
            Ok(Some(record)) => {
                records.push((record.offset, record.end_offset, record.data.into_owned()))
            }
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(
        reader.next_record().is_ok_and(|r| r.is_none()),
        "an ended reader stays ended"
    );
    let skipped = reader.skipped().to_vec();
    Outcome {
        records,
        skipped,
        failed,
    }
}

fn check_layout(outcome: &Outcome, len: u64) {
    let mut spans: Vec<(u64, u64)> = outcome.records.iter().map(|r| (r.0, r.1)).collect();
    spans.extend(outcome.skipped.iter().map(|s| (s.offset, s.offset + s.len)));
    spans.sort_unstable();
    for pair in spans.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "overlapping spans {pair:?}");
    }
    for (start, end, data) in &outcome.records {
        assert!(
            start < end && *end <= len,
            "record {start}..{end} outside 0..{len}"
        );
        assert!(data.len() as u64 <= end - start);
    }
    for region in &outcome.skipped {
        assert!(
            region.offset + region.len <= len,
            "region past the end: {region:?}"
        );
    }
}

fn data(outcome: &Outcome) -> Vec<&[u8]> {
    outcome.records.iter().map(|r| r.2.as_slice()).collect()
}

/// Runs every check on one input.
pub fn check(input: &[u8]) {
    let len = input.len() as u64;
    let log_number = peek_log_number(input).unwrap_or(0);

    let salvage = read(input, log_number, RecoveryMode::SkipCorrupted, 0);
    let point = read(input, log_number, RecoveryMode::PointInTime, 0);
    let torn = read(input, log_number, RecoveryMode::TolerateTornTail, 0);
    let strict = read(input, log_number, RecoveryMode::AbsoluteConsistency, 0);
    assert!(!salvage.failed && !point.failed);
    for outcome in [&salvage, &point, &torn, &strict] {
        check_layout(outcome, len);
    }

    let salvaged = data(&salvage);
    assert!(salvaged.starts_with(&data(&point)));
    assert!(data(&point).starts_with(&data(&torn)));
    if !torn.failed {
        assert_eq!(data(&torn), data(&point));
    }
    assert!(data(&point).starts_with(&data(&strict)));
    if !strict.failed {
        assert_eq!(data(&strict), salvaged);
        assert!(salvage.skipped.is_empty() && point.skipped.is_empty());
    }

    let all_durable = read(input, log_number, RecoveryMode::TolerateTornTail, len);
    if !all_durable.failed {
        assert!(
            salvage.skipped.is_empty(),
            "damage in a durable log went unreported"
        );
    }

    let mut writer = LogWriter::new(Vec::new(), log_number);
    for record in &salvaged {
        writer
            .add_record(record)
            .expect("salvaged records fit the limit");
    }
    let rewritten = writer.into_inner();
    let again = read(&rewritten, log_number, RecoveryMode::AbsoluteConsistency, 0);
    assert!(!again.failed);
    assert_eq!(data(&again), salvaged);
}
