//! [`MemoryInfraDriver`]: the fake VIM, its inventory per instance and its calls.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use vnfm_types::{
    ChangeType, ExtVirtualLinkInfo, ResourceHandle, VnfExtCpInfo, VnfInstanceId, VnfLcmOpOccId,
    VnfOperationalState, VnfdId,
};

use super::reconcile::*;
use super::{MEMORY_VIM_TYPE, lock, pause};
use crate::{
    DriverError, HealScope, InfraDriver, InfraOperation, InfraOutcome, InfraRequest, InfraStep,
    InstanceResources,
};

/// One call a [`MemoryInfraDriver`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraCall {
    /// The method called.
    pub operation: InfraOperation,
    /// The instance.
    pub instance_id: VnfInstanceId,
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The error kind ([`DriverError::kind`]) when the call failed; `None` when it succeeded
    /// or is still running.
    pub error: Option<&'static str>,
    /// The id of the NFVO grant the call came with, if any.
    pub grant_id: Option<String>,
    /// The step, as the driver received it.
    pub step: InfraStep,
    /// Keys of the VIM connections the request carried (`InfraRequest::vims`), in order.
    pub vim_connection_ids: Vec<String>,
    /// The VDUs of the request's flavour in the VNFD the driver received (empty when the
    /// VNFD has no such flavour).
    pub vdu_ids: Vec<String>,
    /// The VDUs of the `vnfcResourceInfo` entries of the instance the driver received, one
    /// per entry, in order.
    pub instance_vdu_ids: Vec<String>,
    /// The driver state the request carried.
    pub driver_state: serde_json::Value,
    /// The VNFD of the request ([`InfraRequest::vnfd`]).
    pub vnfd_id: String,
    /// The VNFD of the package a rollback of CHANGE_VNFPKG restores
    /// ([`InfraRequest::restored_package`]).
    pub restored_vnfd_id: Option<String>,
}

/// A VNFC in the fake VIM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemVnfc {
    /// `vnfcResourceInfo[].id`.
    pub id: String,
    /// Its VDU.
    pub vdu_id: String,
    /// Id of the compute resource (changes when the VNFC is healed).
    pub compute_id: String,
    /// `(virtual storage descriptor id, storage resource info id, resource id)` per volume.
    pub storages: Vec<(String, String, String)>,
    /// Started or stopped.
    pub state: VnfOperationalState,
    /// IP address of the VNFC's connection points, when the driver has an address pool
    /// ([`MemoryInfraDriver::with_address_pool`]).
    pub address: Option<String>,
    /// The VDU CPDs reported with `address` in `vnfcCpInfo` (those not on an internal VL).
    pub address_cps: Vec<String>,
}

/// An internal virtual link in the fake VIM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemVirtualLink {
    /// `vnfVirtualLinkResourceInfo[].id`.
    pub id: String,
    /// The VLD.
    pub vld_id: String,
    /// Id of the network resource.
    pub network_id: String,
}

/// What the fake VIM holds for one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// The VNFD the resources were created from.
    pub vnfd_id: VnfdId,
    /// The flavour.
    pub flavour_id: String,
    /// The VIM connection the resources live on, when the instance had one.
    pub vim_connection_id: Option<String>,
    /// A stack-like id, reported as `driver_state.stackId`.
    pub stack_id: String,
    /// VNFCs in creation order (scale-in removes the newest first).
    pub vnfcs: Vec<MemVnfc>,
    /// Internal virtual links.
    pub virtual_links: Vec<MemVirtualLink>,
    /// External CPs.
    pub ext_cps: Vec<VnfExtCpInfo>,
    /// External virtual links.
    pub ext_virtual_links: Vec<ExtVirtualLinkInfo>,
    /// Operational state.
    pub vnf_state: VnfOperationalState,
    /// External connectivity before the last change, kept for its rollback.
    previous_ext: Option<(Vec<VnfExtCpInfo>, Vec<ExtVirtualLinkInfo>)>,
}

impl Inventory {
    /// Number of VNFCs of `vdu_id`.
    pub fn count(&self, vdu_id: &str) -> u32 {
        // Inventories are small; the count fits.
        self.vnfcs.iter().filter(|v| v.vdu_id == vdu_id).count() as u32
    }
}

