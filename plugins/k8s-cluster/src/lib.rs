//! `k8s-cluster`: the management driver of the Tacker "deploy a Kubernetes cluster with a
//! MgmtDriver" design (VNF-A).
//!
//! The VNF's VMs are created by the infrastructure driver; this plugin then turns them into a
//! Kubernetes cluster over SSH with the package's install script (kubeadm), and hands the
//! cluster to the VNFM as a VIM:
//!
//! | hook | what it does |
//! |---|---|
//! | `instantiate_end` | uploads the script to every node; `init-master` on the first master, `join-master` on the others (one at a time), `join-worker` on the workers (in parallel); reads the cluster access info the script prints; returns a `ETSINFV.KUBERNETES.V_1` VIM to register and add to `vimConnectionInfo`, and records the cluster (no secrets) in `metadata.k8sCluster` |
//! | `terminate_start` | removes the VIM's reference from `vimConnectionInfo` (the VNFM refuses to deregister a referenced VIM) and hands its id to `terminate_end` in the error handling data |
//! | `terminate_end` | deregisters the VIM and drops the record |
//! | `scale_start` | on scale-in, drains and removes the workers that leave (the newest ones, the order in which the VNFM removes VNFCs) and resets them |
//! | `scale_end` | joins the new workers after a scale-out; updates the record |
//! | `heal_start` | drains and removes the healed workers |
//! | `heal_end` | joins the healed (rebuilt) workers again |
//!
//! Parameters come from `additionalParams.k8s_cluster_installation_param` of the instantiate
//! request ([`params::InstallParams`]); later hooks use the recorded copy, with credentials
//! (passwords, inline keys, proxies: never recorded) taken from the request's
//! `additionalParams.k8s_cluster_installation_param` when it has them. A key file on the VNFM
//! host (`ssh_private_key_file`) is recorded and needs no repeating.
//!
//! Every node reaches the API server on one `--control-plane-endpoint`: the cluster CP's
//! address (`master_node.cluster_cp_name`) or else the first master's, port 6443. It is
//! recorded (`metadata.k8sCluster.controlPlaneEndpoint`) so that workers joining later
//! (scale-out, heal) are given the same one, whatever URL the VNFM itself registered for the
//! cluster.
//!
//! Host keys are trusted on first use and recorded in `metadata.k8sCluster.hostKeys`; later
//! connections must present the same key (a healed node's record is reset).
//!
//! The script's interface and output format are documented in the VNF-A sample package,
//! `vnfd-samples/vnf-a-k8s-cluster/Scripts/install_k8s_cluster.sh`.

pub mod info;
pub mod nodes;
pub mod params;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use vnfm_plugin_sdk::{
    HookContext, HookOutput, HookResult, MgmtDriver, PluginError, VimConnection, VimToRegister,
    export_mgmt_driver,
};
use vnfm_ssh::{
    Auth, ConnectOptions, HostKeyPolicy, Output, RemoteCommand, Secret, Session, SshError,
    SshTarget, fan_out,
};
use vnfm_types::VnfInstance;

use crate::info::{ClusterInfo, JoinInfo};
use crate::nodes::Role;
use crate::params::{ClusterRecord, InstallParams, METADATA_KEY, NodeParams, NodeRecord};

/// `vimType` of the registered cluster.
pub const KUBERNETES_VIM_TYPE: &str = "ETSINFV.KUBERNETES.V_1";

/// The request parameter holding the installation parameters.
pub const PARAM_KEY: &str = "k8s_cluster_installation_param";

/// The k8s-cluster driver.
#[derive(Debug, Default)]
pub struct K8sCluster;

export_mgmt_driver!(K8sCluster);

/// Everything a remote step needs, shareable with fan-out tasks.
struct Remote {
    params: InstallParams,
    script: Vec<u8>,
    script_path: String,
    host_keys: BTreeMap<String, String>,
    secrets: Vec<String>,
    timeout: Duration,
    connect: ConnectOptions,
}

/// What one node's step produced.
struct StepResult {
    output: Output,
    address: String,
    fingerprint: String,
}

