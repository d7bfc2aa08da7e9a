//! Tests of the statistics and their builders.

use super::builder::decode_group;
use super::*;

fn build(rows: impl Iterator<Item = (Value, Value)>) -> TableStats {
    let fields = ["status".to_string(), "zip".to_string()];
    let mut b = TableStatsBuilder::new(&fields, &[fields.to_vec()]);
    for (status, zip) in rows {
        b.add_row(
            |f| match f {
                "status" => Some(&status),
                "zip" => Some(&zip),
                _ => None,
            },
            50,
        );
    }
    b.finish()
}

#[test]
fn skew_shows_up_as_most_common_values_and_the_rest_in_the_histogram() {
    let stats = build((0..100_000i64).map(|i| {
        let status = match i % 1000 {
            0 => Value::from("pending"),
            1..=99 => Value::from("failed"),
            _ => Value::from("done"),
        };
        (status, Value::Int(i % 500))
    }));
    let status = &stats.columns["status"];
    assert!((status.frequency_of(&Value::from("done")).unwrap_or(0.0) - 0.9).abs() < 0.002);
    assert!((status.frequency_of(&Value::from("failed")).unwrap_or(0.0) - 0.099).abs() < 0.002);
    assert!((status.distinct - 3.0).abs() < 0.5);
    let zip = &stats.columns["zip"];
    assert!(
        zip.most_common.is_empty(),
        "uniform: nothing is most common"
    );
    assert!((zip.distinct - 500.0).abs() < 25.0);
    assert_eq!(zip.min, Some(Value::Int(0)));
    assert_eq!(zip.max, Some(Value::Int(499)));
    let prefix = stats.prefix_distinct(&["status".into(), "zip".into()]);
    // pending: zip 0; failed: zips 1-99; done: all 500 zips.
    assert!(
        prefix.is_some_and(|d| (d - 600.0).abs() < 30.0),
        "{prefix:?}"
    );
    assert_eq!(stats.row_count, 100_000);
    assert!((stats.avg_row_bytes - 50.0).abs() < 1e-9);
}

/// `(airport, airline)`: each airport served by two airlines of its own (a correlated
/// pair), 90 % by the first.
fn flights(rows: i64) -> TableStats {
    build((0..rows).map(|i| {
        let airport = i % 100;
        let airline = airport * 10 + i64::from((i / 100) % 10 == 0);
        (Value::Int(airport), Value::Int(airline))
    }))
}

#[test]
fn a_group_lists_its_combinations_whole_when_the_counters_hold_them() {
    let stats = flights(100_000);
    let group = &stats.prefixes[0];
    assert!(group.complete, "200 combinations, 1,000 counters");
    assert_eq!(group.most_common.len(), 200);
    let at = |a: i64, b: i64| group.frequency_of(&[Value::Int(a), Value::Int(b)]);
    assert_eq!(at(7, 70), Some(0.009));
    assert_eq!(at(7, 71), Some(0.001));
    assert_eq!(at(7, 72), None, "a pair that never occurs is not listed");
    assert!(
        group.most_common.windows(2).all(|w| w[0].0 < w[1].0),
        "sorted"
    );
    let bytes = stats.encode().expect("encode");
    assert_eq!(TableStats::decode(&bytes), Ok(stats));
}

#[test]
fn a_group_with_more_combinations_than_counters_lists_the_frequent_ones() {
    // 5,000 pairs: the counters overflow; only the heavy pairs qualify.
    let stats = build((0..100_000i64).map(|i| {
        let pair = if i % 2 == 0 { 0 } else { i % 5_000 };
        (Value::Int(pair % 50), Value::Int(pair))
    }));
    let group = &stats.prefixes[0];
    assert!(!group.complete);
    let heavy = group.frequency_of(&[Value::Int(0), Value::Int(0)]);
    assert!(heavy.is_some_and(|f| (f - 0.5).abs() < 0.01), "{heavy:?}");
    assert!(group.most_common.len() <= DEFAULT_MCV_LIMIT);
}

