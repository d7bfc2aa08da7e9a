//! Tests of `Record`: its encoding in both versions, decoding checks, the row reader's
//! layouts, serde and the `record!` macro.

use super::*;
use crate::table::codec::format::{RECORD_V1, VALUE_INT, VALUE_NULL, VALUE_STR};
use crate::table::codec::row_reader::RowReader;
use proptest::prelude::*;
use strata_planner::Predicate;

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        ".{0,6}".prop_map(Value::Str),
        proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Bytes),
    ]
}

proptest! {
    #[test]
    fn records_round_trip(fields in proptest::collection::btree_map("[a-z_]{1,6}", value(), 0..8)) {
        let record = Record::from(fields);
        let bytes = record.encode();
        let back = Record::decode(&bytes).unwrap();
        prop_assert_eq!(back.encode(), bytes);
    }

    /// Shared names in any order, repeats included, make the record that setting each
    /// field in turn makes.
    #[test]
    fn a_record_of_shared_names_is_the_record_of_its_sets(
        fields in proptest::collection::vec(("[a-d]{1,2}", value()), 0..10),
    ) {
        let mut set = Record::new();
        for (name, v) in &fields {
            set.set(name.as_str(), v.clone());
        }
        let shared: Vec<(Arc<str>, Value)> =
            fields.into_iter().map(|(n, v)| (Arc::from(n), v)).collect();
        prop_assert_eq!(Record::from_shared(shared), set);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(record) = Record::decode(&bytes) {
            prop_assert_eq!(&record.encode(), &bytes);
        }
        let wanted = ["a".to_owned(), "b".to_owned()];
        if let (Ok(all), Ok(some)) = (Record::decode(&bytes), Record::decode_only(&bytes, &wanted)) {
            prop_assert_eq!(all.project(&wanted), some);
        }
    }

    #[test]
    fn a_partial_decode_is_the_projection_of_the_whole(
        fields in proptest::collection::btree_map("[a-e]{1,2}", value(), 0..8),
        wanted in proptest::collection::btree_set("[a-e]{1,2}", 0..4),
    ) {
        let record = Record::from(fields);
        let bytes = record.encode();
        let wanted: Vec<String> = wanted.into_iter().collect();
        let some = Record::decode_only(&bytes, &wanted).unwrap();
        let projected: Record = record
            .iter()
            .filter(|(name, _)| wanted.iter().any(|w| w == name))
            .map(|(name, v)| (name.to_owned(), v.clone()))
            .collect();
        prop_assert_eq!(some, projected);
        for cut in 0..bytes.len() {
            prop_assert!(Record::decode_only(&bytes[..cut], &wanted).is_err());
        }
    }
}

