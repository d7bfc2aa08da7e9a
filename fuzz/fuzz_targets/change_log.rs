//! The `change_log` fuzz target; the checks live in `fuzz/checks/change_log.rs`, which
//! `cargo test -p strata --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/change_log.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
