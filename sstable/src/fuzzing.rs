//! Entry points for the fuzz targets (`fuzz/`), which need the block decoder without a table
//! around it: random bytes almost never pass a table's checksums, so fuzzing only `Table::open`
//! would hardly reach the block parser. Not part of the supported API.

use bytes::Bytes;

use crate::block::Block;
use crate::error::Corruption;
use crate::format::ValueKind;

/// One decoded entry: `(user_key, seqno, kind, value)`.
pub type DecodedEntry = (Vec<u8>, u64, ValueKind, Vec<u8>);

/// Decodes and validates a raw (uncompressed, trailer-less) block, then reads its entries
/// forwards, backwards, and by a seek to each. Asserts the three agree, and returns the
/// entries or the first corruption.
pub fn decode_block(raw: &[u8]) -> Result<Vec<DecodedEntry>, Corruption> {
    let block = Block::new(Bytes::copy_from_slice(raw))?;
    block.validate()?;
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
    if let Some(what) = iter.status() {
        return Err(what.clone());
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
        "a validated block iterates backwards"
    );
    assert_eq!(
        backward, forward,
        "backward iteration disagrees with forward"
    );
    for (key, seqno, _, _) in &forward {
        let mut iter = block.iter();
        iter.seek(key, *seqno);
        assert!(iter.valid(), "a validated block finds each of its entries");
        assert_eq!((iter.user_key(), iter.seqno()), (key.as_slice(), *seqno));
    }
    Ok(forward)
}

/// Encodes entries as a raw block with the given restart interval: seeds for the block
/// fuzzer. REQUIRES: entries in table order.
pub fn encode_block(entries: &[DecodedEntry], restart_interval: usize) -> Vec<u8> {
    let mut builder = crate::block::BlockBuilder::new(restart_interval.max(1));
    for (key, seqno, kind, value) in entries {
        builder.add(key, crate::key::pack_trailer(*seqno, *kind), value);
    }
    builder.finish().to_vec()
}
