//! In-memory drivers for tests and benchmarks: [`MemoryInfraDriver`] (a fake VIM that keeps
//! an inventory per instance), [`RecordingMgmtDriver`] (hooks that record their calls) and
//! [`MemArtifacts`] (package files held in memory).
//!
//! Both drivers record every call in order, can be told to fail (the next call of an
//! operation, or the N-th call overall) and can be slowed down by an artificial delay that
//! honours the step's deadline and cancellation, so runner tests can exercise retries,
//! rollbacks, timeouts and cancellation without infrastructure. Resource ids are generated
//! from a counter (`vnfc-0001`, `server-0001`, ...), so results are deterministic.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use vnfm_descriptor::Flavour;
use vnfm_types::{
    AffectedVirtualLink, AffectedVirtualStorage, AffectedVnfc, ChangeType, CpProtocolData,
    CpProtocolInfo, ExtVirtualLinkData, ExtVirtualLinkInfo, IpAddressInfo, IpAddressType,
    IpOverEthernetAddressInfo, LayerProtocol, LcmOperationType, OperationParams, ResourceChanges,
    ResourceHandle, VirtualCpAddressInfo, VirtualStorageResourceInfo, VnfExtCpInfo, VnfInstanceId,
    VnfLcmOpOccId, VnfLinkPortInfo, VnfOperationalState, VnfVirtualLinkResourceInfo, VnfcCpInfo,
    VnfcInfo, VnfcResourceInfo, VnfdId,
};

use crate::{
    ArtifactSource, DriverError, HealScope, HookCall, HookOutcome, InfraDriver, InfraOperation,
    InfraOutcome, InfraRequest, InfraStep, InstanceResources, MgmtDriver, ResourceTarget,
    RunControl,
};

/// The `vimType` the in-memory driver serves by default.
pub const MEMORY_VIM_TYPE: &str = "vnfm.MEMORY.V_1";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide the state from the others.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sleeps for `delay` in short slices, returning early with `Cancelled` / `Timeout` when the
/// step is cancelled or its deadline passes.
async fn pause(delay: Duration, control: &RunControl, what: &str) -> Result<(), DriverError> {
    if delay.is_zero() {
        return control.check(what);
    }
    let end = Instant::now() + delay;
    loop {
        control.check(what)?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        tokio::time::sleep((end - now).min(Duration::from_millis(5))).await;
    }
}

/// Package files held in memory.
#[derive(Debug, Clone, Default)]
pub struct MemArtifacts {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemArtifacts {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file.
    pub fn with(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), content.into());
        self
    }
}

impl ArtifactSource for MemArtifacts {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.files.get(path).cloned().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the package has no file `{path}`"),
            )
        })
    }

    fn paths(&self) -> Option<Vec<String>> {
        Some(self.files.keys().cloned().collect())
    }
}

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
struct InfraState {
    inventories: BTreeMap<VnfInstanceId, Inventory>,
    calls: Vec<InfraCall>,
    /// Calls made so far (recorded or not): what [`MemoryInfraDriver::fail_on_call`] counts.
    call_count: usize,
    /// When set, calls are counted but not recorded (a long-running server).
    forget_calls: bool,
    fail_next: Vec<(InfraOperation, DriverError)>,
    fail_on_call: BTreeMap<usize, DriverError>,
    seq: u64,
    id_prefix: String,
    /// Compute resources in trouble (by id), with the condition [`InfraDriver::observe`]
    /// reports while a VNFC runs on them.
    broken: BTreeMap<String, (String, vnfm_types::PerceivedSeverity)>,
    /// What every observation answers instead, while set.
    observe_error: Option<DriverError>,
}

impl InfraState {
    fn next_id(&mut self, prefix: &str) -> String {
        Ids(&mut self.seq, &self.id_prefix).next(prefix)
    }
}

/// A fake infrastructure driver that keeps each instance's resources in memory.
///
/// It implements every [`InfraDriver`] method: instance counts follow the planned
/// [`ResourceTarget`] (scale-in removes the newest VNFCs first, as Tacker does), heal replaces
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
        })
    }
}

/// Id generator borrowed from the state while an inventory is borrowed mutably: the
/// counter and the driver's id prefix.
struct Ids<'a>(&'a mut u64, &'a str);

