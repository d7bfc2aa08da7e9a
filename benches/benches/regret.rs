//! The regret harness: how much slower the planner's choice runs than the best plan it could
//! have chosen, measured, not asserted.
//!
//! 1. A table of `REGRET_ROWS` rows (default 100,000) with fields of controlled
//!    distributions: `uni` uniform over 10,000 values; `zipf` Zipfian (s = 1.1) over 10,000
//!    ranks; `half` 50/50; `ninety` 90/10; a correlated pair `corr_a` (100 values) and
//!    `corr_b` (determined by `corr_a` up to a 1-in-10 wobble); `ts` an ascending timestamp.
//!    Issue 48's shapes: `day` a date stored as `YYYY-MM-DD` text over seven years;
//!    `tail` a long-tailed field (Zipfian, s = 0.7, over 5,000 values: frequencies fall off
//!    slowly past the most-common list); `amount` a float with a long right tail
//!    (exponential). A keys-only index on each, one composite `(corr_a, corr_b)` index, and
//!    `uni` also with an `Include(pad)` index. The table is analysed at three quarters loaded; the last
//!    quarter's timestamps lie past what the statistics saw (the ascending-key case).
//! 2. About 500 queries from a fixed seed: equalities on common and rare values, ranges of
//!    widths from 0.01 % to 30 % of the rows, conjunctions, and some with `LIMIT`; and issue
//!    48's query shapes: `OR`s (of two indexed fields, rare or common; of two ranges of one
//!    index; with an unindexable member), `LIKE` (a month or ten days of the text date by
//!    prefix, a year, a day of every year by a leading wildcard), `NOT IN` and `!=`, and
//!    `ORDER BY … LIMIT` with a filter on another field (common or rare, ascending or
//!    descending).
//! 3. For each query, every candidate the planner lists is forced with its hint and timed:
//!    one untimed run, then `REGRET_RUNS` runs (default 3) back to back, in the planner's
//!    order and again in reverse; the fastest run is kept (what the plan costs when the
//!    machine does not interfere: a plan run right after a scan is slowed by it). Every candidate
//!    must return the same rows. Regret = the chosen plan's time / the best candidate's.
//! 4. Reported: the geometric mean and the worst regret, per distribution and overall —
//!    with the default cost constants, then again after `Db::calibrate` — and beside them the
//!    estimate's q-error, `max(e, a) / min(e, a)` of the chosen plan's estimated rows `e`
//!    and the rows returned `a` (both at least 1; queries without `LIMIT`): median, p90 and
//!    max. Per-query figures go to `target/regret-<pass>.csv`.
//!
//! `cargo bench -p strata-benches --bench regret` (the targets: geometric mean ≤ 1.10, no
//! query worse than 3×).

use std::collections::BTreeMap;
use std::time::Instant;

use strata::{
    Condition, Db, Hint, Options, Predicate, Projection, Query, Record, TableBatch, Value,
    WriteOptions,
};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Zipfian ranks 1..=n with exponent `s`, by inverse CDF.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n);
        let mut total = 0.0;
        for rank in 1..=n {
            total += 1.0 / (rank as f64).powf(s);
            cdf.push(total);
        }
        cdf.iter_mut().for_each(|c| *c /= total);
        Zipf(cdf)
    }

    fn sample(&self, rng: &mut Rng) -> i64 {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|c| *c < u) as i64 + 1
    }
}

const VALUES: i64 = 10_000;
/// Distinct values of the long-tailed field.
const TAIL_VALUES: i64 = 5_000;

fn row(id: i64, rng: &mut Rng, zipf: &Zipf, tail: &Zipf, pad: &str) -> Record {
    let mut r = Record::new();
    let corr_a = rng.below(100) as i64;
    let wobble = i64::from(rng.below(10) == 0);
    r.set("id", id);
    r.set("uni", rng.below(VALUES as u64) as i64);
    r.set("zipf", zipf.sample(rng));
    r.set("half", if rng.below(2) == 0 { "a" } else { "b" });
    r.set("ninety", if rng.below(10) == 0 { "rare" } else { "common" });
    r.set("corr_a", corr_a);
    r.set("corr_b", corr_a * 10 + wobble);
    r.set("ts", 1_700_000_000 + id * 10);
    r.set("day", text_date(rng.below(DAYS as u64) as i64));
    r.set("tail", tail.sample(rng));
    // Exponential, mean 100: most rows small, a long thin right tail.
    let u = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    r.set("amount", (-100.0 * u.ln() * 100.0).round() / 100.0);
    r.set("pad", pad);
    r
}

