//! Replaying a fuzz target's checked-in corpus through its checks, so stable `cargo test`
//! exercises them. Included by each format crate's `tests/fuzz_corpus.rs` (all of which sit one
//! directory below the workspace root, as `fuzz/` does).

use std::path::PathBuf;

/// The corpus directory of `target`.
pub fn dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// Runs `check` on every input of `target`'s corpus, which must hold at least `min` inputs.
pub fn replay(target: &str, min: usize, check: fn(&[u8])) {
    let mut replayed = 0;
    for entry in std::fs::read_dir(dir(target)).expect("the corpus is checked in") {
        let input = std::fs::read(entry.expect("a corpus entry").path()).expect("readable");
        check(&input);
        replayed += 1;
    }
    assert!(replayed >= min, "only {replayed} {target} inputs");
}
