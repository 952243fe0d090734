//! `cnf-check`: the management driver of the VNF-B sample (`vnfd-samples/vnf-b-cnf`).
//!
//! Bound to `instantiate_end`, it checks through the Kubernetes API of the instance's VIM that
//! the CNF is up: its Service exists in the instance's namespace and its Deployment is
//! available (condition `Available` is `True`). When either is not the case yet, the hook
//! fails with a transient error naming the object and what is missing, so the occurrence
//! goes to `FAILED_TEMP` and a retry checks again. It changes nothing on the cluster.
//!
//! What is checked comes from the hook's `inputs` in the VNFD:
//!
//! | input | meaning | default |
//! |---|---|---|
//! | `service` | name of the Service | `web` |
//! | `deployment` | name of the Deployment | `web` |
//! | `namespace` | namespace to look in | as the Kubernetes driver chooses it: `additionalParams.namespace`, else the VIM's `accessInfo.namespace`, else `vnf-<instance id>` |
//! | `vim_connection_id` | the `vimConnectionInfo` entry to use | the first of type `ETSINFV.KUBERNETES.V_1` or `ETSINFV.HELM.V_3` |
//!
//! The API server is reached as the VIM connection says: `interfaceInfo.endpoint`,
//! `interfaceInfo.ssl_ca_cert` (PEM; then only that CA is trusted) or
//! `insecureSkipTlsVerify`, and `accessInfo.bearer_token` (or `username`/`password`). On
//! success the hook records what it saw in the instance's `metadata.cnfCheck`.
//!
//! ```
//! use serde_json::json;
//! use vnfm_plugin_cnf_check::Target;
//!
//! let inputs = json!({"service": "web", "deployment": "web"});
//! let t = Target::resolve(inputs.as_object().unwrap(), None, None, "4f1c-AB").unwrap();
//! assert_eq!(t.namespace, "vnf-4f1c-ab");
//! ```

pub mod api;
pub mod error;

use std::time::Duration;

use serde_json::{Map, Value, json};
use vnfm_plugin_sdk::{
    HookContext, HookOutput, HookResult, MgmtDriver, PluginError, VimConnection, export_mgmt_driver,
};

pub use api::ApiServer;
pub use error::CheckError;

/// The instance metadata key of the hook's record.
pub const METADATA_KEY: &str = "cnfCheck";

/// VIM types whose connection is a Kubernetes API server.
pub const KUBERNETES_VIM_TYPES: [&str; 2] = ["ETSINFV.KUBERNETES.V_1", "ETSINFV.HELM.V_3"];

/// Longest wait for one API request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The cnf-check driver.
#[derive(Debug, Default)]
pub struct CnfCheck;

export_mgmt_driver!(CnfCheck);

/// What to check and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Namespace of the instance's objects.
    pub namespace: String,
    /// Service name.
    pub service: String,
    /// Deployment name.
    pub deployment: String,
}

fn input<'a>(inputs: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, CheckError> {
    match inputs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if is_dns_label(s) => Ok(Some(s)),
        Some(other) => Err(CheckError::InvalidParameter(format!(
            "the hook input `{key}` must be a Kubernetes object name (lowercase letters, digits and '-', at most 63), not {other}"
        ))),
    }
}

/// A DNS-1123 label: what Service, Deployment and namespace names are.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The namespace the Kubernetes driver gives an instance that names none: `vnf-<id>` as a
/// DNS label.
fn default_namespace(instance_id: &str) -> String {
    let mut s: String = format!("vnf-{}", instance_id.to_ascii_lowercase())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(63);
    let s = s.trim_matches('-').to_string();
    if s.is_empty() { "vnf".to_string() } else { s }
}

