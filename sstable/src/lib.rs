//! `strata-sstable` will hold Strata's sorted, immutable table format: data blocks with
//! prefix-compressed keys and restart points, per-block zstd compression with checksummed
//! trailers, an index block, a bloom filter over user keys, a properties block and a
//! checksummed footer; a `TableBuilder` over any `io::Write` and a `Table` reader over bytes.
//!
//! It is empty today: nothing here pretends to work. The format arrives with its own issue
//! ("The SSTable format"), and `docs/formats/sstable.md` with it.