impl Ids<'_> {
    fn next(&mut self, prefix: &str) -> String {
        *self.0 += 1;
        format!("{}{prefix}-{:04}", self.1, *self.0)
    }
}

fn with_inventory(
    st: &mut InfraState,
    id: &VnfInstanceId,
    f: impl FnOnce(&mut Inventory, &mut Ids<'_>) -> Result<(), DriverError>,
) -> Result<(), DriverError> {
    let InfraState {
        inventories,
        seq,
        id_prefix,
        ..
    } = st;
    let inv = inventories.get_mut(id).ok_or_else(|| {
        DriverError::permanent(format!(
            "the memory VIM holds no resources for instance {id}"
        ))
    })?;
    f(inv, &mut Ids(seq, id_prefix))
}

fn flavour_of<'a>(req: &'a InfraRequest, flavour_id: &str) -> Result<&'a Flavour, DriverError> {
    req.vnfd.flavour(flavour_id).ok_or_else(|| {
        DriverError::invalid_input(format!(
            "the VNFD {} has no flavour `{flavour_id}`",
            req.vnfd.descriptor_id
        ))
    })
}

fn ext_links_of(request: &OperationParams) -> Option<&[ExtVirtualLinkData]> {
    match request {
        OperationParams::Instantiate(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeExtConn(r) => Some(&r.ext_virtual_links),
        OperationParams::ChangeVnfpkg(r) => r.ext_virtual_links.as_deref(),
        _ => None,
    }
}

fn externally_managed(request: &OperationParams) -> Vec<String> {
    let list = match request {
        OperationParams::Instantiate(r) => r.ext_managed_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_managed_virtual_links.as_deref(),
        _ => None,
    };
    list.unwrap_or_default()
        .iter()
        .map(|l| l.vnf_virtual_link_desc_id.clone())
        .collect()
}

/// Replaces the external links named in `vls` (by id) and the external CPs of their CPDs.
fn set_ext_links(inv: &mut Inventory, vls: &[ExtVirtualLinkData], ids: &mut Ids<'_>) {
    for vl in vls {
        let unchanged = inv.ext_virtual_links.iter().any(|l| {
            l.id == vl.id
                && l.resource_handle.resource_id == vl.resource_id
                && l.current_vnf_ext_cp_data == vl.ext_cps
        });
        if unchanged {
            // A retried step: the link is already as requested.
            continue;
        }
        let cpds: Vec<&str> = vl.ext_cps.iter().map(|c| c.cpd_id.as_str()).collect();
        inv.ext_cps.retain(|cp| !cpds.contains(&cp.cpd_id.as_str()));
        for cp in &vl.ext_cps {
            for (config_id, config) in &cp.cp_config {
                inv.ext_cps.push(VnfExtCpInfo {
                    id: ids.next("extcp"),
                    cpd_id: cp.cpd_id.clone(),
                    cp_config_id: Some(config_id.clone()),
                    vnfd_id: Some(inv.vnfd_id.clone()),
                    cp_protocol_info: Some(ext_cp_protocol_info(
                        config.cp_protocol_data.as_deref().unwrap_or_default(),
                    )),
                    ext_link_port_id: None,
                    metadata: None,
                    associated_vnfc_cp_id: None,
                    associated_vip_cp_id: None,
                    associated_virtual_cp_id: None,
                    associated_vnf_virtual_link_id: None,
                });
            }
        }
        inv.ext_virtual_links.retain(|l| l.id != vl.id);
        let mut handle = ResourceHandle::new(vl.resource_id.clone());
        handle.vim_connection_id = vl.vim_connection_id.clone();
        inv.ext_virtual_links.push(ExtVirtualLinkInfo {
            id: vl.id.clone(),
            resource_handle: handle,
            ext_link_ports: None,
            current_vnf_ext_cp_data: vl.ext_cps.clone(),
        });
    }
}

/// What the fake VIM reports of an external CP's protocols: the `cpProtocolData` requested
/// (fixed addresses as its addresses, dynamic ones flagged `isDynamic`), or IP over Ethernet
/// with nothing known when none was given, so the CP always has its protocol information
/// (SOL003 v2.6.1 makes `VnfExtCpInfo.cpProtocolInfo` mandatory).
fn ext_cp_protocol_info(data: &[CpProtocolData]) -> Vec<CpProtocolInfo> {
    if data.is_empty() {
        return vec![CpProtocolInfo {
            layer_protocol: LayerProtocol::IpOverEthernet,
            ip_over_ethernet: None,
            virtual_cp_address: None,
        }];
    }
    data.iter()
        .map(|d| CpProtocolInfo {
            layer_protocol: d.layer_protocol,
            ip_over_ethernet: d
                .ip_over_ethernet
                .as_ref()
                .map(|e| IpOverEthernetAddressInfo {
                    mac_address: e.mac_address.clone(),
                    segmentation_id: e.segmentation_id.clone(),
                    ip_addresses: e.ip_addresses.as_ref().map(|list| {
                        list.iter()
                            .map(|a| IpAddressInfo {
                                ip_type: a.ip_type,
                                addresses: a.fixed_addresses.clone(),
                                is_dynamic: a.num_dynamic_addresses.map(|n| n > 0),
                                address_range: a.address_range.clone(),
                                subnet_id: a.subnet_id.clone(),
                            })
                            .collect()
                    }),
                }),
            virtual_cp_address: d.virtual_cp_address.as_ref().map(|v| VirtualCpAddressInfo {
                ip_type: v.ip_type,
                load_balancer_ip: v.load_balancer_ip.clone(),
            }),
        })
        .collect()
}

/// Adds the flavour's internal VLs that are missing and removes those the flavour no longer has.
fn sync_virtual_links(
    inv: &mut Inventory,
    flavour: &Flavour,
    managed: &[String],
    ids: &mut Ids<'_>,
    changes: &mut Changes,
) {
    let wanted: Vec<&str> = flavour
        .virtual_links
        .iter()
        .map(|v| v.id.as_str())
        .filter(|v| !managed.iter().any(|m| m == v))
        .collect();
    let vim = inv.vim_connection_id.clone();
    let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut inv.virtual_links)
        .into_iter()
        .partition(|vl| wanted.contains(&vl.vld_id.as_str()));
    for vl in &drop {
        changes.vl(vl, ChangeType::Removed, &vim);
    }
    inv.virtual_links = keep;
    for vld in wanted {
        if !inv.virtual_links.iter().any(|v| v.vld_id == vld) {
            let vl = MemVirtualLink {
                id: ids.next("vl"),
                vld_id: vld.to_string(),
                network_id: ids.next("net"),
            };
            changes.vl(&vl, ChangeType::Added, &vim);
            inv.virtual_links.push(vl);
        }
    }
}

