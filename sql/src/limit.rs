//! A physical optimizer rule that gives a Strata scan the `LIMIT` above it.
//!
//! When the scan answers an `ORDER BY` ([`crate::scan`]'s `try_pushdown_sort`), DataFusion
//! removes its sort and puts the sort's `LIMIT` in a `GlobalLimitExec` above the nodes
//! between — a projection computing columns, say — which do not take a limit. The scan then
//! does not know it will be stopped after `n` rows, and Strata plans reading all of them
//! (a scan and a sort) instead of `n` entries of an index in order. This rule, run after
//! DataFusion's, finds `GlobalLimitExec(skip 0, fetch n)` over nodes that keep every row
//! (projections, cooperative wrappers) over a [`StrataScan`], and gives the scan the limit;
//! the `GlobalLimitExec` stays (it is then free).

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::projection::ProjectionExec;

use crate::scan::StrataScan;

/// The rule.
#[derive(Debug, Default)]
pub struct LimitIntoStrataScan;

impl PhysicalOptimizerRule for LimitIntoStrataScan {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            let Some(limit) = node.downcast_ref::<GlobalLimitExec>() else {
                return Ok(Transformed::no(node));
            };
            let (0, Some(fetch)) = (limit.skip(), limit.fetch()) else {
                return Ok(Transformed::no(node));
            };
            match limited(limit.input(), fetch)? {
                Some(input) => {
                    let node: Arc<dyn ExecutionPlan> =
                        Arc::new(GlobalLimitExec::new(input, 0, Some(fetch)));
                    Ok(Transformed::yes(node))
                }
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "limit_into_strata_scan"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with the Strata scan under its row-keeping nodes limited to `fetch` rows, if
/// there is one.
fn limited(plan: &Arc<dyn ExecutionPlan>, fetch: usize) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if plan.downcast_ref::<StrataScan>().is_some() {
        return Ok(plan.with_fetch(Some(fetch)));
    }
    let keeps_rows = plan.downcast_ref::<ProjectionExec>().is_some()
        || plan.downcast_ref::<CooperativeExec>().is_some();
    let [child] = plan.children()[..] else {
        return Ok(None);
    };
    if !keeps_rows {
        return Ok(None);
    }
    match limited(child, fetch)? {
        Some(child) => Ok(Some(replace_children_if_necessary(
            Arc::clone(plan),
            vec![child],
        )?)),
        None => Ok(None),
    }
}
