use super::*;

/// Separators in internal order: keys that share their first eight bytes or more, keys
/// that are prefixes of others (and so share a zero-padded head with them), short keys,
/// and one key at several seqnos.
fn index() -> (Index, Vec<(Vec<u8>, u64)>) {
    let mut seps: Vec<(Vec<u8>, u64)> = Vec::new();
    for i in 0..300u32 {
        let mut k = b"prefix--".to_vec();
        k.extend_from_slice(&(i * 7).to_be_bytes());
        seps.push((k, 5));
    }
    for k in [
        &b""[..],
        b"a",
        b"a\0",
        b"a\0\0",
        b"ab",
        b"abcdefg",
        b"abcdefgh",
        b"abcdefgh\0",
    ] {
        seps.push((k.to_vec(), 9));
    }
    for seqno in [1, 4, 8] {
        seps.push((b"same-key-here".to_vec(), seqno));
    }
    seps.sort_by(|a, b| compare(&a.0, a.1, &b.0, b.1));
    let mut index = Index::default();
    for (n, (k, seqno)) in seps.iter().enumerate() {
        index.push(
            k,
            *seqno,
            BlockHandle {
                offset: n as u64,
                size: 1,
            },
        );
    }
    (index, seps)
}

/// A table file of `n` keys `key0…`, zero-padded to `digits`, each at seqno 1 with
/// `value`.
fn built(n: u32, digits: usize, value: &[u8], options: crate::TableOptions) -> Vec<u8> {
    let mut file = Vec::new();
    let mut builder = crate::TableBuilder::new(&mut file, options);
    for i in 0..n {
        let key = format!("key{i:0digits$}");
        builder
            .add(key.as_bytes(), 1, crate::ValueKind::Put, value)
            .unwrap();
    }
    builder.finish().unwrap();
    file
}

/// Whether data block `n` of `table` is marked as checked whole.
fn whole(table: &Table, n: usize) -> bool {
    let bits = &table.loaded().unwrap().whole;
    bits[n / 64].load(AtomicOrdering::Relaxed) & (1 << (n % 64)) != 0
}

/// A table of `key000`..`key039` in one block, with `key001` forged into `key003` (one
/// byte) and the block's checksum recomputed: keys out of order between two restart
/// points (every 16 entries), which no checksum can catch.
fn forged_table() -> Table {
    let options = crate::TableOptions {
        block_size_bytes: 1 << 16,
        restart_interval: 16,
        restart_bytes: usize::MAX,
        compression: crate::Compression::None,
        bloom_bits_per_key: 10,
        share_value_prefixes: false,
    };
    let mut file = built(40, 3, b"v", options);
    let handle = {
        let table = Table::open(Bytes::from(file.clone()), 1, None).unwrap();
        assert_eq!(table.loaded().unwrap().index.len(), 1, "one block");
        table.loaded().unwrap().index.handle(0)
    };
    let (start, end) = (
        handle.offset as usize,
        (handle.offset + handle.size) as usize,
    );
    // Entry 1 stores the suffix "1" and the value "v" (entry 0 ends "0v").
    let at = start
        + file[start..end]
            .windows(2)
            .position(|w| w == b"1v")
            .unwrap();
    file[at] = b'3';
    let crc = masked_crc(&[&file[start..end + 1]]);
    file[end + 1..end + 5].copy_from_slice(&crc.to_le_bytes());
    Table::open(Bytes::from(file), 1, None).unwrap()
}

#[test]
fn a_forged_block_fails_where_a_read_reaches_the_fault_and_whole_when_checked_whole() {
    let keys = |table: &Table| {
        let mut iter = table.iter();
        iter.seek_to_first();
        let mut keys = Vec::new();
        while iter.valid() {
            keys.push(String::from_utf8(iter.user_key().to_vec()).unwrap());
            iter.next();
        }
        (keys, iter.status().is_some())
    };
    // First read: a lookup before the fault is answered; a scan stops at the fault with
    // an error, never yielding "key002" after "key003".
    let table = forged_table();
    assert!(table.get(b"key000", 9).unwrap().is_some());
    let table = forged_table();
    let (read, failed) = keys(&table);
    assert_eq!(read, ["key000", "key003"]);
    assert!(failed, "the scan reports the fault");
    // Reads before the one that checks the block whole answer what they reach before the
    // fault; that read checks all of it, and refuses even the lookup before the fault.
    let table = forged_table();
    for read in 1..WHOLE_CHECK_READ {
        assert!(table.get(b"key000", 9).unwrap().is_some(), "read {read}");
    }
    let checked = table.get(b"key000", 9);
    assert!(
        matches!(
            checked,
            Err(Error::Corruption {
                what: Corruption::KeysOutOfOrder,
                ..
            })
        ),
        "{checked:?}"
    );
}

#[test]
fn a_sound_block_is_checked_whole_once_and_then_read_without_checks() {
    let file = built(40, 3, b"v", crate::TableOptions::default());
    let table = Table::open(Bytes::from(file), 1, None).unwrap();
    // First read: restart points only; then each entry as it is read, until the read that
    // checks the whole block, remembered.
    for _ in 1..WHOLE_CHECK_READ {
        assert!(!table.data_block(0).unwrap().is_entries_checked());
        assert!(!whole(&table, 0));
    }
    assert!(table.data_block(0).unwrap().is_entries_checked());
    assert!(whole(&table, 0));
    assert!(table.data_block(0).unwrap().is_entries_checked());
    for i in 0..40u32 {
        let key = format!("key{i:03}");
        assert!(table.get(key.as_bytes(), 9).unwrap().is_some(), "{key}");
    }
}

