//! Remote steps: what a step on a node needs ([`Remote`]: the script, the known host keys,
//! the secrets to mask, the SSH options), running one step or many in parallel, and the host
//! keys learnt on the way.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use vnfm_plugin_sdk::{HookContext, PluginError};
use vnfm_ssh::{
    Auth, ConnectOptions, HostKeyPolicy, Output, RemoteCommand, Secret, Session, SshError,
    SshTarget, fan_out,
};

use crate::PARAM_KEY;
use crate::nodes::Role;
use crate::params::{InstallParams, NodeParams, NodeRecord};

/// Everything a remote step needs, shareable with fan-out tasks.
pub(crate) struct Remote {
    pub(crate) params: InstallParams,
    pub(crate) script: Vec<u8>,
    pub(crate) script_path: String,
    pub(crate) host_keys: BTreeMap<String, String>,
    pub(crate) secrets: Vec<String>,
    pub(crate) timeout: Duration,
    pub(crate) connect: ConnectOptions,
}

/// What one node's step produced.
pub(crate) struct StepResult {
    pub(crate) output: Output,
    pub(crate) address: String,
    pub(crate) fingerprint: String,
}

impl Remote {
    pub(crate) fn new(
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

    pub(crate) fn node_params(&self, role: Role) -> Result<&NodeParams, PluginError> {
        match role {
            Role::Master => Ok(&self.params.master_node),
            Role::Worker => self.params.worker_node.as_ref().ok_or_else(|| {
                PluginError::invalid_input(
                    "worker_node is missing from k8s_cluster_installation_param",
                )
            }),
        }
    }

    pub(crate) fn target(&self, role: Role, node: &NodeRecord) -> Result<SshTarget, PluginError> {
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

    pub(crate) fn redact(&self, text: &str) -> String {
        let mut sorted = self.secrets.clone();
        sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
        sorted
            .iter()
            .fold(text.to_string(), |t, s| t.replace(s.as_str(), "***"))
    }

    pub(crate) fn error(&self, e: SshError) -> PluginError {
        let message = self.redact(&e.to_string());
        if e.is_transient() {
            PluginError::transient(message)
        } else {
            PluginError::permanent(message)
        }
    }

    /// `bash <script> <subcommand> <args...>`.
    pub(crate) fn command(&self, sub: &str) -> RemoteCommand {
        RemoteCommand::new("bash").arg(&self.script_path).arg(sub)
    }

    pub(crate) fn with_proxy(&self, mut cmd: RemoteCommand) -> RemoteCommand {
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

    pub(crate) fn endpoint(&self, host: &str) -> String {
        if host.contains(':') {
            format!("[{host}]:6443")
        } else {
            format!("{host}:6443")
        }
    }
}

/// Connects, uploads the script, runs `command`; fails unless it exits with 0.
pub(crate) async fn run_step(
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

/// Runs the steps on the nodes in parallel (at most `limit` at once).
pub(crate) fn on_nodes(
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

pub(crate) fn one(
    ctx: &HookContext<'_>,
    remote: &Arc<Remote>,
    target: SshTarget,
    cmd: RemoteCommand,
) -> Result<StepResult, PluginError> {
    on_nodes(ctx, remote, vec![(target, cmd)], 1)?
        .pop()
        .ok_or_else(|| PluginError::permanent("a remote step returned no result"))
}

pub(crate) fn learn_keys(record_keys: &mut BTreeMap<String, String>, results: &[StepResult]) {
    for r in results {
        if !r.fingerprint.is_empty() {
            record_keys.insert(r.address.clone(), r.fingerprint.clone());
        }
    }
}
