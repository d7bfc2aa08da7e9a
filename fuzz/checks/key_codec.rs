//! The `key_codec` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `engine/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. Decoding it as a key never panics; each value that decodes re-encodes to exactly its
//!    bytes in one of the key formats (the code is canonical; a reader decodes both formats,
//!    a table writes one).
//! 2. Split at its first byte's position: when both halves decode and are written in one
//!    format, their bytewise order is the order of the decoded tuples (order preservation).
//! 3. The decoded values, re-encoded one by one and concatenated with a suffix, still sort on
//!    the tuple's side of the other half (prefix-freedom).

use std::cmp::Ordering;

use strata::table::key::{KeyFormat, compare_tuples, decode_all, decode_value};

const FORMATS: [KeyFormat; 2] = [KeyFormat::F64, KeyFormat::Compact];

pub fn check(data: &[u8]) {
    let mut at = 0;
    while let Ok((v, used)) = decode_value(&data[at..]) {
        let own = &data[at..at + used];
        assert!(
            FORMATS.iter().any(|f| f.encode_key([&v]) == own),
            "{v:?} decoded from {own:02x?}, which no format writes"
        );
        at += used;
        if at == data.len() {
            break;
        }
    }
    let Some(&first) = data.first() else {
        return;
    };
    let rest = &data[1..];
    let split = usize::from(first).min(rest.len());
    let (a, b) = rest.split_at(split);
    if let (Ok(ta), Ok(tb)) = (decode_all(a), decode_all(b)) {
        let one_format = FORMATS
            .iter()
            .any(|f| f.encode_key(&ta) == a && f.encode_key(&tb) == b);
        if !one_format {
            return;
        }
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
