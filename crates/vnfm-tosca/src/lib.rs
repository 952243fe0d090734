//! TOSCA 1.2/1.3 with the ETSI SOL001 profile (and the ONAP/O-RAN ASD), read into the
//! normalized descriptor model of `vnfm-descriptor`.
//!
//! The entry point is [`load`]: give it the files of a package (anything implementing
//! [`PackageFiles`], such as a `vnfm_csar::Package` or an in-memory [`MemFiles`]) and get back
//! the [`Descriptor`] with every [`Diagnostic`] found on the way. Reading happens in phases
//! (YAML, imports, types, inheritance, template validation, normalization); each phase reports
//! problems with file, line and column and carries on where it safely can, so one run shows as
//! many problems as possible.
//!
//! ```
//! use vnfm_tosca::{load, MemFiles};
//!
//! let vnfd = r#"
//! tosca_definitions_version: tosca_simple_yaml_1_3
//! imports:
//!   - https://forge.etsi.org/rep/nfv/SOL001/raw/v4.2.1/etsi_nfv_sol001_common_types.yaml
//!   - https://forge.etsi.org/rep/nfv/SOL001/raw/v4.2.1/etsi_nfv_sol001_vnfd_types.yaml
//! topology_template:
//!   node_templates:
//!     VNF:
//!       type: tosca.nodes.nfv.VNF
//!       properties:
//!         descriptor_id: demo-1
//!         descriptor_version: '1.0'
//!         provider: Acme
//!         product_name: Demo
//!         software_version: '1.0'
//!         vnfm_info: [ '0:acme-vnfm' ]
//!         flavour_id: small
//!         flavour_description: One small VM
//!     VDU1:
//!       type: tosca.nodes.nfv.Vdu.Compute
//!       properties:
//!         name: web
//!         description: web server
//!         vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 3 }
//!       capabilities:
//!         virtual_compute:
//!           properties:
//!             virtual_memory: { virtual_mem_size: 2 GiB }
//!             virtual_cpu: { num_virtual_cpu: 2 }
//! "#;
//! let files = MemFiles::new("Definitions/vnfd.yaml").with("Definitions/vnfd.yaml", vnfd);
//! let loaded = load(&files);
//! for d in &loaded.diagnostics {
//!     eprintln!("{d}");
//! }
//! let vnfd = loaded.valid_descriptor().and_then(|d| d.as_vnfd()).expect("a valid VNFD");
//! for vdu in &vnfd.flavour("small").unwrap().vdus {
//!     let mem = vdu.virtual_compute.as_ref().and_then(|c| c.virtual_mem_size_bytes);
//!     println!("{}: {}..{} instances, {mem:?} bytes", vdu.id, vdu.min_instances, vdu.max_instances);
//! }
//! assert_eq!(vnfd.flavours[0].vdus[0].virtual_compute.as_ref().unwrap().virtual_mem_size_bytes, Some(2 << 30));
//! ```
//!
//! ## VNFD reading
//!
//! The files of a VNFD play three roles. The entry definitions hold the top-level VNF node
//! template (a type derived from `tosca.nodes.nfv.VNF`) and import the deployment flavour files;
//! every package file whose `topology_template` has `substitution_mappings` is one flavour, with
//! node templates scoped to that file; everything else declares types. A single-file VNFD
//! without substitution mappings is one flavour. The ETSI SOL001 type files of v2.5.1 to v4.2.1
//! are bundled: their forge URLs (and their bare file names, when the package lacks them) are
//! served from the bundled copies, and the TOSCA normative types are always present.
//!
//! Parsed files are cached for the process by the SHA-256 of their content ([`clear_cache`]
//! empties the cache), so the bundled type files, the TOSCA normative types and the copies of
//! the ETSI files every package carries are parsed from their YAML once per process, not once
//! per package.
//!
//! Deviations that real packages commonly have are tolerated as named [`Quirk`]s and reported as
//! warnings; see [`quirks`] for the list. Every diagnostic code of the VNFD reader starts with
//! `tosca.` (YAML syntax problems with `yaml.`).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use vnfm_descriptor::{Descriptor, Diagnostic};

pub mod asd;
mod hierarchy;
mod imports;
mod normalize;
mod paths;
mod problem;
pub mod quirks;
mod reader;
mod templates;
mod types;
mod values;
pub mod yaml;

pub use imports::{SOL001_VERSIONS, clear_cache};
pub use quirks::Quirk;

