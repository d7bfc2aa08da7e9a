//! The `planner` fuzz target; the checks live in `fuzz/checks/planner.rs`, which
//! `cargo test -p strata-planner --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/planner.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
