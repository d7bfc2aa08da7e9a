//! Any sorted entry set round-trips through build → open → scans, point gets and seeks, for
//! every compression choice, block size and format version (values that share long prefixes
//! among them, as stored rows do).

mod common;

use common::{ModelEntry, build, build_version, model_get, normalise, open, options};
use proptest::prelude::*;
use strata_sstable::{FORMAT_VERSION, Table, TableBuilder, TableOptions, ValueKind};

/// A head that values share, as stored rows share their names section: none, or one of three
/// of 10 to 40 bytes (one a prefix of another).
fn head(choice: u8) -> Vec<u8> {
    match choice {
        0 => Vec::new(),
        1 => b"version 2; fields a, b".to_vec(),
        2 => b"version 2; fields a, b, c, d, e and f".to_vec(),
        _ => b"another head".to_vec(),
    }
}

fn entry() -> impl Strategy<Value = ModelEntry> {
    (
        prop::collection::vec(0u8..4, 0..6), // few distinct bytes: shared prefixes, repeats
        0u64..50,
        prop_oneof![4 => Just(ValueKind::Put), 1 => Just(ValueKind::Delete)],
        0u8..4,
        prop::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(key, seqno, kind, choice, tail)| {
            let mut value = head(choice);
            value.extend(tail);
            (key, seqno, kind, value)
        })
}

