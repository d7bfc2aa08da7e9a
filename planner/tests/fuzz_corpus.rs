//! Replays the checked-in corpus of the `planner` fuzz target through the target's checks
//! (`fuzz/checks/planner.rs`), so stable `cargo test` exercises them.

#[path = "../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../fuzz/checks/planner.rs"]
mod planner;

#[test]
fn the_planner_corpus_passes_the_fuzz_checks() {
    corpus::replay("planner", 8, planner::check);
}

#[test]
fn the_stats_seed_decodes() {
    let seed = std::fs::read(corpus::dir("planner").join("seed-stats.json")).expect("seed");
    let stats = strata_planner::TableStats::decode(&seed).expect("a valid stored form");
    assert_eq!(stats.row_count, 1_000);
}
