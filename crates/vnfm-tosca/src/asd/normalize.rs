//! From the ASD service template to the normalized [`Asd`].
//!
//! Every model field is read from a list of accepted spellings (O-RAN 2.0 camelCase first, then
//! snake_case variants, the ONAP 0.1 types' name last), so both dialects and the variants seen
//! in the field land in the same place. Problems are reported with the position of the value or
//! key concerned; reading carries on past them so one run shows as much as possible.

use std::collections::{BTreeMap, BTreeSet};

use vnfm_descriptor::asd::{
    Asd, AsdDialect, ClusterLabel, DeploymentArtifactType, DeploymentItem,
    EnhancedClusterCapabilities, ExecutableImage, ExtCpd, InterfaceOption, InterfaceRedundancy,
    InterfaceType, Ipam, LabelRequirement, NetworkInterfaceRequirements, ParamMappings,
    RequiredCustomResource, RequiredPlugin, stages_of,
};
use vnfm_descriptor::{Diagnostic, Location};

use super::quirks;
use super::types::{Kind, TypeSet};
use crate::PackageFiles;
use crate::yaml::{Key, Node, Pos, Value};

mod items;
mod network;

/// Node type of an ONAP 0.1 ASD.
pub const ONAP_NODE_TYPE: &str = "tosca.nodes.asd";
/// Node type of an O-RAN 2.0 ASD.
pub const ORAN_NODE_TYPE: &str = "tosca.nodes.asd.Asd";
const ONAP_ITEM_TYPE: &str = "tosca.artifacts.asd.deploymentItem";
const ORAN_ITEM_TYPE: &str = "tosca.artifacts.asd.DeploymentItem";
const IMAGE_ITEM_TYPE: &str = "tosca.artifacts.asd.ExecutableImageItem";

// Accepted spellings per model field: O-RAN 2.0 first, the ONAP 0.1 types' spelling last.
const ASD_ID: &[&str] = &["asdId", "asd_id", "descriptor_id"];
const INVARIANT_ID: &[&str] = &[
    "asdInvariantId",
    "asd_invariant_id",
    "descriptor_invariant_id",
];
const VERSION: &[&str] = &["asdVersion", "asd_version", "descriptor_version"];
const SCHEMA_VERSION: &[&str] = &["asdSchemaVersion", "asd_schema_version", "schema_version"];
const PROVIDER: &[&str] = &["asdProvider", "asd_provider", "provider"];
const APP_NAME: &[&str] = &[
    "asdApplicationName",
    "asd_application_name",
    "application_name",
];
const APP_VERSION: &[&str] = &[
    "asdApplicationSwVersion",
    "asdApplicationVersion",
    "asd_application_version",
    "application_version",
];
const APP_INFO_NAME: &[&str] = &[
    "asdApplicationInfoName",
    "asd_application_info_name",
    "application_info_name",
];
const FUNCTION_DESCRIPTION: &[&str] = &[
    "asdInfoDescription",
    "asdFunctionDescription",
    "asd_function_description",
    "function_description",
];
const EXT_CPDS: &[&str] = &["asdExtCpd", "asdExtCpds", "asd_ext_cpds", "ext_cpds"];
const CLUSTER_CAPABILITIES: &[&str] = &[
    "enhancedClusterCapabilities",
    "enhanced_cluster_capabilities",
];
const DEPLOYMENT_ITEMS: &[&str] = &["deploymentItems", "deploymentItem", "deployment_items"];

const ITEM_ID: &[&str] = &[
    "deploymentItemId",
    "deployment_item_id",
    "item_id",
    "itemId",
];
const ARTIFACT_REF: &[&str] = &["artifactId", "artifact_id", "artifact"];
const ARTIFACT_TYPE: &[&str] = &["artifactType", "artifact_type"];
const DEPLOYMENT_ORDER: &[&str] = &["deploymentOrder", "deployment_order"];
const LIFECYCLE_PARAMETERS: &[&str] = &[
    "deploymentParameter",
    "deploymentParameters",
    "lifecycleParameters",
    "lifecycle_parameters",
];
const SW_IMAGE_NAME: &[&str] = &["swImageName", "sw_image_name"];
const SW_IMAGE_VERSION: &[&str] = &["swImageVersion", "sw_image_version"];

