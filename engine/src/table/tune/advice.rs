//! `Db::index_advice` and `Db::index_usage`: the counters of `stats::advice`, reported with
//! a note for each index that does not pay for itself (the rules are in that module).

use std::sync::atomic::Ordering;

use crate::error::Result;
use crate::table::db::Db;
use crate::table::stats::advice::*;

impl Db {
    /// What each index earned and cost since open, with a note for each one that does not
    /// pay for itself (see the module docs for the rules).
    pub fn index_advice(&self) -> Result<Vec<IndexAdvice>> {
        let model = self.cost_model();
        let mut out = Vec::new();
        for def in self.tables() {
            let t = self.shared.handle(&def.name)?;
            let (stats, _) = self.planning_stats(&t)?;
            let queries = t.usage.queries.load(Ordering::Relaxed);
            let per_row = model.scan_row_us + stats.avg_row_bytes * model.scan_byte_us;
            let per_lookup =
                model.index_entry_us + model.fetch_us + stats.avg_row_bytes * model.scan_byte_us;
            let break_even = if per_lookup > 0.0 {
                per_row / per_lookup
            } else {
                1.0
            };
            for ix in &t.def.indexes {
                let usage = t.usage.with(ix.id, |u| u.clone());
                let candidacies = usage.chosen + usage.lost;
                let mut notes = Vec::new();
                if candidacies >= MIN_CANDIDACIES && usage.chosen == 0 {
                    notes.push(Note::NeverChosen { candidacies });
                } else if candidacies == 0 && queries >= MIN_CANDIDACIES {
                    notes.push(Note::NeverACandidate { queries });
                }
                let field = &ix.fields[0];
                if let Some(c) = stats.columns.get(field) {
                    let listed = c.most_common.iter().map(|(_, f)| *f).reduce(f64::min);
                    let others = c.distinct - c.most_common.len() as f64;
                    let rest = 1.0 - c.null_fraction - c.most_common_fraction();
                    let rarest = if others >= 1.0 && rest > 0.0 {
                        Some(rest / others)
                    } else {
                        listed
                    };
                    let rarest = match (rarest, listed) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    if let Some(rarest) =
                        rarest.filter(|r| *r >= break_even && ix.fields.len() == 1)
                    {
                        notes.push(Note::TooFewDistinct {
                            field: field.clone(),
                            distinct: c.distinct,
                            rarest,
                            break_even,
                        });
                    }
                }
                if usage.fetching_plans >= MIN_FETCHING_PLANS
                    && usage.fetched_whole * 2 < usage.fetching_plans
                {
                    let mut fields: Vec<String> = usage
                        .fetched_for
                        .iter()
                        .filter(|(_, n)| **n * 2 >= usage.fetching_plans)
                        .map(|(f, _)| f.clone())
                        .collect();
                    fields.sort();
                    if !fields.is_empty() && fields.len() <= MAX_INCLUDE_FIELDS {
                        notes.push(Note::IncludeWouldPay {
                            fields,
                            fetches: usage.fetches,
                        });
                    }
                }
                out.push(IndexAdvice {
                    table: def.name.clone(),
                    index: ix.name.clone(),
                    usage,
                    notes,
                });
            }
        }
        Ok(out)
    }
}
