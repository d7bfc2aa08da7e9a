//! Iterators: sources (memtables and tables) merged into internal-key order, then collapsed
//! into one visible value per key by a [`Cursor`].

pub(crate) mod cursor;
pub(crate) mod merge;
pub(crate) mod source;

pub use cursor::{Cursor, Iter};
