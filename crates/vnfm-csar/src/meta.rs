//! `TOSCA-Metadata/TOSCA.meta`: the block-structured key/value file at the heart of a CSAR.
//!
//! The file is a sequence of blocks separated by blank lines; each block holds `Key: value`
//! lines. A line starting with a single space continues the previous value (the space is
//! dropped and the rest appended verbatim, as in JAR manifests, which TOSCA.meta derives
//! from). Lines starting with `#` are ignored. The first block describes the package
//! (`TOSCA-Meta-File-Version`, `CSAR-Version`, `Created-by`, `Entry-Definitions`, the SOL004
//! `ETSI-Entry-*` keys, `Other-Definitions`); later blocks starting with `Name:` describe one
//! artifact each, TOSCA-1.0 style, optionally with `Content-Type`, `Algorithm` and `Hash`
//! (Tacker checks those digests). Known keys match case-insensitively (`Created-By` and
//! `Created-by` both occur); every other key is kept verbatim. Every value keeps its line
//! number so later checks can point at it.
//!
//! Parsing never fails: problems become [`Diagnostic`]s and the parser keeps going.

use indexmap::IndexMap;
use vnfm_descriptor::diag::Diagnostic;

/// Package-relative path of the TOSCA.meta file.
pub const TOSCA_META_PATH: &str = "TOSCA-Metadata/TOSCA.meta";

/// A value read from a `Key: value` line, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The value, trimmed.
    pub value: String,
    /// 1-based line of the key in its file.
    pub line: u32,
}

impl Field {
    /// A field with the given value and line.
    pub fn new(value: impl Into<String>, line: u32) -> Self {
        Field {
            value: value.into(),
            line,
        }
    }
}

/// One `Key: value` line of TOSCA.meta, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaEntry {
    /// The key as written.
    pub key: String,
    /// The value, trimmed, with continuation lines joined.
    pub value: String,
    /// 1-based line of the key.
    pub line: u32,
}

/// A block of TOSCA.meta: consecutive `Key: value` lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetaBlock {
    /// 1-based line where the block starts.
    pub line: u32,
    /// The entries in file order.
    pub entries: Vec<MetaEntry>,
}

impl MetaBlock {
    /// The first entry whose key matches `key`, ignoring ASCII case.
    pub fn get(&self, key: &str) -> Option<&MetaEntry> {
        self.entries
            .iter()
            .find(|e| e.key.eq_ignore_ascii_case(key))
    }

    fn field(&self, key: &str) -> Option<Field> {
        self.get(key).map(|e| Field::new(e.value.clone(), e.line))
    }
}

/// An artifact described by a `Name:` block of TOSCA.meta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaArtifact {
    /// `Name`: package-relative path, or an external URI.
    pub name: Field,
    /// `Content-Type`.
    pub content_type: Option<Field>,
    /// `Algorithm` of the digest, as written (`SHA-256`, `SHA256`, ...).
    pub algorithm: Option<Field>,
    /// `Hash`: the hex digest.
    pub hash: Option<Field>,
    /// Other keys of the block, verbatim.
    pub other: IndexMap<String, Field>,
}

/// Where the package metadata came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaOrigin {
    /// `TOSCA-Metadata/TOSCA.meta`.
    ToscaMetaFile,
    /// No TOSCA.meta: SOL004 short notation, with the single root YAML file as entry
    /// definitions and the manifest and certificate named after it.
    ShortNotation,
}

/// The parsed package metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToscaMeta {
    /// Package-relative path of the file it was read from (for short notation: the entry
    /// definitions file).
    pub file: String,
    /// Whether it came from TOSCA.meta or was derived from the package layout.
    pub origin: MetaOrigin,
    /// `TOSCA-Meta-File-Version`.
    pub tosca_meta_file_version: Option<Field>,
    /// `CSAR-Version`.
    pub csar_version: Option<Field>,
    /// `Created-by`.
    pub created_by: Option<Field>,
    /// `Entry-Definitions`, as written.
    pub entry_definitions: Option<Field>,
    /// `ETSI-Entry-Manifest`.
    pub etsi_entry_manifest: Option<Field>,
    /// `ETSI-Entry-Change-Log`.
    pub etsi_entry_change_log: Option<Field>,
    /// `ETSI-Entry-Licenses` (a file or a directory).
    pub etsi_entry_licenses: Option<Field>,
    /// `ETSI-Entry-Certificate`.
    pub etsi_entry_certificate: Option<Field>,
    /// `Other-Definitions`: the space-separated list, split (double quotes group a path
    /// containing spaces).
    pub other_definitions: Vec<Field>,
    /// Other keys of the first block, verbatim.
    pub other: IndexMap<String, Field>,
    /// The artifacts described by `Name:` blocks.
    pub artifacts: Vec<MetaArtifact>,
    /// Every block as written, the first one included.
    pub blocks: Vec<MetaBlock>,
}

