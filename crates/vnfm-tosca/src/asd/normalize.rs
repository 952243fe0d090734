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

    fn ext_cpds(&mut self, key: &Key, v: &Node) -> Vec<ExtCpd> {
        let mut out: Vec<ExtCpd> = Vec::new();
        let mut seen: BTreeMap<String, Pos> = BTreeMap::new();
        for (i, entry) in self.seq(&key.name, v).iter().enumerate() {
            let what = format!("{}[{i}]", key.name);
            let Some(entry) = self.map(&what, entry) else {
                continue;
            };
            let mut p = Props::of(Some(entry));
            let Some(id) = self.optional_string(&mut p, &["id"]) else {
                self.error(
                    "asd.missing-property",
                    entry.pos,
                    format!("external connection point `{what}` has no `id`"),
                );
                continue;
            };
            let id_pos = entry.get("id").map_or(entry.pos, |n| n.pos);
            if let Some(first) = seen.get(&id) {
                let message = format!(
                    "external connection point id `{id}` is used twice (first at line {})",
                    first.line
                );
                self.error("asd.duplicate-ext-cpd-id", id_pos, message);
            } else {
                seen.insert(id.clone(), id_pos);
            }
            let description = self.optional_string(&mut p, &["description"]);
            let virtual_link_requirement = self.optional_string(
                &mut p,
                &["virtualLinkRequirement", "virtual_link_requirement"],
            );
            let network_interface_realization_requirements = match p.take(
                self,
                &[
                    "networkInterfaceRealizationRequirements",
                    "network_interface_realization_requirements",
                ],
            ) {
                Some((k, v)) => self.map(&k.name, v).map(|m| self.interface_requirements(m)),
                None => None,
            };
            let input_param_mappings =
                match p.take(self, &["inputParamMappings", "input_param_mappings"]) {
                    Some((k, v)) => self.map(&k.name, v).map(|m| self.param_mappings(m)),
                    None => None,
                };
            let resource_mapping =
                self.optional_string(&mut p, &["resourceMapping", "resource_mapping"]);
            out.push(ExtCpd {
                id,
                description,
                virtual_link_requirement,
                network_interface_realization_requirements,
                input_param_mappings,
                resource_mapping,
            });
        }
        out
    }

    fn interface_requirements(&mut self, m: &Node) -> NetworkInterfaceRequirements {
        let mut p = Props::of(Some(m));
        let trunk_mode = match p.take(self, &["trunkMode", "trunk_mode"]) {
            Some((k, v)) => self.boolean(&k.name, v).unwrap_or(false),
            None => false,
        };
        let ipam = match p.take(self, &["ipam"]) {
            Some((k, v)) => self.enumerated(
                &k.name,
                v,
                &[
                    ("infraProvided", Ipam::InfraProvided),
                    ("orchestrated", Ipam::Orchestrated),
                    ("userManaged", Ipam::UserManaged),
                ],
            ),
            None => None,
        }
        .unwrap_or(Ipam::InfraProvided);
        let interface_type = match p.take(self, &["interfaceType", "interface_type"]) {
            Some((k, v)) => self.enumerated(
                &k.name,
                v,
                &[
                    ("kernel.netdev", InterfaceType::KernelNetdev),
                    ("direct.userspace", InterfaceType::DirectUserspace),
                    // ONAP 0.1 spelling.
                    ("direct.userdriver", InterfaceType::DirectUserspace),
                    ("direct.kerneldriver", InterfaceType::DirectKerneldriver),
                    ("direct.bond", InterfaceType::DirectBond),
                    ("userspace", InterfaceType::Userspace),
                ],
            ),
            None => None,
        }
        .unwrap_or(InterfaceType::KernelNetdev);
        let interface_options = match p.take(
            self,
            &[
                "interfaceOption",
                "interfaceOptions",
                "interface_option",
                "interface_options",
            ],
        ) {
            Some((k, v)) => {
                let entries: &[Node] = match v.as_seq() {
                    Some(s) => s,
                    None => std::slice::from_ref(v),
                };
                entries
                    .iter()
                    .filter_map(|e| {
                        self.enumerated(
                            &k.name,
                            e,
                            &[
                                ("virtio", InterfaceOption::Virtio),
                                ("memif", InterfaceOption::Memif),
                            ],
                        )
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        let interface_redundancy =
            match p.take(self, &["interfaceRedundancy", "interface_redundancy"]) {
                Some((k, v)) => self.enumerated(
                    &k.name,
                    v,
                    &[
                        ("infraProvided", InterfaceRedundancy::InfraProvided),
                        ("left", InterfaceRedundancy::Left),
                        ("right", InterfaceRedundancy::Right),
                        ("activeActiveBond", InterfaceRedundancy::ActiveActiveBond),
                        ("activePassiveBond", InterfaceRedundancy::ActivePassiveBond),
                        ("activePassiveL3", InterfaceRedundancy::ActivePassiveL3),
                        ("activeActiveL3", InterfaceRedundancy::ActiveActiveL3),
                        // ONAP 0.1 spellings, and the O-RAN 2.0 prose's lowercase `l3`.
                        ("Left", InterfaceRedundancy::Left),
                        ("Right", InterfaceRedundancy::Right),
                        ("actActBond", InterfaceRedundancy::ActiveActiveBond),
                        ("actPassBond", InterfaceRedundancy::ActivePassiveBond),
                        ("actPassL3", InterfaceRedundancy::ActivePassiveL3),
                        ("actActL3", InterfaceRedundancy::ActiveActiveL3),
                        ("activePassivel3", InterfaceRedundancy::ActivePassiveL3),
                    ],
                ),
                None => None,
            };
        let nic_options = match p.take(self, &["nicOptions", "nic_options"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        NetworkInterfaceRequirements {
            trunk_mode,
            ipam,
            interface_type,
            interface_options,
            interface_redundancy,
            nic_options,
        }
    }

    fn param_mappings(&mut self, m: &Node) -> ParamMappings {
        let mut p = Props::of(Some(m));
        let loadbalancer_ip = self.optional_string(
            &mut p,
            &[
                "loadbalancerIP",
                "loadBalancerIP",
                "loadbalancer_ip",
                "loadbalancer_IP",
            ],
        );
        let external_ips = match p.take(self, &["externalIPs", "external_ips", "external_IPs"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let nad_names = match p.take(self, &["nadName", "nadNames", "nad_names"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let nad_namespace = self.optional_string(&mut p, &["nadNamespace", "nad_namespace"]);
        ParamMappings {
            loadbalancer_ip,
            external_ips,
            nad_names,
            nad_namespace,
        }
    }

    // ---- cluster capabilities ---------------------------------------------------------------

    fn cluster_capabilities(&mut self, key: &Key, v: &Node) -> Option<EnhancedClusterCapabilities> {
        let m = self.map(&key.name, v)?;
        let mut p = Props::of(Some(m));
        let min_kernel_version =
            self.optional_string(&mut p, &["minKernelVersion", "min_kernel_version"]);
        let required_kernel_modules = match p.take(
            self,
            &[
                "requiredKernelModule",
                "requiredKernelModules",
                "required_kernel_modules",
            ],
        ) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let conflicting_kernel_modules = match p.take(
            self,
            &[
                "conflictingKernelModule",
                "conflictingKernelModules",
                "conflicting_kernel_modules",
            ],
        ) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let mut required_custom_resources = Vec::new();
        if let Some((k, v)) = p.take(
            self,
            &[
                "requiredCustomResource",
                "requiredCustomResources",
                "required_custom_resources",
            ],
        ) {
            for entry in self.seq(&k.name, v) {
                let Some(entry) = self.map(&k.name, entry) else {
                    continue;
                };
                let mut e = Props::of(Some(entry));
                let Some(kind) = self.optional_string(&mut e, &["kind"]) else {
                    self.error(
                        "asd.missing-property",
                        entry.pos,
                        format!("an entry of `{}` has no `kind`", k.name),
                    );
                    continue;
                };
                let api_version = self.optional_string(&mut e, &["apiVersion", "api_version"]);
                required_custom_resources.push(RequiredCustomResource { kind, api_version });
            }
        }
        let mut cluster_labels = Vec::new();
        for (names, requirement) in [
            (
                &["clusterLabel", "clusterLabels", "cluster_labels"][..],
                LabelRequirement::Mandatory,
            ),
            (
                &[
                    "preferredClusterLabel",
                    "preferredClusterLabels",
                    "preferred_cluster_labels",
                ][..],
                LabelRequirement::Preferred,
            ),
        ] {
            if let Some((k, v)) = p.take(self, names) {
                let entries: &[Node] = match v.as_seq() {
                    Some(s) => s,
                    None => std::slice::from_ref(v),
                };
                for entry in entries {
                    if let Some(label) = self.cluster_label(&k.name, entry) {
                        cluster_labels.push(ClusterLabel { label, requirement });
                    }
                }
            }
        }
        let mut required_plugins = Vec::new();
        if let Some((k, v)) = p.take(
            self,
            &[
                "requiredPlugin",
                "requiredPlugins",
                "required_plugin",
                "required_plugins",
            ],
        ) {
            for entry in self.seq(&k.name, v) {
                let Some(entry) = self.map(&k.name, entry) else {
                    continue;
                };
                let mut e = Props::of(Some(entry));
                let Some(name) = self.optional_string(&mut e, &["requiredPluginName", "name"])
                else {
                    self.error(
                        "asd.missing-property",
                        entry.pos,
                        format!("an entry of `{}` has no `requiredPluginName`", k.name),
                    );
                    continue;
                };
                let version = self.optional_string(&mut e, &["requiredPluginVersion", "version"]);
                required_plugins.push(RequiredPlugin { name, version });
            }
        }
        Some(EnhancedClusterCapabilities {
            min_kernel_version,
            required_kernel_modules,
            conflicting_kernel_modules,
            required_custom_resources,
            cluster_labels,
            required_plugins,
        })
    }

    /// A label written as a string, or as a one-entry map `key: value` (read as `key=value`).
    fn cluster_label(&mut self, what: &str, entry: &Node) -> Option<String> {
        if let Some([(k, v)]) = entry.as_map()
            && let Some(value) = v.scalar_text()
        {
            return Some(format!("{}={value}", k.name));
        }
        if entry.as_map().is_some() {
            self.error(
                "asd.type-mismatch",
                entry.pos,
                format!("an entry of `{what}` must be a label string or a single `key: value`"),
            );
            return None;
        }
        self.string(what, entry)
    }

    // ---- deployment items -------------------------------------------------------------------

    /// Deployment items given as an artifact of a deployment item type.
    fn artifact_item(&mut self, name: &Key, def: &Node, ty: &str) -> Option<(DeploymentItem, Pos)> {
        let (file, file_pos) = match def.get("file") {
            Some(f) => (self.string("file", f), f.pos),
            None => (None, name.pos),
        };
        let Some(file) = file else {
            self.error(
                "asd.missing-property",
                file_pos,
                format!("deployment item artifact `{}` has no `file`", name.name),
            );
            return None;
        };
        let properties = def.get("properties");
        if let Some(p) = properties {
            self.check_names(Kind::Artifact, ty, p);
        }
        let mut p = Props::of(properties);
        let description = def
            .get("description")
            .and_then(|d| self.string("description", d));
        let what = format!("deployment item artifact `{}`", name.name);
        let (id, id_pos) = self.item_id(&mut p, &what, name);
        let item = self.item_common(&mut p, &what, name.pos, Kind::Artifact, ty)?;
        let chart = item.artifact_type == DeploymentArtifactType::HelmChart;
        let (file, external, sha256) = self.item_file(&file, file_pos, &what, chart);
        Some((
            DeploymentItem {
                id,
                artifact_name: name.name.as_str().to_owned(),
                artifact_type: item.artifact_type,
                file,
                external,
                sha256,
                deployment_order: item.order,
                lifecycle_parameters: item.parameters,
                description,
                extensions: item.extensions,
            },
            id_pos,
        ))
    }

    /// Deployment items given as a `deploymentItems` / `deployment_items` list whose entries
    /// name their artifact (`artifactId`): an artifact of the node template, or a package path.
    fn listed_items(
        &mut self,
        key: &Key,
        list: &Node,
        artifacts: &[(Key, Node)],
        referenced: &mut BTreeSet<String>,
        items: &mut Vec<DeploymentItem>,
        ids: &mut Vec<(String, Pos, String)>,
    ) {
        let entry_type = if self.dialect == AsdDialect::Oran20 {
            "tosca.datatypes.asd.DeploymentItem"
        } else {
            "tosca.datatypes.asd.deploymentItem"
        };
        for (i, entry) in self.seq(&key.name, list).iter().enumerate() {
            let Some(entry) = self.map(&key.name, entry) else {
                continue;
            };
            let what = format!("deployment item {} of `{}`", i + 1, key.name);
            let mut p = Props::of(Some(entry));
            let owner_key = Key {
                name: format!("{}[{i}]", key.name),
                pos: entry.pos,
            };
            let (id, id_pos) = self.item_id(&mut p, &what, &owner_key);
            let Some((ref_key, ref_node)) = p.take(self, ARTIFACT_REF) else {
                self.error(
                    "asd.missing-property",
                    entry.pos,
                    format!("{what} has no `artifactId` naming its artifact"),
                );
                continue;
            };
            let Some(reference) = self.string(&ref_key.name, ref_node) else {
                continue;
            };
            let Some(common) = self.item_common(&mut p, &what, entry.pos, Kind::Data, entry_type)
            else {
                continue;
            };
            let declared = artifacts.iter().find(|(k, _)| k.name == reference);
            let (artifact_name, file, file_pos, description) = match declared {
                Some((k, def)) => {
                    referenced.insert(k.name.as_str().to_owned());
                    let (file_node, description) = match &def.value {
                        // Short notation: the artifact is its file.
                        Value::Str(_) => (Some(def), None),
                        _ => (
                            def.get("file"),
                            def.get("description")
                                .and_then(|d| self.string("description", d)),
                        ),
                    };
                    let Some(file_node) = file_node else {
                        self.error(
                            "asd.missing-property",
                            k.pos,
                            format!("artifact `{}` has no `file`", k.name),
                        );
                        continue;
                    };
                    let Some(file) = self.string("file", file_node) else {
                        continue;
                    };
                    (k.name.as_str().to_owned(), file, file_node.pos, description)
                }
                None if is_url(&reference) || self.find_file(&reference, false).is_some() => {
                    (reference.clone(), reference.clone(), ref_node.pos, None)
                }
                None => {
                    self.emit(
                        Diagnostic::error(
                            "asd.undeclared-artifact",
                            format!(
                                "{what} refers to artifact `{reference}`, which is neither an artifact of the ASD node template nor a file in the package"
                            ),
                        )
                        .at(self.loc(ref_node.pos))
                        .with_help("declare the artifact under the node template's `artifacts`, or give the package path of its file"),
                    );
                    continue;
                }
            };
            let chart = common.artifact_type == DeploymentArtifactType::HelmChart;
            let (file, external, sha256) = self.item_file(&file, file_pos, &what, chart);
            ids.push((id.clone(), id_pos, artifact_name.clone()));
            items.push(DeploymentItem {
                id,
                artifact_name,
                artifact_type: common.artifact_type,
                file,
                external,
                sha256,
                deployment_order: common.order,
                lifecycle_parameters: common.parameters,
                description,
                extensions: common.extensions,
            });
        }
    }

    /// The item id, with the `itemId` quirk reported; falls back to the owner's name (with an
    /// error) so that the item still appears in its stage.
    fn item_id(&mut self, p: &mut Props<'_>, what: &str, owner: &Key) -> (String, Pos) {
        match p.take(self, ITEM_ID) {
            Some((key, v)) => {
                if key.name == "itemId" {
                    let declared = self.spelling(&["deploymentItemId", "item_id"]);
                    self.emit(
                        Diagnostic::warning(
                            quirks::ITEM_ID_SPELLING,
                            format!(
                                "{what} spells its id property `itemId`; the type declares `{declared}`"
                            ),
                        )
                        .at(self.loc(key.pos))
                        .with_help(format!("rename `itemId` to `{declared}`")),
                    );
                }
                let id = self
                    .string(&key.name, v)
                    .unwrap_or_else(|| owner.name.as_str().to_owned());
                (id, v.pos)
            }
            None => {
                let name = self.spelling(&["deploymentItemId", "item_id"]);
                self.error(
                    "asd.missing-property",
                    owner.pos,
                    format!(
                        "{what} has no `{name}`; its name `{}` is used as id",
                        owner.name
                    ),
                );
                (owner.name.as_str().to_owned(), owner.pos)
            }
        }
    }

    /// Artifact type, order, parameters and extensions, shared by both ways of listing items.
    /// `None` (with an error) when the artifact type is missing or unknown.
    fn item_common(
        &mut self,
        p: &mut Props<'_>,
        what: &str,
        owner_pos: Pos,
        kind: Kind,
        ty: &str,
    ) -> Option<ItemCommon> {
        let artifact_type = match p.take(self, ARTIFACT_TYPE) {
            Some((k, v)) => {
                let text = self.string(&k.name, v);
                match text.as_deref().map(DeploymentArtifactType::parse) {
                    Some(Some(t)) => Some(t),
                    Some(None) => {
                        let allowed: Vec<&str> = DeploymentArtifactType::ALL
                            .iter()
                            .map(|t| t.as_str())
                            .collect();
                        self.error(
                            "asd.unknown-artifact-type",
                            v.pos,
                            format!(
                                "{what} has artifact type \"{}\"; expected one of {}",
                                text.unwrap_or_default(),
                                allowed.join(", ")
                            ),
                        );
                        None
                    }
                    None => None,
                }
            }
            None => {
                let name = self.spelling(ARTIFACT_TYPE);
                self.error(
                    "asd.missing-property",
                    owner_pos,
                    format!("{what} has no `{name}`"),
                );
                None
            }
        };
        let order = match p.take(self, DEPLOYMENT_ORDER) {
            Some((k, v)) => self.deployment_order(&k.name, v, what),
            None => None,
        };
        let parameters = match p.take(self, LIFECYCLE_PARAMETERS) {
            Some((k, v)) => self.strings(&k.name, v, false),
            None => Vec::new(),
        };
        let extensions = self.extensions(p, kind, ty);
        Some(ItemCommon {
            artifact_type: artifact_type?,
            order,
            parameters,
            extensions,
        })
    }

    fn deployment_order(&mut self, what: &str, v: &Node, item: &str) -> Option<u32> {
        if let Value::Int(i) = v.value
            && let Ok(order) = u32::try_from(i)
        {
            return Some(order);
        }
        let shown = match &v.value {
            Value::Str(s) => format!("the string \"{s}\""),
            other => v.scalar_text().map_or_else(
                || other.kind().to_string(),
                |t| format!("{} {t}", other.kind()),
            ),
        };
        self.emit(
            Diagnostic::error(
                "asd.invalid-deployment-order",
                format!("`{what}` of {item} must be a non-negative integer; found {shown}"),
            )
            .at(self.loc(v.pos))
            .with_help("items with a lower order are deployed first; leave it out to let the orchestrator decide"),
        );
        None
    }

    /// Resolves an item's file: its package path, whether it is external, and its digest.
    /// A `chart` item may name a chart directory (one holding a `Chart.yaml`) instead of a
    /// packaged chart; it has no digest. A file absent from the package is an error; the item
    /// keeps the path as written.
    fn item_file(
        &mut self,
        file: &str,
        pos: Pos,
        what: &str,
        chart: bool,
    ) -> (String, bool, Option<String>) {
        if is_url(file) {
            self.warn(
                "asd.external-artifact",
                pos,
                format!("the file of {what} is outside the package ({file}); it is not checked"),
            );
            return (file.to_string(), true, None);
        }
        if let Some(path) = self.find_file(file, false) {
            let sha = self.files.sha256_hex(&path);
            return (path, false, sha);
        }
        if chart && let Some(dir) = self.find_chart_dir(file) {
            return (dir, false, None);
        }
        let help = if chart {
            "add the chart to the package (a packaged chart `.tgz`, or a chart directory with its Chart.yaml), or correct the path (relative to the package root)"
        } else {
            "add the file to the package, or correct the path (relative to the package root)"
        };
        self.emit(
            Diagnostic::error(
                "asd.artifact-file-missing",
                format!("the file `{file}` of {what} is not in the package"),
            )
            .at(self.loc(pos))
            .with_help(help),
        );
        (file.to_string(), false, None)
    }

    /// The package path of the chart directory `file` (a directory with a `Chart.yaml`),
    /// relative to the package root, else to the entry definitions' directory.
    fn find_chart_dir(&self, file: &str) -> Option<String> {
        let dir = self.file.rsplit_once('/').map_or("", |(d, _)| d);
        [normalize_path("", file), normalize_path(dir, file)]
            .into_iter()
            .flatten()
            .find(|p| self.files.contains(&format!("{p}/Chart.yaml")))
    }

    /// The package path of `file`: relative to the package root, else to the entry definitions'
    /// directory. With `allow_dir`, a directory holding an `index.json` (an OCI layout) counts.
    fn find_file(&self, file: &str, allow_dir: bool) -> Option<String> {
        let dir = self.file.rsplit_once('/').map_or("", |(d, _)| d);
        [normalize_path("", file), normalize_path(dir, file)]
            .into_iter()
            .flatten()
            .find(|p| {
                self.files.contains(p)
                    || (allow_dir && self.files.contains(&format!("{p}/index.json")))
            })
    }

    fn executable_image(&mut self, name: &Key, def: &Node, ty: &str) -> Option<ExecutableImage> {
        let what = format!("executable image artifact `{}`", name.name);
        let properties = def.get("properties");
        if let Some(p) = properties {
            self.check_names(Kind::Artifact, ty, p);
        }
        let mut p = Props::of(properties);
        let image_name = self.required_string(&mut p, SW_IMAGE_NAME, name.pos, &what);
        let version = self.required_string(&mut p, SW_IMAGE_VERSION, name.pos, &what);
        let (file, file_pos) = match def.get("file") {
            Some(f) => (self.string("file", f), f.pos),
            None => (None, name.pos),
        };
        let Some(file) = file else {
            self.error(
                "asd.missing-property",
                file_pos,
                format!("{what} has no `file`"),
            );
            return None;
        };
        let external = is_url(&file);
        let location = if external {
            file
        } else {
            match self.find_file(&file, true) {
                Some(path) => path,
                None => {
                    self.error(
                        "asd.artifact-file-missing",
                        file_pos,
                        format!("the file `{file}` of {what} is not in the package"),
                    );
                    file
                }
            }
        };
        Some(ExecutableImage {
            artifact_name: name.name.as_str().to_owned(),
            name: image_name.unwrap_or_default(),
            version: version.unwrap_or_default(),
            location,
            external,
        })
    }

    fn duplicate_ids(&mut self, ids: &[(String, Pos, String)]) {
        let mut first: BTreeMap<&str, &str> = BTreeMap::new();
        for (id, pos, artifact) in ids {
            match first.get(id.as_str()) {
                Some(earlier) => {
                    let message = format!(
                        "deployment item id `{id}` of `{artifact}` is already used by `{earlier}`"
                    );
                    self.error("asd.duplicate-deployment-item-id", *pos, message);
                }
                None => {
                    first.insert(id, artifact);
                }
            }
        }
    }

    // ---- vendor extensions and name checks -------------------------------------------------

    /// The properties not read into the model, verbatim, with their declared type (if any)
    /// checked leniently.
    fn extensions(
        &mut self,
        p: &Props<'_>,
        kind: Kind,
        ty: &str,
    ) -> BTreeMap<String, serde_json::Value> {
        let declared: BTreeMap<String, String> = self
            .types
            .properties(kind, ty)
            .map(|(props, _)| {
                props
                    .into_iter()
                    .map(|(n, d)| (n.to_string(), d.ty.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        for (key, value) in p.rest() {
            let json = match (
                declared.get(key.name.as_str()).map(String::as_str),
                &value.value,
            ) {
                (Some("string"), Value::Float(_)) => self
                    .string(&key.name, value)
                    .map_or(serde_json::Value::Null, serde_json::Value::String),
                (Some("string"), Value::Seq(_) | Value::Map(_))
                | (
                    Some("integer"),
                    Value::Str(_)
                    | Value::Float(_)
                    | Value::Bool(_)
                    | Value::Seq(_)
                    | Value::Map(_),
                )
                | (
                    Some("boolean"),
                    Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Seq(_) | Value::Map(_),
                ) => {
                    let declared_type =
                        declared.get(key.name.as_str()).cloned().unwrap_or_default();
                    self.warn(
                        "asd.property-type-mismatch",
                        value.pos,
                        format!(
                            "`{}` is declared {declared_type} but is {}; kept as written",
                            key.name,
                            value.value.kind()
                        ),
                    );
                    value.to_json()
                }
                _ => value.to_json(),
            };
            out.insert(key.name.as_str().to_owned(), json);
        }
        out
    }

    /// Warns about property names the type (and, recursively, the data types of its
    /// properties) does not define. Unknown types are not checked.
    fn check_names(&mut self, kind: Kind, ty: &str, map: &Node) {
        self.check_names_at(kind, ty, map, 0);
    }

    fn check_names_at(&mut self, kind: Kind, ty: &str, map: &Node, depth: usize) {
        if depth > 16 {
            return;
        }
        let Some(entries) = map.as_map() else {
            return;
        };
        let Some((props, source)) = self.types.properties(kind, ty) else {
            return;
        };
        let props: BTreeMap<String, (String, Option<String>)> = props
            .into_iter()
            .map(|(n, d)| (n.to_string(), (d.ty.clone(), d.entry.clone())))
            .collect();
        let source = source.to_string();
        for (key, value) in entries {
            match props.get(key.name.as_str()) {
                Some((pty, entry)) => {
                    if self.types.is_data_type(pty) {
                        self.check_names_at(Kind::Data, pty, value, depth + 1);
                    } else if let Some(entry) =
                        entry.as_deref().filter(|e| self.types.is_data_type(e))
                    {
                        let nested: Vec<&Node> = match &value.value {
                            Value::Seq(items) => items.iter().collect(),
                            Value::Map(m) if pty == "map" => m.iter().map(|(_, v)| v).collect(),
                            _ => Vec::new(),
                        };
                        for n in nested {
                            self.check_names_at(Kind::Data, entry, n, depth + 1);
                        }
                    }
                }
                // Reported as the item-id quirk by the item reader.
                None if key.name == "itemId"
                    && (props.contains_key("item_id")
                        || props.contains_key("deploymentItemId")) => {}
                None => self.emit(
                    Diagnostic::warning(
                        "asd.unknown-property",
                        format!(
                            "property `{}` is not defined by `{ty}` (types from {source})",
                            key.name
                        ),
                    )
                    .at(self.loc(key.pos))
                    .with_help(
                        "check the spelling, or declare the property in the package's types file",
                    ),
                ),
            }
        }
    }
}

struct ItemCommon {
    artifact_type: DeploymentArtifactType,
    order: Option<u32>,
    parameters: Vec<String>,
    extensions: BTreeMap<String, serde_json::Value>,
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
