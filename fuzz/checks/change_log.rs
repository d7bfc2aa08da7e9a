//! Checks for the `change_log` fuzz target (`docs/formats/changes.md`): any bytes either
//! decode as a change log entry (of either version) that re-encodes to an entry of the same
//! rows, a feed definition or a feed position that re-encodes to exactly those bytes, or are
//! refused with an error — never a panic, never an allocation the
//! input cannot back.

use strata::table::change_log::{ChangeEntry, commit_id_of};
use strata::table::{FeedAck, FeedDef};

pub fn check(data: &[u8]) {
    if let Ok(entry) = ChangeEntry::decode(data) {
        // Re-encoded in the current version (keys left to the rows, the row after as a delta
        // against the row before), the entry decodes to the same rows.
        let again = ChangeEntry::decode(&entry.encode()).expect("an encoded entry decodes");
        assert_eq!(again.commit, entry.commit);
        assert_eq!(again.changes.len(), entry.changes.len());
        for (a, b) in again.changes.iter().zip(&entry.changes) {
            assert_eq!(
                (a.table_id, &a.before, &a.after),
                (b.table_id, &b.before, &b.after)
            );
            assert!(a.key.is_empty(), "the current version stores no keys");
        }
        if data.first() == Some(&2) {
            assert!(entry.changes.iter().all(|c| c.key.is_empty()));
        }
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
