//! Type definitions: what one file declares under `data_types`, `node_types`, `policy_types`...
//!
//! This module reads the type sections of one parsed file into [`TypeDef`]s: derivation,
//! property/attribute definitions with their schemas and constraints, requirement, capability,
//! interface and artifact definitions, operations of interface types, and the valid
//! member/target/source types of group, policy, relationship and capability types. Reading is
//! pure and depends on nothing but the file itself, so the result is cached with the file (see
//! [`crate::imports`]); name resolution, hierarchy and inheritance happen later, per load, in
//! [`crate::hierarchy`]. Grammar mistakes are reported as [`Problem`]s with the position of the
//! offending key or value.

use std::sync::Arc;

use crate::problem::Problem;
use crate::yaml::{Key, Node, Pos, Value};

mod members;
mod properties;

pub(crate) use members::*;
pub(crate) use properties::*;

/// The eight kinds of TOSCA types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Data,
    Artifact,
    Capability,
    Interface,
    Relationship,
    Node,
    Group,
    Policy,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Data,
        Kind::Artifact,
        Kind::Capability,
        Kind::Interface,
        Kind::Relationship,
        Kind::Node,
        Kind::Group,
        Kind::Policy,
    ];

    /// The service template section that declares types of this kind.
    pub fn section(self) -> &'static str {
        match self {
            Kind::Data => "data_types",
            Kind::Artifact => "artifact_types",
            Kind::Capability => "capability_types",
            Kind::Interface => "interface_types",
            Kind::Relationship => "relationship_types",
            Kind::Node => "node_types",
            Kind::Group => "group_types",
            Kind::Policy => "policy_types",
        }
    }

    /// The kind's name in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Data => "data type",
            Kind::Artifact => "artifact type",
            Kind::Capability => "capability type",
            Kind::Interface => "interface type",
            Kind::Relationship => "relationship type",
            Kind::Node => "node type",
            Kind::Group => "group type",
            Kind::Policy => "policy type",
        }
    }

    /// The prefix of the normative type names of this kind, for TOSCA short names
    /// (`Compute` for `tosca.nodes.Compute`).
    pub fn normative_prefix(self) -> &'static str {
        match self {
            Kind::Data => "tosca.datatypes.",
            Kind::Artifact => "tosca.artifacts.",
            Kind::Capability => "tosca.capabilities.",
            Kind::Interface => "tosca.interfaces.",
            Kind::Relationship => "tosca.relationships.",
            Kind::Node => "tosca.nodes.",
            Kind::Group => "tosca.groups.",
            Kind::Policy => "tosca.policies.",
        }
    }

    /// Keywords a type definition of this kind may use, besides the common ones.
    fn keywords(self) -> &'static [&'static str] {
        match self {
            Kind::Data => &["constraints", "properties", "key_schema", "entry_schema"],
            Kind::Artifact => &["mime_type", "file_ext", "properties"],
            Kind::Capability => &["properties", "attributes", "valid_source_types"],
            Kind::Interface => &["inputs", "operations", "notifications"],
            Kind::Relationship => &[
                "properties",
                "attributes",
                "interfaces",
                "valid_target_types",
            ],
            Kind::Node => &[
                "properties",
                "attributes",
                "requirements",
                "capabilities",
                "interfaces",
                "artifacts",
            ],
            Kind::Group => &[
                "properties",
                "attributes",
                "members",
                "requirements",
                "capabilities",
                "interfaces",
            ],
            Kind::Policy => &["properties", "targets", "triggers"],
        }
    }
}

const COMMON_TYPE_KEYWORDS: &[&str] = &["derived_from", "version", "metadata", "description"];

/// A name as written, with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Named {
    pub name: String,
    pub pos: Pos,
}

/// `[min, max]` occurrences; `max == None` is `UNBOUNDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Occurrences {
    pub min: u64,
    pub max: Option<u64>,
}

