//! A batch of row changes, checked and planned before anything is locked: `TableBatch`
//! (its `Mutation`s), the checks of every record (key fields present and of a key type,
//! names, sizes), and the plan of each change's primary key and shard.

use strata_planner::Value;

use crate::error::{Error, Result};
use crate::table::catalog::columns::check_row;
use crate::table::catalog::entry::{encode_primary_key, record_key};
use crate::table::codec::field_names::{FieldNames, validate_field};
use crate::table::codec::format::{MAX_FIELDS, MAX_RECORD_BYTES};
use crate::table::codec::record::Record;
use crate::table::db::{Shared, Table};
use crate::table::write::Planned;

/// One row change.
#[derive(Clone, Debug, PartialEq)]
pub enum Mutation {
    /// Add a row; fails the whole batch if its key exists.
    Insert(Record),
    /// Add or replace a row.
    Upsert(Record),
    /// Remove the row with this primary key (one value per key field), if it exists.
    Delete(Vec<Value>),
}

/// Row changes to one table, applied in order and committed atomically (no isolation from
/// concurrent readers beyond that: this is a batch, not a transaction).
#[derive(Clone, Debug, Default)]
pub struct TableBatch {
    mutations: Vec<Mutation>,
}

impl TableBatch {
    /// An empty batch.
    pub fn new() -> Self {
        TableBatch::default()
    }

    /// Adds an insert.
    pub fn insert(&mut self, record: Record) -> &mut Self {
        self.mutations.push(Mutation::Insert(record));
        self
    }

    /// Adds an upsert.
    pub fn upsert(&mut self, record: Record) -> &mut Self {
        self.mutations.push(Mutation::Upsert(record));
        self
    }

    /// Adds a delete of the row whose primary key is `key` (one value per key field). Takes
    /// `&[Value]` like every other key argument, and still the `Vec<Value>` it once took.
    pub fn delete(&mut self, key: impl AsRef<[Value]>) -> &mut Self {
        self.mutations.push(Mutation::Delete(key.as_ref().to_vec()));
        self
    }

    /// Number of mutations.
    pub fn len(&self) -> usize {
        self.mutations.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty()
    }
}

/// Checks a record a caller wants stored and drops its `NULL` fields (a missing field reads
/// as `NULL`, so storing one would only make two spellings of the same row).
fn normalise(record: Record) -> Result<Record> {
    let record = record.without_nulls();
    if record.len() > MAX_FIELDS {
        return Err(Error::InvalidArgument(format!(
            "a record has at most {MAX_FIELDS} fields, got {}",
            record.len()
        )));
    }
    for (name, _) in record.iter() {
        validate_field(name)?;
    }
    Ok(record)
}

/// Name lists a loader has checked, each with its records' encoded head and where the table's
/// primary-key fields are in it: a record sharing one ([`Record::with_names`]) needs its names
/// neither checked nor encoded again, nor searched for its key.
#[derive(Default)]
pub(crate) struct KnownNames {
    lists: Vec<Known>,
    /// The list replaced when a new one is learnt and all places are taken.
    next: usize,
}

struct Known {
    names: FieldNames,
    head: Vec<u8>,
    /// The place of each primary-key field among the names; `None` if one is missing.
    key_at: Option<Vec<usize>>,
}

impl KnownNames {
    /// How many lists are remembered.
    /// TUNING: rows of a loaded file miss their optional fields in a few combinations; a
    /// search of the remembered lists stays a few pointer comparisons.
    const LISTS: usize = 8;

    /// What is known of `record`'s names, if they are a known list.
    fn of(&self, record: &Record) -> Option<&Known> {
        self.lists.iter().find(|k| record.shares_names(&k.names))
    }

    /// Remembers `record`'s names, checked, for rows of table `t`: its stored head is the
    /// one of the table's layout for them.
    fn learn(&mut self, db: &Shared, t: &Table, record: &Record) -> Result<()> {
        let names = record.field_names();
        let key_at = t
            .def
            .primary_key
            .iter()
            .map(|f| names.names().position(|n| n == f))
            .collect();
        let known = Known {
            head: db.row_head(t, record)?,
            names,
            key_at,
        };
        if self.lists.len() < Self::LISTS {
            self.lists.push(known);
        } else {
            self.lists[self.next] = known;
            self.next = (self.next + 1) % Self::LISTS;
        }
        Ok(())
    }
}

/// Checks and encodes every mutation of `batch` against table `t`.
pub(crate) fn plan(db: &Shared, t: &Table, batch: TableBatch) -> Result<Vec<Planned>> {
    let def = &t.def;
    let mut planned = Vec::with_capacity(batch.len());
    for m in batch.mutations {
        planned.push(match m {
            Mutation::Insert(r) => {
                let (key, record, encoded) = checked(db, t, r)?;
                Planned {
                    key,
                    record: Some(record),
                    encoded,
                    insert: true,
                }
            }
            Mutation::Upsert(r) => {
                let (key, record, encoded) = checked(db, t, r)?;
                Planned {
                    key,
                    record: Some(record),
                    encoded,
                    insert: false,
                }
            }
            Mutation::Delete(key) => {
                let values: Vec<&Value> = key.iter().collect();
                Planned {
                    key: encode_primary_key(def, &values)?,
                    record: None,
                    encoded: Vec::new(),
                    insert: false,
                }
            }
        });
    }
    Ok(planned)
}

/// A row to store, checked against table `t` (fields, key, size): its encoded primary key,
/// the row without its `NULL` fields, and the row encoded (by its layout,
/// [`Shared::encode_row`]).
pub(crate) fn checked(
    db: &Shared,
    t: &Table,
    record: Record,
) -> Result<(Vec<u8>, Record, Vec<u8>)> {
    let record = normalise(record)?;
    check_row(&t.def.name, &t.def.columns, &record)?;
    let key = record_key(&t.def, &record)?;
    let encoded = db.encode_row(t, &record)?;
    check_size(encoded.len())?;
    Ok((key, record, encoded))
}

/// [`checked`] for a loader that builds many rows of the same fields: a record whose names are
/// a list in `known` skips the check of its names and has its head copied, not encoded. The
/// stored form goes into `encoded` (cleared first), which the loader reuses row after row.
pub(crate) fn checked_known(
    db: &Shared,
    t: &Table,
    record: Record,
    known: &mut KnownNames,
    encoded: &mut Vec<u8>,
) -> Result<(Vec<u8>, Record)> {
    let def = &t.def;
    let record = record.without_nulls();
    encoded.clear();
    let Some(this) = known.of(&record) else {
        let record = normalise(record)?;
        // A list no one else holds is this row's own, and no other row will share it.
        if record.names_are_shared() {
            known.learn(db, t, &record)?;
        }
        let (key, record, stored) = checked(db, t, record)?;
        encoded.extend_from_slice(&stored);
        return Ok((key, record));
    };
    check_row(&def.name, &def.columns, &record)?;
    record.encode_with_head(&this.head, encoded);
    let key = match this.key_at.as_deref() {
        Some(&[at]) => encode_primary_key(def, &[record.value_at(at)])?,
        Some(at) => {
            let values: Vec<&Value> = at.iter().map(|&i| record.value_at(i)).collect();
            encode_primary_key(def, &values)?
        }
        None => record_key(def, &record)?,
    };
    check_size(encoded.len())?;
    Ok((key, record))
}

fn check_size(len: usize) -> Result<()> {
    if len > MAX_RECORD_BYTES {
        return Err(Error::TooLarge {
            what: "record",
            len,
            max: MAX_RECORD_BYTES,
        });
    }
    Ok(())
}
