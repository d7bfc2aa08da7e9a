//! `FieldNames`: a list of field names checked once and shared by the records built on it
//! ([`Record::with_names`](crate::Record::with_names)), so a loader making many rows of the
//! same fields pays for the names once, not once a row.

use crate::error::{Error, Result};
use crate::table::codec::format::MAX_FIELD_NAME_BYTES;
use crate::table::codec::name_list::NameList;
use crate::table::codec::record::Name;

/// Field names checked once — each a valid field name, none twice, at most
/// [`MAX_FIELDS`](crate::table::codec::format::MAX_FIELDS) — and held in ascending order, for
/// [`Record::with_names`](crate::Record::with_names): the rows built from one list share it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldNames(NameList);

impl FieldNames {
    /// The list of `names`, sorted; an error for an invalid name, a name given twice or too
    /// many names.
    pub fn new<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> crate::Result<FieldNames> {
        let mut sorted: Vec<&str> = Vec::new();
        let names: Vec<S> = names.into_iter().collect();
        for name in &names {
            validate_field(name.as_ref())?;
            sorted.push(name.as_ref());
        }
        if sorted.len() > crate::table::codec::format::MAX_FIELDS {
            return Err(crate::Error::InvalidArgument(format!(
                "a record has at most {} fields, got {}",
                crate::table::codec::format::MAX_FIELDS,
                sorted.len()
            )));
        }
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(crate::Error::InvalidArgument(format!(
                "field name {:?} given twice",
                w[0]
            )));
        }
        Ok(FieldNames(sorted.into_iter().map(Name::from).collect()))
    }

    /// The names, in ascending order: the order [`Record::with_names`](crate::Record::with_names) takes values in.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|n| &**n)
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The shared list itself, for the records that hold it.
    pub(crate) fn list(&self) -> &NameList {
        &self.0
    }

    /// A list already checked: a record's own names (sorted, unique, valid when stored).
    pub(crate) fn from_list(list: NameList) -> FieldNames {
        FieldNames(list)
    }
}

/// Field names: 1 to 255 bytes, no control characters.
pub fn validate_field(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_FIELD_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "field name {name:?} must be 1 to {MAX_FIELD_NAME_BYTES} bytes without control \
             characters"
        )));
    }
    Ok(())
}
