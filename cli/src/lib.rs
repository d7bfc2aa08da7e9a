//! The pieces of the `strata` command, as a library: the `--where` language ([`expr`]), the
//! CSV and JSON-lines importer ([`import`]), the row and plan printers ([`output`]), the
//! demo ([`demo`]), the log dump ([`wal`]) and the way to the SQL shell ([`sql`]). The comparison harness imports through
//! [`import::import`], so its figures are the command's.

pub mod demo;
pub mod expr;
pub mod import;
pub mod ops;
pub mod output;
pub mod sql;
pub mod wal;
