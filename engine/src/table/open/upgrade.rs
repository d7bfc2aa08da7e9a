//! Records of an older version rewritten as compaction copies them (`RecordUpgrade`, the
//! store's [`ValueUpgrade`]): a database written before record version 2 becomes version 2
//! as its files are compacted, with no pass of its own, and a table's rows of a layout its
//! table has become version 3 (`docs/formats/records.md`, "Migration").

use std::sync::Arc;

use crate::lsm::collect::ValueUpgrade;
use crate::table::catalog::entry::entry_head;
use crate::table::codec::format::{
    ENTRY_VERSION, FACT_CF_PREFIX, INDEX_CF_PREFIX, RECORD_V1, RECORD_VERSION,
};
#[cfg(test)]
use crate::table::codec::layouts::Layouts;
use crate::table::codec::record::Record;
use crate::table::stats::sketch::SketchFactory;

/// Rewrites version-1 and version-2 fact rows as version 3 where their table has their
/// layout (version 1 as version 2 where it has not), and version-1 payloads of index entries
/// as version 2. Anything else — current records, keys-only entries, other families, and
/// bytes that do not decode (left for `verify` to report) — is copied as it is.
#[derive(Debug, Default)]
pub(crate) struct RecordUpgrade {
    /// Where each fact family's layouts are (the statistics collectors' map of tables).
    pub(crate) tables: Arc<SketchFactory>,
}

impl ValueUpgrade for RecordUpgrade {
    fn upgrade(&self, cf: &str, value: &[u8]) -> Option<Vec<u8>> {
        if cf.starts_with(FACT_CF_PREFIX) {
            if !matches!(value.first(), Some(&(RECORD_V1 | RECORD_VERSION))) {
                return None;
            }
            let record = Record::decode(value).ok()?;
            let head = (self.tables.layouts_of(cf)).and_then(|layouts| layouts.known_head(&record));
            if head.is_none() && value[0] == RECORD_VERSION {
                return None;
            }
            let mut out = Vec::with_capacity(value.len());
            match head {
                Some(head) => record.encode_with_head(&head, &mut out),
                None => record.encode_into(&mut out),
            }
            return Some(out);
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

    /// The documented version-1 example (`docs/formats/records.md`).
    const V1: &[u8] = b"\x01\x02\x02id\x03\x0e\x04town\x05\x07Redmond";

    #[test]
    fn version_1_rows_and_payloads_are_rewritten_and_nothing_else_is() {
        let up = RecordUpgrade::default();
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

    #[test]
    fn rows_of_a_layout_their_table_has_are_rewritten_by_it() {
        let up = RecordUpgrade::default();
        let def = crate::table::catalog::TableDef {
            format: 1,
            id: 5,
            name: "customers".into(),
            primary_key: vec!["id".into()],
            shards: 1,
            indexes: Vec::new(),
            keys: crate::table::codec::key::KeyFormat::NEWEST.number(),
            statistics: Default::default(),
            columns: Vec::new(),
        };
        let record = Record::decode(V1).unwrap();
        let layouts = Arc::new(Layouts::from_sections([record.names_section()]).unwrap());
        up.tables.learn(&def, &layouts);
        let v2 = record.encode();
        let v3 = layouts.encode(&record, |_, _| unreachable!()).unwrap();
        assert_eq!(v3[0], crate::table::codec::format::RECORD_LAID_OUT);
        assert_eq!(up.upgrade("t/customers", V1).as_deref(), Some(&v3[..]));
        assert_eq!(up.upgrade("t/customers", &v2).as_deref(), Some(&v3[..]));
        assert_eq!(up.upgrade("t/customers", &v3), None);
        // A row of other fields stays as it is (version 2), or becomes version 2.
        let other = crate::record! { "id" => 1 };
        assert_eq!(up.upgrade("t/customers", &other.encode()), None);
    }
}
