//! The `engine_model` fuzz target: table operations, reopens and power cuts on `SimFs`,
//! checked against a model. The checks live in `fuzz/checks/engine_model.rs`, which
//! `cargo test -p strata --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/engine_model.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