/// TOSCA-Meta-File-Version values this crate understands.
const KNOWN_META_VERSIONS: &[&str] = &["1.0", "2.0"];
/// CSAR-Version values this crate understands; SOL004 requires 1.1 (2.0 is TOSCA 2.0).
const KNOWN_CSAR_VERSIONS: &[&str] = &["1.1", "2.0"];

/// Keys of the first block, canonical spelling first, then accepted deprecated spellings.
const KEYS: &[(&str, &[&str])] = &[
    ("TOSCA-Meta-File-Version", &["TOSCA-Meta-Version"]),
    ("CSAR-Version", &[]),
    ("Created-by", &[]),
    ("Entry-Definitions", &[]),
    ("ETSI-Entry-Manifest", &["Entry-Manifest"]),
    ("ETSI-Entry-Change-Log", &["Entry-Change-Log"]),
    ("ETSI-Entry-Licenses", &["Entry-Licenses"]),
    ("ETSI-Entry-Certificate", &["Entry-Certificate"]),
    ("Other-Definitions", &[]),
];

impl ToscaMeta {
    /// Metadata with only a file and an origin; everything else empty.
    pub fn empty(file: impl Into<String>, origin: MetaOrigin) -> Self {
        ToscaMeta {
            file: file.into(),
            origin,
            tosca_meta_file_version: None,
            csar_version: None,
            created_by: None,
            entry_definitions: None,
            etsi_entry_manifest: None,
            etsi_entry_change_log: None,
            etsi_entry_licenses: None,
            etsi_entry_certificate: None,
            other_definitions: Vec::new(),
            other: IndexMap::new(),
            artifacts: Vec::new(),
            blocks: Vec::new(),
        }
    }

    /// Parses the text of a TOSCA.meta file found at `file`.
    ///
    /// Syntax problems, missing or unknown versions and deprecated keys are returned as
    /// diagnostics; a missing `Entry-Definitions` is left for the caller to judge (it is
    /// `None`).
    pub fn parse(file: &str, text: &str) -> (ToscaMeta, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let blocks = split_blocks(file, text, &mut diags);
        let mut meta = ToscaMeta::empty(file, MetaOrigin::ToscaMetaFile);
        if let Some(first) = blocks.first() {
            meta.read_first_block(first, &mut diags);
        }
        for block in blocks.iter().skip(1) {
            if block.get("Name").is_some() {
                meta.artifacts.push(read_artifact(block));
            }
        }
        // A first block that is itself a Name block (no package block at all).
        if let Some(first) = blocks.first()
            && first.get("Name").is_some()
            && first.get("Entry-Definitions").is_none()
        {
            meta.artifacts.insert(0, read_artifact(first));
        }
        meta.blocks = blocks;
        meta.check_versions(&mut diags);
        (meta, diags)
    }

