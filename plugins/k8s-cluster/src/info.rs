//! Parsing what the install script prints.
//!
//! The script reports values on lines of the form `K8S_CLUSTER_INFO <key>=<value>` (anything
//! else on stdout is progress output and ignored). Keys:
//!
//! | key | meaning |
//! |---|---|
//! | `server` | API server URL, e.g. `https://192.168.10.11:6443` |
//! | `token` | a kubeadm bootstrap token (`abcdef.0123456789abcdef`) for joining nodes |
//! | `ssl_ca_cert_hash` | `sha256:<hex>` of the cluster CA's public key (`--discovery-token-ca-cert-hash`) |
//! | `certificate_key` | the key of the uploaded control-plane certificates (`--certificate-key`) |
//! | `bearer_token` | a token of a cluster-admin service account, for the VNFM |
//! | `ssl_ca_cert` | the cluster CA certificate, PEM, base64-encoded on one line |

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The line prefix of a reported value.
pub const PREFIX: &str = "K8S_CLUSTER_INFO ";

/// Every `key=value` the output reports (a later line wins).
pub fn parse(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix(PREFIX))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// What joining a node needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinInfo {
    /// Bootstrap token.
    pub token: String,
    /// `sha256:<hex>`.
    pub ca_cert_hash: String,
    /// Control-plane certificate key (masters only).
    pub certificate_key: Option<String>,
}

/// What the VNFM needs to use the cluster, plus the join information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInfo {
    /// API server URL.
    pub server: String,
    /// CA certificate (PEM).
    pub ca_cert: String,
    /// Admin bearer token.
    pub bearer_token: String,
    /// For joining further nodes.
    pub join: JoinInfo,
}

fn required<'a>(values: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str, String> {
    values
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            format!("the install script did not report `{key}` (a `{PREFIX}{key}=...` line)")
        })
}

/// The join information in `values`.
pub fn join_info(values: &BTreeMap<String, String>) -> Result<JoinInfo, String> {
    let token = required(values, "token")?.to_string();
    let ca_cert_hash = required(values, "ssl_ca_cert_hash")?.to_string();
    if !ca_cert_hash.starts_with("sha256:") {
        return Err(format!(
            "the reported ssl_ca_cert_hash does not start with `sha256:` (got {} characters)",
            ca_cert_hash.len()
        ));
    }
    Ok(JoinInfo {
        token,
        ca_cert_hash,
        certificate_key: values
            .get("certificate_key")
            .cloned()
            .filter(|k| !k.is_empty()),
    })
}

/// The cluster information in `values` (from `init-master`).
pub fn cluster_info(values: &BTreeMap<String, String>) -> Result<ClusterInfo, String> {
    let server = required(values, "server")?.to_string();
    if !server.starts_with("https://") {
        return Err(format!(
            "the reported server `{server}` is not an https:// URL"
        ));
    }
    let ca_b64 = required(values, "ssl_ca_cert")?;
    let ca_cert = STANDARD
        .decode(ca_b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|pem| pem.contains("-----BEGIN CERTIFICATE-----"))
        .ok_or("the reported ssl_ca_cert is not a base64-encoded PEM certificate")?;
    Ok(ClusterInfo {
        server,
        ca_cert,
        bearer_token: required(values, "bearer_token")?.to_string(),
        join: join_info(values)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn reads_prefixed_lines_only() {
        let out = format!(
            "progress...\n+ set -x noise server=https://evil\n  K8S_CLUSTER_INFO server=https://10.0.0.1:6443\nK8S_CLUSTER_INFO token=abcdef.0123456789abcdef\nK8S_CLUSTER_INFO ssl_ca_cert_hash=sha256:00ff\nK8S_CLUSTER_INFO certificate_key=c0ffee\nK8S_CLUSTER_INFO bearer_token=eyJ.a=b\nK8S_CLUSTER_INFO ssl_ca_cert={}\n",
            STANDARD.encode(PEM)
        );
        let info = cluster_info(&parse(&out)).unwrap();
        assert_eq!(info.server, "https://10.0.0.1:6443");
        assert_eq!(info.ca_cert, PEM);
        // Values may contain '=': only the first one splits.
        assert_eq!(info.bearer_token, "eyJ.a=b");
        assert_eq!(info.join.certificate_key.as_deref(), Some("c0ffee"));
    }

    #[test]
    fn missing_or_malformed_values_are_named() {
        let e = cluster_info(&parse("K8S_CLUSTER_INFO server=https://x\n")).unwrap_err();
        assert!(e.contains("`ssl_ca_cert`"), "{e}");
        let e = join_info(&parse(
            "K8S_CLUSTER_INFO token=t\nK8S_CLUSTER_INFO ssl_ca_cert_hash=md5:1\n",
        ))
        .unwrap_err();
        assert!(e.contains("sha256:"), "{e}");
        let e = cluster_info(&parse(&format!(
            "K8S_CLUSTER_INFO server=http://x\nK8S_CLUSTER_INFO ssl_ca_cert={}",
            STANDARD.encode(PEM)
        )))
        .unwrap_err();
        assert!(e.contains("https://"), "{e}");
    }
}
