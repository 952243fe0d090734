//! The SOL004 manifest file (`.mf`): package metadata, artifact digests, signature.
//!
//! A manifest has, in this order:
//! - a `metadata:` section of indented `key: value` pairs (`vnf_product_name`,
//!   `vnf_provider_id`, `vnf_package_version`, `vnf_release_date_time`, `vnfd_id`,
//!   `compatible_specification_versions`, `vnfm_info`, or the ASD/ONAP keys such as
//!   `application_name` and `entry_definition_type`; every pair is kept);
//! - blocks of `Source:` (a package path or an external URI) with `Algorithm:`, `Hash:` and,
//!   since SOL004 v3, `Signature:` and `Certificate:` per artifact; a blank line ends a block;
//! - `non_mano_artifact_sets:`, mapping set names to indented `Source:` lines (other keys of a
//!   set, like ONAP's `vendor_name`, are kept);
//! - optionally a trailing CMS signature (`-----BEGIN CMS-----` ... `-----END CMS-----`) over
//!   everything before it.
//!
//! Lines starting with `#` are comments; CRLF line ends and a missing final newline are fine.
//! Parsing never fails: problems become [`Diagnostic`]s with file and line.

use indexmap::IndexMap;
use vnfm_descriptor::diag::Diagnostic;

pub use crate::meta::Field;

/// The marker that starts the manifest's CMS signature block.
pub const CMS_BEGIN: &str = "-----BEGIN CMS-----";
/// The marker that ends the manifest's CMS signature block.
pub const CMS_END: &str = "-----END CMS-----";

/// One artifact listed in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestArtifact {
    /// `Source`: package-relative path or external URI.
    pub source: Field,
    /// `Algorithm` of the digest, as written.
    pub algorithm: Option<Field>,
    /// `Hash`: the hex digest.
    pub hash: Option<Field>,
    /// `Signature`: package path of this artifact's CMS signature file.
    pub signature: Option<Field>,
    /// `Certificate`: package path of the certificate for that signature.
    pub certificate: Option<Field>,
    /// Other keys of the block, verbatim.
    pub other: IndexMap<String, Field>,
}

/// A named set of non-MANO artifacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonManoArtifactSet {
    /// 1-based line of the set name.
    pub line: u32,
    /// The `Source:` paths of the set.
    pub sources: Vec<Field>,
    /// Other keys of the set, verbatim (e.g. ONAP's `vendor_name`).
    pub other: IndexMap<String, Field>,
}

/// The manifest's trailing CMS signature block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSignature {
    /// The PEM text, markers included.
    pub pem: String,
    /// 1-based line of the `-----BEGIN CMS-----` marker.
    pub line: u32,
}

/// A parsed manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Package-relative path of the manifest.
    pub file: String,
    /// 1-based line of `metadata:`, 0 when there is none.
    pub metadata_line: u32,
    /// The `metadata:` pairs in file order (surrounding quotes removed from values).
    pub metadata: IndexMap<String, Field>,
    /// The `Source:` blocks in file order.
    pub artifacts: Vec<ManifestArtifact>,
    /// `non_mano_artifact_sets`, by set name.
    pub non_mano_artifact_sets: IndexMap<String, NonManoArtifactSet>,
    /// Top-level keys that belong to no section, verbatim.
    pub other: IndexMap<String, Field>,
    /// The trailing CMS signature, if any.
    pub signature: Option<ManifestSignature>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SigState {
    Before,
    Inside,
    After,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Metadata,
    Artifact,
    NonMano,
}

impl Manifest {
    /// A value of the `metadata:` section.
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).map(|f| f.value.as_str())
    }

    /// `vnf_product_name`.
    pub fn vnf_product_name(&self) -> Option<&str> {
        self.metadata_value("vnf_product_name")
    }

    /// `vnf_provider_id`.
    pub fn vnf_provider_id(&self) -> Option<&str> {
        self.metadata_value("vnf_provider_id")
    }

    /// `vnf_package_version`.
    pub fn vnf_package_version(&self) -> Option<&str> {
        self.metadata_value("vnf_package_version")
    }

    /// `vnf_release_date_time`.
    pub fn vnf_release_date_time(&self) -> Option<&str> {
        self.metadata_value("vnf_release_date_time")
    }

    /// `vnfd_id`.
    pub fn vnfd_id(&self) -> Option<&str> {
        self.metadata_value("vnfd_id")
    }

    /// `vnfm_info`.
    pub fn vnfm_info(&self) -> Option<&str> {
        self.metadata_value("vnfm_info")
    }

    /// `compatible_specification_versions`, split on commas.
    pub fn compatible_specification_versions(&self) -> Vec<&str> {
        self.metadata_value("compatible_specification_versions")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Parses the text of the manifest found at `file`.
    pub fn parse(file: &str, text: &str) -> (Manifest, Vec<Diagnostic>) {
        Parser::new(file).run(text)
    }
}

