//! The statistics room: what the planner is told about a table, and how it is kept.
//!
//! - [`sketch`]: each fact table file's statistics sketch (collected by the store as it
//!   writes the file) and a table's live files' sketches merged.
//! - `correlation`: how closely an index's order follows the table's.
//! - `advice`: what each index earned and cost (`Usage`, `IndexUsage`) and the advice drawn
//!   from it (the report itself is `Db::index_advice`, in the `tune` room).
//! - `planning`: what planning needs of one published definition and its statistics.
//! - `order`: the order of a table's analyses (an older one finishing last is not stored).
//!
//! Uses the `codec` and `catalog` rooms; never the open database (the `db` room holds these
//! parts, so they cannot name it).

pub(crate) mod advice;
pub(crate) mod correlation;
pub(crate) mod order;
pub(crate) mod planning;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod sketch;
