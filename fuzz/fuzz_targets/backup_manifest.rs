//! The `backup_manifest` fuzz target; the checks live in `fuzz/checks/backup_manifest.rs`, which
//! `cargo test -p strata --test fuzz_corpus` also runs over the checked-in corpus.

#![no_main]

#[path = "../checks/backup_manifest.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