/// The constraint operators of TOSCA 1.2/1.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConstraintOp {
    Equal,
    GreaterThan,
    GreaterOrEqual,
    LessThan,
    LessOrEqual,
    InRange,
    ValidValues,
    Length,
    MinLength,
    MaxLength,
    Pattern,
}

impl ConstraintOp {
    fn parse(s: &str) -> Option<ConstraintOp> {
        Some(match s {
            "equal" => ConstraintOp::Equal,
            "greater_than" => ConstraintOp::GreaterThan,
            "greater_or_equal" => ConstraintOp::GreaterOrEqual,
            "less_than" => ConstraintOp::LessThan,
            "less_or_equal" => ConstraintOp::LessOrEqual,
            "in_range" => ConstraintOp::InRange,
            "valid_values" => ConstraintOp::ValidValues,
            "length" => ConstraintOp::Length,
            "min_length" => ConstraintOp::MinLength,
            "max_length" => ConstraintOp::MaxLength,
            "pattern" => ConstraintOp::Pattern,
            _ => return None,
        })
    }

    pub fn keyword(self) -> &'static str {
        match self {
            ConstraintOp::Equal => "equal",
            ConstraintOp::GreaterThan => "greater_than",
            ConstraintOp::GreaterOrEqual => "greater_or_equal",
            ConstraintOp::LessThan => "less_than",
            ConstraintOp::LessOrEqual => "less_or_equal",
            ConstraintOp::InRange => "in_range",
            ConstraintOp::ValidValues => "valid_values",
            ConstraintOp::Length => "length",
            ConstraintOp::MinLength => "min_length",
            ConstraintOp::MaxLength => "max_length",
            ConstraintOp::Pattern => "pattern",
        }
    }
}

/// One constraint clause: operator and argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Constraint {
    pub op: ConstraintOp,
    pub arg: Node,
    pub pos: Pos,
}

/// The type of a value: a type name plus, for lists and maps, entry and key schemas, and the
/// constraints that apply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schema {
    pub ty: Named,
    pub entry: Option<Box<Schema>>,
    pub key: Option<Box<Schema>>,
    pub constraints: Vec<Constraint>,
}

/// A property, attribute, input or parameter definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PropDef {
    pub name: String,
    pub pos: Pos,
    /// `None` when the definition refines an inherited one without restating its type.
    pub schema: Option<Schema>,
    pub required: Option<bool>,
    pub default: Option<Node>,
    /// TOSCA 1.3 `value` (a fixed value).
    pub value: Option<Node>,
}

impl PropDef {
    /// TOSCA: properties are required unless `required: false`.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }
}

/// A requirement definition of a node (or group) type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReqDef {
    pub name: String,
    pub pos: Pos,
    pub capability: Option<Named>,
    pub node: Option<Named>,
    pub relationship: Option<Named>,
    pub occurrences: Option<Occurrences>,
}

impl ReqDef {
    /// TOSCA default occurrences of a requirement: exactly one.
    pub fn occurrences(&self) -> Occurrences {
        self.occurrences.unwrap_or(Occurrences {
            min: 1,
            max: Some(1),
        })
    }
}

/// A capability definition of a node type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CapDef {
    pub name: String,
    pub pos: Pos,
    pub ty: Option<Named>,
    pub properties: Vec<Arc<PropDef>>,
    pub valid_source_types: Vec<Named>,
}

/// An operation's implementation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Implementation {
    pub pos: Pos,
    pub primary: Option<Named>,
    pub dependencies: Vec<Named>,
    pub timeout: Option<(i64, Pos)>,
}

/// An operation definition (in an interface type, or an interface of a node type or template).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpDef {
    pub name: String,
    pub pos: Pos,
    pub implementation: Option<Implementation>,
    pub inputs: Vec<(Key, Node)>,
    /// Written as `[]` (see `Quirk::EmptyListOperation`).
    pub empty_list: bool,
}

/// An interface definition (in a node/relationship/group type) or assignment (in a template).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IfaceDef {
    pub name: String,
    pub pos: Pos,
    pub ty: Option<Named>,
    pub operations: Vec<OpDef>,
}

