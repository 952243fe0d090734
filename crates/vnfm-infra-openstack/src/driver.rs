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
//! | heal VNFCs | the servers are marked unhealthy, then the stack is updated (Heat replaces them) |
//! | heal whole VNF | the stack is deleted and created again from its template, files and parameters |
//! | change external connectivity | the `CP` part of `nfv` is rebuilt from the links in force and the stack updated |
//! | change flavour | update with the new flavour's template and counts |
//! | change package | update with the new package's template and files |
//! | rollbacks | instantiate: delete; scale: back to the recorded counts (VNFCs the scale added go first); external connectivity and package: the previous parameters / templates |
//! | operate | no stack change: the VNFCs' servers are started / stopped through Nova (`os-start`, `os-stop`) until `ACTIVE` / `SHUTOFF`; GRACEFUL stop waits the graceful timeout first |
//!
//! After each step the inventory is read back from the stack's resources
//! ([`crate::inventory`]) and `driver_state` records the stack and what it was made from
//! ([`DriverState`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use vnfm_descriptor::Flavour;
use vnfm_driver_api::{
    DriverError, HealScope, InfraDriver, InfraOutcome, InfraRequest, InfraStep, InstanceResources,
    ResolvedVim, ResourceTarget,
};
use vnfm_types::{
    ChangeType, ExtManagedVirtualLinkData, ExtManagedVirtualLinkInfo, ExtVirtualLinkData,
    OperationParams, ResourceHandle, StopType, TerminationType, VnfOperationalState,
    VnfcResourceInfo,
};

use crate::config::{DriverConfig, VimSettings, seconds};
use crate::error::OpenStackError;
use crate::heat::{Heat, Stack, StackFields, StackRef, is_final};
use crate::hot::{self, Hot, NfvInputs};
use crate::inventory::{self, InventoryInputs};
use crate::keystone::{Session, sleep_within};
use crate::nova::{Nova, Power, Target};

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
    /// The external virtual links before.
    #[serde(default)]
    pub ext_virtual_links: Vec<ExtVirtualLinkData>,
}

/// The OpenStack infrastructure driver.
pub struct OpenStackDriver {
    config: DriverConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl std::fmt::Debug for OpenStackDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenStackDriver")
            .field("config", &self.config)
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
        }
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

/// The flavour's templates: the package's BaseHOT, else generated from the VNFD.
fn templates(
    cfg: &DriverConfig,
    req: &InfraRequest,
    flavour: &Flavour,
    managed: &[ExtManagedVirtualLinkData],
) -> Result<Hot, DriverError> {
    let mut h = match hot::load_base_hot(&*req.artifacts, &req.vnfd, &flavour.id, cfg)? {
        Some(h) => h,
        None => crate::generate::generate(&req.vnfd.descriptor_id, flavour)?,
    };
    hot::apply_ext_managed_vls(&mut h.template, managed);
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

fn meta_str<'a>(v: &'a VnfcResourceInfo, key: &str) -> Option<&'a str> {
    v.metadata.as_ref()?.get(key)?.as_str()
}

