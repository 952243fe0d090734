//! [`SplitByVim`], the [`InfraDriver`] of a mixed VNF (see the [module
//! documentation](super)): which VIMs and drivers it splits over ([`SplitByVim::resolve`]),
//! and the loop that runs one step on each part concerned, records the parts that succeeded
//! and merges their outcomes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use indexmap::IndexMap;
use serde_json::Value;
use vnfm_descriptor::{Flavour, Vnfd};
use vnfm_driver_api::{DriverError, InfraDriver, InfraOutcome, InfraRequest};
use vnfm_types::VimConnectionInfo;

use super::projection::request_for;
use super::state::{PartsProgress, Record, View};
use super::{SplitState, VduVimMap, restrict_vnfd, runs_containers};
use crate::error::LcmError;

/// One VIM of a mixed VNF and the driver that serves it.
#[derive(Clone)]
pub struct VimPart {
    /// Key of its `vimConnectionInfo` entry.
    pub key: String,
    /// Its `vimType`.
    pub vim_type: String,
    /// The driver serving that type.
    pub driver: Arc<dyn InfraDriver>,
}

impl std::fmt::Debug for VimPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimPart")
            .field("key", &self.key)
            .field("vim_type", &self.vim_type)
            .field("driver", &self.driver.name())
            .finish()
    }
}

/// The [`InfraDriver`] of a mixed VNF: runs each step on the driver of every VIM concerned,
/// each with its share of the request, and merges their outcomes (see the
/// [module documentation](super)).
pub struct SplitByVim {
    pub(super) parts: Vec<VimPart>,
    pub(super) map: VduVimMap,
    pub(super) mapping: BTreeMap<String, String>,
    pub(super) progress: Option<PartsProgress>,
}

impl std::fmt::Debug for SplitByVim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitByVim")
            .field("parts", &self.parts)
            .field("mapping", &self.mapping)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

fn same_driver(a: &Arc<dyn InfraDriver>, b: &Arc<dyn InfraDriver>) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
}

