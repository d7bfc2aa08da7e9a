//! Unique indexes: the value a row takes in each, and the check that no other row holds it,
//! under the stripes of every value the batch writes (`docs/architecture.md`, "Unique and
//! global indexes").

use std::collections::HashMap;

use strata_planner::Value;

use crate::error::{Error, Result};
use crate::lsm::ReadOptions;
use crate::table::catalog::{IndexDef, TableDef};
use crate::table::codec::key::KeyFormat;
use crate::table::codec::record::Record;
use crate::table::db::{Db, Table};
use crate::table::write::{KeyChange, Planned};

/// The value a unique index gives `record` (its fields encoded as in an entry key), or `None`
/// when a field is `NULL`: rows with a `NULL` never collide, as in SQL.
pub(crate) fn unique_value(keys: KeyFormat, ix: &IndexDef, record: &Record) -> Option<Vec<u8>> {
    let mut value = Vec::new();
    for f in &ix.fields {
        let v = record.value(f);
        if v.is_null() {
            return None;
        }
        keys.encode_value(v, &mut value);
    }
    Some(value)
}

/// The unique values planned rows would take, for `def`'s unique indexes: their stripes are
/// locked with the rows', so two writers of one value take turns.
pub(crate) fn planned_unique_values(def: &TableDef, planned: &[Planned]) -> Vec<Vec<u8>> {
    let unique: Vec<&IndexDef> = def.indexes.iter().filter(|ix| ix.unique).collect();
    if unique.is_empty() {
        return Vec::new();
    }
    planned
        .iter()
        .filter_map(|p| p.record.as_ref())
        .flat_map(|r| {
            unique
                .iter()
                .filter_map(|ix| unique_value(def.key_format(), ix, r))
        })
        .collect()
}

impl Db {
    /// Refuses `changes` if a row would share a unique index's value with another row: one
    /// of the same batch, or one stored (and not moved off the value by this batch).
    /// REQUIRES: the stripes of the changed keys and of their new unique values are locked.
    pub(crate) fn check_unique(&self, t: &Table, changes: &[KeyChange]) -> Result<()> {
        for (i, ix) in t.def.indexes.iter().enumerate() {
            if !ix.unique || ix.state == strata_planner::IndexState::WriteOnly {
                continue;
            }
            let changed: HashMap<&[u8], Option<Vec<u8>>> = changes
                .iter()
                .map(|c| {
                    let value = c
                        .after
                        .as_ref()
                        .and_then(|r| unique_value(t.def.key_format(), ix, r));
                    (c.key.as_slice(), value)
                })
                .collect();
            let mut taken: HashMap<&[u8], &[u8]> = HashMap::new();
            for c in changes {
                let Some(Some(value)) = changed.get(c.key.as_slice()) else {
                    continue;
                };
                let duplicate = |other: &[u8]| Error::UniqueViolation {
                    table: t.def.name.as_str().into(),
                    index: ix.name.as_str().into(),
                    value: ix
                        .fields
                        .iter()
                        .map(|f| c.after.as_ref().map_or(Value::Null, |r| r.value(f).clone()))
                        .collect(),
                    key: encoded_key_values(&t.def, other).into(),
                };
                if let Some(other) = taken.insert(value, &c.key)
                    && other != c.key.as_slice()
                {
                    return Err(duplicate(other));
                }
                // Stored entries with the value: in every shard (local), or the one it
                // hashes to (global).
                let shards: Vec<usize> = if ix.scope == strata_planner::Scope::Local {
                    (0..t.shards.len()).collect()
                } else {
                    vec![t.entry_shard(ix, 0, value)]
                };
                let upper = crate::lsm::prefix_successor(value);
                for s in shards {
                    let shard = &t.shards[s];
                    let mut read = ReadOptions::default().lower_bound(value);
                    if let Some(upper) = &upper {
                        read = read.upper_bound(upper);
                    }
                    for kv in shard.store.store.iter(&shard.indexes[i], read)? {
                        let (k, _) = kv?;
                        let other = &k[value.len()..];
                        if other == c.key.as_slice() {
                            continue;
                        }
                        // A row this batch changes counts with its new value.
                        if let Some(moved) = changed.get(other)
                            && moved.as_deref() != Some(value.as_slice())
                        {
                            continue;
                        }
                        return Err(duplicate(other));
                    }
                }
            }
        }
        Ok(())
    }
}

/// An insert found a row at its key: the key's values.
pub(crate) struct KeyTaken(pub(crate) Vec<Value>);

/// A row's encoded primary key, decoded (as far as it decodes) for an error.
pub(crate) fn encoded_key_values(def: &TableDef, key: &[u8]) -> Vec<Value> {
    let mut values = Vec::new();
    let mut rest = key;
    for _ in &def.primary_key {
        match crate::table::codec::key::decode_value(rest) {
            Ok((v, used)) => {
                values.push(v);
                rest = &rest[used..];
            }
            Err(_) => break,
        }
    }
    values
}