impl Remote {
    fn new(
        ctx: &HookContext<'_>,
        params: InstallParams,
        host_keys: BTreeMap<String, String>,
    ) -> Result<Remote, PluginError> {
        let script = ctx.package().read(&params.script_path)?;
        let script_path = format!("{}/install_k8s_cluster.sh", params.remote_dir());
        let secrets = params.secrets();
        let timeout = ctx.remaining();
        let retry = Duration::from_secs(params.ssh_retry_seconds.unwrap_or(300)).min(timeout);
        Ok(Remote {
            params,
            script,
            script_path,
            host_keys,
            secrets,
            timeout,
            connect: ConnectOptions::default()
                .attempt_timeout(Duration::from_secs(20))
                .retrying(retry, Duration::from_secs(2)),
        })
    }

    fn node_params(&self, role: Role) -> Result<&NodeParams, PluginError> {
        match role {
            Role::Master => Ok(&self.params.master_node),
            Role::Worker => self.params.worker_node.as_ref().ok_or_else(|| {
                PluginError::invalid_input(
                    "worker_node is missing from k8s_cluster_installation_param",
                )
            }),
        }
    }

    fn target(&self, role: Role, node: &NodeRecord) -> Result<SshTarget, PluginError> {
        let p = self.node_params(role)?;
        let auth = if let Some(key) = &p.ssh_private_key {
            Auth::Key {
                private_key: Secret::new(key.clone()),
                passphrase: None,
            }
        } else if let Some(file) = &p.ssh_private_key_file {
            Auth::KeyFile(file.into())
        } else if let Some(pw) = &p.password {
            Auth::Password(Secret::new(pw.clone()))
        } else {
            return Err(PluginError::invalid_input(format!(
                "{}_node needs password, ssh_private_key or ssh_private_key_file in {PARAM_KEY} (credentials are not stored between operations)",
                role.name()
            )));
        };
        Ok(
            SshTarget::new(node.ssh_address.clone(), p.username.clone(), auth)
                .port(self.params.ssh_port.unwrap_or(22))
                .host_key(HostKeyPolicy::AcceptNew {
                    recorded: self.host_keys.get(&node.ssh_address).cloned(),
                }),
        )
    }

    fn redact(&self, text: &str) -> String {
        let mut sorted = self.secrets.clone();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
        sorted
            .iter()
            .fold(text.to_string(), |t, s| t.replace(s.as_str(), "***"))
    }

    fn error(&self, e: SshError) -> PluginError {
        let message = self.redact(&e.to_string());
        if e.is_transient() {
            PluginError::transient(message)
        } else {
            PluginError::permanent(message)
        }
    }

    /// `bash <script> <subcommand> <args...>`.
    fn command(&self, sub: &str) -> RemoteCommand {
        RemoteCommand::new("bash").arg(&self.script_path).arg(sub)
    }