    fn read_first_block(&mut self, block: &MetaBlock, diags: &mut Vec<Diagnostic>) {
        let mut seen: Vec<String> = Vec::new();
        for entry in &block.entries {
            let canonical = KEYS.iter().find_map(|(name, old)| {
                if entry.key.eq_ignore_ascii_case(name) {
                    Some(*name)
                } else if old.iter().any(|o| entry.key.eq_ignore_ascii_case(o)) {
                    diags.push(
                        Diagnostic::warning(
                            "csar.deprecated-key",
                            format!("`{}` is a deprecated spelling of `{name}`", entry.key),
                        )
                        .at_pos(self.file.clone(), entry.line, 1)
                        .with_help(format!("write `{name}`")),
                    );
                    Some(*name)
                } else {
                    None
                }
            });
            let field = Field::new(entry.value.clone(), entry.line);
            let Some(canonical) = canonical else {
                if block.get("Name").is_some() && entry.key.eq_ignore_ascii_case("Name") {
                    continue;
                }
                self.other.entry(entry.key.clone()).or_insert(field);
                continue;
            };
            if seen.iter().any(|s| s == canonical) {
                diags.push(
                    Diagnostic::warning(
                        "csar.meta-duplicate-key",
                        format!("`{canonical}` is given more than once; the first value is used"),
                    )
                    .at_pos(self.file.clone(), entry.line, 1),
                );
                continue;
            }
            seen.push(canonical.to_string());
            match canonical {
                "TOSCA-Meta-File-Version" => self.tosca_meta_file_version = Some(field),
                "CSAR-Version" => self.csar_version = Some(field),
                "Created-by" => self.created_by = Some(field),
                "Entry-Definitions" => self.entry_definitions = Some(field),
                "ETSI-Entry-Manifest" => self.etsi_entry_manifest = Some(field),
                "ETSI-Entry-Change-Log" => self.etsi_entry_change_log = Some(field),
                "ETSI-Entry-Licenses" => self.etsi_entry_licenses = Some(field),
                "ETSI-Entry-Certificate" => self.etsi_entry_certificate = Some(field),
                _ => {
                    self.other_definitions = split_definitions(&entry.value)
                        .into_iter()
                        .map(|v| Field::new(v, entry.line))
                        .collect();
                }
            }
        }
    }

    fn check_versions(&self, diags: &mut Vec<Diagnostic>) {
        let line1 = self.blocks.first().map_or(1, |b| b.line);
        let checks = [
            (
                "TOSCA-Meta-File-Version",
                &self.tosca_meta_file_version,
                KNOWN_META_VERSIONS,
                "csar.missing-meta-file-version",
            ),
            (
                "CSAR-Version",
                &self.csar_version,
                KNOWN_CSAR_VERSIONS,
                "csar.missing-csar-version",
            ),
        ];
        for (key, field, known, missing_code) in checks {
            match field {
                None => diags.push(
                    Diagnostic::error(missing_code, format!("`{}` has no {key} key", self.file))
                        .at_pos(self.file.clone(), line1, 0)
                        .with_help(format!("add `{key}: {}` to the first block", known[0])),
                ),
                Some(f) if !known.contains(&f.value.as_str()) => {
                    let note = if key == "CSAR-Version" && f.value == "1.0" {
                        " (TOSCA 1.0 XML CSARs; SOL004 requires 1.1)"
                    } else {
                        ""
                    };
                    diags.push(
                        Diagnostic::warning(
                            "csar.unsupported-version",
                            format!(
                                "{key} `{}` is not one of {}{note}",
                                f.value,
                                known.join(", ")
                            ),
                        )
                        .at_pos(self.file.clone(), f.line, 0),
                    );
                }
                Some(_) => {}
            }
        }
        if self.created_by.is_none() && !self.blocks.is_empty() {
            diags.push(
                Diagnostic::warning(
                    "csar.missing-created-by",
                    format!("`{}` has no Created-by key", self.file),
                )
                .at_pos(self.file.clone(), line1, 0),
            );
        }
    }
}

fn read_artifact(block: &MetaBlock) -> MetaArtifact {
    let mut other = IndexMap::new();
    for e in &block.entries {
        let known = ["Name", "Content-Type", "Algorithm", "Hash"]
            .iter()
            .any(|k| e.key.eq_ignore_ascii_case(k));
        if !known {
            other
                .entry(e.key.clone())
                .or_insert_with(|| Field::new(e.value.clone(), e.line));
        }
    }
    MetaArtifact {
        name: block
            .field("Name")
            .unwrap_or_else(|| Field::new("", block.line)),
        content_type: block.field("Content-Type"),
        algorithm: block.field("Algorithm"),
        hash: block.field("Hash"),
        other,
    }
}