/// Brings the VNFC counts to `target`: adds VNFCs, or removes the newest ones.
fn reconcile(
    inv: &mut Inventory,
    flavour: &Flavour,
    target: &ResourceTarget,
    ids: &mut Ids<'_>,
    pool: &[String],
    changes: &mut Changes,
) {
    let vim = inv.vim_connection_id.clone();
    // VDUs that the (possibly new) flavour does not have lose all their VNFCs.
    let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut inv.vnfcs)
        .into_iter()
        .partition(|v| flavour.vdu(&v.vdu_id).is_some());
    for v in &drop {
        changes.vnfc(v, ChangeType::Removed, &vim);
    }
    inv.vnfcs = keep;
    for vdu in &flavour.vdus {
        let want = target.instances_of(&vdu.id);
        let have = inv.count(&vdu.id);
        for _ in have..want {
            let address = pool
                .iter()
                .find(|a| !inv.vnfcs.iter().any(|v| v.address.as_ref() == Some(*a)))
                .cloned();
            let address_cps = if address.is_some() {
                flavour
                    .vdu_cps
                    .iter()
                    .filter(|cp| cp.vdu.as_deref() == Some(vdu.id.as_str()))
                    .filter(|cp| cp.virtual_link.is_none())
                    .map(|cp| cp.id.clone())
                    .collect()
            } else {
                Vec::new()
            };
            let vnfc = MemVnfc {
                id: ids.next("vnfc"),
                vdu_id: vdu.id.clone(),
                compute_id: ids.next("server"),
                storages: vdu
                    .virtual_storages
                    .iter()
                    .map(|s| (s.clone(), ids.next("storage"), ids.next("volume")))
                    .collect(),
                state: inv.vnf_state,
                address,
                address_cps,
            };
            changes.vnfc(&vnfc, ChangeType::Added, &vim);
            inv.vnfcs.push(vnfc);
        }
        for _ in want..have {
            if let Some(pos) = inv.vnfcs.iter().rposition(|v| v.vdu_id == vdu.id) {
                let v = inv.vnfcs.remove(pos);
                changes.vnfc(&v, ChangeType::Removed, &vim);
            }
        }
    }
}

