//! Test helpers: corpus packages read into [`MemFiles`].
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use vnfm_tosca::MemFiles;

/// The shared corpus directory.
pub fn corpus() -> PathBuf {
    vnfm_test_env::corpus_dir()
}

/// A Tacker sample package directory.
pub fn tacker(name: &str) -> PathBuf {
    corpus().join("tacker").join(name)
}

/// Every package directory of the Tacker corpus: subdirectories with TOSCA-Metadata/TOSCA.meta
/// or a root-level YAML file (not `api-ref-samples` or `etsi-types`).
pub fn tacker_packages() -> Vec<String> {
    let mut out = Vec::new();
    let dir = corpus().join("tacker");
    for e in std::fs::read_dir(&dir).expect("corpus/tacker exists") {
        let e = e.expect("readable entry");
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.path().is_dir() || name == "api-ref-samples" || name == "etsi-types" {
            continue;
        }
        if entry_definitions(&e.path()).is_some() {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// The entry definitions of a package directory: `Entry-Definitions` of TOSCA.meta, or the one
/// YAML file at the root.
pub fn entry_definitions(dir: &Path) -> Option<String> {
    if let Ok(meta) = std::fs::read_to_string(dir.join("TOSCA-Metadata/TOSCA.meta")) {
        return meta.lines().find_map(|l| {
            l.strip_prefix("Entry-Definitions:")
                .map(|v| v.trim().to_string())
        });
    }
    let mut yamls: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect();
    yamls.sort();
    (yamls.len() == 1).then(|| yamls.remove(0))
}

/// Reads every file under `dir` into memory, with the given entry definitions.
pub fn mem_files_with_entry(dir: &Path, entry: &str) -> MemFiles {
    let mut files = MemFiles::new(entry);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("readable directory") {
            let p = e.expect("readable entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .expect("under the root")
                    .to_string_lossy()
                    .replace('\\', "/");
                files
                    .files
                    .insert(rel, std::fs::read(&p).expect("readable file"));
            }
        }
    }
    files
}

/// Reads a package directory into memory.
pub fn mem_files(dir: &Path) -> MemFiles {
    let entry = entry_definitions(dir).unwrap_or_default();
    mem_files_with_entry(dir, &entry)
}

/// Reads a Tacker corpus package into memory.
pub fn tacker_files(name: &str) -> MemFiles {
    mem_files(&tacker(name))
}
