//! Design versions in the file store: every recorded version of a design is one immutable file,
//!
//! ```text
//! <home>/workflow-versions/<name>/<n>.json   pretty JSON of a `vwf_core::versions::DesignVersion`
//! ```
//!
//! Invariants: a version file is created once (a hard link that refuses an existing name, so of
//! two saves taking the same number exactly one gets it) and only removed by a pruning; the
//! directory of a design outlives the design, so runs of a deleted design still show the
//! version they ran; entries that are not `<number>.json` are ignored.

use std::fs;
use std::io;
use std::path::PathBuf;

use vwf_core::names::DesignName;
use vwf_core::versions::DesignVersion;

use super::fs::{atomic_create, create_private_dir_all, dir_entries, io_error, sync_dir};
use super::{FileStore, StoreError};

pub(super) const VERSIONS_DIR: &str = "workflow-versions";

impl FileStore {
    fn versions_dir(&self, name: &DesignName) -> PathBuf {
        self.home.join(VERSIONS_DIR).join(name.as_str())
    }

    /// The numbers of the recorded versions of a design, sorted (from the file names only).
    fn version_numbers(&self, name: &DesignName) -> Result<Vec<u64>, StoreError> {
        let dir = self.versions_dir(name);
        let Some(entries) = dir_entries(&dir)? else { return Ok(Vec::new()) };
        let mut numbers = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("read", &dir, e))?;
            let file_name = entry.file_name();
            if let Some(n) = file_name.to_str().and_then(|n| n.strip_suffix(".json")).and_then(|n| n.parse::<u64>().ok()) {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        Ok(numbers)
    }

    fn read_version(&self, name: &DesignName, n: u64) -> Result<DesignVersion, StoreError> {
        let path = self.versions_dir(name).join(format!("{n}.json"));
        let bytes = fs::read(&path).map_err(|e| io_error("read", &path, e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::Corrupt { path: format!("{VERSIONS_DIR}/{name}/{n}.json"), message: e.to_string() })
    }

    pub(super) fn fs_list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        self.version_numbers(name)?.into_iter().map(|n| self.read_version(name, n)).collect()
    }

    pub(super) fn fs_newest_version(&self, name: &DesignName) -> Result<Option<DesignVersion>, StoreError> {
        self.version_numbers(name)?.last().map(|n| self.read_version(name, *n)).transpose()
    }

    pub(super) fn fs_add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        let dir = self.versions_dir(name);
        create_private_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let path = dir.join(format!("{}.json", version.version));
        let mut bytes = serde_json::to_vec_pretty(version).map_err(|e| StoreError::encode("a design version", e))?;
        bytes.push(b'\n');
        match atomic_create(&path, &bytes) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(version_exists(name, version.version)),
            Err(e) => Err(io_error("write", &path, e)),
        }
    }

    pub(super) fn fs_remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        let dir = self.versions_dir(name);
        let path = dir.join(format!("{version}.json"));
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&dir).map_err(|e| io_error("sync", &dir, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(version_not_found(name, version)),
            Err(e) => Err(io_error("remove", &path, e)),
        }
    }

    pub(super) fn fs_versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        let dir = self.home.join(VERSIONS_DIR);
        let Some(entries) = dir_entries(&dir)? else { return Ok(Vec::new()) };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| DesignName::parse(n).is_ok())
            .collect();
        names.sort();
        Ok(names)
    }
}

pub(super) fn version_exists(name: &DesignName, version: u64) -> StoreError {
    StoreError::Exists(format!("version {version} of design {:?}", name.as_str()))
}

pub fn version_not_found(name: &DesignName, version: u64) -> StoreError {
    StoreError::NotFound(format!("version {version} of design {:?}", name.as_str()))
}