    fn with_proxy(&self, mut cmd: RemoteCommand) -> RemoteCommand {
        if let Some(p) = &self.params.proxy {
            if let Some(v) = &p.http_proxy {
                cmd = cmd.arg("--http-proxy").secret_arg(v);
            }
            if let Some(v) = &p.https_proxy {
                cmd = cmd.arg("--https-proxy").secret_arg(v);
            }
            let no_proxy: Vec<&str> = [p.no_proxy.as_deref(), p.k8s_node_cidr.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            if !no_proxy.is_empty() {
                cmd = cmd.arg("--no-proxy").arg(no_proxy.join(","));
            }
        }
        if let Some(v) = &self.params.kubernetes_version {
            cmd = cmd.arg("--kubernetes-version").arg(v);
        }
        cmd
    }

    fn endpoint(&self, host: &str) -> String {
        if host.contains(':') {
            format!("[{host}]:6443")
        } else {
            format!("{host}:6443")
        }
    }
}

/// Connects, uploads the script, runs `command`; fails unless it exits with 0.
async fn run_step(
    remote: Arc<Remote>,
    target: SshTarget,
    command: RemoteCommand,
) -> Result<StepResult, SshError> {
    let session = Session::connect(&target, &remote.connect).await?;
    let fingerprint = session.host_key_fingerprint().to_string();
    let result = async {
        session
            .upload(&remote.script, &remote.script_path, 0o755, remote.timeout)
            .await?;
        session.run(&command, remote.timeout).await
    }
    .await;
    session.close().await;
    Ok(StepResult {
        output: result?,
        address: target.host,
        fingerprint,
    })
}

fn install_params(ctx: &HookContext<'_>) -> Result<Option<InstallParams>, PluginError> {
    let Some(v) = ctx.additional_params().and_then(|p| p.get(PARAM_KEY)) else {
        return Ok(None);
    };
    serde_json::from_value(v.clone()).map(Some).map_err(|e| {
        PluginError::invalid_input(format!("additionalParams.{PARAM_KEY} is not valid: {e}"))
    })
}

fn record_of(instance: &VnfInstance) -> Result<ClusterRecord, PluginError> {
    let v = instance
        .metadata
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .filter(|v| !v.is_null())
        .ok_or_else(|| {
            PluginError::invalid_input(format!(
                "the instance has no metadata.{METADATA_KEY}: the cluster was not installed by this plugin's instantiate_end"
            ))
        })?;
    serde_json::from_value(v.clone()).map_err(|e| {
        PluginError::invalid_input(format!("metadata.{METADATA_KEY} cannot be read: {e}"))
    })
}

fn record_output(record: &ClusterRecord) -> HookOutput {
    HookOutput::none().with_metadata(
        METADATA_KEY,
        serde_json::to_value(record).unwrap_or(Value::Null),
    )
}

/// The recorded parameters with the request's credentials; the record.
fn recorded(ctx: &HookContext<'_>) -> Result<(ClusterRecord, InstallParams), PluginError> {
    let record = record_of(&ctx.instance_as::<VnfInstance>()?)?;
    let params = record
        .params
        .clone()
        .with_credentials_from(install_params(ctx)?.as_ref());
    Ok((record, params))
}

/// Runs the steps on the nodes in parallel (at most `limit` at once).
fn on_nodes(
    ctx: &HookContext<'_>,
    remote: &Arc<Remote>,
    steps: Vec<(SshTarget, RemoteCommand)>,
    limit: usize,
) -> Result<Vec<StepResult>, PluginError> {
    let r = remote.clone();
    let results = ctx.block_on(fan_out(steps, limit, move |(t, c)| {
        run_step(r.clone(), t, c)
    }))?;
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for res in results {
        match res {
            Ok(s) => ok.push(s),
            Err(e) => failed.push(remote.error(e)),
        }
    }
    match failed.len() {
        0 => Ok(ok),
        1 => Err(failed.remove(0)),
        n => {
            let transient = failed
                .iter()
                .all(|e| matches!(e, PluginError::Transient(_)));
            let msg = format!(
                "{n} nodes failed: {}",
                failed
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            Err(if transient {
                PluginError::transient(msg)
            } else {
                PluginError::permanent(msg)
            })
        }
    }
}

fn one(
    ctx: &HookContext<'_>,
    remote: &Arc<Remote>,
    target: SshTarget,
    cmd: RemoteCommand,
) -> Result<StepResult, PluginError> {
    on_nodes(ctx, remote, vec![(target, cmd)], 1)?
        .pop()
        .ok_or_else(|| PluginError::permanent("a remote step returned no result"))
}

fn learn_keys(record_keys: &mut BTreeMap<String, String>, results: &[StepResult]) {
    for r in results {
        if !r.fingerprint.is_empty() {
            record_keys.insert(r.address.clone(), r.fingerprint.clone());
        }
    }
}

/// Fresh join information from the first master.
fn join_info(
    ctx: &HookContext<'_>,
    remote: &Arc<Remote>,
    master: &NodeRecord,
) -> Result<(JoinInfo, StepResult), PluginError> {
    let step = one(
        ctx,
        remote,
        remote.target(Role::Master, master)?,
        remote.command("join-info"),
    )?;
    let info = info::join_info(&info::parse(&step.output.stdout_text()))
        .map_err(PluginError::permanent)?;
    Ok((info, step))
}

fn join_worker_cmd(
    remote: &Remote,
    node: &NodeRecord,
    endpoint: &str,
    join: &JoinInfo,
) -> RemoteCommand {
    remote.with_proxy(
        remote
            .command("join-worker")
            .arg("--node-name")
            .arg(&node.node_name)
            .arg("--node-ip")
            .arg(&node.node_address)
            .arg("--control-plane-endpoint")
            .arg(endpoint)
            .arg("--token")
            .secret_arg(&join.token)
            .arg("--ca-cert-hash")
            .arg(&join.ca_cert_hash),
    )
}

/// Joins `workers` to the cluster of `record`; returns the step results.
fn join_workers(
    ctx: &HookContext<'_>,
    remote: &mut Arc<Remote>,
    record: &ClusterRecord,
    workers: &[NodeRecord],
) -> Result<Vec<StepResult>, PluginError> {
    if workers.is_empty() {
        return Ok(Vec::new());
    }
    let master = record.masters.first().ok_or_else(|| {
        PluginError::invalid_input(format!("metadata.{METADATA_KEY} lists no master"))
    })?;
    let (join, step) = join_info(ctx, remote, master)?;
    if let Some(r) = Arc::get_mut(remote) {
        r.secrets.push(join.token.clone());
        r.secrets.extend(join.certificate_key.clone());
    }
    let endpoint = record.join_endpoint();
    let steps = workers
        .iter()
        .map(|w| {
            Ok((
                remote.target(Role::Worker, w)?,
                join_worker_cmd(remote, w, &endpoint, &join),
            ))
        })
        .collect::<Result<Vec<_>, PluginError>>()?;
    let limit = remote.params.parallel_workers.unwrap_or(10);
    let mut results = on_nodes(ctx, remote, steps, limit)?;
    results.push(step);
    Ok(results)
}

/// Worker VNFCs in the instance that the record does not list (new or rebuilt ones).
fn current_workers(
    instance: &VnfInstance,
    params: &InstallParams,
) -> Result<Vec<NodeRecord>, PluginError> {
    match &params.worker_node {
        Some(w) => nodes::nodes(instance, Role::Worker, w),
        None => Ok(Vec::new()),
    }
}

/// How many VNFCs of `vdu` a scale of `aspect` by `steps` from `level` adds or removes.
fn scale_delta(
    vnfd: &Value,
    flavour: Option<&str>,
    aspect: &str,
    vdu: &str,
    level: u64,
    steps: u64,
    out: bool,
) -> u64 {
    let Some(asp) = vnfd
        .get("flavours")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| flavour.is_none() || f.get("id").and_then(Value::as_str) == flavour)
        .flat_map(|f| {
            f.get("scalingAspects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .find(|a| a.get("id").and_then(Value::as_str) == Some(aspect))
    else {
        return 0;
    };
    let step_deltas: Vec<&str> = asp
        .get("stepDeltas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let per = |delta: &str| {
        asp.get("vduDeltas")
            .and_then(|d| d.get(vdu))
            .and_then(|d| d.get(delta))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let delta_for_level = |l: u64| {
        // Step n (going from level n-1 to n) uses stepDeltas[n-1], the last one beyond the list.
        let idx = usize::try_from(l.saturating_sub(1)).unwrap_or(usize::MAX);
        step_deltas.get(idx).or(step_deltas.last()).map_or(
            if step_deltas.is_empty() {
                per("delta_1")
            } else {
                0
            },
            |d| per(d),
        )
    };
    (0..steps)
        .map(|i| {
            if out {
                delta_for_level(level + i + 1)
            } else {
                delta_for_level(level.saturating_sub(i))
            }
        })
        .sum()
}

fn scale_level(instance: &VnfInstance, aspect: &str) -> u64 {
    instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.scale_status.as_ref())
        .and_then(|s| s.iter().find(|s| s.aspect_id == aspect))
        .map_or(0, |s| u64::from(s.scale_level))
}

/// The worker VNFC ids a heal request targets (`vnfcInstanceId` are `vnfcInfo` ids).
fn healed_vnfcs(ctx: &HookContext<'_>, instance: &VnfInstance) -> Result<Vec<String>, PluginError> {
    let ids: Vec<String> = ctx
        .request()
        .get("vnfcInstanceId")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    if ids.is_empty() {
        return Err(PluginError::invalid_input(
            "healing the whole VNF would rebuild the cluster, which k8s-cluster does not do; heal nodes by vnfcInstanceId",
        ));
    }
    let infos = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.vnfc_info.as_ref());
    ids.iter()
        .map(|id| {
            infos
                .into_iter()
                .flatten()
                .find(|i| &i.id == id)
                .and_then(|i| i.vnfc_resource_info_id.clone())
                .ok_or_else(|| {
                    PluginError::invalid_input(format!(
                        "vnfcInstanceId `{id}` is not a VNFC of the instance"
                    ))
                })
        })
        .collect()
}

impl MgmtDriver for K8sCluster {
    fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let params = install_params(ctx)?.ok_or_else(|| {
            PluginError::invalid_input(format!(
                "the instantiate request has no additionalParams.{PARAM_KEY}"
            ))
        })?;
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let masters = nodes::nodes(instance, Role::Master, &params.master_node)?;
        let workers = current_workers(instance, &params)?;
        if masters.is_empty() {
            return Err(PluginError::invalid_input(format!(
                "no master VNFC found (VDU {:?}, CP `{}`)",
                params.master_node.vdu_id, params.master_node.ssh_cp_name
            )));
        }
        if let Some(w) = workers
            .iter()
            .find(|w| masters.iter().any(|m| m.vnfc_id == w.vnfc_id))
        {
            return Err(PluginError::invalid_input(format!(
                "VNFC {} matches both master_node and worker_node; give their vdu_id",
                w.vnfc_id
            )));
        }
        let api_host = match &params.master_node.cluster_cp_name {
            Some(cp) => nodes::any_cp_address(instance, cp).ok_or_else(|| {
                PluginError::invalid_input(format!("cluster_cp_name `{cp}` has no IP address"))
            })?,
            None => masters[0].node_address.clone(),
        };
        let vim_name = params
            .vim_name
            .clone()
            .unwrap_or_else(|| format!("k8s-{}", ctx.vnf_instance_id()));
        let mut remote = Arc::new(Remote::new(ctx, params.clone(), BTreeMap::new())?);
        let endpoint = remote.endpoint(&api_host);
        ctx.log().info(format!(
            "installing Kubernetes on {} master(s) and {} worker(s); API endpoint {endpoint}",
            masters.len(),
            workers.len()
        ));

        // The first master creates the cluster.
        let m0 = &masters[0];
        let mp = &params.master_node;
        let init = remote.with_proxy(
            remote
                .command("init-master")
                .arg("--node-name")
                .arg(&m0.node_name)
                .arg("--node-ip")
                .arg(&m0.node_address)
                .arg("--control-plane-endpoint")
                .arg(&endpoint)
                .arg("--pod-cidr")
                .arg(mp.pod_cidr.as_deref().unwrap_or("192.168.0.0/16"))
                .arg("--service-cidr")
                .arg(mp.cluster_cidr.as_deref().unwrap_or("10.96.0.0/12")),
        );
        let first = one(ctx, &remote, remote.target(Role::Master, m0)?, init)?;
        let cluster: ClusterInfo = info::cluster_info(&info::parse(&first.output.stdout_text()))
            .map_err(|e| {
                PluginError::permanent(format!("init-master on {}: {e}", m0.ssh_address))
            })?;
        if let Some(r) = Arc::get_mut(&mut remote) {
            r.secrets.push(cluster.bearer_token.clone());
            r.secrets.push(cluster.join.token.clone());
            r.secrets.extend(cluster.join.certificate_key.clone());
        }
        let mut host_keys = BTreeMap::new();
        learn_keys(&mut host_keys, std::slice::from_ref(&first));
        ctx.log().info(format!(
            "control plane up on {} ({})",
            m0.node_name, cluster.server
        ));

        // Further masters join one at a time (etcd membership changes must not overlap).
        for m in &masters[1..] {
            ctx.check("joining masters")?;
            let key = cluster.join.certificate_key.as_ref().ok_or_else(|| {
                PluginError::permanent(
                    "init-master reported no certificate_key, needed to join further masters",
                )
            })?;
            let cmd = remote.with_proxy(
                remote
                    .command("join-master")
                    .arg("--node-name")
                    .arg(&m.node_name)
                    .arg("--node-ip")
                    .arg(&m.node_address)
                    .arg("--control-plane-endpoint")
                    .arg(&endpoint)
                    .arg("--token")
                    .secret_arg(&cluster.join.token)
                    .arg("--ca-cert-hash")
                    .arg(&cluster.join.ca_cert_hash)
                    .arg("--certificate-key")
                    .secret_arg(key),
            );
            let r = one(ctx, &remote, remote.target(Role::Master, m)?, cmd)?;
            learn_keys(&mut host_keys, std::slice::from_ref(&r));
            ctx.log().info(format!("master {} joined", m.node_name));
        }

        // Workers join in parallel.
        ctx.check("joining workers")?;
        let steps = workers
            .iter()
            .map(|w| {
                Ok((
                    remote.target(Role::Worker, w)?,
                    join_worker_cmd(&remote, w, &endpoint, &cluster.join),
                ))
            })
            .collect::<Result<Vec<_>, PluginError>>()?;
        let joined = on_nodes(ctx, &remote, steps, params.parallel_workers.unwrap_or(10))?;
        learn_keys(&mut host_keys, &joined);
        ctx.log().info(format!("{} worker(s) joined", joined.len()));

        let connection_id = params.vim_connection_id();
        let mut recorded_params = params.clone();
        recorded_params.proxy = None;
        let record = ClusterRecord {
            params: recorded_params,
            vim_name: vim_name.clone(),
            server: cluster.server.clone(),
            control_plane_endpoint: Some(endpoint.clone()),
            masters,
            workers,
            host_keys,
        };
        let mut interface = Map::new();
        interface.insert("endpoint".into(), json!(cluster.server));
        interface.insert("ssl_ca_cert".into(), json!(cluster.ca_cert));
        let mut access = Map::new();
        access.insert("bearer_token".into(), json!(cluster.bearer_token));
        let mut extra = Map::new();
        extra.insert("createdByVnfInstance".into(), json!(ctx.vnf_instance_id()));
        extra.insert("caCertHash".into(), json!(cluster.join.ca_cert_hash));
        Ok(record_output(&record).register_vim(VimToRegister {
            name: vim_name,
            connection_id: Some(connection_id),
            info: VimConnection {
                vim_id: None,
                vim_type: KUBERNETES_VIM_TYPE.to_string(),
                interface_info: Some(interface),
                access_info: Some(access),
                extra: Some(extra),
            },
        }))
    }

    fn terminate_start(&self, ctx: &HookContext<'_>) -> HookResult {
        // The VIM is deregistered in terminate_end, but the VNFM refuses to deregister a VIM
        // an instance still references: drop the reference first and hand the id over.
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let Ok(record) = record_of(instance) else {
            return Ok(HookOutput::none());
        };
        let key = record.params.vim_connection_id();
        let Some(vim_id) = cluster_vim_id(instance, &key) else {
            return Ok(HookOutput::none());
        };
        let mut out =
            HookOutput::none().with_error_handling_data(json!({ "clusterVimId": vim_id }));
        out.vim_connection_info_remove.push(key);
        Ok(out)
    }

    fn terminate_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let Ok(record) = record_of(instance) else {
            ctx.log()
                .warn(format!("no metadata.{METADATA_KEY}: nothing to deregister"));
            return Ok(HookOutput::none());
        };
        let key = record.params.vim_connection_id();
        let mut out = HookOutput::none().with_metadata(METADATA_KEY, Value::Null);
        let handed_over = ctx
            .error_handling_data()
            .get("clusterVimId")
            .and_then(Value::as_str)
            .map(String::from);
        match (handed_over, cluster_vim_id(instance, &key)) {
            (_, Some(still_referenced)) => {
                // terminate_start is not bound: the reference goes now, and the VIM (owned by
                // this instance) is deleted with the VNF identifier.
                ctx.log().warn(format!(
                    "VIM {still_referenced} is still referenced (bind terminate_start to this plugin to deregister it at terminate); it is deleted with the VNF identifier"
                ));
                out.vim_connection_info_remove.push(key);
            }
            (Some(id), None) => {
                ctx.log()
                    .info(format!("deregistering the cluster's VIM {id}"));
                out = out.deregister_vim(id);
            }
            (None, None) => {}
        }
        Ok(out)
    }

    fn scale_start(&self, ctx: &HookContext<'_>) -> HookResult {
        if ctx.request().get("type").and_then(Value::as_str) != Some("SCALE_IN") {
            return Ok(HookOutput::none());
        }
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let (mut record, params) = recorded(ctx)?;
        let leaving = leaving_workers(ctx, instance, &params)?;
        if leaving.is_empty() {
            return Ok(HookOutput::none());
        }
        let remote = Arc::new(Remote::new(ctx, params, record.host_keys.clone())?);
        remove_workers(ctx, &remote, &record, &leaving, true)?;
        record
            .workers
            .retain(|w| !leaving.iter().any(|l| l.vnfc_id == w.vnfc_id));
        for l in &leaving {
            record.host_keys.remove(&l.ssh_address);
        }
        Ok(record_output(&record))
    }

    fn scale_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let (mut record, params) = recorded(ctx)?;
        let current = current_workers(instance, &params)?;
        let new: Vec<NodeRecord> = current
            .iter()
            .filter(|w| !record.workers.iter().any(|r| r.vnfc_id == w.vnfc_id))
            .cloned()
            .collect();
        let mut remote = Arc::new(Remote::new(ctx, params, record.host_keys.clone())?);
        let results = join_workers(ctx, &mut remote, &record, &new)?;
        learn_keys(&mut record.host_keys, &results);
        if !new.is_empty() {
            ctx.log()
                .info(format!("{} new worker(s) joined", new.len()));
        }
        record.workers = current;
        Ok(record_output(&record))
    }

