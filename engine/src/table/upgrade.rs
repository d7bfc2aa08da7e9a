//! Records of an older version rewritten as compaction copies them (`RecordUpgrade`, the
//! store's [`ValueUpgrade`]): a database written before record version 2 becomes version 2
//! as its files are compacted, with no pass of its own (`docs/formats/records.md`).

use crate::lsm::collect::ValueUpgrade;
use crate::table::entry::entry_head;
use crate::table::format::{ENTRY_VERSION, FACT_CF_PREFIX, INDEX_CF_PREFIX, RECORD_V1};
use crate::table::record::Record;

/// Rewrites version-1 fact rows and version-1 payloads of index entries in the current record
/// version. Anything else — current records, keys-only entries, other families, and bytes that
/// do not decode (left for `verify` to report) — is copied as it is.
#[derive(Debug, Default)]
pub(crate) struct RecordUpgrade;

impl ValueUpgrade for RecordUpgrade {
    fn upgrade(&self, cf: &str, value: &[u8]) -> Option<Vec<u8>> {
        if cf.starts_with(FACT_CF_PREFIX) {
            return upgrade_record(value, Vec::new());
        }
        if cf.starts_with(INDEX_CF_PREFIX) {
            // version, shard, then the payload (none for a keys-only index).
            let (version, _, at) = entry_head(value)?;
            if version != ENTRY_VERSION {
                return None;
            }
            return upgrade_record(&value[at..], value[..at].to_vec());
        }
        None
    }
}

/// `prefix` followed by `bytes` in the current version, if `bytes` is a version-1 record.
fn upgrade_record(bytes: &[u8], mut prefix: Vec<u8>) -> Option<Vec<u8>> {
    if bytes.first() != Some(&RECORD_V1) {
        return None;
    }
    let record = Record::decode(bytes).ok()?;
    record.encode_into(&mut prefix);
    Some(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::format::RECORD_VERSION;

    /// The documented version-1 example (`docs/formats/records.md`).
    const V1: &[u8] = b"\x01\x02\x02id\x03\x0e\x04town\x05\x07Redmond";

    #[test]
    fn version_1_rows_and_payloads_are_rewritten_and_nothing_else_is() {
        let up = RecordUpgrade;
        let current = Record::decode(V1).unwrap().encode();
        assert_eq!(current[0], RECORD_VERSION);
        assert_eq!(up.upgrade("t/customers", V1), Some(current.clone()));
        let mut entry = vec![ENTRY_VERSION, 3];
        entry.extend(V1);
        let mut expected = vec![ENTRY_VERSION, 3];
        expected.extend(&current);
        assert_eq!(up.upgrade("i/customers/by_town", &entry), Some(expected));
        // Current records, keys-only entries, other families, damaged bytes: unchanged.
        assert_eq!(up.upgrade("t/customers", &current), None);
        assert_eq!(up.upgrade("i/customers/by_town", &[ENTRY_VERSION, 3]), None);
        assert_eq!(up.upgrade("sys/catalog", V1), None);
        assert_eq!(up.upgrade("t/customers", &V1[..V1.len() - 1]), None);
        assert_eq!(up.upgrade("i/customers/by_town", &[9, 3, 1, 0]), None);
    }
}