impl SplitByVim {
    /// The split for flavour `flavour_id` of `vnfd` on an instance with VIM connections
    /// `vims`, given the registered `drivers` (by VIM type) and the `explicit` choices
    /// ([`explicit_mapping`](super::explicit_mapping)): `None` when the flavour's VDUs map to VIMs of a single driver
    /// (or the flavour does not exist), which the runner then handles as any other instance.
    /// An explicit choice of a VIM connection whose type no driver serves is an error.
    pub fn resolve(
        vnfd: &Vnfd,
        flavour_id: &str,
        vims: &IndexMap<String, VimConnectionInfo>,
        drivers: &BTreeMap<String, Arc<dyn InfraDriver>>,
        explicit: BTreeMap<String, String>,
    ) -> Result<Option<SplitByVim>, LcmError> {
        let Some(flavour) = vnfd.flavour(flavour_id) else {
            return Ok(None);
        };
        let map = VduVimMap::new(
            vims,
            |t| drivers.get(t).map(|d| runs_containers(&**d)),
            explicit,
        );
        let mapping = map.assignments(flavour);
        let used: BTreeSet<&str> = mapping.values().map(String::as_str).collect();
        let mut parts: Vec<VimPart> = Vec::new();
        for (key, info) in vims.iter().filter(|(k, _)| used.contains(k.as_str())) {
            let Some(driver) = drivers.get(&info.vim_type) else {
                return Err(LcmError::NoInfraDriver {
                    vim_types: vec![info.vim_type.clone()],
                    known: drivers.keys().cloned().collect(),
                });
            };
            parts.push(VimPart {
                key: key.clone(),
                vim_type: info.vim_type.clone(),
                driver: driver.clone(),
            });
        }
        let distinct = parts
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                !parts[..*i]
                    .iter()
                    .any(|q| same_driver(&q.driver, &p.driver))
            })
            .count();
        if distinct < 2 {
            return Ok(None);
        }
        // VM side first; a stable sort keeps the vimConnectionInfo order within each side.
        parts.sort_by_key(|p| runs_containers(&*p.driver));
        Ok(Some(SplitByVim {
            parts,
            map,
            mapping,
            progress: None,
        }))
    }

    /// Reads the progress of the step from the operation occurrence and hands the outcome of
    /// each part that succeeds to `progress`, for the runner to keep with the occurrence (op-occ
    /// data [`PROGRESS_KEY`](super::PROGRESS_KEY)) for retries, recovery and rollbacks.
    pub fn with_progress(mut self, progress: PartsProgress) -> SplitByVim {
        self.progress = Some(progress);
        self
    }

    /// The parts, in the order constructive steps call them (VM side first).
    pub fn parts(&self) -> &[VimPart] {
        &self.parts
    }

    /// The VIM connection key of each VDU of the flavour.
    pub fn mapping(&self) -> &BTreeMap<String, String> {
        &self.mapping
    }

    fn describe(&self, i: usize) -> String {
        let part = &self.parts[i];
        let vdus: Vec<&str> = self
            .mapping
            .iter()
            .filter(|(_, k)| **k == part.key)
            .map(|(v, _)| v.as_str())
            .collect();
        format!(
            "VIM connection `{}` (driver {}, VDUs {})",
            part.key,
            part.driver.name(),
            if vdus.is_empty() {
                "none".to_string()
            } else {
                vdus.join(", ")
            }
        )
    }

    async fn run(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let n = self.parts.len();
        let rollback = req.step.operation().is_rollback();
        let vnfds: Vec<Arc<Vnfd>> = (0..n)
            .map(|i| {
                Arc::new(restrict_vnfd(
                    &req.vnfd,
                    &self.map,
                    &self.parts[i].key,
                    i == 0,
                ))
            })
            .collect();
        let flavours: Vec<Flavour> = vnfds
            .iter()
            .map(|v| {
                v.flavour(&req.flavour_id)
                    .cloned()
                    .unwrap_or_else(|| Flavour::empty(req.flavour_id.as_str()))
            })
            .collect();
        let recorded_state = SplitState::of(&req.driver_state).unwrap_or_default();
        let mut progress = self.load(req).await;
        let forward = progress.forward.clone();
        let views: Vec<View> = (0..n)
            .map(|i| {
                let key = &self.parts[i].key;
                // What the forward step did, when it did it in this occurrence: the rollback
                // undoes that, even though the instance never recorded it.
                if rollback && let Some(out) = forward.as_ref().and_then(|r| r.outcomes.get(key)) {
                    return View {
                        resources: out.resources.clone(),
                        state: out.driver_state.clone(),
                    };
                }
                View {
                    resources: self.recorded(&req.instance, i, &vnfds[i]),
                    state: recorded_state
                        .by_vim
                        .get(key)
                        .cloned()
                        .unwrap_or(Value::Null),
                }
            })
            .collect();
        let slot = if rollback {
            &mut progress.rollback
        } else {
            &mut progress.forward
        };
        if slot.as_ref().is_none_or(|r| r.step != req.step) {
            *slot = Some(Record {
                step: req.step.clone(),
                outcomes: BTreeMap::new(),
            });
        }
        let selected = self.selected(req, &flavours);
        let mut order: Vec<usize> = (0..n).filter(|&i| selected[i]).collect();
        if Self::reversed(&req.step) {
            order.reverse();
        }
        let mut outcomes: BTreeMap<usize, InfraOutcome> = BTreeMap::new();
        for i in order {
            let part = &self.parts[i];
            let done = if rollback {
                progress.rollback.as_ref()
            } else {
                progress.forward.as_ref()
            }
            .and_then(|r| r.outcomes.get(&part.key))
            .cloned();
            if let Some(out) = done {
                tracing::info!(vim_connection = %part.key, step = %req.step.operation(), "part already done in an earlier attempt of this step");
                outcomes.insert(i, out);
                continue;
            }
            req.control.check(&format!(
                "infra step {} on VIM connection `{}`",
                req.step.operation(),
                part.key
            ))?;
            let sub = InfraRequest {
                op_occ_id: req.op_occ_id.clone(),
                operation: req.operation,
                step: self.step_for(req, i, &vnfds[i], &flavours[i]),
                request: request_for(&req.request, &flavours[i], i == 0),
                instance: self.instance_for(&req.instance, i, &views[i], &req.flavour_id),
                vnfd: vnfds[i].clone(),
                flavour_id: req.flavour_id.clone(),
                vims: req
                    .vims
                    .iter()
                    .filter(|v| v.connection_id == part.key)
                    .cloned()
                    .collect(),
                artifacts: req.artifacts.clone(),
                driver_state: views[i].state.clone(),
                grant: req.grant.clone(),
                grant_request: req.grant_request.clone(),
                restored_package: None,
                control: req.control.clone(),
            };
            tracing::info!(vim_connection = %part.key, driver = part.driver.name(), step = %req.step.operation(), "running the step on one VIM of a mixed VNF");
            match vnfm_driver_api::execute(&*part.driver, &sub).await {
                Ok(out) => {
                    let record = if rollback {
                        progress.rollback.as_mut()
                    } else {
                        progress.forward.as_mut()
                    };
                    if let Some(r) = record {
                        r.outcomes.insert(part.key.clone(), out.clone());
                    }
                    self.save(&progress);
                    outcomes.insert(i, out);
                }
                Err(e) => return Err(e.in_context(&self.describe(i))),
            }
        }
        Ok(self.merge(views, outcomes))
    }
}