/// What the imports told about the descriptor.
#[derive(Debug, Clone, Default)]
pub struct ImportFacts {
    /// Version in the name of an imported O-RAN standard types file
    /// (`oran_asd_types_v02.00.00` -> `02.00.00`).
    pub oran_types_version: Option<String>,
}

/// Builds the ASD of the entry definitions `doc`. Returns `None` when there is no ASD node
/// template or it has no id; every problem is in `diags`.
pub fn normalize(
    files: &dyn PackageFiles,
    entry: &str,
    doc: &Node,
    types: &TypeSet,
    facts: &ImportFacts,
    diags: &mut Vec<Diagnostic>,
) -> Option<Asd> {
    let mut cx = Cx {
        files,
        file: entry,
        types,
        diags,
        dialect: AsdDialect::Onap01,
    };
    cx.read(doc, facts)
}

struct Cx<'a> {
    files: &'a dyn PackageFiles,
    file: &'a str,
    types: &'a TypeSet,
    diags: &'a mut Vec<Diagnostic>,
    dialect: AsdDialect,
}

/// The entries of a mapping, with the ones already read marked.
struct Props<'n> {
    entries: &'n [(Key, Node)],
    used: Vec<bool>,
}

impl<'n> Props<'n> {
    fn of(node: Option<&'n Node>) -> Self {
        let entries = node.and_then(Node::as_map).unwrap_or(&[]);
        Props {
            entries,
            used: vec![false; entries.len()],
        }
    }

    /// The first present spelling of a property, in `names` order; null counts as absent. Two
    /// spellings of the same property at once are reported.
    fn take(&mut self, cx: &mut Cx<'_>, names: &[&str]) -> Option<(&'n Key, &'n Node)> {
        let mut found: Vec<(usize, usize)> = Vec::new();
        for (i, (k, _)) in self.entries.iter().enumerate() {
            if let Some(rank) = names.iter().position(|n| *n == k.name) {
                self.used[i] = true;
                found.push((rank, i));
            }
        }
        found.sort_unstable();
        let (_, first) = *found.first()?;
        let (key, value) = &self.entries[first];
        for &(_, other) in &found[1..] {
            let other = &self.entries[other].0;
            cx.warn(
                "asd.conflicting-property",
                other.pos,
                format!(
                    "`{}` and `{}` are two spellings of the same property; `{}` is used",
                    key.name, other.name, key.name
                ),
            );
        }
        if value.is_null() {
            None
        } else {
            Some((key, value))
        }
    }

    /// Entries not read by [`Props::take`].
    fn rest(&self) -> impl Iterator<Item = &'n (Key, Node)> + '_ {
        self.entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|(e, _)| e)
    }
}

