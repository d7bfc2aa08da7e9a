//! The table layer's rooms, checked: each room (a folder or a file under `src/table/`) names
//! only rooms listed below it in [`ROOMS`], the order of the map in `src/table/mod.rs`. A
//! path from a lower room up to a higher one, or a room the list does not know, fails this
//! test until the map says so.
//!
//! It reads the source as text: every `crate::table::<room>` path outside a `#[cfg(test)]`
//! module (tests may use any room). Calls of a method another room adds to `Db` name no path,
//! so they are not seen here; the rooms' `//!` say which they use.

use std::path::{Path, PathBuf};

/// The rooms, from the bottom up.
const ROOMS: &[&str] = &[
    "codec",
    "catalog",
    "stats",
    "commit",
    "db",
    "async_index",
    "write",
    "read",
    "txn",
    "ddl",
    "feed",
    "tune",
    "verify",
    "backup",
    "open",
    "calibrate",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The room a file under `src/table/` belongs to (`None` for the map itself).
fn room_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    if first == "mod.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_owned())
}

/// `source` without its test module (by convention the file's last item).
fn library_part(source: &str) -> &str {
    match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => &source[..at],
        None => source,
    }
}

/// The rooms `source` names through `crate::table::<room>`, with their line numbers.
fn named_rooms(source: &str) -> Vec<(usize, String)> {
    const PREFIX: &str = "crate::table::";
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find(PREFIX) {
            rest = &rest[at + PREFIX.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            out.push((n + 1, name));
        }
    }
    out
}

#[test]
fn every_room_uses_only_the_rooms_below_it() {
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/table");
    let mut files = Vec::new();
    rust_files(&table, &mut files);
    files.sort();
    let mut upward = Vec::new();
    let mut unknown = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&table).expect("under src/table");
        let Some(room) = room_of(relative) else {
            continue;
        };
        let Some(level) = ROOMS.iter().position(|r| *r == room) else {
            unknown.push(relative.display().to_string());
            continue;
        };
        if relative.ends_with("tests.rs") {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("read a source file");
        for (line, named) in named_rooms(library_part(&source)) {
            match ROOMS.iter().position(|r| *r == named) {
                Some(other) if other > level => {
                    upward.push(format!("{}:{line}: {room} -> {named}", relative.display()))
                }
                Some(_) => {}
                // A re-export the map makes at the table's root (`crate::table::Record`).
                None if named.is_empty() || !named.chars().all(|c| c.is_ascii_lowercase()) => {}
                None => unknown.push(format!("{}:{line}: {named}", relative.display())),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "files or paths in no room of the map (add the room to ROOMS and src/table/mod.rs): \
         {unknown:#?}"
    );
    assert!(
        upward.is_empty(),
        "a room names one above it (move the item down, or the caller up): {upward:#?}"
    );
}

#[test]
fn the_check_sees_an_upward_path() {
    let source = "use crate::table::db::Db;\nfn f() { crate::table::open::x(); }\n";
    let named: Vec<String> = named_rooms(source).into_iter().map(|(_, r)| r).collect();
    assert_eq!(named, ["db", "open"]);
    let with_tests =
        "use crate::table::db::Db;\n#[cfg(test)]\nmod tests {\n use crate::table::open; }\n";
    assert_eq!(named_rooms(library_part(with_tests)).len(), 1);
}

#[test]
fn the_map_lists_every_room() {
    let map =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/table/mod.rs"))
            .expect("read the map");
    for room in ROOMS {
        assert!(
            map.contains(&format!("mod {room};")),
            "src/table/mod.rs does not declare room {room}"
        );
        assert!(
            map.contains(&format!("`{room}`")) || map.contains(&format!("[`{room}`]")),
            "src/table/mod.rs's table of rooms does not describe {room}"
        );
    }
}
