//! The bloom filter's measured false-positive rate at 10 bits per key lies in [0.5 %, 2 %].

mod common;

use common::{build, open, options};
use strata_sstable::ValueKind;

#[test]
fn false_positive_rate_at_ten_bits_per_key_is_about_one_percent() {
    const KEYS: u32 = 100_000;
    let entries: Vec<common::ModelEntry> = (0..KEYS)
        .map(|i| {
            (
                format!("present-{i:08}").into_bytes(),
                1,
                ValueKind::Put,
                Vec::new(),
            )
        })
        .collect();
    let table = open(&build(&entries, options(4096, 16, false)));
    assert!(
        entries.iter().all(|e| table.may_contain(&e.0)),
        "no false negatives"
    );
    let false_positives = (0..KEYS)
        .filter(|i| table.may_contain(format!("absent-{i:08}").as_bytes()))
        .count();
    let rate = false_positives as f64 / f64::from(KEYS);
    println!("false-positive rate at 10 bits/key: {rate:.4} ({false_positives} of {KEYS})");
    assert!(
        (0.005..=0.02).contains(&rate),
        "false-positive rate {rate:.4}"
    );
}