fn remove_all(inv: &Inventory, changes: &mut Changes) {
    let vim = inv.vim_connection_id.clone();
    for v in &inv.vnfcs {
        changes.vnfc(v, ChangeType::Removed, &vim);
    }
    for vl in &inv.virtual_links {
        changes.vl(vl, ChangeType::Removed, &vim);
    }
}

fn handle(id: &str, kind: &str, vim: &Option<String>) -> ResourceHandle {
    let mut h = ResourceHandle::new(id);
    h.vim_connection_id = vim.clone();
    h.vim_level_resource_type = Some(kind.to_string());
    h
}

fn resources_of(inv: &Inventory) -> InstanceResources {
    let vim = &inv.vim_connection_id;
    let mut vl_ports: BTreeMap<String, Vec<VnfLinkPortInfo>> = BTreeMap::new();
    let mut res = InstanceResources::default();
    for v in &inv.vnfcs {
        res.vnfc_resource_info.push(VnfcResourceInfo {
            id: v.id.clone(),
            vdu_id: v.vdu_id.clone(),
            vnfd_id: Some(inv.vnfd_id.clone()),
            compute_resource: handle(&v.compute_id, "memory.Compute", vim),
            zone_id: None,
            storage_resource_ids: (!v.storages.is_empty())
                .then(|| v.storages.iter().map(|s| s.1.clone()).collect()),
            reservation_id: None,
            vnfc_cp_info: None,
            metadata: None,
        });
        res.vnfc_info.push(VnfcInfo {
            // Tacker's convention: `<vduId>-<vnfcResourceInfo id>`.
            id: format!("{}-{}", v.vdu_id, v.id),
            vdu_id: v.vdu_id.clone(),
            vnfc_resource_info_id: Some(v.id.clone()),
            vnfc_state: v.state,
            vnfc_configurable_properties: None,
        });
        for (desc, sid, rid) in &v.storages {
            res.virtual_storage_resource_info
                .push(VirtualStorageResourceInfo {
                    id: sid.clone(),
                    virtual_storage_desc_id: desc.clone(),
                    vnfd_id: Some(inv.vnfd_id.clone()),
                    storage_resource: handle(rid, "memory.Volume", vim),
                    zone_id: None,
                    reservation_id: None,
                    metadata: None,
                });
        }
    }
    // One port per VNFC on each internal VL, named after the VNFC.
    for vl in &inv.virtual_links {
        for v in &inv.vnfcs {
            vl_ports
                .entry(vl.id.clone())
                .or_default()
                .push(VnfLinkPortInfo {
                    id: format!("port-{}-{}", vl.id, v.id),
                    resource_handle: handle(
                        &format!("port-{}-{}", vl.network_id, v.compute_id),
                        "memory.Port",
                        vim,
                    ),
                    cp_instance_id: Some(format!("cp-{}-{}", vl.vld_id, v.id)),
                    cp_instance_type: Some(vnfm_types::CpInstanceType::VnfcCp),
                    vip_cp_instance_id: None,
                    trunk_resource_id: None,
                });
        }
        res.vnf_virtual_link_resource_info
            .push(VnfVirtualLinkResourceInfo {
                id: vl.id.clone(),
                vnf_virtual_link_desc_id: vl.vld_id.clone(),
                vnfd_id: Some(inv.vnfd_id.clone()),
                network_resource: handle(&vl.network_id, "memory.Network", vim),
                zone_id: None,
                reservation_id: None,
                vnf_link_ports: vl_ports.remove(&vl.id),
                metadata: None,
            });
    }
    for r in res.vnfc_resource_info.iter_mut() {
        let cps: Vec<VnfcCpInfo> = inv
            .virtual_links
            .iter()
            .map(|vl| VnfcCpInfo {
                id: format!("cp-{}-{}", vl.vld_id, r.id),
                cpd_id: vl.vld_id.clone(),
                vnf_ext_cp_id: None,
                cp_protocol_info: None,
                vnf_link_port_id: Some(format!("port-{}-{}", vl.id, r.id)),
                parent_cp_id: None,
                metadata: None,
            })
            .collect();
        let mut cps = cps;
        if let Some(v) = inv.vnfcs.iter().find(|v| v.id == r.id)
            && let Some(addr) = &v.address
        {
            for cpd in &v.address_cps {
                cps.push(VnfcCpInfo {
                    id: format!("cp-{cpd}-{}", r.id),
                    cpd_id: cpd.clone(),
                    vnf_ext_cp_id: None,
                    cp_protocol_info: Some(vec![CpProtocolInfo {
                        layer_protocol: LayerProtocol::IpOverEthernet,
                        ip_over_ethernet: Some(IpOverEthernetAddressInfo {
                            mac_address: None,
                            segmentation_id: None,
                            ip_addresses: Some(vec![IpAddressInfo {
                                ip_type: IpAddressType::Ipv4,
                                addresses: Some(vec![addr.clone()]),
                                is_dynamic: None,
                                address_range: None,
                                subnet_id: None,
                            }]),
                        }),
                        virtual_cp_address: None,
                    }]),
                    vnf_link_port_id: None,
                    parent_cp_id: None,
                    metadata: None,
                });
            }
        }
        r.vnfc_cp_info = (!cps.is_empty()).then_some(cps);
    }
    res.ext_cp_info = inv.ext_cps.clone();
    res.ext_virtual_link_info = inv.ext_virtual_links.clone();
    res
}

