//! Tests of the block iterator: steps, seeks both ways, the checks of each step, and
//! values that share a prefix.

use super::*;
use crate::block::BlockBuilder;
use crate::key::pack_trailer;

fn build(entries: &[(&[u8], u64)], interval: usize) -> Block {
    let mut builder = BlockBuilder::new(interval, true);
    for (key, seqno) in entries {
        builder.add(key, pack_trailer(*seqno, ValueKind::Put), key);
    }
    Block::new(Bytes::copy_from_slice(builder.finish()), true).expect("valid")
}

fn keys_forward(block: &Block) -> Vec<(Vec<u8>, u64)> {
    let mut iter = block.iter();
    iter.seek_to_first();
    let mut out = Vec::new();
    while iter.valid() {
        assert_eq!(iter.value(), iter.user_key());
        out.push((iter.user_key().to_vec(), iter.seqno()));
        iter.next();
    }
    out
}

#[test]
fn varints_in_place_read_as_the_plain_decoder_reads_them() {
    // `varint_at` reads two to eight bytes as a word when eight are there: every width,
    // at every distance from the end of the input, with any bytes after it.
    let mut values = vec![0u64, 1, 127, 128, 300, 16_383, 16_384, u64::MAX];
    values.extend((0..64).map(|shift| 1u64 << shift));
    values.extend((1..64).map(|shift| (1u64 << shift) - 1));
    for value in values {
        let mut encoded = Vec::new();
        crate::coding::put_varint(&mut encoded, value);
        for lead in [0usize, 3] {
            for tail in 0..10 {
                for filler in [0x00u8, 0x80, 0xff] {
                    let mut input = vec![filler; lead];
                    input.extend_from_slice(&encoded);
                    input.extend(std::iter::repeat_n(filler, tail));
                    assert_eq!(
                        varint_at(&input, lead),
                        Some((value, lead + encoded.len())),
                        "{value} after {lead}, {tail} bytes after"
                    );
                    assert_eq!(
                        length_at(&input, lead),
                        Some((value, lead + encoded.len())),
                        "length {value} after {lead}, {tail} bytes after"
                    );
                }
            }
            let mut cut = vec![0u8; lead];
            cut.extend_from_slice(&encoded[..encoded.len() - 1]);
            assert_eq!(varint_at(&cut, lead), None, "{value} cut short");
            assert_eq!(length_at(&cut, lead), None, "length {value} cut short");
        }
    }
    assert_eq!(varint_at(&[0x80; 16], 0), None, "over-long");
    assert_eq!(length_at(&[0x80; 16], 0), None, "over-long length");
}

#[test]
fn entries_read_back_both_ways_and_seek_finds_the_first_at_or_after() {
    let entries: Vec<(Vec<u8>, u64)> = (0..50u32)
        .flat_map(|i| {
            let key = format!("key{:03}", i * 2).into_bytes();
            [(key.clone(), 9), (key, 3)]
        })
        .collect();
    let borrowed: Vec<(&[u8], u64)> = entries.iter().map(|(k, s)| (k.as_slice(), *s)).collect();
    for interval in [1, 2, 16, 1000] {
        let block = build(&borrowed, interval);
        assert_eq!(keys_forward(&block), entries);

        let mut iter = block.iter();
        iter.seek_to_last();
        let mut backwards = Vec::new();
        while iter.valid() {
            backwards.push((iter.user_key().to_vec(), iter.seqno()));
            iter.prev();
        }
        backwards.reverse();
        assert_eq!(backwards, entries);

        let mut iter = block.iter();
        iter.seek(b"key010", 5); // between seqno 9 and 3 of key010
        assert_eq!((iter.user_key(), iter.seqno()), (&b"key010"[..], 3));
        iter.seek(b"key011", u64::MAX >> 8);
        assert_eq!(iter.user_key(), b"key012");
        iter.seek(b"zzz", 0);
        assert!(!iter.valid());
        iter.seek(b"", 0);
        assert_eq!(iter.user_key(), b"key000");
    }
}