/// Days the `day` field spans, from 2018-01-01.
const DAYS: i64 = 7 * 365;

/// Day `n` after 2018-01-01 as `YYYY-MM-DD`.
fn text_date(n: i64) -> String {
    // Howard Hinnant's civil_from_days, from 1970-01-01 (2018-01-01 is day 17,532).
    let z = n + 17_532 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn load(db: &Db, rows: i64) {
    db.create_table("r", ["id"], strata::TableOptions::default())
        .expect("table");
    for (name, fields) in [
        ("by_uni", &["uni"][..]),
        ("by_zipf", &["zipf"]),
        ("by_half", &["half"]),
        ("by_ninety", &["ninety"]),
        ("by_corr", &["corr_a", "corr_b"]),
        ("by_ts", &["ts"]),
        ("by_day", &["day"]),
        ("by_tail", &["tail"]),
        ("by_amount", &["amount"]),
    ] {
        db.create_index("r", name, fields, Projection::KeysOnly)
            .expect("index");
    }
    db.create_index(
        "r",
        "by_uni_pad",
        ["uni"],
        Projection::Include(vec!["pad".into()]),
    )
    .expect("index");
    let mut rng = Rng(0x5EED_1234);
    let zipf = Zipf::new(VALUES as usize, 1.1);
    let tail = Zipf::new(TAIL_VALUES as usize, 0.7);
    let pad = "p".repeat(60);
    let mut batch = TableBatch::new();
    for id in 0..rows {
        batch.insert(row(id, &mut rng, &zipf, &tail, &pad));
        if batch.len() == 10_000 {
            db.write("r", std::mem::take(&mut batch), WriteOptions::default())
                .expect("write");
        }
        if id + 1 == rows * 3 / 4 {
            db.write("r", std::mem::take(&mut batch), WriteOptions::default())
                .expect("write");
            db.analyze("r").expect("analyze");
        }
    }
    db.write("r", batch, WriteOptions::default())
        .expect("write");
}

/// `(distribution, query)` pairs from a fixed seed.
fn queries(rows: i64) -> Vec<(&'static str, Query)> {
    let mut rng = Rng(0xC0FFEE);
    let q = Query::default;
    let mut out = Vec::new();
    for _ in 0..40 {
        out.push((
            "uniform =",
            q().filter(Predicate::eq("uni", rng.below(VALUES as u64) as i64)),
        ));
    }
    for i in 0..40 {
        // Widths from 1 value (0.01 %) to 3,000 (30 %), spread on a log scale.
        let width = (10f64.powf(i as f64 / 39.0 * 3.5)).round() as i64;
        let low = rng.below((VALUES - width).max(1) as u64) as i64;
        out.push((
            "uniform range",
            q().filter(Predicate::between("uni", low, low + width - 1)),
        ));
    }
    for i in 0..40 {
        let rank = if i % 2 == 0 {
            1 + rng.below(20) as i64
        } else {
            1 + rng.below(VALUES as u64) as i64
        };
        out.push(("zipfian =", q().filter(Predicate::eq("zipf", rank))));
    }
    for v in ["a", "b"] {
        for _ in 0..5 {
            out.push(("50/50", q().filter(Predicate::eq("half", v))));
        }
    }
    for v in ["common", "rare"] {
        for _ in 0..10 {
            out.push(("90/10", q().filter(Predicate::eq("ninety", v))));
        }
    }
    for _ in 0..30 {
        let a = rng.below(100) as i64;
        let b = a * 10 + rng.below(3) as i64; // 0 and 1 occur, 2 never does
        out.push((
            "correlated",
            q().filter(Predicate::eq("corr_a", a))
                .filter(Predicate::eq("corr_b", b)),
        ));
    }
    for i in 0..40 {
        // From the start to past the analysed three quarters.
        let at = rows * i / 40 + rng.below((rows / 40).max(1) as u64) as i64;
        out.push((
            "ascending ts >",
            q().filter(Predicate::gt("ts", 1_700_000_000 + at * 10)),
        ));
    }
    for i in 0..30 {
        let width = (10f64.powf(i as f64 / 29.0 * 3.0)).round() as i64;
        let low = rng.below((VALUES - width).max(1) as u64) as i64;
        out.push((
            "conjunction",
            q().filter(Predicate::between("uni", low, low + width - 1))
                .filter(Predicate::eq("half", "a")),
        ));
    }
    for _ in 0..20 {
        let rank = 1 + rng.below(VALUES as u64) as i64;
        out.push((
            "conjunction",
            q().filter(Predicate::eq("zipf", rank))
                .filter(Predicate::eq("ninety", "rare")),
        ));
    }
    for i in 0..20 {
        let base = match i % 4 {
            0 => q().filter(Predicate::eq("half", "a")),
            1 => q().filter(Predicate::eq("zipf", 1 + rng.below(5) as i64)),
            2 => q().filter(Predicate::ge("uni", rng.below(VALUES as u64) as i64)),
            _ => q().filter(Predicate::eq("ninety", "rare")),
        };
        out.push(("limit 10", base.limit(10)));
    }
    for i in 0..30 {
        // Date ranges of 1 to 30 days, and whole months by their prefix.
        let start = rng.below((DAYS - 31) as u64) as i64;
        let q = match i % 3 {
            0 => q().filter(Predicate::eq("day", text_date(start))),
            1 => q().filter(Predicate::between(
                "day",
                text_date(start),
                text_date(start + 1 + (i as i64 % 30)),
            )),
            _ => {
                // `day >= '2021-03' AND day < '2021-04'`: a month, as a prefix.
                let (y, m) = (start / 365, (start % 365) / 31);
                let month = |y: i64, m: i64| format!("{:04}-{:02}", 2018 + y + m / 12, m % 12 + 1);
                q().filter(Predicate::ge("day", month(y, m)))
                    .filter(Predicate::lt("day", month(y, m + 1)))
            }
        };
        out.push(("text date", q));
    }
    for _ in 0..30 {
        // Just past the most-common list and further down the tail.
        let rank = 80 + rng.below(900) as i64;
        out.push(("long tail =", q().filter(Predicate::eq("tail", rank))));
    }
    for i in 0..20 {
        // The tail: above the 90th to the 99.9th percentile (100 · ln 10 .. 100 · ln 1000).
        let at = 100.0 * (10f64.powf(1.0 + 2.0 * i as f64 / 19.0)).ln();
        out.push(("float tail >", q().filter(Predicate::gt("amount", at))));
    }
    for i in 0..30 {
        let (a, b): (Predicate, Predicate) = match i % 5 {
            // Two rare values of two indexed fields: a union of two index reads.
            0 => (
                Predicate::eq("uni", rng.below(VALUES as u64) as i64),
                Predicate::eq("zipf", 1_000 + rng.below(9_000) as i64),
            ),
            // A common value with a rare one: the scan.
            1 => (
                Predicate::eq("half", "a"),
                Predicate::eq("uni", rng.below(VALUES as u64) as i64),
            ),
            // Two ranges of one index.
            2 => {
                let low = rng.below((VALUES / 2) as u64) as i64;
                let high = VALUES / 2 + rng.below((VALUES / 2 - 100) as u64) as i64;
                let width = 1 + i as i64 * 3;
                (
                    Predicate::between("uni", low, low + width),
                    Predicate::between("uni", high, high + width),
                )
            }
            // A text date and a long-tailed value.
            3 => (
                Predicate::eq("day", text_date(rng.below(DAYS as u64) as i64)),
                Predicate::eq("tail", 100 + rng.below(2_000) as i64),
            ),
            // The rare side of 90/10 or a correlated pair.
            _ => (
                Predicate::eq("ninety", "rare"),
                Predicate::eq("corr_a", rng.below(100) as i64),
            ),
        };
        out.push(("or", q().filter_where(Condition::any([a, b]))));
    }
    for i in 0..20 {
        let start = rng.below((DAYS - 400) as u64) as i64;
        let date = text_date(start);
        let pattern = match i % 4 {
            0 => format!("{}%", &date[..7]), // a month
            1 => format!("{}%", &date[..9]), // ten days
            2 => format!("{}%", &date[..4]), // a year
            _ => format!("%{}", &date[4..]), // that day of every year
        };
        out.push(("like", q().filter(Predicate::like("day", &pattern))));
    }
    for i in 0..10 {
        let query = match i % 3 {
            0 => q().filter(Predicate::not_in("ninety", [Value::from("common")])),
            1 => q()
                .filter(Predicate::ne("half", "a"))
                .filter(Predicate::eq("zipf", 1 + rng.below(50) as i64)),
            _ => q().filter(Predicate::not_in(
                "tail",
                (0..5).map(|r| Value::Int(r + 1)).collect::<Vec<_>>(),
            )),
        };
        out.push(("not in / !=", query));
    }
    for i in 0..20 {
        let (filter, order, descending) = match i % 4 {
            // A common filter: read the order's index and stop at the limit.
            0 => (Predicate::eq("half", "a"), "ts", false),
            // A rare filter: read its index and sort the few rows.
            1 => (
                Predicate::eq("zipf", 2_000 + rng.below(8_000) as i64),
                "ts",
                true,
            ),
            2 => (Predicate::eq("ninety", "rare"), "amount", true),
            _ => {
                let low = rng.below((VALUES - 20) as u64) as i64;
                (
                    Predicate::between("uni", low, low + 1 + i as i64),
                    "day",
                    false,
                )
            }
        };
        out.push((
            "order by limit",
            q().filter(filter).order_by([order], descending).limit(10),
        ));
    }
    for _ in 0..20 {
        let low = rng.below((VALUES - 50) as u64) as i64;
        out.push((
            "covering",
            q().filter(Predicate::between("uni", low, low + 49))
                .select(["id", "uni", "pad"]),
        ));
    }
    out
}

fn run(db: &Db, q: &Query) -> (u64, f64) {
    let start = Instant::now();
    let mut n = 0u64;
    for row in db.query("r", q).expect("query") {
        row.expect("row");
        n += 1;
    }
    (n, start.elapsed().as_secs_f64() * 1e6)
}

struct Outcome {
    distribution: &'static str,
    regret: f64,
    chosen: String,
    best: String,
    chosen_us: f64,
    best_us: f64,
    /// The chosen plan's estimate against the rows returned (`None` with `LIMIT`).
    q_error: Option<f64>,
}

/// `max(e, a) / min(e, a)`, both at least 1.
fn q_error(estimated: f64, actual: u64) -> f64 {
    let (e, a) = (estimated.max(1.0), (actual as f64).max(1.0));
    e.max(a) / e.min(a)
}

fn pass(db: &Db, name: &str, queries: &[(&'static str, Query)], runs: usize) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut csv = String::from(
        "distribution,query,chosen,best,chosen_us,best_us,regret,estimated,returned,q_error\n",
    );
    for (distribution, q) in queries {
        let plan = db.explain("r", q).expect("explain");
        let forced: Vec<(String, Query)> = plan
            .candidates
            .iter()
            .filter_map(|c| {
                let hint = match (&c.index, c.plan) {
                    (Some(ix), _) => Hint::Index(ix.clone()),
                    (None, "scan") => Hint::Scan,
                    (None, "union") => Hint::Union,
                    _ => return None,
                };
                let label = c.index.clone().unwrap_or_else(|| c.plan.into());
                Some((label, q.clone().hint(hint)))
            })
            .collect();
        // Each candidate: one untimed run, then its timed runs back to back; all of that
        // twice, in the planner's order and in reverse; the fastest run is kept. A plan run
        // right after a scan runs up to several times slower (the scan's freed memory and
        // evicted caches), and with one order the same plan would always pay for it.
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); forced.len()];
        let mut counts: Vec<u64> = vec![0; forced.len()];
        let order: Vec<usize> = (0..forced.len()).chain((0..forced.len()).rev()).collect();
        for i in order {
            let fq = &forced[i].1;
            run(db, fq);
            for _ in 0..runs {
                let (n, us) = run(db, fq);
                counts[i] = n;
                times[i].push(us);
            }
        }
        if let Some(limit) = q.limit {
            assert!(
                counts.iter().all(|&n| n == counts[0].min(limit)),
                "{q:?}: {counts:?}"
            );
        } else {
            assert!(counts.iter().all(|&n| n == counts[0]), "{q:?}: {counts:?}");
        }
        let fastest: Vec<f64> = times
            .into_iter()
            .map(|t| t.into_iter().fold(f64::INFINITY, f64::min))
            .collect();
        let chosen_label = (plan.chosen.index.clone()).unwrap_or_else(|| plan.chosen.plan.into());
        let Some(chosen) = forced.iter().position(|(l, _)| *l == chosen_label) else {
            continue;
        };
        let best = (0..fastest.len())
            .min_by(|&a, &b| fastest[a].total_cmp(&fastest[b]))
            .unwrap_or(chosen);
        let outcome = Outcome {
            distribution,
            regret: fastest[chosen] / fastest[best].max(1e-3),
            chosen: chosen_label,
            best: forced[best].0.clone(),
            chosen_us: fastest[chosen],
            best_us: fastest[best],
            q_error: q
                .limit
                .is_none()
                .then(|| q_error(plan.chosen.estimated_rows, counts[chosen])),
        };
        csv.push_str(&format!(
            "{},\"{}\",{},{},{:.1},{:.1},{:.3},{:.1},{},{:.2}\n",
            outcome.distribution,
            format!(
                "{}{}",
                q.condition(),
                q.order.as_ref().map_or(String::new(), |o| format!(
                    " ORDER BY {}{}",
                    o.fields.join(", "),
                    if o.descending { " DESC" } else { "" }
                ))
            )
            .replace('"', "'"),
            outcome.chosen,
            outcome.best,
            outcome.chosen_us,
            outcome.best_us,
            outcome.regret,
            plan.chosen.estimated_rows,
            counts[chosen],
            outcome.q_error.unwrap_or(f64::NAN),
        ));
        outcomes.push(outcome);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join(format!("regret-{name}.csv"));
    let _ = std::fs::write(&path, csv);
    outcomes
}

fn geomean(xs: impl Iterator<Item = f64>) -> (f64, usize) {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    ((sum / n.max(1) as f64).exp(), n)
}

/// `median | p90 | max` of the q-errors, for a table row (`- | - | -` with none).
fn quantiles(xs: impl Iterator<Item = f64>) -> String {
    let mut xs: Vec<f64> = xs.collect();
    if xs.is_empty() {
        return "- | - | -".into();
    }
    xs.sort_by(f64::total_cmp);
    let at = |p: f64| xs[((xs.len() - 1) as f64 * p).round() as usize];
    format!("{:.2} | {:.2} | {:.1}", at(0.5), at(0.9), at(1.0))
}

fn report(name: &str, outcomes: &[Outcome]) {
    println!("\n## {name}\n");
    println!(
        "| distribution | queries | geometric mean | worst | chosen = best | q-error median | p90 | max |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut by: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        by.entry(o.distribution).or_default().push(o);
    }
    for (d, os) in &by {
        let (g, n) = geomean(os.iter().map(|o| o.regret));
        let worst = os.iter().map(|o| o.regret).fold(1.0, f64::max);
        let same = os.iter().filter(|o| o.chosen == o.best).count();
        let q = quantiles(os.iter().filter_map(|o| o.q_error));
        println!("| {d} | {n} | {g:.3} | {worst:.2} | {same} | {q} |");
    }
    let (g, n) = geomean(outcomes.iter().map(|o| o.regret));
    let worst = outcomes
        .iter()
        .max_by(|a, b| a.regret.total_cmp(&b.regret))
        .expect("queries");
    let same = outcomes.iter().filter(|o| o.chosen == o.best).count();
    let q = quantiles(outcomes.iter().filter_map(|o| o.q_error));
    println!(
        "| **all** | {n} | **{g:.3}** | **{:.2}** | {same} | {q} |",
        worst.regret
    );
    println!(
        "\nworst: {} — chose {} ({:.0} µs), best {} ({:.0} µs)",
        worst.distribution, worst.chosen, worst.chosen_us, worst.best, worst.best_us
    );
    let over = |x: f64| outcomes.iter().filter(|o| o.regret > x).count();
    println!(
        "queries over 1.5×: {}, over 2×: {}, over 3×: {}",
        over(1.5),
        over(2.0),
        over(3.0)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument other than "regret" skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"regret".contains(a.as_str()))
    {
        return;
    }
    let rows = env("REGRET_ROWS", 100_000) as i64;
    let runs = env("REGRET_RUNS", 3) as usize;
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(
        dir.path(),
        Options {
            auto_analyze: false,
            ..Options::default()
        },
    )
    .expect("open");
    let started = Instant::now();
    load(&db, rows);
    println!(
        "loaded {rows} rows in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let queries = queries(rows);

    let outcomes = pass(&db, "default", &queries, runs);
    report("default cost constants", &outcomes);

    let started = Instant::now();
    let model = db.calibrate().expect("calibrate");
    println!(
        "\ncalibrated in {:.1} s: {model:?}",
        started.elapsed().as_secs_f64()
    );
    let outcomes = pass(&db, "calibrated", &queries, runs);
    report("calibrated cost constants", &outcomes);
}