#[derive(Default)]
struct Changes {
    vnfcs: Vec<AffectedVnfc>,
    vls: Vec<AffectedVirtualLink>,
    storages: Vec<AffectedVirtualStorage>,
}

impl Changes {
    fn vnfc(&mut self, v: &MemVnfc, change: ChangeType, vim: &Option<String>) {
        let storage_ids: Vec<String> = v.storages.iter().map(|s| s.1.clone()).collect();
        self.vnfcs.push(AffectedVnfc {
            id: v.id.clone(),
            vdu_id: v.vdu_id.clone(),
            vnfd_id: None,
            change_type: change,
            compute_resource: handle(&v.compute_id, "memory.Compute", vim),
            resource_definition_id: None,
            zone_id: None,
            metadata: None,
            affected_vnfc_cp_ids: None,
            added_storage_resource_ids: (change == ChangeType::Added && !storage_ids.is_empty())
                .then(|| storage_ids.clone()),
            removed_storage_resource_ids: (change == ChangeType::Removed
                && !storage_ids.is_empty())
            .then(|| storage_ids.clone()),
        });
        if matches!(change, ChangeType::Added | ChangeType::Removed) {
            for (desc, sid, rid) in &v.storages {
                self.storages.push(AffectedVirtualStorage {
                    id: sid.clone(),
                    virtual_storage_desc_id: desc.clone(),
                    vnfd_id: None,
                    change_type: change,
                    storage_resource: handle(rid, "memory.Volume", vim),
                    resource_definition_id: None,
                    zone_id: None,
                    metadata: None,
                });
            }
        }
    }

    fn vl(&mut self, vl: &MemVirtualLink, change: ChangeType, vim: &Option<String>) {
        self.vls.push(AffectedVirtualLink {
            id: vl.id.clone(),
            vnf_virtual_link_desc_id: vl.vld_id.clone(),
            vnfd_id: None,
            change_type: change,
            network_resource: handle(&vl.network_id, "memory.Network", vim),
            vnf_link_port_ids: None,
            resource_definition_id: None,
            zone_id: None,
            metadata: None,
        });
    }

