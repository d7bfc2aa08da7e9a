//! The `txn_state` fuzz target; the checks live in `fuzz/checks/txn_state.rs`, which
//! `cargo test -p strata --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/txn_state.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