/// An artifact definition (in a node type or a node template).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArtifactDef {
    pub name: String,
    pub pos: Pos,
    pub ty: Option<Named>,
    pub file: Option<Named>,
    pub repository: Option<Named>,
    pub description: Option<String>,
    pub deploy_path: Option<String>,
    pub checksum: Option<String>,
    pub checksum_algorithm: Option<String>,
    pub properties: Vec<(Key, Node)>,
}

/// One type definition as written in one file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeDef {
    pub kind: Kind,
    pub name: Arc<str>,
    pub pos: Pos,
    pub derived_from: Option<Named>,
    pub properties: Vec<Arc<PropDef>>,
    pub attributes: Vec<Arc<PropDef>>,
    pub requirements: Vec<Arc<ReqDef>>,
    pub capabilities: Vec<Arc<CapDef>>,
    pub interfaces: Vec<Arc<IfaceDef>>,
    pub artifacts: Vec<Arc<ArtifactDef>>,
    /// Operations of an interface type.
    pub operations: Vec<Arc<OpDef>>,
    /// Constraints of a data type derived from a primitive type.
    pub constraints: Vec<Constraint>,
    pub entry_schema: Option<Schema>,
    pub key_schema: Option<Schema>,
    /// `members` (group), `targets` (policy), `valid_target_types` (relationship),
    /// `valid_source_types` (capability).
    pub valid_types: Vec<Named>,
    pub file_ext: Vec<String>,
    /// Where the definition sits in its section of the file (see [`raw_definition`]), to tell
    /// identical re-definitions from conflicting ones without keeping a copy of it.
    pub index: usize,
}

/// Reads every type section of a file.
pub(crate) fn parse_type_sections(root: &Node, problems: &mut Vec<Problem>) -> Vec<Arc<TypeDef>> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        let Some((key, section)) = root.get_entry(kind.section()) else {
            continue;
        };
        for (index, (name, def)) in entries(section, key.pos, kind.section(), problems)
            .iter()
            .enumerate()
        {
            out.push(Arc::new(parse_type(kind, index, name, def, problems)));
        }
    }
    out
}

/// The definition of `def` as written in `root`, the file it was read from.
pub(crate) fn raw_definition<'a>(root: &'a Node, def: &TypeDef) -> Option<&'a Node> {
    let (_, node) = root.get(def.kind.section())?.as_map()?.get(def.index)?;
    Some(node)
}

