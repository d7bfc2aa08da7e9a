//! The order of a table's analyses: which one's statistics may be stored.
//!
//! Two analyses of one table can overlap (the analyzer thread's, queued by writes, and a
//! caller's `Db::analyze`), and the one that read the older rows can finish last. Each
//! analysis takes a ticket as it takes its snapshots, and its statistics are stored only if
//! none of a later ticket has stored its own: the statistics the planner uses never go back
//! to rows older than those of the last analysis stored.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// A table's analysis tickets (kept across republished definitions, like its counters).
#[derive(Debug, Default)]
pub(crate) struct AnalysisOrder {
    /// The last ticket taken; a ticket is taken together with its analysis's snapshots,
    /// under this lock, so a later ticket always reads rows at least as new.
    taken: Mutex<u64>,
    /// The ticket of the statistics stored last (0: none since the database opened or the
    /// table was created).
    last_stored: AtomicU64,
}

impl AnalysisOrder {
    /// A new ticket and what `snapshots` takes, taken together.
    pub(crate) fn start<S>(&self, snapshots: impl FnOnce() -> S) -> (u64, S) {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        *taken += 1;
        (*taken, snapshots())
    }

    /// Whether the statistics of the analysis holding `ticket` come too late: an analysis of
    /// a later ticket has stored its own. The caller checks and then stores (and calls
    /// [`AnalysisOrder::stored`]) under the lock that orders the catalog's writes, so two
    /// analyses cannot both pass and then store in the other order.
    pub(crate) fn superseded(&self, ticket: u64) -> bool {
        self.last_stored.load(Ordering::Acquire) > ticket
    }

    /// Notes that the statistics of `ticket` were stored.
    pub(crate) fn stored(&self, ticket: u64) {
        self.last_stored.fetch_max(ticket, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_ticket_is_refused_once_a_later_one_is_stored() {
        let order = AnalysisOrder::default();
        let (first, ()) = order.start(|| ());
        let (second, ()) = order.start(|| ());
        assert!(first < second);
        assert!(!order.superseded(first) && !order.superseded(second));
        order.stored(second);
        assert!(
            order.superseded(first),
            "the older rows' statistics come after"
        );
        assert!(
            !order.superseded(second),
            "the same analysis may store again"
        );
        order.stored(first);
        assert!(
            order.superseded(first),
            "storing an older ticket moves nothing back"
        );
        let (third, ()) = order.start(|| ());
        assert!(!order.superseded(third));
    }
}
