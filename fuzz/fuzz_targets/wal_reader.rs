//! Arbitrary bytes as a write-ahead log: never a panic, and the recovery modes agree with each
//! other. The checks live in `fuzz/checks/wal_reader.rs`, which `cargo test -p strata-wal`
//! also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/wal_reader.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
