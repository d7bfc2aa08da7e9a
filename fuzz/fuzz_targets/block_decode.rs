//! Arbitrary bytes as a raw SSTable block. Checks: `fuzz/checks/block_decode.rs`.

#![no_main]

#[path = "../checks/block_decode.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
