//! Named leniencies for known defects of published ASD files.
//!
//! Each repair here is reported as a warning with a stable `asd.quirk.*` code, so a package that
//! relies on one is visibly accepted rather than silently: CRLF line endings, and type
//! definitions written at column 0 under an empty `data_types:` / `artifact_types:` key.

use vnfm_descriptor::{Diagnostic, Location};

use crate::yaml::{Node, Value};

/// Code of the CRLF line endings warning.
pub const CRLF: &str = "asd.quirk.crlf-line-endings";
/// Code of the warning for type definitions at column 0 after an empty types section.
pub const TYPES_AT_COLUMN_0: &str = "asd.quirk.types-at-column-0";
/// Code of the warning for a number written where a string is declared.
pub const FLOAT_FOR_STRING: &str = "asd.quirk.float-for-string";
/// Code of the warning for `itemId` written instead of the declared item id property.
pub const ITEM_ID_SPELLING: &str = "asd.quirk.item-id-spelling";

/// Keys TOSCA 1.2/1.3 allows at the top level of a service template or type file.
const TOP_LEVEL_KEYS: &[&str] = &[
    "tosca_definitions_version",
    "tosca_default_namespace",
    "template_name",
    "template_author",
    "template_version",
    "namespace",
    "metadata",
    "description",
    "dsl_definitions",
    "repositories",
    "imports",
    "artifact_types",
    "data_types",
    "capability_types",
    "interface_types",
    "relationship_types",
    "node_types",
    "group_types",
    "policy_types",
    "topology_template",
];

/// Top-level keys whose value is a map of type definitions.
const TYPE_SECTIONS: &[&str] = &[
    "artifact_types",
    "data_types",
    "capability_types",
    "interface_types",
    "relationship_types",
    "node_types",
    "group_types",
    "policy_types",
];

/// Returns `text` with CRLF line breaks turned into LF, warning when there were any. Line and
/// column numbers are unchanged by the conversion.
pub fn normalize_line_endings(file: &str, text: String, diags: &mut Vec<Diagnostic>) -> String {
    let Some(at) = text.find("\r\n") else {
        return text;
    };
    let line = text[..at].matches('\n').count() + 1;
    diags.push(
        Diagnostic::warning(
            CRLF,
            format!("`{file}` uses CRLF (Windows) line endings; read as LF"),
        )
        .at(Location::new(
            file,
            u32::try_from(line).unwrap_or(u32::MAX),
            0,
        ))
        .with_help("save the file with LF line endings"),
    );
    text.replace("\r\n", "\n")
}

/// Re-homes type definitions written at column 0.
///
/// Some published ASD type files write `data_types:` on its own and then the data types at
/// column 0, so YAML reads `data_types: null` followed by the type names as top-level keys.
/// Top-level keys that are not TOSCA keywords and that follow an empty types section (up to the
/// next TOSCA keyword) are moved into that section, with one warning per section.
pub fn rehome_column0_types(file: &str, doc: &mut Node, diags: &mut Vec<Diagnostic>) {
    let Value::Map(entries) = &mut doc.value else {
        return;
    };
    let mut out: Vec<(crate::yaml::Key, Node)> = Vec::with_capacity(entries.len());
    // Index in `out` of the empty types section currently collecting, and the names moved.
    let mut open: Option<(usize, Vec<String>)> = None;
    for (key, value) in std::mem::take(entries) {
        let keyword = TOP_LEVEL_KEYS.contains(&key.name.as_str());
        let is_type_def = matches!(value.value, Value::Map(_));
        if !keyword
            && is_type_def
            && let Some((section, moved)) = &mut open
        {
            let slot: &mut Node = &mut out[*section].1;
            if slot.is_null() {
                slot.value = Value::Map(Vec::new());
                slot.pos = key.pos;
            }
            if let Value::Map(defs) = &mut slot.value {
                moved.push(key.name.as_str().to_owned());
                defs.push((key, value));
                continue;
            }
        }
        if let Some((section, moved)) = open.take() {
            report_rehomed(file, &out[section].0, &moved, diags);
        }
        if keyword && TYPE_SECTIONS.contains(&key.name.as_str()) && value.is_null() {
            open = Some((out.len(), Vec::new()));
        }
        out.push((key, value));
    }
    if let Some((section, moved)) = open.take() {
        report_rehomed(file, &out[section].0, &moved, diags);
    }
    *entries = out;
}

