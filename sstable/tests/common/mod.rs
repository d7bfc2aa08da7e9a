//! Helpers for the table tests: a sorted model of entries, and building a table from it.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use strata_sstable::{Compression, Table, TableBuilder, TableOptions, ValueKind};

/// One entry of the model: `(user_key, seqno, kind, value)`.
pub type ModelEntry = (Vec<u8>, u64, ValueKind, Vec<u8>);

/// Sorts entries in table order and drops repeated `(user_key, seqno)` pairs.
pub fn normalise(mut entries: Vec<ModelEntry>) -> Vec<ModelEntry> {
    entries.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    entries.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    for entry in &mut entries {
        if entry.2 == ValueKind::Delete {
            entry.3.clear();
        }
    }
    entries
}

pub fn build(entries: &[ModelEntry], options: TableOptions) -> Vec<u8> {
    build_with(entries, options, None)
}

/// [`build`] in format `version` (one this build still reads).
pub fn build_version(entries: &[ModelEntry], options: TableOptions, version: u32) -> Vec<u8> {
    build_with(entries, options, Some(version))
}

fn build_with(entries: &[ModelEntry], options: TableOptions, version: Option<u32>) -> Vec<u8> {
    let mut file = Vec::new();
    let mut builder = TableBuilder::new(&mut file, options);
    if let Some(version) = version {
        builder = builder
            .format_version(version)
            .expect("a version this build writes");
    }
    for (key, seqno, kind, value) in entries {
        builder
            .add(key, *seqno, *kind, value)
            .expect("entries are in order");
    }
    builder.finish().expect("writing to a Vec");
    file
}

pub fn open(file: &[u8]) -> Table {
    Table::open(bytes::Bytes::copy_from_slice(file), 1, None).expect("a valid table")
}

/// The model's answer to `get(user_key, snapshot)`.
pub fn model_get<'m>(
    entries: &'m [ModelEntry],
    user_key: &[u8],
    snapshot: u64,
) -> Option<&'m ModelEntry> {
    entries
        .iter()
        .find(|(key, seqno, _, _)| key.as_slice() == user_key && *seqno <= snapshot)
}

/// Options with a full key every `restart_interval` entries and at no byte bound (the tests
/// that place restart points count entries).
pub fn options(block_size_bytes: usize, restart_interval: usize, zstd: bool) -> TableOptions {
    TableOptions {
        block_size_bytes,
        restart_interval,
        restart_bytes: usize::MAX,
        compression: if zstd {
            Compression::Zstd { level: 1 }
        } else {
            Compression::None
        },
        bloom_bits_per_key: 10,
        share_value_prefixes: false,
    }
}

/// A deterministic table of `keys` user keys, each with one to three versions, some deleted,
/// with compressible values.
pub fn sample_entries(keys: u32) -> Vec<ModelEntry> {
    let mut entries = Vec::new();
    for i in 0..keys {
        let key = format!("user{:06}", i * 7).into_bytes();
        for version in 0..(1 + i % 3) {
            let seqno = u64::from(1000 - version * 10 + i % 5);
            let kind = if (i + version) % 11 == 0 {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let value = format!("value-{i}-{version}-")
                .repeat(1 + (i % 4) as usize)
                .into_bytes();
            entries.push((key.clone(), seqno, kind, value));
        }
    }
    normalise(entries)
}
