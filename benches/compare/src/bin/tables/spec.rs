//! The tables both engines load: where their CSV is, their columns as SQLite declares them,
//! their primary key, and their indexes.

use std::path::{Path, PathBuf};

use crate::data;
use crate::tpch;

/// An index: its name, its fields, the fields a covering index carries besides.
pub type IndexSpec = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// A table both engines load from the same CSV file.
pub struct TableSpec {
    pub name: &'static str,
    pub csv: PathBuf,
    pub rows: u64,
    /// The column list of SQLite's `CREATE TABLE` (types and primary key).
    pub sql_columns: &'static str,
    pub key: &'static [&'static str],
    /// Keys-only indexes that exist before the import.
    pub import_indexes: Vec<(&'static str, &'static [&'static str])>,
    /// Indexes created after the import, before `analyze`.
    pub query_indexes: Vec<IndexSpec>,
}

pub const CUSTOMERS_SQL: &str = "customer_id INTEGER PRIMARY KEY, first_name TEXT, \
     last_name TEXT, home_town TEXT, account_status TEXT, age_years INTEGER, group_id INTEGER, \
     credit_score INTEGER, account_balance REAL, phone_number TEXT, referrer_id INTEGER, \
     email_address TEXT, signup_date TEXT, notes TEXT";

/// The three tables: customers (generated here), lineitem and orders (TPC-H's generator).
pub fn tables(
    customers_csv: &Path,
    customers: u64,
    dir: &Path,
    sf: f64,
    tpch: &tpch::TpchData,
) -> Vec<TableSpec> {
    let (lineitem, orders) = tpch::csv_paths(dir, sf);
    vec![
        TableSpec {
            name: "customers",
            csv: customers_csv.to_path_buf(),
            rows: customers,
            sql_columns: CUSTOMERS_SQL,
            key: &["customer_id"],
            import_indexes: data::IMPORT_INDEXES.to_vec(),
            query_indexes: data::QUERY_INDEXES.to_vec(),
        },
        TableSpec {
            name: "lineitem",
            csv: lineitem,
            rows: tpch.lineitem_rows,
            sql_columns: tpch::LINEITEM_SQL,
            key: tpch::LINEITEM_KEY,
            import_indexes: tpch::LINEITEM_IMPORT_INDEXES.to_vec(),
            query_indexes: tpch::LINEITEM_QUERY_INDEXES.to_vec(),
        },
        TableSpec {
            name: "orders",
            csv: orders,
            rows: tpch.orders_rows,
            sql_columns: tpch::ORDERS_SQL,
            key: tpch::ORDERS_KEY,
            import_indexes: tpch::ORDERS_IMPORT_INDEXES.to_vec(),
            query_indexes: tpch::ORDERS_QUERY_INDEXES.to_vec(),
        },
    ]
}
