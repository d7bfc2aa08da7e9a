//! The index advisor: what each index costs and what it earns, and which ones do not pay
//! for themselves (the Index Table pattern's "don't create speculative indexes").
//!
//! Counted in memory since open, per index:
//! - **earned**, for each query run (`Db::query`, `Db::explain_analyze`) without a hint: whether
//!   the planner chose the index or it was a candidate and lost, the rows it saved against a
//!   full scan (the scan's rows less the index's entries, as estimated), and for a chosen
//!   plan that fetches, the fetches and which fields the query needed that the entries lack;
//! - **cost**, for each write: the index entries written or deleted, their bytes, and the time
//!   spent computing them.
//!
//! `Db::index_advice` (in the `tune` room) reports the counts with a note for each finding:
//! - [`Note::NeverChosen`]: a candidate at least [`MIN_CANDIDACIES`] times, never chosen;
//! - [`Note::NeverACandidate`]: the table ran at least [`MIN_CANDIDACIES`] queries and none
//!   bound the index's leading field;
//! - [`Note::TooFewDistinct`]: even the leading field's rarest known value is too common
//!   for an index lookup to beat a scan (the break-even fraction comes from the cost model);
//! - [`Note::IncludeWouldPay`]: the chosen plans fetched records at least
//!   [`MIN_FETCHING_PLANS`] times for a few fields the entries could carry.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use strata_planner::{Access, Fetch, Plan, Projection, Query};

use crate::table::catalog::{IndexDef, TableDef};

/// Candidacies (or queries on the table) before an index that never won is reported.
pub const MIN_CANDIDACIES: u64 = 20;

/// Chosen plans that fetched before `Include` is suggested.
pub const MIN_FETCHING_PLANS: u64 = 10;

/// Most fields an `Include` suggestion names; beyond, the entries would be most of the row.
pub const MAX_INCLUDE_FIELDS: usize = 4;

/// What one index earned and cost since open.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexUsage {
    /// Queries whose plan was this index.
    pub chosen: u64,
    /// Queries where it was a candidate and another plan won.
    pub lost: u64,
    /// Rows the chosen plans did not read that a full scan would have (estimated).
    pub rows_saved: f64,
    /// Records the chosen plans fetched after reading the index.
    pub fetches: u64,
    /// Chosen plans that fetched.
    pub fetching_plans: u64,
    /// Per field the entries lack: how many fetching plans needed it.
    pub fetched_for: BTreeMap<String, u64>,
    /// Fetching plans that needed every field (no projection).
    pub fetched_whole: u64,
    /// Index entries put or deleted by writes.
    pub entries_written: u64,
    /// Their bytes (keys and values).
    pub bytes_written: u64,
    /// Time spent computing them.
    pub maintenance: Duration,
}

/// A finding about an index.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// A candidate this many times, never chosen.
    NeverChosen {
        /// Times it was a candidate.
        candidacies: u64,
    },
    /// No query bound its leading field, out of this many on the table.
    NeverACandidate {
        /// Queries run on the table.
        queries: u64,
    },
    /// Its leading field's rarest known value is too common for an index to beat a scan.
    TooFewDistinct {
        /// The field.
        field: String,
        /// Its distinct values.
        distinct: f64,
        /// The rarest known value's fraction of the rows.
        rarest: f64,
        /// The fraction below which an index lookup beats a scan.
        break_even: f64,
    },
    /// Chosen plans fetched records for these fields; `Include`-ing them would save the
    /// fetches.
    IncludeWouldPay {
        /// The fields to include.
        fields: Vec<String>,
        /// Fetches they would have saved so far.
        fetches: u64,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::NeverChosen { candidacies } => write!(
                f,
                "never worth using: a candidate in {candidacies} queries and never chosen; \
                 consider dropping it"
            ),
            Note::NeverACandidate { queries } => write!(
                f,
                "unused: none of the table's {queries} queries bound its leading field; \
                 consider dropping it"
            ),
            Note::TooFewDistinct {
                field,
                distinct,
                rarest,
                break_even,
            } => write!(
                f,
                "{field} has too few distinct values to be worth indexing: {distinct:.0} \
                 values, the rarest on {:.2} % of rows, and a lookup beats a scan only under \
                 {:.2} %",
                rarest * 100.0,
                break_even * 100.0
            ),
            Note::IncludeWouldPay { fields, fetches } => write!(
                f,
                "reads through it fetched {fetches} records for {}; Include({}) would serve \
                 them from the index",
                fields.join(", "),
                fields.join(", ")
            ),
        }
    }
}

