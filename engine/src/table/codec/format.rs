//! Every number the table layer writes to disk, and its limits. Tags are append-only: a
//! retired value stays here, reserved, with a comment. The formats are described in
//! `docs/formats/keys.md`, `docs/formats/records.md` and `docs/formats/catalog.md`.

// Key tuple code (`key.rs`). Tags sort in `Value`'s type order; 0x00 and 0xff are never tags.
/// `NULL` in a key.
pub const KEY_NULL: u8 = 0x05;
/// `false` in a key.
pub const KEY_FALSE: u8 = 0x10;
/// `true` in a key.
pub const KEY_TRUE: u8 = 0x11;
/// A number in a key: 8 bytes of ordered `f64`, then a kind byte ([`KEY_INT_BELOW`],
/// [`KEY_INT`], [`KEY_FLOAT`] or [`KEY_INT_ABOVE`]).
pub const KEY_NUMBER: u8 = 0x20;
// Numbers in keys of format 2 (`key_number.rs`): a tag for the sign and the exponent's band,
// symmetric about `KEY2_ZERO` (a negative band's tag is `2 × KEY2_ZERO − ` its positive one's).
/// A NaN with its sign bit set, in key format 2: 8 bytes of ordered `f64` follow.
pub const KEY2_NAN_NEG: u8 = 0x12;
/// Negative infinity, in key format 2.
pub const KEY2_NEG_INF: u8 = 0x13;
/// A negative float of magnitude 2^64 or more, in key format 2.
pub const KEY2_NEG_HUGE: u8 = 0x14;
/// A negative number of magnitude in [1, 2^64), in key format 2.
pub const KEY2_NEG: u8 = 0x15;
/// A negative float of magnitude below 1, in key format 2.
pub const KEY2_NEG_TINY: u8 = 0x16;
/// The float -0.0, in key format 2.
pub const KEY2_NEG_ZERO: u8 = 0x17;
/// The integer 0, in key format 2.
pub const KEY2_ZERO: u8 = 0x18;
/// The float 0.0, in key format 2.
pub const KEY2_POS_ZERO: u8 = 0x19;
/// A positive float below 1, in key format 2: its exponent + 1074 (2 bytes), then its bits.
pub const KEY2_POS_TINY: u8 = 0x1a;
/// A positive number in [1, 2^64), in key format 2: its exponent (1 byte), then its bits.
pub const KEY2_POS: u8 = 0x1b;
/// A positive float of 2^64 or more, in key format 2: its exponent (2 bytes), then its bits.
pub const KEY2_POS_HUGE: u8 = 0x1c;
/// Positive infinity, in key format 2.
pub const KEY2_POS_INF: u8 = 0x1d;
/// A NaN with its sign bit clear, in key format 2: 8 bytes of ordered `f64` follow.
pub const KEY2_NAN_POS: u8 = 0x1e;
/// A string in a key: escaped bytes, then `00 01`.
pub const KEY_STR: u8 = 0x30;
/// Bytes in a key: escaped bytes, then `00 01`.
pub const KEY_BYTES: u8 = 0x40;
/// After a number's `f64`: an integer below that `f64` (2 bytes of distance follow).
pub const KEY_INT_BELOW: u8 = 0x00;
/// After a number's `f64`: an integer equal to it (every integer of magnitude up to 2^53).
pub const KEY_INT: u8 = 0x01;
/// After a number's `f64`: a float (an equal integer sorts before it).
pub const KEY_FLOAT: u8 = 0x02;
/// After a number's `f64`: an integer above that `f64` (2 bytes of distance follow).
pub const KEY_INT_ABOVE: u8 = 0x03;

const _: () = assert!(
    KEY_NULL < KEY_FALSE
        && KEY_FALSE < KEY_TRUE
        && KEY_TRUE < KEY2_NAN_NEG
        && KEY2_NAN_POS < KEY_NUMBER
        && 2 * KEY2_ZERO - KEY2_POS_TINY == KEY2_NEG_TINY
        && 2 * KEY2_ZERO - KEY2_POS == KEY2_NEG
        && 2 * KEY2_ZERO - KEY2_POS_HUGE == KEY2_NEG_HUGE
        && KEY_TRUE < KEY_NUMBER
        && KEY_NUMBER < KEY_STR
        && KEY_STR < KEY_BYTES
        && KEY_INT_BELOW < KEY_INT
        && KEY_INT < KEY_FLOAT
        && KEY_FLOAT < KEY_INT_ABOVE
);

