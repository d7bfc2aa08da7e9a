//! Row layouts (`docs/formats/records.md`, version 3): the sets of field names a table's rows
//! have, each stored once in the catalog under a number, so that a stored row carries the
//! number instead of its names. With real field names (`l_extendedprice`, `o_orderpriority`)
//! the names were half of a row's bytes, and a query compared them row after row.
//!
//! A layout is added the first time a row with its fields is written, by a synced catalog
//! write that completes before the row's own write begins: no row is ever durable without its
//! layout. Layouts are only ever added, so a reader holding a row holds a number its table
//! knows. A table keeps at most [`MAX_LAYOUTS`]; rows of any other set of fields are stored
//! with their names (version 2), as are records outside a table (index payloads, the outbox,
//! [`Record::encode`]).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, RwLock};

use crate::error::Result;
use crate::table::codec::format::{MAX_LAYOUTS, RECORD_LAID_OUT};
use crate::table::codec::record::{Name, Record, RecordError};
use crate::table::codec::record_codec::{put_varint, section_names};

/// A table's row layouts: names sections by number. Shared by the table's writers (which add
/// layouts), its readers and its statistics collector.
#[derive(Debug, Default)]
pub struct Layouts {
    known: RwLock<Known>,
    /// Held while a layout is added (its catalog write included), so two writers of a new
    /// set of fields add it once.
    adding: Mutex<()>,
}

#[derive(Debug, Default)]
struct Known {
    /// Names sections by number.
    sections: Vec<Arc<[u8]>>,
    /// Their names, by number: a reader meeting a layout shares them instead of allocating
    /// each name again.
    names: Vec<Arc<[Name]>>,
    /// Numbers by names section.
    numbers: HashMap<Arc<[u8]>, u32>,
}

/// A table without layouts: what records read outside a table are decoded with.
pub(crate) static NONE: LazyLock<Arc<Layouts>> = LazyLock::new(Arc::default);

impl Layouts {
    /// Layouts numbered in order from `sections` (the catalog's, by number), each checked: a
    /// names section in order, as a version-2 record's head holds it after the version.
    pub fn from_sections(
        sections: impl IntoIterator<Item = Vec<u8>>,
    ) -> std::result::Result<Layouts, RecordError> {
        let layouts = Layouts::default();
        {
            let mut known = layouts.known.write().unwrap_or_else(|e| e.into_inner());
            for section in sections {
                let names = checked_names(&section)?;
                if known.sections.len() >= MAX_LAYOUTS {
                    return Err(RecordError::UnknownLayout(known.sections.len() as u64));
                }
                let section: Arc<[u8]> = section.into();
                let number = known.sections.len() as u32;
                if known.numbers.insert(Arc::clone(&section), number).is_some() {
                    // Two numbers for one set of names: the encoder could not choose.
                    return Err(RecordError::UnknownLayout(u64::from(number)));
                }
                known.sections.push(section);
                known.names.push(names);
            }
        }
        Ok(layouts)
    }

    /// How many layouts the table has.
    pub fn len(&self) -> usize {
        self.read().sections.len()
    }

    /// Whether the table has none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names section of layout `number`.
    pub fn section(&self, number: u64) -> Option<Arc<[u8]>> {
        let known = self.read();
        usize::try_from(number)
            .ok()
            .and_then(|n| known.sections.get(n))
            .cloned()
    }

    /// The names of layout `number`, in order.
    pub(crate) fn names(&self, number: u64) -> Option<Arc<[Name]>> {
        let known = self.read();
        usize::try_from(number)
            .ok()
            .and_then(|n| known.names.get(n))
            .cloned()
    }

    /// The number of the layout whose names section is `section`.
    pub fn number_of(&self, section: &[u8]) -> Option<u32> {
        self.read().numbers.get(section).copied()
    }

    /// Decodes a stored record of any version, a version-3 one through these layouts.
    pub fn decode(&self, bytes: &[u8]) -> std::result::Result<Record, RecordError> {
        if bytes.first() == Some(&RECORD_LAID_OUT) {
            return Record::decode_laid_out(bytes, self);
        }
        Record::decode(bytes)
    }

    /// The stored form of `record` by the layouts the table has (version 3), or with its
    /// names (version 2) if it has none for its fields; adds none.
    pub fn encode_known(&self, record: &Record) -> Vec<u8> {
        match self.known_head(record) {
            Some(head) => {
                let mut out = Vec::with_capacity(head.len() + record.values_len_hint());
                record.encode_with_head(&head, &mut out);
                out
            }
            None => record.encode(),
        }
    }

    /// The head of a version-3 row of `record`'s fields if the table has their layout.
    pub(crate) fn known_head(&self, record: &Record) -> Option<Vec<u8>> {
        self.number_of(&record.names_section()).map(head_of)
    }

    /// The head of a version-3 row of `record`'s fields (version and layout number), adding
    /// the layout with `persist` (which makes it durable as number `n`) if the table does
    /// not have it yet; `None` once the table holds [`MAX_LAYOUTS`]: such a row is stored
    /// with its names.
    pub(crate) fn head_for(
        &self,
        record: &Record,
        persist: impl FnOnce(u32, &[u8]) -> Result<()>,
    ) -> Result<Option<Vec<u8>>> {
        let section = record.names_section();
        if let Some(number) = self.number_of(&section) {
            return Ok(Some(head_of(number)));
        }
        let _adding = self.adding.lock().unwrap_or_else(|e| e.into_inner());
        // Added by another writer while this one waited.
        if let Some(number) = self.number_of(&section) {
            return Ok(Some(head_of(number)));
        }
        let number = self.len();
        if number >= MAX_LAYOUTS {
            return Ok(None);
        }
        let number = number as u32;
        // A record's names are valid; checked all the same, as what open will read back.
        let names =
            checked_names(&section).map_err(|e| crate::Error::InvalidArgument(e.to_string()))?;
        persist(number, &section)?;
        let section: Arc<[u8]> = section.into();
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        known.numbers.insert(Arc::clone(&section), number);
        known.sections.push(section);
        known.names.push(names);
        Ok(Some(head_of(number)))
    }

