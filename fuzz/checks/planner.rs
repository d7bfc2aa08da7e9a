//! Checks for the `planner` fuzz target: arbitrary bytes become statistics, a table, a few
//! rows and a query (with `OR`s nesting `AND`s, `LIKE`, `NOT IN`, `!=`, `ORDER BY`), and
//! `choose` must hold its promises — no panic, estimates (of candidates, union parts and
//! each part of the `WHERE`) finite and within the table, finite non-negative costs, the
//! cheapest candidate chosen — and every candidate must return the rows a scan returns: the
//! rows its access path reads (those whose values lie in the key ranges its bound fields
//! give, as the executor builds them; for a union, each part's less the parts' before it)
//! that pass the query. Bytes starting with `{` are fed to
//! `TableStats::decode` instead, which must refuse or accept them without panicking and
//! accept only statistics that validate. Values include NaN of both signs, ±inf and -0.0,
//! and the statistics made from them must round-trip through their stored form exactly.

use strata_planner::*;

/// Reads numbers off the input, zeros once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.0 = rest;
        first
    }

    fn fraction(&mut self) -> f64 {
        f64::from(self.byte()) / 255.0
    }

    fn value(&mut self) -> Value {
        match self.byte() % 6 {
            0 => Value::Null,
            1 => Value::Int(i64::from(self.byte() as i8)),
            2 => Value::Float(f64::from(self.byte()) / 7.0),
            3 => Value::Float(
                [
                    f64::NAN,
                    -f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    -0.0,
                    f64::MAX,
                    f64::MIN_POSITIVE,
                    f64::from_bits(0x7ff0_0000_0000_0001),
                ][usize::from(self.byte() % 8)],
            ),
            4 => Value::Str(char::from(b'a' + self.byte() % 26).to_string()),
            // Text dates, well-formed or not (month 13, day 0, a stray byte), with a time
            // after some: the histogram places them by time when its bounds are dates.
            5 if self.byte().is_multiple_of(2) => {
                let (y, m, d) = (
                    2019 + u32::from(self.byte() % 3),
                    self.byte() % 14,
                    self.byte() % 33,
                );
                let mut s = format!("{y:04}-{m:02}-{d:02}");
                match self.byte() % 4 {
                    0 => s.push_str(&format!(" {:02}:00:00", self.byte() % 25)),
                    1 => s.truncate(usize::from(self.byte() % 10)),
                    2 => s.push(char::from(self.byte() % 128)),
                    _ => {}
                }
                Value::Str(s)
            }
            _ => Value::Bool(self.byte().is_multiple_of(2)),
        }
    }
}

const FIELDS: [&str; 4] = ["a", "b", "c", "d"];

/// A `LIKE` pattern of a few pieces: letters, wildcards, an escape, a date's digits.
fn pattern(input: &mut Bytes<'_>) -> String {
    let pieces = ["a", "b", "%", "_", "\\", "2", "-", "0"];
    (0..input.byte() % 5)
        .map(|_| pieces[usize::from(input.byte()) % pieces.len()])
        .collect()
}

fn predicate(input: &mut Bytes<'_>) -> Predicate {
    let field = FIELDS[usize::from(input.byte()) % 4];
    let op = match input.byte() % 13 {
        0 => Op::Eq(input.value()),
        1 => Op::In((0..input.byte() % 5).map(|_| input.value()).collect()),
        2 => Op::Lt(input.value()),
        3 => Op::Le(input.value()),
        4 => Op::Gt(input.value()),
        5 => Op::Ge(input.value()),
        6 => Op::Between(input.value(), input.value()),
        7 => Op::Ne(input.value()),
        8 => Op::IsNotNull,
        9 => Op::NotIn((0..input.byte() % 4).map(|_| input.value()).collect()),
        10 => Op::Like(pattern(input)),
        11 => Op::NotLike(pattern(input)),
        _ => Op::IsNull,
    };
    Predicate::new(field, op)
}

/// A condition nesting `AND` and `OR` up to `depth` deep.
fn condition(input: &mut Bytes<'_>, depth: u8) -> Condition {
    match input.byte() % 4 {
        0 | 1 if depth > 0 => {
            let members = (0..1 + input.byte() % 3)
                .map(|_| condition(input, depth - 1))
                .collect();
            if input.byte().is_multiple_of(2) {
                Condition::Any(members)
            } else {
                Condition::All(members)
            }
        }
        _ => Condition::Is(predicate(input)),
    }
}

