//! The codec room: how values, keys, records and outbox entries are laid out in bytes.
//!
//! Everything here is a pure function of bytes and values: it knows no definition, no store
//! and no open database. It uses nothing else in the engine but `crate::error`.
//!
//! - [`format`](mod@format): every format number, tag and limit, in one place.
//! - [`key`] (with `key_number`): the order-preserving tuple code for keys.
//! - [`record`] (with `record_codec`, `layouts`, `name_list`, `field_names`): `Record`, the
//!   `record!` macro and the stored record format; `row_reader` builds records from stored
//!   bytes, keeping only the fields a query needs; `byte_test` tests predicates on stored
//!   bytes without building values; `value_ref` is a value read where it is stored.

pub(crate) mod byte_test;
pub(crate) mod field_names;
pub mod format;
pub mod key;
pub(crate) mod key_number;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod layouts;
pub(crate) mod name_list;
pub mod record;
pub(crate) mod record_codec;
pub(crate) mod row_reader;
pub(crate) mod value_ref;