/// Splits the text into blocks of entries, joining continuation lines.
fn split_blocks(file: &str, text: &str, diags: &mut Vec<Diagnostic>) -> Vec<MetaBlock> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut blocks: Vec<MetaBlock> = Vec::new();
    let mut current = MetaBlock::default();
    for (i, raw) in text.split('\n').enumerate() {
        let line_no = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            if !current.entries.is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix(' ') {
            match current.entries.last_mut() {
                Some(last) => last.value.push_str(rest),
                None => diags.push(
                    Diagnostic::error(
                        "csar.meta-syntax",
                        "a continuation line (starting with a space) has no key line before it",
                    )
                    .at_pos(file, line_no, 1),
                ),
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            diags.push(
                Diagnostic::error(
                    "csar.meta-syntax",
                    format!("expected `Key: value`, found `{}`", line.trim()),
                )
                .at_pos(file, line_no, 1),
            );
            continue;
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            diags.push(
                Diagnostic::error(
                    "csar.meta-syntax",
                    format!("`{key}` is not a valid key (empty or containing spaces)"),
                )
                .at_pos(file, line_no, 1),
            );
            continue;
        }
        if key.eq_ignore_ascii_case("Name") && !current.entries.is_empty() {
            // A new artifact block without the blank line that should separate it.
            diags.push(
                Diagnostic::warning(
                    "csar.meta-missing-blank-line",
                    "a `Name:` line starts a new block; blocks are separated by a blank line",
                )
                .at_pos(file, line_no, 1),
            );
            blocks.push(std::mem::take(&mut current));
        }
        if current.entries.is_empty() {
            current.line = line_no;
        } else if !blocks.is_empty() && current.get(key).is_some() {
            // Later blocks only: `read_first_block` reports duplicates in the first block,
            // where it also knows the deprecated spellings of each key.
            diags.push(
                Diagnostic::warning(
                    "csar.meta-duplicate-key",
                    format!(
                        "`{key}` is given more than once in this block; the first value is used"
                    ),
                )
                .at_pos(file, line_no, 1),
            );
        }
        current.entries.push(MetaEntry {
            key: key.to_string(),
            value: value.trim_start().to_string(),
            line: line_no,
        });
    }
    if !current.entries.is_empty() {
        blocks.push(current);
    }
    for block in &mut blocks {
        for e in &mut block.entries {
            e.value = e.value.trim_end().to_string();
        }
    }
    blocks
}

