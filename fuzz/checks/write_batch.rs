//! The `write_batch` fuzz checks, shared by the libFuzzer target and by the corpus replay in
//! `engine/tests/fuzz_corpus.rs`. For any input taken as a logged write batch:
//!
//! 1. Decoding never panics; it fails or returns every entry the header counts.
//! 2. A decoded batch has contiguous seqnos from its header's, within 56 bits, and keys and
//!    values within the limits.
//! 3. Encoding what was decoded and decoding it again gives the same entries and the same
//!    transaction trailer.

use bytes::Bytes;
use strata::fuzzing::{decode_batch, encode_batch};

pub fn check(data: &[u8]) {
    let record = Bytes::copy_from_slice(data);
    let Ok(batch) = decode_batch(&record) else {
        return;
    };
    let count = u32::from_le_bytes(
        data[8..12]
            .try_into()
            .expect("a decoded batch has a header"),
    );
    assert_eq!(batch.entries.len(), count as usize);
    for (i, entry) in batch.entries.iter().enumerate() {
        assert_eq!(entry.seqno, batch.first_seqno + i as u64);
        assert!(entry.seqno < (1 << 56));
        assert!(entry.key.len() <= strata::lsm::MAX_KEY_BYTES);
        assert!(entry.value.len() <= strata::lsm::MAX_VALUE_BYTES);
    }
    if let Some(txn) = &batch.txn {
        assert!(!txn.participants.is_empty());
    }
    let encoded = encode_batch(batch.first_seqno, &batch.entries, batch.txn.as_ref())
        .expect("a decoded batch re-encodes");
    let again = decode_batch(&encoded).expect("an encoded batch decodes");
    assert_eq!(again.first_seqno, batch.first_seqno);
    assert_eq!(again.entries, batch.entries);
    assert_eq!(again.txn, batch.txn);
}
