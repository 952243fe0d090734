//! `additionalParams.k8s_cluster_installation_param` and what the plugin records in the
//! instance's metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The metadata key of the plugin's record.
pub const METADATA_KEY: &str = "k8sCluster";

/// The installation parameters (Tacker's `k8s_cluster_installation_param`, plus a few
/// optional extensions). `Debug` hides credentials.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallParams {
    /// Package path of the install script.
    pub script_path: String,
    /// Name to register the cluster's VIM under (default `k8s-<vnfInstanceId>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_name: Option<String>,
    /// Key of the VIM in the instance's `vimConnectionInfo` (default `k8s_cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// The control-plane nodes.
    pub master_node: NodeParams,
    /// The worker nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_node: Option<NodeParams>,
    /// Proxy settings for the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyParams>,
    /// SSH port of the nodes (default 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_port: Option<u16>,
    /// Directory on the nodes the script is uploaded to (default `/tmp/vnfm-k8s-cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_dir: Option<String>,
    /// How long to keep retrying SSH connections while the VMs boot (default 300 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_retry_seconds: Option<u64>,
    /// How many workers are installed at once (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_workers: Option<usize>,
    /// Kubernetes minor version for the script's package repository (e.g. `1.33`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
}

/// One role's nodes.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeParams {
    /// The VDU whose VNFCs have this role (default: the VNFCs with a CP `ssh_cp_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vdu_id: Option<String>,
    /// The scaling aspect of the VDU (informational, as in Tacker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aspect_id: Option<String>,
    /// CPD of the VNFC CP the VNFM reaches the node on.
    pub ssh_cp_name: String,
    /// CPD of the VNFC CP Kubernetes uses as the node address (default `ssh_cp_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_cp_name: Option<String>,
    /// Login user.
    pub username: String,
    /// Login password (never recorded).
    #[serde(default, skip_serializing)]
    pub password: Option<String>,
    /// Private key text (never recorded).
    #[serde(default, skip_serializing)]
    pub ssh_private_key: Option<String>,
    /// Private key file on the VNFM host (recorded: later hooks use it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_private_key_file: Option<String>,
    /// Pod network CIDR (masters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<String>,
    /// Service CIDR (masters; Tacker's `cluster_cidr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_cidr: Option<String>,
    /// CPD of the CP whose address is the API server endpoint (a VIP in front of several
    /// masters); default: the first master's node address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_cp_name: Option<String>,
}

/// Proxy settings (may hold credentials: never recorded, hidden in logs).
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyParams {
    /// `http_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// `https_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// `no_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// The nodes' network, added to `no_proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s_node_cidr: Option<String>,
}

impl std::fmt::Debug for InstallParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The serialized form skips passwords and inline keys; proxies may hold credentials.
        let mut shown = self.clone();
        shown.proxy = None;
        write!(
            f,
            "InstallParams({})",
            serde_json::to_string(&shown).unwrap_or_default()
        )
    }
}

impl InstallParams {
    /// The VIM connection key.
    pub fn vim_connection_id(&self) -> String {
        self.vim_connection_id
            .clone()
            .unwrap_or_else(|| "k8s_cluster".to_string())
    }

    /// The remote directory.
    pub fn remote_dir(&self) -> String {
        self.remote_dir
            .clone()
            .unwrap_or_else(|| "/tmp/vnfm-k8s-cluster".to_string())
    }

    /// Values that must never appear in messages.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        for n in std::iter::once(&self.master_node).chain(self.worker_node.as_ref()) {
            out.extend(n.password.clone());
            out.extend(n.ssh_private_key.clone());
        }
        if let Some(p) = &self.proxy {
            out.extend(p.http_proxy.clone());
            out.extend(p.https_proxy.clone());
        }
        out.retain(|s| s.len() >= 3);
        out
    }

    /// Credentials of the current request layered over the recorded parameters: the
    /// recorded ones lack passwords and inline keys.
    pub fn with_credentials_from(mut self, request: Option<&InstallParams>) -> Self {
        if let Some(r) = request {
            let take = |mine: &mut NodeParams, theirs: &NodeParams| {
                mine.password = theirs.password.clone().or(mine.password.take());
                mine.ssh_private_key = theirs
                    .ssh_private_key
                    .clone()
                    .or(mine.ssh_private_key.take());
                if theirs.ssh_private_key_file.is_some() {
                    mine.ssh_private_key_file = theirs.ssh_private_key_file.clone();
                }
            };
            take(&mut self.master_node, &r.master_node);
            if let (Some(mine), Some(theirs)) = (self.worker_node.as_mut(), r.worker_node.as_ref())
            {
                take(mine, theirs);
            }
            if r.proxy.is_some() {
                self.proxy = r.proxy.clone();
            }
        }
        self
    }
}

/// One node as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRecord {
    /// `vnfcResourceInfo` id.
    pub vnfc_id: String,
    /// Kubernetes node name.
    pub node_name: String,
    /// Address the VNFM reaches it on.
    pub ssh_address: String,
    /// Address Kubernetes uses.
    pub node_address: String,
}

/// What the plugin keeps in `metadata.k8sCluster` (no secrets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRecord {
    /// The installation parameters without credentials.
    pub params: InstallParams,
    /// The registered VIM's name.
    pub vim_name: String,
    /// The API server URL the VNFM reaches the cluster on (registered as the VIM's endpoint).
    pub server: String,
    /// The `host:port` the nodes reach the API server on (`--control-plane-endpoint` at
    /// install): a cluster CP's address or the first master's, which may differ from
    /// [`server`](Self::server) (a floating IP, a load balancer in front of the masters).
    /// Records written before it was kept fall back to `server`'s `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<String>,
    /// Control-plane nodes.
    pub masters: Vec<NodeRecord>,
    /// Workers.
    pub workers: Vec<NodeRecord>,
    /// SSH host-key fingerprints by address (recorded on first contact).
    #[serde(default)]
    pub host_keys: BTreeMap<String, String>,
}

impl ClusterRecord {
    /// The `--control-plane-endpoint` that nodes joining later are given: the one the cluster
    /// was installed with, so that every node of the cluster reaches the API server alike.
    pub fn join_endpoint(&self) -> String {
        match &self.control_plane_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => endpoint_of(&self.server),
        }
    }
}

/// `host:port` of an `https://host:port` URL.
fn endpoint_of(server: &str) -> String {
    server
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(control_plane_endpoint: Option<&str>) -> ClusterRecord {
        serde_json::from_value(serde_json::json!({
            "params": {
                "script_path": "Scripts/install.sh",
                "master_node": {"ssh_cp_name": "masterNode_CP1", "username": "ubuntu"},
            },
            "vimName": "k8s",
            "server": "https://203.0.113.7:6443/",
            "controlPlaneEndpoint": control_plane_endpoint,
            "masters": [],
            "workers": [],
        }))
        .unwrap()
    }

    #[test]
    fn later_joins_use_the_endpoint_the_cluster_was_installed_with() {
        assert_eq!(
            record(Some("10.10.0.5:6443")).join_endpoint(),
            "10.10.0.5:6443"
        );
    }

    #[test]
    fn records_without_an_endpoint_fall_back_to_the_server_url() {
        assert_eq!(record(None).join_endpoint(), "203.0.113.7:6443");
        assert_eq!(endpoint_of("https://10.0.0.1:6443"), "10.0.0.1:6443");
        assert_eq!(endpoint_of("https://[fd00::1]:6443/"), "[fd00::1]:6443");
    }
}
