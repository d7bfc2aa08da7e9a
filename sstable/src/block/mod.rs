//! Blocks: sorted entries with prefix-compressed keys and restart points. Data blocks and the
//! index block share this layout.
//!
//! ```text
//! block   := entry* restart:u32le{n} n:u32le
//! entry   := shared:varint unshared:varint value_len:varint trailer:varint
//!            key_suffix:byte{unshared} value:byte{value_len}
//! ```
//!
//! An entry's user key is the first `shared` bytes of the previous entry's user key followed by
//! `key_suffix`. Every `restart_interval` entries, an entry stores its whole key (`shared` = 0)
//! and its offset goes into the restart array, so a seek can binary-search the restarts and
//! then scan at most one interval.

mod builder;
mod iter;

pub(crate) use builder::BlockBuilder;
pub(crate) use iter::{Block, BlockIter};