#[derive(Default)]
pub(super) struct InfraState {
    pub(super) inventories: BTreeMap<VnfInstanceId, Inventory>,
    pub(super) calls: Vec<InfraCall>,
    /// Calls made so far (recorded or not): what [`MemoryInfraDriver::fail_on_call`] counts.
    pub(super) call_count: usize,
    /// When set, calls are counted but not recorded (a long-running server).
    pub(super) forget_calls: bool,
    pub(super) fail_next: Vec<(InfraOperation, DriverError)>,
    pub(super) fail_on_call: BTreeMap<usize, DriverError>,
    pub(super) seq: u64,
    pub(super) id_prefix: String,
    /// Compute resources in trouble (by id), with the condition [`InfraDriver::observe`]
    /// reports while a VNFC runs on them.
    pub(super) broken: BTreeMap<String, (String, vnfm_types::PerceivedSeverity)>,
    /// What every observation answers instead, while set.
    pub(super) observe_error: Option<DriverError>,
}

impl InfraState {
    fn next_id(&mut self, prefix: &str) -> String {
        Ids(&mut self.seq, &self.id_prefix).next(prefix)
    }
}

/// A fake infrastructure driver that keeps each instance's resources in memory.
///
/// It implements every [`InfraDriver`] method: instance counts follow the planned
/// [`ResourceTarget`](crate::ResourceTarget) (scale-in removes the newest VNFCs first, as Tacker does), heal replaces
/// compute resources while keeping VNFC ids, rollbacks restore what was there before. Every
/// method is idempotent, like a real driver must be.
pub struct MemoryInfraDriver {
    vim_types: Vec<&'static str>,
    vim_kind: Option<std::sync::Arc<dyn crate::VimKind>>,
    delay: Duration,
    addresses: Vec<String>,
    state: Mutex<InfraState>,
}