#[test]
fn large_entries_get_a_restart_point_every_few_and_read_back_the_same() {
    // Entries of ~150 bytes: with a 512-byte bound a full key every fourth entry, not every
    // sixteenth; small entries keep the interval.
    let value = vec![b'v'; 140];
    let keys: Vec<Vec<u8>> = (0..40u32)
        .map(|i| format!("key{:03}", i * 2).into_bytes())
        .collect();
    let built = |bytes: usize, value: &[u8]| {
        let mut builder = BlockBuilder::new(16, false).with_restart_bytes(bytes);
        for key in &keys {
            builder.add(key, pack_trailer(7, ValueKind::Put), value);
        }
        Block::new(Bytes::copy_from_slice(builder.finish()), false).expect("valid")
    };
    let entry = |value: &[u8]| {
        let mut one = BlockBuilder::new(16, false);
        one.add(&keys[0], pack_trailer(7, ValueKind::Put), value);
        one.estimated_size() - 8
    };
    let per_restart = 512usize.div_ceil(entry(&value));
    let large = built(512, &value);
    assert_eq!(large.restart_count, 40usize.div_ceil(per_restart));
    assert!(large.restart_count >= 10, "{}", large.restart_count);
    assert_eq!(
        built(usize::MAX, &value).restart_count,
        3,
        "every 16 entries"
    );
    assert_eq!(
        built(512, b"v").restart_count,
        3,
        "small entries keep the interval"
    );
    assert_eq!(
        built(1, b"v").restart_count,
        40,
        "a bound of one byte: every entry"
    );
    for block in [large, built(1, b"v")] {
        let mut iter = block.iter();
        iter.seek_to_first();
        let mut read = Vec::new();
        while iter.valid() {
            read.push(iter.user_key().to_vec());
            iter.next();
        }
        assert_eq!(read, keys);
        for (i, key) in keys.iter().enumerate() {
            iter.seek(key, u64::MAX >> 8);
            assert_eq!(iter.user_key(), &key[..]);
            let mut between = key.clone();
            between.push(b'!');
            iter.seek(&between, u64::MAX >> 8);
            assert_eq!(iter.valid(), i + 1 < keys.len());
            if i + 1 < keys.len() {
                assert_eq!(iter.user_key(), &keys[i + 1][..]);
            }
        }
    }
}

/// A block of `(shared, suffix, seqno)` entries written by hand (values empty), with
/// restart points at the entries `restarts` names.
fn raw_block(entries: &[(u64, &[u8], u64)], restarts: &[usize]) -> Block {
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for &(shared, suffix, seqno) in entries {
        offsets.push(data.len() as u32);
        crate::coding::put_varint(&mut data, shared);
        crate::coding::put_varint(&mut data, suffix.len() as u64);
        crate::coding::put_varint(&mut data, 0);
        crate::coding::put_varint(&mut data, pack_trailer(seqno, ValueKind::Put));
        data.extend_from_slice(suffix);
    }
    for &r in restarts {
        data.extend_from_slice(&offsets[r].to_le_bytes());
    }
    data.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    Block::new(Bytes::from(data), false).expect("a restart array")
}

#[test]
fn validation_finds_every_key_out_of_order_from_the_bytes_after_the_shared_prefix() {
    let ok =
        |entries: &[(u64, &[u8], u64)], restarts: &[usize]| raw_block(entries, restarts).validate();
    let disorder = Err(Corruption::KeysOutOfOrder);
    // In order: versions newest first, then a key that shares a byte.
    assert_eq!(
        ok(&[(0, b"ab", 9), (2, b"", 3), (1, b"c", 5)], &[0]),
        Ok(())
    );
    // A key below the one before; at a restart too.
    assert_eq!(ok(&[(0, b"b", 1), (0, b"a", 1)], &[0]), disorder);
    assert_eq!(ok(&[(0, b"b", 1), (0, b"a", 1)], &[0, 1]), disorder);
    assert_eq!(ok(&[(0, b"a", 1), (0, b"b", 1)], &[0, 1]), Ok(()));
    // A key's versions with ascending or equal sequence numbers.
    assert_eq!(ok(&[(0, b"a", 3), (1, b"", 9)], &[0]), disorder);
    assert_eq!(ok(&[(0, b"a", 3), (1, b"", 3)], &[0]), disorder);
    // A shared prefix shorter than the keys' common one (not what the builder writes,
    // still a valid encoding): the rest of the key decides.
    assert_eq!(ok(&[(0, b"abc", 1), (1, b"bd", 1)], &[0]), Ok(()));
    assert_eq!(ok(&[(0, b"abc", 1), (1, b"bb", 1)], &[0]), disorder);
    // A key that is a proper prefix of the one before sorts before it.
    assert_eq!(ok(&[(0, b"abc", 1), (2, b"", 1)], &[0]), disorder);
    // A restart entry that shares with the one before is malformed.
    assert!(matches!(
        ok(&[(0, b"ab", 1), (1, b"c", 1)], &[0, 1]),
        Err(Corruption::MalformedBlock(BlockFault::SharedKeyTooLong))
    ));
    // Whatever the builder writes passes.
    let keys: Vec<(Vec<u8>, u64)> = (0..300u32)
        .map(|i| (format!("k{:05}", i / 3).into_bytes(), u64::from(9 - i % 3)))
        .collect();
    let borrowed: Vec<(&[u8], u64)> = keys.iter().map(|(k, s)| (k.as_slice(), *s)).collect();
    for interval in [1, 3, 16] {
        assert_eq!(build(&borrowed, interval).validate(), Ok(()));
    }
}

