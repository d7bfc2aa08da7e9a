//! The `manifest` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `engine/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. As one version edit: decoding never panics, and what decodes re-encodes to an edit that
//!    decodes to the same value.
//! 2. As a manifest file (log-framed edits, salvaged record by record): applying the edits
//!    never panics; a refused edit leaves the state unchanged; and the snapshot edit of the
//!    final state rebuilds exactly that state.
//! 3. As raw edits without the log framing (each a length byte, then that many bytes): the
//!    same promises. Log framing has checksums, so mutated inputs rarely reach `apply` through
//!    step 2; this path reaches it with every mutation. Whatever state results never holds a
//!    file number or seqno the store could not count on from, nor a family 0 dropped.

use strata::fuzzing::{ManifestState, VersionEdit};
use strata::lsm::wal::{LogReader, RecoveryMode, peek_log_number};

pub fn check(data: &[u8]) {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("an encoded edit decodes");
        assert_eq!(again, edit);
    }

    let log_number = peek_log_number(data).unwrap_or(0);
    let mut reader = LogReader::new(data, log_number, RecoveryMode::SkipCorrupted);
    let mut state = ManifestState::empty();
    while let Ok(Some(record)) = reader.next_record() {
        apply(&mut state, &record.data);
    }
    check_state(&state);

    let mut state = ManifestState::empty();
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let (edit, after) = tail.split_at(usize::from(len).min(tail.len()));
        apply(&mut state, edit);
        rest = after;
    }
    check_state(&state);
}

/// Decodes `bytes` as an edit and applies it; a refused edit must change nothing.
fn apply(state: &mut ManifestState, bytes: &[u8]) {
    let Ok(edit) = VersionEdit::decode(bytes) else {
        return;
    };
    let before = state.clone();
    if state.apply(&edit).is_err() {
        assert_eq!(*state, before, "a refused edit changes nothing");
    } else if before.cfs.contains_key(&0) {
        assert!(state.cfs.contains_key(&0), "family 0 was dropped");
    }
}

/// What every state `apply` builds holds, and its snapshot rebuilds it exactly.
fn check_state(state: &ManifestState) {
    assert!(state.next_file_number <= strata::fuzzing::MAX_FILE_NUMBER);
    assert!(state.last_seqno <= strata::fuzzing::MAX_SEQNO);
    for cf in state.cfs.values() {
        for table in cf.levels.iter().flatten() {
            assert!(table.number < state.next_file_number, "{table:?}");
        }
    }
    let mut rebuilt = ManifestState::empty();
    rebuilt
        .apply(&state.snapshot())
        .expect("a snapshot applies to the empty state");
    assert_eq!(rebuilt, *state);
}
