//! What the reader knows about ASD types: property names and types per data, artifact and node
//! type, from the package's type files over a built-in table of both published dialects.
//!
//! The knowledge serves lenient checks (an unknown property is a warning) and tells which
//! artifact and node types derive from the ASD ones; the normalized model itself is built from
//! fixed property names, so a missing or odd types file never stops a descriptor from reading.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::yaml::{self, Node};

/// The kind of a type definition (its top-level section).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `data_types`.
    Data,
    /// `artifact_types`.
    Artifact,
    /// `node_types`.
    Node,
}

impl Kind {
    fn section(self) -> &'static str {
        match self {
            Kind::Data => "data_types",
            Kind::Artifact => "artifact_types",
            Kind::Node => "node_types",
        }
    }
}

/// A property definition: its type and, for lists and maps, the entry type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropDef {
    /// `type`.
    pub ty: String,
    /// `entry_schema.type` (or `entry_schema` written as a bare type name).
    pub entry: Option<String>,
}

/// One type definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDef {
    /// `derived_from`.
    pub derived_from: Option<String>,
    /// Property definitions by name.
    pub properties: BTreeMap<String, PropDef>,
    /// Where the definition came from (a package path, or `built-in`).
    pub source: String,
}

/// Type definitions by kind and name.
#[derive(Debug, Clone, Default)]
pub struct TypeSet {
    defs: BTreeMap<(Kind, String), TypeDef>,
}

/// Where built-in definitions are said to come from, in messages.
pub const BUILTIN_SOURCE: &str = "built-in ASD types";

/// Longest `derived_from` chain followed; deeper chains are cut (they only feed lenient checks).
const MAX_DERIVATION: usize = 16;