/// The keys a forward read from the first entry yields, and its corruption if one stopped it.
fn read_forward(block: &Block) -> (Vec<Vec<u8>>, Option<Corruption>) {
    let mut iter = block.iter();
    iter.seek_to_first();
    let mut keys = Vec::new();
    while iter.valid() {
        keys.push(iter.user_key().to_vec());
        iter.next();
    }
    (keys, iter.status().cloned())
}

#[test]
fn a_first_read_checks_the_restart_keys_that_a_seek_searches() {
    let check = |entries: &[(u64, &[u8], u64)], restarts: &[usize]| {
        raw_block(entries, restarts).check_restarts()
    };
    let entries: &[(u64, &[u8], u64)] = &[(0, b"a", 1), (1, b"b", 1), (0, b"c", 1)];
    assert_eq!(check(entries, &[0, 2]), Ok(()));
    // Restart keys descending, or one key's versions with a rising sequence number.
    let descending: &[(u64, &[u8], u64)] = &[(0, b"c", 1), (1, b"d", 1), (0, b"b", 1)];
    assert_eq!(check(descending, &[0, 2]), Err(Corruption::KeysOutOfOrder));
    let versions: &[(u64, &[u8], u64)] = &[(0, b"c", 1), (0, b"c", 2)];
    assert_eq!(check(versions, &[0, 1]), Err(Corruption::KeysOutOfOrder));
    // A restart entry that shares a prefix cannot be read without its predecessor.
    assert!(matches!(
        check(entries, &[0, 1]),
        Err(Corruption::MalformedBlock(BlockFault::SharedKeyTooLong))
    ));
}

#[test]
fn a_read_stops_with_corruption_at_an_entry_out_of_order_and_never_yields_it() {
    // Restart keys in order ("a", "m"), but "c" after "d" between them: the first read's
    // check passes, and every read that reaches "c" fails there.
    let entries: &[(u64, &[u8], u64)] = &[
        (0, b"a", 1),
        (0, b"b", 1),
        (0, b"d", 1),
        (0, b"c", 1),
        (0, b"m", 1),
    ];
    let block = raw_block(entries, &[0, 4]);
    assert_eq!(block.check_restarts(), Ok(()));
    let (keys, status) = read_forward(&block);
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
    assert_eq!(status, Some(Corruption::KeysOutOfOrder));
    assert_eq!(block.validate(), Err(Corruption::KeysOutOfOrder));

    // A seek whose answer comes before the disorder is answered; one that walks into it
    // fails instead of answering with "c" or skipping it.
    let mut iter = block.iter();
    iter.seek(b"b", u64::MAX >> 8);
    assert!(iter.valid());
    assert_eq!(iter.user_key(), b"b");
    iter.seek(b"c", u64::MAX >> 8);
    assert!(
        iter.valid(),
        "d is the first at or after c in what was read"
    );
    assert_eq!(iter.user_key(), b"d");
    iter.next();
    assert!(!iter.valid());
    assert_eq!(iter.status(), Some(&Corruption::KeysOutOfOrder));
    let mut iter = block.iter();
    iter.seek(b"e", u64::MAX >> 8);
    assert!(!iter.valid());
    assert_eq!(iter.status(), Some(&Corruption::KeysOutOfOrder));
    // Backwards from the last entry, the step over the disorder fails too.
    let mut iter = block.iter();
    iter.seek_to_last();
    assert_eq!(iter.user_key(), b"m", "the last interval is in order");
    iter.prev();
    assert!(!iter.valid());
    assert_eq!(iter.status(), Some(&Corruption::KeysOutOfOrder));
}

