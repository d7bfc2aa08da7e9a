//! The `record` fuzz checks: the stored forms of the table layer besides keys. Shared by the
//! libFuzzer target and by the corpus replay in `engine/tests/fuzz_corpus.rs`. For any input:
//!
//! 1. As a record: decoding never panics; what decodes in the current version re-encodes to
//!    exactly the input, and what decodes in version 1 re-encodes to a current record of the
//!    same fields; a query's row reader (testing and keeping some fields) agrees with the
//!    decode on what it reads; statistics of its fields (any float bits: NaN, ±inf, -0.0)
//!    round-trip their stored form exactly.
//! 2. As an index entry value (of a keys-only, an include and an all index, under any key
//!    made of the input's first half): decoding never panics.
//! 3. As a catalog table definition: decoding never panics; what decodes validates, and
//!    re-encodes to a definition that decodes to the same value.
//! 4. As a table's row (version 3) and its layouts: a record that decodes, stored by a layout
//!    of its own names, decodes to the same record and is read alike by a query's row reader;
//!    the input split into a layout's names section and a row never panics a decode or a
//!    reader, and a row that decodes re-encodes exactly.

use std::sync::Arc;

use strata::table::catalog::{IndexDef, TableDef};
use strata::table::entry::decode_entry;
use strata::table::layouts::Layouts;
use strata::{IndexState, Maintenance, Projection, Record, Scope, TableStats};
use strata_planner::TableStatsBuilder;

pub fn check(data: &[u8]) {
    if let Some(why) = strata::table::record::row_reader_disagreement(data) {
        panic!("a row reader disagrees with the decode: {why}");
    }
    if let Ok(record) = Record::decode(data) {
        let encoded = record.encode();
        if data.first() == Some(&strata::table::format::RECORD_VERSION) {
            assert_eq!(encoded, data, "decoded records re-encode exactly");
        } else {
            assert_eq!(Record::decode(&encoded).expect("re-encoded"), record);
        }
        let fields: Vec<String> = record.iter().map(|(name, _)| name.to_owned()).collect();
        let mut builder = TableStatsBuilder::new(&fields, &[]);
        builder.add_row(|f| record.get(f), data.len());
        let stored = builder.encode().expect("a sketch encodes");
        let back = TableStatsBuilder::decode(&stored).expect("a sketch decodes");
        assert_eq!(
            back.encode().expect("re-encode"),
            stored,
            "sketches round-trip"
        );
        let stats = builder.finish();
        let stored = stats.encode().expect("statistics encode");
        assert_eq!(TableStats::decode(&stored).expect("decode"), stats);
    }

    let table = TableDef {
        format: 1,
        id: 1,
        name: "t".into(),
        primary_key: vec!["id".into()],
        shards: 1,
        indexes: Vec::new(),
        keys: 2,
        statistics: Default::default(),
        columns: Vec::new(),
    };
    let (key, value) = data.split_at(data.len() / 2);
    for projection in [
        Projection::KeysOnly,
        Projection::Include(vec!["a".into()]),
        Projection::All,
    ] {
        let index = IndexDef {
            id: 2,
            name: "ix".into(),
            fields: vec!["f".into()],
            projection,
            state: IndexState::Ready,
            scope: Scope::Local,
            maintenance: Maintenance::Sync,
            unique: false,
        };
        let _ = decode_entry(&table, &index, "i/t/ix", key, value);
        let _ = decode_entry(&table, &index, "i/t/ix", &[], data);
    }

    if let Ok(record) = Record::decode(data) {
        let layouts = Arc::new(
            Layouts::from_sections([record.names_section()])
                .expect("a record's names are a layout"),
        );
        let stored = layouts.encode_known(&record);
        assert_eq!(stored[0], strata::table::format::RECORD_LAID_OUT);
        assert_eq!(layouts.decode(&stored).as_ref(), Ok(&record));
        if let Some(why) = strata::table::record::row_reader_disagreement_in(&stored, &layouts) {
            panic!("a row reader disagrees with the decode of a version-3 row: {why}");
        }
    }
    if let Some((&split, rest)) = data.split_first() {
        let (section, row) = rest.split_at((split as usize).min(rest.len()));
        if let Ok(layouts) = Layouts::from_sections([section.to_vec()]) {
            let layouts = Arc::new(layouts);
            if let Ok(record) = layouts.decode(row)
                && row.first() == Some(&strata::table::format::RECORD_LAID_OUT)
            {
                assert_eq!(layouts.encode_known(&record), row, "rows re-encode exactly");
            }
            if let Some(why) = strata::table::record::row_reader_disagreement_in(row, &layouts) {
                panic!("a row reader disagrees with the decode: {why}");
            }
        }
    }

    if let Ok(def) = TableDef::decode(data) {
        def.validate().expect("a decoded definition is valid");
        assert_eq!(
            TableDef::decode(&def.encode().expect("encode")).expect("re-encoded"),
            def
        );
    }
}
