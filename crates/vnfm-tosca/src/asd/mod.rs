//! Application Service Descriptor (ASD) reading.
//!
//! An ASD package is a CSAR whose entry definitions hold one node template of type
//! `tosca.nodes.asd` (ONAP 0.1, TOSCA 1.2, snake_case properties) or `tosca.nodes.asd.Asd`
//! (O-RAN WG6 2.0, TOSCA 1.3, camelCase properties), with its deployment items as artifacts or
//! as a `deploymentItems` list. [`load`] reads either dialect into the one normalized
//! [`Asd`](vnfm_descriptor::Asd) model, in phases:
//!
//! 1. the entry definitions and every imported file (relative to the importing file, then to the
//!    package root) are read as YAML, with the [`quirks`] of published samples repaired and
//!    reported as `asd.quirk.*` warnings;
//! 2. the type files' property definitions, over a built-in table of both dialects, serve a
//!    lenient check of property names (`asd.unknown-property` warnings);
//! 3. the node template is normalized: ids, versions, external connection points, cluster
//!    capabilities, deployment items (files checked against the package; a `helm_chart` item
//!    names a packaged chart or a chart directory holding a `Chart.yaml`) and their stages;
//! 4. OCI image layouts under `images/` are listed.
//!
//! ```
//! use vnfm_tosca::{MemFiles, load};
//!
//! let asd = "tosca_definitions_version: tosca_simple_yaml_1_3
//! imports:
//!   - oran_asd_types_v02.00.00
//! topology_template:
//!   node_templates:
//!     app:
//!       type: tosca.nodes.asd.Asd
//!       properties:
//!         asdId: 6c1e6d0e-4a1f-4d7e-9d0a-1f0c3a5e2b11
//!         asdVersion: '1.0'
//!         asdProvider: Acme
//!         asdApplicationName: demo
//!         asdApplicationSwVersion: '2.1'
//!       artifacts:
//!         chart:
//!           type: tosca.artifacts.asd.DeploymentItem
//!           file: Artifacts/demo-2.1.0.tgz
//!           properties:
//!             deploymentItemId: chart
//!             artifactType: helm_chart
//! ";
//! let files = MemFiles::new("Definitions/asd.yaml")
//!     .with("Definitions/asd.yaml", asd)
//!     .with("Artifacts/demo-2.1.0.tgz", b"chart".to_vec());
//! let loaded = load(&files);
//! assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics);
//! let asd = loaded.descriptor.unwrap();
//! let asd = asd.as_asd().unwrap();
//! assert_eq!(asd.schema_version.as_deref(), Some("02.00.00"));
//! assert_eq!(asd.stages[0].items, ["chart"]);
//! ```
//!
//! Stable diagnostic codes: errors `asd.missing-property`, `asd.missing-definitions-version`,
//! `asd.no-asd-node`, `asd.multiple-asd-nodes`, `asd.no-deployment-items`,
//! `asd.artifact-file-missing`, `asd.undeclared-artifact`, `asd.unknown-artifact-type`,
//! `asd.invalid-deployment-order`, `asd.duplicate-deployment-item-id`,
//! `asd.duplicate-ext-cpd-id`, `asd.invalid-value`, `asd.type-mismatch`,
//! `asd.oci-index-invalid` (plus `yaml.*` and `tosca.file-unreadable` / `tosca.not-utf8` for
//! unreadable files); warnings `asd.quirk.*` (see [`quirks`]), `asd.unknown-property`,
//! `asd.property-type-mismatch`, `asd.conflicting-property`, `asd.import-missing`,
//! `asd.external-artifact`, `asd.ignored-artifact`, `asd.ignored-node-template`,
//! `asd.ignored-keyname`, `asd.unexpected-tosca-version`.

use std::collections::BTreeSet;

use vnfm_descriptor::{Descriptor, Diagnostic, Location};

use crate::yaml::{self, Node};
use crate::{Loaded, PackageFiles, read_text};

mod images;
mod normalize;
pub mod quirks;
mod types;

pub use images::IMAGES_DIR;

use normalize::{ImportFacts, is_url, normalize_path};
use types::TypeSet;

/// How deep imports of imports are followed.
const MAX_IMPORT_DEPTH: usize = 8;

/// Name prefix of the O-RAN standard ASD types file, which packages do not carry.
const ORAN_TYPES_PREFIX: &str = "oran_asd_types";