impl Target {
    /// The target from the hook `inputs`, the request's `additionalParams` and the VIM
    /// connection, with the defaults of the [crate docs](crate).
    pub fn resolve(
        inputs: &Map<String, Value>,
        additional_params: Option<&Map<String, Value>>,
        vim: Option<&VimConnection>,
        instance_id: &str,
    ) -> Result<Target, CheckError> {
        let requested = additional_params
            .and_then(|p| p.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let of_vim = vim
            .and_then(|v| v.access_info.as_ref())
            .and_then(|a| a.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let namespace = match input(inputs, "namespace")?.or(requested).or(of_vim) {
            Some(ns) => ns.to_string(),
            None => default_namespace(instance_id),
        };
        Ok(Target {
            namespace,
            service: input(inputs, "service")?.unwrap_or("web").to_string(),
            deployment: input(inputs, "deployment")?.unwrap_or("web").to_string(),
        })
    }
}

/// The VIM connection to check through: `vim_connection_id` when given, else the first of a
/// Kubernetes type.
fn kubernetes_vim<'a>(
    ctx: &'a HookContext<'_>,
) -> Result<(&'a str, &'a VimConnection), CheckError> {
    let vims = ctx.vim_connections();
    if let Some(id) = ctx
        .inputs()
        .get("vim_connection_id")
        .and_then(Value::as_str)
    {
        return vims
            .get_key_value(id)
            .map(|(k, v)| (k.as_str(), v))
            .ok_or_else(|| CheckError::UnknownVimConnection(id.to_string()));
    }
    vims.iter()
        .find(|(_, v)| KUBERNETES_VIM_TYPES.contains(&v.vim_type.as_str()))
        .map(|(k, v)| (k.as_str(), v))
        .ok_or_else(|| {
            let seen: Vec<String> = vims
                .iter()
                .map(|(k, v)| format!("{k} ({})", v.vim_type))
                .collect();
            CheckError::NoKubernetesVim(if seen.is_empty() {
                "none".to_string()
            } else {
                seen.join(", ")
            })
        })
}

/// The `Available` condition and replica counts of a Deployment: `Ok(available replicas)`
/// when available, else what is missing.
pub fn availability(deployment: &Value) -> Result<u64, String> {
    let status = deployment.get("status");
    let count = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let desired = deployment
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let available = count("availableReplicas");
    let condition = status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"));
    match condition {
        Some(c) if c["status"] == "True" => Ok(available),
        Some(c) => Err(format!(
            "{available} of {desired} replicas available, condition Available={} ({}{})",
            c["status"].as_str().unwrap_or("Unknown"),
            c["reason"].as_str().unwrap_or("no reason"),
            c["message"]
                .as_str()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        None => Err(format!(
            "{available} of {desired} replicas available, no Available condition yet (the controller has not reported on it)"
        )),
    }
}

/// Checks the target on the server; what was seen, for the instance's metadata.
pub async fn check(
    server: &ApiServer,
    target: &Target,
    timeout: Duration,
) -> Result<Value, CheckError> {
    let client = server.client(timeout)?;
    let ns = &target.namespace;
    let svc_what = format!("Service {ns}/{}", target.service);
    let service = server
        .get(
            &client,
            &format!("/api/v1/namespaces/{ns}/services/{}", target.service),
            &svc_what,
        )
        .await?
        .ok_or_else(|| CheckError::Missing {
            kind: "Service",
            namespace: ns.clone(),
            name: target.service.clone(),
        })?;
    let dep_what = format!("Deployment {ns}/{}", target.deployment);
    let deployment = server
        .get(
            &client,
            &format!(
                "/apis/apps/v1/namespaces/{ns}/deployments/{}",
                target.deployment
            ),
            &dep_what,
        )
        .await?
        .ok_or_else(|| CheckError::Missing {
            kind: "Deployment",
            namespace: ns.clone(),
            name: target.deployment.clone(),
        })?;
    let available = availability(&deployment).map_err(|detail| CheckError::NotAvailable {
        namespace: ns.clone(),
        name: target.deployment.clone(),
        detail,
    })?;
    Ok(json!({
        "namespace": ns,
        "service": target.service,
        "serviceClusterIP": service.pointer("/spec/clusterIP"),
        "deployment": target.deployment,
        "availableReplicas": available,
    }))
}

impl MgmtDriver for CnfCheck {
    fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
        let (connection, vim) = kubernetes_vim(ctx)?;
        let target = Target::resolve(
            ctx.inputs(),
            ctx.additional_params(),
            Some(vim),
            ctx.vnf_instance_id(),
        )?;
        let server = ApiServer::from_vim(connection, vim)?;
        ctx.log().info(format!(
            "checking Service {ns}/{} and Deployment {ns}/{} at {} (VIM connection {connection})",
            target.service,
            target.deployment,
            server.endpoint,
            ns = target.namespace,
        ));
        ctx.check("checking the CNF")?;
        let timeout = ctx.remaining().min(REQUEST_TIMEOUT);
        if timeout.is_zero() {
            return Err(PluginError::transient(
                "no time left in the hook's budget to check the CNF",
            ));
        }
        let seen = ctx.block_on(check(&server, &target, timeout))??;
        ctx.log().info(format!(
            "Service {ns}/{} exists and Deployment {ns}/{} is available",
            target.service,
            target.deployment,
            ns = target.namespace
        ));
        Ok(HookOutput::none().with_metadata(METADATA_KEY, seen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_namespace_is_the_drivers() {
        assert_eq!(default_namespace("6C1E_6d0e"), "vnf-6c1e-6d0e");
        assert_eq!(default_namespace(&"x".repeat(80)).len(), 63);
    }

    #[test]
    fn inputs_must_be_object_names() {
        let inputs = json!({"service": "Web Server"});
        let err = Target::resolve(inputs.as_object().unwrap(), None, None, "i").unwrap_err();
        assert!(err.to_string().contains("`service`"), "{err}");
        assert!(!err.is_transient());
    }

    #[test]
    fn the_namespace_follows_input_then_request_then_vim() {
        let vim: VimConnection = serde_json::from_value(json!({
            "vimType": "ETSINFV.KUBERNETES.V_1", "accessInfo": {"namespace": "from-vim"}
        }))
        .unwrap();
        let params = json!({"namespace": "from-request"});
        let none = Map::new();
        let ns = |inputs: &Map<String, Value>, p: Option<&Map<String, Value>>| {
            Target::resolve(inputs, p, Some(&vim), "i")
                .unwrap()
                .namespace
        };
        assert_eq!(ns(&none, None), "from-vim");
        assert_eq!(ns(&none, params.as_object()), "from-request");
        let inputs = json!({"namespace": "from-input"});
        assert_eq!(
            ns(inputs.as_object().unwrap(), params.as_object()),
            "from-input"
        );
    }

    #[test]
    fn availability_reads_the_condition() {
        let ok = json!({"spec": {"replicas": 2}, "status": {"availableReplicas": 2,
            "conditions": [{"type": "Available", "status": "True"}]}});
        assert_eq!(availability(&ok), Ok(2));
        let not = json!({"spec": {"replicas": 2}, "status": {"availableReplicas": 1,
            "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]}});
        let why = availability(&not).unwrap_err();
        assert!(
            why.contains("1 of 2") && why.contains("MinimumReplicasUnavailable"),
            "{why}"
        );
        assert!(
            availability(&json!({"spec": {}}))
                .unwrap_err()
                .contains("no Available condition")
        );
    }
}
