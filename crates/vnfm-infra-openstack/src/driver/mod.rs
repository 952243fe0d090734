//! [`OpenStackDriver`]: the [`InfraDriver`] for `ETSINFV.OPENSTACK_KEYSTONE.V_3` VIMs.
//!
//! One Heat stack per VNF instance, named `vnf-<instanceId>`. Every step first lets an action
//! that is still running on the stack finish (a step re-run after a crash finds it so), then:
//!
//! | step | what happens to the stack |
//! |---|---|
//! | instantiate | create from the BaseHOT (or the generated template) with the `nfv` parameter; update instead when it exists already |
//! | terminate | GRACEFUL: wait the graceful timeout first; then delete and wait until it is gone |
//! | scale, scale to level | VNFCs to remove (the newest of their VDU) are marked unhealthy in their autoscaling group, then `desired_capacity` is updated |
//! | scale with Tacker's `StandardUserData` | the templates are built again with one resource per VNFC (the highest indexes removed, the lowest unused added) and the stack updated with them ([`crate::userdata`]) |
//! | heal VNFCs | the servers are marked unhealthy with their VNFCs' volumes, then the stack is updated (Heat replaces them) |
//! | heal whole VNF | as a heal of every VNFC: networks and ports stay; with `additionalParams.all` true (Tacker's), the stack is deleted and created again from its template, files and parameters |
//! | change external connectivity | the `CP` part of `nfv` is rebuilt from the links in force and the stack updated |
//! | change flavour | update with the new flavour's template and counts |
//! | change package | update with the new package's template and files; when Neutron refuses to delete a subnet it replaces, the ports on that subnet move to the new one, and when a new server fails while the old one holds the VNFC's volumes, the old server is deleted through Nova; then the update runs again |
//! | rollbacks | instantiate: delete; scale: back to the recorded counts (VNFCs the scale added go first); external connectivity and package: the previous parameters / templates |
//! | operate | no stack change: the VNFCs' servers are started / stopped through Nova (`os-start`, `os-stop`) until `ACTIVE` / `SHUTOFF`; GRACEFUL stop waits the graceful timeout first |
//! | any step whose request names a user data class of the package | the class's method for the step builds the template, files and `nfv` (create), or what is merged over the stack's (updates), as in Tacker; what the driver does around them (images, marking VNFCs unhealthy, inventory, rollback records) stays (module `scripted`) |
//!
//! After each step the inventory is read back from the stack's resources
//! ([`crate::inventory`]) and `driver_state` records the stack and what it was made from
//! ([`DriverState`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOutcome, InfraRequest, InfraStep, InstanceResources,
    ResolvedVim, ResourceTarget, UserDataScripts,
};
use vnfm_types::{
    ChangeType, ExtManagedVirtualLinkData, ExtManagedVirtualLinkInfo, ExtVirtualLinkData,
    OperationParams, ResourceHandle, StopType, TerminationType, VnfOperationalState,
    VnfcResourceInfo,
};

use crate::config::{DriverConfig, VimSettings, seconds};
use crate::error::OpenStackError;
use crate::glance::Glance;
use crate::heat::{Heat, Stack, StackFields, StackRef, is_final};
use crate::hot::{self, Hot, NfvInputs};
use crate::inventory::{self, InventoryInputs, meta_key, meta_str};
use crate::keystone::{Session, sleep_within};
use crate::nova::{Nova, Power, Target};
use crate::userdata::UserData;

mod resources;
mod scripted;
mod stack;
mod subnets;
mod templates;

/// The `vimType` this driver serves.
pub const OPENSTACK_VIM_TYPE: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";