// Record encoding (`record.rs`).
/// The first byte of every record this build writes: names, then value offsets, then values.
pub const RECORD_VERSION: u8 = 2;
/// The first byte of a record of the first format (each name followed by its value), which
/// still reads.
pub const RECORD_V1: u8 = 1;
/// The first byte of a record that names its fields by a layout of its table's catalog
/// (`layouts.rs`) instead of carrying them: a table's rows as the table layer stores them.
pub const RECORD_LAID_OUT: u8 = 3;
/// How many layouts a table's catalog holds at most; rows of any other set of fields are
/// stored with their names (version 2).
/// TUNING: a table's rows have a few sets of fields (its optional fields missing in a few
/// combinations); each new set costs one synced catalog write, so a table whose rows are
/// all different stops paying it after this many, and opening the database reads them all.
pub const MAX_LAYOUTS: usize = 1024;
/// `NULL` in a record.
pub const VALUE_NULL: u8 = 0;
/// `false` in a record.
pub const VALUE_FALSE: u8 = 1;
/// `true` in a record.
pub const VALUE_TRUE: u8 = 2;
/// An integer in a record: zigzag varint.
pub const VALUE_INT: u8 = 3;
/// A float in a record: 8 bytes, little-endian IEEE bits.
pub const VALUE_FLOAT: u8 = 4;
/// A string in a record: varint length, UTF-8 bytes.
pub const VALUE_STR: u8 = 5;
/// Bytes in a record: varint length, bytes.
pub const VALUE_BYTES: u8 = 6;

// Index entry values.
/// The first byte of every index entry's value.
pub const ENTRY_VERSION: u8 = 1;

// The catalog (`catalog/mod.rs`).
/// The column family holding the catalog.
pub const CATALOG_CF: &str = "sys/catalog";
/// The newest catalog format this build reads (it refuses newer ones). It writes format 3 for
/// a table whose keys are of key format 2 (every table it creates); a table of key format 1
/// is written as format 1, or 2 with a unique index or a global sync index over shards; 4
/// with statistics options, 5 with declared columns.
pub const CATALOG_FORMAT: u32 = 5;
/// Catalog keys of table definitions start with this.
pub const CATALOG_TABLE_PREFIX: &str = "table/";
/// Catalog keys of table statistics start with this.
pub const CATALOG_STATS_PREFIX: &str = "stats/";
/// The catalog key of the next table id.
pub const CATALOG_NEXT_ID: &str = "next_id";
/// Catalog keys of row layouts start with this: `layout/<table id>/<layout id>`, decimal.
pub const CATALOG_LAYOUT_PREFIX: &str = "layout/";
/// The catalog key of the cost constants `Db::calibrate` measured (JSON of the planner's
/// `CostModel`); absent: the defaults.
pub const CATALOG_COST_MODEL: &str = "cost_model";
/// A table's fact column family is this followed by the table's name.
pub const FACT_CF_PREFIX: &str = "t/";
/// An index's column family is this, the table's name, `/`, the index's name.
pub const INDEX_CF_PREFIX: &str = "i/";

// Limits (`docs/formats/records.md` lists them).
/// Most fields in a record.
pub const MAX_FIELDS: usize = 1024;
/// Longest field name, in bytes.
pub const MAX_FIELD_NAME_BYTES: usize = 255;
/// Longest table or index name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Largest encoded record. An `All` index stores the record again, and one write batch carries
/// the fact and every index entry; a batch over the store's limit is refused whole.
pub const MAX_RECORD_BYTES: usize = 4 << 20;
/// Largest encoded primary key.
pub const MAX_PRIMARY_KEY_BYTES: usize = 4 << 10;
/// Largest index entry key (index values then primary key).
pub const MAX_INDEX_KEY_BYTES: usize = 16 << 10;
/// Most fields in a primary key or an index.
pub const MAX_KEY_FIELDS: usize = 16;
/// Most indexes on a table.
pub const MAX_INDEXES: usize = 64;
/// Most shards a table may have.
pub const MAX_SHARDS: u32 = 256;

