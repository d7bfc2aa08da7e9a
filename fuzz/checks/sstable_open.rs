//! The `sstable_open` fuzz checks, shared by the libFuzzer target and the corpus replay in
//! `sstable/tests/fuzz_corpus.rs`. Arbitrary bytes as a table file:
//!
//! 1. `Table::open` never panics.
//! 2. If it opens: a forward scan, a backward scan, point gets and a multi-get of the scanned
//!    keys (which reads restart points ahead of its seeks from blocks not yet checked, as
//!    prefetch hints) never panic; where the scans report no error, the backward scan is the
//!    forward scan reversed; neither `get` nor `multi_get` returns a version newer than its
//!    snapshot.
//!
//! It does not assert that `get` finds every scanned entry: libFuzzer learns checksums from
//! the comparisons it watches and can forge a table whose blocks each check out but disagree
//! with each other (a bloom filter from other keys). Checksums catch damage, not forgery;
//! the promise for any input is no panic and no out-of-bounds read.

use strata_sstable::Table;

type Seen = Vec<(Vec<u8>, u64)>;

fn scan(table: &Table, forward: bool) -> (Seen, bool) {
    let mut iter = table.iter();
    if forward {
        iter.seek_to_first()
    } else {
        iter.seek_to_last()
    }
    let mut seen = Vec::new();
    while iter.valid() && seen.len() < 100_000 {
        seen.push((iter.user_key().to_vec(), iter.seqno()));
        if forward { iter.next() } else { iter.prev() }
    }
    (seen, iter.status().is_some())
}

/// Runs the checks on one input.
pub fn check(input: &[u8]) {
    let Ok(table) = Table::open(bytes::Bytes::copy_from_slice(input), 1, None) else {
        return;
    };
    let (forward, forward_failed) = scan(&table, true);
    let (mut backward, backward_failed) = scan(&table, false);
    backward.reverse();
    if !forward_failed && !backward_failed {
        assert_eq!(forward, backward, "scans disagree");
    }
    for (key, seqno) in &forward {
        if let Ok(Some(found)) = table.get(key, *seqno) {
            assert!(
                found.seqno <= *seqno,
                "get returned a version newer than its snapshot"
            );
        }
    }
    // Ascending keys at the newest snapshot, through the filter and past it.
    let keys: Vec<&[u8]> = forward.iter().map(|(key, _)| key.as_slice()).collect();
    for filter in [true, false] {
        if let Ok(found) = table.multi_get_with(&keys, strata_sstable::MAX_SEQNO, filter) {
            assert_eq!(found.len(), keys.len(), "one answer a key");
        }
    }
}
