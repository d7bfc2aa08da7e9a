//! Replays the checked-in corpora of the `write_batch` and `manifest` fuzz targets through the
//! same checks the targets run (`fuzz/checks/`), so stable `cargo test` exercises them.
//!
//! The seeds are made by `cargo test -p strata --test fuzz_corpus -- --ignored`.

mod common;

#[path = "../../fuzz/checks/corpus.rs"]
mod corpus;
#[path = "../../fuzz/checks/manifest.rs"]
mod manifest;
#[path = "../../fuzz/checks/write_batch.rs"]
mod write_batch;

use std::path::{Path, PathBuf};

use common::*;
use strata::Store;
use strata::fs::{FileSystem, SimFs};
use strata_wal::{LogReader, RecoveryMode, peek_log_number};

fn corpus(target: &str) -> PathBuf {
    corpus::dir(target)
}

fn replay(target: &str, check: fn(&[u8])) {
    corpus::replay(target, 4, check);
}

#[test]
fn the_write_batch_corpus_passes_the_fuzz_checks() {
    replay("write_batch", write_batch::check);
}

#[test]
fn the_manifest_corpus_passes_the_fuzz_checks() {
    replay("manifest", manifest::check);
}

/// Writes the seed corpora from a real store: logged batches, and manifests.
#[test]
#[ignore = "regenerates fuzz/corpus/{write_batch,manifest}; run by hand"]
fn write_seed_corpora() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::open(dir, sim_options(&fs)).expect("open");
    let users = store.create_column_family("users").expect("create");
    let mut rng = Rng::new(3);
    for i in 0..6 {
        let ops = random_batch(&mut rng, &["default", "users"], 20, 4);
        write(&store, &ops, i % 2 == 0).expect("write");
    }
    store.delete(&users, b"gone").expect("delete");
    let log = *store.log_numbers().last().expect("a log");
    let log_bytes = fs
        .contents(&dir.join(format!("{log:06}.log")))
        .expect("log");
    let batches = corpus("write_batch");
    std::fs::create_dir_all(&batches).expect("dir");
    let mut reader = LogReader::new(
        &log_bytes,
        peek_log_number(&log_bytes).expect("a fragment"),
        RecoveryMode::AbsoluteConsistency,
    );
    let mut n = 0;
    while let Some(record) = reader.next_record().expect("an intact log") {
        std::fs::write(batches.join(format!("batch-{n}")), &record.data).expect("write");
        n += 1;
    }

    store.flush(&users).expect("flush");
    store.flush_all().expect("flush");
    let manifests = corpus("manifest");
    std::fs::create_dir_all(&manifests).expect("dir");
    for name in fs.list(dir).expect("list") {
        if name.starts_with("MANIFEST-") {
            let bytes = fs.contents(&dir.join(&name)).expect("manifest");
            std::fs::write(manifests.join("manifest-file"), &bytes).expect("write");
            let mut reader = LogReader::new(
                &bytes,
                peek_log_number(&bytes).expect("a fragment"),
                RecoveryMode::AbsoluteConsistency,
            );
            let mut i = 0;
            while let Some(record) = reader.next_record().expect("intact") {
                std::fs::write(manifests.join(format!("edit-{i}")), &record.data).expect("write");
                i += 1;
            }
        }
    }
}