fn parse_type(
    kind: Kind,
    index: usize,
    key: &Key,
    node: &Node,
    problems: &mut Vec<Problem>,
) -> TypeDef {
    let mut t = TypeDef {
        kind,
        name: Arc::from(key.name.as_str()),
        pos: key.pos,
        derived_from: None,
        properties: Vec::new(),
        attributes: Vec::new(),
        requirements: Vec::new(),
        capabilities: Vec::new(),
        interfaces: Vec::new(),
        artifacts: Vec::new(),
        operations: Vec::new(),
        constraints: Vec::new(),
        entry_schema: None,
        key_schema: None,
        valid_types: Vec::new(),
        file_ext: Vec::new(),
        index,
    };
    if node.is_null() {
        return t;
    }
    let Some(map) = node.as_map() else {
        problems.push(wrong_shape(
            node,
            &format!("{} `{}`", kind.noun(), key.name),
            "a map",
        ));
        return t;
    };
    for (k, v) in map {
        match k.name.as_str() {
            "derived_from" => t.derived_from = named(v, "derived_from", problems),
            "description" | "version" | "metadata" => {}
            "properties" => t.properties = prop_defs(v, k.pos, "properties", problems),
            "attributes" => t.attributes = prop_defs(v, k.pos, "attributes", problems),
            "requirements" if matches!(kind, Kind::Node | Kind::Group) => {
                t.requirements = req_defs(v, problems)
            }
            "capabilities" if matches!(kind, Kind::Node | Kind::Group) => {
                t.capabilities = cap_defs(v, k.pos, problems)
            }
            "interfaces" if matches!(kind, Kind::Node | Kind::Group | Kind::Relationship) => {
                t.interfaces = iface_defs(v, k.pos, problems)
            }
            "artifacts" if kind == Kind::Node => {
                t.artifacts = artifact_defs(v, k.pos, problems)
                    .into_iter()
                    .map(Arc::new)
                    .collect()
            }
            "constraints" if kind == Kind::Data => t.constraints = constraints(v, problems),
            "entry_schema" if kind == Kind::Data => t.entry_schema = schema(v, problems),
            "key_schema" if kind == Kind::Data => t.key_schema = schema(v, problems),
            "members" | "targets" | "valid_target_types" | "valid_source_types"
                if kind.keywords().contains(&k.name.as_str()) =>
            {
                t.valid_types = named_list(v, &k.name, problems)
            }
            "file_ext" if kind == Kind::Artifact => {
                t.file_ext = named_list(v, "file_ext", problems)
                    .into_iter()
                    .map(|n| n.name)
                    .collect()
            }
            "mime_type" if kind == Kind::Artifact => {}
            "triggers" if kind == Kind::Policy => {}
            "inputs" | "notifications" if kind == Kind::Interface => {}
            "operations" if kind == Kind::Interface => {
                for (name, op) in entries(v, k.pos, "operations", problems) {
                    t.operations.push(Arc::new(op_def(name, op, problems)));
                }
            }
            // TOSCA 1.2 interface types list their operations directly.
            _ if kind == Kind::Interface => t.operations.push(Arc::new(op_def(k, v, problems))),
            other => problems.push(unknown_keyword(k, other, kind.noun(), kind)),
        }
    }
    t
}

fn unknown_keyword(k: &Key, other: &str, what: &str, kind: Kind) -> Problem {
    let mut allowed: Vec<&str> = COMMON_TYPE_KEYWORDS.to_vec();
    allowed.extend_from_slice(kind.keywords());
    Problem::error(
        "tosca.unknown-keyword",
        k.pos,
        format!("`{other}` is not a keyword of a {what}"),
    )
    .with_help(format!("allowed here: {}", allowed.join(", ")))
}

/// The entries of a map-valued section; null is an empty map, anything else is reported.
pub(crate) fn entries<'a>(
    node: &'a Node,
    at: Pos,
    what: &str,
    problems: &mut Vec<Problem>,
) -> &'a [(Key, Node)] {
    match &node.value {
        Value::Map(m) => m,
        Value::Null => &[],
        _ => {
            let pos = if node.pos.line == 0 { at } else { node.pos };
            problems.push(Problem::error(
                "tosca.wrong-shape",
                pos,
                format!("`{what}` must be a map, not {}", node.value.kind()),
            ));
            &[]
        }
    }
}

pub(crate) fn wrong_shape(node: &Node, what: &str, expected: &str) -> Problem {
    Problem::error(
        "tosca.wrong-shape",
        node.pos,
        format!("{what} must be {expected}, not {}", node.value.kind()),
    )
}

/// A string-valued keyword; numbers are taken as written.
pub(crate) fn named(node: &Node, what: &str, problems: &mut Vec<Problem>) -> Option<Named> {
    match &node.value {
        Value::Str(s) => Some(Named {
            name: s.as_str().to_owned(),
            pos: node.pos,
        }),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => node.scalar_text().map(|s| Named {
            name: s,
            pos: node.pos,
        }),
        _ => {
            problems.push(wrong_shape(node, &format!("`{what}`"), "a string"));
            None
        }
    }
}

/// A list of names (a single name is accepted as a list of one).
pub(crate) fn named_list(node: &Node, what: &str, problems: &mut Vec<Problem>) -> Vec<Named> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .filter_map(|i| named(i, what, problems))
            .collect(),
        Value::Null => Vec::new(),
        _ => named(node, what, problems).into_iter().collect(),
    }
}

