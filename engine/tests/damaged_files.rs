//! Every file of a closed database truncated (to nothing, a third, all but its last byte) or
//! with one bit flipped (at its start, middle and end): opening and reading the damaged copy
//! either reports an error or returns exactly what was written, with clean indexes. Never a
//! panic, and never a silent loss.

mod common;

use std::path::{Path, PathBuf};

use common::tables::{Snapshot, fill_two_tables, snapshot};
use strata::StoreOptions;
use strata::{Db, Hint, Options, Query, record};

/// Every file below `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("list") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

/// Opens the damaged copy and reads everything: an error anywhere is fine (the damage was
/// reported); success must return exactly what was written, with clean indexes.
fn open_damaged(dir: &Path, before: &Snapshot, what: &str) -> Result<(), String> {
    let db = Db::open(dir, Options::default()).map_err(|e| e.to_string())?;
    let outcome = (|| -> Result<(), String> {
        let mut found = Snapshot::new();
        for def in db.tables() {
            let rows = db
                .query(&def.name, &Query::default().hint(Hint::Scan))
                .map_err(|e| e.to_string())?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            found.insert(def.name.clone(), (format!("{def:?}"), rows));
            let report = db.verify(&def.name).map_err(|e| e.to_string())?;
            if !report.is_clean() {
                return Err(format!("verify: {report}"));
            }
        }
        if &found != before {
            let counts = |s: &Snapshot| -> Vec<(String, usize)> {
                s.iter()
                    .map(|(t, (_, rows))| (t.clone(), rows.len()))
                    .collect()
            };
            panic!(
                "{what}: the damaged database opened and read without an error, but differs: \
                 rows {:?}, before {:?}",
                counts(&found),
                counts(before)
            );
        }
        Ok(())
    })();
    let _ = db.close();
    outcome
}

#[test]
fn every_file_truncated_or_bit_flipped_is_an_error_or_harmless() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original = dir.path().join("db");
    let db = Db::open(&original, Options::default()).expect("open");
    fill_two_tables(&db);
    db.flush().expect("flush");
    db.insert("t", record! { "id" => 500, "g" => 1 })
        .expect("one row in the log only");
    let before = snapshot(&db);
    db.close().expect("close");
    let mut damaged = 0;
    let mut reported = 0;
    for file in files(&original) {
        let relative = file.strip_prefix(&original).expect("inside");
        let bytes = std::fs::read(&file).expect("read");
        if relative == Path::new("LOCK") {
            continue;
        }
        let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
        for cut in [0, bytes.len() / 3, bytes.len().saturating_sub(1)] {
            if cut < bytes.len() {
                variants.push((format!("truncated to {cut}"), bytes[..cut].to_vec()));
            }
        }
        for at in [0, bytes.len() / 2, bytes.len().saturating_sub(9)] {
            if at < bytes.len() {
                let mut flipped = bytes.clone();
                flipped[at] ^= 0x10;
                variants.push((format!("bit flipped at {at}"), flipped));
            }
        }
        for (what, content) in variants {
            let copy = dir.path().join(format!("damaged-{damaged}"));
            copy_dir(&original, &copy);
            std::fs::write(copy.join(relative), &content).expect("damage");
            damaged += 1;
            let label = format!("{}: {what}", relative.display());
            if let Err(e) = open_damaged(&copy, &before, &label) {
                reported += 1;
                assert!(
                    !e.is_empty(),
                    "{}: {what}: an empty error",
                    relative.display()
                );
            }
            std::fs::remove_dir_all(&copy).expect("clean up");
        }
    }
    println!("{damaged} damaged copies, {reported} reported as errors, the rest read back whole");
    assert!(damaged > 20, "only {damaged} damaged copies");
    assert!(reported > 0, "no damage was reported");
}

#[test]
fn a_log_cut_after_a_clean_close_is_refused_not_taken_for_a_torn_tail() {
    use std::sync::Arc;
    use strata::fs::{FileSystem, SimFs};
    let fs = SimFs::new();
    let options = || {
        Options::from(StoreOptions {
            fs: Arc::new(fs.clone()),
            ..StoreOptions::default()
        })
    };
    let db = Db::open("/db", options()).expect("open");
    fill_two_tables(&db);
    let before = snapshot(&db);
    db.close().expect("close");
    let log = fs
        .list(Path::new("/db"))
        .expect("list")
        .into_iter()
        .find(|name| name.ends_with(".log"))
        .expect("a log");
    let path = Path::new("/db").join(&log);
    let whole = fs.contents(&path).expect("the log");
    assert!(!whole.is_empty(), "the rows are in the log");
    let mut file = fs.create(&path).expect("rewrite");
    std::io::Write::write_all(&mut file, &whole[..whole.len() - 1]).expect("cut");
    file.sync_data().expect("sync");
    drop(file);
    let Err(e) = Db::open("/db", options()) else {
        panic!("a log cut after a clean close opened as if torn by a crash")
    };
    assert!(
        matches!(
            e,
            strata::Error::Store(strata::lsm::Error::Corruption {
                what: strata::lsm::Corruption::LogSize { .. },
                ..
            })
        ),
        "{e:?}"
    );
    // Put it back: nothing else was touched.
    let mut file = fs.create(&path).expect("restore");
    std::io::Write::write_all(&mut file, &whole).expect("restore");
    file.sync_data().expect("sync");
    drop(file);
    let db = Db::open("/db", options()).expect("reopen");
    assert_eq!(snapshot(&db), before);
    db.close().expect("close");
}
