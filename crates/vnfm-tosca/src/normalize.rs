//! Phase 6, normalize: from validated topologies to [`vnfm_descriptor::Vnfd`].
//!
//! The VNF-level properties come from the VNF node template of the top-level definitions
//! (merged with its type's defaults), the flavour level from each flavour file's VNF node
//! template and substitution mapping. Per flavour the node templates are sorted into VDUs
//! (types derived from `tosca.nodes.nfv.Vdu.Compute` or `Vdu.OsContainerDeployableUnit`),
//! containers, virtual storages, VDU connection points, external connection points (`VnfExtCp`
//! templates and connection points exposed through the substitution mapping's requirements),
//! and internal virtual links; the SOL001 policies give scaling aspects with their per-VDU
//! deltas, instantiation levels with per-VDU instance counts, initial deltas and placement
//! rules (group targets expanded to their VDU members); the `Vnflcm` operations that have an
//! implementation become LCM hooks; every artifact is listed with its package path and the
//! SHA-256 of the file when the package has it. Sizes are converted to bytes.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use vnfm_descriptor::vnfd::{
    Artifact, ComponentMapping, Flavour, IndicatorDef, InstantiationLevel, Json, LcmHook,
    OsContainer, PackageChange, PackageChangeSelector, PlacementKind, PlacementRule, ScalingAspect,
    StorageKind, SwImage, Vdu, VduCp, VduKind, VirtualCompute, VirtualLink, VirtualStorage,
    VnfExtCp, Vnfd,
};

use crate::PackageFiles;
use crate::hierarchy::Types;
use crate::problem::Sink;
use crate::templates::{NodeTemplate, Policy, ResolvedArtifact, Topology, VNF_TYPE, VNFLCM_TYPE};
use crate::values::size_bytes;
use crate::yaml::{Node, Pos, Value};

const VDU_COMPUTE: &str = "tosca.nodes.nfv.Vdu.Compute";
const VDU_OSC_DU: &str = "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit";
const OS_CONTAINER: &str = "tosca.nodes.nfv.Vdu.OsContainer";
const BLOCK_STORAGE: &str = "tosca.nodes.nfv.Vdu.VirtualBlockStorage";
const OBJECT_STORAGE: &str = "tosca.nodes.nfv.Vdu.VirtualObjectStorage";
const FILE_STORAGE: &str = "tosca.nodes.nfv.Vdu.VirtualFileStorage";
const VDU_CP: &str = "tosca.nodes.nfv.VduCp";
const VNF_EXT_CP: &str = "tosca.nodes.nfv.VnfExtCp";
const VIRTUAL_LINK: &str = "tosca.nodes.nfv.VnfVirtualLink";
const SW_IMAGE_ARTIFACT: &str = "tosca.artifacts.nfv.SwImage";

const SCALING_ASPECTS: &str = "tosca.policies.nfv.ScalingAspects";
const VDU_SCALING_DELTAS: &str = "tosca.policies.nfv.VduScalingAspectDeltas";
const INSTANTIATION_LEVELS: &str = "tosca.policies.nfv.InstantiationLevels";
const VDU_INSTANTIATION_LEVELS: &str = "tosca.policies.nfv.VduInstantiationLevels";
const VDU_INITIAL_DELTA: &str = "tosca.policies.nfv.VduInitialDelta";
const AFFINITY: &str = "tosca.policies.nfv.AffinityRule";
const ANTI_AFFINITY: &str = "tosca.policies.nfv.AntiAffinityRule";
const PACKAGE_CHANGE: &str = "tosca.policies.nfv.VnfPackageChange";
const VNF_INDICATOR: &str = "tosca.policies.nfv.VnfIndicator";

/// VNF properties that have their own field in [`Vnfd`] or [`Flavour`].
const MODELLED_VNF_PROPERTIES: &[&str] = &[
    "descriptor_id",
    "descriptor_version",
    "provider",
    "product_name",
    "software_version",
    "product_info_name",
    "product_info_description",
    "vnfm_info",
    "flavour_id",
    "flavour_description",
];

/// Inputs of normalization.
pub(crate) struct Normalizer<'a, 'g> {
    pub types: &'a Types<'g>,
    pub sink: &'a mut Sink,
    pub files: &'a dyn PackageFiles,
}

