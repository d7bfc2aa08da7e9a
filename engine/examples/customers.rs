//! Customers, the Index Table pattern's own example, through the library API.
//!
//! `cargo run -p strata --example customers` (optionally with a directory to keep the
//! database in). It creates a `customers` table keyed by id, index tables by town (carrying
//! the names) and by (town, last name) (carrying everything), and one by gender; loads 20,000
//! generated customers in atomic batches; then asks the planner three questions and prints
//! what it chose and why.

use std::error::Error;

use strata::{Db, Options, Predicate, Projection, Query, TableBatch, WriteOptions, record};

const TOWNS: [&str; 8] = [
    "Redmond", "Seattle", "Bellevue", "Tacoma", "Everett", "Olympia", "Spokane", "Yakima",
];
const LASTS: [&str; 6] = ["Smith", "Jones", "Lee", "Garcia", "Okafor", "Tanaka"];
const FIRSTS: [&str; 5] = ["Ada", "Alan", "Grace", "Edsger", "Barbara"];

fn main() -> Result<(), Box<dyn Error>> {
    // Keep the database where the first argument says, or in a directory removed at the end.
    let scratch = tempfile::tempdir()?;
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| scratch.path().to_path_buf(), Into::into);
    let db = Db::open(&dir, Options::default())?;

    db.create_table("customers", ["id"], strata::TableOptions::default())?;
    let names = Projection::Include(vec!["first".into(), "last".into()]);
    db.create_index("customers", "by_town", ["town"], names)?;
    db.create_index(
        "customers",
        "by_town_last",
        ["town", "last"],
        Projection::All,
    )?;
    db.create_index("customers", "by_gender", ["gender"], Projection::KeysOnly)?;

    // 20,000 rows, 500 to a batch: each batch commits its rows and their index entries
    // atomically. Towns are skewed: Redmond is every other row, Yakima one in 128.
    let mut batch = TableBatch::new();
    for id in 0..20_000i64 {
        let town = TOWNS[(id.trailing_ones() as usize).min(TOWNS.len() - 1)];
        batch.insert(record! {
            "id" => id,
            "first" => FIRSTS[(id % 5) as usize],
            "last" => LASTS[(id / 5 % 6) as usize],
            "town" => town,
            "gender" => if id % 2 == 0 { "F" } else { "M" },
            "balance" => (id * 37 % 10_000) as f64 / 100.0,
        });
        if batch.len() == 500 {
            db.write(
                "customers",
                std::mem::take(&mut batch),
                WriteOptions::default(),
            )?;
        }
    }
    db.write("customers", batch, WriteOptions::synced())?; // the rest, and sync the log
    db.analyze("customers")?; // statistics for the planner (it also gathers them by itself)

    let questions = [
        (
            "names of the customers in a small town",
            Query::default()
                .filter(Predicate::eq("town", "Yakima"))
                .select(["first", "last"]),
        ),
        (
            "everything about the Tanakas of Spokane",
            Query::default()
                .filter(Predicate::eq("town", "Spokane"))
                .filter(Predicate::eq("last", "Tanaka")),
        ),
        (
            "balances of half the customers (the gender index does not pay)",
            Query::default()
                .filter(Predicate::eq("gender", "F"))
                .select(["id", "balance"]),
        ),
    ];
    for (question, query) in questions {
        let plan = db.explain("customers", &query)?;
        let rows = db
            .query("customers", &query)?
            .collect::<Result<Vec<_>, _>>()?;
        println!("{question}: {} rows", rows.len());
        if let Some(first) = rows.first() {
            println!("  first: {first}");
        }
        println!("  {}\n", plan.reason);
    }

    // A point read by primary key, and a delete that removes the row's index entries too.
    if let Some(row) = db.get("customers", &[7.into()])? {
        println!("customer 7: {row}");
    }
    db.delete("customers", &[7.into()])?;
    let report = db.verify("customers")?;
    println!("after deleting it: {report}");
    assert!(report.is_clean());
    db.close()?;
    Ok(())
}
