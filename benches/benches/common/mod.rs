//! Helpers shared by the table benches.

#![allow(dead_code, reason = "each bench uses a different subset")]

use strata::Options;

/// Auto-analyze off: the figures measure the write and read paths alone, as recorded before
/// it existed; the query benches analyse explicitly.
pub fn options() -> Options {
    Options {
        auto_analyze: false,
        ..Options::default()
    }
}

/// A 63-bit hash of `i`: ids spread over the key space, as real keys are.
pub fn mix(i: i64) -> i64 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1) as i64
}