struct Parser<'f> {
    file: &'f str,
    m: Manifest,
    diags: Vec<Diagnostic>,
    section: Section,
    /// Indentation of set names in `non_mano_artifact_sets`.
    set_indent: Option<usize>,
    current_set: Option<String>,
}

impl<'f> Parser<'f> {
    fn new(file: &'f str) -> Self {
        Parser {
            file,
            m: Manifest {
                file: file.to_string(),
                metadata_line: 0,
                metadata: IndexMap::new(),
                artifacts: Vec::new(),
                non_mano_artifact_sets: IndexMap::new(),
                other: IndexMap::new(),
                signature: None,
            },
            diags: Vec::new(),
            section: Section::None,
            set_indent: None,
            current_set: None,
        }
    }

    fn error(&mut self, line: u32, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::error("csar.manifest-syntax", message).at_pos(self.file, line, 1));
    }

    fn warn(&mut self, code: &'static str, line: u32, message: impl Into<String>) {
        self.diags
            .push(Diagnostic::warning(code, message).at_pos(self.file, line, 1));
    }

    fn run(mut self, text: &str) -> (Manifest, Vec<Diagnostic>) {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut signature: Option<ManifestSignature> = None;
        let mut state = SigState::Before;
        for (i, raw) in text.split('\n').enumerate() {
            let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let trimmed = line.trim();
            match state {
                SigState::Inside => {
                    if let Some(sig) = signature.as_mut() {
                        sig.pem.push_str(trimmed);
                        sig.pem.push('\n');
                    }
                    if trimmed == CMS_END {
                        state = SigState::After;
                    }
                    continue;
                }
                SigState::After => {
                    if !trimmed.is_empty() {
                        self.diags.push(
                            Diagnostic::error(
                                "csar.content-after-signature",
                                "the manifest continues after its CMS signature; that content is not signed",
                            )
                            .at_pos(self.file, line_no, 1),
                        );
                        break;
                    }
                    continue;
                }
                SigState::Before => {}
            }
            if trimmed.starts_with(CMS_BEGIN) {
                signature = Some(ManifestSignature {
                    pem: format!("{trimmed}\n"),
                    line: line_no,
                });
                state = SigState::Inside;
                continue;
            }
            if trimmed.is_empty() {
                if self.section == Section::Artifact {
                    self.section = Section::None;
                }
                continue;
            }
            if trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let Some((key, value)) = trimmed.split_once(':') else {
                self.error(line_no, format!("expected `key: value`, found `{trimmed}`"));
                continue;
            };
            let key = key.trim();
            let value = value.trim();
            if indent == 0 {
                self.top_level(key, value, line_no);
            } else {
                self.indented(key, value, indent, line_no);
            }
        }
        if let Some(sig) = &signature
            && state == SigState::Inside
        {
            self.error(
                sig.line,
                format!("the CMS signature block has no `{CMS_END}` line"),
            );
        }
        self.m.signature = signature;
        (self.m, self.diags)
    }

    fn top_level(&mut self, key: &str, value: &str, line: u32) {
        let lower = key.to_ascii_lowercase();
        match lower.as_str() {
            "metadata" if value.is_empty() => {
                if self.m.metadata_line != 0 {
                    self.warn(
                        "csar.manifest-duplicate-key",
                        line,
                        "a second `metadata:` section; its pairs are merged into the first",
                    );
                } else {
                    self.m.metadata_line = line;
                }
                self.section = Section::Metadata;
            }
            "non_mano_artifact_sets" if value.is_empty() => {
                self.section = Section::NonMano;
                self.set_indent = None;
                self.current_set = None;
            }
            "source" => {
                self.m.artifacts.push(ManifestArtifact {
                    source: Field::new(value, line),
                    algorithm: None,
                    hash: None,
                    signature: None,
                    certificate: None,
                    other: IndexMap::new(),
                });
                self.section = Section::Artifact;
            }
            _ if self.section == Section::Artifact => self.artifact_key(key, value, line),
            "algorithm" | "hash" | "signature" | "certificate" => {
                self.error(line, format!("`{key}:` appears outside a `Source:` block"));
            }
            _ => {
                self.warn(
                    "csar.manifest-unknown-key",
                    line,
                    format!("`{key}` is not a manifest key; it is kept but not interpreted"),
                );
                self.m
                    .other
                    .entry(key.to_string())
                    .or_insert_with(|| Field::new(value, line));
                self.section = Section::None;
            }
        }
    }

    fn artifact_key(&mut self, key: &str, value: &str, line: u32) {
        let Some(artifact) = self.m.artifacts.last_mut() else {
            return;
        };
        let slot = match key.to_ascii_lowercase().as_str() {
            "algorithm" => &mut artifact.algorithm,
            "hash" => &mut artifact.hash,
            "signature" => &mut artifact.signature,
            "certificate" => &mut artifact.certificate,
            _ => {
                artifact
                    .other
                    .entry(key.to_string())
                    .or_insert_with(|| Field::new(value, line));
                return;
            }
        };
        if slot.is_some() {
            self.warn(
                "csar.manifest-duplicate-key",
                line,
                format!("`{key}` is given twice for one `Source:`; the first value is used"),
            );
            return;
        }
        *slot = Some(Field::new(value, line));
    }

    fn indented(&mut self, key: &str, value: &str, indent: usize, line: u32) {
        match self.section {
            Section::Metadata => {
                if self.m.metadata.contains_key(key) {
                    self.warn(
                        "csar.manifest-duplicate-key",
                        line,
                        format!("metadata key `{key}` is given twice; the first value is used"),
                    );
                    return;
                }
                self.m
                    .metadata
                    .insert(key.to_string(), Field::new(unquote(value), line));
            }
            Section::Artifact => self.artifact_key(key, value, line),
            Section::NonMano => self.non_mano(key, value, indent, line),
            Section::None => {
                self.error(line, format!("indented line `{key}` belongs to no section"));
            }
        }
    }

    fn non_mano(&mut self, key: &str, value: &str, indent: usize, line: u32) {
        let set_indent = *self.set_indent.get_or_insert(indent);
        if indent <= set_indent {
            if !value.is_empty() {
                self.error(
                    line,
                    format!("expected a set name (`name:`) under non_mano_artifact_sets, found `{key}: {value}`"),
                );
                return;
            }
            if self.m.non_mano_artifact_sets.contains_key(key) {
                self.warn(
                    "csar.manifest-duplicate-key",
                    line,
                    format!("non-MANO artifact set `{key}` is given twice; entries are merged"),
                );
            } else {
                self.m.non_mano_artifact_sets.insert(
                    key.to_string(),
                    NonManoArtifactSet {
                        line,
                        sources: Vec::new(),
                        other: IndexMap::new(),
                    },
                );
            }
            self.current_set = Some(key.to_string());
            return;
        }
        let Some(set) = self
            .current_set
            .as_ref()
            .and_then(|name| self.m.non_mano_artifact_sets.get_mut(name))
        else {
            return;
        };
        if key.eq_ignore_ascii_case("source") {
            set.sources.push(Field::new(value, line));
        } else {
            set.other
                .entry(key.to_string())
                .or_insert_with(|| Field::new(unquote(value), line));
        }
    }
}

