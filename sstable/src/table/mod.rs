//! Whole tables: the builder, the reader, and the two-level iterator.
//!
//! ```text
//! table  := data_block* filter_block properties_block index_block footer
//! block  := stored_bytes compression:u8 checksum:u32le      (the trailer)
//! ```
//!
//! Data blocks are contiguous from offset 0. The index block maps, for each data block, a
//! *separator* internal key (at or after the block's last key and before the next block's
//! first) to the block's handle. The footer points at the index, filter and properties blocks.

mod builder;
mod handle;
mod iter;
mod reader;

pub use builder::{
    Compression, MAX_KEY_BYTES, MAX_VALUE_BYTES, TableBuilder, TableInfo, TableOptions,
};
pub(crate) use handle::BlockHandle;
pub use iter::TableIter;
pub use reader::prefetch;
pub use reader::{Entry, FoundRef, Table};