/// Reads the ASD of a package.
pub fn load(files: &dyn PackageFiles) -> Loaded {
    let mut diags = Vec::new();
    let entry = files.entry_definitions().to_string();
    let Some(doc) = read_definitions(files, &entry, &mut diags) else {
        return Loaded {
            descriptor: None,
            diagnostics: diags,
        };
    };
    let mut types = TypeSet::builtin();
    let mut facts = ImportFacts::default();
    let mut visited = BTreeSet::from([entry.clone()]);
    load_imports(
        files,
        &entry,
        &doc,
        &mut types,
        &mut facts,
        &mut visited,
        0,
        &mut diags,
    );
    types.add_document(&entry, &doc);
    let mut asd = normalize::normalize(files, &entry, &doc, &types, &facts, &mut diags);
    if let Some(asd) = &mut asd {
        let image_dirs: Vec<String> = asd
            .executable_images
            .iter()
            .filter(|i| !i.external)
            .map(|i| i.location.clone())
            .collect();
        asd.images = images::find_images(files, &entry, &image_dirs, &mut diags);
    }
    Loaded {
        descriptor: asd.map(|a| Descriptor::Asd(Box::new(a))),
        diagnostics: diags,
    }
}

/// Reads one definitions file: text, line endings, YAML, column-0 types.
fn read_definitions(
    files: &dyn PackageFiles,
    path: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Node> {
    let text = match read_text(files, path) {
        Ok(t) => t,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    let text = quirks::normalize_line_endings(path, text, diags);
    match yaml::parse(path, &text) {
        Ok(mut doc) => {
            quirks::rehome_column0_types(path, &mut doc, diags);
            Some(doc)
        }
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// Follows the `imports` of `doc` (read from `importer`), adding their type definitions to
/// `types`; a file's own definitions override those it imports.
#[allow(clippy::too_many_arguments)]
fn load_imports(
    files: &dyn PackageFiles,
    importer: &str,
    doc: &Node,
    types: &mut TypeSet,
    facts: &mut ImportFacts,
    visited: &mut BTreeSet<String>,
    depth: usize,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(imports) = doc.get("imports").and_then(Node::as_seq) else {
        return;
    };
    let dir = importer.rsplit_once('/').map_or("", |(d, _)| d);
    for import in imports {
        // `- file.yaml`, `- file: file.yaml`, or TOSCA 1.0's `- name: {file: file.yaml}`.
        let name_node = if import.as_str().is_some() {
            Some(import)
        } else {
            import.get("file").or_else(|| match import.as_map() {
                Some([(_, inner)]) => inner.get("file"),
                _ => None,
            })
        };
        let Some(name) = name_node.and_then(Node::as_str) else {
            continue;
        };
        let stem = name.rsplit('/').next().unwrap_or(name);
        if let Some(rest) = stem.strip_prefix(ORAN_TYPES_PREFIX) {
            let rest = rest.trim_end_matches(".yaml").trim_end_matches(".yml");
            if let Some(version) = rest.strip_prefix("_v").filter(|v| !v.is_empty()) {
                facts.oran_types_version = Some(version.to_string());
            }
        }
        let found = if is_url(name) {
            None
        } else {
            let mut candidates = vec![normalize_path(dir, name), normalize_path("", name)];
            if !name.ends_with(".yaml") && !name.ends_with(".yml") {
                candidates.push(normalize_path(dir, &format!("{name}.yaml")));
            }
            candidates.into_iter().flatten().find(|p| files.contains(p))
        };
        let Some(path) = found else {
            // The O-RAN standard types are known, not shipped: their absence is expected.
            if !stem.starts_with(ORAN_TYPES_PREFIX) {
                let pos = name_node.map_or(import.pos, |n| n.pos);
                diags.push(
                    Diagnostic::warning(
                        "asd.import-missing",
                        format!(
                            "import `{name}` of `{importer}` is not in the package; property names are checked against the built-in ASD types"
                        ),
                    )
                    .at(Location::new(importer, pos.line, pos.column)),
                );
            }
            continue;
        };
        if depth >= MAX_IMPORT_DEPTH || !visited.insert(path.clone()) {
            continue;
        }
        if let Some(imported) = read_definitions(files, &path, diags) {
            load_imports(
                files,
                &path,
                &imported,
                types,
                facts,
                visited,
                depth + 1,
                diags,
            );
            types.add_document(&path, &imported);
        }
    }
}
