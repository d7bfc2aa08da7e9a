//! Checks for the `backup_manifest` fuzz target (`docs/formats/backup.md`): any bytes either
//! decode as a backup manifest that re-encodes to exactly those bytes and names only files
//! inside a store's directory, or are refused with an error — never a panic.

use strata::backup::BackupManifest;

pub fn check(data: &[u8]) {
    if let Ok(manifest) = BackupManifest::decode(data) {
        assert_eq!(
            manifest.encode(),
            data,
            "decoded manifests re-encode exactly"
        );
        assert_eq!(manifest.info.files, manifest.files.len() as u64);
        for file in &manifest.files {
            let path = std::path::Path::new(&file.name);
            assert_eq!(
                path.components().count(),
                1,
                "{:?} leaves its directory",
                file.name
            );
            assert!(!file.name.contains('/') && file.name != ".." && file.name != ".");
        }
    }
}