proptest! {
    /// A row reader tests exactly the values a full decode holds and builds exactly the
    /// projection of the full decode, row after row with its shared names.
    #[test]
    fn a_row_reader_accepts_exactly_the_rows_a_decode_accepts(
        rows in proptest::collection::vec(
            proptest::collection::vec(prop_oneof!["a", "b", "c", "d"], 0..5), 1..12),
        tests in proptest::collection::vec(any::<bool>(), 12),
        versions in proptest::collection::vec(any::<bool>(), 12),
        layout in proptest::collection::btree_set(prop_oneof!["a", "b", "c", "d"], 0..4),
    ) {
        // Starting from another row's names, as a query's reader does.
        let layout: Arc<[Arc<str>]> = layout.iter().map(|n| Arc::from(n.as_str())).collect();
        let mut reader = RowReader::new(&["b"], None).with_layout(&layout);
        for ((names, test), v2) in rows.iter().zip(tests).zip(versions) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let bytes = if v2 { raw2(&names) } else { raw(&names) };
            let decoded = Record::decode(&bytes);
            if test {
                prop_assert_eq!(reader.test(&bytes).is_ok(), decoded.is_ok());
            } else {
                prop_assert_eq!(reader.build(&bytes), decoded);
            }
        }
    }

    #[test]
    fn a_row_reader_sees_what_a_full_decode_sees(
        rows in proptest::collection::vec(
            proptest::collection::btree_map("[a-e]{1,2}", value(), 0..8), 1..6),
        tested in proptest::collection::vec("[a-e]{1,2}", 0..3),
        kept in proptest::option::of(proptest::collection::vec("[a-e]{1,2}", 0..4)),
    ) {
        let tested_refs: Vec<&str> = tested.iter().map(String::as_str).collect();
        let mut reader = RowReader::new(&tested_refs, kept.clone());
        for fields in rows {
            let record = Record::from(fields);
            let bytes = record.encode();
            reader.test(&bytes).unwrap();
            for name in &tested {
                prop_assert_eq!(reader.value_of(name), record.value(name));
            }
            let present: Vec<Predicate> =
                tested.iter().map(|t| Predicate::is_not_null(t.as_str())).collect();
            prop_assert_eq!(
                reader.passes(&present),
                tested.iter().all(|t| !record.value(t).is_null())
            );
            let built = reader.build(&bytes).unwrap();
            let expected = match &kept {
                None => record.clone(),
                Some(kept) => record.project(kept),
            };
            prop_assert_eq!(built, expected);
            for cut in 0..bytes.len() {
                prop_assert!(reader.test(&bytes[..cut]).is_err());
            }
        }
    }
}

/// A version-1 record's bytes with `names` in the order given (sorted or not), each
/// holding 1.
fn raw(names: &[&str]) -> Vec<u8> {
    let mut out = vec![RECORD_V1, names.len() as u8];
    for name in names {
        out.push(name.len() as u8);
        out.extend(name.as_bytes());
        out.extend([VALUE_INT, 2]);
    }
    out
}

/// A version-2 record's bytes with `names` in the order given (sorted or not), each
/// holding 1 (short names: one-byte ends).
fn raw2(names: &[&str]) -> Vec<u8> {
    let section: Vec<u8> = names
        .iter()
        .flat_map(|n| [&[n.len() as u8][..], n.as_bytes()].concat())
        .collect();
    let mut out = vec![RECORD_VERSION, names.len() as u8, section.len() as u8];
    out.extend(section);
    out.extend((1..=names.len()).map(|i| 2 * i as u8));
    for _ in names {
        out.extend([VALUE_INT, 2]);
    }
    out
}

#[test]
fn a_row_reader_refuses_names_out_of_order_even_when_each_was_seen_at_its_place() {
    let mut reader = RowReader::new(&["a"], None);
    reader.test(&raw(&["a", "m", "z"])).unwrap();
    reader.build(&raw(&["a", "zz"])).unwrap();
    // "zz" and then "z": each name is one the reader saw at its position, in two rows.
    let bad = raw(&["a", "zz", "z"]);
    assert_eq!(reader.test(&bad), Err(RecordError::FieldOrder));
    assert_eq!(reader.build(&bad).err(), Some(RecordError::FieldOrder));
    assert_eq!(Record::decode(&bad), Err(RecordError::FieldOrder));
}

#[test]
fn a_row_reader_refuses_a_new_layout_out_of_order() {
    let mut reader = RowReader::new(&["a"], None);
    reader.test(&raw2(&["a", "m", "z"])).unwrap();
    reader.build(&raw2(&["a", "zz"])).unwrap();
    for bad in [
        raw2(&["a", "zz", "z"]),
        raw2(&["a", "a"]),
        raw2(&["b", "a"]),
    ] {
        assert_eq!(reader.test(&bad), Err(RecordError::FieldOrder));
        assert_eq!(reader.build(&bad).err(), Some(RecordError::FieldOrder));
        assert_eq!(Record::decode(&bad), Err(RecordError::FieldOrder));
    }
    // The layouts learnt before still read.
    assert_eq!(reader.build(&raw2(&["a", "zz"])).unwrap().len(), 2);
}