/// What the driver keeps in `driver_state` between steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverState {
    /// The stack id.
    pub stack_id: String,
    /// The stack name.
    pub stack_name: String,
    /// Key of the VIM connection the stack lives on.
    pub vim_connection_id: String,
    /// The flavour the stack is made for.
    pub flavour_id: String,
    /// The VNFD the templates come from.
    pub vnfd_id: String,
    /// Where the top template came from (`BaseHOT/...` or `generated`).
    pub hot_source: String,
    /// The top template last applied.
    pub template: Value,
    /// The files last applied.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The `nfv` parameter last applied.
    pub nfv: Value,
    /// The template and `nfv` convention (Tacker's user data class) the stack follows.
    #[serde(default)]
    pub user_data: UserData,
    /// What a change of package or external connectivity replaced, for its rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Box<Previous>>,
}

/// The stack contents before a change of package or of external connectivity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Previous {
    /// The operation occurrence that made the change.
    pub op_occ_id: String,
    /// The VNFD before.
    pub vnfd_id: String,
    /// Template source before.
    pub hot_source: String,
    /// The top template before.
    pub template: Value,
    /// The files before.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The `nfv` parameter before.
    pub nfv: Value,
    /// The template and `nfv` convention before.
    #[serde(default)]
    pub user_data: UserData,
    /// The external virtual links before.
    #[serde(default)]
    pub ext_virtual_links: Vec<ExtVirtualLinkData>,
}

/// The OpenStack infrastructure driver.
pub struct OpenStackDriver {
    config: DriverConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Runs the user data classes of packages ([`UserData::Script`]), when given.
    user_data_scripts: Option<Arc<dyn UserDataScripts>>,
}

impl std::fmt::Debug for OpenStackDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenStackDriver")
            .field("config", &self.config)
            .field("user_data_scripts", &self.user_data_scripts.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for OpenStackDriver {
    fn default() -> Self {
        Self::new(DriverConfig::default())
    }
}

/// Most Keystone sessions kept (one per distinct VIM connection).
const MAX_SESSIONS: usize = 256;

impl OpenStackDriver {
    /// A driver with `config`.
    pub fn new(config: DriverConfig) -> Self {
        OpenStackDriver {
            config,
            sessions: Mutex::new(HashMap::new()),
            user_data_scripts: None,
        }
    }

    /// The driver, running the user data classes packages carry (Tacker's
    /// `lcm-operation-user-data` / `lcm-operation-user-data-class` naming a class other than
    /// `DefaultUserData` and `StandardUserData`) with `scripts`, e.g. the script management
    /// driver of `vnfm-mgmt-script`. Without it, such a request is refused.
    pub fn with_user_data_scripts(mut self, scripts: Arc<dyn UserDataScripts>) -> Self {
        self.user_data_scripts = Some(scripts);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &DriverConfig {
        &self.config
    }

    /// The name of the stack of instance `instance_id`.
    pub fn stack_name(&self, instance_id: &str) -> String {
        format!("{}{instance_id}", self.config.stack_name_prefix)
    }

    /// The Keystone session of `vim` (shared by every step on an equal connection, so the
    /// token is reused until it expires).
    pub fn session(&self, vim: &ResolvedVim) -> Result<Arc<Session>, DriverError> {
        let settings = VimSettings::from_vim(vim)?;
        let key = settings.session_key();
        let mut map = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = map.get(&key) {
            return Ok(s.clone());
        }
        if map.len() >= MAX_SESSIONS {
            map.clear();
        }
        let s = Arc::new(Session::new(vim, settings, &self.config)?);
        map.insert(key, s.clone());
        Ok(s)
    }

    fn context<'r>(&self, req: &'r InfraRequest) -> Result<Ctx<'r>, DriverError> {
        let state: Option<DriverState> = serde_json::from_value(req.driver_state.clone()).ok();
        let vim = state
            .as_ref()
            .and_then(|s| {
                req.vims
                    .iter()
                    .find(|v| v.connection_id == s.vim_connection_id)
            })
            .filter(|v| v.vim_type() == OPENSTACK_VIM_TYPE)
            .or_else(|| req.vim_of_type(&[OPENSTACK_VIM_TYPE]))
            .ok_or_else(|| {
                DriverError::invalid_input(format!(
                    "instance {} has no VIM connection of type {OPENSTACK_VIM_TYPE}",
                    req.instance.id
                ))
            })?;
        let session = self.session(vim)?;
        let timeout = req
            .additional_params()
            .and_then(|p| p.get("stackTimeoutSeconds"))
            .and_then(seconds)
            .or(session.settings().stack_timeout)
            .unwrap_or(self.config.stack_timeout);
        Ok(Ctx {
            req,
            session,
            vim_connection_id: vim.connection_id.clone(),
            stack_name: self.stack_name(req.instance.id.as_str()),
            state,
            timeout,
            scripts: self.user_data_scripts.clone(),
        })
    }
}