impl TypeSet {
    /// The built-in definitions of both dialects.
    pub fn builtin() -> TypeSet {
        static BUILTIN: OnceLock<TypeSet> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut set = TypeSet::default();
                // The table is part of the source and parsed by the same loader; a parse
                // failure would leave the set empty, which a unit test rules out.
                if let Ok(doc) =
                    yaml::parse("builtin_types.yaml", include_str!("builtin_types.yaml"))
                {
                    set.add_document(BUILTIN_SOURCE, &doc);
                }
                set
            })
            .clone()
    }

    /// Adds (or replaces) the type definitions of one TOSCA document.
    pub fn add_document(&mut self, source: &str, doc: &Node) {
        for kind in [Kind::Data, Kind::Artifact, Kind::Node] {
            let Some(entries) = doc.get(kind.section()).and_then(Node::as_map) else {
                continue;
            };
            for (name, def) in entries {
                let derived_from = def
                    .get("derived_from")
                    .and_then(Node::as_str)
                    .map(str::to_string);
                let mut properties = BTreeMap::new();
                if let Some(props) = def.get("properties").and_then(Node::as_map) {
                    for (pname, pdef) in props {
                        let ty = pdef
                            .get("type")
                            .and_then(Node::as_str)
                            .unwrap_or("string")
                            .to_string();
                        let entry = pdef.get("entry_schema").and_then(|e| {
                            e.as_str()
                                .or_else(|| e.get("type").and_then(Node::as_str))
                                .map(str::to_string)
                        });
                        properties.insert(pname.name.as_str().to_owned(), PropDef { ty, entry });
                    }
                }
                self.defs.insert(
                    (kind, name.name.as_str().to_owned()),
                    TypeDef {
                        derived_from,
                        properties,
                        source: source.to_string(),
                    },
                );
            }
        }
    }

    /// The definition of `name`, when known.
    pub fn get(&self, kind: Kind, name: &str) -> Option<&TypeDef> {
        self.defs.get(&(kind, name.to_string()))
    }

    /// True when `name` is a known data type.
    pub fn is_data_type(&self, name: &str) -> bool {
        self.get(Kind::Data, name).is_some()
    }

    /// The properties of `name` including inherited ones, with the source of `name`'s own
    /// definition; `None` when `name` is unknown.
    pub fn properties(&self, kind: Kind, name: &str) -> Option<(BTreeMap<&str, &PropDef>, &str)> {
        let own = self.get(kind, name)?;
        let mut props = BTreeMap::new();
        let mut current = Some(own);
        let mut depth = 0;
        while let Some(def) = current {
            for (pname, pdef) in &def.properties {
                // A derived type's definition wins over the one it refines.
                props.entry(pname.as_str()).or_insert(pdef);
            }
            depth += 1;
            if depth >= MAX_DERIVATION {
                break;
            }
            current = def
                .derived_from
                .as_deref()
                .and_then(|parent| self.get(kind, parent));
        }
        Some((props, own.source.as_str()))
    }

    /// True when `name` is `base` or derives from it (through known definitions).
    pub fn derives_from(&self, kind: Kind, name: &str, base: &str) -> bool {
        let mut current = name;
        for _ in 0..MAX_DERIVATION {
            if current == base {
                return true;
            }
            match self
                .get(kind, current)
                .and_then(|d| d.derived_from.as_deref())
            {
                Some(parent) => current = parent,
                None => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_knows_both_dialects() {
        let set = TypeSet::builtin();
        let (onap, src) = set.properties(Kind::Node, "tosca.nodes.asd").unwrap();
        assert_eq!(src, BUILTIN_SOURCE);
        assert!(onap.contains_key("descriptor_id"));
        assert!(onap.contains_key("ext_cpds"));
        let (oran, _) = set.properties(Kind::Node, "tosca.nodes.asd.Asd").unwrap();
        assert!(oran.contains_key("asdId"));
        assert!(oran.contains_key("asdExtCpd"));
        assert!(!oran.contains_key("descriptor_id"));
        let (item, _) = set
            .properties(Kind::Artifact, "tosca.artifacts.asd.DeploymentItem")
            .unwrap();
        assert_eq!(item["deploymentOrder"].ty, "integer");
        let ecc = set
            .properties(
                Kind::Data,
                "tosca.datatypes.asd.EnhancedClusterCapabilities",
            )
            .unwrap()
            .0;
        assert_eq!(
            ecc["requiredPlugin"].entry.as_deref(),
            Some("tosca.datatypes.asd.RequiredPlugin")
        );
    }

    #[test]
    fn package_definitions_override_and_inherit() {
        let mut set = TypeSet::builtin();
        let doc = yaml::parse(
            "Definitions/t.yaml",
            "artifact_types:\n  tosca.artifacts.asd.deploymentItem:\n    properties:\n      item_id: {type: string}\n  acme.Chart:\n    derived_from: tosca.artifacts.asd.deploymentItem\n    properties:\n      vendor: {type: string}\n",
        )
        .unwrap();
        set.add_document("Definitions/t.yaml", &doc);
        let (props, src) = set.properties(Kind::Artifact, "acme.Chart").unwrap();
        assert_eq!(src, "Definitions/t.yaml");
        assert_eq!(
            props.keys().copied().collect::<Vec<_>>(),
            ["item_id", "vendor"]
        );
        assert!(set.derives_from(
            Kind::Artifact,
            "acme.Chart",
            "tosca.artifacts.asd.deploymentItem"
        ));
        assert!(!set.derives_from(
            Kind::Artifact,
            "acme.Chart",
            "tosca.artifacts.asd.DeploymentItem"
        ));
    }

    #[test]
    fn derivation_cycles_terminate() {
        let mut set = TypeSet::default();
        let doc = yaml::parse(
            "t.yaml",
            "node_types:\n  a: {derived_from: b}\n  b: {derived_from: a}\n",
        )
        .unwrap();
        set.add_document("t.yaml", &doc);
        assert!(!set.derives_from(Kind::Node, "a", "c"));
        assert!(set.properties(Kind::Node, "a").is_some());
    }
}