// Shards and the outbox (`docs/formats/outbox.md`).
/// Shard `n` (from 1) of a database lives in this subdirectory, `shard-<n>`, unless
/// `Options::shard_dirs` names another place; shard 0 is the database directory itself.
pub const SHARD_DIR_PREFIX: &str = "shard-";
/// The column family holding a shard store's outbox.
pub const OUTBOX_CF: &str = "sys/outbox";
/// The column family holding a shard store's change log (`docs/formats/changes.md`).
pub const CHANGES_CF: &str = "sys/changes";
/// The column family of the database's own store holding the change feeds' definitions
/// and acknowledged positions (`docs/formats/changes.md`).
pub const FEEDS_CF: &str = "sys/feeds";
/// The first byte of every change log entry's value written now (`docs/formats/changes.md`).
pub const CHANGE_VERSION: u8 = 2;
/// The first version of change log entries (each change with its key values, the row after
/// whole), still read.
pub const CHANGE_VERSION_KEYED: u8 = 1;
/// The first byte of every outbox entry's value.
pub const OUTBOX_VERSION: u8 = 1;
/// An outbox operation that puts an index entry.
pub const OUTBOX_PUT: u8 = 1;
/// An outbox operation that deletes an index entry.
pub const OUTBOX_DELETE: u8 = 2;

const _: () = assert!(MAX_INDEX_KEY_BYTES <= crate::lsm::MAX_KEY_BYTES);

/// The shard of `bytes` among `n`: [`shard_hash`] mod `n` (`docs/formats/records.md`). A row
/// lives in the shard of its encoded primary key; a global index entry in the shard of its
/// encoded leading value.
pub fn shard_of(bytes: &[u8], n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    (shard_hash(bytes) % n as u64) as usize
}

/// The hash that places rows and global index entries in shards: eight bytes at a time through
/// a multiply-rotate round, then MurmurHash3's `fmix64` finaliser, with fixed constants and no
/// per-process seed. It is part of the on-disk format: a different function would move every
/// row of every sharded table (`tests::the_shard_of_known_keys_never_changes` pins it). It is
/// the function the planner's sketches also hash with, bit for bit, but owned here: the
/// planner may change its own, the shards may not.
pub fn shard_hash(bytes: &[u8]) -> u64 {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let mut h = (bytes.len() as u64).wrapping_mul(K1) ^ K2;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let k = u64::from_le_bytes(word).wrapping_mul(K2).rotate_left(31);
        h = (h ^ k)
            .rotate_left(27)
            .wrapping_mul(K1)
            .wrapping_add(0x52DC_E729);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h ^= u64::from_le_bytes(word).wrapping_mul(K1).rotate_left(33);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::codec::key::KeyFormat;
    use strata_planner::Value;

    /// Rows already on disk live where this says: a changed hash would strand them.
    #[test]
    fn the_shard_of_known_keys_never_changes() {
        let shards = |v: Value| {
            // Pinned on keys of format 1; a table of format 2 hashes its own keys' bytes.
            let key = KeyFormat::F64.encode_key([&v]);
            [2, 3, 8, 256].map(|n| shard_of(&key, n))
        };
        // Shards among 2, 3, 8 and 256 (computed once, by the function as it was in the planner).
        let pinned: [(Value, [usize; 4]); 6] = [
            (Value::Int(0), [0, 2, 6, 22]),
            (Value::Int(1), [0, 2, 0, 0]),
            (Value::Int(-7), [1, 0, 5, 205]),
            (Value::from("Ely"), [0, 1, 2, 26]),
            (Value::from("a longer key of several words"), [1, 2, 1, 129]),
            (Value::Bytes(vec![0, 255, 0]), [1, 1, 1, 129]),
        ];
        for (value, expected) in pinned {
            assert_eq!(shards(value.clone()), expected, "{value:?}");
        }
        assert_eq!(shard_hash(b""), 0x0ff2_e696_99c4_857e);
        assert_eq!(shard_hash(b"strata planner"), 0x8b8b_c5fa_14ee_3a70);
        assert_eq!(shard_of(b"anything", 1), 0);
    }

    /// The planner's hash and this one are the same function today (sketches built before
    /// the move hashed keys the same way); should the planner's change, this one must not.
    #[test]
    fn the_shard_hash_is_the_planners_hash_as_it_was_when_moved() {
        for bytes in [&b""[..], b"x", b"12345678", b"123456789", &[0xFF; 40]] {
            assert_eq!(shard_hash(bytes), strata_planner::value::hash_bytes(bytes));
        }
    }
}