#[async_trait]
impl InfraDriver for SplitByVim {
    fn name(&self) -> &str {
        "split-by-vim"
    }

    /// None: the split is never registered for a VIM type; the runner builds it per step.
    fn vim_types(&self) -> &[&str] {
        &[]
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }

    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use vnfm_driver_api::memory::MemoryInfraDriver;

    #[test]
    fn a_split_needs_two_drivers_and_puts_the_vm_side_first() {
        let os: Arc<dyn InfraDriver> = Arc::new(MemoryInfraDriver::new().with_vim_types(&[OS]));
        let k8s: Arc<dyn InfraDriver> = Arc::new(
            MemoryInfraDriver::new()
                .with_vim_types(&[K8S])
                .with_vim_kind(Arc::new(ContainerKind)),
        );
        let drivers = BTreeMap::from([(OS.to_string(), os.clone()), (K8S.to_string(), k8s)]);
        let v = vnfd();
        let split = SplitByVim::resolve(
            &v,
            "f",
            &vims(&[("k", K8S), ("o", OS)]),
            &drivers,
            BTreeMap::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(ids(split.parts(), |p| &p.key), ["o", "k"]);
        assert_eq!(split.mapping()["POD"], "k");
        // One driver for both types: no split.
        let same = BTreeMap::from([(OS.to_string(), os.clone()), (K8S.to_string(), os.clone())]);
        assert!(
            SplitByVim::resolve(
                &v,
                "f",
                &vims(&[("k", K8S), ("o", OS)]),
                &same,
                BTreeMap::new()
            )
            .unwrap()
            .is_none()
        );
        // One VIM: no split. Unknown flavour: no split.
        assert!(
            SplitByVim::resolve(&v, "f", &vims(&[("o", OS)]), &drivers, BTreeMap::new())
                .unwrap()
                .is_none()
        );
        assert!(
            SplitByVim::resolve(
                &v,
                "nope",
                &vims(&[("k", K8S), ("o", OS)]),
                &drivers,
                BTreeMap::new()
            )
            .unwrap()
            .is_none()
        );
        // An explicit choice of a VIM no driver serves.
        let err = SplitByVim::resolve(
            &v,
            "f",
            &vims(&[("o", OS), ("x", "example.OTHER")]),
            &drivers,
            BTreeMap::from([("POD".into(), "x".into())]),
        )
        .unwrap_err();
        assert!(matches!(err, LcmError::NoInfraDriver { .. }), "{err}");
    }
}