/// Read access to the files of a package, by package-relative path (`/`-separated).
pub trait PackageFiles {
    /// Package-relative path of the entry definitions file.
    fn entry_definitions(&self) -> &str;
    /// The bytes of the file at `path`.
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>>;
    /// True when the package has a regular file at `path`.
    fn contains(&self, path: &str) -> bool;
    /// The package-relative paths of every regular file of the package.
    fn paths(&self) -> Vec<String>;
    /// Lowercase hex SHA-256 of the file at `path`, when it exists.
    fn sha256_hex(&self, path: &str) -> Option<String> {
        self.read(path)
            .ok()
            .map(|bytes| hex::encode(Sha256::digest(&bytes)))
    }
}

/// Package files held in memory: for tests, and for descriptors that do not come from a CSAR.
#[derive(Debug, Clone, Default)]
pub struct MemFiles {
    /// Entry definitions path.
    pub entry: String,
    /// Path -> content.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MemFiles {
    /// An empty set of files whose entry definitions is `entry`.
    pub fn new(entry: impl Into<String>) -> Self {
        MemFiles {
            entry: entry.into(),
            files: BTreeMap::new(),
        }
    }

    /// Adds a file.
    pub fn with(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), content.into());
        self
    }
}

impl PackageFiles for MemFiles {
    fn entry_definitions(&self) -> &str {
        &self.entry
    }
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, path.to_string()))
    }
    fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }
    fn paths(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }
}

/// A SOL004 package (zip or directory) opened by `vnfm-csar`.
impl PackageFiles for vnfm_csar::Package {
    fn entry_definitions(&self) -> &str {
        vnfm_csar::Package::entry_definitions(self)
    }
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        vnfm_csar::Package::read(self, path).map_err(|e| {
            let kind = if vnfm_csar::Package::contains(self, path) {
                std::io::ErrorKind::InvalidData
            } else {
                std::io::ErrorKind::NotFound
            };
            std::io::Error::new(kind, e.to_string())
        })
    }
    fn contains(&self, path: &str) -> bool {
        vnfm_csar::Package::contains(self, path)
    }
    fn paths(&self) -> Vec<String> {
        vnfm_csar::Package::files(self)
            .map(str::to_string)
            .collect()
    }
    fn sha256_hex(&self, path: &str) -> Option<String> {
        vnfm_csar::Package::sha256_hex(self, path).ok()
    }
}

/// What reading a descriptor produced: the descriptor when it could be built, and every
/// diagnostic. A descriptor may come with warnings; when any diagnostic is an error the
/// descriptor must not be used (it is `None` unless the errors were confined to parts the model
/// could skip).
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The normalized descriptor, when it could be built.
    pub descriptor: Option<Descriptor>,
    /// Problems found, in the order they were found.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        vnfm_descriptor::diag::has_errors(&self.diagnostics)
    }

    /// The descriptor if there were no errors.
    pub fn valid_descriptor(&self) -> Option<&Descriptor> {
        if self.has_errors() {
            None
        } else {
            self.descriptor.as_ref()
        }
    }
}

/// Why a package has no usable descriptor ([`Error::Invalid`]), or why a value cannot be
/// read (the other variants: the reading phases report them as the detail of a
/// [`Diagnostic`] located at the value).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The descriptor has errors; every diagnostic is kept (warnings included).
    #[error("the descriptor is invalid: {first} ({count} error(s) in all)")]
    Invalid {
        /// The first error found.
        first: Box<Diagnostic>,
        /// How many errors were found.
        count: usize,
        /// Every diagnostic, in the order found.
        diagnostics: Vec<Diagnostic>,
    },
    /// The number of a scalar-unit value (`512 MB`) is not a number.
    #[error("`{number}` is not a number")]
    ScalarNumber {
        /// The number as written.
        number: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseFloatError,
    },
    /// The number of a scalar-unit value is infinite or not a number (`inf MB`).
    #[error("`{number}` is not a finite number")]
    ScalarNotFinite {
        /// The number as written.
        number: String,
    },
    /// A scalar-unit value has no unit (`512`).
    #[error("the unit is missing")]
    ScalarUnitMissing,
    /// A scalar-unit value's unit is not one of its kind (`512 GHz` for a size).
    #[error("`{unit}` is not a unit of {kind} ({units})")]
    ScalarUnit {
        /// The unit as written.
        unit: String,
        /// The kind (`scalar-unit.size`, ...).
        kind: &'static str,
        /// The units of that kind, comma-separated.
        units: String,
    },
    /// A YAML scalar under an explicit core tag (`!!int`, `!!bool`, ...) that the tag does
    /// not allow.
    #[error("`{text}` is not {what}, as its tag `!!{tag}` requires")]
    CoreTag {
        /// The scalar as written.
        text: String,
        /// What the tag demands (`an integer`, `a boolean`, `a number`).
        what: &'static str,
        /// The tag's suffix (`int`).
        tag: String,
    },
}

