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

    fn node_template(&mut self, key: &'g Key, node: &'g Node) -> NodeTemplate {
        let mut t = NodeTemplate {
            name: key.name.as_str().to_owned(),
            pos: key.pos,
            type_name: String::new(),
            ty: None,
            properties: IndexMap::new(),
            assigned: Vec::new(),
            requirements: Vec::new(),
            capabilities: IndexMap::new(),
            operations: Vec::new(),
            artifacts: Vec::new(),
        };
        let mut problems = Vec::new();
        let Some(map) = node.as_map() else {
            problems.push(types::wrong_shape(
                node,
                &format!("node template `{}`", key.name),
                "a map",
            ));
            self.problems(problems);
            return t;
        };
        for (k, _) in map {
            if !NODE_TEMPLATE_KEYWORDS.contains(&k.name.as_str()) {
                problems.push(
                    Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{}` is not a keyword of a node template", k.name),
                    )
                    .with_help(format!(
                        "allowed here: {}",
                        NODE_TEMPLATE_KEYWORDS.join(", ")
                    )),
                );
            }
        }
        let type_name = match node.get("type") {
            Some(tn) => types::named(tn, "type", &mut problems),
            None => {
                problems.push(Problem::error(
                    "tosca.missing-keyword",
                    key.pos,
                    format!("node template `{}` has no `type`", key.name),
                ));
                None
            }
        };
        self.problems(problems);
        let Some(type_name) = type_name else {
            return t;
        };
        t.type_name = type_name.name.clone();
        t.ty = self
            .types
            .resolve(&type_name, Kind::Node, self.file, self.sink);
        let Some(ty) = t.ty else {
            return t;
        };
        let flat = self.types.flat(ty);
        let owner = format!("node template `{}`", key.name);

        // Properties.
        let mut problems = Vec::new();
        let assigned = match node.get_entry("properties") {
            Some((pk, pv)) => types::entries(pv, pk.pos, "properties", &mut problems),
            None => &[],
        };
        self.problems(problems);
        let resolved = self.resolve_entries(assigned);
        let display = self.display;
        let is_vnf = self.types.derives_from_name(ty, VNF_TYPE);
        let mut checker = self.checker();
        checker.vnf_mode = is_vnf;
        checker.check_properties(&resolved, &flat.properties, key.pos, &owner, display);
        t.assigned = resolved
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| k.name.as_str().to_owned())
            .collect();
        t.properties = with_defaults(&resolved, &flat.properties);

        // Attributes.
        if let Some((ak, av)) = node.get_entry("attributes") {
            let mut problems = Vec::new();
            let entries = types::entries(av, ak.pos, "attributes", &mut problems).to_vec();
            self.problems(problems);
            for (k, v) in &entries {
                match flat.attributes.get(k.name.as_str()) {
                    None => {
                        self.sink.error(
                            self.display,
                            k.pos,
                            "tosca.unknown-attribute",
                            format!("`{}` is not an attribute of {owner}", k.name),
                        );
                    }
                    Some(fp) => {
                        if let Some(schema) = &fp.def.schema {
                            let v = self.resolve_inputs(v);
                            let what = format!("attribute `{}` of {owner}", k.name);
                            self.checker().check(
                                &v,
                                schema,
                                fp.file,
                                At {
                                    file: display,
                                    what: &what,
                                },
                            );
                        }
                    }
                }
            }
        }

        // Capabilities.
        if let Some((ck, cv)) = node.get_entry("capabilities") {
            let mut problems = Vec::new();
            let entries = types::entries(cv, ck.pos, "capabilities", &mut problems);
            self.problems(problems);
            for (k, v) in entries {
                let Some((capdef, capfile)) = flat.capabilities.get(k.name.as_str()) else {
                    let mut known: Vec<&str> =
                        flat.capabilities.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    self.sink
                        .error(
                            self.display,
                            k.pos,
                            "tosca.unknown-capability",
                            format!("`{}` is not a capability of {owner}", k.name),
                        )
                        .help = Some(format!("known capabilities: {}", known.join(", ")));
                    continue;
                };
                let props = self.types.capability_properties(capdef, *capfile);
                let mut problems = Vec::new();
                let mut values = IndexMap::new();
                for (ak, av) in types::entries(v, k.pos, &k.name, &mut problems) {
                    match ak.name.as_str() {
                        "properties" => {
                            let pe = types::entries(av, ak.pos, "properties", &mut problems);
                            let resolved = self.resolve_entries(pe);
                            let what = format!("capability `{}` of {owner}", k.name);
                            self.checker()
                                .check_properties(&resolved, &props, k.pos, &what, display);
                            values = with_defaults(&resolved, &props);
                        }
                        "attributes" | "occurrences" => {}
                        other => problems.push(Problem::error(
                            "tosca.unknown-keyword",
                            ak.pos,
                            format!("`{other}` is not a keyword of a capability assignment"),
                        )),
                    }
                }
                self.problems(problems);
                t.capabilities.insert(k.name.as_str().to_owned(), values);
            }
        }

        // Requirements (targets are checked once every template is known).
        if let Some((_, rv)) = node.get_entry("requirements") {
            t.requirements = self.requirement_assignments(rv, &flat.requirements, &owner);
        }

        // Artifacts: the type's, overridden by the template's.
        let mut problems = Vec::new();
        let mut artifacts: IndexMap<String, ArtifactDef> = flat
            .artifacts
            .iter()
            .map(|(n, (a, _))| (n.clone(), (**a).clone()))
            .collect();
        if let Some((ak, av)) = node.get_entry("artifacts") {
            for mut a in types::artifact_defs(av, ak.pos, &mut problems) {
                if a.ty.is_none() {
                    a.ty = artifacts.get(&a.name).and_then(|p| p.ty.clone());
                }
                artifacts.insert(a.name.clone(), a);
            }
        }
        self.problems(problems);
        t.artifacts = artifacts
            .into_values()
            .filter_map(|a| self.resolve_artifact(a, &owner))
            .collect();

        // Interfaces.
        if let Some((ik, iv)) = node.get_entry("interfaces") {
            let mut problems = Vec::new();
            let ifaces = types::iface_defs(iv, ik.pos, &mut problems);
            self.problems(problems);
            for iface in ifaces {
                self.interface(&mut t, &flat.interfaces, &iface, &owner);
            }
        }
        // Operations implemented by the type itself and not re-assigned.
        for (iname, fi) in &flat.interfaces {
            for (oname, (op, _)) in &fi.operations {
                if op.implementation.is_some()
                    && !t
                        .operations
                        .iter()
                        .any(|o| o.interface == *iname && o.op.name == *oname)
                {
                    let interface_type = fi
                        .ty
                        .as_ref()
                        .and_then(|(n, f)| self.types.lookup(&n.name, Kind::Interface, *f));
                    t.operations.push(Operation {
                        interface: iname.clone(),
                        interface_type,
                        op: op.clone(),
                    });
                }
            }
        }
        t
    }

    fn requirement_assignments(
        &mut self,
        node: &Node,
        defs: &IndexMap<String, (std::sync::Arc<crate::types::ReqDef>, usize)>,
        owner: &str,
    ) -> Vec<ReqAssign> {
        let Some(items) = node.as_seq() else {
            if !node.is_null() {
                self.problems(vec![types::wrong_shape(
                    node,
                    "`requirements`",
                    "a list of single-entry maps",
                )]);
            }
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            let Some([(k, v)]) = item.as_map() else {
                self.problems(vec![types::wrong_shape(
                    item,
                    "a requirement assignment",
                    "a single-entry map",
                )]);
                continue;
            };
            if !defs.contains_key(k.name.as_str()) {
                let mut known: Vec<&str> = defs.keys().map(String::as_str).collect();
                known.sort_unstable();
                self.sink
                    .error(
                        self.display,
                        k.pos,
                        "tosca.unknown-requirement",
                        format!("`{}` is not a requirement of {owner}", k.name),
                    )
                    .help = Some(format!("known requirements: {}", known.join(", ")));
                continue;
            }
            let mut problems = Vec::new();
            let target = match &v.value {
                Value::Str(_) => types::named(v, "node", &mut problems),
                Value::Map(map) => {
                    for (rk, _) in map {
                        if !matches!(
                            rk.name.as_str(),
                            "node"
                                | "capability"
                                | "relationship"
                                | "node_filter"
                                | "occurrences"
                                | "description"
                                | "metadata"
                        ) {
                            problems.push(Problem::error(
                                "tosca.unknown-keyword",
                                rk.pos,
                                format!(
                                    "`{}` is not a keyword of a requirement assignment",
                                    rk.name
                                ),
                            ));
                        }
                    }
                    v.get("node")
                        .and_then(|n| types::named(n, "node", &mut problems))
                }
                Value::Null => None,
                _ => {
                    problems.push(types::wrong_shape(
                        v,
                        "a requirement assignment",
                        "a node template name or a map",
                    ));
                    None
                }
            };
            self.problems(problems);
            out.push(ReqAssign {
                name: k.name.as_str().to_owned(),
                target,
            });
        }
        out
    }

    fn check_requirements(&mut self, topo: &Topology, i: usize) {
        let t = &topo.nodes[i];
        let Some(ty) = t.ty else {
            return;
        };
        let flat = self.types.flat(ty);
        let owner = format!("node template `{}`", t.name);
        for r in &t.requirements {
            let Some(target) = &r.target else {
                continue;
            };
            let Some(tt) = topo.node(&target.name) else {
                self.unknown_node_template(
                    target,
                    &format!("requirement `{}` of {owner}", r.name),
                    topo,
                );
                continue;
            };
            let (Some((def, def_file)), Some(target_ty)) = (flat.requirements.get(&r.name), tt.ty)
            else {
                continue;
            };
            if let Some(n) = &def.node
                && let Some(want) = self.types.lookup(&n.name, Kind::Node, *def_file)
                && !self.types.derives_from(target_ty, want)
            {
                self.sink.error(
                    self.display,
                    target.pos,
                    "tosca.requirement-target-mismatch",
                    format!(
                        "requirement `{}` of {owner} needs a `{}` node, but `{}` is a `{}`",
                        r.name, n.name, target.name, tt.type_name
                    ),
                );
                continue;
            }
            if let Some(c) = &def.capability
                && let Some(want) = self.types.lookup(&c.name, Kind::Capability, *def_file)
            {
                let tflat = self.types.flat(target_ty);
                let offers = tflat.capabilities.values().any(|(cap, f)| {
                    cap.ty
                        .as_ref()
                        .and_then(|n| self.types.lookup(&n.name, Kind::Capability, *f))
                        .is_some_and(|id| self.types.derives_from(id, want))
                });
                if !offers {
                    self.sink.error(
                            self.display,
                            target.pos,
                            "tosca.requirement-target-mismatch",
                            format!(
                                "requirement `{}` of {owner} needs a `{}` capability, which `{}` (a `{}`) does not offer",
                                r.name, c.name, target.name, tt.type_name
                            ),
                        );
                }
            }
        }
        // Occurrences.
        let is_vnf = self.types.derives_from_name(ty, VNF_TYPE);
        for (name, (def, _)) in &flat.requirements {
            let count = t.requirements.iter().filter(|r| r.name == *name).count() as u64;
            let occ = def.occurrences();
            if occ.max.is_some_and(|m| count > m) {
                self.sink.error(
                    self.display,
                    t.pos,
                    "tosca.requirement-occurrences",
                    format!(
                        "{owner} assigns requirement `{name}` {count} times; at most {} allowed",
                        occ.max.unwrap_or_default()
                    ),
                );
            } else if count < occ.min && is_vnf && name != "dependency" {
                self.sink.quirk(
                    Quirk::VnfRequirementLowerBound,
                    self.display,
                    t.pos,
                    format!(
                        "{owner} assigns requirement `{name}` {count} times, fewer than its lower bound {}",
                        occ.min
                    ),
                );
            }
        }
    }

    fn unknown_node_template(&mut self, name: &Named, what: &str, topo: &Topology) {
        let mut known: Vec<&str> = topo.nodes.iter().map(|n| n.name.as_str()).collect();
        known.sort_unstable();
        self.sink
            .error(
                self.display,
                name.pos,
                "tosca.unknown-node-template",
                format!(
                    "{what} names `{}`, which is not a node template of this file",
                    name.name
                ),
            )
            .help = Some(if known.is_empty() {
            "this topology has no node templates".to_string()
        } else {
            format!("node templates of this file: {}", known.join(", "))
        });
    }

    fn resolve_artifact(&mut self, a: ArtifactDef, owner: &str) -> Option<ResolvedArtifact> {
        let type_name = match &a.ty {
            None => {
                // TOSCA lets the file extension name the type.
                let ext = a
                    .file
                    .as_ref()
                    .and_then(|f| f.name.rsplit_once('.'))
                    .map(|(_, e)| e.to_ascii_lowercase());
                let by_ext = ext.and_then(|ext| {
                    self.types.entries.iter().enumerate().find(|(id, e)| {
                        e.def.kind == Kind::Artifact
                            && self
                                .types
                                .flat(*id)
                                .file_ext
                                .iter()
                                .any(|x| x.eq_ignore_ascii_case(&ext))
                    })
                });
                match by_ext {
                    Some((_, e)) => e.def.name.to_string(),
                    None => {
                        let guess = if a.name == "sw_image"
                            && self
                                .types
                                .lookup(SW_IMAGE, Kind::Artifact, self.file)
                                .is_some()
                        {
                            SW_IMAGE
                        } else {
                            "tosca.artifacts.File"
                        };
                        self.sink.quirk(
                            Quirk::UntypedArtifact,
                            self.display,
                            a.pos,
                            format!("artifact `{}` of {owner} has no `type`, and its file extension names none; read as `{guess}`", a.name),
                        );
                        guess.to_string()
                    }
                }
            }
            Some(t) => {
                if self
                    .types
                    .lookup(&t.name, Kind::Artifact, self.file)
                    .is_none()
                    && t.name.starts_with("tosca.artifacts.Implementation.")
                {
                    self.sink.quirk(
                        Quirk::UndefinedImplementationArtifactType,
                        self.display,
                        t.pos,
                        format!(
                            "artifact type `{}` of artifact `{}` is not defined",
                            t.name, a.name
                        ),
                    );
                } else {
                    self.types
                        .resolve(t, Kind::Artifact, self.file, self.sink)?;
                }
                t.name.clone()
            }
        };
        if let Some(id) = self.types.lookup(&type_name, Kind::Artifact, self.file) {
            let props = self.types.flat(id).properties.clone();
            let resolved = self.resolve_entries(&a.properties);
            let what = format!("artifact `{}` of {owner}", a.name);
            let display = self.display;
            self.checker()
                .check_properties(&resolved, &props, a.pos, &what, display);
        }
        let file = a.file.clone()?;
        let mut reference = file.name.clone();
        if let Some(repo) = &a.repository {
            let unit = &self.types.graph.files[self.file].unit;
            match unit.repositories.iter().find(|(n, _)| *n == repo.name) {
                Some((_, url)) => {
                    reference = format!(
                        "{}/{}",
                        url.name.trim_end_matches('/'),
                        reference.trim_start_matches('/')
                    );
                }
                None => {
                    self.sink.error(
                        self.display,
                        repo.pos,
                        "tosca.unknown-repository",
                        format!(
                            "repository `{}` of artifact `{}` is not defined in this file",
                            repo.name, a.name
                        ),
                    );
                    return None;
                }
            }
        }
        if paths::is_external_uri(&reference) {
            return Some(ResolvedArtifact {
                def: a,
                type_name,
                file: reference,
                external: true,
                present: false,
            });
        }
        let base = self.types.graph.files[self.file]
            .package_path
            .clone()
            .unwrap_or_default();
        let resolved = match paths::resolve_relative(&base, &reference) {
            Ok(p) => p,
            Err(paths::PathError::Escapes) => {
                self.sink.error(
                    self.display,
                    file.pos,
                    "tosca.artifact-escapes-package",
                    format!(
                        "artifact `{}` of {owner} points outside the package: `{reference}`",
                        a.name
                    ),
                );
                return None;
            }
            Err(paths::PathError::Invalid(why)) => {
                self.sink.error(
                    self.display,
                    file.pos,
                    "tosca.invalid-artifact-path",
                    format!("artifact `{}` of {owner}: `{reference}` is not a valid package path: {why}", a.name),
                );
                return None;
            }
        };
        let mut path = resolved;
        let mut present = self.files.contains(&path);
        if !present
            && let Ok(from_root) = paths::resolve_relative("", &format!("/{reference}"))
            && from_root != path
            && self.files.contains(&from_root)
        {
            self.sink.quirk(
                        Quirk::ArtifactPathFromPackageRoot,
                        self.display,
                        file.pos,
                        format!(
                            "artifact `{}` of {owner}: `{reference}` is not at `{path}` but is at `{from_root}` (relative to the package root)",
                            a.name
                        ),
                    );
            path = from_root;
            present = true;
        }
        if !present {
            self.sink.warning(
                self.display,
                file.pos,
                "tosca.artifact-file-missing",
                format!("the file of artifact `{}` of {owner}, `{path}`, is not in the package", a.name),
            ).help = Some("the descriptor is valid, but operations that need the file will fail until it is added".into());
        }
        Some(ResolvedArtifact {
            def: a,
            type_name,
            file: path,
            external: false,
            present,
        })
    }

    fn interface(
        &mut self,
        t: &mut NodeTemplate,
        defs: &IndexMap<String, crate::hierarchy::FlatIface>,
        iface: &IfaceDef,
        owner: &str,
    ) {
        let Some(def) = defs.get(&iface.name) else {
            let mut known: Vec<&str> = defs.keys().map(String::as_str).collect();
            known.sort_unstable();
            self.sink
                .error(
                    self.display,
                    iface.pos,
                    "tosca.unknown-interface",
                    format!("`{}` is not an interface of {owner}", iface.name),
                )
                .help = Some(format!("known interfaces: {}", known.join(", ")));
            return;
        };
        if let Some(ty) = &iface.ty {
            self.sink.error(
                self.display,
                ty.pos,
                "tosca.unknown-keyword",
                "an interface assignment in a node template cannot set `type`",
            );
        }
        let iface_type = def
            .ty
            .as_ref()
            .and_then(|(n, f)| self.types.lookup(&n.name, Kind::Interface, *f));
        let type_ops = iface_type.map(|id| self.types.flat(id));
        let is_vnflcm = iface_type.is_some_and(|id| self.types.derives_from_name(id, VNFLCM_TYPE));
        // One warning per interface, not per operation: Tacker writes `[]` for every operation.
        let empty: Vec<&str> = iface
            .operations
            .iter()
            .filter(|op| op.empty_list)
            .map(|op| op.name.as_str())
            .collect();
        if let Some(first) = iface.operations.iter().find(|op| op.empty_list) {
            let list = empty
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let (subject, verb) = if empty.len() == 1 {
                ("operation", "is")
            } else {
                ("operations", "are")
            };
            self.sink.quirk(
                Quirk::EmptyListOperation,
                self.display,
                first.pos,
                format!(
                    "{subject} {list} of interface `{}` of {owner} {verb} `[]`",
                    iface.name
                ),
            );
        }
        for op in &iface.operations {
            let declared = def.operations.contains_key(&op.name)
                || type_ops
                    .as_ref()
                    .is_some_and(|f| f.operations.contains_key(&op.name));
            if !declared {
                let mut known: Vec<&str> = type_ops
                    .as_ref()
                    .map(|f| f.operations.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                known.extend(def.operations.keys().map(String::as_str));
                known.sort_unstable();
                known.dedup();
                self.sink
                    .error(
                        self.display,
                        op.pos,
                        "tosca.unknown-operation",
                        format!(
                            "`{}` is not an operation of interface `{}` of {owner}",
                            op.name, iface.name
                        ),
                    )
                    .help = Some(if is_vnflcm {
                    format!(
                        "declare it in an interface type derived from {VNFLCM_TYPE}; known operations: {}",
                        known.join(", ")
                    )
                } else {
                    format!("known operations: {}", known.join(", "))
                });
                continue;
            }
            let mut op = op.clone();
            if op.implementation.is_none() {
                // Keep an implementation given by the type.
                op.implementation = def
                    .operations
                    .get(&op.name)
                    .and_then(|(o, _)| o.implementation.clone());
            }
            if let Some(imp) = &op.implementation {
                let refs = imp.primary.iter().chain(&imp.dependencies);
                for r in refs {
                    let declared = t.artifacts.iter().any(|a| a.def.name == r.name);
                    let is_file = !is_vnflcm
                        && paths::resolve_relative(
                            self.types.graph.files[self.file]
                                .package_path
                                .as_deref()
                                .unwrap_or_default(),
                            &r.name,
                        )
                        .is_ok_and(|p| self.files.contains(&p));
                    if !declared && !is_file {
                        let mut known: Vec<&str> =
                            t.artifacts.iter().map(|a| a.def.name.as_str()).collect();
                        known.sort_unstable();
                        self.sink.error(
                            self.display,
                            r.pos,
                            "tosca.unknown-artifact",
                            format!(
                                "operation `{}` of {owner} is implemented by `{}`, which is not an artifact of the node template",
                                op.name, r.name
                            ),
                        ).help = Some(if known.is_empty() {
                            "declare the artifact under the node template's `artifacts`".to_string()
                        } else {
                            format!("declared artifacts: {}", known.join(", "))
                        });
                    }
                }
            }
            op.inputs = self.resolve_entries(&op.inputs);
            t.operations.push(Operation {
                interface: iface.name.clone(),
                interface_type: iface_type,
                op,
            });
        }
    }

    fn groups(&mut self, topo: &'g Node, topology: &Topology) -> Vec<Group> {
        let Some((gk, gv)) = topo.get_entry("groups") else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        let entries = types::entries(gv, gk.pos, "groups", &mut problems);
        self.problems(problems);
        let mut out = Vec::new();
        for (k, v) in entries {
            let mut g = Group {
                name: k.name.as_str().to_owned(),
                ty: None,
                members: Vec::new(),
                properties: IndexMap::new(),
            };
            let mut problems = Vec::new();
            let mut type_name = None;
            let mut props: &[(Key, Node)] = &[];
            for (gk2, gv2) in types::entries(v, k.pos, &k.name, &mut problems) {
                match gk2.name.as_str() {
                    "type" => type_name = types::named(gv2, "type", &mut problems),
                    "members" => g.members = types::named_list(gv2, "members", &mut problems),
                    "properties" => {
                        props = types::entries(gv2, gk2.pos, "properties", &mut problems)
                    }
                    "description" | "metadata" | "interfaces" | "attributes" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        gk2.pos,
                        format!("`{other}` is not a keyword of a group"),
                    )),
                }
            }
            self.problems(problems);
            let owner = format!("group `{}`", k.name);
            match type_name {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.missing-keyword",
                        format!("{owner} has no `type`"),
                    );
                }
                Some(tn) => g.ty = self.types.resolve(&tn, Kind::Group, self.file, self.sink),
            }
            let flat = g.ty.map(|id| self.types.flat(id));
            let resolved = self.resolve_entries(props);
            if let (Some(flat), Some(ty)) = (&flat, g.ty) {
                let display = self.display;
                let tolerated = self.types.derives_from_name(ty, PLACEMENT_GROUP)
                    && !resolved
                        .iter()
                        .any(|(k, v)| k.name == "description" && !v.is_null());
                if tolerated {
                    self.sink.quirk(
                        Quirk::PlacementGroupWithoutDescription,
                        display,
                        k.pos,
                        format!("{owner} has no `description`, which {PLACEMENT_GROUP} requires"),
                    );
                    let mut relaxed = flat.properties.clone();
                    relaxed.shift_remove("description");
                    self.checker()
                        .check_properties(&resolved, &relaxed, k.pos, &owner, display);
                } else {
                    self.checker().check_properties(
                        &resolved,
                        &flat.properties,
                        k.pos,
                        &owner,
                        display,
                    );
                }
                g.properties = with_defaults(&resolved, &flat.properties);
            }
            for m in &g.members {
                match topology.node(&m.name) {
                    None => {
                        self.unknown_node_template(m, &format!("member list of {owner}"), topology)
                    }
                    Some(n) => {
                        if let (Some(flat), Some(nt)) = (&flat, n.ty) {
                            self.check_valid_type(nt, &flat.valid_types, m, &owner, "member");
                        }
                    }
                }
            }
            out.push(g);
        }
        out
    }

    fn check_valid_type(
        &mut self,
        id: TypeId,
        valid: &[(Named, usize)],
        name: &Named,
        owner: &str,
        role: &str,
    ) {
        if valid.is_empty() {
            return;
        }
        let ok = valid.iter().any(|(v, f)| {
            let want = self
                .types
                .lookup(&v.name, Kind::Node, *f)
                .or_else(|| self.types.lookup(&v.name, Kind::Group, *f));
            want.is_some_and(|w| self.types.derives_from(id, w))
        });
        if !ok {
            let names: Vec<&str> = valid.iter().map(|(v, _)| v.name.as_str()).collect();
            self.sink.error(
                self.display,
                name.pos,
                "tosca.invalid-target",
                format!(
                    "`{}` (a `{}`) cannot be a {role} of {owner}; valid types: {}",
                    name.name,
                    self.types.entries[id].def.name,
                    names.join(", ")
                ),
            );
        }
    }

    fn policies(&mut self, topo: &'g Node, topology: &Topology) -> Vec<Policy> {
        let Some((pk, pv)) = topo.get_entry("policies") else {
            return Vec::new();
        };
        let mut items: Vec<(&Key, &Node)> = Vec::new();
        match &pv.value {
            Value::Seq(seq) => {
                for item in seq {
                    match item.as_map() {
                        Some([(k, v)]) => items.push((k, v)),
                        _ => self.problems(vec![types::wrong_shape(
                            item,
                            "a policy",
                            "a single-entry map",
                        )]),
                    }
                }
            }
            Value::Map(map) => {
                self.sink.quirk(
                    Quirk::PoliciesAsMap,
                    self.display,
                    pk.pos,
                    "`policies` is a map",
                );
                items.extend(map.iter().map(|(k, v)| (k, v)));
            }
            Value::Null => {}
            _ => self.problems(vec![types::wrong_shape(
                pv,
                "`policies`",
                "a list of single-entry maps",
            )]),
        }
        let mut out = Vec::new();
        for (k, v) in items {
            let mut p = Policy {
                name: k.name.as_str().to_owned(),
                pos: k.pos,
                type_name: String::new(),
                ty: None,
                targets: Vec::new(),
                properties: IndexMap::new(),
                metadata: IndexMap::new(),
            };
            let mut problems = Vec::new();
            let mut type_name = None;
            let mut props: &[(Key, Node)] = &[];
            for (k2, v2) in types::entries(v, k.pos, &k.name, &mut problems) {
                match k2.name.as_str() {
                    "type" => type_name = types::named(v2, "type", &mut problems),
                    "targets" => p.targets = types::named_list(v2, "targets", &mut problems),
                    "properties" => props = types::entries(v2, k2.pos, "properties", &mut problems),
                    "metadata" => {
                        p.metadata = types::entries(v2, k2.pos, "metadata", &mut problems)
                            .iter()
                            .map(|(k, v)| (k.name.as_str().to_owned(), v.clone()))
                            .collect();
                    }
                    "description" | "triggers" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k2.pos,
                        format!("`{other}` is not a keyword of a policy"),
                    )),
                }
            }
            self.problems(problems);
            let owner = format!("policy `{}`", k.name);
            match type_name {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.missing-keyword",
                        format!("{owner} has no `type`"),
                    );
                }
                Some(tn) => {
                    p.type_name = tn.name.clone();
                    p.ty = self.types.resolve(&tn, Kind::Policy, self.file, self.sink);
                }
            }
            let flat = p.ty.map(|id| self.types.flat(id));
            let resolved = self.resolve_entries(props);
            if let Some(flat) = &flat {
                let display = self.display;
                self.checker().check_properties(
                    &resolved,
                    &flat.properties,
                    k.pos,
                    &owner,
                    display,
                );
                p.properties = with_defaults(&resolved, &flat.properties);
            }
            for target in &p.targets {
                let ty = match (
                    topology.node(&target.name),
                    topology.groups.iter().find(|g| g.name == target.name),
                ) {
                    (Some(n), _) => n.ty,
                    (None, Some(g)) => g.ty,
                    (None, None) => {
                        self.unknown_node_template(
                            target,
                            &format!("target list of {owner}"),
                            topology,
                        );
                        continue;
                    }
                };
                if let (Some(flat), Some(ty)) = (&flat, ty) {
                    self.check_valid_type(ty, &flat.valid_types, target, &owner, "target");
                }
            }
            out.push(p);
        }
        out
    }

    fn check_substitution(&mut self, topology: &Topology) {
        let Some(sub) = &topology.substitution else {
            return;
        };
        let Some(nt) = sub.node_type else {
            return;
        };
        let flat = self.types.flat(nt);
        let owner = format!(
            "substitution mapping of node type `{}`",
            sub.node_type_name.name
        );
        let given: Vec<(Key, Node)> = sub
            .properties
            .iter()
            .map(|(k, v)| {
                (
                    Key {
                        name: k.as_str().into(),
                        pos: v.pos,
                    },
                    v.clone(),
                )
            })
            .collect();
        for (k, v) in &given {
            match flat.properties.get(k.name.as_str()) {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.unknown-property",
                        format!(
                            "`{}` is not a property of node type `{}`",
                            k.name, sub.node_type_name.name
                        ),
                    );
                }
                Some(fp) => {
                    if let Some(schema) = &fp.def.schema {
                        let what = format!("property `{}` of the {owner}", k.name);
                        let display = self.display;
                        self.checker().check_vnf_property(
                            &k.name,
                            v,
                            schema,
                            fp.file,
                            At {
                                file: display,
                                what: &what,
                            },
                        );
                    }
                }
            }
        }
        for r in &sub.requirements {
            if !flat.requirements.contains_key(&r.name) {
                self.sink.quirk(
                    Quirk::UndeclaredSubstitutionRequirement,
                    self.display,
                    r.pos,
                    format!(
                        "`{}` is not a requirement of node type `{}`",
                        r.name, sub.node_type_name.name
                    ),
                );
            }
            let Some((node, req)) = &r.target else {
                continue;
            };
            match topology.node(&node.name) {
                None => self.sink.quirk(
                    Quirk::DanglingSubstitutionRequirement,
                    self.display,
                    node.pos,
                    format!("requirement mapping `{}` names `{}`, which is not a node template of this file", r.name, node.name),
                ),
                Some(n) => {
                    if let Some(ty) = n.ty
                        && !self.types.flat(ty).requirements.contains_key(&req.name) {
                            self.sink.quirk(
                                Quirk::SubstitutionTargetRequirementUndeclared,
                                self.display,
                                req.pos,
                                format!(
                                    "requirement mapping `{}` names `{}` of node template `{}`, which its type `{}` does not declare",
                                    r.name, req.name, node.name, self.types.entries[ty].def.name
                                ),
                            );
                        }
                }
            }
        }
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
