//! Where in a block a seek will read, worked out from the block's bytes before they are
//! checked, so that a fetch can start loading those lines a few keys before its turn.
//!
//! A seek reads the restart array at the block's end, then the entries at a few restart
//! points (its binary search), then the entries of one restart interval (its walk); each
//! of those loads waits for the one before it to say where to look. A fetch of many keys
//! runs these three steps ahead of itself, one key's step per stage, so that by the time a
//! key is sought every line its seek reads is already on its way.
//!
//! Nothing here is trusted: the bytes may be corrupt (their checksum is checked when the
//! block is read for real), so every read is bounded, every answer may be wrong, and a wrong
//! answer only costs a wasted prefetch. Nothing here can panic.

use crate::key::{compare, unpack_trailer};
use crate::table::prefetch;

/// At most this many restart entries are prefetched for a block's binary search.
/// TUNING: a 4 KiB block of rows has two or three restart points, a block of index entries
/// ten to twenty; the search reads about four of those.
const RESTART_LINES: usize = 8;

/// At most this many lines of an interval are prefetched for its walk.
/// TUNING: an interval of sixteen rows of a few hundred bytes spans more lines than the
/// processor can have in flight for several keys; the walk reads the first ones first.
/// 6, 12 and 24 measured the same on spread fetches (`docs/benchmarks.md`).
const INTERVAL_LINES: usize = 12;