/// One step's context.
struct Ctx<'r> {
    req: &'r InfraRequest,
    session: Arc<Session>,
    vim_connection_id: String,
    stack_name: String,
    state: Option<DriverState>,
    timeout: Duration,
    scripts: Option<Arc<dyn UserDataScripts>>,
}

impl Ctx<'_> {
    fn timeout_mins(&self) -> u64 {
        self.timeout.as_secs().div_ceil(60).max(1)
    }

    fn fields(&self, cfg: &DriverConfig, hot: Option<&Hot>, nfv: &Value) -> StackFields {
        let mut parameters = Map::new();
        parameters.insert("nfv".into(), nfv.clone());
        let mut files = cfg.environment_files.clone();
        if let Some(h) = hot {
            files.extend(h.files.clone());
        }
        StackFields {
            template: hot.map(|h| h.template.clone()),
            files,
            parameters,
            environment: cfg.environment.clone(),
            timeout_mins: Some(self.timeout_mins()),
            rollback_on_failure: None,
        }
    }

    fn additional_nfv(&self) -> Option<&Value> {
        self.req.additional_params().and_then(|p| p.get("nfv"))
    }

    /// The convention of this step: the one the request names (for a rollback: the request
    /// of the operation rolled back), else `StandardUserData` when the stack was made with
    /// it, else `DefaultUserData`. A class of the package is run only for a request that
    /// names it, as Tacker reads the class from the request alone; one the driver has no
    /// runner for is refused.
    fn user_data(&self) -> Result<UserData, DriverError> {
        let named = UserData::from_params(self.req.additional_params())?;
        let user_data = named.unwrap_or_else(|| match self.state.as_ref().map(|s| &s.user_data) {
            Some(UserData::Standard) => UserData::Standard,
            _ => UserData::Default,
        });
        Ok(user_data.runnable(self.scripts.is_some())?)
    }

    /// The VNFC indexes per VDU the recorded template holds (Tacker's `StandardUserData`).
    fn recorded_indexes(&self, flavour: &Flavour) -> BTreeMap<String, BTreeSet<u32>> {
        self.state.as_ref().map_or_else(BTreeMap::new, |s| {
            crate::userdata::indexes_in(&s.template, &vdu_ids(flavour))
        })
    }
}

fn vdu_ids(flavour: &Flavour) -> Vec<String> {
    flavour.vdus.iter().map(|v| v.id.clone()).collect()
}

/// The `nfv` parameter of `user_data` for templates that read `paths` (a class of the
/// package builds its own: the default convention's is built for it).
fn build_nfv(user_data: &UserData, paths: &[Vec<hot::Seg>], inputs: &NfvInputs<'_>) -> Value {
    match user_data {
        UserData::Standard => crate::userdata::nfv(paths, inputs),
        UserData::Default | UserData::Script { .. } => hot::build_nfv(paths, inputs),
    }
}

/// The flavour `id` of the request's VNFD.
fn flavour<'a>(req: &'a InfraRequest, id: &str) -> Result<&'a Flavour, DriverError> {
    req.vnfd.flavour(id).ok_or_else(|| {
        DriverError::invalid_input(format!(
            "the VNFD {} has no flavour `{id}`",
            req.vnfd.descriptor_id
        ))
    })
}

