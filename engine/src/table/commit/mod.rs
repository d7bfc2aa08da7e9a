//! The commit room: what orders and isolates commits, held by the open database.
//!
//! - `stripes`: the per-key locks a read-modify-write of a row and its index entries takes.
//! - `resolver`: the keys recent commits wrote, which transactions validate against, and
//!   the admission of every commit under one lock (its seqnos from the sequencer).
//! - [`txn_state`]: the transaction state file (`docs/formats/txn-state.md`).
//! - [`outbox`]: the outbox entry format (an async index's changes, written in the row's
//!   commit) and the `Tracker` of the outbox numbers handed to the indexer.
//!
//! - [`change_log`]: the change feeds' log entry format (a commit's row changes, written in
//!   its batch) and the `FeedRegistry` of feeds, retention and waiting readers.
//!
//! Uses the `codec` room and the store's commit clock (`lsm::Sequencer`).

// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod change_log;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod outbox;
pub(crate) mod resolver;
pub(crate) mod stripes;
// Public for the fuzz targets and white-box tests (their formats), not part of the API.
#[doc(hidden)]
pub mod txn_state;
