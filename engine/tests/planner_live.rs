//! The planner keeps itself right: statistics from the table files' sketches and the
//! memtables' counts without any `analyze`, bounded dives, the true min/max of an ascending
//! key, calibration, and the index advisor.

use strata::StoreOptions;
use strata::{Db, Error, Options, Predicate, Projection, Query, TableBatch, WriteOptions, record};

/// Options that flush often (so there are table files to sketch) and never analyse.
fn no_analyze() -> Options {
    Options {
        store: StoreOptions {
            write_buffer_bytes: 512 << 10,
            ..StoreOptions::default()
        },
        auto_analyze: false,
        ..Options::default()
    }
}

/// Options that keep a small table in the memtable (64 MiB) and never analyse.
fn memtable_only() -> Options {
    Options {
        auto_analyze: false,
        ..Options::default()
    }
}

/// Writes (inserts or replaces) people with a 50/50 gender, a 999/1 status and a uniform town of 500 values.
fn load_people(db: &Db, ids: std::ops::Range<i64>) {
    let mut batch = TableBatch::new();
    for id in ids {
        let h = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        batch.upsert(record! {
            "id" => id,
            "gender" => if h.is_multiple_of(2) { "F" } else { "M" },
            "status" => if h.is_multiple_of(1000) { "closed" } else { "active" },
            "town" => format!("town{}", h % 500),
        });
        if batch.len() == 5_000 {
            db.write(
                "people",
                std::mem::take(&mut batch),
                WriteOptions::default(),
            )
            .unwrap();
        }
    }
    db.write("people", batch, WriteOptions::default()).unwrap();
}

fn people(db: &Db) {
    db.create_table("people", ["id"], strata::TableOptions::default())
        .unwrap();
    for (name, field) in [
        ("by_gender", "gender"),
        ("by_status", "status"),
        ("by_town", "town"),
    ] {
        db.create_index("people", name, [field], Projection::KeysOnly)
            .unwrap();
    }
}

fn chosen(db: &Db, q: Query) -> String {
    let plan = db.explain("people", &q).unwrap();
    plan.chosen
        .index
        .clone()
        .unwrap_or(plan.chosen.plan.to_owned())
}

#[test]
fn a_freshly_loaded_table_is_planned_well_without_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_analyze()).unwrap();
    people(&db);
    load_people(&db, 0..100_000);
    db.flush().unwrap();
    assert!(
        db.table_stats("people").unwrap().is_none(),
        "never analysed"
    );

    let stats = db.planning_statistics("people").unwrap();
    let rows = stats.row_count as f64;
    assert!((rows - 100_000.0).abs() < 1.0, "{rows}");
    let status = &stats.columns["status"];
    let active = status.frequency_of(&"active".into()).unwrap_or(0.0);
    assert!((active - 0.999).abs() < 0.002, "{active}");
    assert!((stats.columns["town"].distinct - 500.0).abs() < 25.0);

    let eq = |f: &str, v: &str| Query::default().filter(Predicate::eq(f, v));
    assert_eq!(chosen(&db, eq("gender", "F")), "scan");
    assert_eq!(chosen(&db, eq("status", "active")), "scan");
    assert_eq!(chosen(&db, eq("status", "closed")), "by_status");
    assert_eq!(chosen(&db, eq("town", "town7")), "by_town");

    // Rows still in the memtable are counted exactly; deletes subtract.
    load_people(&db, 100_000..110_000);
    let mut batch = TableBatch::new();
    for id in 0..20_000i64 {
        batch.delete([id.into()]);
    }
    db.write("people", batch, WriteOptions::default()).unwrap();
    let rows = db.planning_statistics("people").unwrap().row_count;
    assert_eq!(rows, 90_000, "110,000 written, 20,000 deleted");

    // Rewrites are counted twice until compaction merges them; then the count is exact.
    load_people(&db, 50_000..60_000);
    db.flush().unwrap();
    db.compact("people").unwrap();
    let rows = db.planning_statistics("people").unwrap().row_count;
    assert_eq!(rows, 90_000);
    // And the sketches survive reopen: they are in the files.
    db.close().unwrap();
    let db = Db::open(dir.path(), no_analyze()).unwrap();
    let stats = db.planning_statistics("people").unwrap();
    assert_eq!(stats.row_count, 90_000);
    assert_eq!(chosen(&db, eq("status", "closed")), "by_status");
    assert_eq!(chosen(&db, eq("gender", "M")), "scan");
}