impl OpenStackDriver {
    /// Waits for an action still running on the stack (a step re-run after a crash) and
    /// returns the stack as it then is.
    async fn settle(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: Stack,
    ) -> Result<Option<Stack>, DriverError> {
        let r = stack.reference();
        let started = std::time::Instant::now();
        let mut delay = self.config.poll.initial;
        let mut current = Some(stack);
        loop {
            let what = format!("waiting for the running action on Heat stack {}", r.name);
            match current.take() {
                None => return Ok(None),
                Some(s) if s.stack_status == "DELETE_COMPLETE" => return Ok(None),
                Some(s) if is_final(&s.stack_status) => {
                    // A failed stack can still have nested stacks at work (convergence goes on
                    // with the siblings of the resource that failed); an update now would
                    // cancel them and fail on the cancellation.
                    let busy = s.stack_status.ends_with("_FAILED")
                        && heat
                            .resources(&r, self.config.nested_depth)
                            .await?
                            .iter()
                            .any(|res| res.resource_status.ends_with("_IN_PROGRESS"));
                    if !busy {
                        return Ok(Some(s));
                    }
                    if started.elapsed() >= ctx.timeout {
                        return Err(OpenStackError::StackTimeout {
                            stack: r.name.clone(),
                            expected: "the end of the nested actions".into(),
                            last_status: s.stack_status,
                            waited: started.elapsed(),
                        }
                        .into());
                    }
                }
                Some(s) if started.elapsed() >= ctx.timeout => {
                    return Err(OpenStackError::StackTimeout {
                        stack: r.name.clone(),
                        expected: "the end of the running action".into(),
                        last_status: s.stack_status,
                        waited: started.elapsed(),
                    }
                    .into());
                }
                Some(_) => {}
            }
            sleep_within(&ctx.req.control, delay, &what).await?;
            delay = self.config.poll.next(delay);
            current = heat.show(&r).await?;
        }
    }