/// Removes one pair of matching surrounding quotes.
fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(diags: &[Diagnostic]) -> Vec<&str> {
        diags.iter().map(|d| d.code.as_ref()).collect()
    }

    const SOL004: &str = "metadata:
  vnf_product_name: vMRF
  vnf_provider_id: Acme
  vnf_package_version: \"1.0\"
  vnf_release_date_time: 2017-01-01T10:00:00+03:00
  compatible_specification_versions: 2.6.1, 3.3.1
  vnfm_info: etsivnfm:v2.6.1

# digests
Source: MRF.yaml
Algorithm: SHA-256
Hash: 09e5a788acb180162c51679ae4c998039fa6644505db2415e35107d1ee213943

Source: scripts/install.sh
Algorithm: SHA-256
Hash: d0e7828293355a07c2dccaaa765c80b507e60e6167067c950dc2e6b0da0dbd8b
Signature: scripts/install.sh.sig
Certificate: scripts/install.sh.cert

Source: https://www.vendor_org.com/MRF/v4.1/scripts/scale/scale.sh
Algorithm: SHA-256
Hash: 36f945953929812aca2701b114b068c71bd8c95ceb3609711428c26325649165

non_mano_artifact_sets:
  foo_bar:
    Source: foo/bar/path1
    Source: foo/bar/path2
  prv.happy-nfv.cool:
    Source: happy/cool/path1
