//! A mixed VNF as one part sees it (see the [module documentation](super)): the resources
//! recorded on the instance that are the part's, the instance restricted to its VIM
//! connection, resources and driver state, and the step restricted to its VDUs, VNFCs and
//! CPDs.

use std::collections::BTreeSet;

use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_driver_api::{HealScope, InfraRequest, InfraStep, InstanceResources, ResourceTarget};
use vnfm_types::{InstantiatedVnfInfo, ResourceHandle, VnfInstance};

use super::SplitByVim;
use super::state::View;
use crate::runner::DRIVER_STATE_KEY;

impl SplitByVim {
    /// Part `i`'s resources as recorded on `instance`: those on its VIM connection, and
    /// those without one whose VDU or descriptor is in its restricted VNFD `vnfd`.
    pub(super) fn recorded(
        &self,
        instance: &VnfInstance,
        i: usize,
        vnfd: &Vnfd,
    ) -> InstanceResources {
        let f = &vnfd.flavours;
        let Some(info) = &instance.instantiated_vnf_info else {
            return InstanceResources::default();
        };
        let mine = |h: &ResourceHandle, fallback: bool| match self.part_of_handle(h) {
            Some(p) => p == i,
            None => fallback,
        };
        let cpds: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| {
                f.vdu_cps
                    .iter()
                    .map(|c| c.id.as_str())
                    .chain(f.ext_cps.iter().map(|c| c.id.as_str()))
            })
            .collect();
        let links: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.virtual_links.iter().map(|l| l.id.as_str()))
            .collect();
        let storages: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.virtual_storages.iter().map(|s| s.id.as_str()))
            .collect();
        let vdus: BTreeSet<&str> = f
            .iter()
            .flat_map(|f| f.vdus.iter().map(|v| v.id.as_str()))
            .collect();
        let vnfcs: Vec<_> = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .filter(|r| mine(&r.compute_resource, vdus.contains(r.vdu_id.as_str())))
            .cloned()
            .collect();
        let vnfc_ids: BTreeSet<&str> = vnfcs.iter().map(|r| r.id.as_str()).collect();
        let other_vnfc_ids: BTreeSet<&str> = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .map(|r| r.id.as_str())
            .filter(|id| !vnfc_ids.contains(id))
            .collect();
        let vnfc_info = info
            .vnfc_info
            .iter()
            .flatten()
            .filter(|v| match v.vnfc_resource_info_id.as_deref() {
                Some(r) if vnfc_ids.contains(r) => true,
                Some(r) if other_vnfc_ids.contains(r) => false,
                _ => vdus.contains(v.vdu_id.as_str()),
            })
            .cloned()
            .collect();
        let ext_cp_info: Vec<_> = info
            .ext_cp_info
            .iter()
            .filter(|c| cpds.contains(c.cpd_id.as_str()))
            .cloned()
            .collect();
        let ext_cp_ids: BTreeSet<&str> = ext_cp_info.iter().map(|c| c.id.as_str()).collect();
        let ext_virtual_link_info = info
            .ext_virtual_link_info
            .iter()
            .flatten()
            .filter_map(|l| {
                let mut l = l.clone();
                let had_cps = !l.current_vnf_ext_cp_data.is_empty();
                l.current_vnf_ext_cp_data
                    .retain(|c| cpds.contains(c.cpd_id.as_str()));
                if let Some(ports) = l.ext_link_ports.as_mut() {
                    ports.retain(|p| {
                        let by_cp = p
                            .cp_instance_id
                            .as_deref()
                            .is_some_and(|c| ext_cp_ids.contains(c));
                        mine(&p.resource_handle, by_cp)
                    });
                }
                if l.ext_link_ports.as_ref().is_some_and(Vec::is_empty) {
                    l.ext_link_ports = None;
                }
                let keep = !l.current_vnf_ext_cp_data.is_empty()
                    || l.ext_link_ports.is_some()
                    || (!had_cps && i == 0);
                keep.then_some(l)
            })
            .collect();
        let ext_managed_virtual_link_info = info
            .ext_managed_virtual_link_info
            .iter()
            .flatten()
            .filter(|m| links.contains(m.vnf_virtual_link_desc_id.as_str()))
            .map(|m| {
                let mut m = m.clone();
                if let Some(ports) = m.vnf_link_ports.as_mut() {
                    ports.retain(|p| mine(&p.resource_handle, true));
                }
                m
            })
            .collect();
        InstanceResources {
            vnfc_resource_info: vnfcs,
            vnfc_info,
            vnf_virtual_link_resource_info: info
                .vnf_virtual_link_resource_info
                .iter()
                .flatten()
                .filter(|l| {
                    mine(
                        &l.network_resource,
                        links.contains(l.vnf_virtual_link_desc_id.as_str()),
                    )
                })
                .cloned()
                .collect(),
            virtual_storage_resource_info: info
                .virtual_storage_resource_info
                .iter()
                .flatten()
                .filter(|s| {
                    mine(
                        &s.storage_resource,
                        storages.contains(s.virtual_storage_desc_id.as_str()),
                    )
                })
                .cloned()
                .collect(),
            ext_cp_info,
            ext_virtual_link_info,
            ext_managed_virtual_link_info,
        }
    }

    /// `instance` as part `i` sees it: its VIM connection, resources and driver state. An
    /// instance that records nothing yet (the rollback of an instantiation whose step failed
    /// after this part had succeeded) shows what the part created.
    pub(super) fn instance_for(
        &self,
        instance: &VnfInstance,
        i: usize,
        view: &View,
        flavour_id: &str,
    ) -> VnfInstance {
        let key = &self.parts[i].key;
        let mut out = instance.clone();
        let created = view.resources != InstanceResources::default() || !view.state.is_null();
        if out.instantiated_vnf_info.is_none() && created {
            out.instantiated_vnf_info = Some(InstantiatedVnfInfo::started(flavour_id));
        }
        out.vim_connection_info = instance.vim_connection_info.as_ref().map(|m| {
            m.iter()
                .filter(|(k, _)| *k == key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        });
        if let Some(info) = out.instantiated_vnf_info.as_mut() {
            let r = view.resources.clone();
            info.vnfc_resource_info = some_if_any(r.vnfc_resource_info);
            info.vnfc_info = some_if_any(r.vnfc_info);
            info.vnf_virtual_link_resource_info = some_if_any(r.vnf_virtual_link_resource_info);
            info.virtual_storage_resource_info = some_if_any(r.virtual_storage_resource_info);
            info.ext_cp_info = r.ext_cp_info;
            info.ext_virtual_link_info = some_if_any(r.ext_virtual_link_info);
            info.ext_managed_virtual_link_info = some_if_any(r.ext_managed_virtual_link_info);
            let mut metadata = info.metadata.take().unwrap_or_default();
            if view.state.is_null() {
                metadata.remove(DRIVER_STATE_KEY);
            } else {
                metadata.insert(DRIVER_STATE_KEY.into(), view.state.clone());
            }
            info.metadata = (!metadata.is_empty()).then_some(metadata);
        }
        out
    }

    /// The step as part `i` (restricted VNFD `vnfd`, flavour of the request `flavour`) runs
    /// it.
    pub(super) fn step_for(
        &self,
        req: &InfraRequest,
        i: usize,
        vnfd: &Vnfd,
        flavour: &Flavour,
    ) -> InfraStep {
        // Each target counts in its own flavour (the new one for a change of flavour).
        let restrict = |t: &ResourceTarget| {
            let f = vnfd.flavour(&t.flavour_id).unwrap_or(flavour);
            let mut t = t.clone();
            t.vdu_instances.retain(|v, _| f.vdu(v).is_some());
            t.scale_levels.retain(|a, _| f.scaling_aspect(a).is_some());
            t
        };
        let parent = req.vnfd.flavour(&req.flavour_id);
        match &req.step {
            InfraStep::Instantiate { target } => InfraStep::Instantiate {
                target: restrict(target),
            },
            InfraStep::Scale {
                aspect_id,
                scale_type,
                steps,
                from,
                target,
            } => InfraStep::Scale {
                aspect_id: aspect_id.clone(),
                scale_type: *scale_type,
                steps: *steps,
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::ScaleToLevel { from, target } => InfraStep::ScaleToLevel {
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::ChangeFlavour { from, target } => InfraStep::ChangeFlavour {
                from: restrict(from),
                target: restrict(target),
            },
            InfraStep::RollbackScale { restore } => InfraStep::RollbackScale {
                restore: restrict(restore),
            },
            InfraStep::Heal {
                scope: HealScope::Vnfcs { vnfcs },
            } => InfraStep::Heal {
                scope: HealScope::Vnfcs {
                    vnfcs: vnfcs
                        .iter()
                        .filter(|v| {
                            self.part_of_vnfc(&req.instance, parent, &v.vnfc_resource_id)
                                .or_else(|| self.part_of_vdu(parent, &v.vdu_id))
                                .unwrap_or(0)
                                == i
                        })
                        .cloned()
                        .collect(),
                },
            },
            InfraStep::Operate {
                change_state_to,
                stop_type,
                graceful_stop_timeout_seconds,
                vnfc_resource_ids,
            } => InfraStep::Operate {
                change_state_to: *change_state_to,
                stop_type: *stop_type,
                graceful_stop_timeout_seconds: *graceful_stop_timeout_seconds,
                vnfc_resource_ids: vnfc_resource_ids
                    .iter()
                    .filter(|id| self.part_of_vnfc(&req.instance, parent, id).unwrap_or(0) == i)
                    .cloned()
                    .collect(),
            },
            InfraStep::ChangeExtConn { cpd_ids } => InfraStep::ChangeExtConn {
                cpd_ids: cpd_ids
                    .iter()
                    .filter(|c| {
                        flavour.vdu_cps.iter().any(|x| &x.id == *c)
                            || flavour.ext_cps.iter().any(|x| &x.id == *c)
                    })
                    .cloned()
                    .collect(),
            },
            other => other.clone(),
        }
    }
}

fn some_if_any<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}