#[test]
fn a_scan_marks_each_block_it_reads_whole_and_a_failed_one_marks_none() {
    let file = built(3_000, 5, b"value", crate::TableOptions::default());
    let table = Table::open(Bytes::from(file), 1, None).unwrap();
    let blocks = table.loaded().unwrap().index.len();
    assert!(blocks > 3, "{blocks} blocks");
    // A seek into the middle of block 1 does not read it whole; the scan on from there
    // reads blocks 2.. whole (block 1 from its middle: not).
    let mut iter = table.iter();
    iter.seek(b"key01000");
    let mut n = 0;
    while iter.valid() {
        n += 1;
        iter.next();
    }
    assert_eq!(n, 2_000);
    let first = table
        .loaded()
        .unwrap()
        .index
        .search(b"key01000", u64::MAX >> 8);
    for b in 0..blocks {
        assert_eq!(whole(&table, b), b > first, "block {b} of {blocks}");
    }
    // Their later reads check nothing, without a second whole check.
    assert!(table.data_block(blocks - 1).unwrap().is_entries_checked());
    // A scan that stops at a fault marks nothing.
    let forged = forged_table();
    let mut iter = forged.iter();
    iter.seek_to_first();
    while iter.valid() {
        iter.next();
    }
    assert!(iter.status().is_some());
    assert!(!whole(&forged, 0));
}

#[test]
fn searches_by_head_find_the_first_separator_not_before_the_key() {
    let (index, seps) = index();
    let mut probes: Vec<(Vec<u8>, u64)> = seps.clone();
    for (k, _) in &seps {
        let mut longer = k.clone();
        longer.push(0);
        probes.push((longer, 0));
        probes.push((k.clone(), 0));
        probes.push((k.clone(), u64::MAX >> 8));
        if let Some((_, shorter)) = k.split_last() {
            probes.push((shorter.to_vec(), 3));
        }
    }
    probes.push((b"zzzzzzzzzz".to_vec(), 0));
    probes.sort_by(|a, b| compare(&a.0, a.1, &b.0, b.1));
    let mut last = 0;
    for (key, seqno) in &probes {
        let want = seps
            .iter()
            .position(|(k, s)| !compare(k, *s, key, *seqno).is_lt())
            .unwrap_or(seps.len());
        assert_eq!(index.search(key, *seqno), want, "{key:?} @ {seqno}");
        let from = index.search_from(key, *seqno, last);
        assert_eq!(from, want, "galloping: {key:?} @ {seqno}");
        last = from;
    }
}

#[test]
fn block_separators_ascend_and_fall_between_the_blocks_they_separate() {
    let file = built(5_000, 6, &[7u8; 100], crate::TableOptions::default());
    let table = Table::open(Bytes::from(file), 1, None).unwrap();
    let separators = table.block_separators();
    assert_eq!(separators.len() as u64, table.properties().data_blocks);
    assert!(separators.len() > 10);
    assert!(separators.windows(2).all(|w| w[0] < w[1]));
    // The last separator is at or after the last key, and the median one cuts the keys (all
    // the same size) near half, within a block's keys: what a compaction's split points rely
    // on.
    let keys: Vec<String> = (0..5_000).map(|i| format!("key{i:06}")).collect();
    assert!(*separators.last().unwrap() >= keys.last().unwrap().as_bytes());
    let median = separators[separators.len() / 2];
    let below = keys.iter().filter(|k| k.as_bytes() <= median).count();
    // The blocks up to and including the median one hold their share of the keys.
    let per_block = 5_000 / separators.len() + 1;
    let want = 5_000 * (separators.len() / 2 + 1) / separators.len();
    assert!(
        below.abs_diff(want) <= per_block,
        "{below} keys at or below the median ({per_block} a block)"
    );
    // A damaged index gives none (and reading the table reports the damage).
    let mut damaged = built(5_000, 6, &[7u8; 100], crate::TableOptions::default());
    let at = table.inner.index_handle.offset as usize + 3;
    damaged[at] ^= 0xff;
    let damaged = Table::open(Bytes::from(damaged), 2, None).unwrap();
    assert!(damaged.block_separators().is_empty());
}

#[test]
fn a_lookup_expecting_its_key_answers_as_a_plain_lookup() {
    let options = crate::TableOptions {
        block_size_bytes: 256,
        ..crate::TableOptions::default()
    };
    let file = built(500, 4, b"value", options);
    let table = Table::open(Bytes::from(file), 1, None).unwrap();
    // Every key, keys between and past them (the filter rules most out), and a snapshot
    // before the keys were written.
    let mut keys: Vec<String> = (0..500).map(|i| format!("key{i:04}")).collect();
    keys.extend((0..500).map(|i| format!("key{i:04}x")));
    keys.extend(["a", "key", "key9999", "zzz"].map(String::from));
    for key in &keys {
        for seqno in [0, 1, 9] {
            let plain = table.get(key.as_bytes(), seqno).unwrap();
            let likely = table.get_likely(key.as_bytes(), seqno).unwrap();
            assert_eq!(likely, plain, "{key} at {seqno}");
        }
    }
    assert!(table.get_likely(b"key0123", 9).unwrap().is_some());
}
