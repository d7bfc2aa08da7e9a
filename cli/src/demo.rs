//! `strata demo`: the Index Table pattern's own examples, from generated data, with the
//! planner choosing a plan for each query.
//!
//! - `customers`, keyed by `id`, with index tables by `town` and by `(town, last)`, each in
//!   all three projections (keys only, `Include`, `All`), one by `gender` (50/50) and one by
//!   `status` (96 % `active`). Towns and last names are skewed (Zipf-like), as real ones are.
//! - `movies`, keyed by `(genre, title)` so a genre is a range of the primary key, with an
//!   index table by `actor`.
//!
//! Each query is run through `explain_analyze`: the plan, its estimate, what it returned
//! and the cost of the plans it beat. The data is generated from a fixed seed, so two runs
//! build the same tables.

use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use strata::Access;
use strata::{
    Db, Options, Plan, Predicate, Projection, Query, Record, TableBatch, Value, WriteOptions,
};

/// Customers the demo generates by default (about 15 s in all on a 2-core machine).
pub const DEFAULT_ROWS: u64 = 250_000;

/// Why the demo stopped.
#[derive(Debug)]
pub enum DemoError {
    /// The engine refused something.
    Engine(strata::Error),
    /// The output or the directory failed.
    Io(io::Error),
    /// The arguments are unusable.
    Usage(String),
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DemoError::Engine(e) => write!(f, "{e}"),
            DemoError::Io(e) => write!(f, "{e}"),
            DemoError::Usage(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<strata::Error> for DemoError {
    fn from(e: strata::Error) -> Self {
        DemoError::Engine(e)
    }
}

impl From<io::Error> for DemoError {
    fn from(e: io::Error) -> Self {
        DemoError::Io(e)
    }
}

/// SplitMix64: a small, fixed generator, so every run builds the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Draws indexes `0..n` with probability proportional to `1 / (rank + 1)^s`.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
        let mut total = 0.0;
        let cumulative = (0..n)
            .map(|k| {
                total += 1.0 / ((k + 1) as f64).powf(s);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    fn draw(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.unit() * total;
        self.cumulative
            .partition_point(|c| *c < x)
            .min(self.cumulative.len().saturating_sub(1))
    }
}

const FIRST: [&str; 24] = [
    "Ada",
    "Alan",
    "Barbara",
    "Claude",
    "Dennis",
    "Donald",
    "Edsger",
    "Frances",
    "Grace",
    "Guido",
    "Ivan",
    "John",
    "Ken",
    "Leslie",
    "Linus",
    "Margaret",
    "Niklaus",
    "Radia",
    "Robin",
    "Shafi",
    "Sophie",
    "Tony",
    "Whitfield",
    "Yukihiro",
];

const LAST: [&str; 40] = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Martinez",
    "Lopez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee",
    "Perez", "Thompson", "White", "Harris", "Clark", "Lewis", "Robinson", "Walker", "Young",
    "Allen", "King", "Wright", "Scott", "Nguyen", "Hill", "Green", "Adams", "Baker", "Hall",
    "Rivera", "Campbell", "Knuth",
];

const TOWN_START: [&str; 20] = [
    "Ash", "Brook", "Cedar", "Clear", "Deer", "Elm", "Fair", "Glen", "Green", "High", "Lake",
    "Maple", "Mill", "Oak", "River", "Rock", "Spring", "Stone", "West", "Wolf",
];

const TOWN_END: [&str; 15] = [
    "ford", "field", "ton", "wood", "dale", "view", "port", "ville", "haven", "mont", "side",
    "bury", "wick", "ridge", "moor",
];

/// The actor whose films the demo asks for (Grace Knuth).
const FAMOUS_ACTOR: u64 = 8 + 24 * 39;

const GENRES: [&str; 10] = [
    "drama",
    "comedy",
    "thriller",
    "documentary",
    "romance",
    "horror",
    "animation",
    "western",
    "noir",
    "musical",
];

/// The `i`-th town, most common first.
fn town(i: usize) -> String {
    format!(
        "{}{}",
        TOWN_START[i % TOWN_START.len()],
        TOWN_END[(i / TOWN_START.len()) % TOWN_END.len()]
    )
}

/// Towns there are.
const TOWNS: usize = TOWN_START.len() * TOWN_END.len();

fn customer(id: u64, rng: &mut Rng, towns: &Zipf, lasts: &Zipf) -> Record {
    let mut r = Record::new();
    let first = FIRST[rng.below(FIRST.len() as u64) as usize];
    let last = LAST[lasts.draw(rng)];
    r.set("id", id as i64);
    r.set("first", first);
    r.set("last", last);
    r.set("town", town(towns.draw(rng)));
    r.set("gender", if rng.below(2) == 0 { "F" } else { "M" });
    let status = match rng.below(100) {
        0 => "closed",
        1..=3 => "suspended",
        _ => "active",
    };
    r.set("status", status);
    r.set("age", 18 + rng.below(70) as i64);
    r.set(
        "email",
        format!(
            "{}.{}{}@example.com",
            first.to_lowercase(),
            last.to_lowercase(),
            id
        ),
    );
    r.set("balance", (rng.below(10_000_000) as f64) / 100.0);
    r
}

/// The `a`-th actor's name: a first and a last name, numbered when the pairs run out.
fn actor(a: u64) -> String {
    let pairs = (FIRST.len() * LAST.len()) as u64;
    let name = format!(
        "{} {}",
        FIRST[(a % FIRST.len() as u64) as usize],
        LAST[((a / FIRST.len() as u64) % LAST.len() as u64) as usize]
    );
    match a / pairs {
        0 => name,
        n => format!("{name} {}", n + 1),
    }
}

/// Movie `n` of `rows`: titles are numbered, years ascend with `n` from 1950 to 2025.
fn movie(n: u64, rows: u64, rng: &mut Rng, genres: &Zipf, actors: u64) -> Record {
    let mut r = Record::new();
    r.set("genre", GENRES[genres.draw(rng)]);
    r.set("title", format!("Movie {n:06}"));
    r.set(
        "year",
        (1950 + n * 75 / rows.max(1) + rng.below(2)).min(2025) as i64,
    );
    r.set("actor", actor(rng.below(actors)));
    r.set("rating", 1.0 + rng.below(90) as f64 / 10.0);
    r
}

/// Writes `rows` records from `make` in batches of 1,000, then reports the rate.
fn load(
    db: &Db,
    table: &str,
    rows: u64,
    mut make: impl FnMut(u64) -> Record,
    out: &mut impl Write,
) -> Result<(), DemoError> {
    write!(out, "loading {rows} {table} ... ")?;
    out.flush()?;
    let start = Instant::now();
    let mut batch = TableBatch::new();
    for i in 1..=rows {
        batch.insert(make(i));
        if batch.len() == 1000 || i == rows {
            db.write(table, std::mem::take(&mut batch), WriteOptions::default())?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "{secs:.1} s ({:.0} rows/s, every index maintained in the row's batch)",
        rows as f64 / secs.max(1e-9)
    )?;
    Ok(())
}

/// Builds both tables and runs the queries, printing to `out`. `dir`: keep the database
/// there (it must not hold these tables yet); `None`: a temporary directory.
pub fn run(dir: Option<&Path>, rows: u64, out: &mut impl Write) -> Result<(), DemoError> {
    if rows < 1000 {
        return Err(DemoError::Usage(
            "--rows must be at least 1000 (the demo needs rare and common values)".into(),
        ));
    }
    let scratch;
    let path = match dir {
        Some(d) => d.to_path_buf(),
        None => {
            scratch = tempfile::Builder::new().prefix("strata-demo").tempdir()?;
            scratch.path().to_path_buf()
        }
    };
    let db = Db::open(&path, Options::default())?;
    if db
        .tables()
        .iter()
        .any(|t| t.name == "customers" || t.name == "movies")
    {
        return Err(DemoError::Usage(format!(
            "{} already holds the demo's tables; give --dir an empty directory",
            path.display()
        )));
    }
    let start = Instant::now();
    writeln!(
        out,
        "Strata demo: the Index Table pattern with a cost-based planner"
    )?;
    writeln!(out, "database: {}\n", path.display())?;

    build_customers(&db, rows, out)?;
    build_movies(&db, (rows / 4).max(1000), out)?;
    writeln!(out)?;
    customer_queries(&db, out)?;
    movie_queries(&db, out)?;

    writeln!(out, "\ndone in {:.1} s.", start.elapsed().as_secs_f64())?;
    if let Some(d) = dir {
        writeln!(
            out,
            "The database is kept in {0}. Try:\n  \
             strata --db {0} query customers --where \"town = '{1}' AND last = 'Smith'\" --explain\n  \
             strata --db {0} query movies --where \"actor = '{2}'\" --select title,year",
            d.display(),
            town(0),
            actor(FAMOUS_ACTOR)
        )?;
    }
    db.close()?;
    Ok(())
}

fn build_customers(db: &Db, rows: u64, out: &mut impl Write) -> Result<(), DemoError> {
    db.create_table("customers", ["id"], strata::TableOptions::default())?;
    let inc = |fields: &[&str]| Projection::Include(fields.iter().map(|f| (*f).into()).collect());
    let indexes: [(&str, &[&str], Projection); 8] = [
        ("by_town", &["town"], Projection::KeysOnly),
        ("by_town_names", &["town"], inc(&["first", "last"])),
        ("by_town_all", &["town"], Projection::All),
        ("by_town_last", &["town", "last"], Projection::KeysOnly),
        ("by_town_last_first", &["town", "last"], inc(&["first"])),
        ("by_town_last_all", &["town", "last"], Projection::All),
        ("by_gender", &["gender"], Projection::KeysOnly),
        ("by_status", &["status"], Projection::KeysOnly),
    ];
    writeln!(
        out,
        "table customers, key (id), {} index tables:",
        indexes.len()
    )?;
    for (name, fields, projection) in indexes {
        db.create_index("customers", name, fields, projection.clone())?;
        writeln!(
            out,
            "  {name:<20} on ({}), {}",
            fields.join(", "),
            projection_text(&projection)
        )?;
    }
    let mut rng = Rng(0x5EED);
    let towns = Zipf::new(TOWNS, 1.1);
    let lasts = Zipf::new(LAST.len(), 0.9);
    load(
        db,
        "customers",
        rows,
        |id| customer(id, &mut rng, &towns, &lasts),
        out,
    )?;
    let analyzed = Instant::now();
    db.analyze("customers")?;
    writeln!(
        out,
        "analyze customers: {:.2} s",
        analyzed.elapsed().as_secs_f64()
    )?;
    Ok(())
}

fn build_movies(db: &Db, rows: u64, out: &mut impl Write) -> Result<(), DemoError> {
    writeln!(
        out,
        "\ntable movies, key (genre, title): a genre is a range of the key;\n  \
         by_actor             on (actor), include year"
    )?;
    db.create_table(
        "movies",
        ["genre", "title"],
        strata::TableOptions::default(),
    )?;
    db.create_index(
        "movies",
        "by_actor",
        ["actor"],
        Projection::Include(vec!["year".into()]),
    )?;
    let mut rng = Rng(0xF11);
    let genres = Zipf::new(GENRES.len(), 1.0);
    let actors = (rows / 8).max(FIRST.len() as u64 * LAST.len() as u64);
    load(
        db,
        "movies",
        rows,
        |n| movie(n, rows, &mut rng, &genres, actors),
        out,
    )?;
    db.analyze("movies")?;
    Ok(())
}

fn projection_text(p: &Projection) -> String {
    match p {
        Projection::KeysOnly => "keys only".into(),
        Projection::Include(fields) => format!("include {}", fields.join(", ")),
        Projection::All => "all fields".into(),
    }
}

/// One query: what it asks, the plan chosen and why, the estimate against the rows returned.
fn show(
    db: &Db,
    table: &str,
    title: &str,
    query: &Query,
    out: &mut impl Write,
) -> Result<Plan, DemoError> {
    let a = db.explain_analyze(table, query)?;
    let plan = &a.plan;
    let select = query
        .projection
        .as_ref()
        .map_or("*".to_owned(), |f| f.join(", "));
    let conditions: Vec<String> = query
        .predicates
        .iter()
        .map(ToString::to_string)
        .chain(query.conditions.iter().map(|c| format!("({c})")))
        .collect();
    writeln!(out, "{title}")?;
    writeln!(
        out,
        "  SELECT {select} FROM {table} WHERE {}",
        conditions.join(" AND ")
    )?;
    let chosen = &plan.chosen;
    let how = match &chosen.access {
        Access::FullScan => "full scan".to_owned(),
        Access::PrimaryKeyLookup { .. } => "primary-key lookup".to_owned(),
        Access::PrimaryKeyRange { bound_fields } => {
            format!("primary-key range on ({})", bound_fields.join(", "))
        }
        Access::Index {
            index, covering, ..
        } => format!(
            "index {index} ({})",
            if *covering {
                "covering: no fetches"
            } else {
                "then fetch each row"
            }
        ),
        Access::Union { parts } => format!("a union of {} index or key reads", parts.len()),
    };
    // The estimate is of the rows that match; a LIMIT stops the query before them.
    let limited = match query.limit {
        Some(limit) => format!(" (matching; LIMIT {limit})"),
        None => String::new(),
    };
    writeln!(
        out,
        "  -> {how}: estimated {} rows{limited}, returned {}, in {:.2} ms",
        strata::RowCount(chosen.estimated_rows),
        a.actual.rows_returned,
        a.total_time.as_secs_f64() * 1e3
    )?;
    let others: Vec<String> = plan
        .candidates
        .iter()
        .filter(|c| c.access != chosen.access)
        .take(3)
        .map(|c| {
            let name = c.index.clone().unwrap_or_else(|| c.plan.replace('_', " "));
            format!("{name} {}", cost(c.cost))
        })
        .collect();
    writeln!(
        out,
        "     cost {} against {}\n",
        cost(chosen.cost),
        if others.is_empty() {
            "no other plan".to_owned()
        } else {
            others.join(", ")
        }
    )?;
    Ok(a.plan)
}

/// A cost in microseconds, readable.
fn cost(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

fn customer_queries(db: &Db, out: &mut impl Write) -> Result<(), DemoError> {
    let common = town(0);
    let rare = town(TOWNS - 1);
    writeln!(
        out,
        "Three projections of one index, each chosen when it covers the query:\n"
    )?;
    let by_town = |select: Option<&[&str]>| {
        let q = Query::default().filter(Predicate::eq("town", rare.as_str()));
        match select {
            Some(fields) => q.select(fields),
            None => q,
        }
    };
    show(
        db,
        "customers",
        "ids of the customers in a small town",
        &by_town(Some(&["id"])),
        out,
    )?;
    show(
        db,
        "customers",
        "their names",
        &by_town(Some(&["first", "last"])),
        out,
    )?;
    show(db, "customers", "their whole records", &by_town(None), out)?;
    show(
        db,
        "customers",
        "a composite index: town and last name",
        &Query::default()
            .filter(Predicate::eq("town", common.as_str()))
            .filter(Predicate::eq("last", "Knuth"))
            .select(["id", "first"]),
        out,
    )?;

    writeln!(out, "Low selectivity: the planner refuses the index\n")?;
    let gender = show(
        db,
        "customers",
        "a 50/50 field (an index on gender exists)",
        &Query::default()
            .filter(Predicate::eq("gender", "F"))
            .select(["id", "email"]),
        out,
    )?;
    writeln!(out, "  the whole explain:")?;
    for line in gender.to_string().lines() {
        writeln!(out, "  | {line}")?;
    }
    writeln!(out)?;

    writeln!(
        out,
        "Skew: one index, two plans, depending on the value's frequency\n"
    )?;
    show(
        db,
        "customers",
        "the common value (96 % of rows)",
        &Query::default()
            .filter(Predicate::eq("status", "active"))
            .select(["id", "email"]),
        out,
    )?;
    show(
        db,
        "customers",
        "a rare value (1 % of rows)",
        &Query::default()
            .filter(Predicate::eq("status", "closed"))
            .select(["id", "email"]),
        out,
    )?;
    show(
        db,
        "customers",
        "a common town (the most frequent of 300)",
        &Query::default()
            .filter(Predicate::eq("town", common.as_str()))
            .select(["id", "email", "age"]),
        out,
    )?;
    Ok(())
}

fn movie_queries(db: &Db, out: &mut impl Write) -> Result<(), DemoError> {
    writeln!(out, "Movies: the key's own order, an index, and no index\n")?;
    show(
        db,
        "movies",
        "one genre: a range of the primary key",
        &Query::default()
            .filter(Predicate::eq("genre", "noir"))
            .select(["title", "year"])
            .limit(5),
        out,
    )?;
    show(
        db,
        "movies",
        "one actor's films: the actor index, with year included",
        &Query::default()
            .filter(Predicate::eq("actor", actor(FAMOUS_ACTOR).as_str()))
            .select(["title", "year"]),
        out,
    )?;
    show(
        db,
        "movies",
        "well-rated recent films: no index on either field",
        &Query::default()
            .filter(Predicate::ge("year", Value::Int(2020)))
            .filter(Predicate::ge("rating", 9.5)),
        out,
    )?;
    Ok(())
}
