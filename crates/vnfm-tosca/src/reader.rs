//! The VNFD reader: runs the phases in order and assembles the result.
//!
//! read ([`crate::imports`]) -> namespace, hierarchy, inheritance ([`crate::hierarchy`]) ->
//! validate templates ([`crate::templates`]) -> normalize ([`crate::normalize`]). Each phase
//! reports into the same sink and the next one carries on with what could be read, so one run
//! shows as many problems as possible; the descriptor is returned only when no error was found.
//!
//! The files of a VNFD play three roles: the entry definitions (the top-level VNFD with the VNF
//! node template, or a flavour itself when it has `substitution_mappings`), the flavour files
//! (every package file with a `topology_template` holding `substitution_mappings`, normally
//! imported by the top-level VNFD; one that sits beside the entry definitions unimported is
//! read too, as Tacker reads every file of `Definitions/`), and type files. A flavour's inputs are bound to the
//! properties of the substituted VNF node (the top-level VNF node template) and to the values
//! given in its substitution mapping, so `get_input` in a flavour sees `descriptor_id` and
//! `flavour_id`.
//!
//! ## Diagnostic codes
//!
//! Errors (the descriptor is not returned):
//!
//! | code | meaning |
//! |---|---|
//! | `tosca.entry-definitions-not-found` | the entry definitions file is not in the package |
//! | `tosca.file-unreadable`, `tosca.not-utf8` | a definitions file cannot be read as UTF-8 text |
//! | `yaml.syntax`, `yaml.duplicate-key`, `yaml.budget-exceeded`, `yaml.too-large`, `yaml.parser-failed` | the file is not acceptable YAML |
//! | `tosca.missing-entry-definitions-field` | a definitions file has no `tosca_definitions_version` |
//! | `tosca.unsupported-version` | `tosca_definitions_version` is not 1.0 to 1.3 |
//! | `tosca.unknown-keyword`, `tosca.missing-keyword`, `tosca.wrong-shape` | the TOSCA grammar is not followed |
//! | `tosca.import-not-found` | an imported file is not in the package (nor a bundled ETSI file) |
//! | `tosca.import-escapes-package`, `tosca.invalid-import` | an import path climbs out of the package or is malformed |
//! | `tosca.import-external` | an import names a URL other than the ETSI SOL001 forge files |
//! | `tosca.cyclic-import`, `tosca.import-too-deep`, `tosca.too-many-files` | the import graph has a cycle or is too deep/large |
//! | `tosca.unknown-repository` | an import or artifact names an undefined repository |
//! | `tosca.duplicate-type` | one type name has two different definitions |
//! | `tosca.unknown-type`, `tosca.wrong-kind-of-type` | a type reference names no type, or a type of another kind |
//! | `tosca.cyclic-derived-from` | `derived_from` forms a cycle |
//! | `tosca.unknown-constraint`, `tosca.invalid-constraint`, `tosca.invalid-pattern` | a constraint is malformed |
//! | `tosca.unknown-property`, `tosca.unknown-attribute`, `tosca.unknown-capability`, `tosca.unknown-requirement`, `tosca.unknown-interface`, `tosca.unknown-operation` | a template names something its type does not declare |
//! | `tosca.missing-required-property` | a required property without default is not given |
//! | `tosca.wrong-type` | a value does not have its declared type (string for integer, `3 parsecs` for a size...) |
//! | `tosca.constraint-violated` | a value violates a constraint |
//! | `tosca.invalid-function` | a function call has malformed arguments |
//! | `tosca.unknown-input` | `get_input` names an input the topology does not declare |
//! | `tosca.unknown-node-template` | a requirement, group member or policy target names no node template of the file |
//! | `tosca.requirement-target-mismatch` | a requirement's target lacks the required node type or capability |
//! | `tosca.requirement-occurrences` | a requirement is assigned more often than its `occurrences` allow |
//! | `tosca.invalid-target` | a group member or policy target has a type the group/policy type does not allow |
//! | `tosca.unknown-artifact` | an operation is implemented by an artifact the node template does not declare |
//! | `tosca.artifact-escapes-package`, `tosca.invalid-artifact-path` | an artifact path climbs out of the package or is malformed |
//! | `tosca.missing-vnf-node`, `tosca.multiple-vnf-nodes` | no (or more than one) VNF node template |
//! | `tosca.missing-vnf-property` | a VNF-level property (`descriptor_id`...) has no value |
//! | `tosca.missing-flavour-id`, `tosca.duplicate-flavour-id` | a flavour has no id, or two flavours share one |
//! | `tosca.unknown-scaling-aspect`, `tosca.unknown-instantiation-level` | a policy refers to an aspect or level nobody declares |
//!
//! Warnings (the descriptor is still returned): `tosca.artifact-file-missing` (an artifact's file
//! is not in the package: deployment will need it), `tosca.import-bundled` (an ETSI file the
//! package lacks was taken from the bundled copies), `tosca.ignored-topology` (an imported file's
//! topology without substitution mappings is not part of the VNFD), `tosca.flavour-not-imported`
//! (a flavour file beside the entry definitions that no file imports was read), and the `tosca.quirk.*`
//! codes of [`crate::quirks`].