#[test]
fn merging_with_a_builder_that_kept_no_group_counts_drops_the_list() {
    let fields = ["status".to_string(), "zip".to_string()];
    let mut a = TableStatsBuilder::new(&fields, &[fields.to_vec()]);
    let mut b = a.clone();
    let (x, y) = (Value::Int(1), Value::Int(2));
    for builder in [&mut a, &mut b] {
        builder.add_row(|f| Some(if f == "status" { &x } else { &y }), 10);
    }
    let mut both = a.clone();
    both.merge(&b);
    assert_eq!(both.finish().prefixes[0].most_common.len(), 1);
    // `b` as a builder stored before group counts existed.
    b.prefix_common.clear();
    assert!(b.is_valid());
    a.merge(&b);
    let merged = a.finish();
    assert!(merged.prefixes[0].most_common.is_empty() && !merged.prefixes[0].complete);
    assert_eq!(merged.row_count, 2);
}

#[test]
fn group_encodings_decode_to_their_values() {
    let values = vec![
        Value::Null,
        Value::Bool(true),
        Value::Int(-7),
        Value::Float(2.5),
        Value::from("Fürth"),
        Value::Bytes(vec![0, 255]),
    ];
    let mut bytes = Vec::new();
    for v in &values {
        v.hash_into(&mut bytes);
    }
    assert_eq!(decode_group(&bytes), Some(values));
    assert_eq!(decode_group(&bytes[..bytes.len() - 1]), None, "truncated");
    assert_eq!(decode_group(&[9]), None, "unknown tag");
}

#[test]
fn unsorted_or_out_of_range_group_lists_are_refused() {
    let mut stats = flights(1_000);
    stats.prefixes[0].most_common.swap(0, 1);
    assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
    let mut stats = flights(1_000);
    stats.prefixes[0].most_common[0].1 = 1.5;
    assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
    let mut stats = flights(1_000);
    stats.prefixes[0].most_common[0].0.pop();
    assert_eq!(stats.validate(), Err(StatsFault::PrefixCommon));
}

