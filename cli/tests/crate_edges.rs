//! The workspace's crate map, checked: each crate depends (normally, for its tests, or to
//! build) only on the Strata crates the design allows it (`docs/architecture.md`, "Crates").
//! A new edge between our crates, or a new crate, fails this test until the map below and
//! the design say so: a decision made in the open, not an accident.
//!
//! It lives in the crate at the top of the map, and reads the workspace as Cargo sees it
//! (`cargo metadata`, no dependency resolution, no network).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Which of our crates each crate may depend on.
fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let leaves: &[&str] = &[];
    [
        // The leaves: formats and planning, knowing nothing of each other.
        ("strata-wal", leaves),
        ("strata-sstable", leaves),
        ("strata-planner", leaves),
        // The store writes the log and the tables.
        ("strata-lsm", &["strata-wal", "strata-sstable"][..]),
        // The table layer: the store and the planner, nothing below the store.
        ("strata", &["strata-lsm", "strata-planner"][..]),
        // The command: the engine's public API only.
        ("strata-cli", &["strata"][..]),
        // SQL through DataFusion: the engine's public API only (its own workspace, so the
        // engine's build never pays for DataFusion's).
        ("strata-sql", &["strata"][..]),
        // The benches measure each layer on its own.
        (
            "strata-benches",
            &[
                "strata-wal",
                "strata-sstable",
                "strata-planner",
                "strata-lsm",
                "strata",
            ][..],
        ),
    ]
    .into_iter()
    .map(|(name, deps)| (name, deps.iter().copied().collect()))
    .collect()
}

#[test]
fn every_crate_depends_only_on_the_crates_the_map_allows() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // The workspace, and the SQL layer's own.
    let mut packages: Vec<serde_json::Value> = Vec::new();
    for manifest in [
        concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"),
        concat!(env!("CARGO_MANIFEST_DIR"), "/../sql/Cargo.toml"),
    ] {
        let output = Command::new(&cargo)
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ])
            .args(["--manifest-path", manifest])
            .output()
            .expect("run cargo metadata");
        assert!(
            output.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let metadata: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
        packages.extend(
            metadata["packages"]
                .as_array()
                .expect("packages")
                .iter()
                .cloned(),
        );
    }
    let allowed = allowed();
    let mut wrong = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().expect("a package's name");
        let Some(may) = allowed.get(name) else {
            wrong.push(format!("{name} is not in the crate map"));
            continue;
        };
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("a dependency's name");
            let ours = allowed.contains_key(dep_name) || dep_name.starts_with("strata");
            if ours && !may.contains(dep_name) {
                let kind = dep["kind"].as_str().unwrap_or("normal");
                wrong.push(format!("{name} -> {dep_name} ({kind})"));
            }
        }
    }
    // Every crate in the map is in the workspace (a renamed crate must be renamed here).
    for name in allowed.keys() {
        if !packages.iter().any(|p| p["name"] == *name) {
            wrong.push(format!("{name} is in the map but not the workspace"));
        }
    }
    assert!(
        wrong.is_empty(),
        "edges the crate map does not allow: {wrong:?}"
    );
}