/// The documented example of each version (`docs/formats/records.md`): the first still
/// reads, and writes as the second.
#[test]
fn a_version_1_record_reads_and_writes_as_version_2() {
    let v1 = b"\x01\x02\x02id\x03\x0e\x04town\x05\x07Redmond";
    let v2 = b"\x02\x02\x08\x02id\x04town\x02\x0b\x03\x0e\x05\x07Redmond";
    let record = crate::record! { "id" => 7, "town" => "Redmond" };
    assert_eq!(Record::decode(v1).unwrap(), record);
    assert_eq!(record.encode(), v2);
    assert_eq!(Record::decode(v2).unwrap(), record);
    for bytes in [&v1[..], &v2[..]] {
        let mut reader = RowReader::new(&["town"], Some(vec!["id".into()]));
        reader.test(bytes).unwrap();
        assert_eq!(reader.value_of("town"), &Value::from("Redmond"));
        assert_eq!(
            reader.build(bytes).unwrap(),
            record.project(&["id".to_owned()])
        );
    }
}

/// Ends are 1, 2 or 4 bytes, the smallest that holds the record's length: records on each
/// side of both boundaries round-trip, and a wider spelling of the same record is refused.
#[test]
fn value_ends_take_the_narrowest_width_that_fits() {
    for len in (200..300).chain(65_400..65_600) {
        let record = crate::record! { "a" => 1, "s" => "x".repeat(len) };
        let bytes = record.encode();
        let width = (bytes.len() - 3 - 4 - (len + 1 + varint_len(len as u64)) - 2) / 2;
        let expected = if bytes.len() <= 0xff {
            1
        } else if bytes.len() <= 0xffff {
            2
        } else {
            4
        };
        assert_eq!(width, expected, "a record of {} bytes", bytes.len());
        assert_eq!(Record::decode(&bytes).unwrap(), record);
    }
    // {a: 1} with two-byte ends: the same fields, a spelling the encoder never writes.
    let wide = [RECORD_VERSION, 1, 2, 1, b'a', 2, 0, VALUE_INT, 2];
    assert!(Record::decode(&wide).is_err());
}

/// A query reads the fields it tests and returns; damage in a value it does not read is
/// not its error (block checksums and `verify` find that), but a full decode's.
#[test]
fn a_reader_checks_the_values_it_reads() {
    let mut bytes = crate::record! { "a" => 1, "b" => 2 }.encode();
    let b_tag = bytes.len() - 2;
    bytes[b_tag] = 0x7f;
    assert_eq!(Record::decode(&bytes), Err(RecordError::UnknownTag(0x7f)));
    let mut only_a = RowReader::new(&["a"], Some(vec!["a".into()]));
    only_a.test(&bytes).unwrap();
    assert_eq!(only_a.build(&bytes).unwrap(), crate::record! { "a" => 1 });
    let mut all = RowReader::new(&["a"], None);
    all.test(&bytes).unwrap();
    assert_eq!(all.build(&bytes), Err(RecordError::UnknownTag(0x7f)));
    let mut on_b = RowReader::new(&["b"], None);
    assert_eq!(on_b.test(&bytes), Err(RecordError::UnknownTag(0x7f)));
}

#[test]
fn a_name_given_twice_keeps_its_last_value() {
    let r: Record = [("b", 1), ("a", 2), ("b", 3), ("a", 4), ("c", 5)]
        .into_iter()
        .collect();
    let fields: Vec<(&str, &Value)> = r.iter().collect();
    assert_eq!(
        fields,
        [
            ("a", &Value::Int(4)),
            ("b", &Value::Int(3)),
            ("c", &Value::Int(5))
        ]
    );
    let mut r = r;
    assert_eq!(r.set("b", 9), Some(Value::Int(3)));
    assert_eq!(r.remove("a"), Some(Value::Int(4)));
    assert_eq!(r.remove("a"), None);
    assert_eq!(r.to_string(), "{b: 9, c: 5}");
}

