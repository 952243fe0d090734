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

mod record;
mod remote;
mod workers;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use vnfm_plugin_sdk::{
    HookContext, HookOutput, HookResult, MgmtDriver, PluginError, VimConnection, VimToRegister,
    export_mgmt_driver,
};
use vnfm_types::VnfInstance;

use crate::info::ClusterInfo;
use crate::nodes::Role;
use crate::params::{ClusterRecord, METADATA_KEY, NodeRecord};
use crate::record::{cluster_vim_id, install_params, record_of, record_output, recorded};
use crate::remote::{Remote, learn_keys, on_nodes, one};
use crate::workers::{
    current_workers, healed_vnfcs, join_worker_cmd, join_workers, leaving_workers, remove_workers,
};

/// `vimType` of the registered cluster.
pub const KUBERNETES_VIM_TYPE: &str = "ETSINFV.KUBERNETES.V_1";

/// The request parameter holding the installation parameters.
pub const PARAM_KEY: &str = "k8s_cluster_installation_param";

/// The k8s-cluster driver.
#[derive(Debug, Default)]
pub struct K8sCluster;

export_mgmt_driver!(K8sCluster);

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workers::scale_delta;

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