    /// The instance's stack, settled; `NoStack` when it does not exist.
    async fn existing(&self, heat: &Heat<'_>, ctx: &Ctx<'_>) -> Result<Stack, DriverError> {
        let found = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(heat, ctx, s).await?,
            None => None,
        };
        found.ok_or_else(|| {
            OpenStackError::NoStack {
                stack: ctx.stack_name.clone(),
                instance: ctx.req.instance.id.to_string(),
            }
            .into()
        })
    }

    /// Updates the stack and waits for the update: with `PATCH` semantics (parameters merge,
    /// the template stays unless given), or, when `replace`, with the complete new definition.
    async fn update_and_wait(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        fields: &StackFields,
    ) -> Result<Stack, DriverError> {
        let r = stack.reference();
        if fields.template.is_some() {
            heat.replace(&r, fields).await?;
        } else {
            heat.update(&r, fields).await?;
        }
        let s = heat.wait(&r, "UPDATE", Some(stack), ctx.timeout).await?;
        s.ok_or_else(|| {
            OpenStackError::NoStack {
                stack: r.name.clone(),
                instance: ctx.req.instance.id.to_string(),
            }
            .into()
        })
    }

    /// Reads the inventory back and builds the outcome.
    #[allow(clippy::too_many_arguments)]
    async fn outcome(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        flavour: &Flavour,
        ext_links: &[ExtVirtualLinkData],
        managed: &[ExtManagedVirtualLinkInfo],
        vnfd_id: &vnfm_types::VnfdId,
        state: DriverState,
    ) -> Result<InfraOutcome, DriverError> {
        let resources = heat
            .resources(&stack.reference(), self.config.nested_depth)
            .await?;
        let before = inventory::recorded(&ctx.req.instance);
        let states: BTreeMap<String, VnfOperationalState> = before
            .vnfc_info
            .iter()
            .map(|v| (v.id.clone(), v.vnfc_state))
            .collect();
        let default_state = ctx
            .req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.vnf_state)
            .unwrap_or(VnfOperationalState::Started);
        let after = inventory::inventory(
            &resources,
            &InventoryInputs {
                flavour,
                vnfd_id,
                vim_connection_id: &ctx.vim_connection_id,
                ext_virtual_links: ext_links,
                ext_managed_virtual_links: managed,
                vnfc_states: &states,
                default_state,
            },
            &self.config,
        );
        let resource_changes = inventory::changes(&before, &after);
        Ok(InfraOutcome {
            resources: after,
            resource_changes,
            vnf_state: None,
            driver_state: serde_json::to_value(&state).unwrap_or(Value::Null),
        })
    }

    fn recorded_links(req: &InfraRequest) -> Vec<ExtVirtualLinkData> {
        let info = inventory::recorded(&req.instance);
        hot::links_from_info(&info.ext_virtual_link_info)
    }

    fn recorded_managed(req: &InfraRequest) -> Vec<ExtManagedVirtualLinkInfo> {
        inventory::recorded(&req.instance).ext_managed_virtual_link_info
    }

    async fn do_instantiate(
        &self,
        req: &InfraRequest,
        target: &ResourceTarget,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &target.flavour_id)?;
        if req
            .additional_params()
            .is_some_and(|p| p.contains_key("lcm-operation-user-data"))
        {
            tracing::warn!(
                instance = %req.instance.id,
                "additionalParams names a Tacker user data script; it is not run: the default nfv \
                 convention applies (set values through additionalParams.nfv)"
            );
        }
        let managed_req = managed_of_request(req).unwrap_or_default();
        let hot = templates(&self.config, req, flavour, managed_req)?;
        let links = ext_links_of_request(req).unwrap_or_default().to_vec();
        let nfv = hot::build_nfv(
            &paths_of(&hot.template, &hot.files),
            &NfvInputs {
                flavour,
                capacity: Some(&target.vdu_instances),
                ext_virtual_links: &links,
                additional: ctx.additional_nfv(),
                grant: req.grant.as_deref(),
            },
        );
        let fields = ctx.fields(&self.config, Some(&hot), &nfv);
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let existing = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(&heat, &ctx, s).await?,
            None => None,
        };
        let stack = match existing {
            None => {
                let r = heat.create(&ctx.stack_name, &fields).await?;
                heat.wait(&r, "CREATE", None, ctx.timeout)
                    .await?
                    .ok_or_else(|| OpenStackError::NoStack {
                        stack: r.name.clone(),
                        instance: req.instance.id.to_string(),
                    })?
            }
            // A re-run step: bring the existing stack to what this request asks for.
            Some(s) => self.update_and_wait(&heat, &ctx, &s, &fields).await?,
        };
        let managed = managed_info(managed_req, &req.instance.vnfd_id, &ctx.vim_connection_id);
        let state = DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: req.vnfd.descriptor_id.clone(),
            hot_source: hot.source.clone(),
            template: hot.template.clone(),
            files: hot.files.clone(),
            nfv,
            previous: None,
        };
        self.outcome(
            &heat,
            &ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    async fn delete_stack(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(&heat, &ctx, s).await?,
            None => None,
        };
        if let Some(s) = stack {
            let r = s.reference();
            heat.delete(&r).await?;
            heat.wait(&r, "DELETE", None, ctx.timeout).await?;
        }
        let before = inventory::recorded(&req.instance);
        Ok(InfraOutcome {
            resource_changes: inventory::changes(&before, &InstanceResources::default()),
            resources: InstanceResources::default(),
            vnf_state: None,
            driver_state: Value::Null,
        })
    }

    /// Brings the VNFC counts to `target` (scale, scale to level, rollback of a scale).
    async fn rescale(
        &self,
        req: &InfraRequest,
        target: &ResourceTarget,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &target.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let r = stack.reference();
        let template = heat.template(&r).await?;
        let files = ctx
            .state
            .as_ref()
            .map(|s| s.files.clone())
            .unwrap_or_default();
        let scalable = hot::scalable_vdus(&paths_of(&template, &files));
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let live = inventory::inventory(
            &heat.resources(&r, self.config.nested_depth).await?,
            &InventoryInputs {
                flavour,
                vnfd_id: &req.instance.vnfd_id,
                vim_connection_id: &ctx.vim_connection_id,
                ext_virtual_links: &links,
                ext_managed_virtual_links: &managed,
                vnfc_states: &BTreeMap::new(),
                default_state: VnfOperationalState::Started,
            },
            &self.config,
        );
        let recorded = inventory::recorded(&req.instance);
        let have = counts(&live);
        let mut patch = Map::new();
        let mut changed = false;
        for vdu in &flavour.vdus {
            let want = target.instances_of(&vdu.id);
            let now = have.get(&vdu.id).copied().unwrap_or(0);
            if want == now && !scalable.contains(&vdu.id) {
                continue;
            }
            if !scalable.contains(&vdu.id) {
                return Err(DriverError::invalid_input(format!(
                    "VDU {} cannot go from {now} to {want} instance(s): the stack's template sets no `desired_capacity` for it (get_param [nfv, VDU, {}, desired_capacity] in an OS::Heat::AutoScalingGroup)",
                    vdu.id, vdu.id
                )));
            }
            changed |= want != now;
            if want < now {
                // VNFCs a scale-out added that the instance never recorded go first (rollback),
                // then the newest.
                let mut candidates: Vec<&VnfcResourceInfo> = live
                    .vnfc_resource_info
                    .iter()
                    .filter(|v| v.vdu_id == vdu.id)
                    .collect();
                candidates.sort_by_key(|v| {
                    let known = recorded.vnfc_resource_info.iter().any(|o| o.id == v.id);
                    (!known, meta_str(v, "creationTime").map(str::to_string))
                });
                let remove = now - want;
                for v in candidates.iter().rev().take(remove as usize) {
                    let (Some(pid), Some(pname), Some(member)) = (
                        meta_str(v, "parentStackId"),
                        meta_str(v, "parentStackName"),
                        meta_str(v, "parentResourceName"),
                    ) else {
                        return Err(DriverError::invalid_input(format!(
                            "cannot remove VNFC {} of VDU {}: it is not a member of an OS::Heat::AutoScalingGroup",
                            v.id, vdu.id
                        )));
                    };
                    let group = StackRef {
                        name: pname.to_string(),
                        id: pid.to_string(),
                    };
                    heat.mark_unhealthy(
                        &group,
                        member,
                        &format!("scale-in by VNF LCM operation {}", req.op_occ_id),
                    )
                    .await?;
                }
            }
            patch.insert(vdu.id.clone(), json!({ "desired_capacity": want }));
        }
        let mut nfv = stack.nfv();
        json_patch::merge(&mut nfv, &json!({ "VDU": patch }));
        let stack = if changed || stack.stack_status.ends_with("_FAILED") {
            let fields = ctx.fields(&self.config, None, &nfv);
            self.update_and_wait(&heat, &ctx, &stack, &fields).await?
        } else {
            stack
        };
        let state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
        self.outcome(
            &heat,
            &ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    /// The driver state after a step that kept the templates.
    fn state_after(
        &self,
        ctx: &Ctx<'_>,
        req: &InfraRequest,
        stack: &Stack,
        flavour: &Flavour,
        nfv: Value,
        previous: Option<Previous>,
    ) -> DriverState {
        let base = ctx.state.clone();
        DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: base
                .as_ref()
                .map(|b| b.vnfd_id.clone())
                .unwrap_or_else(|| req.instance.vnfd_id.to_string()),
            hot_source: base
                .as_ref()
                .map(|b| b.hot_source.clone())
                .unwrap_or_else(|| "unknown".into()),
            template: base
                .as_ref()
                .map(|b| b.template.clone())
                .unwrap_or(Value::Null),
            files: base.map(|b| b.files).unwrap_or_default(),
            nfv,
            previous: previous.map(Box::new),
        }
    }

    async fn do_heal(
        &self,
        req: &InfraRequest,
        scope: &HealScope,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &req.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let r = stack.reference();
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let nfv = stack.nfv();
        let stack = match scope {
            HealScope::WholeVnf => {
                // Re-create: the same template, files and parameters on a new stack.
                let template = heat.template(&r).await?;
                let files = heat.files(&r).await?;
                heat.delete(&r).await?;
                heat.wait(&r, "DELETE", None, ctx.timeout).await?;
                let mut fields = ctx.fields(&self.config, None, &nfv);
                fields.template = Some(template);
                fields.files.extend(files);
                let nr = heat.create(&ctx.stack_name, &fields).await?;
                heat.wait(&nr, "CREATE", None, ctx.timeout)
                    .await?
                    .ok_or_else(|| OpenStackError::NoStack {
                        stack: nr.name.clone(),
                        instance: req.instance.id.to_string(),
                    })?
            }
            HealScope::Vnfcs { vnfcs } => {
                let live = inventory::inventory(
                    &heat.resources(&r, self.config.nested_depth).await?,
                    &InventoryInputs {
                        flavour,
                        vnfd_id: &req.instance.vnfd_id,
                        vim_connection_id: &ctx.vim_connection_id,
                        ext_virtual_links: &links,
                        ext_managed_virtual_links: &managed,
                        vnfc_states: &BTreeMap::new(),
                        default_state: VnfOperationalState::Started,
                    },
                    &self.config,
                );
                for h in vnfcs {
                    let v = live
                        .vnfc_resource_info
                        .iter()
                        .find(|v| v.id == h.vnfc_resource_id)
                        .ok_or_else(|| {
                            DriverError::invalid_input(format!(
                                "cannot heal VNFC {} (VDU {}): stack {} has no such server",
                                h.vnfc_resource_id, h.vdu_id, ctx.stack_name
                            ))
                        })?;
                    let (Some(sid), Some(sname), Some(res)) = (
                        meta_str(v, "stackId"),
                        meta_str(v, "stackName"),
                        meta_str(v, "resourceName"),
                    ) else {
                        continue;
                    };
                    heat.mark_unhealthy(
                        &StackRef {
                            name: sname.to_string(),
                            id: sid.to_string(),
                        },
                        res,
                        &format!("heal by VNF LCM operation {}", req.op_occ_id),
                    )
                    .await?;
                }
                let fields = ctx.fields(&self.config, None, &nfv);
                self.update_and_wait(&heat, &ctx, &stack, &fields).await?
            }
        };
        let state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
        self.outcome(
            &heat,
            &ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    /// Starts or stops the servers of the VNFCs `vnfc_ids` (every VNFC when empty) through
    /// Nova and waits until they are `ACTIVE` / `SHUTOFF`; `grace` is waited first when there
    /// is something to stop.
    async fn do_operate(
        &self,
        req: &InfraRequest,
        to: VnfOperationalState,
        grace: Option<Duration>,
        vnfc_ids: &[String],
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let deadline = std::time::Instant::now() + ctx.timeout;
        let flavour = flavour(req, &req.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let before = inventory::recorded(&req.instance);
        let states: BTreeMap<String, VnfOperationalState> = before
            .vnfc_info
            .iter()
            .map(|v| (v.id.clone(), v.vnfc_state))
            .collect();
        let default_state = req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.vnf_state)
            .unwrap_or(VnfOperationalState::Started);
        let resources = heat
            .resources(&stack.reference(), self.config.nested_depth)
            .await?;
        let inputs = |states| InventoryInputs {
            flavour,
            vnfd_id: &req.instance.vnfd_id,
            vim_connection_id: &ctx.vim_connection_id,
            ext_virtual_links: &links,
            ext_managed_virtual_links: &managed,
            vnfc_states: states,
            default_state,
        };
        let live = inventory::inventory(&resources, &inputs(&states), &self.config);
        let targets: Vec<&VnfcResourceInfo> = if vnfc_ids.is_empty() {
            live.vnfc_resource_info.iter().collect()
        } else {
            vnfc_ids
                .iter()
                .map(|id| {
                    live.vnfc_resource_info
                        .iter()
                        .find(|v| &v.id == id)
                        .ok_or_else(|| {
                            DriverError::invalid_input(format!(
                                "cannot operate VNFC {id}: stack {} has no such server",
                                ctx.stack_name
                            ))
                        })
                })
                .collect::<Result<_, _>>()?
        };
        let servers: Vec<Target> = targets
            .iter()
            .map(|v| Target {
                server: v.compute_resource.resource_id.clone(),
                vnfc: v.id.clone(),
            })
            .collect();
        // No servers, nothing to do: a VNF without compute resources has no compute service
        // to call either.
        if !servers.is_empty() {
            let power = Power::of(to);
            if let Some(g) = grace {
                sleep_within(&req.control, g, "graceful stop period").await?;
            }
            let nova = Nova::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
            // Ask every server first, then wait: they change state side by side.
            for t in &servers {
                nova.request(t, power, deadline).await?;
            }
            for t in &servers {
                nova.wait(t, power, deadline).await?;
            }
        }
        let mut now = states.clone();
        for v in &live.vnfc_info {
            let operated = v
                .vnfc_resource_info_id
                .as_ref()
                .is_some_and(|r| servers.iter().any(|t| &t.vnfc == r));
            if operated {
                now.insert(v.id.clone(), to);
            }
        }
        let after = inventory::inventory(&resources, &inputs(&now), &self.config);
        let mut resource_changes = inventory::changes(&before, &after);
        let listed: Vec<String> = resource_changes
            .affected_vnfcs
            .iter()
            .flatten()
            .map(|a| a.id.clone())
            .collect();
        for v in after
            .vnfc_resource_info
            .iter()
            .filter(|v| servers.iter().any(|t| t.vnfc == v.id) && !listed.contains(&v.id))
        {
            resource_changes
                .affected_vnfcs
                .get_or_insert_with(Vec::new)
                .push(vnfm_driver_api::inventory::affected_vnfc(
                    v,
                    ChangeType::Modified,
                ));
        }
        let nfv = ctx
            .state
            .as_ref()
            .map(|s| s.nfv.clone())
            .unwrap_or_else(|| stack.nfv());
        let state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
        Ok(InfraOutcome {
            resources: after,
            resource_changes,
            vnf_state: vnfc_ids.is_empty().then_some(to),
            driver_state: serde_json::to_value(&state).unwrap_or(Value::Null),
        })
    }

    /// Applies the external links `links` to the stack's CP parameters.
    async fn relink(
        &self,
        req: &InfraRequest,
        links: Vec<ExtVirtualLinkData>,
        previous: Option<Previous>,
        nfv_override: Option<Value>,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &req.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let r = stack.reference();
        let nfv = match nfv_override {
            Some(n) => n,
            None => {
                let template = heat.template(&r).await?;
                let files = ctx
                    .state
                    .as_ref()
                    .map(|s| s.files.clone())
                    .unwrap_or_default();
                let rebuilt = hot::build_nfv(
                    &paths_of(&template, &files),
                    &NfvInputs {
                        flavour,
                        capacity: None,
                        ext_virtual_links: &links,
                        additional: ctx.additional_nfv(),
                        grant: req.grant.as_deref(),
                    },
                );
                let mut nfv = stack.nfv();
                if let Some(cp) = rebuilt.get("CP") {
                    json_patch::merge(&mut nfv, &json!({ "CP": cp }));
                }
                nfv
            }
        };
        let fields = ctx.fields(&self.config, None, &nfv);
        let stack = self.update_and_wait(&heat, &ctx, &stack, &fields).await?;
        let managed = Self::recorded_managed(req);
        let state = self.state_after(&ctx, req, &stack, flavour, nfv, previous);
        self.outcome(
            &heat,
            &ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    /// Replaces the stack's templates (change of package or flavour, and their rollbacks).
    #[allow(clippy::too_many_arguments)]
    async fn retemplate(
        &self,
        req: &InfraRequest,
        flavour: &Flavour,
        hot: Hot,
        nfv: Value,
        links: Vec<ExtVirtualLinkData>,
        managed: Vec<ExtManagedVirtualLinkInfo>,
        vnfd_id: vnfm_types::VnfdId,
        previous: Option<Previous>,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let fields = ctx.fields(&self.config, Some(&hot), &nfv);
        let stack = self.update_and_wait(&heat, &ctx, &stack, &fields).await?;
        let state = DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: vnfd_id.to_string(),
            hot_source: hot.source.clone(),
            template: hot.template.clone(),
            files: hot.files.clone(),
            nfv,
            previous: previous.map(Box::new),
        };
        self.outcome(
            &heat, &ctx, &stack, flavour, &links, &managed, &vnfd_id, state,
        )
        .await
    }

    /// Moves the stack to the templates of `flavour` (CHANGE_FLAVOUR, CHANGE_VNFPKG) with
    /// `capacity` VNFCs per VDU: the request's external and externally managed links over the
    /// recorded ones, the instance then recorded with `vnfd_id`. With `keep_previous`, the
    /// templates in force are kept in the driver state for a rollback.
    async fn replace_templates(
        &self,
        req: &InfraRequest,
        flavour: &Flavour,
        capacity: &BTreeMap<String, u32>,
        vnfd_id: &vnfm_types::VnfdId,
        keep_previous: bool,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let managed_req = managed_of_request(req).map(<[_]>::to_vec);
        let managed_data = managed_req
            .clone()
            .unwrap_or_else(|| managed_as_data(&Self::recorded_managed(req)));
        let hot = templates(&self.config, req, flavour, &managed_data)?;
        let links = hot::overlay_links(
            &Self::recorded_links(req),
            ext_links_of_request(req).unwrap_or_default(),
        );
        let nfv = hot::build_nfv(
            &paths_of(&hot.template, &hot.files),
            &NfvInputs {
                flavour,
                capacity: Some(capacity),
                ext_virtual_links: &links,
                additional: ctx.additional_nfv(),
                grant: req.grant.as_deref(),
            },
        );
        let managed = match managed_req {
            Some(m) => managed_info(&m, vnfd_id, &ctx.vim_connection_id),
            None => Self::recorded_managed(req),
        };
        let previous = if keep_previous {
            Self::previous_of(ctx.state.as_ref(), req)
        } else {
            None
        };
        self.retemplate(
            req,
            flavour,
            hot,
            nfv,
            links,
            managed,
            vnfd_id.clone(),
            previous,
        )
        .await
    }

    fn previous_of(ctx_state: Option<&DriverState>, req: &InfraRequest) -> Option<Previous> {
        let s = ctx_state?;
        Some(Previous {
            op_occ_id: req.op_occ_id.to_string(),
            vnfd_id: s.vnfd_id.clone(),
            hot_source: s.hot_source.clone(),
            template: s.template.clone(),
            files: s.files.clone(),
            nfv: s.nfv.clone(),
            ext_virtual_links: Self::recorded_links(req),
        })
    }

    /// What a rollback returns to: the state saved by the change when it succeeded in this
    /// occurrence, else the state as it was before it (the change failed).
    fn restore_point(req: &InfraRequest) -> Option<Previous> {
        let state: DriverState = serde_json::from_value(req.driver_state.clone()).ok()?;
        if let Some(p) = state.previous.as_deref()
            && p.op_occ_id == req.op_occ_id.as_str()
        {
            return Some(p.clone());
        }
        Some(Previous {
            op_occ_id: req.op_occ_id.to_string(),
            vnfd_id: state.vnfd_id.clone(),
            hot_source: state.hot_source.clone(),
            template: state.template.clone(),
            files: state.files.clone(),
            nfv: state.nfv.clone(),
            ext_virtual_links: Self::recorded_links(req),
        })
    }
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
        let links = hot::overlay_links(&current, &r.ext_virtual_links);
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
        let Some(prev) = Self::restore_point(req) else {
            return Err(DriverError::invalid_input(format!(
                "cannot roll back the package change of instance {}: the driver state does not hold the previous templates",
                req.instance.id
            )));
        };
        let flavour = flavour(req, &req.flavour_id)?;
        let hot = Hot {
            source: prev.hot_source.clone(),
            template: prev.template.clone(),
            files: prev.files.clone(),
        };
        self.retemplate(
            req,
            flavour,
            hot,
            prev.nfv.clone(),
            prev.ext_virtual_links.clone(),
            Self::recorded_managed(req),
            restore_vnfd_id.clone(),
            None,
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
