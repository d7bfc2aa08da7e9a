//! Flipping any byte of a table yields an error or the correct data, never wrong data and
//! never a panic; every truncation of a table fails to open.

mod common;

use common::{ModelEntry, build, model_get, options, sample_entries};
use strata_sstable::{Error, Table};

/// Reads everything through `table` and checks each answer is correct or an error. Returns
/// whether any error was seen.
fn check_reads(table: &Table, entries: &[ModelEntry]) -> bool {
    let mut saw_error = false;
    for (key, seqno, _, _) in entries {
        match table.get(key, *seqno) {
            Ok(got) => {
                let expected = model_get(entries, key, *seqno).expect("present");
                let got = got.expect("a present key must not read as absent");
                assert_eq!(
                    (got.seqno, got.kind, &got.value[..]),
                    (expected.1, expected.2, &expected.3[..])
                );
            }
            Err(Error::Corruption { .. }) => saw_error = true,
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    let mut iter = table.iter();
    iter.seek_to_first();
    let mut position = 0;
    while iter.valid() {
        let expected = &entries[position];
        assert_eq!(
            (iter.user_key(), iter.seqno(), iter.kind(), iter.value()),
            (&expected.0[..], expected.1, expected.2, &expected.3[..])
        );
        position += 1;
        iter.next();
    }
    match iter.status() {
        Some(_) => saw_error = true,
        None => assert_eq!(
            position,
            entries.len(),
            "a scan ended early without an error"
        ),
    }
    saw_error
}

fn flip_every_byte(zstd: bool) {
    let entries = sample_entries(120);
    let file = build(&entries, options(512, 4, zstd));
    let mut damaged = file.clone();
    for at in 0..file.len() {
        damaged[at] ^= 1 << (at % 8);
        match Table::open(bytes::Bytes::copy_from_slice(&damaged), 1, None) {
            Err(Error::Corruption { .. }) => {}
            Err(other) => panic!("byte {at}: unexpected error {other}"),
            Ok(table) => {
                assert!(
                    check_reads(&table, &entries),
                    "byte {at}: a flip went unnoticed"
                );
            }
        }
        damaged[at] = file[at];
    }
}

#[test]
fn a_flipped_byte_anywhere_is_an_error_never_wrong_data_uncompressed() {
    flip_every_byte(false);
}

#[test]
fn a_flipped_byte_anywhere_is_an_error_never_wrong_data_zstd() {
    flip_every_byte(true);
}

#[test]
fn every_truncation_fails_to_open() {
    let file = build(&sample_entries(60), options(256, 4, true));
    for len in 0..file.len() {
        let result = Table::open(bytes::Bytes::copy_from_slice(&file[..len]), 1, None);
        assert!(
            matches!(result, Err(Error::Corruption { .. })),
            "length {len} opened"
        );
    }
}

#[test]
fn the_sample_table_spans_many_blocks_of_both_kinds() {
    // The flip tests only mean something if the table has many data blocks, and, with zstd,
    // both compressed and stored blocks.
    let entries = sample_entries(120);
    let plain = build(&entries, options(512, 4, false));
    let squeezed = build(&entries, options(512, 4, true));
    let table = common::open(&plain);
    assert!(table.properties().data_blocks >= 10);
    assert!(
        squeezed.len() < plain.len() * 3 / 4,
        "zstd should shrink these values"
    );
}

/// The index and the filter are read on the first lookup or scan, not at open: a table whose
/// index is damaged opens (its footer and properties are sound), and every read then reports
/// the damage; the undamaged file reads correctly.
#[test]
fn a_damaged_index_is_found_by_the_first_read_not_by_open() {
    let entries = sample_entries(120);
    let file = build(&entries, options(512, 4, false));
    let footer_at = file.len() - strata_sstable::FOOTER_SIZE;
    let mut word = [0u8; 8];
    word.copy_from_slice(&file[footer_at..footer_at + 8]);
    let index_at = u64::from_le_bytes(word) as usize;
    let mut damaged = file.clone();
    damaged[index_at + 1] ^= 0x40;

    let table = Table::open(bytes::Bytes::copy_from_slice(&damaged), 1, None)
        .expect("the footer and the properties are sound");
    let (key, seqno, _, _) = &entries[0];
    assert!(matches!(
        table.get(key, *seqno),
        Err(Error::Corruption { .. })
    ));
    let refs: Vec<&[u8]> = entries.iter().map(|e| &e.0[..]).collect();
    assert!(matches!(
        table.multi_get(&refs, *seqno),
        Err(Error::Corruption { .. })
    ));
    let mut iter = table.iter();
    iter.seek_to_first();
    assert!(!iter.valid());
    assert!(matches!(iter.status(), Some(Error::Corruption { .. })));
    assert!(check_reads(&table, &entries), "every read is an error");

    let sound = Table::open(bytes::Bytes::copy_from_slice(&file), 1, None).expect("open");
    assert!(
        !check_reads(&sound, &entries),
        "the sound file reads without an error"
    );
}