/// Whether the executor reads `row` along the ranges `bound` gives (`docs/formats/keys.md`:
/// the key code is order-preserving, so a range holds exactly the values between its ends):
/// each field bound to values holds one of them, the range field after them lies in the
/// range (never NULL: a comparison's range starts after it).
fn read(row: &[Value], bound: &[String], by_field: &selectivity::Constraints<'_>) -> bool {
    for field in bound {
        let v = &row[FIELDS
            .iter()
            .position(|f| f == field)
            .expect("a known field")];
        let Some(c) = by_field.get(field) else {
            return true;
        };
        match c.key_values() {
            Some(values) => {
                if !values.iter().any(|x| x.cmp(v).is_eq()) {
                    return false;
                }
            }
            None => return !v.is_null() && c.in_range(v),
        }
    }
    true
}

/// The rows (by place) a candidate's `access` returns for `query`.
fn run(access: &Access, query: &Query, table: &TableInfo, rows: &[Vec<Value>]) -> Vec<usize> {
    let passes = |row: &Vec<Value>, q: &Query| {
        q.admits(&|f: &str| &row[FIELDS.iter().position(|x| *x == f).unwrap_or(0)])
    };
    let by_field = selectivity::constraints(&query.predicates);
    let bound: &[String] = match access {
        Access::FullScan => &[],
        Access::PrimaryKeyLookup { .. } => &table.primary_key,
        Access::PrimaryKeyRange { bound_fields } | Access::Index { bound_fields, .. } => {
            bound_fields
        }
        Access::Union { parts } => {
            let mut out = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let sub = Query {
                    predicates: part.predicates.clone(),
                    ..query.clone()
                };
                for r in run(&part.access, &sub, table, rows) {
                    let value_of =
                        |f: &str| &rows[r][FIELDS.iter().position(|x| *x == f).unwrap_or(0)];
                    let earlier = parts[..i].iter().any(|p| p.condition.matches(&value_of));
                    if part.condition.matches(&value_of) && !earlier {
                        out.push(r);
                    }
                }
            }
            out.sort_unstable();
            return out;
        }
    };
    (0..rows.len())
        .filter(|&r| read(&rows[r], bound, &by_field) && passes(&rows[r], query))
        .collect()
}

