//! OCI image layouts shipped in the package under `images/`.
//!
//! A layout is a directory with an `index.json` listing image manifests; each manifest's
//! `org.opencontainers.image.ref.name` annotation names the image (a tag or full reference).
//! [`PackageFiles`] cannot list directories, so layouts are looked for where the package says
//! files are: the `Source:` entries of the manifest (including `non_mano_artifact_sets`), the
//! `Name:` entries of `TOSCA-Metadata/TOSCA.meta`, extra directories given by the caller
//! (executable image locations), and `images/` itself. Every directory on the way from `images/`
//! to such a file is tried.

use std::collections::BTreeSet;

use vnfm_descriptor::asd::OciImage;
use vnfm_descriptor::{Diagnostic, Location};

use crate::PackageFiles;

/// Directory (package-relative) under which image layouts are looked for.
pub const IMAGES_DIR: &str = "images";

/// Largest `index.json` read, in bytes.
const MAX_INDEX_BYTES: usize = 16 * 1024 * 1024;

/// Annotation that names an image in a layout's index.
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// Where TOSCA.meta lives.
const TOSCA_META: &str = "TOSCA-Metadata/TOSCA.meta";

/// Lists the images of every OCI layout found under `images/`, layouts in path order and
/// manifests in index order. A layout whose `index.json` is not a valid index is an error.
pub fn find_images(
    files: &dyn PackageFiles,
    entry: &str,
    extra_paths: &[String],
    diags: &mut Vec<Diagnostic>,
) -> Vec<OciImage> {
    let mut candidates: Vec<String> = declared_paths(files, entry);
    candidates.extend(extra_paths.iter().cloned());
    candidates.push(format!("{IMAGES_DIR}/index.json"));
    let mut layouts = BTreeSet::new();
    for path in &candidates {
        let path = path.trim().trim_start_matches("./").trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').collect();
        if segments.first() != Some(&IMAGES_DIR) || segments.contains(&"..") {
            continue;
        }
        // Every directory from `images` down to the path itself (it may name a directory).
        for end in 1..=segments.len() {
            let dir = segments[..end].join("/");
            if files.contains(&format!("{dir}/index.json")) {
                layouts.insert(dir);
            }
        }
    }
    let mut images = Vec::new();
    for layout in layouts {
        read_layout(files, &layout, &mut images, diags);
    }
    images
}

fn read_layout(
    files: &dyn PackageFiles,
    layout: &str,
    images: &mut Vec<OciImage>,
    diags: &mut Vec<Diagnostic>,
) {
    let path = format!("{layout}/index.json");
    let invalid = |message: String, line: usize, column: usize| {
        Diagnostic::error("asd.oci-index-invalid", message)
            .at(Location::new(
                path.clone(),
                u32::try_from(line).unwrap_or(u32::MAX),
                u32::try_from(column).unwrap_or(u32::MAX),
            ))
            .with_help("an OCI image layout's index.json is an image index: {\"schemaVersion\": 2, \"manifests\": [...]}")
    };
    let bytes = match files.read(&path) {
        Ok(b) => b,
        Err(e) => {
            diags.push(invalid(format!("cannot read `{path}`: {e}"), 0, 0));
            return;
        }
    };
    if bytes.len() > MAX_INDEX_BYTES {
        diags.push(invalid(
            format!(
                "`{path}` is {} bytes; the limit is {MAX_INDEX_BYTES}",
                bytes.len()
            ),
            0,
            0,
        ));
        return;
    }
    let index: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            diags.push(invalid(
                format!("`{path}` is not valid JSON: {e}"),
                e.line(),
                e.column(),
            ));
            return;
        }
    };
    let Some(manifests) = index.get("manifests").and_then(|m| m.as_array()) else {
        diags.push(invalid(format!("`{path}` has no `manifests` list"), 0, 0));
        return;
    };
    for (i, manifest) in manifests.iter().enumerate() {
        let Some(digest) = manifest.get("digest").and_then(|d| d.as_str()) else {
            diags.push(invalid(
                format!("manifest {} of `{path}` has no `digest`", i + 1),
                0,
                0,
            ));
            continue;
        };
        images.push(OciImage {
            layout: layout.to_string(),
            ref_name: manifest
                .get("annotations")
                .and_then(|a| a.get(REF_NAME))
                .and_then(|r| r.as_str())
                .map(str::to_string),
            digest: digest.to_string(),
            media_type: manifest
                .get("mediaType")
                .and_then(|m| m.as_str())
                .map(str::to_string),
        });
    }
}