/// The flavour's templates: the package's BaseHOT, else generated from the VNFD; with
/// `vnfcs` (Tacker's `StandardUserData`), each VDU's resource copied once per VNFC index.
fn templates(
    cfg: &DriverConfig,
    req: &InfraRequest,
    flavour: &Flavour,
    managed: &[ExtManagedVirtualLinkData],
    vnfcs: Option<&BTreeMap<String, BTreeSet<u32>>>,
) -> Result<Hot, DriverError> {
    let mut h = match hot::load_base_hot(&*req.artifacts, &req.vnfd, &flavour.id, cfg)? {
        Some(h) => h,
        None => crate::generate::generate(&req.vnfd.descriptor_id, flavour)?,
    };
    if let Some(indexes) = vnfcs {
        crate::userdata::expand(&mut h.template, &vdu_ids(flavour), indexes);
    }
    hot::apply_ext_managed_vls(&mut h.template, managed);
    crate::depends::order_after_subnets(&mut h.template);
    let vdus: BTreeSet<String> = vdu_ids(flavour).into_iter().collect();
    crate::capacity::capacity_from_nfv(&mut h.template, &h.files, &vdus);
    Ok(h)
}

/// `get_param` paths under `nfv` of the top template and of nested templates that declare it.
fn paths_of(template: &Value, files: &BTreeMap<String, String>) -> Vec<Vec<hot::Seg>> {
    let nested: Vec<Value> = files
        .values()
        .filter(|t| t.contains("nfv"))
        .filter_map(|t| serde_saphyr::from_str::<Value>(t).ok())
        .collect();
    hot::nfv_paths(std::iter::once(template).chain(nested.iter()))
}