pub fn check(data: &[u8]) {
    if data.first() == Some(&b'{') {
        if let Ok(stats) = TableStats::decode(data) {
            assert!(
                stats.validate().is_ok(),
                "decode accepted invalid statistics"
            );
        }
        return;
    }
    let mut input = Bytes(data);
    let mut stats = TableStats {
        row_count: u64::from(input.byte()) * 1_000 + u64::from(input.byte()),
        avg_row_bytes: f64::from(input.byte()) * 4.0,
        ..TableStats::default()
    };
    for field in FIELDS {
        if input.byte().is_multiple_of(4) {
            continue;
        }
        let null_fraction = input.fraction() / 2.0;
        let mut left = 1.0 - null_fraction;
        // Up to twelve: past eight, a most-common list is searched in value order.
        let mut most_common = Vec::new();
        for _ in 0..input.byte() % 13 {
            let f = input.fraction() * left;
            left -= f;
            most_common.push((input.value(), f));
        }
        // Frequent values past the list: sorted by value and within what is left, or not
        // (`validate` refuses what the estimates cannot use).
        let mut frequent = Vec::new();
        for _ in 0..input.byte() % 4 {
            let f = input.fraction() * left;
            left -= f;
            frequent.push((input.value(), f));
        }
        if input.byte().is_multiple_of(2) {
            frequent.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let bounds: Vec<Value> = (0..input.byte() % 5).map(|_| input.value()).collect();
        let mut sorted = bounds.clone();
        sorted.sort();
        stats.columns.insert(
            field.into(),
            ColumnStats {
                null_fraction,
                distinct: f64::from(input.byte()) * 10.0,
                most_common,
                frequent,
                histogram: strata_planner::sketch::Histogram::from_bounds(sorted)
                    .unwrap_or_default(),
                min: Some(input.value()),
                max: Some(input.value()),
                avg_width: f64::from(input.byte()),
                correlation: f64::from(input.byte()) / 127.5 - 1.0,
                ..ColumnStats::default()
            },
        );
    }
    if input.byte().is_multiple_of(2) {
        let mut group =
            PrefixStats::new(vec!["a".into(), "b".into()], f64::from(input.byte()) * 10.0);
        // A most-common list of combinations, sorted or not, its frequencies in range or
        // not: `validate` refuses what the estimates cannot use.
        for _ in 0..input.byte() % 4 {
            group
                .most_common
                .push((vec![input.value(), input.value()], input.fraction()));
        }
        group.complete = input.byte().is_multiple_of(2);
        stats.prefixes.push(group);
    }
    // A value's frequency is the first listed equal to it, however the list is searched;
    // the copy the planner extends answers the same.
    for c in stats.columns.values() {
        let copy = c.clone();
        let probes = c.most_common.iter().map(|(v, _)| v.clone());
        for v in probes.chain([input.value(), input.value()]) {
            let walked = c.most_common.iter().find(|(m, _)| *m == v).map(|(_, f)| *f);
            assert_eq!(
                c.frequency_of(&v).map(f64::to_bits),
                walked.map(f64::to_bits)
            );
            assert_eq!(
                copy.frequency_of(&v).map(f64::to_bits),
                walked.map(f64::to_bits)
            );
        }
    }
    let stored = stats.encode().expect("statistics encode");
    if stats.validate().is_ok() {
        let back = TableStats::decode(&stored).expect("valid statistics decode");
        assert_eq!(back, stats, "statistics round-trip");
        assert_eq!(back.encode().expect("re-encode"), stored, "bit for bit");
    }
    let projection = |p: u8| match p % 3 {
        0 => Projection::KeysOnly,
        1 => Projection::Include(vec![FIELDS[usize::from(p) % 4].into()]),
        _ => Projection::All,
    };
    let mut indexes = Vec::new();
    for i in 0..input.byte() % 4 {
        let first = FIELDS[usize::from(input.byte()) % 4];
        let second = FIELDS[usize::from(input.byte()) % 4];
        let mut index =
            IndexInfo::new(&format!("i{i}"), &[first, second], projection(input.byte()));
        if input.byte().is_multiple_of(5) {
            index.scope = Scope::Global;
        }
        indexes.push(index);
    }
    let mut table = TableInfo::new("t", &["a"], indexes);
    table.shards = u32::from(input.byte() % 8) + 1;
    let mut query = Query::default();
    for _ in 0..input.byte() % 6 {
        query.predicates.push(predicate(&mut input));
    }
    for _ in 0..input.byte() % 3 {
        query.add_condition(condition(&mut input, 3));
    }
    if input.byte().is_multiple_of(3) {
        let field = FIELDS[usize::from(input.byte()) % 4];
        query = query.order_by([field], input.byte().is_multiple_of(2));
    }
    if input.byte().is_multiple_of(2) {
        query.limit = Some(u64::from(input.byte()));
    }
    if input.byte().is_multiple_of(3) {
        query.projection = Some(vec![FIELDS[usize::from(input.byte()) % 4].into()]);
    }
    let plan = match choose(&query, &table, &stats, &CostModel::default()) {
        Ok(plan) => plan,
        Err(e) => panic!("an unhinted query must plan: {e}"),
    };
    let rows = stats.row_count as f64;
    let within = |x: f64| x.is_finite() && x >= 0.0 && x <= rows + 1e-6;
    for c in &plan.candidates {
        assert!(c.cost.is_finite() && c.cost >= 0.0, "{c:?}");
        assert!(within(c.estimated_rows), "{c:?}");
        if let Access::Union { parts } = &c.access {
            for p in parts {
                assert!(within(p.estimated_rows), "{p:?}");
                assert!(p.cost.is_finite() && p.cost >= 0.0, "{p:?}");
            }
        }
    }
    for e in &plan.estimates {
        assert!(within(e.rows), "{e:?}");
    }
    // Every candidate returns the scan's rows, on rows the statistics need not describe.
    let table_rows: Vec<Vec<Value>> = (0..input.byte() % 24)
        .map(|_| FIELDS.iter().map(|_| input.value()).collect())
        .collect();
    let scanned = run(&Access::FullScan, &query, &table, &table_rows);
    for c in &plan.candidates {
        assert_eq!(
            run(&c.access, &query, &table, &table_rows),
            scanned,
            "{c:?} on {table_rows:?} for {query:?}"
        );
    }
    let least = plan
        .candidates
        .iter()
        .map(|c| c.cost)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(plan.chosen.cost, least);
    let _ = plan.to_string();
}
