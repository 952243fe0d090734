//! The workers of the cluster: joining them, which ones a scale-in or a heal takes, and
//! draining and removing them.

use std::sync::Arc;

use serde_json::Value;
use vnfm_plugin_sdk::{HookContext, PluginError};
use vnfm_ssh::RemoteCommand;
use vnfm_types::VnfInstance;

use crate::info::{self, JoinInfo};
use crate::nodes::{self, Role};
use crate::params::{ClusterRecord, InstallParams, METADATA_KEY, NodeParams, NodeRecord};

use crate::remote::{Remote, StepResult, on_nodes, one};

/// Fresh join information from the first master.
pub(crate) fn join_info(
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

pub(crate) fn join_worker_cmd(
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
pub(crate) fn join_workers(
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
pub(crate) fn current_workers(
    instance: &VnfInstance,
    params: &InstallParams,
) -> Result<Vec<NodeRecord>, PluginError> {
    match &params.worker_node {
        Some(w) => nodes::nodes(instance, Role::Worker, w),
        None => Ok(Vec::new()),
    }
}

/// How many VNFCs of `vdu` a scale of `aspect` by `steps` from `level` adds or removes.
pub(crate) fn scale_delta(
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

pub(crate) fn scale_level(instance: &VnfInstance, aspect: &str) -> u64 {
    instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.scale_status.as_ref())
        .and_then(|s| s.iter().find(|s| s.aspect_id == aspect))
        .map_or(0, |s| u64::from(s.scale_level))
}

/// The worker VNFC ids a heal request targets (`vnfcInstanceId` are `vnfcInfo` ids).
pub(crate) fn healed_vnfcs(
    ctx: &HookContext<'_>,
    instance: &VnfInstance,
) -> Result<Vec<String>, PluginError> {
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

/// The workers a scale-in removes: the newest ones of the worker VDU.
pub(crate) fn leaving_workers(
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
pub(crate) fn remove_workers(
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
