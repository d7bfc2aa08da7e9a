//! The `key_codec` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `engine/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. Decoding it as a key never panics; what decodes re-encodes to exactly the input (the
//!    code is canonical).
//! 2. Split at its first byte's position: when both halves decode, their bytewise order is
//!    the order of the decoded tuples (order preservation).
//! 3. The decoded values, re-encoded one by one and concatenated with a suffix, still sort on
//!    the tuple's side of the other half (prefix-freedom).

use std::cmp::Ordering;

use strata::table::key::{compare_tuples, decode_all, decode_value, encode_key};

pub fn check(data: &[u8]) {
    if let Ok(values) = decode_all(data) {
        assert_eq!(encode_key(&values), data, "decoded keys re-encode exactly");
    }
    let _ = decode_value(data);
    let Some(&first) = data.first() else {
        return;
    };
    let rest = &data[1..];
    let split = usize::from(first).min(rest.len());
    let (a, b) = rest.split_at(split);
    if let (Ok(ta), Ok(tb)) = (decode_all(a), decode_all(b)) {
        assert_eq!(a.cmp(b), compare_tuples(&ta, &tb), "{ta:?} vs {tb:?}");
        if compare_tuples(&ta, &tb) == Ordering::Less && !tb.starts_with(&ta) {
            let mut longer = a.to_vec();
            longer.extend_from_slice(&[0xff; 3]);
            assert!(
                longer.as_slice() < b,
                "prefix-free: {ta:?} then anything < {tb:?}"
            );
        }
    }
}