impl Loaded {
    /// The descriptor and the warnings, or the errors as an [`Error`].
    pub fn into_result(self) -> Result<(Descriptor, Vec<Diagnostic>), Error> {
        let count = self.diagnostics.iter().filter(|d| d.is_error()).count();
        match (self.descriptor, count) {
            (Some(d), 0) => Ok((d, self.diagnostics)),
            _ => {
                let first = self
                    .diagnostics
                    .iter()
                    .find(|d| d.is_error())
                    .cloned()
                    .unwrap_or_else(|| {
                        Diagnostic::error("tosca.no-descriptor", "no descriptor could be built")
                    });
                Err(Error::Invalid {
                    first: Box::new(first),
                    count: count.max(1),
                    diagnostics: self.diagnostics,
                })
            }
        }
    }
}

/// Which descriptor language the entry definitions use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorKind {
    /// ETSI SOL001 VNFD.
    Vnfd,
    /// ONAP / O-RAN Application Service Descriptor.
    Asd,
}

/// Tells a VNFD from an ASD by the entry definitions' node templates and imports: an ASD has a
/// node template of type `tosca.nodes.asd` / `tosca.nodes.asd.Asd` (or imports `asd_types`).
pub fn detect_kind(entry: &yaml::Node) -> DescriptorKind {
    let is_asd_type = |t: &str| t == "tosca.nodes.asd" || t.starts_with("tosca.nodes.asd.Asd");
    let templates = entry
        .get("topology_template")
        .and_then(|t| t.get("node_templates"));
    let by_template = templates.and_then(|t| t.as_map()).is_some_and(|entries| {
        entries.iter().any(|(_, n)| {
            n.get("type")
                .and_then(|t| t.as_str())
                .is_some_and(is_asd_type)
        })
    });
    let by_import = entry
        .get("imports")
        .and_then(|i| i.as_seq())
        .is_some_and(|items| {
            items.iter().any(|i| {
                let file = i
                    .as_str()
                    .or_else(|| i.get("file").and_then(|f| f.as_str()));
                file.is_some_and(|f| {
                    f.rsplit('/')
                        .next()
                        .is_some_and(|n| n.starts_with("asd_types"))
                })
            })
        });
    if by_template || by_import {
        DescriptorKind::Asd
    } else {
        DescriptorKind::Vnfd
    }
}

/// Reads the descriptor of a package.
pub fn load(files: &dyn PackageFiles) -> Loaded {
    let entry_path = files.entry_definitions().to_string();
    if !files.contains(&entry_path) {
        // The VNFD reader reports the missing entry definitions with advice.
        return vnfd_load(files);
    }
    let text = match read_text(files, &entry_path) {
        Ok(t) => t,
        Err(d) => {
            return Loaded {
                descriptor: None,
                diagnostics: vec![d],
            };
        }
    };
    // Parsed through the cache the VNFD reader uses, so the entry is parsed once.
    let unit = imports::unit_for(&text);
    let Some(entry) = unit.root.as_ref() else {
        return Loaded {
            descriptor: None,
            diagnostics: unit
                .problems
                .iter()
                .map(|p| p.clone().into_diagnostic(&entry_path))
                .collect(),
        };
    };
    match detect_kind(entry) {
        DescriptorKind::Asd => asd::load(files),
        DescriptorKind::Vnfd => vnfd_load(files),
    }
}

fn vnfd_load(files: &dyn PackageFiles) -> Loaded {
    reader::load(files)
}

/// Reads `path` as UTF-8 text, with a diagnostic naming the file on failure.
pub fn read_text(files: &dyn PackageFiles, path: &str) -> Result<String, Diagnostic> {
    let bytes = files.read(path).map_err(|e| {
        Diagnostic::error(
            "tosca.file-unreadable",
            format!("cannot read `{path}`: {e}"),
        )
        .at(vnfm_descriptor::Location::file(path))
    })?;
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(
            "tosca.not-utf8",
            format!(
                "`{path}` is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
        .at(vnfm_descriptor::Location::file(path))
    })
}
