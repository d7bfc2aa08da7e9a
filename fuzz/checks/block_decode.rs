//! The `block_decode` fuzz checks, shared by the libFuzzer target and the corpus replay in
//! `sstable/tests/fuzz_corpus.rs`: arbitrary bytes as a raw block never panic, and where they
//! decode, forward iteration, backward iteration and seeks agree (asserted inside
//! `decode_block`).

/// Runs the checks on one input.
pub fn check(input: &[u8]) {
    let _ = strata_sstable::fuzzing::decode_block(input);
}
