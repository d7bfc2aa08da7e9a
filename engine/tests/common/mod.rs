//! Helpers shared by the table layer's integration tests: the store's (a seeded random source,
//! a key-value model, small-store options), and random records and queries (`tables`).

#![allow(dead_code, reason = "each test file uses a different subset")]

pub mod bank;
#[path = "../../../lsm/tests/common/mod.rs"]
mod store;
pub mod tables;

pub use store::*;

/// [`sim_options`] as database options.
pub fn sim_db_options(fs: &strata::fs::SimFs) -> strata::Options {
    strata::Options::from(sim_options(fs))
}