/// The block's restart count and where its restart array begins, if they make sense.
fn restarts(data: &[u8]) -> Option<(usize, usize)> {
    let count_at = data.len().checked_sub(4)?;
    let count = read_u32(data, count_at)? as usize;
    let array_at = count_at.checked_sub(count.checked_mul(4)?)?;
    (count > 0).then_some((count, array_at))
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Restart point `index`'s offset, if it lies among the entries.
fn restart(data: &[u8], array_at: usize, index: usize) -> Option<usize> {
    let at = read_u32(data, array_at.checked_add(index.checked_mul(4)?)?)? as usize;
    (at < array_at).then_some(at)
}

/// Prefetches the lines holding the block's restart array (stage one: where the others
/// will look).
pub(crate) fn touch_restart_array(data: &[u8]) {
    if let Some(last) = data.last() {
        prefetch(last);
    }
    if let Some(before) = data.len().checked_sub(64).and_then(|at| data.get(at)) {
        prefetch(before);
    }
}

/// Prefetches the entries at the block's restart points, or at most [`RESTART_LINES`] of
/// them spread evenly (stage two: what the binary search will compare).
pub(crate) fn touch_restart_entries(data: &[u8]) {
    let Some((count, array_at)) = restarts(data) else {
        return;
    };
    let step = count.div_ceil(RESTART_LINES).max(1);
    for index in (0..count).step_by(step) {
        if let Some(at) = restart(data, array_at, index) {
            prefetch(&data[at]);
        }
    }
}

/// Prefetches the restart interval where a seek for `(user_key, seqno)` would walk (stage
/// three), found by the seek's own binary search over the restart points; returns the index
/// of the restart point the interval starts at, for the seek to start from (untrusted:
/// [`super::BlockIter::seek_hinted`] checks it).
pub(crate) fn touch_interval(data: &[u8], user_key: &[u8], seqno: u64) -> Option<usize> {
    let (count, array_at) = restarts(data)?;
    let (mut low, mut high) = (0, count);
    while high - low > 1 {
        let mid = (low + high) / 2;
        let (key, key_seqno) =
            restart(data, array_at, mid).and_then(|at| restart_key(data.get(..array_at)?, at))?;
        if compare(key, key_seqno, user_key, seqno).is_lt() {
            low = mid;
        } else {
            high = mid;
        }
    }
    let from = restart(data, array_at, low)?;
    let to = restart(data, array_at, low + 1).unwrap_or(array_at);
    let interval = data.get(from..to.max(from))?;
    for byte in interval.iter().step_by(64).take(INTERVAL_LINES) {
        prefetch(byte);
    }
    Some(low)
}

/// The key and sequence number of the entry at `at`, read as a restart entry (both block
/// layouts begin an entry with the same four varints).
fn restart_key(entries: &[u8], at: usize) -> Option<(&[u8], u64)> {
    let (shared, at) = varint(entries, at)?;
    let (unshared, at) = varint(entries, at)?;
    let (_value, at) = varint(entries, at)?;
    let (trailer, at) = varint(entries, at)?;
    if shared != 0 {
        return None;
    }
    let key = entries.get(at..at.checked_add(usize::try_from(unshared).ok()?)?)?;
    Some((key, unpack_trailer(trailer)?.0))
}

fn varint(input: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *input.get(at)?;
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some((value, at));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::block::{Block, BlockBuilder, BlockIter};
    use crate::format::ValueKind;
    use crate::key::pack_trailer;

    fn block(entries: usize, restart_interval: usize) -> Vec<u8> {
        let mut builder = BlockBuilder::new(restart_interval, false);
        for i in 0..entries {
            let key = format!("key{i:05}");
            builder.add(
                key.as_bytes(),
                pack_trailer(7, ValueKind::Put),
                &[b'v'; 100],
            );
        }
        builder.finish().to_vec()
    }

    #[test]
    fn restart_keys_are_read_as_a_seek_reads_them() {
        let data = block(40, 4);
        let (count, array_at) = restarts(&data).expect("restarts");
        assert_eq!(count, 10);
        for index in 0..count {
            let at = restart(&data, array_at, index).expect("restart");
            let (key, seqno) = restart_key(&data[..array_at], at).expect("key");
            assert_eq!(key, format!("key{:05}", index * 4).as_bytes());
            assert_eq!(seqno, 7);
        }
    }

    /// The interval stage's answer is the restart point a seek's search would end at: a seek
    /// told it takes it, a seek told any other (or none) does not, and each lands where a
    /// plain seek does.
    #[test]
    fn a_seek_takes_the_interval_found_and_lands_where_a_seek_does() {
        for (entries, interval) in [(40, 4), (40, 1), (7, 16), (1, 4), (33, 5)] {
            let data = block(entries, interval);
            let block = Block::new(Bytes::from(data.clone()), false).expect("block");
            block.check_restarts().expect("restarts");
            let (count, _) = restarts(&data).expect("restarts");
            let mut targets = vec![(String::new(), 0)];
            for i in 0..=entries {
                let key = format!("key{i:05}");
                targets.extend([(key.clone(), 6), (key.clone(), 7), (key.clone(), 8)]);
                targets.push((key + "a", 7));
            }
            for (target, seqno) in &targets {
                let position = |iter: &BlockIter| {
                    (iter.valid()).then(|| (iter.user_key().to_vec(), iter.seqno()))
                };
                let mut plain = block.iter();
                plain.seek(target.as_bytes(), *seqno);
                let expected = position(&plain);
                let found = touch_interval(&data, target.as_bytes(), *seqno);
                assert!(found.is_some(), "{target} @ {seqno}");
                let hints = (0..count + 2).chain([usize::MAX]).map(Some).chain([None]);
                for hint in hints {
                    let mut hinted = block.iter();
                    let taken = hinted.seek_hinted(target.as_bytes(), *seqno, hint);
                    assert_eq!(taken, hint == found, "{target} @ {seqno}, hint {hint:?}");
                    assert_eq!(position(&hinted), expected, "{target} @ {seqno}, {hint:?}");
                }
            }
        }
    }

    #[test]
    fn any_bytes_are_read_without_a_panic() {
        let data = block(40, 4);
        // Every truncation, and every byte of the block set to each of a few values.
        for end in 0..data.len() {
            touch_restart_array(&data[..end]);
            touch_restart_entries(&data[..end]);
            touch_interval(&data[..end], b"key00017", 7);
        }
        for at in 0..data.len() {
            for byte in [0x00, 0x7f, 0x80, 0xff] {
                let mut bad = data.clone();
                bad[at] = byte;
                touch_restart_entries(&bad);
                touch_interval(&bad, b"key00017", 7);
                touch_interval(&bad, b"", 0);
            }
        }
    }
}
