//! The properties block: what a table holds, for the engine (compaction picking) and the
//! planner (statistics), without reading its data.
//!
//! ```text
//! properties := count:varint (name_len:varint name value_len:varint value){count}
//! ```
//!
//! Names are UTF-8 and strictly ascending. The format's own names start with `strata.`;
//! numbers are varints and keys raw bytes. Engine-defined properties carry any other name and
//! opaque bytes.

use std::collections::BTreeMap;

use crate::coding::{Reader, put_varint};
use crate::error::{Corruption, PropertiesFault};

/// What a table holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Number of entries, tombstones included.
    pub entries: u64,
    /// Number of tombstones.
    pub deletions: u64,
    /// Sum of user-key lengths over all entries.
    pub raw_key_bytes: u64,
    /// Sum of value lengths over all entries.
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub data_blocks: u64,
    /// Smallest user key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Largest user key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number (0 for an empty table).
    pub smallest_seqno: u64,
    /// Largest sequence number (0 for an empty table).
    pub largest_seqno: u64,
    /// Engine-defined properties.
    pub user: BTreeMap<String, Vec<u8>>,
}

const ENTRIES: &str = "strata.entries";
const DELETIONS: &str = "strata.deletions";
const RAW_KEY_BYTES: &str = "strata.raw_key_bytes";
const RAW_VALUE_BYTES: &str = "strata.raw_value_bytes";
const DATA_BLOCKS: &str = "strata.data_blocks";
const SMALLEST_KEY: &str = "strata.smallest_key";
const LARGEST_KEY: &str = "strata.largest_key";
const SMALLEST_SEQNO: &str = "strata.smallest_seqno";
const LARGEST_SEQNO: &str = "strata.largest_seqno";

impl TableProperties {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let number = |n: u64| {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            out
        };
        let mut all: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        all.insert(ENTRIES, number(self.entries));
        all.insert(DELETIONS, number(self.deletions));
        all.insert(RAW_KEY_BYTES, number(self.raw_key_bytes));
        all.insert(RAW_VALUE_BYTES, number(self.raw_value_bytes));
        all.insert(DATA_BLOCKS, number(self.data_blocks));
        all.insert(SMALLEST_KEY, self.smallest_key.clone());
        all.insert(LARGEST_KEY, self.largest_key.clone());
        all.insert(SMALLEST_SEQNO, number(self.smallest_seqno));
        all.insert(LARGEST_SEQNO, number(self.largest_seqno));
        for (name, value) in &self.user {
            all.insert(name, value.clone());
        }
        let mut out = Vec::new();
        put_varint(&mut out, all.len() as u64);
        for (name, value) in all {
            put_varint(&mut out, name.len() as u64);
            out.extend_from_slice(name.as_bytes());
            put_varint(&mut out, value.len() as u64);
            out.extend_from_slice(&value);
        }
        out
    }

    pub(crate) fn decode(block: &[u8]) -> Result<TableProperties, Corruption> {
        let bad = Corruption::MalformedProperties;
        let mut reader = Reader::new(block);
        let count = reader.varint().ok_or(bad(PropertiesFault::Count))?;
        let mut all: BTreeMap<String, &[u8]> = BTreeMap::new();
        let mut previous: Option<&[u8]> = None;
        for _ in 0..count {
            let name_len = reader.len().ok_or(bad(PropertiesFault::NameLength))?;
            let name = reader.bytes(name_len).ok_or(bad(PropertiesFault::Name))?;
            let value_len = reader.len().ok_or(bad(PropertiesFault::ValueLength))?;
            let value = reader.bytes(value_len).ok_or(bad(PropertiesFault::Value))?;
            if previous.is_some_and(|p| p >= name) {
                return Err(bad(PropertiesFault::NamesNotAscending));
            }
            previous = Some(name);
            let name = std::str::from_utf8(name).map_err(|_| bad(PropertiesFault::NameNotUtf8))?;
            all.insert(name.to_owned(), value);
        }
        if !reader.is_empty() {
            return Err(bad(PropertiesFault::TrailingBytes));
        }
        let mut take = |name: &'static str| {
            all.remove(name)
                .ok_or(bad(PropertiesFault::Missing { property: name }))
        };
        let number = |bytes: &[u8], name: &'static str| {
            let mut reader = Reader::new(bytes);
            let not_a_number = bad(PropertiesFault::NotANumber { property: name });
            let n = reader.varint().ok_or(not_a_number.clone())?;
            if reader.is_empty() {
                Ok(n)
            } else {
                Err(not_a_number)
            }
        };
        let properties = TableProperties {
            entries: number(take(ENTRIES)?, ENTRIES)?,
            deletions: number(take(DELETIONS)?, DELETIONS)?,
            raw_key_bytes: number(take(RAW_KEY_BYTES)?, RAW_KEY_BYTES)?,
            raw_value_bytes: number(take(RAW_VALUE_BYTES)?, RAW_VALUE_BYTES)?,
            data_blocks: number(take(DATA_BLOCKS)?, DATA_BLOCKS)?,
            smallest_key: take(SMALLEST_KEY)?.to_vec(),
            largest_key: take(LARGEST_KEY)?.to_vec(),
            smallest_seqno: number(take(SMALLEST_SEQNO)?, SMALLEST_SEQNO)?,
            largest_seqno: number(take(LARGEST_SEQNO)?, LARGEST_SEQNO)?,
            user: BTreeMap::new(),
        };
        let user = all
            .into_iter()
            .map(|(name, value)| (name, value.to_vec()))
            .collect();
        Ok(TableProperties { user, ..properties })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip_with_user_entries() {
        let mut properties = TableProperties {
            entries: 10,
            deletions: 2,
            raw_key_bytes: 160,
            raw_value_bytes: 1000,
            data_blocks: 1,
            smallest_key: b"a".to_vec(),
            largest_key: b"z".to_vec(),
            smallest_seqno: 3,
            largest_seqno: 99,
            user: BTreeMap::new(),
        };
        properties
            .user
            .insert("planner.ndv.town".into(), vec![1, 2, 3]);
        let decoded = TableProperties::decode(&properties.encode()).expect("valid");
        assert_eq!(decoded, properties);
    }

    #[test]
    fn missing_or_unsorted_properties_are_refused() {
        assert!(TableProperties::decode(&[0]).is_err());
        let encoded = TableProperties::default().encode();
        assert!(TableProperties::decode(&encoded[..encoded.len() - 1]).is_err());
        let mut extra = encoded.clone();
        extra.push(0);
        assert!(TableProperties::decode(&extra).is_err());
    }
}