#[test]
fn a_long_tail_lists_its_next_values_from_the_sample() {
    // Zipfian, s = 0.7, over 5,000 values: rank r holds r^-0.7 / H of the rows.
    let n = 5_000usize;
    let weights: Vec<f64> = (1..=n).map(|r| (r as f64).powf(-0.7)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(n);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let stats = build((0..100_000i64).map(|_| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
        let rank = cdf.partition_point(|c| *c < u) as i64 + 1;
        (Value::Int(rank), Value::Int(0))
    }));
    let c = &stats.columns["status"];
    assert!(c.frequent.len() > 100, "{} listed", c.frequent.len());
    assert!(c.frequent.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
    for rank in [120i64, 150, 200] {
        if c.frequency_of(&Value::Int(rank)).is_some() {
            continue;
        }
        let truth = weights[rank as usize - 1] / total;
        let listed = c.frequent_frequency_of(&Value::Int(rank));
        assert!(
            listed.is_some_and(|f| (f / truth - 1.0).abs() < 0.5),
            "rank {rank}: {listed:?} against {truth}"
        );
    }
    // A uniform column has no value above 1.25 × the average.
    assert!(stats.columns["zip"].frequent.is_empty());
    let bytes = stats.encode().expect("encode");
    assert_eq!(TableStats::decode(&bytes), Ok(stats.clone()));
    let mut unsorted = stats;
    let frequent = &mut unsorted.columns.get_mut("status").expect("column").frequent;
    frequent.swap(0, 1);
    assert!(unsorted.validate().is_err());
}

#[test]
fn statistics_round_trip_and_refuse_other_versions() {
    let stats = build((0..1_000i64).map(|i| (Value::Int(i % 7), Value::Int(i))));
    let bytes = stats.encode().expect("encode");
    assert_eq!(TableStats::decode(&bytes), Ok(stats));
    let newer =
        String::from_utf8(bytes)
            .expect("json")
            .replacen("\"version\":1", "\"version\":2", 1);
    assert_eq!(
        TableStats::decode(newer.as_bytes()),
        Err(StatsError::UnknownVersion(2))
    );
    assert!(matches!(
        TableStats::decode(b"{"),
        Err(StatsError::Malformed(_))
    ));
}

#[test]
fn merged_builders_match_one_builder_over_all_rows() {
    let fields = ["k".to_string()];
    let mut whole = TableStatsBuilder::new(&fields, &[]);
    let mut a = TableStatsBuilder::new(&fields, &[]);
    let mut b = TableStatsBuilder::new(&fields, &[]);
    for i in 0..20_000i64 {
        let v = Value::Int(i % 4_000);
        whole.add_row(|_| Some(&v), 10);
        let half = if i % 2 == 0 { &mut a } else { &mut b };
        half.add_row(|_| Some(&v), 10);
    }
    a.merge(&b);
    let (merged, whole) = (a.finish(), whole.finish());
    assert_eq!(merged.row_count, whole.row_count);
    assert_eq!(merged.columns["k"].distinct, whole.columns["k"].distinct);
    assert_eq!(merged.columns["k"].min, whole.columns["k"].min);
}

#[test]
fn a_field_first_seen_late_counts_as_missing_before_and_merges_across_builders() {
    let mut a = TableStatsBuilder::with_limits(&[], &[], 64, 256);
    for i in 0..300i64 {
        let v = Value::Int(i);
        if i >= 100 {
            a.track("late", 8);
        }
        a.add_row(|f| (f == "late").then_some(&v), 10);
    }
    let stats = a.finish();
    let late = &stats.columns["late"];
    assert!((late.null_fraction - 1.0 / 3.0).abs() < 1e-9, "{late:?}");

    // A builder that never saw the field: its rows are missing too.
    let mut b = TableStatsBuilder::with_limits(&["other".into()], &[], 64, 256);
    for i in 0..100i64 {
        let v = Value::Int(i);
        b.add_row(|_| Some(&v), 10);
    }
    a.merge(&b);
    let merged = a.finish();
    assert_eq!(merged.row_count, 400);
    assert!((merged.columns["late"].null_fraction - 0.5).abs() < 1e-9);
    assert!((merged.columns["other"].null_fraction - 0.75).abs() < 1e-9);
}

#[test]
fn a_builder_round_trips_and_an_inconsistent_one_is_refused() {
    let mut b = TableStatsBuilder::with_limits(&["k".into()], &[], 16, 32);
    for i in 0..1_000i64 {
        let v = Value::from(format!("v{}", i % 40));
        b.add_row(|_| Some(&v), 12);
    }
    let bytes = b.encode().expect("encode");
    let decoded = TableStatsBuilder::decode(&bytes).expect("round trip");
    assert_eq!(decoded.finish(), b.finish());

    let text = String::from_utf8(bytes).expect("json");
    let more_nulls = text.replacen("\"nulls\":0", "\"nulls\":5000", 1);
    assert_ne!(more_nulls, text);
    assert!(matches!(
        TableStatsBuilder::decode(more_nulls.as_bytes()),
        Err(StatsError::Malformed(_))
    ));
    let newer = text.replacen("\"version\":1", "\"version\":9", 1);
    assert_eq!(
        TableStatsBuilder::decode(newer.as_bytes()).err(),
        Some(StatsError::UnknownVersion(9))
    );
}

/// Every kind of float a column can hold, NaN of both signs, ±inf and -0.0 among them.
fn awkward_float(i: i64) -> Value {
    match i % 9 {
        0 => Value::Float(f64::NAN),
        1 => Value::Float(-f64::NAN),
        2 => Value::Float(f64::INFINITY),
        3 => Value::Float(f64::NEG_INFINITY),
        4 => Value::Float(-0.0),
        5 => Value::Null,
        _ => Value::Float(i as f64 / 7.0),
    }
}

#[test]
fn statistics_and_builders_of_non_finite_floats_round_trip_exactly() {
    // Before, serde_json wrote NaN and ±inf as null and the catalog refused to read them
    // back, which made the whole database refuse to open.
    let stats = build((0..2_000i64).map(|i| (awkward_float(i), awkward_float(i / 3))));
    let x = &stats.columns["status"];
    assert!(
        x.min
            .as_ref()
            .is_some_and(|m| matches!(m, Value::Float(f) if f.is_nan()))
    );
    let bytes = stats.encode().expect("encode");
    let back = TableStats::decode(&bytes).expect("decode");
    assert_eq!(back, stats);
    // PartialEq on Value is total order, so NaN == NaN only with the same sign; check bits.
    let bits = |s: &TableStats| -> Vec<u64> {
        s.columns["status"]
            .most_common
            .iter()
            .filter_map(|(v, _)| match v {
                Value::Float(f) => Some(f.to_bits()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(bits(&back), bits(&stats));

    let mut b = TableStatsBuilder::with_limits(&["a".into()], &[], 16, 64);
    for i in 0..500i64 {
        let v = awkward_float(i);
        b.add_row(|_| Some(&v), 9);
    }
    let decoded = TableStatsBuilder::decode(&b.encode().expect("encode")).expect("decode");
    assert_eq!(decoded.finish(), b.finish());
}

#[test]
fn statistics_an_earlier_build_wrote_with_a_lost_float_are_unknown_not_malformed() {
    // The exact shape the old encoder produced for a column whose minimum was -inf.
    let stats = build((0..100i64).map(|i| (awkward_float(i), Value::Int(i))));
    let text = String::from_utf8(stats.encode().expect("encode")).expect("json");
    let old = text.replace(r#"{"Float":"0xfff0000000000000"}"#, r#"{"Float":null}"#);
    assert_ne!(old, text);
    assert_eq!(
        TableStats::decode(old.as_bytes()),
        Err(StatsError::LostFloat)
    );
    // A null float anywhere else in a value is still malformed, not lost.
    let broken = text.replacen(r#""row_count":100"#, r#""row_count":null"#, 1);
    assert!(matches!(
        TableStats::decode(broken.as_bytes()),
        Err(StatsError::Malformed(_))
    ));
}

#[test]
fn listed_frequencies_sum_and_find_the_least_over_every_lane() {
    // Lengths around the four lanes, the least value at each place in turn.
    for common_len in 0..10usize {
        for frequent_len in [0usize, 1, 3, 4, 7, 13] {
            for low in 0..common_len.max(frequent_len).max(1) {
                let list = |len: usize, base: f64| -> Vec<(Value, f64)> {
                    (0..len)
                        .map(|i| {
                            let f = if i == low {
                                0.0001
                            } else {
                                base + i as f64 * 0.001
                            };
                            (Value::Int(i as i64), f)
                        })
                        .collect()
                };
                let c = ColumnStats {
                    most_common: list(common_len, 0.05),
                    frequent: list(frequent_len, 0.002),
                    ..ColumnStats::default()
                };
                let sum = |l: &[(Value, f64)]| l.iter().map(|(_, f)| f).sum::<f64>();
                let least = c
                    .most_common
                    .iter()
                    .chain(&c.frequent)
                    .map(|(_, f)| *f)
                    .reduce(f64::min);
                let (common, frequent, got) = c.listed_frequencies();
                assert!((common - sum(&c.most_common)).abs() < 1e-12);
                assert!((frequent - sum(&c.frequent)).abs() < 1e-12);
                assert_eq!(got, least, "{common_len} {frequent_len} {low}");
                assert!((c.most_common_fraction() - common).abs() < 1e-15);
            }
        }
    }
}

#[test]
fn a_long_most_common_list_is_searched_as_a_walk_finds_its_values() {
    // Texts, integers, a float equal to an integer, and a value listed twice (the first
    // listed answers, as a walk finds it), in frequency order, not value order.
    let mut most_common: Vec<(Value, f64)> = (0..40)
        .map(|i| {
            (
                Value::from(format!("v{:03}", (i * 17) % 40)),
                0.02 - i as f64 * 1e-4,
            )
        })
        .collect();
    most_common.push((Value::Int(3), 0.0015));
    most_common.push((Value::Float(3.0), 0.0014));
    most_common.push((Value::from("v005"), 0.0013));
    let c = ColumnStats {
        most_common: most_common.clone(),
        ..ColumnStats::default()
    };
    let walk = |v: &Value| most_common.iter().find(|(m, _)| m == v).map(|(_, f)| *f);
    let mut asked: Vec<Value> = (0..45).map(|i| Value::from(format!("v{i:03}"))).collect();
    asked.extend([
        Value::Int(3),
        Value::Float(3.0),
        Value::Int(4),
        Value::Null,
        Value::from(""),
        Value::Bytes(b"v005".to_vec()),
    ]);
    for v in &asked {
        assert_eq!(c.frequency_of(v), walk(v), "{v:?}");
    }
    assert_eq!(
        c.frequency_of(&Value::from("v005")),
        walk(&Value::from("v005"))
    );
    assert!(c.frequency_of(&Value::from("v005")).unwrap() > 0.0013);
}

#[test]
fn a_list_changed_after_an_estimate_is_read_afresh_and_a_clone_keeps_its_figures() {
    let list =
        |n: usize| -> Vec<(Value, f64)> { (0..n).map(|i| (Value::Int(i as i64), 0.01)).collect() };
    let mut c = ColumnStats {
        most_common: list(20),
        frequent: list(4),
        ..ColumnStats::default()
    };
    assert!((c.listed_frequencies().0 - 0.2).abs() < 1e-12);
    assert_eq!(c.frequency_of(&Value::Int(25)), None);
    // A copy keeps the figures, for its own lists: the same answers.
    let copy = c.clone();
    assert_eq!(copy, c);
    assert_eq!(copy.listed_frequencies(), c.listed_frequencies());
    for i in 0..22 {
        let v = Value::Int(i);
        assert_eq!(copy.frequency_of(&v), c.frequency_of(&v), "{v:?}");
    }
    // Grown where it lies, and replaced: both seen.
    c.most_common.push((Value::Int(25), 0.005));
    let (common, frequent, least) = c.listed_frequencies();
    assert!((common - 0.205).abs() < 1e-12, "{common}");
    assert!((frequent - 0.04).abs() < 1e-12);
    assert_eq!(least, Some(0.005));
    assert_eq!(c.frequency_of(&Value::Int(25)), Some(0.005));
    c.frequent = list(1);
    assert!((c.listed_frequencies().1 - 0.01).abs() < 1e-12);
    // Changed in place at its length (a frequency, then the order), the figures set back
    // to their default as the change asks: read afresh.
    let mut d = copy.clone();
    d.most_common[0].1 = 0.5;
    d.derived = Derived::default();
    assert!((d.listed_frequencies().0 - 0.69).abs() < 1e-12);
    d.most_common.reverse();
    d.derived = Derived::default();
    for i in 0..22 {
        let v = Value::Int(i);
        let walked = d.most_common.iter().find(|(m, _)| *m == v).map(|(_, f)| *f);
        assert_eq!(d.frequency_of(&v), walked, "{v:?}");
    }
    assert_eq!(d.frequency_of(&Value::Int(0)), Some(0.5));
    // Not stored: statistics read back are equal, and work their figures out again.
    let stats = TableStats {
        columns: [("x".to_string(), d.clone())].into_iter().collect(),
        ..TableStats::default()
    };
    let back = TableStats::decode(&stats.encode().unwrap()).unwrap();
    assert_eq!(back, stats);
    assert!((back.columns["x"].listed_frequencies().0 - 0.69).abs() < 1e-12);
}