";

    #[test]
    fn parses_a_sol004_manifest() {
        let (m, diags) = Manifest::parse("MRF.mf", SOL004);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(m.metadata_line, 1);
        assert_eq!(m.vnf_product_name(), Some("vMRF"));
        assert_eq!(m.vnf_package_version(), Some("1.0"));
        assert_eq!(m.vnfm_info(), Some("etsivnfm:v2.6.1"));
        assert_eq!(m.compatible_specification_versions(), ["2.6.1", "3.3.1"]);
        assert_eq!(m.metadata["vnf_provider_id"].line, 3);
        assert_eq!(m.artifacts.len(), 3);
        assert_eq!(m.artifacts[0].source, Field::new("MRF.yaml", 10));
        assert_eq!(m.artifacts[0].hash.as_ref().unwrap().line, 12);
        assert_eq!(
            m.artifacts[1].signature,
            Some(Field::new("scripts/install.sh.sig", 17))
        );
        assert_eq!(
            m.artifacts[1].certificate.as_ref().unwrap().value,
            "scripts/install.sh.cert"
        );
        assert!(m.artifacts[2].source.value.starts_with("https://"));
        let sets: Vec<_> = m
            .non_mano_artifact_sets
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(sets, ["foo_bar", "prv.happy-nfv.cool"]);
        assert_eq!(m.non_mano_artifact_sets["foo_bar"].sources.len(), 2);
        assert_eq!(
            m.non_mano_artifact_sets["foo_bar"].sources[1],
            Field::new("foo/bar/path2", 27)
        );
        assert!(m.signature.is_none());
    }

    #[test]
    fn crlf_and_no_trailing_newline_give_the_same_result() {
        let (lf, _) = Manifest::parse("a.mf", SOL004.trim_end());
        let (crlf, diags) = Manifest::parse("a.mf", &SOL004.replace('\n', "\r\n"));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(lf, crlf);
    }

    #[test]
    fn keeps_onap_asd_keys_and_lenient_set_entries() {
        let text = "metadata:\r\n  application_name: SampleApp\r\n  entry_definition_type: asd\r\n\r\nSource: asd.mf\r\nSource: Definitions/asd.yaml\r\n\r\nnon_mano_artifact_sets:\r\n    onap_others:\r\n        Source: Files/Guides/user_guide.txt\r\n    onap_vendor_artifacts:\r\n        vendor_name: Ericsson\r\n        source:Files/rapp1/rapp.zip\r\n";
        let (m, diags) = Manifest::parse("asd.mf", text);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(m.metadata_value("application_name"), Some("SampleApp"));
        assert_eq!(m.metadata_value("entry_definition_type"), Some("asd"));
        assert_eq!(m.artifacts.len(), 2);
        assert!(m.artifacts.iter().all(|a| a.hash.is_none()));
        let vendor = &m.non_mano_artifact_sets["onap_vendor_artifacts"];
        assert_eq!(vendor.sources, [Field::new("Files/rapp1/rapp.zip", 13)]);
        assert_eq!(vendor.other["vendor_name"].value, "Ericsson");
    }

    #[test]
    fn reads_the_trailing_signature_and_refuses_content_after_it() {
        let text = "Source: a.yaml\nAlgorithm: SHA-256\nHash: 00\n\n-----BEGIN CMS-----\nMIIB\nAAAA\n-----END CMS-----\n";
        let (m, diags) = Manifest::parse("a.mf", text);
        assert!(diags.is_empty(), "{diags:?}");
        let sig = m.signature.unwrap();
        assert_eq!(sig.line, 5);
        assert_eq!(
            sig.pem,
            "-----BEGIN CMS-----\nMIIB\nAAAA\n-----END CMS-----\n"
        );

        let (_, diags) = Manifest::parse("a.mf", &format!("{text}Source: evil.sh\n"));
        assert_eq!(codes(&diags), ["csar.content-after-signature"]);
        assert_eq!(diags[0].location.as_ref().unwrap().line, 9);

        let (m, diags) = Manifest::parse("a.mf", "Source: a\n-----BEGIN CMS-----\nMIIB\n");
        assert_eq!(codes(&diags), ["csar.manifest-syntax"]);
        assert!(m.signature.is_some());
    }

    #[test]
    fn reports_misplaced_and_unknown_keys() {
        let text = "Algorithm: SHA-256\nvnf_thing: 1\n  indented: x\nSource: a\nAlgorithm: SHA-256\nAlgorithm: SHA-512\nbroken line\n";
        let (m, diags) = Manifest::parse("a.mf", text);
        assert_eq!(
            codes(&diags),
            [
                "csar.manifest-syntax",
                "csar.manifest-unknown-key",
                "csar.manifest-syntax",
                "csar.manifest-duplicate-key",
                "csar.manifest-syntax"
            ]
        );
        let lines: Vec<u32> = diags
            .iter()
            .map(|d| d.location.as_ref().unwrap().line)
            .collect();
        assert_eq!(lines, [1, 2, 3, 6, 7]);
        assert_eq!(m.artifacts[0].algorithm.as_ref().unwrap().value, "SHA-256");
        assert_eq!(m.other["vnf_thing"].value, "1");
    }
}
