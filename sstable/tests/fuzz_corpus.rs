//! Replays the checked-in corpora of the `sstable_open` and `block_decode` fuzz targets through
//! the same checks the targets run (`fuzz/checks/`), so stable `cargo test` exercises them.
//!
//! The seeds are made by `cargo test -p strata-sstable --test fuzz_corpus -- --ignored`.

mod common;

#[path = "../../fuzz/checks/block_decode.rs"]
mod block_decode;
#[path = "../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../fuzz/checks/sstable_open.rs"]
mod sstable_open;

use std::path::PathBuf;

use common::{build, options, sample_entries};
use strata_sstable::ValueKind;

fn corpus(target: &str) -> PathBuf {
    corpus::dir(target)
}

fn replay(target: &str, check: fn(&[u8])) {
    corpus::replay(target, 4, check);
}

#[test]
fn the_sstable_open_corpus_passes_the_fuzz_checks() {
    replay("sstable_open", sstable_open::check);
}

#[test]
fn the_block_decode_corpus_passes_the_fuzz_checks() {
    replay("block_decode", block_decode::check);
}

/// Writes the seed corpora: small valid tables and blocks, and damaged variants.
#[test]
#[ignore = "regenerates fuzz/corpus/{sstable_open,block_decode}; run by hand"]
fn write_seed_corpora() {
    let few = sample_entries(12);
    let mut tables = vec![
        ("empty", build(&[], options(4096, 16, false))),
        ("plain", build(&few, options(128, 2, false))),
        ("zstd", build(&few, options(128, 2, true))),
        ("one-block", build(&few, options(1 << 16, 16, false))),
        (
            "shared-values",
            build(
                &shared_heads(&few),
                strata_sstable::TableOptions {
                    share_value_prefixes: true,
                    ..options(256, 4, false)
                },
            ),
        ),
    ];
    let mut flipped = tables[1].1.clone();
    flipped[20] ^= 4;
    tables.push(("flipped", flipped));
    let dir = corpus("sstable_open");
    std::fs::create_dir_all(&dir).expect("dir");
    for (name, bytes) in tables {
        std::fs::write(dir.join(name), bytes).expect("write");
    }

    let entries: Vec<_> = few.iter().take(8).cloned().collect();
    let blocks = vec![
        ("empty", strata_sstable::fuzzing::encode_block(&[], 16)),
        (
            "interval-1",
            strata_sstable::fuzzing::encode_block(&entries, 1),
        ),
        (
            "interval-3",
            strata_sstable::fuzzing::encode_block(&entries, 3),
        ),
        (
            "shared-values",
            strata_sstable::fuzzing::encode_block(&shared_heads(&entries), 3),
        ),
        (
            "tombstone",
            strata_sstable::fuzzing::encode_block(
                &[(b"k".to_vec(), 9, ValueKind::Delete, Vec::new())],
                16,
            ),
        ),
    ];
    let dir = corpus("block_decode");
    std::fs::create_dir_all(&dir).expect("dir");
    for (name, bytes) in blocks {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
}

/// `entries` with every value behind one 24-byte head, as stored rows share their names.
fn shared_heads(
    entries: &[(Vec<u8>, u64, ValueKind, Vec<u8>)],
) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
    entries
        .iter()
        .map(|(key, seqno, kind, value)| {
            let mut shared = b"a names section of a row".to_vec();
            shared.extend_from_slice(value);
            (key.clone(), *seqno, *kind, shared)
        })
        .collect()
}
