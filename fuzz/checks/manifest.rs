//! The `manifest` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `engine/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. As one version edit: decoding never panics, and what decodes re-encodes to an edit that
//!    decodes to the same value.
//! 2. As a manifest file (log-framed edits, salvaged record by record): applying the edits
//!    never panics; a refused edit leaves the state unchanged; and the snapshot edit of the
//!    final state rebuilds exactly that state.

use strata::fuzzing::{ManifestState, VersionEdit};
use strata_wal::{LogReader, RecoveryMode, peek_log_number};

pub fn check(data: &[u8]) {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("an encoded edit decodes");
        assert_eq!(again, edit);
    }

    let log_number = peek_log_number(data).unwrap_or(0);
    let mut reader = LogReader::new(data, log_number, RecoveryMode::SkipCorrupted);
    let mut state = ManifestState::empty();
    while let Ok(Some(record)) = reader.next_record() {
        let Ok(edit) = VersionEdit::decode(&record.data) else {
            continue;
        };
        let before = state.clone();
        if state.apply(&edit).is_err() {
            assert_eq!(state, before, "a refused edit changes nothing");
        }
    }
    let mut rebuilt = ManifestState::empty();
    rebuilt
        .apply(&state.snapshot())
        .expect("a snapshot applies to the empty state");
    assert_eq!(rebuilt, state);
}