#[test]
fn the_serde_form_is_a_map_of_fields() {
    let r = crate::record! { "id" => 1, "town" => "Ely" };
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(json, r#"{"fields":{"id":{"Int":1},"town":{"Str":"Ely"}}}"#);
    assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), r);
    assert_eq!(
        format!("{r:?}"),
        r#"Record { fields: {"id": Int(1), "town": Str("Ely")} }"#
    );
}

#[test]
fn the_macro_builds_records() {
    let r = crate::record! { "id" => 1, "town" => "Redmond", "score" => 2.5, "vip" => true,
    "photo" => vec![1u8, 2], "nick" => None::<&str> };
    assert_eq!(r.get("id"), Some(&Value::Int(1)));
    assert_eq!(r.get("town"), Some(&Value::from("Redmond")));
    assert_eq!(r.get("nick"), Some(&Value::Null));
    assert_eq!(r.value("missing"), &Value::Null);
    assert_eq!(r.len(), 6);
    assert_eq!(Record::decode(&r.encode()).unwrap(), r);
}

#[test]
fn damaged_records_are_errors() {
    let r = crate::record! { "a" => 1, "b" => "x" };
    let bytes = r.encode();
    assert_eq!(
        Record::decode(&bytes[..bytes.len() - 1]),
        Err(RecordError::Truncated)
    );
    let mut v = bytes.clone();
    v[0] = 9;
    assert_eq!(Record::decode(&v), Err(RecordError::Version(9)));
    let mut extra = bytes.clone();
    extra.push(0);
    assert_eq!(Record::decode(&extra), Err(RecordError::TrailingBytes));
    // Two fields named "a": out of order.
    let dup = [RECORD_V1, 2, 1, b'a', VALUE_NULL, 1, b'a', VALUE_NULL];
    assert_eq!(Record::decode(&dup), Err(RecordError::FieldOrder));
    // A padded varint.
    for version in [RECORD_V1, RECORD_VERSION] {
        let padded = [version, 0x80, 0x00];
        assert_eq!(Record::decode(&padded), Err(RecordError::Varint));
    }
    // Version 2: {a: 1, b: "x"}, ends 2 and 5.
    assert_eq!(
        bytes,
        [
            RECORD_VERSION,
            2,
            4,
            1,
            b'a',
            1,
            b'b',
            2,
            5,
            VALUE_INT,
            2,
            VALUE_STR,
            1,
            b'x'
        ]
    );
    let mut moved = bytes.clone();
    moved[7] = 3; // value a ends one byte early: the int's varint runs into b's place
    assert_eq!(Record::decode(&moved), Err(RecordError::Offsets));
    let mut into_next = bytes.clone();
    into_next[7] = 1; // value a is its tag alone: its varint would be read from b's place
    assert_eq!(Record::decode(&into_next), Err(RecordError::Offsets));
    let mut past = bytes.clone();
    past[7] = 9; // value a ends after value b
    assert_eq!(Record::decode(&past), Err(RecordError::Offsets));
    let mut short = bytes.clone();
    short[8] = 4; // the last value ends before the record
    assert_eq!(Record::decode(&short), Err(RecordError::TrailingBytes));
    let mut names = bytes.clone();
    names[2] = 3; // the names section ends inside "b"'s name
    assert!(Record::decode(&names).is_err());
    let mut no_fields = vec![RECORD_VERSION, 0, 0];
    assert_eq!(Record::decode(&no_fields).unwrap(), Record::new());
    no_fields[2] = 1;
    no_fields.push(0);
    assert_eq!(Record::decode(&no_fields), Err(RecordError::TrailingBytes));
    let huge = [
        RECORD_V1, 1, 1, b'a', VALUE_STR, 0xff, 0xff, 0xff, 0xff, 0x0f,
    ];
    assert!(Record::decode(&huge).is_err());
}

