//! Entry points for the fuzz targets (`fuzz/`), which need the block decoder without a table
//! around it: random bytes almost never pass a table's checksums, so fuzzing only `Table::open`
//! would hardly reach the block parser. Not part of the supported API.

use bytes::Bytes;

use crate::block::Block;
use crate::error::Corruption;
use crate::format::ValueKind;

/// One decoded entry: `(user_key, seqno, kind, value)`.
pub type DecodedEntry = (Vec<u8>, u64, ValueKind, Vec<u8>);

/// Decodes a raw (uncompressed, trailer-less) block as a table's first read does (restart
/// points checked, entries checked as they are read), then reads its entries forwards,
/// backwards, and by a seek to each. Asserts that what a read yields ascends, that the three
/// agree, and that a whole-block validation agrees with the forward read; returns the
/// entries or the first corruption.
///
/// The bytes are read as both block layouts (format versions 1 and 2, whose values may share
/// prefixes); the result is version 2's.
pub fn decode_block(raw: &[u8]) -> Result<Vec<DecodedEntry>, Corruption> {
    let _ = decode_block_as(raw, false);
    decode_block_as(raw, true)
}

fn decode_block_as(raw: &[u8], shares_values: bool) -> Result<Vec<DecodedEntry>, Corruption> {
    let block = Block::new(Bytes::copy_from_slice(raw), shares_values)?;
    block.check_restarts()?;
    let forward = read_forward(&block);
    assert_eq!(
        forward.as_ref().err(),
        block.validate().err().as_ref(),
        "validation and a forward read disagree"
    );
    let forward = forward?;
    for pair in forward.windows(2) {
        assert!(
            crate::key::compare(&pair[0].0, pair[0].1, &pair[1].0, pair[1].1).is_lt(),
            "a read yielded entries out of order"
        );
    }
    let mut iter = block.iter();
    iter.seek_to_last();
    let mut backward = Vec::new();
    while iter.valid() {
        backward.push((
            iter.user_key().to_vec(),
            iter.seqno(),
            iter.kind(),
            iter.value().to_vec(),
        ));
        iter.prev();
    }
    backward.reverse();
    assert!(
        iter.status().is_none(),
        "a block read whole forwards reads backwards"
    );
    assert_eq!(
        backward, forward,
        "backward iteration disagrees with forward"
    );
    for (key, seqno, _, _) in &forward {
        let mut iter = block.iter();
        iter.seek(key, *seqno);
        assert!(
            iter.valid(),
            "a block read whole forwards finds each of its entries"
        );
        assert_eq!((iter.user_key(), iter.seqno()), (key.as_slice(), *seqno));
    }
    Ok(forward)
}

/// Every entry of `block`, read forwards from the first, or the corruption that stopped the
/// read.
fn read_forward(block: &Block) -> Result<Vec<DecodedEntry>, Corruption> {
    let mut iter = block.iter();
    iter.seek_to_first();
    let mut forward = Vec::new();
    while iter.valid() {
        forward.push((
            iter.user_key().to_vec(),
            iter.seqno(),
            iter.kind(),
            iter.value().to_vec(),
        ));
        iter.next();
    }
    match iter.status() {
        Some(what) => Err(what.clone()),
        None => Ok(forward),
    }
}

/// Encodes entries as a raw block with the given restart interval, in format version 2's
/// layout (values may share prefixes): seeds for the block fuzzer. REQUIRES: entries in
/// table order.
pub fn encode_block(entries: &[DecodedEntry], restart_interval: usize) -> Vec<u8> {
    let mut builder = crate::block::BlockBuilder::new(restart_interval.max(1), true);
    for (key, seqno, kind, value) in entries {
        builder.add(key, crate::key::pack_trailer(*seqno, *kind), value);
    }
    builder.finish().to_vec()
}