/// One index's report.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexAdvice {
    /// The table.
    pub table: String,
    /// The index.
    pub index: String,
    /// What it earned and cost since open.
    pub usage: IndexUsage,
    /// Findings; empty when the index pays for itself as far as the counts tell.
    pub notes: Vec<Note>,
}

/// The counters of one table, kept across its republished definitions.
#[derive(Default)]
pub(crate) struct Usage {
    pub(crate) queries: AtomicU64,
    /// By index id.
    indexes: Mutex<HashMap<u64, IndexUsage>>,
}

impl Usage {
    pub(crate) fn with<R>(&self, index: u64, f: impl FnOnce(&mut IndexUsage) -> R) -> R {
        let mut indexes = self.indexes.lock().unwrap_or_else(|p| p.into_inner());
        f(indexes.entry(index).or_default())
    }

    /// Counts one write's entries for `index`.
    pub(crate) fn maintained(&self, index: u64, entries: u64, bytes: u64, spent: Duration) {
        self.with(index, |u| {
            u.entries_written += entries;
            u.bytes_written += bytes;
            u.maintenance += spent;
        });
    }

    /// Counts one query's plan. Hinted plans are not the planner's choice: only the query
    /// is counted. Every count under one lock, and a field's name copied only the first
    /// time it is counted (a lock per candidate and a string per projected field were ~5,000
    /// instructions of a 30-row index query, callgrind).
    pub(crate) fn planned(&self, def: &TableDef, query: &Query, plan: &Plan) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        if query.hint.is_some() {
            return;
        }
        let scan_rows = plan
            .candidates
            .iter()
            .find(|c| c.plan == "scan")
            .map_or(0.0, |c| c.rows_read);
        let union = matches!(plan.chosen.access, Access::Union { .. });
        if !union && plan.candidates.iter().all(|c| c.index.is_none()) {
            // No index to count (a point lookup's plan, a scan): no lock taken.
            return;
        }
        let mut indexes = self.indexes.lock().unwrap_or_else(|p| p.into_inner());
        for c in &plan.candidates {
            let Some(name) = &c.index else { continue };
            let Some(ix) = def.indexes.iter().find(|i| &i.name == name) else {
                continue;
            };
            let u = indexes.entry(ix.id).or_default();
            if c != &plan.chosen {
                u.lost += 1;
                continue;
            }
            u.chosen += 1;
            u.rows_saved += (scan_rows - c.rows_read).max(0.0);
            if let Access::Index {
                covering: false,
                fetch,
                ..
            } = &c.access
                && *fetch != Fetch::None
            {
                u.fetching_plans += 1;
                u.fetches += c.estimated_rows.max(0.0).round() as u64;
                match &query.projection {
                    None => u.fetched_whole += 1,
                    Some(fields) => {
                        for f in missing_fields(def, ix, query, fields) {
                            match u.fetched_for.get_mut(f) {
                                Some(n) => *n += 1,
                                None => {
                                    u.fetched_for.insert(f.to_owned(), 1);
                                }
                            }
                        }
                    }
                }
            }
        }
        // A union reads each of its parts' indexes: each was chosen.
        if let Access::Union { parts } = &plan.chosen.access {
            for part in parts {
                let Some(name) = &part.index else { continue };
                if let Some(ix) = def.indexes.iter().find(|i| &i.name == name) {
                    indexes.entry(ix.id).or_default().chosen += 1;
                }
            }
        }
    }
}

/// The fields `query` reads that `ix`'s entries do not carry.
fn missing_fields<'a>(
    def: &TableDef,
    ix: &IndexDef,
    query: &'a Query,
    projection: &'a [String],
) -> Vec<&'a str> {
    let carried = |f: &str| {
        ix.fields.iter().any(|k| k == f)
            || def.primary_key.iter().any(|k| k == f)
            || matches!(&ix.projection, Projection::Include(extra) if extra.iter().any(|k| k == f))
    };
    let mut out: Vec<&str> = projection
        .iter()
        .map(String::as_str)
        .chain(query.tested_fields())
        .filter(|f| !carried(f))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