    fn heal_start(&self, ctx: &HookContext<'_>) -> HookResult {
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let (mut record, params) = recorded(ctx)?;
        let targets = healed_vnfcs(ctx, instance)?;
        if let Some(m) = record.masters.iter().find(|m| targets.contains(&m.vnfc_id)) {
            return Err(PluginError::invalid_input(format!(
                "healing control-plane node {} is not supported by k8s-cluster; only workers can be healed",
                m.node_name
            )));
        }
        let healed: Vec<NodeRecord> = record
            .workers
            .iter()
            .filter(|w| targets.contains(&w.vnfc_id))
            .cloned()
            .collect();
        let remote = Arc::new(Remote::new(ctx, params, record.host_keys.clone())?);
        // The node is probably broken: no reset on it, only its removal from the cluster.
        remove_workers(ctx, &remote, &record, &healed, false)?;
        record.workers.retain(|w| !targets.contains(&w.vnfc_id));
        for h in &healed {
            // A rebuilt VM has a new host key.
            record.host_keys.remove(&h.ssh_address);
        }
        Ok(record_output(&record))
    }

    fn heal_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let instance = &ctx.instance_as::<VnfInstance>()?;
        let (mut record, params) = recorded(ctx)?;
        // heal_start took the healed workers out of the record; whatever worker the instance
        // has now that the record lacks is one of them, under its old VNFC id or, where the
        // infrastructure gives a replaced server a new one (Tacker's scheme), under that.
        let current = current_workers(instance, &params)?;
        let rejoin: Vec<NodeRecord> = current
            .iter()
            .filter(|w| !record.workers.iter().any(|r| r.vnfc_id == w.vnfc_id))
            .cloned()
            .collect();
        for r in &rejoin {
            record.host_keys.remove(&r.ssh_address);
        }
        let mut remote = Arc::new(Remote::new(ctx, params, record.host_keys.clone())?);
        let results = join_workers(ctx, &mut remote, &record, &rejoin)?;
        learn_keys(&mut record.host_keys, &results);
        record.workers = current;
        Ok(record_output(&record))
    }
}

