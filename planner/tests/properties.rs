//! Properties of estimates and plans over statistics built from random rows.

use proptest::prelude::*;
use strata_planner::*;

const FIELDS: [&str; 3] = ["a", "b", "c"];

/// Rows of three small-domain fields with skew, and some NULLs.
fn rows() -> impl Strategy<Value = Vec<[Option<i64>; 3]>> {
    let cell = prop_oneof![
        3 => Just(Some(0i64)),
        6 => (0i64..20).prop_map(Some),
        1 => Just(None),
    ];
    proptest::collection::vec([cell.clone(), cell.clone(), cell], 1..300)
}

fn stats_of(rows: &[[Option<i64>; 3]]) -> TableStats {
    let fields: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
    let prefixes = vec![
        vec!["a".to_string(), "b".to_string()],
        vec!["a".to_string(), "b".to_string(), "c".to_string()],
    ];
    let mut b = TableStatsBuilder::new(&fields, &prefixes);
    for row in rows {
        let values: Vec<Value> = row
            .iter()
            .map(|c| c.map_or(Value::Null, Value::Int))
            .collect();
        b.add_row(
            |f| FIELDS.iter().position(|x| *x == f).map(|i| &values[i]),
            40,
        );
    }
    b.finish()
}

fn predicate() -> impl Strategy<Value = Predicate> {
    let field = prop::sample::select(FIELDS.to_vec());
    let value = (-2i64..22).prop_map(Value::Int);
    let op = prop_oneof![
        value.clone().prop_map(Op::Eq),
        value.clone().prop_map(Op::Ne),
        proptest::collection::vec(value.clone(), 0..6).prop_map(Op::In),
        value.clone().prop_map(Op::Lt),
        value.clone().prop_map(Op::Le),
        value.clone().prop_map(Op::Gt),
        value.clone().prop_map(Op::Ge),
        (value.clone(), value).prop_map(|(a, b)| Op::Between(a, b)),
        Just(Op::IsNull),
        Just(Op::IsNotNull),
    ];
    (field, op).prop_map(|(f, op)| Predicate::new(f, op))
}