/// Every entry, read forwards or backwards; returned in table order either way.
fn scan(table: &Table, forward: bool) -> Vec<ModelEntry> {
    let mut iter = table.iter();
    if forward {
        iter.seek_to_first()
    } else {
        iter.seek_to_last()
    }
    let mut out = Vec::new();
    while iter.valid() {
        out.push((
            iter.user_key().to_vec(),
            iter.seqno(),
            iter.kind(),
            iter.value().to_vec(),
        ));
        if forward { iter.next() } else { iter.prev() }
    }
    assert!(iter.status().is_none());
    if !forward {
        out.reverse();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn any_sorted_entries_round_trip(
        raw in prop::collection::vec(entry(), 0..300),
        block_size in prop_oneof![Just(64usize), Just(512), Just(4096)],
        restart_interval in prop_oneof![Just(1usize), Just(3), Just(16)],
        restart_bytes in prop_oneof![Just(usize::MAX), Just(1usize), Just(40), Just(512)],
        zstd: bool,
        version in 1..=FORMAT_VERSION,
        probes in prop::collection::vec((prop::collection::vec(0u8..5, 0..7), 0u64..60), 20),
    ) {
        let entries = normalise(raw);
        let table = open(&build_version(
            &entries,
            TableOptions { restart_bytes, ..options(block_size, restart_interval, zstd) },
            version,
        ));
        prop_assert_eq!(table.properties().entries, entries.len() as u64);
        prop_assert_eq!(scan(&table, true), entries.clone());
        prop_assert_eq!(scan(&table, false), entries.clone());

        // multi_get: each key's answer is get's, ascending keys (searched by galloping from
        // the last key's block) or not.
        for snapshot in [0, 30, 60] {
            let mut keys: Vec<Vec<u8>> = probes.iter().map(|p| p.0.clone())
                .chain(entries.iter().map(|e| e.0.clone())).collect();
            for sorted in [false, true] {
                if sorted {
                    keys.sort();
                }
                let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                // Without the filter too (a caller expecting hits): the same answers.
                for filter in [true, false] {
                    let many = table.multi_get_with(&refs, snapshot, filter).expect("no corruption");
                    prop_assert_eq!(many.len(), keys.len());
                    for (key, got) in keys.iter().zip(many) {
                        prop_assert_eq!(got, table.get(key, snapshot).expect("no corruption"));
                    }
                }
            }
        }

        let known = entries.iter().map(|e| (e.0.clone(), e.1));
        for (key, snapshot) in probes.iter().cloned().chain(known) {
            let (key, snapshot) = (&key, &snapshot);
            let got = table.get(key, *snapshot).expect("no corruption");
            let expected = model_get(&entries, key, *snapshot);
            prop_assert_eq!(
                got.map(|e| (e.seqno, e.kind, e.value.to_vec())),
                expected.map(|e| (e.1, e.2, e.3.clone()))
            );

            // seek: the first entry whose user key is at or after `key`.
            let mut iter = table.iter();
            iter.seek(key);
            let first = entries.iter().find(|e| e.0.as_slice() >= key.as_slice());
            prop_assert_eq!(iter.valid().then(|| (iter.user_key().to_vec(), iter.seqno())),
                first.map(|e| (e.0.clone(), e.1)));

            // seek_at: the first entry at or after (key, snapshot) in table order.
            iter.seek_at(key, *snapshot);
            let first = entries.iter().find(|e| {
                e.0.as_slice() > key.as_slice() || (e.0.as_slice() == key.as_slice() && e.1 <= *snapshot)
            });
            prop_assert_eq!(iter.valid().then(|| (iter.user_key().to_vec(), iter.seqno())),
                first.map(|e| (e.0.clone(), e.1)));
        }
    }

    #[test]
    fn bounded_scans_see_exactly_the_range(
        raw in prop::collection::vec(entry(), 0..200),
        lower in prop::option::of(prop::collection::vec(0u8..4, 0..4)),
        upper in prop::option::of(prop::collection::vec(0u8..4, 0..4)),
        zstd: bool,
        version in 1..=FORMAT_VERSION,
    ) {
        let entries = normalise(raw);
        let table = open(&build_version(&entries, options(128, 2, zstd), version));
        let in_range = |key: &[u8]| {
            lower.as_deref().is_none_or(|l| key >= l) && upper.as_deref().is_none_or(|u| key < u)
        };
        let expected: Vec<&ModelEntry> = entries.iter().filter(|e| in_range(&e.0)).collect();

        let mut iter = table.iter().with_bounds(lower.as_deref(), upper.as_deref());
        iter.seek_to_first();
        let mut forward = Vec::new();
        while iter.valid() {
            forward.push((iter.user_key().to_vec(), iter.seqno()));
            iter.next();
        }
        prop_assert_eq!(&forward, &expected.iter().map(|e| (e.0.clone(), e.1)).collect::<Vec<_>>());

        iter.seek_to_last();
        let mut backward = Vec::new();
        while iter.valid() {
            backward.push((iter.user_key().to_vec(), iter.seqno()));
            iter.prev();
        }
        backward.reverse();
        prop_assert_eq!(backward, forward);
    }
}

#[test]
fn an_empty_table_opens_and_is_empty() {
    let table = open(&build(&[], options(4096, 16, false)));
    assert_eq!(table.properties().entries, 0);
    assert!(
        table
            .get(b"anything", u64::MAX >> 8)
            .expect("fine")
            .is_none()
    );
    let mut iter = table.iter();
    iter.seek_to_first();
    assert!(!iter.valid());
    iter.seek_to_last();
    assert!(!iter.valid());
}

/// Rows of one table share their names section: a table of format version 2 stores it once
/// per restart interval, not once per row, and reads back the same entries as version 1.
#[test]
fn values_sharing_a_head_are_stored_once_per_restart_interval() {
    let names = b"\x02\x0e\xa0\x01customer_id first_name last_name home_town account_status";
    let entries: Vec<ModelEntry> = (0..2_000u32)
        .map(|i| {
            let mut value = names.to_vec();
            value.extend(format!("row {i} values").as_bytes());
            (format!("k{i:06}").into_bytes(), 7, ValueKind::Put, value)
        })
        .collect();
    let old = build(&entries, TableOptions::default());
    let sharing = TableOptions {
        share_value_prefixes: true,
        ..TableOptions::default()
    };
    let new = build_version(&entries, sharing.clone(), FORMAT_VERSION);
    assert_eq!(
        new,
        build(&entries, sharing.clone()),
        "the option writes version 2"
    );
    // A restart point stores its whole value: the byte bound on restart intervals, which
    // would store the head every few rows, is not applied.
    let unbounded = TableOptions {
        restart_bytes: usize::MAX,
        ..sharing
    };
    assert_eq!(
        new,
        build(&entries, unbounded),
        "no byte bound on shared values"
    );
    // Version 1 stores the head in every row; version 2 once every 16 entries and then a
    // two-byte length of what is shared.
    let head_bytes = (names.len() * entries.len()) as f64;
    let saved = old.len() as f64 - new.len() as f64;
    assert!(
        saved > 0.8 * head_bytes,
        "version 2 saved {saved} bytes of {head_bytes} in heads ({} against {})",
        new.len(),
        old.len()
    );
    for file in [&old, &new] {
        let table = open(file);
        assert_eq!(scan(&table, true), entries);
        assert_eq!(scan(&table, false), entries);
        for (key, seqno, _, value) in entries.iter().step_by(37) {
            let got = table
                .get(key, *seqno)
                .expect("no corruption")
                .expect("found");
            assert_eq!(&got.value[..], &value[..]);
        }
    }
}

/// A builder writes no format this build cannot read, and none after its first entry.
#[test]
fn a_builder_refuses_a_format_version_it_cannot_write() {
    let new = || TableBuilder::new(Vec::new(), TableOptions::default());
    assert!(new().format_version(0).is_err());
    assert!(new().format_version(FORMAT_VERSION + 1).is_err());
    let mut started = new();
    started.add(b"k", 1, ValueKind::Put, b"v").expect("add");
    assert!(started.format_version(1).is_err());
}
