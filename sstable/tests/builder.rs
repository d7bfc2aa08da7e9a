//! The builder refuses bad input with a clear error, and what it writes is what it reports.

mod common;

use common::{build, open, options, sample_entries};
use strata_sstable::{
    BlockCache, Error, MAX_KEY_BYTES, MAX_SEQNO, Table, TableBuilder, TableOptions, ValueKind,
};

#[test]
fn out_of_order_and_duplicate_entries_are_errors() {
    let mut builder = TableBuilder::new(Vec::new(), TableOptions::default());
    builder.add(b"b", 5, ValueKind::Put, b"").expect("first");
    assert!(matches!(
        builder.add(b"a", 9, ValueKind::Put, b""),
        Err(Error::OutOfOrder)
    ));
    assert!(matches!(
        builder.add(b"b", 5, ValueKind::Put, b""),
        Err(Error::OutOfOrder)
    ));
    assert!(matches!(
        builder.add(b"b", 6, ValueKind::Put, b""),
        Err(Error::OutOfOrder)
    ));
    builder
        .add(b"b", 4, ValueKind::Delete, b"")
        .expect("an older version");
    builder
        .add(b"c", 9, ValueKind::Put, b"x")
        .expect("a later key");
    let info = builder.finish().expect("finish");
    assert_eq!(
        info.properties.entries, 3,
        "refused entries were not written"
    );
}

#[test]
fn oversized_keys_seqnos_and_reserved_properties_are_refused() {
    let mut builder = TableBuilder::new(Vec::new(), TableOptions::default());
    let long_key = vec![b'k'; MAX_KEY_BYTES + 1];
    assert!(matches!(
        builder.add(&long_key, 1, ValueKind::Put, b""),
        Err(Error::TooLarge { what: "key", .. })
    ));
    assert!(matches!(
        builder.add(b"k", MAX_SEQNO + 1, ValueKind::Put, b""),
        Err(Error::SeqnoTooLarge(_))
    ));
    assert!(matches!(
        builder.add_property("strata.entries", b"1"),
        Err(Error::ReservedPropertyName(_))
    ));
    assert_eq!(builder.entries(), 0);
}

#[test]
fn properties_describe_the_table_and_carry_engine_entries() {
    let entries = sample_entries(300);
    let mut file = Vec::new();
    let mut builder = TableBuilder::new(&mut file, options(1024, 16, true));
    builder
        .add_property("planner.rows", b"300")
        .expect("allowed name");
    for (key, seqno, kind, value) in &entries {
        builder.add(key, *seqno, *kind, value).expect("in order");
    }
    let info = builder.finish().expect("finish");
    assert_eq!(info.file_size, file.len() as u64);
    let table = open(&file);
    let p = table.properties();
    assert_eq!(p, &info.properties);
    assert_eq!(p.entries, entries.len() as u64);
    assert_eq!(
        p.deletions,
        entries.iter().filter(|e| e.2 == ValueKind::Delete).count() as u64
    );
    assert_eq!(
        p.raw_key_bytes,
        entries.iter().map(|e| e.0.len() as u64).sum::<u64>()
    );
    assert_eq!(
        p.raw_value_bytes,
        entries.iter().map(|e| e.3.len() as u64).sum::<u64>()
    );
    assert_eq!(p.smallest_key, entries[0].0);
    assert_eq!(p.largest_key, entries[entries.len() - 1].0);
    assert_eq!(
        p.smallest_seqno,
        entries.iter().map(|e| e.1).min().expect("entries")
    );
    assert_eq!(
        p.largest_seqno,
        entries.iter().map(|e| e.1).max().expect("entries")
    );
    assert_eq!(
        p.user.get("planner.rows").map(Vec::as_slice),
        Some(&b"300"[..])
    );
}

#[test]
fn values_of_uncompressed_blocks_are_read_without_copying() {
    let entries = sample_entries(50);
    let file = bytes::Bytes::from(build(&entries, options(4096, 16, false)));
    let table = Table::open(file.clone(), 1, None).expect("valid");
    let entry = table
        .get(&entries[10].0, u64::MAX >> 8)
        .expect("ok")
        .expect("present");
    let range = file.as_ptr_range();
    assert!(!entry.value.is_empty());
    assert!(
        range.contains(&entry.value.as_ptr()),
        "the value points into the file's bytes"
    );
}

#[test]
fn compressed_blocks_go_through_the_shared_cache() {
    let entries = sample_entries(400);
    let file = bytes::Bytes::from(build(&entries, options(1024, 16, true)));
    let cache = std::sync::Arc::new(BlockCache::new(1 << 20));
    let table = Table::open(file, 7, Some(cache.clone())).expect("valid");
    for _ in 0..2 {
        for (key, seqno, _, value) in &entries {
            let got = table.get(key, *seqno).expect("ok").expect("present");
            assert_eq!(&got.value[..], &value[..]);
        }
    }
    assert!(
        cache.hits() > cache.misses(),
        "hits {} misses {}",
        cache.hits(),
        cache.misses()
    );
    assert!(cache.usage_bytes() > 0 && cache.usage_bytes() <= cache.capacity_bytes());
}

#[test]
fn a_writer_failure_stops_the_builder() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut builder = TableBuilder::new(Full, options(64, 1, false));
    let mut failed = false;
    for i in 0..100u32 {
        match builder.add(&i.to_be_bytes(), 1, ValueKind::Put, &[0; 40]) {
            Ok(()) => {}
            Err(Error::Io(_)) => failed = true,
            Err(Error::BuilderFailed) => {
                assert!(failed, "BuilderFailed only after the I/O error");
                break;
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    assert!(failed);
    assert!(matches!(builder.finish(), Err(Error::BuilderFailed)));
}