impl Default for MemoryInfraDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryInfraDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryInfraDriver")
            .field("vim_types", &self.vim_types)
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl MemoryInfraDriver {
    /// A driver serving [`MEMORY_VIM_TYPE`], without delay or injected failures.
    pub fn new() -> Self {
        MemoryInfraDriver {
            vim_types: vec![MEMORY_VIM_TYPE],
            vim_kind: None,
            delay: Duration::ZERO,
            addresses: Vec::new(),
            state: Mutex::new(InfraState::default()),
        }
    }

    /// Serves these VIM types instead (e.g. to stand in for OpenStack in tests).
    pub fn with_vim_types(mut self, types: &[&'static str]) -> Self {
        self.vim_types = types.to_vec();
        self
    }

    /// Declares `kind` as the [`VimKind`](crate::VimKind) of the types this driver serves
    /// (stands in for a real driver's: whether its VIMs run containers, how they validate).
    pub fn with_vim_kind(mut self, kind: std::sync::Arc<dyn crate::VimKind>) -> Self {
        self.vim_kind = Some(kind);
        self
    }

    /// Makes every call take `delay` (cut short by cancellation or the deadline).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Counts calls without recording them ([`MemoryInfraDriver::calls`] stays empty), so that
    /// memory stays flat however many operations a long-running server runs.
    pub fn without_call_log(self) -> Self {
        lock(&self.state).forget_calls = true;
        self
    }

    /// Starts every resource id it generates with `prefix` (`os-vnfc-0002` for `os`), so
    /// that two drivers serving one instance (one VIM each) never report the same id.
    pub fn with_id_prefix(self, prefix: &str) -> Self {
        lock(&self.state).id_prefix = format!("{prefix}-");
        self
    }

    /// Gives each new VNFC the first address of `pool` that no other VNFC of the instance
    /// holds (a healed VNFC keeps its address), reported as the IPv4 address of a
    /// `vnfcCpInfo` entry for each of its VDU's CPs that is not on an internal virtual link.
    /// Tests point these addresses at real hosts (e.g. SSH servers for a management driver).
    /// VNFCs created when the pool is exhausted get no address.
    pub fn with_address_pool(mut self, pool: Vec<String>) -> Self {
        self.addresses = pool;
        self
    }

    /// Makes the next call of `operation` fail with `error` (before changing anything).
    /// Several injections for one operation apply to successive calls.
    pub fn fail_next(&self, operation: InfraOperation, error: DriverError) {
        lock(&self.state).fail_next.push((operation, error));
    }

    /// Makes the `n`-th call to this driver (1-based, counting every call) fail with `error`.
    pub fn fail_on_call(&self, n: usize, error: DriverError) {
        lock(&self.state).fail_on_call.insert(n, error);
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<InfraCall> {
        lock(&self.state).calls.clone()
    }

    /// The operations called so far, in order.
    pub fn operations(&self) -> Vec<InfraOperation> {
        lock(&self.state)
            .calls
            .iter()
            .map(|c| c.operation)
            .collect()
    }

    /// What the fake VIM holds for `instance_id`.
    pub fn inventory(&self, instance_id: &VnfInstanceId) -> Option<Inventory> {
        lock(&self.state).inventories.get(instance_id).cloned()
    }

    /// Puts the compute resource under VNFC `vnfc_id` of `instance_id` in trouble:
    /// [`InfraDriver::observe`] reports `condition` at `severity` for it until the VNFC is
    /// healed onto a new compute resource (or [`MemoryInfraDriver::repair`] is called).
    /// `false` when the instance has no such VNFC.
    pub fn break_vnfc(
        &self,
        instance_id: &VnfInstanceId,
        vnfc_id: &str,
        condition: &str,
        severity: vnfm_types::PerceivedSeverity,
    ) -> bool {
        let mut st = lock(&self.state);
        let Some(compute) = st
            .inventories
            .get(instance_id)
            .and_then(|i| i.vnfcs.iter().find(|v| v.id == vnfc_id))
            .map(|v| v.compute_id.clone())
        else {
            return false;
        };
        st.broken.insert(compute, (condition.to_owned(), severity));
        true
    }

    /// Makes every observation fail with `error` (the VIM cannot be reached), until called
    /// with `None`.
    pub fn fail_observations(&self, error: Option<DriverError>) {
        lock(&self.state).observe_error = error;
    }

    /// Ends every condition [`MemoryInfraDriver::break_vnfc`] set on the instance's VNFCs.
    pub fn repair(&self, instance_id: &VnfInstanceId) {
        let mut st = lock(&self.state);
        let computes: Vec<String> = st
            .inventories
            .get(instance_id)
            .map(|i| i.vnfcs.iter().map(|v| v.compute_id.clone()).collect())
            .unwrap_or_default();
        for c in computes {
            st.broken.remove(&c);
        }
    }

    async fn run(
        &self,
        req: &InfraRequest,
        expected: InfraOperation,
    ) -> Result<InfraOutcome, DriverError> {
        let op = req.step.operation();
        if op != expected {
            return Err(DriverError::invalid_input(format!(
                "the memory driver's {expected} method was called with a {op} step"
            )));
        }
        let (index, recorded) = {
            let mut st = lock(&self.state);
            let index = st.call_count;
            st.call_count += 1;
            if st.forget_calls {
                (index, None)
            } else {
                st.calls.push(InfraCall {
                    operation: op,
                    instance_id: req.instance.id.clone(),
                    op_occ_id: req.op_occ_id.clone(),
                    error: None,
                    grant_id: req.grant.as_ref().map(|g| g.id.clone()),
                    step: req.step.clone(),
                    vim_connection_ids: req.vims.iter().map(|v| v.connection_id.clone()).collect(),
                    vdu_ids: req
                        .flavour()
                        .map(|f| f.vdus.iter().map(|v| v.id.clone()).collect())
                        .unwrap_or_default(),
                    instance_vdu_ids: req
                        .instance
                        .instantiated_vnf_info
                        .iter()
                        .flat_map(|i| i.vnfc_resource_info.iter().flatten())
                        .map(|r| r.vdu_id.clone())
                        .collect(),
                    driver_state: req.driver_state.clone(),
                    vnfd_id: req.vnfd.descriptor_id.to_string(),
                    restored_vnfd_id: req
                        .restored_package
                        .as_ref()
                        .map(|p| p.vnfd.descriptor_id.to_string()),
                });
                (index, Some(st.calls.len() - 1))
            }
        };
        let result = self.run_inner(req, op, index).await;
        if let (Err(e), Some(recorded)) = (&result, recorded) {
            lock(&self.state).calls[recorded].error = Some(e.kind());
        }
        result
    }

    async fn run_inner(
        &self,
        req: &InfraRequest,
        op: InfraOperation,
        index: usize,
    ) -> Result<InfraOutcome, DriverError> {
        pause(self.delay, &req.control, &format!("memory {op}")).await?;
        let mut st = lock(&self.state);
        if let Some(e) = st.fail_on_call.remove(&(index + 1)) {
            return Err(e);
        }
        if let Some(pos) = st.fail_next.iter().position(|(o, _)| *o == op) {
            return Err(st.fail_next.remove(pos).1);
        }
        let mut changes = Changes::default();
        let id = req.instance.id.clone();
        match &req.step {
            InfraStep::Instantiate { target } => {
                let flavour = flavour_of(req, &target.flavour_id)?;
                if !st.inventories.contains_key(&id) {
                    let stack_id = st.next_id("stack");
                    let inv = Inventory {
                        vnfd_id: req.instance.vnfd_id.clone(),
                        flavour_id: target.flavour_id.clone(),
                        vim_connection_id: req
                            .granted_vim(&[])
                            .or(req.vims.first())
                            .map(|v| v.connection_id.clone()),
                        stack_id,
                        vnfcs: Vec::new(),
                        virtual_links: Vec::new(),
                        ext_cps: Vec::new(),
                        ext_virtual_links: Vec::new(),
                        vnf_state: VnfOperationalState::Started,
                        previous_ext: None,
                    };
                    st.inventories.insert(id.clone(), inv);
                }
                let managed = externally_managed(&req.request);
                with_inventory(&mut st, &id, |inv, ids| {
                    sync_virtual_links(inv, flavour, &managed, ids, &mut changes);
                    reconcile(inv, flavour, target, ids, &self.addresses, &mut changes);
                    if let Some(vls) = ext_links_of(&req.request) {
                        set_ext_links(inv, vls, ids);
                    }
                    Ok(())
                })?;
            }
            InfraStep::Terminate { .. } | InfraStep::RollbackInstantiate => {
                if let Some(inv) = st.inventories.remove(&id) {
                    remove_all(&inv, &mut changes);
                }
            }
            InfraStep::Scale { target, .. }
            | InfraStep::ScaleToLevel { target, .. }
            | InfraStep::RollbackScale { restore: target } => {
                let flavour = flavour_of(req, &target.flavour_id)?;
                with_inventory(&mut st, &id, |inv, ids| {
                    reconcile(inv, flavour, target, ids, &self.addresses, &mut changes);
                    Ok(())
                })?;
            }
            InfraStep::ChangeFlavour { target, .. } => {
                let flavour = flavour_of(req, &target.flavour_id)?;
                let managed = externally_managed(&req.request);
                with_inventory(&mut st, &id, |inv, ids| {
                    inv.flavour_id = target.flavour_id.clone();
                    sync_virtual_links(inv, flavour, &managed, ids, &mut changes);
                    reconcile(inv, flavour, target, ids, &self.addresses, &mut changes);
                    if let Some(vls) = ext_links_of(&req.request) {
                        set_ext_links(inv, vls, ids);
                    }
                    Ok(())
                })?;
            }
            InfraStep::Heal { scope } => {
                with_inventory(&mut st, &id, |inv, ids| {
                    let targets: Vec<String> = match scope {
                        HealScope::WholeVnf => inv.vnfcs.iter().map(|v| v.id.clone()).collect(),
                        HealScope::Vnfcs { vnfcs } => {
                            vnfcs.iter().map(|v| v.vnfc_resource_id.clone()).collect()
                        }
                    };
                    for t in &targets {
                        if !inv.vnfcs.iter().any(|v| &v.id == t) {
                            return Err(DriverError::invalid_input(format!(
                                "cannot heal VNFC `{t}`: the instance has no such VNFC"
                            )));
                        }
                    }
                    let vim = inv.vim_connection_id.clone();
                    for v in inv.vnfcs.iter_mut().filter(|v| targets.contains(&v.id)) {
                        v.compute_id = ids.next("server");
                        v.state = VnfOperationalState::Started;
                        changes.vnfc(v, ChangeType::Modified, &vim);
                    }
                    Ok(())
                })?;
            }
            InfraStep::Operate {
                change_state_to,
                vnfc_resource_ids,
                ..
            } => {
                let state = *change_state_to;
                with_inventory(&mut st, &id, |inv, _| {
                    let vim = inv.vim_connection_id.clone();
                    for v in inv.vnfcs.iter_mut().filter(|v| {
                        vnfc_resource_ids.is_empty() || vnfc_resource_ids.contains(&v.id)
                    }) {
                        v.state = state;
                        changes.vnfc(v, ChangeType::Modified, &vim);
                    }
                    if vnfc_resource_ids.is_empty() {
                        inv.vnf_state = state;
                    }
                    Ok(())
                })?;
            }
            InfraStep::ChangeExtConn { .. } => {
                with_inventory(&mut st, &id, |inv, ids| {
                    let vls = ext_links_of(&req.request).ok_or_else(|| {
                        DriverError::invalid_input("CHANGE_EXT_CONN without extVirtualLinks")
                    })?;
                    inv.previous_ext = Some((inv.ext_cps.clone(), inv.ext_virtual_links.clone()));
                    set_ext_links(inv, vls, ids);
                    Ok(())
                })?;
            }
            InfraStep::RollbackChangeExtConn => {
                with_inventory(&mut st, &id, |inv, _| {
                    if let Some((cps, vls)) = inv.previous_ext.take() {
                        inv.ext_cps = cps;
                        inv.ext_virtual_links = vls;
                    }
                    Ok(())
                })?;
            }
            InfraStep::ChangeVnfpkg { to_vnfd_id, .. }
            | InfraStep::RollbackChangeVnfpkg {
                restore_vnfd_id: to_vnfd_id,
            } => {
                with_inventory(&mut st, &id, |inv, ids| {
                    if inv.vnfd_id == *to_vnfd_id {
                        // Already done (a retried step): nothing to change.
                        return Ok(());
                    }
                    inv.vnfd_id = to_vnfd_id.clone();
                    let vim = inv.vim_connection_id.clone();
                    // A package change re-creates the servers from the new images.
                    for v in inv.vnfcs.iter_mut() {
                        v.compute_id = ids.next("server");
                        changes.vnfc(v, ChangeType::Modified, &vim);
                    }
                    Ok(())
                })?;
            }
        }
        let (resources, vnf_state, driver_state) = match st.inventories.get(&id) {
            Some(inv) => (
                resources_of(inv),
                Some(inv.vnf_state),
                serde_json::json!({ "stackId": inv.stack_id }),
            ),
            None => (InstanceResources::default(), None, serde_json::Value::Null),
        };
        Ok(InfraOutcome {
            resources,
            resource_changes: changes.into_resource_changes(),
            vnf_state: match req.step {
                InfraStep::Operate { .. } => vnf_state,
                _ => None,
            },
            driver_state,
            published_metadata: Default::default(),
        })
    }
}

#[async_trait]
impl InfraDriver for MemoryInfraDriver {
    fn name(&self) -> &str {
        "memory"
    }

    async fn observe(
        &self,
        req: &crate::ObserveRequest,
    ) -> Result<Vec<crate::ObservedCondition>, DriverError> {
        pause(self.delay, &req.control, "observing").await?;
        let st = lock(&self.state);
        if let Some(e) = &st.observe_error {
            return Err(e.clone());
        }
        let Some(inv) = st.inventories.get(&req.instance.id) else {
            return Ok(Vec::new());
        };
        Ok(inv
            .vnfcs
            .iter()
            .filter_map(|v| {
                let (condition, severity) = st.broken.get(&v.compute_id)?;
                let mut handle = ResourceHandle::new(v.compute_id.clone());
                handle.vim_connection_id = inv.vim_connection_id.clone();
                Some(
                    crate::ObservedCondition::new(
                        condition.clone(),
                        *severity,
                        handle,
                        vnfm_types::FaultyResourceType::Compute,
                    )
                    .on_vnfc(v.id.clone()),
                )
            })
            .collect())
    }

    fn vim_types(&self) -> &[&str] {
        &self.vim_types
    }

    fn vim_kind(&self) -> Option<std::sync::Arc<dyn crate::VimKind>> {
        self.vim_kind.clone()
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::Instantiate).await
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::Terminate).await
    }

    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::Scale).await
    }

    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::ScaleToLevel).await
    }

    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::Heal).await
    }

    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::Operate).await
    }

    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::ChangeExtConn).await
    }

    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::ChangeFlavour).await
    }

    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::ChangeVnfpkg).await
    }

    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::RollbackInstantiate).await
    }

    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::RollbackScale).await
    }

    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::RollbackChangeExtConn).await
    }

    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        self.run(req, InfraOperation::RollbackChangeVnfpkg).await
    }
}
