//! [`KubernetesVimKind`]: how the core validates, stores and shows Kubernetes VIM connections
//! (`ETSINFV.KUBERNETES.V_1`, and `ETSINFV.HELM.V_3`: a cluster driven through Helm).
//!
//! | `interfaceInfo` | `accessInfo` |
//! |---|---|
//! | `endpoint` (API server URL), `ssl_ca_cert` (PEM; alias `caCert`) | **`bearer_token`** (alias `bearerToken`), or `username` + **`password`**; `namespace` |
//!
//! Secret members are in bold; other `accessInfo` members are refused.

use serde_json::Value;
use vnfm_driver_api::vim_kind::fields::{
    ca_cert, canonical_entry, echo, endpoint, only_known, opt_str, required,
};
use vnfm_driver_api::{InvalidVimInfo, VimKind};
use vnfm_types::{KeyValuePairs, VimConnectionInfo};

use crate::{HELM_VIM_TYPE, KUBERNETES_VIM_TYPE};

const ACCESS_MEMBERS: &[&str] = &[
    "bearer_token",
    "bearerToken",
    "username",
    "password",
    "namespace",
];

/// The kind of [`KUBERNETES_VIM_TYPE`] and [`HELM_VIM_TYPE`]: VIMs that run containers.
#[derive(Debug, Clone, Copy, Default)]
pub struct KubernetesVimKind;

impl VimKind for KubernetesVimKind {
    fn vim_types(&self) -> &[&'static str] {
        &[KUBERNETES_VIM_TYPE, HELM_VIM_TYPE]
    }

    /// OpenStack Tacker's `kubernetes` (its v1 guides and VIM files), and the types in any
    /// case.
    fn aliases(&self) -> &[(&'static str, &'static str)] {
        &[
            ("kubernetes", KUBERNETES_VIM_TYPE),
            (KUBERNETES_VIM_TYPE, KUBERNETES_VIM_TYPE),
            (HELM_VIM_TYPE, HELM_VIM_TYPE),
        ]
    }

    fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, InvalidVimInfo> {
        let empty = KeyValuePairs::new();
        let access = info.access_info.as_ref().unwrap_or(&empty);
        let iface = info.interface_info.as_ref().unwrap_or(&empty);
        only_known(access, ACCESS_MEMBERS)?;
        let s = |k: &[&str]| opt_str(access, "accessInfo", k);
        let endpoint = endpoint(iface, access)?;
        let ca_cert = ca_cert(iface)?;
        let token = s(&["bearer_token", "bearerToken"])?;
        let username = s(&["username"])?;
        let password = s(&["password"])?;
        let namespace = s(&["namespace"])?;
        if let Some(ns) = &namespace {
            let valid = ns.len() <= 63
                && ns
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !ns.starts_with('-')
                && !ns.ends_with('-');
            if !valid {
                return Err(InvalidVimInfo::new(
                    "/accessInfo/namespace",
                    format!(
                        "`{}` is not a Kubernetes namespace name (lowercase letters, digits and '-', at most 63)",
                        echo(ns)
                    ),
                ));
            }
        }
        let mut canonical = KeyValuePairs::new();
        match (token, username.is_some() || password.is_some()) {
            (Some(_), true) => {
                return Err(InvalidVimInfo::new(
                    "/accessInfo/bearer_token",
                    "give either bearer_token or username and password, not both",
                ));
            }
            (Some(t), false) => {
                canonical.insert("bearer_token".into(), Value::String(t));
            }
            (None, true) => {
                let username = required(username, "/accessInfo/username", "the user name")?;
                let password = required(password, "/accessInfo/password", "the user's password")?;
                canonical.insert("username".into(), Value::String(username));
                canonical.insert("password".into(), Value::String(password));
            }
            (None, false) => {
                return Err(InvalidVimInfo::new(
                    "/accessInfo/bearer_token",
                    "missing: a bearer_token, or username and password",
                ));
            }
        }
        if let Some(ns) = namespace {
            canonical.insert("namespace".into(), Value::String(ns));
        }
        Ok(canonical_entry(
            info,
            &endpoint,
            ca_cert.as_deref(),
            canonical,
        ))
    }

    fn secret_members(&self) -> &[&'static str] {
        &["bearer_token", "password"]
    }

    fn runs_containers(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn canonical(access: Value) -> Result<VimConnectionInfo, InvalidVimInfo> {
        KubernetesVimKind.canonical(
            &serde_json::from_value(json!({"vimType": KUBERNETES_VIM_TYPE,
                "interfaceInfo": {"endpoint": "https://k8s.example:6443"}, "accessInfo": access}))
            .unwrap(),
        )
    }

    #[test]
    fn the_token_alias_is_folded_and_credentials_are_exclusive() {
        let c = canonical(json!({"bearerToken": "t", "namespace": "vnf-b"})).unwrap();
        let access = c.access_info.unwrap();
        assert_eq!(access["bearer_token"], "t");
        assert!(!access.contains_key("bearerToken"));
        assert_eq!(
            canonical(json!({"bearer_token": "t", "password": "p"}))
                .unwrap_err()
                .pointer,
            "/accessInfo/bearer_token"
        );
        assert_eq!(
            canonical(json!({})).unwrap_err().pointer,
            "/accessInfo/bearer_token"
        );
        assert_eq!(
            canonical(json!({"username": "u"})).unwrap_err().pointer,
            "/accessInfo/password"
        );
    }

    #[test]
    fn namespaces_are_dns_labels() {
        for bad in ["Upper", "-lead", "trail-", "a_b"] {
            assert_eq!(
                canonical(json!({"bearer_token": "t", "namespace": bad}))
                    .unwrap_err()
                    .pointer,
                "/accessInfo/namespace",
                "{bad}"
            );
        }
    }
}