fn report_rehomed(
    file: &str,
    section: &crate::yaml::Key,
    moved: &[String],
    diags: &mut Vec<Diagnostic>,
) {
    if moved.is_empty() {
        return;
    }
    let names = moved
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    diags.push(
        Diagnostic::warning(
            TYPES_AT_COLUMN_0,
            format!(
                "`{}` is empty and the {} type definition{} after it start{} at column 0 ({names}); read as entries of `{}`",
                section.name,
                moved.len(),
                if moved.len() == 1 { "" } else { "s" },
                if moved.len() == 1 { "s" } else { "" },
                section.name
            ),
        )
        .at(Location::new(file, section.pos.line, section.pos.column))
        .with_help(format!("indent the type definitions under `{}`", section.name)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    #[test]
    fn crlf_is_normalized_and_reported_at_the_first_crlf_line() {
        let mut diags = Vec::new();
        let out = normalize_line_endings("a.yaml", "a: 1\nb: 2\r\nc: 3\r\n".into(), &mut diags);
        assert_eq!(out, "a: 1\nb: 2\nc: 3\n");
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].code, CRLF);
        assert_eq!(diags[0].location.as_ref().map(|l| l.line), Some(2));
    }

    #[test]
    fn lf_text_is_untouched_without_warning() {
        let mut diags = Vec::new();
        let out = normalize_line_endings("a.yaml", "a: 1\n".into(), &mut diags);
        assert_eq!(out, "a: 1\n");
        assert!(diags.is_empty());
    }

    #[test]
    fn column_zero_types_are_moved_into_the_empty_section() {
        let text = "tosca_definitions_version: tosca_simple_yaml_1_2\ndata_types:\nx.A:\n  properties: {}\nx.B:\n  properties: {}\nnode_types:\n  x.N: {}\nartifact_types:\nx.Art:\n  derived_from: tosca.artifacts.Root\n";
        let mut doc = yaml::parse("t.yaml", text).unwrap();
        let mut diags = Vec::new();
        rehome_column0_types("t.yaml", &mut doc, &mut diags);
        let data = doc.get("data_types").unwrap();
        let names: Vec<&str> = data
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.name.as_str())
            .collect();
        assert_eq!(names, ["x.A", "x.B"]);
        assert!(doc.get("artifact_types").unwrap().get("x.Art").is_some());
        assert!(doc.get("x.A").is_none());
        assert!(doc.get("node_types").unwrap().get("x.N").is_some());
        let codes: Vec<(&str, u32)> = diags
            .iter()
            .map(|d| (d.code.as_ref(), d.location.as_ref().unwrap().line))
            .collect();
        assert_eq!(codes, [(TYPES_AT_COLUMN_0, 2), (TYPES_AT_COLUMN_0, 9)]);
    }

    #[test]
    fn well_formed_sections_are_left_alone() {
        let text = "data_types:\n  x.A: {}\nnode_types:\nx.B: {}\n";
        let mut doc = yaml::parse("t.yaml", text).unwrap();
        let before = doc.clone();
        let mut diags = Vec::new();
        rehome_column0_types("t.yaml", &mut doc, &mut diags);
        // node_types is empty and followed by a type: that one is moved, data_types untouched.
        assert_eq!(doc.get("data_types"), before.get("data_types"));
        assert!(doc.get("node_types").unwrap().get("x.B").is_some());
        assert_eq!(diags.len(), 1);

        let mut doc = yaml::parse("t.yaml", "data_types:\n  x.A: {}\n").unwrap();
        let before = doc.clone();
        let mut diags = Vec::new();
        rehome_column0_types("t.yaml", &mut doc, &mut diags);
        assert_eq!(doc, before);
        assert!(diags.is_empty());
    }
}
