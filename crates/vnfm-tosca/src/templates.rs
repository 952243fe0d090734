//! Phase 5, validate: the topology template of one file against the types.
//!
//! A [`Topology`] is read from the `topology_template` of one definitions file; node template
//! names are scoped to that file (each deployment flavour file of a VNFD has its own `VNF`,
//! `VDU1`...). Reading resolves `get_input` where the input has a value (bound by the
//! substitution, or its default), fills property defaults from the types, and checks:
//! node templates (type, properties, attributes, capabilities, requirements and their targets,
//! interfaces, operations and their implementation artifacts, artifacts), groups (members),
//! policies (TOSCA 1.2/1.3 list of single-entry maps; targets), inputs, and
//! `substitution_mappings` (node type, properties, requirement and capability mappings).
//!
//! [`Builder`] reads the topology and its inputs here; node templates (`nodes`), artifacts and
//! interfaces (`artifacts`), and groups, policies and substitution mappings (`groups`) each
//! have a file of their own.

use std::collections::HashMap;

use indexmap::IndexMap;

use crate::PackageFiles;
use crate::hierarchy::{FlatProp, TypeId, Types};
use crate::paths;
use crate::problem::{Problem, Sink};
use crate::quirks::Quirk;
use crate::types::{self, ArtifactDef, IfaceDef, Kind, Named, OpDef, PropDef};
use crate::values::{At, Checker, function_call};
use crate::yaml::{Key, Node, Pos, Value};

mod artifacts;
mod groups;
mod nodes;

/// Base type of the VNF node.
pub(crate) const VNF_TYPE: &str = "tosca.nodes.nfv.VNF";
/// Type of software image artifacts.
const SW_IMAGE: &str = "tosca.artifacts.nfv.SwImage";
/// Base type of placement groups.
const PLACEMENT_GROUP: &str = "tosca.groups.nfv.PlacementGroup";
/// Base type of the LCM interface.
pub(crate) const VNFLCM_TYPE: &str = "tosca.interfaces.nfv.Vnflcm";

/// A requirement assignment.
#[derive(Debug, Clone)]
pub(crate) struct ReqAssign {
    pub name: String,
    pub target: Option<Named>,
}

/// An artifact with its file resolved against the package.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedArtifact {
    pub def: ArtifactDef,
    pub type_name: String,
    /// Package path, or the URI of an external artifact.
    pub file: String,
    pub external: bool,
    /// True when the file is in the package.
    pub present: bool,
}

/// An operation assigned on an interface of a node template, merged with the type's.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub interface: String,
    pub interface_type: Option<TypeId>,
    pub op: OpDef,
}

/// A node template.
#[derive(Debug)]
pub(crate) struct NodeTemplate {
    pub name: String,
    pub pos: Pos,
    pub type_name: String,
    pub ty: Option<TypeId>,
    /// Property values: assigned (with inputs resolved) and type defaults.
    pub properties: IndexMap<String, Node>,
    /// Names of properties assigned in the template (not defaults).
    pub assigned: Vec<String>,
    pub requirements: Vec<ReqAssign>,
    /// Capability name -> assigned property values (with inputs resolved).
    pub capabilities: IndexMap<String, IndexMap<String, Node>>,
    pub operations: Vec<Operation>,
    pub artifacts: Vec<ResolvedArtifact>,
}

/// A group.
#[derive(Debug)]
pub(crate) struct Group {
    pub name: String,
    pub ty: Option<TypeId>,
    pub members: Vec<Named>,
    pub properties: IndexMap<String, Node>,
}

/// A policy.
#[derive(Debug)]
pub(crate) struct Policy {
    pub name: String,
    pub pos: Pos,
    pub type_name: String,
    pub ty: Option<TypeId>,
    pub targets: Vec<Named>,
    pub properties: IndexMap<String, Node>,
    /// `metadata`: free-form key/value pairs (some policies are configured through them).
    pub metadata: IndexMap<String, Node>,
}

/// A requirement exposed by `substitution_mappings`.
#[derive(Debug, Clone)]
pub(crate) struct SubReq {
    pub name: String,
    pub pos: Pos,
    /// `(node template, requirement)`; `None` for the `[]` quirk.
    pub target: Option<(Named, Named)>,
}