    /// The stored form of `record`: version 3 where the table has its layout (or can add
    /// it with `persist`), else version 2.
    pub(crate) fn encode(
        &self,
        record: &Record,
        persist: impl FnOnce(u32, &[u8]) -> Result<()>,
    ) -> Result<Vec<u8>> {
        Ok(match self.head_for(record, persist)? {
            Some(head) => {
                let mut out = Vec::with_capacity(head.len() + record.values_len_hint());
                record.encode_with_head(&head, &mut out);
                out
            }
            None => record.encode(),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Known> {
        self.known.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// The head of a version-3 row of layout `number`: the version and the number.
pub(crate) fn head_of(number: u32) -> Vec<u8> {
    let mut head = vec![RECORD_LAID_OUT];
    put_varint(&mut head, u64::from(number));
    head
}

/// The names of a names section, checked as a version-2 record's are: its count and length,
/// each name's length and UTF-8, their strictly ascending order.
fn checked_names(section: &[u8]) -> std::result::Result<Arc<[Name]>, RecordError> {
    let (count, mut iter) = section_names(section)?;
    let mut names = Vec::with_capacity(count);
    for _ in 0..count {
        let name = iter.next().ok_or(RecordError::Truncated)??;
        names.push(Name::from(
            std::str::from_utf8(name).map_err(|_| RecordError::NotUtf8)?,
        ));
    }
    iter.finish()?;
    Ok(names.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

    fn no_persist(_: u32, _: &[u8]) -> Result<()> {
        panic!("a known layout is not persisted again")
    }

    #[test]
    fn a_row_stored_through_its_layout_decodes_to_the_same_record_and_is_smaller() {
        let layouts = Layouts::default();
        let row = record! { "id" => 7, "town" => "Redmond" };
        let mut persisted = Vec::new();
        let stored = layouts
            .encode(&row, |n, section| {
                persisted.push((n, section.to_vec()));
                Ok(())
            })
            .unwrap();
        assert_eq!(stored, b"\x03\x00\x02\x0b\x03\x0e\x05\x07Redmond");
        assert_eq!(persisted, vec![(0, b"\x02\x08\x02id\x04town".to_vec())]);
        assert!(stored.len() < row.encode().len());
        assert_eq!(layouts.decode(&stored).unwrap(), row);
        // The same fields again: the same layout, nothing persisted.
        let other = record! { "id" => 8, "town" => "Kirkland" };
        let stored = layouts.encode(&other, no_persist).unwrap();
        assert_eq!(stored[..2], [RECORD_LAID_OUT, 0]);
        assert_eq!(layouts.decode(&stored).unwrap(), other);
        // Another set of fields: the next number.
        let third = record! { "id" => 9 };
        let stored = layouts.encode(&third, |n, _| {
            assert_eq!(n, 1);
            Ok(())
        });
        assert_eq!(stored.unwrap()[..2], [RECORD_LAID_OUT, 1]);
    }

    #[test]
    fn a_layout_the_table_does_not_have_is_an_error_not_a_guess() {
        let layouts = Layouts::default();
        let stored = b"\x03\x00\x02\x0b\x03\x0e\x05\x07Redmond";
        assert_eq!(layouts.decode(stored), Err(RecordError::UnknownLayout(0)));
        assert_eq!(Record::decode(stored), Err(RecordError::UnknownLayout(0)));
    }

    #[test]
    fn a_failed_catalog_write_adds_no_layout() {
        let layouts = Layouts::default();
        let row = record! { "id" => 7 };
        let failed = layouts.encode(&row, |_, _| Err(crate::Error::Closed));
        assert!(failed.is_err());
        assert!(layouts.is_empty());
    }

    #[test]
    fn a_table_full_of_layouts_stores_new_field_sets_with_their_names() {
        let sections = (0..MAX_LAYOUTS).map(|i| {
            let mut row = Record::new();
            row.set(format!("f{i:05}"), 1);
            row.names_section()
        });
        let layouts = Layouts::from_sections(sections).unwrap();
        let row = record! { "other" => 1 };
        let stored = layouts.encode(&row, no_persist).unwrap();
        assert_eq!(stored, row.encode());
        assert_eq!(layouts.decode(&stored).unwrap(), row);
    }

    #[test]
    fn sections_out_of_order_or_repeated_are_refused() {
        let bad = [
            b"\x02\x06\x01b\x01a".to_vec(), // out of order
            b"\x01\x03\x01a".to_vec(),      // names_len past the end
            b"\x01\x02\x01a\x00".to_vec(),  // bytes after the names
            b"\x01\x02\x01\xff".to_vec(),   // not UTF-8
        ];
        for section in bad {
            assert!(
                Layouts::from_sections([section.clone()]).is_err(),
                "{section:?}"
            );
        }
        let twice = b"\x01\x02\x01a".to_vec();
        assert!(Layouts::from_sections([twice.clone(), twice]).is_err());
    }
}