/// Splits an `Other-Definitions` value: whitespace-separated, `"..."` groups spaces.
fn split_definitions(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (ToscaMeta, Vec<Diagnostic>) {
        ToscaMeta::parse(TOSCA_META_PATH, text)
    }

    fn codes(diags: &[Diagnostic]) -> Vec<&str> {
        diags.iter().map(|d| d.code.as_ref()).collect()
    }

    #[test]
    fn reads_the_first_block_and_artifact_blocks_with_lines() {
        let text = "TOSCA-Meta-File-Version: 1.0\nCreated-by: dummy_user\nCSAR-Version: 1.1\nEntry-Definitions: Definitions/top.yaml\n\nName: Files/kubernetes/pod.yaml\nContent-Type: application/yaml\nAlgorithm: SHA-256\nHash: 08fabdd5\n\nName: http://127.0.0.1:44380/x.yaml\nContent-Type: test-data\n";
        let (meta, diags) = parse(text);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            meta.entry_definitions,
            Some(Field::new("Definitions/top.yaml", 4))
        );
        assert_eq!(meta.created_by.as_ref().unwrap().value, "dummy_user");
        assert_eq!(meta.artifacts.len(), 2);
        let a = &meta.artifacts[0];
        assert_eq!(a.name, Field::new("Files/kubernetes/pod.yaml", 6));
        assert_eq!(a.algorithm, Some(Field::new("SHA-256", 8)));
        assert_eq!(a.hash, Some(Field::new("08fabdd5", 9)));
        assert_eq!(
            meta.artifacts[1].name.value,
            "http://127.0.0.1:44380/x.yaml"
        );
        assert_eq!(meta.artifacts[1].hash, None);
        assert_eq!(meta.blocks.len(), 3);
        assert_eq!(meta.blocks[2].line, 11);
    }

    #[test]
    fn handles_crlf_and_missing_trailing_newline() {
        let text = "TOSCA-Meta-File-Version: 1.0\r\nCSAR-Version: 1.1\r\nCreated-By: Ericsson\r\nEntry-Definitions: Definitions/asd.yaml\r\nETSI-Entry-Manifest: asd.mf";
        let (meta, diags) = parse(text);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(meta.etsi_entry_manifest, Some(Field::new("asd.mf", 5)));
        assert_eq!(meta.created_by.unwrap().value, "Ericsson");
        assert_eq!(
            meta.entry_definitions.unwrap().value,
            "Definitions/asd.yaml"
        );
    }

    #[test]
    fn joins_continuation_lines_and_skips_comments() {
        let text = "# generated\nTOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: Definitions/very/long/pa\n th/top.yaml\nOther-Definitions: a.yaml \"b c.yaml\"\n  d.yaml\n";
        let (meta, diags) = parse(text);
        assert!(diags.is_empty(), "{diags:?}");
        let entry = meta.entry_definitions.unwrap();
        assert_eq!(entry.value, "Definitions/very/long/path/top.yaml");
        assert_eq!(entry.line, 5);
        // Only the first space of a continuation line is dropped, so the second separates.
        let others: Vec<_> = meta
            .other_definitions
            .iter()
            .map(|f| f.value.as_str())
            .collect();
        assert_eq!(others, ["a.yaml", "b c.yaml", "d.yaml"]);
    }

    #[test]
    fn keeps_unknown_keys_and_reports_deprecated_ones() {
        let text = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: a.yaml\nEntry-Manifest: a.mf\nX-Vendor: value: with colon\n";
        let (meta, diags) = parse(text);
        assert_eq!(codes(&diags), ["csar.deprecated-key"]);
        assert_eq!(diags[0].location.as_ref().unwrap().line, 5);
        assert_eq!(meta.etsi_entry_manifest.unwrap().value, "a.mf");
        assert_eq!(meta.other["X-Vendor"], Field::new("value: with colon", 6));
    }

    #[test]
    fn reports_missing_and_unknown_versions_at_their_lines() {
        let (_, diags) = parse("Created-by: A\nEntry-Definitions: a.yaml\n");
        assert_eq!(
            codes(&diags),
            [
                "csar.missing-meta-file-version",
                "csar.missing-csar-version"
            ]
        );
        let (_, diags) = parse(
            "TOSCA-Meta-File-Version: 3.7\nCSAR-Version: 1.0\nCreated-by: A\nEntry-Definitions: a.yaml\n",
        );
        assert_eq!(
            codes(&diags),
            ["csar.unsupported-version", "csar.unsupported-version"]
        );
        assert_eq!(diags[0].location.as_ref().unwrap().line, 1);
        assert_eq!(diags[1].location.as_ref().unwrap().line, 2);
        assert!(diags[1].message.contains("SOL004 requires 1.1"));
    }

    #[test]
    fn reports_syntax_errors_and_keeps_going() {
        let text = "TOSCA-Meta-File-Version: 1.0\nthis line has no colon\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: a.yaml\n";
        let (meta, diags) = parse(text);
        assert_eq!(codes(&diags), ["csar.meta-syntax"]);
        assert_eq!(diags[0].location.as_ref().unwrap().line, 2);
        assert_eq!(meta.entry_definitions.unwrap().value, "a.yaml");

        let (_, diags) = parse(" leading continuation\nTOSCA-Meta-File-Version: 1.0\n");
        assert_eq!(diags[0].code, "csar.meta-syntax");
        assert_eq!(diags[0].location.as_ref().unwrap().line, 1);
    }

    #[test]
    fn a_name_line_without_blank_line_starts_a_new_block() {
        let text = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: a.yaml\nName: Files/x\nAlgorithm: SHA-256\nHash: 00\n";
        let (meta, diags) = parse(text);
        assert_eq!(codes(&diags), ["csar.meta-missing-blank-line"]);
        assert_eq!(meta.artifacts.len(), 1);
        assert_eq!(meta.artifacts[0].name.value, "Files/x");
        assert_eq!(meta.entry_definitions.unwrap().value, "a.yaml");
    }

    #[test]
    fn duplicate_keys_keep_the_first_value() {
        let text = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: a.yaml\nEntry-Definitions: b.yaml\n";
        let (meta, diags) = parse(text);
        assert_eq!(codes(&diags), ["csar.meta-duplicate-key"]);
        assert_eq!(meta.entry_definitions.unwrap().value, "a.yaml");
    }

    #[test]
    fn duplicate_keys_in_artifact_blocks_are_reported() {
        let text = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: A\nEntry-Definitions: a.yaml\n\nName: Files/x\nHash: 01\nHash: 02\n";
        let (meta, diags) = parse(text);
        assert_eq!(codes(&diags), ["csar.meta-duplicate-key"]);
        assert_eq!(diags[0].location.as_ref().unwrap().line, 8);
        assert_eq!(meta.artifacts[0].hash.as_ref().unwrap().value, "01");
    }

    #[test]
    fn a_bom_is_ignored() {
        let (meta, _) = parse("\u{feff}TOSCA-Meta-File-Version: 1.0\nEntry-Definitions: a.yaml\n");
        assert_eq!(meta.tosca_meta_file_version.unwrap().value, "1.0");
    }
}
