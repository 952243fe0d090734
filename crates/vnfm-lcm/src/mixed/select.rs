//! Which parts of a mixed VNF a step concerns, and in which order they run (see the [module
//! documentation](super)): the part of a VDU, VNFC or resource handle, the parts a step
//! selects, and whether it runs them container side first.

use std::collections::BTreeSet;

use vnfm_descriptor::Flavour;
use vnfm_driver_api::{HealScope, InfraRequest, InfraStep, ResourceTarget};
use vnfm_types::{OperationParams, ResourceHandle, ScaleType, VnfInstance, VnfOperationalState};

use super::SplitByVim;

impl SplitByVim {
    pub(super) fn part_of_key(&self, key: &str) -> Option<usize> {
        self.parts.iter().position(|p| p.key == key)
    }

    /// The part of the VDU `vdu_id` of flavour `flavour`.
    pub(super) fn part_of_vdu(&self, flavour: Option<&Flavour>, vdu_id: &str) -> Option<usize> {
        let key = match flavour.and_then(|f| f.vdu(vdu_id)) {
            Some(v) => self.map.vim_of(v)?,
            None => self.mapping.get(vdu_id)?,
        };
        self.part_of_key(key)
    }

    /// The part a resource handle lives on, by its VIM connection.
    pub(super) fn part_of_handle(&self, h: &ResourceHandle) -> Option<usize> {
        h.vim_connection_id
            .as_deref()
            .and_then(|k| self.part_of_key(k))
    }

    /// The part of the VNFC `id` (a `vnfcResourceInfo` id) of `instance`.
    pub(super) fn part_of_vnfc(
        &self,
        instance: &VnfInstance,
        flavour: Option<&Flavour>,
        id: &str,
    ) -> Option<usize> {
        let r = instance
            .instantiated_vnf_info
            .as_ref()?
            .vnfc_resource_info
            .as_ref()?
            .iter()
            .find(|r| r.id == id)?;
        self.part_of_handle(&r.compute_resource)
            .or_else(|| self.part_of_vdu(flavour, &r.vdu_id))
    }

    /// Which parts `req`'s step concerns.
    pub(super) fn selected(&self, req: &InfraRequest, flavours: &[Flavour]) -> Vec<bool> {
        let n = self.parts.len();
        let all = vec![true; n];
        let flavour = req.vnfd.flavour(&req.flavour_id);
        let of_vdus = |vdus: &mut dyn Iterator<Item = &str>| {
            let mut out = vec![false; n];
            for v in vdus {
                if let Some(i) = self.part_of_vdu(flavour, v) {
                    out[i] = true;
                }
            }
            out
        };
        let changed = |from: &ResourceTarget, to: &ResourceTarget| {
            let vdus: BTreeSet<&str> = from
                .vdu_instances
                .keys()
                .chain(to.vdu_instances.keys())
                .map(String::as_str)
                .filter(|v| from.instances_of(v) != to.instances_of(v))
                .collect();
            of_vdus(&mut vdus.into_iter())
        };
        let of_aspect = |aspect: &str| {
            let deltas = flavour
                .and_then(|f| f.scaling_aspect(aspect))
                .map(|a| a.vdu_deltas.keys().map(String::as_str).collect::<Vec<_>>())
                .unwrap_or_default();
            of_vdus(&mut deltas.into_iter())
        };
        let of_cpds = |cpds: &mut dyn Iterator<Item = &str>| {
            let cpds: BTreeSet<&str> = cpds.collect();
            let out: Vec<bool> = flavours
                .iter()
                .map(|f| {
                    f.vdu_cps.iter().any(|c| cpds.contains(c.id.as_str()))
                        || f.ext_cps.iter().any(|c| cpds.contains(c.id.as_str()))
                })
                .collect();
            out
        };
        let primary_if_none = |mut v: Vec<bool>| {
            if !v.contains(&true)
                && let Some(first) = v.first_mut()
            {
                *first = true;
            }
            v
        };
        match &req.step {
            InfraStep::Scale {
                aspect_id,
                from,
                target,
                ..
            } => {
                let by_aspect = of_aspect(aspect_id);
                if by_aspect.contains(&true) {
                    by_aspect
                } else {
                    changed(from, target)
                }
            }
            InfraStep::ScaleToLevel { from, target } => changed(from, target),
            InfraStep::RollbackScale { .. } => match &req.request {
                OperationParams::Scale(r) => {
                    let by_aspect = of_aspect(&r.aspect_id);
                    if by_aspect.contains(&true) {
                        by_aspect
                    } else {
                        all
                    }
                }
                _ => all,
            },
            InfraStep::Heal {
                scope: HealScope::Vnfcs { vnfcs },
            } => {
                let mut out = vec![false; n];
                for v in vnfcs {
                    if let Some(i) = self
                        .part_of_vnfc(&req.instance, flavour, &v.vnfc_resource_id)
                        .or_else(|| self.part_of_vdu(flavour, &v.vdu_id))
                    {
                        out[i] = true;
                    }
                }
                primary_if_none(out)
            }
            InfraStep::Operate {
                vnfc_resource_ids, ..
            } if !vnfc_resource_ids.is_empty() => {
                let mut out = vec![false; n];
                for id in vnfc_resource_ids {
                    if let Some(i) = self.part_of_vnfc(&req.instance, flavour, id) {
                        out[i] = true;
                    }
                }
                primary_if_none(out)
            }
            InfraStep::ChangeExtConn { cpd_ids } => {
                primary_if_none(of_cpds(&mut cpd_ids.iter().map(String::as_str)))
            }
            InfraStep::RollbackChangeExtConn => match &req.request {
                OperationParams::ChangeExtConn(r) => primary_if_none(of_cpds(
                    &mut r
                        .ext_virtual_links
                        .iter()
                        .flat_map(|l| l.ext_cps.iter().map(|c| c.cpd_id.as_str())),
                )),
                _ => all,
            },
            _ => all,
        }
    }

    /// Whether the step runs the parts container side first.
    pub(super) fn reversed(step: &InfraStep) -> bool {
        let op = step.operation();
        op.is_rollback()
            || matches!(
                step,
                InfraStep::Terminate { .. }
                    | InfraStep::Scale {
                        scale_type: ScaleType::ScaleIn,
                        ..
                    }
                    | InfraStep::Operate {
                        change_state_to: VnfOperationalState::Stopped,
                        ..
                    }
            )
    }
}