/// The `vimId` the instance's `vimConnectionInfo[key]` references.
fn cluster_vim_id(instance: &VnfInstance, key: &str) -> Option<String> {
    instance
        .vim_connection_info
        .as_ref()
        .and_then(|m| m.get(key))
        .and_then(|v| v.vim_id.as_ref())
        .map(|id| id.to_string())
}

/// The workers a scale-in removes: the newest ones of the worker VDU.
fn leaving_workers(
    ctx: &HookContext<'_>,
    instance: &VnfInstance,
    params: &InstallParams,
) -> Result<Vec<NodeRecord>, PluginError> {
    let aspect = ctx
        .request()
        .get("aspectId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let steps = ctx
        .request()
        .get("numberOfSteps")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let level = scale_level(instance, aspect);
    let workers = current_workers(instance, params)?;
    let masters = nodes::nodes(instance, Role::Master, &params.master_node)?;
    let vdu_of = |n: &[NodeRecord], p: Option<&NodeParams>| {
        p.and_then(|p| p.vdu_id.clone()).or_else(|| {
            let v = instance
                .instantiated_vnf_info
                .as_ref()?
                .vnfc_resource_info
                .as_ref()?;
            let first = n.first()?;
            v.iter()
                .find(|x| x.id == first.vnfc_id)
                .map(|x| x.vdu_id.clone())
        })
    };
    let flavour = ctx.flavour_id();
    if let Some(mvdu) = vdu_of(&masters, Some(&params.master_node))
        && scale_delta(ctx.vnfd_json(), flavour, aspect, &mvdu, level, steps, false) > 0
    {
        return Err(PluginError::invalid_input(format!(
            "scaling aspect `{aspect}` changes the control plane (VDU {mvdu}); k8s-cluster scales workers only"
        )));
    }
    let Some(wvdu) = vdu_of(&workers, params.worker_node.as_ref()) else {
        return Ok(Vec::new());
    };
    let n = scale_delta(ctx.vnfd_json(), flavour, aspect, &wvdu, level, steps, false);
    let n = usize::try_from(n).unwrap_or(usize::MAX).min(workers.len());
    Ok(workers[workers.len() - n..].to_vec())
}

/// Drains and deletes `workers` from the cluster (from the first master), then resets them
/// when `reset` (best effort: the VM is going away anyway).
fn remove_workers(
    ctx: &HookContext<'_>,
    remote: &Arc<Remote>,
    record: &ClusterRecord,
    workers: &[NodeRecord],
    reset: bool,
) -> Result<(), PluginError> {
    let master = record.masters.first().ok_or_else(|| {
        PluginError::invalid_input(format!("metadata.{METADATA_KEY} lists no master"))
    })?;
    for w in workers {
        ctx.check("removing workers")?;
        let cmd = remote
            .command("remove-node")
            .arg("--node-name")
            .arg(&w.node_name);
        one(ctx, remote, remote.target(Role::Master, master)?, cmd)?;
        ctx.log()
            .info(format!("node {} drained and removed", w.node_name));
    }
    if reset {
        let steps = workers
            .iter()
            .map(|w| Ok((remote.target(Role::Worker, w)?, remote.command("reset"))))
            .collect::<Result<Vec<_>, PluginError>>()?;
        if let Err(e) = on_nodes(
            ctx,
            remote,
            steps,
            remote.params.parallel_workers.unwrap_or(10),
        ) {
            ctx.log()
                .warn(format!("resetting removed workers failed (ignored): {e}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_deltas_follow_step_deltas() {
        let vnfd = json!({"flavours": [{"id": "simple", "scalingAspects": [{
            "id": "worker_instance", "maxScaleLevel": 3,
            "stepDeltas": ["delta_1", "delta_2"],
            "vduDeltas": {"workerNode": {"delta_1": 1, "delta_2": 2}}
        }]}]});
        let d = |level, steps, out| {
            scale_delta(
                &vnfd,
                Some("simple"),
                "worker_instance",
                "workerNode",
                level,
                steps,
                out,
            )
        };
        assert_eq!(d(0, 1, true), 1);
        assert_eq!(d(0, 2, true), 3);
        assert_eq!(d(2, 1, false), 2);
        assert_eq!(d(2, 2, false), 3);
        assert_eq!(d(3, 1, false), 2);
        assert_eq!(
            scale_delta(&vnfd, Some("simple"), "other", "workerNode", 0, 1, true),
            0
        );
    }
}