#[test]
fn dives_plan_a_table_no_statistics_have_seen() {
    let dir = tempfile::tempdir().unwrap();
    // Everything stays in the memtable: no file sketches, no analysis.
    let db = Db::open(dir.path(), memtable_only()).unwrap();
    people(&db);
    load_people(&db, 0..20_000);
    let stats = db.planning_statistics("people").unwrap();
    assert!(stats.columns.is_empty(), "nothing sketched or analysed");
    assert_eq!(stats.row_count, 20_000);

    let eq = |f: &str, v: &str| Query::default().filter(Predicate::eq(f, v));
    // Half the rows: the dive stops at its limit, a lower bound. Without statistics the
    // estimate is the geometric mean of it and the rows, not the default 0.5 %.
    let gender = db.explain("people", &eq("gender", "F")).unwrap();
    let dive = gender.observed.dives["by_gender"];
    assert!(
        !dive.complete && dive.entries == strata::DIVE_LIMIT,
        "{dive:?}"
    );
    let expected = (strata::DIVE_LIMIT as f64 * 20_000.0).sqrt();
    assert!(
        (gender.chosen.estimated_rows - expected).abs() < 1.0,
        "{gender}"
    );

    let closed = db.explain("people", &eq("status", "closed")).unwrap();
    assert_eq!(
        closed.chosen.index.as_deref(),
        Some("by_status"),
        "{closed}"
    );
    let dive = closed.observed.dives["by_status"];
    let truth = db.query("people", &eq("status", "closed")).unwrap().count() as u64;
    assert!(
        dive.complete && dive.entries == truth,
        "{dive:?} vs {truth}"
    );
    assert!((closed.chosen.estimated_rows - truth as f64).abs() < 0.5);
}

#[test]
fn an_ascending_key_past_the_statistics_reads_its_true_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), memtable_only()).unwrap();
    db.create_table("events", ["id"], strata::TableOptions::default())
        .unwrap();
    db.create_index("events", "by_ts", ["ts"], Projection::KeysOnly)
        .unwrap();
    let write = |ids: std::ops::Range<i64>| {
        let mut batch = TableBatch::new();
        for id in ids {
            batch.insert(record! { "id" => id, "ts" => 1_000_000 + id * 10, "kind" => id % 7 });
        }
        db.write("events", batch, WriteOptions::default()).unwrap();
    };
    write(0..50_000);
    db.analyze("events").unwrap();
    // As many again since the analysis, all with later timestamps than it saw.
    write(50_000..100_000);
    let analysed_max = 1_000_000 + 49_999 * 10;

    let after = |ts: i64| Query::default().filter(Predicate::gt("ts", ts));
    let half = db.explain("events", &after(analysed_max)).unwrap();
    let (min, max) = &half.observed.extremes["ts"];
    assert_eq!(
        (min, max),
        (&1_000_000.into(), &(1_000_000 + 99_999 * 10).into())
    );
    assert_eq!(half.chosen.plan, "scan", "half the table: {half}");
    assert!(
        (half.chosen.estimated_rows - 50_000.0).abs() < 5_000.0,
        "{}",
        half.chosen.estimated_rows
    );

    let newest = db
        .explain("events", &after(1_000_000 + 99_990 * 10))
        .unwrap();
    assert_eq!(newest.chosen.index.as_deref(), Some("by_ts"), "{newest}");
    assert!(newest.chosen.estimated_rows < 20.0, "{newest}");
}