/// `substitution_mappings`.
#[derive(Debug)]
pub(crate) struct Substitution {
    pub pos: Pos,
    pub node_type: Option<TypeId>,
    pub node_type_name: Named,
    /// Property values given in the mapping (not input mappings).
    pub properties: IndexMap<String, Node>,
    pub requirements: Vec<SubReq>,
}

/// The topology template of one file.
#[derive(Debug)]
pub(crate) struct Topology {
    pub file: usize,
    pub nodes: Vec<NodeTemplate>,
    pub groups: Vec<Group>,
    pub policies: Vec<Policy>,
    pub substitution: Option<Substitution>,
    /// Node template name -> index in `nodes` (large topologies stay linear to check).
    index: HashMap<String, usize>,
}

impl Topology {
    pub fn node(&self, name: &str) -> Option<&NodeTemplate> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }
}

/// Values bound to the inputs of a topology.
pub(crate) type Bindings = HashMap<String, Node>;

const TOPOLOGY_KEYWORDS: &[&str] = &[
    "description",
    "inputs",
    "node_templates",
    "relationship_templates",
    "groups",
    "policies",
    "outputs",
    "substitution_mappings",
    "workflows",
];

const NODE_TEMPLATE_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "metadata",
    "directives",
    "properties",
    "attributes",
    "requirements",
    "capabilities",
    "interfaces",
    "artifacts",
    "node_filter",
    "copy",
];

/// Reads and validates the topology template of file `file`.
pub(crate) struct Builder<'a, 'g> {
    pub types: &'a Types<'g>,
    pub sink: &'a mut Sink,
    pub files: &'a dyn PackageFiles,
    pub file: usize,
    pub display: &'g str,
    /// Declared inputs: name -> value when known.
    inputs: HashMap<String, Option<Node>>,
}

impl<'a, 'g> Builder<'a, 'g> {
    pub fn new(
        types: &'a Types<'g>,
        sink: &'a mut Sink,
        files: &'a dyn PackageFiles,
        file: usize,
    ) -> Self {
        Builder {
            types,
            sink,
            files,
            file,
            display: &types.graph.files[file].display,
            inputs: HashMap::new(),
        }
    }

    fn problems(&mut self, problems: Vec<Problem>) {
        for p in problems {
            self.sink.problem(self.display, p);
        }
    }

    fn checker(&mut self) -> Checker<'_, 'g> {
        Checker::new(self.types, self.sink)
    }

    /// Reads `substitution_mappings` only (the flavour's input bindings depend on it).
    pub fn substitution(&mut self, topo: &'g Node) -> Option<Substitution> {
        let (key, node) = topo.get_entry("substitution_mappings")?;
        let mut problems = Vec::new();
        let mut node_type_name = None;
        let mut properties = IndexMap::new();
        let mut requirements = Vec::new();
        for (k, v) in types::entries(node, key.pos, "substitution_mappings", &mut problems) {
            match k.name.as_str() {
                "node_type" => node_type_name = types::named(v, "node_type", &mut problems),
                "properties" => {
                    for (pk, pv) in types::entries(v, k.pos, "properties", &mut problems) {
                        // `[ input_name ]` maps an input (TOSCA 1.3); anything else is a value.
                        let is_input_mapping =
                            matches!(pv.as_seq(), Some([i]) if i.as_str().is_some());
                        if !is_input_mapping {
                            properties.insert(pk.name.as_str().to_owned(), pv.clone());
                        }
                    }
                }
                "requirements" => requirements = self.sub_requirements(v, k.pos, &mut problems),
                "capabilities" | "attributes" | "interfaces" | "substitution_filter" | "node" => {}
                other => problems.push(Problem::error(
                    "tosca.unknown-keyword",
                    k.pos,
                    format!("`{other}` is not a keyword of `substitution_mappings`"),
                )),
            }
        }
        self.problems(problems);
        let Some(node_type_name) = node_type_name else {
            self.sink.error(
                self.display,
                key.pos,
                "tosca.missing-keyword",
                "`substitution_mappings` has no `node_type`",
            );
            return None;
        };
        let node_type = self
            .types
            .resolve(&node_type_name, Kind::Node, self.file, self.sink);
        Some(Substitution {
            pos: key.pos,
            node_type,
            node_type_name,
            properties,
            requirements,
        })
    }