#[test]
fn records_decoded_one_after_another_keep_their_own_names_and_share_equal_lists() {
    let rows = [
        record! { "a" => 1, "b" => "x" },
        record! { "a" => 2, "b" => "y" },
        record! { "a" => 3, "b" => "z", "c" => 1.5 },
        record! { "a" => 4 },
        record! { "x" => 5, "y" => 6 },
        record! { "a" => 7, "c" => 8 },
        record! { "a" => 9, "b" => "w" },
        record! { "a" => 10, "b" => "v" },
        record! {},
        record! { "a" => 11, "b" => "u" },
    ];
    let encoded: Vec<Vec<u8>> = rows.iter().map(Record::encode).collect();
    let decoded: Vec<Record> = encoded
        .iter()
        .map(|bytes| Record::decode(bytes).expect("decodes"))
        .collect();
    assert_eq!(decoded, rows);
    // The same names, one row after the other: one list.
    assert!(decoded[0].names.same_list(&decoded[1].names));
    assert!(decoded[6].names.same_list(&decoded[7].names));
    assert!(
        !decoded[1].names.same_list(&decoded[6].names),
        "other names came between"
    );
    // A damaged row between two good ones changes neither.
    let mut bad = encoded[0].clone();
    bad[4] = 0xff;
    assert!(Record::decode(&bad).is_err());
    assert_eq!(Record::decode(&encoded[2]).expect("decodes"), rows[2]);
}

#[test]
fn the_record_macro_sorts_keeps_the_last_of_a_repeated_name_and_shares_repeated_lists() {
    let town = String::from("town");
    let r = record! { "z" => 1, town.clone() => "Redmond", "a" => 2, "z" => 3 };
    assert_eq!(r.value("z"), &Value::Int(3));
    assert_eq!(r.value("town"), &Value::Str("Redmond".into()));
    assert_eq!(r.value("a"), &Value::Int(2));
    assert_eq!(r.len(), 3);
    let mut by_set = Record::new();
    by_set.set("a", 2);
    by_set.set("town", "Redmond");
    by_set.set("z", 3);
    assert_eq!(r, by_set);

    let first = record! { "id" => 1, "v" => 1.5 };
    let second = record! { "v" => 2.5, "id" => 2 };
    assert!(
        first.names.same_list(&second.names),
        "the same names, built one after another"
    );
    let other = record! { "id" => 3, "w" => 1.5 };
    assert!(!other.names.same_list(&first.names));
    assert_eq!(other.value("w"), &Value::Float(1.5));
    assert_eq!(second.value("v"), &Value::Float(2.5));
    // A change to a record with a shared list gives it its own.
    let mut changed = record! { "id" => 3, "w" => 1.5 };
    changed.set("x", 1);
    assert_eq!(other.len(), 2);
    assert_eq!(changed.len(), 3);
}

#[test]
fn records_decode_and_build_in_a_thread_local_destructor() {
    // A thread local whose destructor decodes and builds records, registered before the
    // decoder's own cache: the cache is destroyed first (reverse order), and the destructor
    // must still work, without the cache.
    struct OnDrop(Vec<u8>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            let decoded = Record::decode(&self.0).expect("decodes");
            assert_eq!(decoded, record! { "a" => 1, "b" => "x" });
        }
    }
    thread_local! {
        static LATE: std::cell::RefCell<Option<OnDrop>> = const { std::cell::RefCell::new(None) };
    }
    let bytes = record! { "a" => 1, "b" => "x" }.encode();
    std::thread::spawn(move || {
        LATE.with(|late| *late.borrow_mut() = Some(OnDrop(bytes.clone())));
        // The caches come to life after `LATE`.
        assert!(Record::decode(&bytes).is_ok());
        assert_eq!(record! { "c" => 1 }.len(), 1);
    })
    .join()
    .expect("the thread ends cleanly");
}
