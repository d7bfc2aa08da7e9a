//! Replays the checked-in corpus of the `wal_reader` fuzz target through the same checks the
//! target runs (`fuzz/checks/wal_reader.rs`), so stable `cargo test` exercises them.
//!
//! The seeds are made by `cargo test -p strata-wal --test fuzz_corpus -- --ignored`.

#[path = "../../fuzz/checks/wal_reader.rs"]
mod check;
#[path = "../../fuzz/checks/corpus.rs"]
mod corpus;

use std::path::PathBuf;

use strata_wal::{BLOCK_SIZE, LogWriter};

fn corpus_dir() -> PathBuf {
    corpus::dir("wal_reader")
}

#[test]
fn the_wal_reader_corpus_passes_the_fuzz_checks() {
    corpus::replay("wal_reader", 8, check::check);
}

/// Writes the seed corpus: intact logs of several shapes and damaged variants of them.
#[test]
#[ignore = "regenerates fuzz/corpus/wal_reader; run by hand"]
fn write_seed_corpus() {
    let log = |records: &[Vec<u8>], sync_every: usize| {
        let mut writer = LogWriter::new(Vec::new(), 42);
        for (i, record) in records.iter().enumerate() {
            writer.add_record(record).expect("vec");
            if sync_every > 0 && i % sync_every == sync_every - 1 {
                writer.sync(|_| Ok(())).expect("vec");
            }
        }
        writer.into_inner()
    };
    let small: Vec<Vec<u8>> = (0..20u8)
        .map(|i| vec![i; 1 + usize::from(i) * 13])
        .collect();
    let spanning = vec![vec![1u8; 10], vec![2u8; BLOCK_SIZE + 500], vec![3u8; 20]];
    let synced = log(&small, 3);
    let mut flipped = synced.clone();
    flipped[40] ^= 0x10;
    let mut zero_tail = log(&small, 0);
    zero_tail.resize(zero_tail.len() + 2048, 0);
    let mut recycled = log(&spanning, 1);
    let mut fresh = LogWriter::new(Vec::new(), 43);
    fresh.add_record(b"new log").expect("vec");
    let fresh = fresh.into_inner();
    recycled[..fresh.len()].copy_from_slice(&fresh);

    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("one-record", log(&[b"hello".to_vec()], 0)),
        ("small-records", log(&small, 0)),
        ("spanning", log(&spanning, 0)),
        ("synced", synced.clone()),
        ("torn", synced[..synced.len() - 7].to_vec()),
        ("flipped", flipped),
        ("zero-tail", zero_tail),
        ("recycled", recycled),
    ];
    let dir = corpus_dir();
    std::fs::create_dir_all(&dir).expect("corpus dir");
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).expect("write seed");
    }
}