    fn sub_requirements(
        &mut self,
        node: &Node,
        at: Pos,
        problems: &mut Vec<Problem>,
    ) -> Vec<SubReq> {
        let mut out = Vec::new();
        for (k, v) in types::entries(node, at, "requirements", problems) {
            let pair = |a: &Node, b: &Node, problems: &mut Vec<Problem>| {
                Some((
                    types::named(a, "node template", problems)?,
                    types::named(b, "requirement", problems)?,
                ))
            };
            let target = match &v.value {
                Value::Seq(items) if items.is_empty() => {
                    self.sink.quirk(
                        Quirk::EmptySubstitutionRequirement,
                        self.display,
                        k.pos,
                        format!("substitution requirement `{}` is mapped to `[]`", k.name),
                    );
                    None
                }
                Value::Seq(items) if items.len() == 2 => pair(&items[0], &items[1], problems),
                Value::Map(_) => match (v.get("node"), v.get("requirement")) {
                    (Some(n), Some(r)) => pair(n, r, problems),
                    _ => {
                        problems.push(types::wrong_shape(
                            v,
                            "a requirement mapping",
                            "{ node: ..., requirement: ... }",
                        ));
                        None
                    }
                },
                _ => {
                    problems.push(types::wrong_shape(
                        v,
                        &format!("requirement mapping `{}`", k.name),
                        "a list [ node_template, requirement ]",
                    ));
                    None
                }
            };
            out.push(SubReq {
                name: k.name.as_str().to_owned(),
                pos: k.pos,
                target,
            });
        }
        out
    }

    /// Reads and validates the whole topology template.
    pub fn build(
        mut self,
        topo: &'g Node,
        topo_pos: Pos,
        bindings: &Bindings,
        substitution: Option<Substitution>,
    ) -> Topology {
        let mut problems = Vec::new();
        if let Some(map) = topo.as_map() {
            for (k, _) in map {
                if !TOPOLOGY_KEYWORDS.contains(&k.name.as_str()) {
                    problems.push(
                        Problem::error(
                            "tosca.unknown-keyword",
                            k.pos,
                            format!("`{}` is not a keyword of `topology_template`", k.name),
                        )
                        .with_help(format!("allowed here: {}", TOPOLOGY_KEYWORDS.join(", "))),
                    );
                }
            }
        } else if !topo.is_null() {
            problems.push(types::wrong_shape(topo, "`topology_template`", "a map"));
        }
        self.problems(problems);
        self.read_inputs(topo, topo_pos, bindings);

        let mut nodes = Vec::new();
        if let Some((k, v)) = topo.get_entry("node_templates") {
            let mut problems = Vec::new();
            let entries = types::entries(v, k.pos, "node_templates", &mut problems);
            self.problems(problems);
            for (nk, nv) in entries {
                nodes.push(self.node_template(nk, nv));
            }
        }
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let mut topology = Topology {
            file: self.file,
            nodes,
            groups: Vec::new(),
            policies: Vec::new(),
            substitution,
            index,
        };
        // Requirements and artifacts refer to other templates and files: checked once all
        // templates are known.
        for i in 0..topology.nodes.len() {
            self.check_requirements(&topology, i);
        }
        topology.groups = self.groups(topo, &topology);
        topology.policies = self.policies(topo, &topology);
        self.check_substitution(&topology);
        topology
    }