    fn into_resource_changes(self) -> ResourceChanges {
        ResourceChanges {
            affected_vnfcs: (!self.vnfcs.is_empty()).then_some(self.vnfcs),
            affected_virtual_links: (!self.vls.is_empty()).then_some(self.vls),
            affected_ext_link_ports: None,
            affected_virtual_storages: (!self.storages.is_empty()).then_some(self.storages),
        }
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

/// One hook call a [`RecordingMgmtDriver`] received.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRecord {
    /// The hook operation (e.g. `instantiate_end`).
    pub operation: String,
    /// The artifact name.
    pub artifact: String,
    /// The LCM operation.
    pub lcm_operation: LcmOperationType,
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The `error_handling_data` the call carried.
    pub error_handling_data: serde_json::Value,
    /// The VNFD id of the [`HookCall::new_package`] the call carried.
    pub new_vnfd_id: Option<String>,
    /// The error kind when the call failed.
    pub error: Option<&'static str>,
}

#[derive(Default)]
struct HookState {
    calls: Vec<HookRecord>,
    outcomes: BTreeMap<String, HookOutcome>,
    fail_next: Vec<(String, DriverError)>,
    fail_on_call: BTreeMap<usize, DriverError>,
    /// What [`MgmtDriver::observe`] answers, by artifact name (unsupported for the others).
    observations: BTreeMap<String, HookOutcome>,
    /// The artifacts asked through [`MgmtDriver::observe`], in order.
    observed: Vec<String>,
}

/// A management driver that records hook calls and answers with configured outcomes
/// (no change by default).
#[derive(Default)]
pub struct RecordingMgmtDriver {
    delay: Duration,
    state: Mutex<HookState>,
}

impl std::fmt::Debug for RecordingMgmtDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingMgmtDriver")
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl RecordingMgmtDriver {
    /// A driver whose hooks succeed with no change.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every call take `delay` (cut short by cancellation or the deadline).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Answers every successful call of hook `operation` with `outcome`.
    pub fn set_outcome(&self, operation: impl Into<String>, outcome: HookOutcome) {
        lock(&self.state).outcomes.insert(operation.into(), outcome);
    }

    /// Makes the next call of hook `operation` fail with `error`.
    pub fn fail_next(&self, operation: impl Into<String>, error: DriverError) {
        lock(&self.state).fail_next.push((operation.into(), error));
    }

    /// Makes the `n`-th call (1-based, counting every hook call) fail with `error`.
    pub fn fail_on_call(&self, n: usize, error: DriverError) {
        lock(&self.state).fail_on_call.insert(n, error);
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<HookRecord> {
        lock(&self.state).calls.clone()
    }

    /// The hook operations called so far, in order.
    pub fn operations(&self) -> Vec<String> {
        lock(&self.state)
            .calls
            .iter()
            .map(|c| c.operation.clone())
            .collect()
    }
}

#[async_trait]
impl MgmtDriver for RecordingMgmtDriver {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        let index = {
            let mut st = lock(&self.state);
            st.calls.push(HookRecord {
                operation: call.operation.clone(),
                artifact: call.artifact.name.clone(),
                lcm_operation: call.lcm_operation,
                op_occ_id: call.op_occ_id.clone(),
                error_handling_data: call.error_handling_data.clone(),
                new_vnfd_id: call
                    .new_package
                    .as_ref()
                    .map(|p| p.vnfd.descriptor_id.clone()),
                error: None,
            });
            st.calls.len() - 1
        };
        let what = format!("hook {}", call.operation);
        let result = match pause(self.delay, &call.control, &what).await {
            Err(e) => Err(e),
            Ok(()) => {
                let mut st = lock(&self.state);
                if let Some(e) = st.fail_on_call.remove(&(index + 1)) {
                    Err(e)
                } else if let Some(pos) =
                    st.fail_next.iter().position(|(o, _)| *o == call.operation)
                {
                    Err(st.fail_next.remove(pos).1)
                } else {
                    Ok(st
                        .outcomes
                        .get(&call.operation)
                        .cloned()
                        .unwrap_or_default())
                }
            }
        };
        if let Err(e) = &result {
            lock(&self.state).calls[index].error = Some(e.kind());
        }
        result
    }

    async fn observe(&self, call: &crate::ObserveCall) -> Result<HookOutcome, DriverError> {
        let mut st = lock(&self.state);
        st.observed.push(call.artifact.name.clone());
        st.observations
            .get(&call.artifact.name)
            .cloned()
            .ok_or_else(|| DriverError::unsupported("recording", "observe"))
    }
}

impl RecordingMgmtDriver {
    /// Makes artifact `artifact` observe: [`MgmtDriver::observe`] answers `outcome` for it
    /// (`None`: it no longer observes).
    pub fn set_observation(&self, artifact: &str, outcome: Option<HookOutcome>) {
        let mut st = lock(&self.state);
        match outcome {
            Some(o) => st.observations.insert(artifact.to_owned(), o),
            None => st.observations.remove(artifact),
        };
    }

    /// The artifacts asked through [`MgmtDriver::observe`] so far, in order.
    pub fn observed(&self) -> Vec<String> {
        lock(&self.state).observed.clone()
    }
}