/// Paths the package declares: manifest `Source:` entries and TOSCA.meta `Name:` entries.
/// Unreadable or absent files contribute nothing (checking them is the package reader's job).
fn declared_paths(files: &dyn PackageFiles, entry: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let meta = read_lossy(files, TOSCA_META);
    let mut manifest = None;
    if let Some(meta) = &meta {
        for line in meta.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "ETSI-Entry-Manifest" | "Entry-Manifest" => manifest = Some(value.to_string()),
                "Name" => paths.push(value.to_string()),
                _ => {}
            }
        }
    }
    // SOL004: without TOSCA.meta, the manifest is at the root, named after the entry file.
    let manifest = manifest.unwrap_or_else(|| {
        let stem = entry.rsplit('/').next().unwrap_or(entry);
        let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
        format!("{stem}.mf")
    });
    if let Some(text) = read_lossy(files, &manifest) {
        for line in text.lines() {
            let Some((key, value)) = line.trim().split_once(':') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("source") {
                paths.push(value.trim().to_string());
            }
        }
    }
    paths
}

fn read_lossy(files: &dyn PackageFiles, path: &str) -> Option<String> {
    files
        .read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFiles;

    fn index(refs: &[(&str, Option<&str>)]) -> Vec<u8> {
        let manifests: Vec<serde_json::Value> = refs
            .iter()
            .map(|(digest, name)| {
                let mut m = serde_json::json!({
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": digest,
                    "size": 10,
                });
                if let Some(n) = name {
                    m["annotations"] = serde_json::json!({ REF_NAME: n });
                }
                m
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({"schemaVersion": 2, "manifests": manifests}))
            .unwrap()
    }

    #[test]
    fn layouts_named_by_the_manifest_are_listed_in_path_order() {
        let files = MemFiles::new("Definitions/asd.yaml")
            .with(
                "asd.mf",
                "Source: Definitions/asd.yaml\r\nSource: images/b/index.json\r\nSource: images/a/blobs/sha256/abc\r\n",
            )
            .with("images/b/index.json", index(&[("sha256:2", Some("b:1"))]))
            .with("images/a/index.json", index(&[("sha256:1", None)]))
            .with("images/c/index.json", index(&[("sha256:3", Some("unlisted"))]));
        let mut diags = Vec::new();
        let images = find_images(&files, "Definitions/asd.yaml", &[], &mut diags);
        assert!(diags.is_empty(), "{diags:?}");
        let got: Vec<(&str, Option<&str>)> = images
            .iter()
            .map(|i| (i.layout.as_str(), i.ref_name.as_deref()))
            .collect();
        // images/c is in no declared path and cannot be found without a directory listing.
        assert_eq!(got, [("images/a", None), ("images/b", Some("b:1"))]);
    }

    #[test]
    fn meta_names_the_manifest_and_a_root_layout_is_always_tried() {
        let files = MemFiles::new("Definitions/x.yaml")
            .with(
                TOSCA_META,
                "Entry-Definitions: Definitions/x.yaml\nETSI-Entry-Manifest: m/x.mf\n",
            )
            .with("m/x.mf", "Source: images/app/oci-layout\n")
            .with(
                "images/app/index.json",
                index(&[("sha256:9", Some("app:2"))]),
            )
            .with("images/index.json", index(&[("sha256:8", Some("root:1"))]));
        let mut diags = Vec::new();
        let images = find_images(&files, "Definitions/x.yaml", &[], &mut diags);
        let refs: Vec<_> = images
            .iter()
            .filter_map(|i| i.ref_name.as_deref())
            .collect();
        assert_eq!(refs, ["root:1", "app:2"]);
    }

    #[test]
    fn invalid_index_is_an_error_with_position() {
        let files = MemFiles::new("Definitions/x.yaml").with(
            "images/index.json",
            "{\n  \"manifests\": [\n    {\"digest\": 1,}\n",
        );
        let mut diags = Vec::new();
        let images = find_images(&files, "Definitions/x.yaml", &[], &mut diags);
        assert!(images.is_empty());
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, "asd.oci-index-invalid");
        let loc = diags[0].location.as_ref().unwrap();
        assert_eq!((loc.file.as_str(), loc.line), ("images/index.json", 3));
    }

    #[test]
    fn paths_outside_images_are_ignored() {
        let files = MemFiles::new("Definitions/x.yaml")
            .with(
                "x.mf",
                "Source: other/index.json\nSource: images/../other/index.json\n",
            )
            .with("other/index.json", index(&[("sha256:1", Some("no"))]));
        let mut diags = Vec::new();
        assert!(find_images(&files, "Definitions/x.yaml", &[], &mut diags).is_empty());
        assert!(diags.is_empty());
    }
}