use vnfm_descriptor::Descriptor;

use crate::hierarchy::Types;
use crate::imports::{self, ENTRY};
use crate::normalize::Normalizer;
use crate::problem::Sink;
use crate::templates::{Bindings, Builder, VNF_TYPE};
use crate::values::function_call;
use crate::{Loaded, PackageFiles};

pub(crate) fn load(files: &dyn PackageFiles) -> Loaded {
    let mut sink = Sink::default();
    let descriptor = run(files, &mut sink);
    let descriptor = if sink.has_errors() { None } else { descriptor };
    Loaded {
        descriptor: descriptor.map(|v| Descriptor::Vnfd(Box::new(v))),
        diagnostics: sink.diags,
    }
}

fn run(files: &dyn PackageFiles, sink: &mut Sink) -> Option<vnfm_descriptor::Vnfd> {
    let graph = imports::read(files, sink)?;
    let mut types = Types::collect(&graph, sink);
    types.build_hierarchy(sink);

    // Sort the package's topologies into the top level and the flavours.
    let mut top_topo = None;
    let mut flavour_topos = Vec::new();
    for (ix, f) in graph.files.iter().enumerate() {
        if f.package_path.is_none() {
            continue;
        }
        let Some((key, topo)) = f
            .unit
            .root
            .as_ref()
            .and_then(|r| r.get_entry("topology_template"))
        else {
            continue;
        };
        if topo.get("substitution_mappings").is_some() {
            flavour_topos.push((ix, key.pos, topo));
        } else if ix == ENTRY {
            top_topo = Some((ix, key.pos, topo));
        } else {
            sink.warning(
                &f.display,
                key.pos,
                "tosca.ignored-topology",
                "this imported file has a `topology_template` without `substitution_mappings`; its node templates are not part of the VNFD",
            )
            .help = Some("a deployment flavour file needs `substitution_mappings` naming the VNF node type and its `flavour_id`".into());
        }
    }
    graph.files.get(ENTRY)?.unit.root.as_ref()?;

    let top = top_topo.map(|(ix, pos, topo)| {
        Builder::new(&types, sink, files, ix).build(topo, pos, &Bindings::new(), None)
    });
    // Values the flavours' inputs are bound to: the top-level VNF node's properties.
    let mut top_values = Bindings::new();
    if let Some(t) = &top
        && let Some(vnf) = t
            .nodes
            .iter()
            .find(|n| n.ty.is_some_and(|id| types.derives_from_name(id, VNF_TYPE)))
    {
        for (k, v) in &vnf.properties {
            if function_call(v).is_none() {
                top_values.insert(k.clone(), v.clone());
            }
        }
    }
    let mut flavours = Vec::new();
    for (ix, pos, topo) in flavour_topos {
        let mut builder = Builder::new(&types, sink, files, ix);
        let substitution = builder.substitution(topo);
        let mut bindings = top_values.clone();
        if let Some(s) = &substitution {
            for (k, v) in &s.properties {
                bindings.insert(k.clone(), v.clone());
            }
        }
        flavours.push(builder.build(topo, pos, &bindings, substitution));
    }
    let mut n = Normalizer {
        types: &types,
        sink,
        files,
    };
    n.vnfd(ENTRY, top.as_ref(), &flavours)
}
