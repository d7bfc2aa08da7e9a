//! Sketches: small summaries of a column, built in one pass and mergeable where the
//! mathematics allows, so per-shard or per-table-file statistics combine.
//!
//! | sketch | answers | merge |
//! |---|---|---|
//! | [`HyperLogLog`] | distinct count, ±1.6 % (one standard error) | exact: register-wise max |
//! | [`HeavyHitters`] | the most common values and their counts | Misra–Gries merge; errors add |
//! | [`Reservoir`] | a uniform sample (for histograms) | weighted by how many rows each saw |
//! | [`Histogram`] | the spread of the values that are not most common | rebuilt from a merged sample |

mod heavy;
mod histogram;
mod hll;
mod interpolate;
mod reservoir;

pub use heavy::HeavyHitters;
pub use histogram::Histogram;
pub use hll::HyperLogLog;
pub use reservoir::Reservoir;
