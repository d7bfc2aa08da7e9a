//! Checks for the `outbox` fuzz target (`docs/formats/outbox.md`): any bytes either decode as
//! an outbox entry that re-encodes to exactly those bytes, or are refused with an error —
//! never a panic, never an allocation the input cannot back.

use strata::table::outbox::{OutboxEntry, outbox_seq};

pub fn check(data: &[u8]) {
    if let Ok(entry) = OutboxEntry::decode(data) {
        assert_eq!(entry.encode(), data, "decoded entries re-encode exactly");
        assert!(
            entry.ops.len() <= data.len(),
            "no op without bytes behind it"
        );
    }
    if let Some(seq) = outbox_seq(data) {
        assert_eq!(seq.to_be_bytes(), data);
    }
}
