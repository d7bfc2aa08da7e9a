//! The `stats_sketch` fuzz target; the checks live in `fuzz/checks/stats_sketch.rs`, which
//! `cargo test -p strata --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/stats_sketch.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
