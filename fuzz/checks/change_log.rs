//! Checks for the `change_log` fuzz target (`docs/formats/changes.md`): any bytes either
//! decode as a change log entry, a feed definition or a feed position that re-encodes to
//! exactly those bytes, or are refused with an error — never a panic, never an allocation the
//! input cannot back.

use strata::table::change_log::{ChangeEntry, commit_id_of};
use strata::table::{FeedAck, FeedDef};

pub fn check(data: &[u8]) {
    if let Ok(entry) = ChangeEntry::decode(data) {
        assert_eq!(entry.encode(), data, "decoded entries re-encode exactly");
        assert!(entry.changes.len() <= data.len(), "no change without bytes");
        for change in &entry.changes {
            assert!(change.before.is_some() || change.after.is_some());
            // The records decode or are refused; either way, no panic.
            for record in [&change.before, &change.after].into_iter().flatten() {
                let _ = strata::Record::decode(record);
            }
        }
    }
    if let Ok(def) = FeedDef::decode(data) {
        assert_eq!(def.encode(), data, "decoded definitions re-encode exactly");
        assert!(def.tables.len() <= data.len());
    }
    if let Ok(ack) = FeedAck::decode(data) {
        assert_eq!(ack.encode(), data, "decoded positions re-encode exactly");
    }
    if let Some(id) = commit_id_of(data) {
        assert_eq!(id.to_be_bytes(), data);
    }
}