fn ext_links_of_request(req: &InfraRequest) -> Option<&[ExtVirtualLinkData]> {
    match &req.request {
        OperationParams::Instantiate(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_virtual_links.as_deref(),
        OperationParams::ChangeExtConn(r) => Some(&r.ext_virtual_links),
        OperationParams::ChangeVnfpkg(r) => r.ext_virtual_links.as_deref(),
        _ => None,
    }
}

fn managed_of_request(req: &InfraRequest) -> Option<&[ExtManagedVirtualLinkData]> {
    match &req.request {
        OperationParams::Instantiate(r) => r.ext_managed_virtual_links.as_deref(),
        OperationParams::ChangeFlavour(r) => r.ext_managed_virtual_links.as_deref(),
        OperationParams::ChangeVnfpkg(r) => r.ext_managed_virtual_links.as_deref(),
        _ => None,
    }
}

fn managed_info(
    links: &[ExtManagedVirtualLinkData],
    vnfd_id: &vnfm_types::VnfdId,
    vim: &str,
) -> Vec<ExtManagedVirtualLinkInfo> {
    links
        .iter()
        .map(|l| {
            let mut h = ResourceHandle::new(l.resource_id.clone());
            h.vim_connection_id = l.vim_connection_id.clone().or_else(|| Some(vim.into()));
            h.resource_provider_id = l.resource_provider_id.clone();
            ExtManagedVirtualLinkInfo {
                id: l.id.clone(),
                vnf_virtual_link_desc_id: l.vnf_virtual_link_desc_id.clone(),
                vnfd_id: Some(vnfd_id.clone()),
                network_resource: h,
                vnf_link_ports: None,
                ext_managed_multisite_virtual_link_id: l
                    .ext_managed_multisite_virtual_link_id
                    .clone(),
            }
        })
        .collect()
}

fn managed_as_data(info: &[ExtManagedVirtualLinkInfo]) -> Vec<ExtManagedVirtualLinkData> {
    info.iter()
        .map(|m| ExtManagedVirtualLinkData {
            id: m.id.clone(),
            vnf_virtual_link_desc_id: m.vnf_virtual_link_desc_id.clone(),
            vim_connection_id: m.network_resource.vim_connection_id.clone(),
            resource_provider_id: m.network_resource.resource_provider_id.clone(),
            resource_id: m.network_resource.resource_id.clone(),
            vnf_link_port: None,
            ext_managed_multisite_virtual_link_id: m.ext_managed_multisite_virtual_link_id.clone(),
        })
        .collect()
}

/// Instance counts per VDU of `resources`.
fn counts(resources: &InstanceResources) -> BTreeMap<String, u32> {
    let mut c: BTreeMap<String, u32> = BTreeMap::new();
    for v in &resources.vnfc_resource_info {
        *c.entry(v.vdu_id.clone()).or_default() += 1;
    }
    c
}

#[async_trait]
impl InfraDriver for OpenStackDriver {
    fn name(&self) -> &str {
        "openstack"
    }

    fn vim_types(&self) -> &[&str] {
        &[OPENSTACK_VIM_TYPE]
    }

    fn vim_kind(&self) -> Option<std::sync::Arc<dyn vnfm_driver_api::VimKind>> {
        Some(std::sync::Arc::new(crate::vim_kind::OpenStackVimKind))
    }

    async fn observe(
        &self,
        req: &vnfm_driver_api::ObserveRequest,
    ) -> Result<Vec<vnfm_driver_api::ObservedCondition>, DriverError> {
        self.observe_stack(req).await
    }

    /// Refuses a request naming a user data class the driver cannot run
    /// ([`UserData::from_params`], [`UserData::runnable`]), before the occurrence starts.
    fn check_request(
        &self,
        _step: &InfraStep,
        request: &OperationParams,
    ) -> Result<(), DriverError> {
        if let Some(named) = UserData::from_params(vnfm_driver_api::additional_params_of(request))?
        {
            named.runnable(self.user_data_scripts.is_some())?;
        }
        Ok(())
    }

    async fn instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::Instantiate { target } = &req.step else {
            return Err(wrong_step("instantiate", req));
        };
        self.do_instantiate(req, target).await
    }

    async fn terminate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::Terminate {
            termination_type,
            graceful_timeout_seconds,
        } = &req.step
        else {
            return Err(wrong_step("terminate", req));
        };
        if *termination_type == TerminationType::Graceful {
            // The VNF's own shutdown (terminate_start hooks, the VNF reacting to it) gets the
            // graceful timeout before its resources go.
            let grace = Duration::from_secs(u64::from(graceful_timeout_seconds.unwrap_or(0)));
            sleep_within(&req.control, grace, "graceful termination period").await?;
        }
        self.delete_stack(req).await
    }

    async fn scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::Scale { target, .. } = &req.step else {
            return Err(wrong_step("scale", req));
        };
        self.rescale(req, target).await
    }

    async fn scale_to_level(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::ScaleToLevel { target, .. } = &req.step else {
            return Err(wrong_step("scale_to_level", req));
        };
        self.rescale(req, target).await
    }

    async fn heal(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::Heal { scope } = &req.step else {
            return Err(wrong_step("heal", req));
        };
        self.do_heal(req, scope).await
    }

    async fn operate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::Operate {
            change_state_to,
            stop_type,
            graceful_stop_timeout_seconds,
            vnfc_resource_ids,
        } = &req.step
        else {
            return Err(wrong_step("operate", req));
        };
        // The VNF's own shutdown (operate_start hooks taking it out of service) gets the
        // graceful timeout before the servers stop.
        let grace = (*change_state_to == VnfOperationalState::Stopped
            && *stop_type == Some(StopType::Graceful))
        .then(|| Duration::from_secs(u64::from(graceful_stop_timeout_seconds.unwrap_or(0))));
        self.do_operate(req, *change_state_to, grace, vnfc_resource_ids)
            .await
    }

    async fn change_ext_conn(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let OperationParams::ChangeExtConn(r) = &req.request else {
            return Err(wrong_step("change_ext_conn", req));
        };
        let current = Self::recorded_links(req);
        let links = crate::ext_links::overlay_links(&current, &r.ext_virtual_links);
        let state: Option<DriverState> = serde_json::from_value(req.driver_state.clone()).ok();
        let previous = Self::previous_of(state.as_ref(), req);
        self.relink(req, links, previous, None).await
    }

    async fn rollback_change_ext_conn(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        let restore = Self::restore_point(req);
        let links = restore
            .as_ref()
            .map(|p| p.ext_virtual_links.clone())
            .unwrap_or_else(|| Self::recorded_links(req));
        self.relink(req, links, None, restore.map(|p| p.nfv)).await
    }

    async fn change_flavour(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::ChangeFlavour { target, .. } = &req.step else {
            return Err(wrong_step("change_flavour", req));
        };
        let flavour = flavour(req, &target.flavour_id)?;
        self.replace_templates(
            req,
            flavour,
            &target.vdu_instances,
            &req.instance.vnfd_id,
            false,
        )
        .await
    }

    async fn change_vnfpkg(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::ChangeVnfpkg { to_vnfd_id, .. } = &req.step else {
            return Err(wrong_step("change_vnfpkg", req));
        };
        let flavour = flavour(req, &req.flavour_id)?;
        let capacity = counts(&inventory::recorded(&req.instance));
        self.replace_templates(req, flavour, &capacity, to_vnfd_id, true)
            .await
    }

    async fn rollback_change_vnfpkg(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        let InfraStep::RollbackChangeVnfpkg { restore_vnfd_id } = &req.step else {
            return Err(wrong_step("rollback_change_vnfpkg", req));
        };
        // The stack is made again for the restored package: its flavour and, for a user data
        // class, its files (Tacker's `change_vnfpkg_rollback` builds from them).
        let restored;
        let req = match &req.restored_package {
            Some(package) => {
                restored = InfraRequest {
                    vnfd: package.vnfd.clone(),
                    artifacts: package.files.clone(),
                    ..req.clone()
                };
                &restored
            }
            None => req,
        };
        let Some(prev) = Self::restore_point(req) else {
            return Err(DriverError::invalid_input(format!(
                "cannot roll back the package change of instance {}: the driver state does not hold the previous templates",
                req.instance.id
            )));
        };
        let flavour = flavour(req, &req.flavour_id)?;
        let ctx = self.context(req)?;
        let (hot, nfv, parameters) = match ctx.user_data()? {
            // The class's `change_vnfpkg_rollback`, as Tacker runs it.
            UserData::Script { file, class } => {
                self.scripted_templates(&ctx, flavour, (&file, &class), &BTreeMap::new())
                    .await?
            }
            _ => {
                let hot = Hot {
                    source: prev.hot_source.clone(),
                    template: prev.template.clone(),
                    files: prev.files.clone(),
                };
                (hot, prev.nfv.clone(), Map::new())
            }
        };
        self.retemplate(
            req,
            flavour,
            hot,
            nfv,
            prev.ext_virtual_links.clone(),
            Self::recorded_managed(req),
            restore_vnfd_id.clone(),
            (prev.user_data, None),
            parameters,
        )
        .await
    }

    async fn rollback_instantiate(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        if !matches!(req.step, InfraStep::RollbackInstantiate) {
            return Err(wrong_step("rollback_instantiate", req));
        }
        self.delete_stack(req).await
    }

    async fn rollback_scale(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let InfraStep::RollbackScale { restore } = &req.step else {
            return Err(wrong_step("rollback_scale", req));
        };
        self.rescale(req, restore).await
    }
}

fn wrong_step(method: &str, req: &InfraRequest) -> DriverError {
    DriverError::invalid_input(format!(
        "the openstack driver's {method} method was called with a {} step",
        req.step.operation()
    ))
}