fn text(node: &Node) -> Option<String> {
    node.scalar_text()
}

/// True when two values are the same, ignoring positions and descriptions (which do not change
/// what a definition means; copies of the ETSI files differ in description spelling).
pub(crate) fn same_meaning(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Map(x), Value::Map(y)) => {
            let relevant = |m: &[(Key, Node)]| -> Vec<usize> {
                (0..m.len())
                    .filter(|&i| m[i].0.name != "description")
                    .collect()
            };
            let (ix, iy) = (relevant(x), relevant(y));
            ix.len() == iy.len()
                && ix.iter().all(|&i| {
                    y.iter()
                        .find(|(k, _)| k.name == x[i].0.name)
                        .is_some_and(|(_, v)| same_meaning(&x[i].1, v))
                })
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_meaning(p, q))
        }
        (x, y) => x == y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn parse(text: &str) -> (Vec<Arc<TypeDef>>, Vec<Problem>) {
        let root = yaml::parse("t.yaml", text).unwrap();
        let mut problems = Vec::new();
        let types = parse_type_sections(&root, &mut problems);
        (types, problems)
    }

    #[test]
    fn reads_properties_requirements_and_interfaces() {
        let (types, problems) = parse(
            "node_types:\n  a.B:\n    derived_from: tosca.nodes.Root\n    properties:\n      p:\n        type: integer\n        required: false\n        constraints: [ { greater_than: 1 } ]\n    requirements:\n      - r: { capability: c.C, occurrences: [0, UNBOUNDED] }\n    interfaces:\n      I:\n        type: i.I\n        op1:\n          implementation: { primary: art, dependencies: [d1], timeout: 30 }\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        let t = &types[0];
        assert_eq!(&*t.name, "a.B");
        assert_eq!(t.derived_from.as_ref().unwrap().name, "tosca.nodes.Root");
        let p = &t.properties[0];
        assert!(!p.is_required());
        assert_eq!(
            p.schema.as_ref().unwrap().constraints[0].op,
            ConstraintOp::GreaterThan
        );
        assert_eq!(
            t.requirements[0].occurrences(),
            Occurrences { min: 0, max: None }
        );
        let op = &t.interfaces[0].operations[0];
        let imp = op.implementation.as_ref().unwrap();
        assert_eq!(imp.primary.as_ref().unwrap().name, "art");
        assert_eq!(imp.dependencies[0].name, "d1");
        assert_eq!(imp.timeout.map(|t| t.0), Some(30));
    }

    #[test]
    fn interface_types_accept_both_operation_forms() {
        let (types, problems) = parse(
            "interface_types:\n  a.I:\n    derived_from: tosca.interfaces.Root\n    op_a:\n      description: x\n  b.I:\n    operations:\n      op_b: {}\n",
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(types[0].operations[0].name, "op_a");
        assert_eq!(types[1].operations[0].name, "op_b");
    }

    #[test]
    fn unknown_keywords_and_bad_constraints_are_reported_with_positions() {
        let (_, problems) = parse(
            "data_types:\n  a.D:\n    properties:\n      p:\n        type: string\n        requird: true\n        constraints: [ { shorter_than: 3 } ]\n",
        );
        let codes: Vec<_> = problems.iter().map(|p| (&*p.code, p.pos.line)).collect();
        assert_eq!(
            codes,
            vec![
                ("tosca.unknown-keyword", 6),
                ("tosca.unknown-constraint", 7)
            ]
        );
    }

    #[test]
    fn same_meaning_ignores_descriptions_and_positions() {
        let a = yaml::parse("a", "x: {type: string, description: one}\n").unwrap();
        let b = yaml::parse("b", "\n\nx:\n  description: two\n  type: string\n").unwrap();
        let c = yaml::parse("c", "x: {type: integer}\n").unwrap();
        assert!(same_meaning(&a, &b));
        assert!(!same_meaning(&a, &c));
    }
}
