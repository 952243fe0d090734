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
//! imported by the top-level VNFD), and type files. A flavour's inputs are bound to the
//! properties of the substituted VNF node (the top-level VNF node template) and to the values
//! given in its substitution mapping, so `get_input` in a flavour sees `descriptor_id` and
//! `flavour_id`.

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
