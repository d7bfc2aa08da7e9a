//! Arbitrary bytes as an SSTable file. Checks: `fuzz/checks/sstable_open.rs`.

#![no_main]

#[path = "../checks/sstable_open.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