    fn read_inputs(&mut self, topo: &'g Node, topo_pos: Pos, bindings: &Bindings) {
        let Some((k, v)) = topo.get_entry("inputs") else {
            return;
        };
        let _ = topo_pos;
        let mut problems = Vec::new();
        let entries = types::entries(v, k.pos, "inputs", &mut problems);
        let defs: Vec<PropDef> = entries
            .iter()
            .map(|(ik, iv)| types::prop_def(ik, iv, &mut problems))
            .collect();
        self.problems(problems);
        for def in defs {
            let value = bindings
                .get(&def.name)
                .cloned()
                .or_else(|| def.value.clone())
                .or_else(|| def.default.clone());
            match &def.schema {
                Some(schema) if !schema.ty.name.is_empty() => {
                    if self
                        .types
                        .resolve_data(&schema.ty, self.file, self.sink)
                        .is_some()
                        && let Some(d) = &def.default
                    {
                        let what = format!("the default of input `{}`", def.name);
                        let (display, file) = (self.display, self.file);
                        self.checker().check(
                            d,
                            schema,
                            file,
                            At {
                                file: display,
                                what: &what,
                            },
                        );
                    }
                }
                _ => {
                    self.sink.error(
                        self.display,
                        def.pos,
                        "tosca.missing-keyword",
                        format!("input `{}` has no `type`", def.name),
                    );
                }
            }
            self.inputs.insert(def.name.clone(), value);
        }
    }

    /// Replaces `get_input` calls whose input has a value; reports calls naming no input.
    fn resolve_inputs(&mut self, value: &Node) -> Node {
        if let Some(("get_input", arg, pos)) = function_call(value) {
            let (name, path) = match &arg.value {
                Value::Str(s) => (Some(s.as_str()), &[][..]),
                Value::Seq(items) => (
                    items.first().and_then(Node::as_str),
                    items.get(1..).unwrap_or_default(),
                ),
                _ => (None, &[][..]),
            };
            if let Some(name) = name {
                match self.inputs.get(name) {
                    None => {
                        let mut known: Vec<&str> = self.inputs.keys().map(String::as_str).collect();
                        known.sort_unstable();
                        self.sink.error(
                            self.display,
                            pos,
                            "tosca.unknown-input",
                            format!("`get_input` names `{name}`, which is not an input of this topology"),
                        ).help = Some(if known.is_empty() {
                            "declare it under topology_template.inputs".to_string()
                        } else {
                            format!("declared inputs: {}", known.join(", "))
                        });
                    }
                    Some(Some(v)) => {
                        if let Some(found) = select(v, path) {
                            return Node {
                                value: found.value.clone(),
                                pos: value.pos,
                            };
                        }
                    }
                    Some(None) => {}
                }
            }
            return value.clone();
        }
        match &value.value {
            Value::Seq(items) => Node {
                value: Value::Seq(items.iter().map(|i| self.resolve_inputs(i)).collect()),
                pos: value.pos,
            },
            Value::Map(entries) => Node {
                value: Value::Map(
                    entries
                        .iter()
                        .map(|(k, v)| (k.clone(), self.resolve_inputs(v)))
                        .collect(),
                ),
                pos: value.pos,
            },
            _ => value.clone(),
        }
    }

    fn resolve_entries(&mut self, entries: &[(Key, Node)]) -> Vec<(Key, Node)> {
        entries
            .iter()
            .map(|(k, v)| (k.clone(), self.resolve_inputs(v)))
            .collect()
    }
}

/// Follows a `get_input` path (`[ input, key or index, ... ]`) into a value.
fn select<'v>(value: &'v Node, path: &[Node]) -> Option<&'v Node> {
    let mut cur = value;
    for step in path {
        cur = match (&cur.value, &step.value) {
            (Value::Map(_), Value::Str(k)) => cur.get(k)?,
            (Value::Seq(items), Value::Int(i)) => items.get(usize::try_from(*i).ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Assigned values in assignment order, then the defaults (or fixed values) of the properties
/// that were not assigned.
pub(crate) fn with_defaults(
    assigned: &[(Key, Node)],
    defs: &IndexMap<String, FlatProp>,
) -> IndexMap<String, Node> {
    let mut out: IndexMap<String, Node> = assigned
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.name.as_str().to_owned(), v.clone()))
        .collect();
    for (name, fp) in defs {
        if !out.contains_key(name)
            && let Some(d) = fp.def.value.as_ref().or(fp.def.default.as_ref())
        {
            out.insert(name.clone(), d.clone());
        }
    }
    out
}