impl Cx<'_> {
    fn loc(&self, pos: Pos) -> Location {
        Location::new(self.file, pos.line, pos.column)
    }

    fn error(&mut self, code: &'static str, pos: Pos, message: String) {
        let d = Diagnostic::error(code, message).at(self.loc(pos));
        self.diags.push(d);
    }

    fn warn(&mut self, code: &'static str, pos: Pos, message: String) {
        let d = Diagnostic::warning(code, message).at(self.loc(pos));
        self.diags.push(d);
    }

    fn emit(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// The spelling of a property the dialect's types use, for messages.
    fn spelling(&self, names: &[&'static str]) -> &'static str {
        match self.dialect {
            AsdDialect::Oran20 => names.first(),
            AsdDialect::Onap01 => names.last(),
        }
        .copied()
        .unwrap_or("?")
    }

    fn read(&mut self, doc: &Node, facts: &ImportFacts) -> Option<Asd> {
        let tosca_definitions_version = self.definitions_version(doc);
        let (name_key, template) = self.find_asd_node(doc)?;
        let node_type = template
            .get("type")
            .and_then(Node::as_str)
            .unwrap_or(ORAN_NODE_TYPE)
            .to_string();
        for (key, _) in template.as_map().unwrap_or(&[]) {
            if !matches!(
                key.name.as_str(),
                "type" | "description" | "metadata" | "properties" | "artifacts" | "directives"
            ) {
                self.warn(
                    "asd.ignored-keyname",
                    key.pos,
                    format!(
                        "`{}` is not used in an ASD node template and is ignored",
                        key.name
                    ),
                );
            }
        }
        let properties = template.get("properties");
        let props_pos = template
            .get_entry("properties")
            .map_or(name_key.pos, |(k, _)| k.pos);
        if let Some(p) = properties {
            if !p.is_null() && p.as_map().is_none() {
                self.error(
                    "asd.type-mismatch",
                    p.pos,
                    format!("`properties` must be a map; found {}", p.value.kind()),
                );
            }
            self.check_names(Kind::Node, &node_type, p);
        }
        let mut props = Props::of(properties);
        let owner = format!("the ASD node template `{}`", name_key.name);

        let asd_id = self.required_string(&mut props, ASD_ID, props_pos, &owner);
        let invariant_id = self.optional_string(&mut props, INVARIANT_ID);
        let asd_version = self
            .required_string(&mut props, VERSION, props_pos, &owner)
            .unwrap_or_default();
        let schema_version = self
            .optional_string(&mut props, SCHEMA_VERSION)
            .or_else(|| facts.oran_types_version.clone());
        let provider = self
            .required_string(&mut props, PROVIDER, props_pos, &owner)
            .unwrap_or_default();
        let application_name = self
            .required_string(&mut props, APP_NAME, props_pos, &owner)
            .unwrap_or_default();
        let application_version = self
            .required_string(&mut props, APP_VERSION, props_pos, &owner)
            .unwrap_or_default();
        let application_info_name = self.optional_string(&mut props, APP_INFO_NAME);
        let function_description = self.optional_string(&mut props, FUNCTION_DESCRIPTION);
        let ext_cpds = match props.take(self, EXT_CPDS) {
            Some((key, v)) => self.ext_cpds(key, v),
            None => Vec::new(),
        };
        let enhanced_cluster_capabilities = match props.take(self, CLUSTER_CAPABILITIES) {
            Some((key, v)) => self.cluster_capabilities(key, v),
            None => None,
        };
        let listed_items = props.take(self, DEPLOYMENT_ITEMS);
        let extensions = self.extensions(&props, Kind::Node, &node_type);

        let artifacts = template.get("artifacts");
        if let Some(a) = artifacts.filter(|a| !a.is_null() && a.as_map().is_none()) {
            self.error(
                "asd.type-mismatch",
                a.pos,
                format!("`artifacts` must be a map; found {}", a.value.kind()),
            );
        }
        let artifact_defs = artifacts.and_then(Node::as_map).unwrap_or(&[]);
        let mut referenced = BTreeSet::new();
        let mut items = Vec::new();
        let mut ids = Vec::new();
        if let Some((key, list)) = listed_items {
            self.listed_items(
                key,
                list,
                artifact_defs,
                &mut referenced,
                &mut items,
                &mut ids,
            );
        }
        let mut executable_images = Vec::new();
        for (name, def) in artifact_defs {
            if referenced.contains(name.name.as_str()) {
                continue;
            }
            let ty = def.get("type").and_then(Node::as_str).unwrap_or("");
            let is_item = self.types.derives_from(Kind::Artifact, ty, ORAN_ITEM_TYPE)
                || self.types.derives_from(Kind::Artifact, ty, ONAP_ITEM_TYPE);
            if is_item {
                if let Some((item, id_pos)) = self.artifact_item(name, def, ty) {
                    ids.push((item.id.clone(), id_pos, item.artifact_name.clone()));
                    items.push(item);
                }
            } else if self.types.derives_from(Kind::Artifact, ty, IMAGE_ITEM_TYPE) {
                if let Some(image) = self.executable_image(name, def, ty) {
                    executable_images.push(image);
                }
            } else {
                let shown = if ty.is_empty() { "no type" } else { ty };
                self.warn(
                    "asd.ignored-artifact",
                    name.pos,
                    format!(
                        "artifact `{}` ({shown}) is neither a deployment item nor an executable image item and is ignored",
                        name.name
                    ),
                );
            }
        }
        self.duplicate_ids(&ids);
        if items.is_empty() {
            self.error(
                "asd.no-deployment-items",
                name_key.pos,
                format!("{owner} declares no deployment item"),
            );
        }

        let asd_id = asd_id?;
        let description = template
            .get("description")
            .and_then(|d| self.string("description", d));
        let stages = stages_of(&items);
        Some(Asd {
            asd_id,
            dialect: self.dialect,
            tosca_definitions_version,
            entry_definitions: self.file.to_string(),
            node_template: name_key.name.as_str().to_owned(),
            description,
            invariant_id,
            asd_version,
            schema_version,
            provider,
            application_name,
            application_version,
            application_info_name,
            function_description,
            ext_cpds,
            enhanced_cluster_capabilities,
            deployment_items: items,
            stages,
            executable_images,
            images: Vec::new(),
            extensions,
        })
    }

    fn definitions_version(&mut self, doc: &Node) -> String {
        match doc.get_entry("tosca_definitions_version") {
            None => {
                self.emit(
                    Diagnostic::error(
                        "asd.missing-definitions-version",
                        "the entry definitions have no `tosca_definitions_version`",
                    )
                    .at(Location::new(self.file, 1, 1))
                    .with_help(
                        "start the file with `tosca_definitions_version: tosca_simple_yaml_1_3`",
                    ),
                );
                String::new()
            }
            Some((_, v)) => {
                let version = self
                    .string("tosca_definitions_version", v)
                    .unwrap_or_default();
                if !matches!(
                    version.as_str(),
                    "tosca_simple_yaml_1_2" | "tosca_simple_yaml_1_3"
                ) {
                    self.warn(
                        "asd.unexpected-tosca-version",
                        v.pos,
                        format!(
                            "`tosca_definitions_version` is \"{version}\"; ASDs use tosca_simple_yaml_1_2 (ONAP) or tosca_simple_yaml_1_3 (O-RAN)"
                        ),
                    );
                }
                version
            }
        }
    }

    /// The single node template of an ASD type; sets the dialect.
    fn find_asd_node<'d>(&mut self, doc: &'d Node) -> Option<(&'d Key, &'d Node)> {
        let topology = doc.get_entry("topology_template");
        let templates = topology.and_then(|(_, t)| t.get("node_templates"));
        let mut found: Option<(&Key, &Node, AsdDialect)> = None;
        for (name, template) in templates.and_then(Node::as_map).unwrap_or(&[]) {
            let ty = template.get("type").and_then(Node::as_str).unwrap_or("");
            let dialect = if self.types.derives_from(Kind::Node, ty, ORAN_NODE_TYPE) {
                Some(AsdDialect::Oran20)
            } else if self.types.derives_from(Kind::Node, ty, ONAP_NODE_TYPE) {
                Some(AsdDialect::Onap01)
            } else {
                None
            };
            match (dialect, &found) {
                (Some(d), None) => found = Some((name, template, d)),
                (Some(_), Some((first, _, _))) => {
                    let message = format!(
                        "node template `{}` is a second ASD node (the first is `{}`); an ASD has exactly one",
                        name.name, first.name
                    );
                    self.error("asd.multiple-asd-nodes", name.pos, message);
                }
                (None, _) => self.warn(
                    "asd.ignored-node-template",
                    name.pos,
                    format!(
                        "node template `{}` (type `{ty}`) is not an ASD node and is ignored",
                        name.name
                    ),
                ),
            }
        }
        match found {
            Some((name, template, dialect)) => {
                self.dialect = dialect;
                Some((name, template))
            }
            None => {
                let pos = topology.map_or(Pos { line: 1, column: 1 }, |(k, _)| k.pos);
                self.emit(
                    Diagnostic::error(
                        "asd.no-asd-node",
                        "the topology template has no node template of type `tosca.nodes.asd.Asd` or `tosca.nodes.asd`",
                    )
                    .at(self.loc(pos)),
                );
                None
            }
        }
    }

    // ---- scalar readers -------------------------------------------------------------------

    /// A string-typed value. Integers are taken as written; a float is taken as written with a
    /// quirk warning (YAML reads `1.0` as a number, which would lose `1.10`'s trailing zero).
    fn string(&mut self, what: &str, v: &Node) -> Option<String> {
        match &v.value {
            Value::Str(s) => Some(s.as_str().to_owned()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(_) => {
                let text = v.scalar_text()?;
                self.emit(
                    Diagnostic::warning(
                        quirks::FLOAT_FOR_STRING,
                        format!(
                            "`{what}` is the number {text} where a string is declared; read as \"{text}\""
                        ),
                    )
                    .at(self.loc(v.pos))
                    .with_help(format!("quote the value: \"{text}\"")),
                );
                Some(text)
            }
            Value::Null => None,
            Value::Bool(_) | Value::Seq(_) | Value::Map(_) => {
                self.error(
                    "asd.type-mismatch",
                    v.pos,
                    format!("`{what}` must be a string; found {}", v.value.kind()),
                );
                None
            }
        }
    }

    fn optional_string(&mut self, props: &mut Props<'_>, names: &[&str]) -> Option<String> {
        let (key, v) = props.take(self, names)?;
        self.string(&key.name, v)
    }

    fn required_string(
        &mut self,
        props: &mut Props<'_>,
        names: &[&'static str],
        owner_pos: Pos,
        owner: &str,
    ) -> Option<String> {
        let taken = props.take(self, names);
        let value = taken.and_then(|(key, v)| self.string(&key.name, v));
        // A present value of the wrong type is reported by `string`, not as missing.
        if taken.is_none() {
            let name = self.spelling(names);
            let others: Vec<String> = names
                .iter()
                .filter(|n| **n != name)
                .map(|n| format!("`{n}`"))
                .collect();
            self.emit(
                Diagnostic::error(
                    "asd.missing-property",
                    format!("{owner} has no `{name}` property"),
                )
                .at(self.loc(owner_pos))
                .with_help(format!("also accepted: {}", others.join(", "))),
            );
        }
        value
    }

    /// A list of strings; with `scalar_ok` a single scalar is a one-item list.
    fn strings(&mut self, what: &str, v: &Node, scalar_ok: bool) -> Vec<String> {
        match &v.value {
            Value::Seq(entries) => entries
                .iter()
                .filter_map(|e| self.string(what, e))
                .collect(),
            Value::Null => Vec::new(),
            Value::Str(_) | Value::Int(_) | Value::Float(_) if scalar_ok => {
                self.string(what, v).into_iter().collect()
            }
            _ => {
                self.error(
                    "asd.type-mismatch",
                    v.pos,
                    format!(
                        "`{what}` must be a list of strings; found {}",
                        v.value.kind()
                    ),
                );
                Vec::new()
            }
        }
    }

    fn boolean(&mut self, what: &str, v: &Node) -> Option<bool> {
        match v.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.error(
                    "asd.type-mismatch",
                    v.pos,
                    format!("`{what}` must be true or false; found {}", v.value.kind()),
                );
                None
            }
        }
    }

    /// A value from a fixed set; `table` maps every accepted spelling to the value.
    fn enumerated<T: Copy>(&mut self, what: &str, v: &Node, table: &[(&str, T)]) -> Option<T> {
        let text = self.string(what, v)?;
        if let Some((_, t)) = table.iter().find(|(s, _)| *s == text) {
            return Some(*t);
        }
        let allowed: Vec<&str> = table.iter().map(|(s, _)| *s).collect();
        self.error(
            "asd.invalid-value",
            v.pos,
            format!(
                "`{what}` is \"{text}\"; expected one of {}",
                allowed.join(", ")
            ),
        );
        None
    }

    /// A map-valued property; reports anything else.
    fn map<'n>(&mut self, what: &str, v: &'n Node) -> Option<&'n Node> {
        if v.as_map().is_some() {
            Some(v)
        } else {
            self.error(
                "asd.type-mismatch",
                v.pos,
                format!("`{what}` must be a map; found {}", v.value.kind()),
            );
            None
        }
    }

    fn seq<'n>(&mut self, what: &str, v: &'n Node) -> &'n [Node] {
        match v.as_seq() {
            Some(s) => s,
            None => {
                self.error(
                    "asd.type-mismatch",
                    v.pos,
                    format!("`{what}` must be a list; found {}", v.value.kind()),
                );
                &[]
            }
        }
    }

    // ---- external connection points -------------------------------------------------------
}

/// True for `scheme://...` references.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// Joins `rel` to `dir` and resolves `.` and `..`; `None` when the result would leave the
/// package root or `rel` is absolute.
pub fn normalize_path(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') || rel.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for segment in dir.split('/').chain(rel.split('/')) {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_within_the_package_only() {
        assert_eq!(
            normalize_path("Definitions", "../Files/a.tgz").as_deref(),
            Some("Files/a.tgz")
        );
        assert_eq!(normalize_path("", "./a/b").as_deref(), Some("a/b"));
        assert_eq!(normalize_path("", "../a"), None);
        assert_eq!(normalize_path("", "/etc/passwd"), None);
        assert_eq!(normalize_path("", "a\\..\\b"), None);
    }

    #[test]
    fn urls_need_a_scheme() {
        assert!(is_url("https://example.com/x"));
        assert!(is_url("oci://registry/chart"));
        assert!(!is_url("Artifacts/x.tgz"));
        assert!(!is_url("://x"));
        assert!(!is_url("a b://x"));
    }
}