fn table() -> TableInfo {
    TableInfo::new(
        "t",
        &["a"],
        vec![
            IndexInfo::new("b", &["b"], Projection::KeysOnly),
            IndexInfo::new("bc", &["b", "c"], Projection::Include(vec!["a".into()])),
            IndexInfo::new("c_all", &["c"], Projection::All),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn estimates_stay_within_the_table(
        rows in rows(),
        predicates in proptest::collection::vec(predicate(), 0..5),
    ) {
        let stats = stats_of(&rows);
        let sel = Estimator::new(&stats).conjunction(&predicates);
        prop_assert!((0.0..=1.0).contains(&sel), "{sel}");
        let estimate = sel * stats.row_count as f64;
        prop_assert!(estimate >= 0.0 && estimate <= stats.row_count as f64);
    }

    #[test]
    fn adding_a_conjunct_never_raises_the_estimate(
        rows in rows(),
        predicates in proptest::collection::vec(predicate(), 0..4),
        extra in predicate(),
    ) {
        let stats = stats_of(&rows);
        let e = Estimator::new(&stats);
        let before = e.conjunction(&predicates);
        let mut more = predicates.clone();
        more.push(extra);
        let after = e.conjunction(&more);
        prop_assert!(after <= before + 1e-12, "{before} -> {after} adding {:?}", more.last());
    }

    #[test]
    fn plans_are_finite_and_the_cheapest_candidate_wins(
        rows in rows(),
        predicates in proptest::collection::vec(predicate(), 0..5),
        limit in proptest::option::of(1u64..50),
        projection in proptest::option::of(proptest::collection::vec(
            prop::sample::select(FIELDS.to_vec()), 1..3)),
    ) {
        let stats = stats_of(&rows);
        let query = Query {
            predicates,
            limit,
            projection: projection.map(|p| p.into_iter().map(String::from).collect()),
            ..Query::default()
        };
        let plan = choose(&query, &table(), &stats, &CostModel::default()).expect("plans");
        for c in &plan.candidates {
            prop_assert!(c.cost.is_finite() && c.cost >= 0.0, "{c:?}");
            prop_assert!(c.rows_read.is_finite() && c.rows_read >= 0.0, "{c:?}");
        }
        let least = plan.candidates.iter().map(|c| c.cost).fold(f64::INFINITY, f64::min);
        prop_assert_eq!(plan.chosen.cost, least);
        prop_assert!(plan.candidates.contains(&plan.chosen));
    }
}

/// The case the property above found: `a` is one value in every row, so `a = 0` binds the
/// chain `(a, b, c)`, whose distinct counts say `c` follows from `(a, b)`; the chain alone
/// estimated 0.5 where the same query without `a = 0` was estimated at 0.25.
#[test]
fn binding_the_field_that_starts_a_chain_does_not_raise_the_estimate() {
    let stats = stats_of(&[[Some(0), Some(17), Some(0)], [Some(0), Some(0), Some(16)]]);
    let e = Estimator::new(&stats);
    let mut predicates = vec![
        Predicate::eq("c", 16),
        Predicate::in_list("b", [Value::Int(17)]),
        Predicate::new("a", Op::Ne(Value::Int(1))),
    ];
    let before = e.conjunction(&predicates);
    assert!((before - 0.25).abs() < 1e-12, "{before}");
    predicates.push(Predicate::eq("a", 0));
    let after = e.conjunction(&predicates);
    assert!(after <= before + 1e-12, "{before} -> {after}");
}

/// The second case: `a IN (-1, 16) AND b = 12` was estimated independently (0.25) and the
/// narrower `a = 16` started the chain `(a, b)` (0.5). A chain now takes `IN` sets too, so
/// both are estimated through it.
#[test]
fn narrowing_an_in_list_to_one_value_does_not_raise_the_estimate() {
    let stats = stats_of(&[[Some(0), Some(12), Some(0)], [Some(16), Some(0), Some(0)]]);
    let e = Estimator::new(&stats);
    let mut predicates = vec![
        Predicate::eq("b", 12),
        Predicate::in_list("a", [Value::Int(-1), Value::Int(16)]),
    ];
    let before = e.conjunction(&predicates);
    predicates.push(Predicate::in_list("a", [Value::Int(16)]));
    let after = e.conjunction(&predicates);
    assert!(after <= before + 1e-12, "{before} -> {after}");
}

/// A text column's values: dates, or lower-case words (so that bucket bounds use a narrower
/// alphabet than the probes).
fn column_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (2019u32..2022, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
        "[a-k]{1,4}",
    ]
}

/// Probes: dates (`YYYY-MM-DD`, some with a time), strings near dates, and short words.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        (2019u32..2022, 1u32..13, 1u32..29).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
        (
            2019u32..2022,
            1u32..13,
            1u32..29,
            0u32..24,
            prop::sample::select(vec![' ', 'T'])
        )
            .prop_map(|(y, m, d, h, sep)| format!("{y:04}-{m:02}-{d:02}{sep}{h:02}:00:00")),
        "20[0-9][0-9]-[0-9:x-]{0,6}",
        "[a-zA-Z0-9~ -]{0,6}",
        "[a-m]{0,3}[0-9~ !-]{0,2}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// A range's estimate never falls as its upper end rises (nor rises as its lower end
    /// does), whatever the strings: the histogram's placement inside a bucket is monotone.
    #[test]
    fn text_range_estimates_are_monotone_in_their_ends(
        column in proptest::collection::vec(column_text(), 2..400),
        mut ends in proptest::collection::vec(text(), 2..80),
    ) {
        let fields = vec!["s".to_string()];
        let mut b = TableStatsBuilder::new(&fields, &[]);
        for v in &column {
            let value = Value::from(v.as_str());
            b.add_row(|f| (f == "s").then_some(&value), 20);
        }
        let stats = b.finish();
        let estimator = Estimator::new(&stats);
        ends.sort();
        let below: Vec<f64> = ends
            .iter()
            .map(|e| estimator.range("s", std::ops::Bound::Unbounded, std::ops::Bound::Excluded(&Value::from(e.as_str()))))
            .collect();
        for w in below.windows(2) {
            prop_assert!(w[0] <= w[1] + 1e-12, "{ends:?}: {below:?}");
        }
        let above: Vec<f64> = ends
            .iter()
            .map(|e| estimator.range("s", std::ops::Bound::Included(&Value::from(e.as_str())), std::ops::Bound::Unbounded))
            .collect();
        for w in above.windows(2) {
            prop_assert!(w[0] + 1e-12 >= w[1], "{ends:?}: {above:?}");
        }
        prop_assert!(below.iter().chain(&above).all(|s| s.is_finite() && (0.0..=1.0).contains(s)));
    }
}

fn bound(v: i64, included: bool) -> std::ops::Bound<Value> {
    if included {
        std::ops::Bound::Included(Value::Int(v))
    } else {
        std::ops::Bound::Excluded(Value::Int(v))
    }
}

fn as_ref(b: &std::ops::Bound<Value>) -> std::ops::Bound<&Value> {
    b.as_ref()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Widening a range never lowers its estimate: ends moved out, or an excluded end
    /// included (a one-value range `[x, x]` is estimated as `x` itself, and every wider range
    /// at least as much).
    #[test]
    fn a_wider_range_is_never_estimated_below_a_narrower_one(
        rows in rows(),
        (a, b) in (-2i64..22, -2i64..22),
        (grow_a, grow_b) in (0i64..4, 0i64..4),
        (inc_a, inc_b, widen_a, widen_b) in (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    ) {
        let stats = stats_of(&rows);
        let e = Estimator::new(&stats);
        let narrow = (bound(a, inc_a), bound(b, inc_b));
        let wide = (
            bound(a - grow_a, inc_a || widen_a),
            bound(b + grow_b, inc_b || widen_b),
        );
        for field in FIELDS {
            let n = e.range(field, as_ref(&narrow.0), as_ref(&narrow.1));
            let w = e.range(field, as_ref(&wide.0), as_ref(&wide.1));
            prop_assert!(n <= w + 1e-12, "{field}: {narrow:?} {n} > {wide:?} {w}");
        }
    }
}
