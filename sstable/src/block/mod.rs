//! Blocks: sorted entries with prefix-compressed keys and restart points. Data blocks and the
//! index block share this layout.
//!
//! ```text
//! block   := entry* restart:u32le{n} n:u32le
//! entry   := shared:varint unshared:varint value_len:varint trailer:varint        (version 1)
//!            key_suffix:byte{unshared} value:byte{value_len}
//! entry   := shared:varint unshared:varint value_field:varint [value_shared:varint] (version 2)
//!            trailer:varint key_suffix:byte{unshared} value_suffix:byte{value_field >> 1}
//! ```
//!
//! An entry's user key is the first `shared` bytes of the previous entry's user key followed by
//! `key_suffix`. Every `restart_interval` entries, an entry stores its whole key (`shared` = 0)
//! and its offset goes into the restart array, so a seek can binary-search the restarts and
//! then scan at most one interval.
//!
//! In tables of format version 2 values are prefix-compressed the same way: when the low bit
//! of `value_field` is set, `value_shared` follows and the value is the first `value_shared`
//! bytes of the previous entry's value followed by `value_suffix`. A restart point's value is
//! whole. Stored rows of a table begin with the same names section (`docs/formats/records.md`),
//! so a row after the first of its restart interval stores only its values.

mod builder;
mod hint;
mod iter;

pub(crate) use builder::BlockBuilder;
pub(crate) use hint::{touch_interval, touch_restart_array, touch_restart_entries};
pub(crate) use iter::{Block, BlockIter};