#[test]
fn calibrate_measures_this_machine_and_its_constants_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let defaults = db.cost_model();
    let model = db.calibrate_with(10_000).unwrap();
    assert!(model.is_valid());
    assert_ne!(model, defaults, "measured, not the defaults");
    for (name, c) in [
        ("seek", model.seek_us),
        ("scan_row", model.scan_row_us),
        ("index_entry", model.index_entry_us),
        ("fetch", model.fetch_us),
        ("sorted_fetch", model.sorted_fetch_us),
        ("filter", model.filter_us),
        ("row", model.row_us),
        ("sort_row", model.sort_row_us),
    ] {
        assert!(c > 0.0 && c < 1_000.0, "{name}: {model:?}");
    }
    assert!(
        !dir.path().join("calibrate.tmp").exists(),
        "scratch removed"
    );
    assert_eq!(db.cost_model(), model);
    db.close().unwrap();

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.cost_model(), model, "stored in the catalog");
    let bad = strata::CostModel {
        fetch_us: f64::NAN,
        ..model
    };
    assert!(matches!(
        db.set_cost_model(bad),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.cost_model(), model, "a refused model changes nothing");
    assert!(matches!(
        db.calibrate_with(10),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn the_advisor_reports_indexes_that_do_not_pay_for_themselves() {
    use strata::table::Note;

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_analyze()).unwrap();
    people(&db);
    load_people(&db, 0..20_000);
    db.analyze("people").unwrap();
    let run = |q: Query| db.query("people", &q).unwrap().count();
    for _ in 0..30 {
        run(Query::default()
            .filter(Predicate::eq("status", "closed"))
            .select(["id", "town"]));
    }
    for _ in 0..25 {
        run(Query::default().filter(Predicate::eq("gender", "F")));
    }
    // Hinted plans are not the planner's choice.
    run(Query::default()
        .filter(Predicate::eq("gender", "F"))
        .hint(strata::Hint::Index("by_gender".into())));

    let advice = db.index_advice().unwrap();
    let of = |name: &str| advice.iter().find(|a| a.index == name).unwrap();

    let gender = of("by_gender");
    assert_eq!((gender.usage.chosen, gender.usage.lost), (0, 25));
    assert!(
        gender
            .notes
            .contains(&Note::NeverChosen { candidacies: 25 }),
        "{:?}",
        gender.notes
    );
    assert!(
        gender
            .notes
            .iter()
            .any(|n| matches!(n, Note::TooFewDistinct { field, .. } if field == "gender")),
        "{:?}",
        gender.notes
    );

    let status = of("by_status");
    assert_eq!(status.usage.chosen, 30);
    assert!(
        status.usage.rows_saved > 30.0 * 19_000.0,
        "{:?}",
        status.usage
    );
    assert_eq!(status.usage.fetching_plans, 30);
    assert_eq!(
        status.notes,
        vec![Note::IncludeWouldPay {
            fields: vec!["town".into()],
            fetches: status.usage.fetches
        }],
        "a rare value's index pays; only the fetches could go"
    );

    let town = of("by_town");
    assert_eq!(town.notes, vec![Note::NeverACandidate { queries: 56 }]);
    for a in &advice {
        assert_eq!(
            a.usage.entries_written, 20_000,
            "{}: one entry per insert",
            a.index
        );
        assert!(a.usage.bytes_written > 20_000 * 6);
        assert!(a.usage.maintenance > std::time::Duration::ZERO);
    }
}

/// Declared statistics: a field group's combinations are counted as an index's fields' are,
/// so a conjunction of two correlated fields is estimated together; a field's target
/// lengthens its most-common list; both survive a reopen, and empty options go back to
/// the defaults.
#[test]
fn declared_groups_and_targets_are_gathered_by_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Db::open(dir.path(), memtable_only()).unwrap();
    let db = open();
    db.create_table("f", ["id"], strata::TableOptions::default())
        .unwrap();
    let mut batch = TableBatch::new();
    for id in 0..20_000i64 {
        // Each airport is served by two of the 40 airlines, which serve nothing else;
        // `tail` has 400 values falling off slowly.
        let origin = id % 20;
        let carrier = origin * 2 + (id / 20) % 2;
        let tail = ((id * 7919) % 400) * ((id * 104_729) % 400) / 400;
        batch.insert(
            record! { "id" => id, "origin" => origin, "carrier" => carrier, "tail" => tail },
        );
    }
    db.write("f", batch, WriteOptions::default()).unwrap();
    let q = Query::default()
        .filter(Predicate::eq("origin", 3))
        .filter(Predicate::eq("carrier", 7));
    db.analyze("f").unwrap();
    // Independent: 1/20 · 1/40 of the rows; the truth is 1/40.
    let independent = db.explain("f", &q).unwrap().chosen.estimated_rows;
    assert!(independent < 100.0, "{independent}");
    let defaults = db.planning_statistics("f").unwrap();
    assert!(defaults.columns["tail"].most_common.len() <= 100);

    db.set_statistics(
        "f",
        strata::StatisticsOptions::default()
            .group(["origin", "carrier"])
            .target("tail", 1_000),
    )
    .unwrap();
    drop(db);
    let db = open();
    assert_eq!(
        db.table("f").unwrap().statistics.groups,
        [vec!["origin".to_string(), "carrier".to_string()]]
    );
    db.analyze("f").unwrap();
    let together = db.explain("f", &q).unwrap().chosen.estimated_rows;
    assert!((400.0..=600.0).contains(&together), "{together}");
    let stats = db.planning_statistics("f").unwrap();
    assert!(
        stats.columns["tail"].most_common.len() > 100,
        "{}",
        stats.columns["tail"].most_common.len()
    );

    assert!(matches!(
        db.set_statistics("f", strata::StatisticsOptions::default().target("tail", 0)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.set_statistics("nope", strata::StatisticsOptions::default()),
        Err(e) if e.is_not_found()
    ));
    db.set_statistics("f", strata::StatisticsOptions::default())
        .unwrap();
    drop(db);
    assert!(open().table("f").unwrap().statistics.is_empty());
}

/// A union reads each of its parts' indexes: the advisor counts each as chosen, and an `OR`
/// query over the people table picks the union over a scan.
#[test]
fn a_union_counts_as_choosing_each_of_its_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), no_analyze()).unwrap();
    people(&db);
    load_people(&db, 0..20_000);
    db.analyze("people").unwrap();
    let q = Query::default().filter_where(strata::Condition::any([
        Predicate::eq("status", "closed"),
        Predicate::eq("town", "town7"),
    ]));
    let plan = db.explain("people", &q).unwrap();
    assert_eq!(plan.chosen.plan, "union", "{plan}");
    let expected = db
        .query("people", &q.clone().hint(strata::Hint::Scan))
        .unwrap()
        .count();
    for _ in 0..10 {
        assert_eq!(db.query("people", &q).unwrap().count(), expected);
    }
    let advice = db.index_advice().unwrap();
    let chosen = |name: &str| {
        advice
            .iter()
            .find(|a| a.index == name)
            .unwrap()
            .usage
            .chosen
    };
    assert_eq!((chosen("by_status"), chosen("by_town")), (10, 10));
    assert_eq!(chosen("by_gender"), 0);
}