#[test]
fn a_read_that_steps_over_a_restart_point_is_corruption() {
    // The restart array says an entry starts 1 byte into the second entry: a read from
    // the first entry yields the second, and the step after it passes the restart point.
    let entries: &[(u64, &[u8], u64)] = &[(0, b"a", 1), (0, b"b", 1), (0, b"c", 1)];
    let mut data = raw_block(entries, &[0, 1]).bytes().to_vec();
    let second_at = data.len() - 8;
    let second = read_u32(&data, second_at);
    data[second_at..second_at + 4].copy_from_slice(&(second + 1).to_le_bytes());
    let block = Block::new(Bytes::from(data), false).expect("offsets ascend within the entries");
    let (keys, status) = read_forward(&block);
    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
    assert!(
        matches!(
            status,
            Some(Corruption::MalformedBlock(BlockFault::RestartInsideEntry))
        ),
        "{status:?}"
    );
}

#[test]
fn malformed_restart_arrays_are_corruption() {
    assert!(Block::new(Bytes::from_static(&[1, 0]), false).is_err());
    assert!(Block::new(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]), false).is_err());
    assert!(Block::new(Bytes::from_static(&[0, 0, 0, 0]), false).is_ok()); // empty block
    // One entry byte, restart at 5 (past the entries).
    assert!(Block::new(Bytes::from_static(&[0, 5, 0, 0, 0, 1, 0, 0, 0]), false).is_err());
}

/// Entries of a version-2 block: `(key, value_field, value_shared, suffix)` after a first
/// entry "a" → "0123456789abcdefghij" at a restart point.
fn shared_block(second: (&[u8], u64, Option<u64>, &[u8]), restarts: &[u32]) -> Vec<u8> {
    let trailer = pack_trailer(1, ValueKind::Put);
    let mut data = vec![0, 1, 20 << 1];
    crate::coding::put_varint(&mut data, trailer); // two bytes
    data.extend_from_slice(b"a0123456789abcdefghij");
    let (key, field, shared, suffix) = second;
    data.extend_from_slice(&[0, key.len() as u8]);
    crate::coding::put_varint(&mut data, field);
    if let Some(shared) = shared {
        crate::coding::put_varint(&mut data, shared);
    }
    crate::coding::put_varint(&mut data, trailer);
    data.extend_from_slice(key);
    data.extend_from_slice(suffix);
    for restart in restarts {
        data.extend_from_slice(&restart.to_le_bytes());
    }
    data.extend_from_slice(&(restarts.len() as u32).to_le_bytes());
    data
}

#[test]
fn a_shared_value_is_the_previous_values_prefix_and_its_own_suffix() {
    let data = shared_block((b"b", 2 << 1 | 1, Some(18), b"XY"), &[0]);
    let block = Block::new(Bytes::from(data), true).expect("a restart array");
    block.validate().expect("a valid block");
    let mut iter = block.iter();
    iter.seek(b"b", 1);
    assert_eq!(iter.value(), b"0123456789abcdefghXY");
    assert_eq!(&iter.value_bytes()[..], b"0123456789abcdefghXY");
    iter.prev();
    assert_eq!(iter.value(), b"0123456789abcdefghij");
}

#[test]
fn a_shared_value_longer_than_the_one_before_or_at_a_restart_is_corruption() {
    // Sharing 21 bytes of a 20-byte value.
    let data = shared_block((b"b", 2 << 1 | 1, Some(21), b"XY"), &[0]);
    let block = Block::new(Bytes::from(data), true).expect("a restart array");
    let (keys, status) = read_forward(&block);
    assert_eq!(keys, [b"a".to_vec()]);
    assert!(
        matches!(
            status,
            Some(Corruption::MalformedBlock(BlockFault::SharedValueTooLong))
        ),
        "{status:?}"
    );
    // A restart point (the second entry is one) has no value before it to share.
    let second_at = 3 + 2 + 21;
    let data = shared_block((b"b", 2 << 1 | 1, Some(4), b"XY"), &[0, second_at]);
    let block = Block::new(Bytes::from(data), true).expect("a restart array");
    assert!(block.check_restarts().is_err());
    let (keys, status) = read_forward(&block);
    assert_eq!(keys, [b"a".to_vec()]);
    assert!(status.is_some());
    let mut iter = block.iter();
    iter.seek(b"b", 1);
    assert!(!iter.valid());
    assert!(iter.status().is_some());
}
