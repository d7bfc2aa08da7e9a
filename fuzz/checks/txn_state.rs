//! Checks for the `txn_state` fuzz target (`docs/formats/transactions.md`): any bytes either
//! decode as a transaction state file that re-encodes to exactly those bytes, with ascending,
//! disjoint, non-empty cut ranges, or are refused with an error — never a panic, never an
//! allocation the input cannot back.

use strata::table::txn_state::TxnState;

pub fn check(data: &[u8]) {
    let Ok(state) = TxnState::decode(data) else {
        return;
    };
    assert_eq!(state.encode(), data, "a decoded state re-encodes exactly");
    assert!(
        16 * state.cut.len() <= data.len(),
        "no range without bytes behind it"
    );
    for pair in state.cut.windows(2) {
        assert!(pair[0].1 < pair[1].0, "ranges ascend and do not overlap");
    }
    assert!(state.cut.iter().all(|(lo, hi)| lo <= hi));
}