fn text(n: Option<&Node>) -> Option<String> {
    n.filter(|n| !matches!(n.value, Value::Map(_) | Value::Seq(_)))
        .and_then(Node::scalar_text)
}

fn count(n: Option<&Node>) -> Option<u32> {
    match n?.value {
        Value::Int(i) => u32::try_from(i).ok(),
        _ => None,
    }
}

fn strings(n: Option<&Node>) -> Vec<String> {
    n.and_then(Node::as_seq)
        .map(|items| items.iter().filter_map(|i| text(Some(i))).collect())
        .unwrap_or_default()
}

fn json_map(props: &IndexMap<String, Node>) -> IndexMap<String, Json> {
    props
        .iter()
        .map(|(k, v)| (k.clone(), v.to_json()))
        .collect()
}

fn path<'n>(n: &'n Node, keys: &[&str]) -> Option<&'n Node> {
    keys.iter().try_fold(n, |cur, k| cur.get(k))
}

impl<'g> Normalizer<'_, 'g> {
    fn is(&self, t: &NodeTemplate, base: &str) -> bool {
        t.ty.is_some_and(|id| self.types.derives_from_name(id, base))
    }

    fn policy_is(&self, p: &Policy, base: &str) -> bool {
        p.ty.is_some_and(|id| self.types.derives_from_name(id, base))
    }

    /// The VNF node template of a topology (type derived from tosca.nodes.nfv.VNF); reports
    /// more than one.
    pub fn vnf_node<'t>(&mut self, topo: &'t Topology) -> Option<&'t NodeTemplate> {
        let vnfs: Vec<&NodeTemplate> = topo.nodes.iter().filter(|n| self.is(n, VNF_TYPE)).collect();
        if let [_, second, ..] = vnfs.as_slice() {
            self.sink.error(
                self.types.file_name(topo.file),
                second.pos,
                "tosca.multiple-vnf-nodes",
                format!(
                    "`{}` and `{}` are both VNF node templates; a VNFD file has at most one",
                    vnfs[0].name, second.name
                ),
            );
        }
        vnfs.first().copied()
    }

    /// Builds the VNFD. `top` is the entry's topology when it is not itself a flavour.
    pub fn vnfd(
        &mut self,
        entry: usize,
        top: Option<&Topology>,
        flavours: &[Topology],
    ) -> Option<Vnfd> {
        let entry_file = self.types.file_name(entry).to_string();
        let top_vnf = top.and_then(|t| self.vnf_node(t));
        let first_flavour_vnf = match flavours.first() {
            Some(f) => self.vnf_node(f),
            None => None,
        };
        let Some(vnf) = top_vnf.or(first_flavour_vnf) else {
            self.sink
                .error(
                    &entry_file,
                    Pos { line: 1, column: 1 },
                    "tosca.missing-vnf-node",
                    format!("no node template of a type derived from {VNF_TYPE} is found"),
                )
                .help = Some("the top-level VNFD declares the VNF node template (e.g. `VNF: { type: company.provider.VNF, properties: {...} }`)".into());
            return None;
        };
        if flavours.is_empty() && top.is_none() {
            return None;
        }
        let unit = &self.types.graph.files[entry].unit;
        let tosca_definitions_version = unit
            .definitions_version
            .as_ref()
            .map(|n| n.name.clone())
            .unwrap_or_default();
        let vnf_file = self
            .types
            .file_name(top.map_or_else(|| flavours[0].file, |t| t.file))
            .to_string();
        let field = |name: &str, required: bool, sink: &mut Sink| -> Option<String> {
            let v = vnf.properties.get(name);
            match text(v) {
                Some(s) => Some(s),
                None => {
                    if required {
                        let shown = v
                            .map(|v| v.to_json().to_string())
                            .unwrap_or_else(|| "missing".into());
                        sink.error(
                            &vnf_file,
                            v.map_or(vnf.pos, |v| v.pos),
                            "tosca.missing-vnf-property",
                            format!("VNF property `{name}` has no value ({shown})"),
                        );
                    }
                    None
                }
            }
        };
        let sink = &mut *self.sink;
        let descriptor_id = field("descriptor_id", true, sink).unwrap_or_default();
        let descriptor_version = field("descriptor_version", true, sink).unwrap_or_default();
        let provider = field("provider", true, sink).unwrap_or_default();
        let product_name = field("product_name", true, sink).unwrap_or_default();
        let software_version = field("software_version", true, sink).unwrap_or_default();
        let product_info_name = field("product_info_name", false, sink);
        let product_info_description = field("product_info_description", false, sink);
        let vnfm_info = strings(vnf.properties.get("vnfm_info"));
        let properties = vnf
            .properties
            .iter()
            .filter(|(k, _)| !MODELLED_VNF_PROPERTIES.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.to_json()))
            .collect();

        let mut out_flavours: Vec<Flavour> = Vec::new();
        if flavours.is_empty() {
            // A single-file VNFD: the entry topology is the one flavour.
            if let Some(t) = top
                && let Some(f) = self.flavour(t, None)
            {
                out_flavours.push(f);
            }
        }
        for f in flavours {
            if let Some(fl) = self.flavour(f, top_vnf) {
                if let Some(prev) = out_flavours.iter().find(|p| p.id == fl.id) {
                    self.sink.error(
                        self.types.file_name(f.file),
                        f.substitution.as_ref().map_or(Pos::default(), |s| s.pos),
                        "tosca.duplicate-flavour-id",
                        format!("flavour `{}` is also defined in {}", fl.id, prev.file),
                    );
                    continue;
                }
                out_flavours.push(fl);
            }
        }
        let package_changes = top
            .into_iter()
            .chain(flavours)
            .flat_map(|t| self.package_changes(t))
            .collect();
        let mut indicators: Vec<IndicatorDef> = Vec::new();
        for def in top
            .into_iter()
            .chain(flavours)
            .flat_map(|t| self.indicators(t))
        {
            // A flavour file may repeat an indicator of the top-level file.
            if !indicators.iter().any(|i| i.id == def.id) {
                indicators.push(def);
            }
        }
        let sol001_version = self
            .types
            .graph
            .files
            .iter()
            .find_map(|f| match f.unit.template_name.as_deref() {
                Some("etsi_nfv_sol001_vnfd_types") => f.unit.template_version.clone(),
                _ => None,
            })
            .or_else(|| {
                self.types
                    .graph
                    .files
                    .iter()
                    .find_map(|f| f.bundled_version.map(str::to_string))
            });
        Some(Vnfd {
            descriptor_id,
            descriptor_version,
            provider,
            product_name,
            software_version,
            product_info_name,
            product_info_description,
            vnfm_info,
            tosca_definitions_version,
            sol001_version,
            vnf_node_type: vnf.type_name.clone(),
            entry_definitions: self.files.entry_definitions().to_string(),
            flavours: out_flavours,
            properties,
            package_changes,
            indicators,
        })
    }

    fn flavour(&mut self, topo: &Topology, top_vnf: Option<&NodeTemplate>) -> Option<Flavour> {
        let file = self.types.file_name(topo.file).to_string();
        let local_vnf = self.vnf_node(topo);
        let sub = topo.substitution.as_ref();
        let lookup = |name: &str| -> Option<&Node> {
            sub.and_then(|s| s.properties.get(name))
                .or_else(|| local_vnf.and_then(|v| v.properties.get(name)))
                .or_else(|| top_vnf.and_then(|v| v.properties.get(name)))
                .filter(|v| crate::values::function_call(v).is_none())
        };
        let Some(id) = text(lookup("flavour_id")) else {
            self.sink
                .error(
                    &file,
                    sub.map_or(Pos { line: 1, column: 1 }, |s| s.pos),
                    "tosca.missing-flavour-id",
                    "the deployment flavour has no `flavour_id`",
                )
                .help = Some("set `substitution_mappings.properties.flavour_id`".into());
            return None;
        };
        let description = text(lookup("flavour_description")).unwrap_or_default();

        let mut f = Flavour {
            description,
            file: file.clone(),
            ..Flavour::empty(id)
        };
        for t in &topo.nodes {
            if self.is(t, VDU_COMPUTE) {
                f.vdus.push(self.vdu(t, VduKind::Compute));
            } else if self.is(t, VDU_OSC_DU) {
                f.vdus.push(self.vdu(t, VduKind::OsContainerDeployableUnit));
            } else if self.is(t, OS_CONTAINER) {
                f.containers.push(OsContainer {
                    id: t.name.clone(),
                    name: text(t.properties.get("name")).unwrap_or_else(|| t.name.clone()),
                    description: text(t.properties.get("description")).unwrap_or_default(),
                    sw_image: self.sw_image(t),
                    properties: json_map(&t.properties),
                });
            } else if let Some(kind) = self.storage_kind(t) {
                let size = match kind {
                    StorageKind::Block => {
                        path_size(t, &["virtual_block_storage_data", "size_of_storage"])
                    }
                    StorageKind::Object => {
                        path_size(t, &["virtual_object_storage_data", "max_size_of_storage"])
                    }
                    StorageKind::File => {
                        path_size(t, &["virtual_file_storage_data", "size_of_storage"])
                    }
                };
                f.virtual_storages.push(VirtualStorage {
                    id: t.name.clone(),
                    kind,
                    size_bytes: size,
                    sw_image: self.sw_image(t),
                    properties: json_map(&t.properties),
                });
            } else if self.is(t, VDU_CP) {
                f.vdu_cps.push(VduCp {
                    id: t.name.clone(),
                    vdu: req_target(t, "virtual_binding"),
                    virtual_link: req_target(t, "virtual_link"),
                    layer_protocols: strings(t.properties.get("layer_protocols")),
                    order: count(t.properties.get("order")),
                    properties: json_map(&t.properties),
                });
            } else if self.is(t, VIRTUAL_LINK) {
                let cidrs = t
                    .properties
                    .get("vl_profile")
                    .and_then(|p| p.get("virtual_link_protocol_data"))
                    .and_then(Node::as_seq)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|i| text(path(i, &["l3_protocol_data", "cidr"])))
                            .collect()
                    })
                    .unwrap_or_default();
                f.virtual_links.push(VirtualLink {
                    id: t.name.clone(),
                    description: text(t.properties.get("description")).unwrap_or_default(),
                    layer_protocols: strings(
                        t.properties
                            .get("connectivity_type")
                            .and_then(|c| c.get("layer_protocols")),
                    ),
                    cidrs,
                    properties: json_map(&t.properties),
                });
            }
        }
        self.ext_cps(topo, &mut f);
        self.policies(topo, &mut f);
        self.hooks(local_vnf, top_vnf, &mut f);
        let mut seen = Vec::new();
        if let Some(top) = top_vnf {
            for a in &top.artifacts {
                f.artifacts.push(self.artifact(a, &top.name));
                seen.push(a.def.name.clone());
            }
        }
        for t in &topo.nodes {
            for a in &t.artifacts {
                let is_top_dup = top_vnf.is_some()
                    && local_vnf.is_some_and(|v| v.name == t.name)
                    && seen.contains(&a.def.name);
                if !is_top_dup {
                    f.artifacts.push(self.artifact(a, &t.name));
                }
            }
        }
        Some(f)
    }

    fn storage_kind(&self, t: &NodeTemplate) -> Option<StorageKind> {
        if self.is(t, BLOCK_STORAGE) {
            Some(StorageKind::Block)
        } else if self.is(t, OBJECT_STORAGE) {
            Some(StorageKind::Object)
        } else if self.is(t, FILE_STORAGE) {
            Some(StorageKind::File)
        } else {
            None
        }
    }

    fn vdu(&self, t: &NodeTemplate, kind: VduKind) -> Vdu {
        let profile = t.properties.get("vdu_profile");
        let virtual_compute = (kind == VduKind::Compute)
            .then(|| t.capabilities.get("virtual_compute"))
            .flatten()
            .map(|c| VirtualCompute {
                num_virtual_cpu: count(c.get("virtual_cpu").and_then(|v| v.get("num_virtual_cpu"))),
                virtual_mem_size_bytes: c
                    .get("virtual_memory")
                    .and_then(|m| m.get("virtual_mem_size"))
                    .and_then(size_bytes),
                local_storage_bytes: c
                    .get("virtual_local_storage")
                    .and_then(Node::as_seq)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|i| i.get("size_of_storage").and_then(size_bytes))
                            .collect()
                    })
                    .unwrap_or_default(),
                additional_capability_names: c
                    .get("requested_additional_capabilities")
                    .and_then(Node::as_map)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(_, v)| {
                                text(v.get("requested_additional_capability_name"))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        Vdu {
            id: t.name.clone(),
            name: text(t.properties.get("name")).unwrap_or_else(|| t.name.clone()),
            description: text(t.properties.get("description")).unwrap_or_default(),
            kind,
            node_type: t.type_name.clone(),
            min_instances: count(profile.and_then(|p| p.get("min_number_of_instances")))
                .unwrap_or(0),
            max_instances: count(profile.and_then(|p| p.get("max_number_of_instances")))
                .unwrap_or(0),
            initial_delta: None,
            virtual_compute,
            sw_image: self.sw_image(t),
            virtual_storages: t
                .requirements
                .iter()
                .filter(|r| r.name == "virtual_storage")
                .filter_map(|r| r.target.as_ref().map(|n| n.name.clone()))
                .collect(),
            containers: t
                .requirements
                .iter()
                .filter(|r| r.name == "container")
                .filter_map(|r| r.target.as_ref().map(|n| n.name.clone()))
                .collect(),
            properties: json_map(&t.properties),
        }
    }

    fn sw_image(&self, t: &NodeTemplate) -> Option<SwImage> {
        let data = t.properties.get("sw_image_data");
        let artifact = t.artifacts.iter().find(|a| {
            self.types
                .lookup(
                    &a.type_name,
                    crate::types::Kind::Artifact,
                    crate::imports::ENTRY,
                )
                .is_some_and(|id| self.types.derives_from_name(id, SW_IMAGE_ARTIFACT))
        });
        if data.is_none() && artifact.is_none() {
            return None;
        }
        // SOL001 v3+ moves the image data onto the artifact's properties.
        let from_artifact = artifact
            .filter(|a| !a.def.properties.is_empty())
            .map(|a| Node::synthetic(Value::Map(a.def.properties.clone())));
        let data = data.or(from_artifact.as_ref());
        let get = |k: &str| data.and_then(|d| d.get(k));
        let checksum = get("checksum");
        let (checksum_algorithm, checksum_hash) = match checksum.map(|c| &c.value) {
            Some(Value::Map(_)) => (
                text(checksum.and_then(|c| c.get("algorithm"))),
                text(checksum.and_then(|c| c.get("hash"))),
            ),
            Some(_) => (None, text(checksum)),
            None => (None, None),
        };
        Some(SwImage {
            name: text(get("name")).unwrap_or_default(),
            version: text(get("version")).unwrap_or_default(),
            checksum_algorithm,
            checksum_hash,
            container_format: text(get("container_format")),
            disk_format: text(get("disk_format")),
            min_disk_bytes: get("min_disk").and_then(size_bytes),
            min_ram_bytes: get("min_ram").and_then(size_bytes),
            size_bytes: get("size").and_then(size_bytes),
            file: artifact.map(|a| a.file.clone()),
        })
    }

    fn ext_cps(&mut self, topo: &Topology, f: &mut Flavour) {
        let mut mapped = Vec::new();
        if let Some(sub) = &topo.substitution {
            for r in &sub.requirements {
                let Some((node, _)) = &r.target else {
                    continue;
                };
                let Some(t) = topo.node(&node.name) else {
                    continue;
                };
                mapped.push(t.name.clone());
                let is_ext = self.is(t, VNF_EXT_CP);
                f.ext_cps.push(VnfExtCp {
                    id: t.name.clone(),
                    requirement: Some(r.name.clone()),
                    internal_virtual_link: if is_ext {
                        req_target(t, "internal_virtual_link")
                    } else {
                        None
                    },
                    vdu: if is_ext {
                        None
                    } else {
                        req_target(t, "virtual_binding")
                    },
                    layer_protocols: strings(t.properties.get("layer_protocols")),
                });
            }
        }
        for t in &topo.nodes {
            if self.is(t, VNF_EXT_CP) && !mapped.contains(&t.name) {
                f.ext_cps.push(VnfExtCp {
                    id: t.name.clone(),
                    requirement: None,
                    internal_virtual_link: req_target(t, "internal_virtual_link"),
                    vdu: None,
                    layer_protocols: strings(t.properties.get("layer_protocols")),
                });
            }
        }
    }

    /// Node templates named by a policy's targets, with groups expanded to their members.
    fn expand_targets(&self, topo: &Topology, p: &Policy) -> Vec<String> {
        let mut out = Vec::new();
        for t in &p.targets {
            match topo.groups.iter().find(|g| g.name == t.name) {
                Some(g) => out.extend(g.members.iter().map(|m| m.name.clone())),
                None => out.push(t.name.clone()),
            }
        }
        out
    }

    /// The `VnfIndicator` policies of a topology.
    fn indicators(&self, topo: &Topology) -> Vec<IndicatorDef> {
        topo.policies
            .iter()
            .filter(|p| self.policy_is(p, VNF_INDICATOR))
            .map(|p| IndicatorDef {
                id: p.name.clone(),
                name: text(p.metadata.get("name")),
                source: text(p.properties.get("source")).unwrap_or_default(),
                promql: text(p.metadata.get("vnfm_promql")),
            })
            .collect()
    }

    /// The `VnfPackageChange` policies of a topology.
    fn package_changes(&self, topo: &Topology) -> Vec<PackageChange> {
        let selector = |n: &Node| PackageChangeSelector {
            source_descriptor_id: text(n.get("source_descriptor_id")).unwrap_or_default(),
            destination_descriptor_id: text(n.get("destination_descriptor_id")).unwrap_or_default(),
            source_flavour_id: text(n.get("source_flavour_id")).unwrap_or_default(),
        };
        topo.policies
            .iter()
            .filter(|p| self.policy_is(p, PACKAGE_CHANGE))
            .map(|p| {
                let get = |k: &str| p.properties.get(k);
                // SOL001 v3 declares one selector, v4 a list of them.
                let selectors = match get("selector") {
                    Some(n) => match n.as_seq() {
                        Some(items) => items.iter().map(selector).collect(),
                        None => vec![selector(n)],
                    },
                    None => Vec::new(),
                };
                let component_mappings = get("component_mappings")
                    .and_then(Node::as_seq)
                    .unwrap_or_default()
                    .iter()
                    .map(|m| ComponentMapping {
                        component_type: text(m.get("component_type")).unwrap_or_default(),
                        source_id: text(m.get("source_id")).unwrap_or_default(),
                        destination_id: text(m.get("destination_id")).unwrap_or_default(),
                    })
                    .collect();
                PackageChange {
                    id: p.name.clone(),
                    selectors,
                    destination_flavour_id: text(get("destination_flavour_id")).unwrap_or_default(),
                    modification_qualifier: text(get("modification_qualifier")).unwrap_or_default(),
                    description: text(get("additional_modification_description")),
                    component_mappings,
                }
            })
            .collect()
    }

    fn policies(&mut self, topo: &Topology, f: &mut Flavour) {
        let file = self.types.file_name(topo.file).to_string();
        for p in &topo.policies {
            if self.policy_is(p, SCALING_ASPECTS) {
                let aspects = p
                    .properties
                    .get("aspects")
                    .and_then(Node::as_map)
                    .unwrap_or_default();
                for (k, a) in aspects {
                    f.scaling_aspects.push(ScalingAspect {
                        id: k.name.as_str().to_owned(),
                        name: text(a.get("name")).unwrap_or_default(),
                        description: text(a.get("description")).unwrap_or_default(),
                        max_scale_level: count(a.get("max_scale_level")).unwrap_or(0),
                        step_deltas: strings(a.get("step_deltas")),
                        vdu_deltas: BTreeMap::new(),
                    });
                }
            } else if self.policy_is(p, INSTANTIATION_LEVELS) {
                let levels = p
                    .properties
                    .get("levels")
                    .and_then(Node::as_map)
                    .unwrap_or_default();
                for (k, l) in levels {
                    let scale_levels = l
                        .get("scale_info")
                        .and_then(Node::as_map)
                        .unwrap_or_default()
                        .iter()
                        .map(|(a, s)| {
                            (
                                a.name.as_str().to_owned(),
                                count(s.get("scale_level")).unwrap_or(0),
                            )
                        })
                        .collect();
                    f.instantiation_levels.push(InstantiationLevel {
                        id: k.name.as_str().to_owned(),
                        description: text(l.get("description")).unwrap_or_default(),
                        scale_levels,
                        vdu_instances: BTreeMap::new(),
                    });
                }
                f.default_instantiation_level = text(p.properties.get("default_level"));
            }
        }
        // Check references to aspects and levels now that all are known.
        for l in &f.instantiation_levels {
            for aspect in l.scale_levels.keys() {
                if f.scaling_aspect(aspect).is_none() {
                    let pos = policy_value_pos(topo, INSTANTIATION_LEVELS, self);
                    self.sink.error(
                        &file,
                        pos,
                        "tosca.unknown-scaling-aspect",
                        format!("instantiation level `{}` scales aspect `{aspect}`, which no ScalingAspects policy declares", l.id),
                    );
                }
            }
        }
        if let Some(d) = &f.default_instantiation_level
            && f.instantiation_level(d).is_none()
        {
            let pos = policy_value_pos(topo, INSTANTIATION_LEVELS, self);
            self.sink.error(
                &file,
                pos,
                "tosca.unknown-instantiation-level",
                format!("`default_level` is `{d}`, which is not one of the declared levels"),
            );
        }
        for p in &topo.policies {
            let targets = self.expand_targets(topo, p);
            if self.policy_is(p, VDU_SCALING_DELTAS) {
                let aspect = text(p.properties.get("aspect")).unwrap_or_default();
                let deltas = p
                    .properties
                    .get("deltas")
                    .and_then(Node::as_map)
                    .unwrap_or_default();
                let Some(a) = f.scaling_aspects.iter_mut().find(|a| a.id == aspect) else {
                    self.sink.error(
                        &file,
                        p.properties.get("aspect").map_or(p.pos, |n| n.pos),
                        "tosca.unknown-scaling-aspect",
                        format!("policy `{}` refers to aspect `{aspect}`, which no ScalingAspects policy declares", p.name),
                    );
                    continue;
                };
                for vdu in &targets {
                    let entry = a.vdu_deltas.entry(vdu.clone()).or_default();
                    for (dk, dv) in deltas {
                        entry.insert(
                            dk.name.as_str().to_owned(),
                            count(dv.get("number_of_instances")).unwrap_or(0),
                        );
                    }
                }
            } else if self.policy_is(p, VDU_INSTANTIATION_LEVELS) {
                let levels = p
                    .properties
                    .get("levels")
                    .and_then(Node::as_map)
                    .unwrap_or_default();
                for (lk, lv) in levels {
                    let Some(level) = f.instantiation_levels.iter_mut().find(|l| lk.name == l.id)
                    else {
                        self.sink.error(
                            &file,
                            lk.pos,
                            "tosca.unknown-instantiation-level",
                            format!("policy `{}` sets level `{}`, which no InstantiationLevels policy declares", p.name, lk.name),
                        );
                        continue;
                    };
                    for vdu in &targets {
                        level.vdu_instances.insert(
                            vdu.clone(),
                            count(lv.get("number_of_instances")).unwrap_or(0),
                        );
                    }
                }
            } else if self.policy_is(p, VDU_INITIAL_DELTA) {
                let n = count(
                    p.properties
                        .get("initial_delta")
                        .and_then(|d| d.get("number_of_instances")),
                );
                for vdu in &targets {
                    if let Some(v) = f.vdus.iter_mut().find(|v| v.id == *vdu) {
                        v.initial_delta = n;
                    }
                }
            } else if self.policy_is(p, AFFINITY) || self.policy_is(p, ANTI_AFFINITY) {
                let kind = if self.policy_is(p, AFFINITY) {
                    PlacementKind::Affinity
                } else {
                    PlacementKind::AntiAffinity
                };
                f.placement_rules.push(PlacementRule {
                    id: p.name.clone(),
                    kind,
                    scope: text(p.properties.get("scope")).unwrap_or_default(),
                    vdus: targets
                        .into_iter()
                        .filter(|t| f.vdus.iter().any(|v| v.id == *t))
                        .collect(),
                });
            }
        }
        self.check_scale_bounds(topo, &file, f);
    }

    /// Warns about an aspect whose top level gives a VDU more instances than its `vdu_profile`
    /// allows: the package validates, but scaling to those levels is refused at run time.
    fn check_scale_bounds(&mut self, topo: &Topology, file: &str, f: &Flavour) {
        let pos = policy_value_pos(topo, SCALING_ASPECTS, self);
        for a in &f.scaling_aspects {
            for vdu in &f.vdus {
                if !a.vdu_deltas.contains_key(&vdu.id) {
                    continue;
                }
                let base = u64::from(vdu.initial_delta.unwrap_or(vdu.min_instances));
                let top = base.saturating_add(a.instances_added(&vdu.id, a.max_scale_level));
                if top <= u64::from(vdu.max_instances) {
                    continue;
                }
                self.sink
                    .warning(
                        file,
                        pos,
                        "tosca.scale-beyond-vdu-profile",
                        format!(
                            "aspect `{}` at its max_scale_level {} gives VDU `{}` {top} instances, above the {} its vdu_profile allows; scaling to the top levels will be refused",
                            a.id, a.max_scale_level, vdu.id, vdu.max_instances
                        ),
                    )
                    .help = Some(
                    "lower `max_scale_level`, or raise `max_number_of_instances` in the VDU's vdu_profile"
                        .into(),
                );
            }
        }
    }

    fn hooks(&self, local: Option<&NodeTemplate>, top: Option<&NodeTemplate>, f: &mut Flavour) {
        let mut ops = Vec::new();
        for vnf in local.into_iter().chain(top) {
            for o in &vnf.operations {
                let is_lcm = o
                    .interface_type
                    .is_some_and(|id| self.types.derives_from_name(id, VNFLCM_TYPE));
                if !is_lcm || ops.iter().any(|(name, _): &(String, _)| *name == o.op.name) {
                    continue;
                }
                ops.push((o.op.name.clone(), o));
            }
        }
        for (name, o) in ops {
            let Some(imp) = &o.op.implementation else {
                continue;
            };
            let Some(primary) = &imp.primary else {
                continue;
            };
            f.lcm_hooks.push(LcmHook {
                operation: name,
                artifact: primary.name.clone(),
                dependencies: imp.dependencies.iter().map(|d| d.name.clone()).collect(),
                inputs: o
                    .op
                    .inputs
                    .iter()
                    .map(|(k, v)| (k.name.as_str().to_owned(), v.to_json()))
                    .collect(),
                timeout_seconds: imp.timeout.and_then(|(t, _)| u64::try_from(t).ok()),
            });
        }
    }

    fn artifact(&self, a: &ResolvedArtifact, owner: &str) -> Artifact {
        let sha256 = (a.present && !a.external)
            .then(|| self.files.sha256_hex(&a.file))
            .flatten();
        let declared_checksum = a
            .def
            .checksum
            .as_ref()
            .map(|h| match &a.def.checksum_algorithm {
                Some(alg) => format!("{alg}:{h}"),
                None => h.clone(),
            });
        Artifact {
            name: a.def.name.clone(),
            owner: owner.to_string(),
            artifact_type: a.type_name.clone(),
            file: a.file.clone(),
            external: a.external,
            sha256,
            declared_checksum,
            deploy_path: a.def.deploy_path.clone(),
            description: a.def.description.clone(),
            properties: a
                .def
                .properties
                .iter()
                .map(|(k, v)| (k.name.as_str().to_owned(), v.to_json()))
                .collect(),
        }
    }
}

fn policy_value_pos(topo: &Topology, base: &str, n: &Normalizer<'_, '_>) -> Pos {
    topo.policies
        .iter()
        .find(|p| n.policy_is(p, base))
        .map_or(Pos::default(), |p| p.pos)
}

fn path_size(t: &NodeTemplate, keys: &[&str]) -> Option<u64> {
    let (first, rest) = keys.split_first()?;
    path(t.properties.get(*first)?, rest).and_then(size_bytes)
}

fn req_target(t: &NodeTemplate, name: &str) -> Option<String> {
    t.requirements
        .iter()
        .find(|r| r.name == name)
        .and_then(|r| r.target.as_ref())
        .map(|n| n.name.clone())
}
