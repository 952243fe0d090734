//! [`VimAccess`]: the access to one VIM, validated and typed (OpenStack Keystone v3 or a
//! Kubernetes API server), the secret `accessInfo` keys of each VIM type, and the canonical
//! layout a registered VIM is stored in.

use serde_json::Value;
use vnfm_types::{KeyValuePairs, SecretString, VimConnectionInfo};

use super::parse::{only_known, parse_kubernetes, parse_openstack};
use super::{HELM, KUBERNETES, OPENSTACK};
use crate::LcmError;
use crate::error::echo;

const OPENSTACK_ACCESS: &[&str] = &[
    "username",
    "password",
    "applicationCredentialId",
    "applicationCredentialSecret",
    "project",
    "projectId",
    "projectDomain",
    "userDomain",
    "region",
    "authUrl",
];
const KUBERNETES_ACCESS: &[&str] = &[
    "bearer_token",
    "bearerToken",
    "username",
    "password",
    "namespace",
];

/// Access to one VIM, validated and typed.
#[derive(Debug, Clone, PartialEq)]
pub enum VimAccess {
    /// `ETSINFV.OPENSTACK_KEYSTONE.V_3`.
    OpenStack(OpenStackAccess),
    /// `ETSINFV.KUBERNETES.V_1`.
    Kubernetes(KubernetesAccess),
    /// `ETSINFV.HELM.V_3` (a Kubernetes cluster, driven through Helm).
    Helm(KubernetesAccess),
}

/// Keystone v3 access to an OpenStack VIM.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStackAccess {
    /// Keystone v3 endpoint (`interfaceInfo/endpoint`).
    pub endpoint: String,
    /// PEM CA certificate(s) to trust for the endpoint (`interfaceInfo/ssl_ca_cert`).
    pub ca_cert: Option<String>,
    /// How to authenticate.
    pub credentials: OpenStackCredentials,
    /// Project name.
    pub project: Option<String>,
    /// Project id.
    pub project_id: Option<String>,
    /// Domain of the project named by `project`.
    pub project_domain: Option<String>,
    /// Domain of the user named by `username`.
    pub user_domain: Option<String>,
    /// Region.
    pub region: Option<String>,
}

/// Keystone credentials.
#[derive(Debug, Clone, PartialEq)]
pub enum OpenStackCredentials {
    /// User name and password.
    Password {
        /// `username`.
        username: String,
        /// `password`.
        password: SecretString,
    },
    /// An application credential (scoped to its project).
    ApplicationCredential {
        /// `applicationCredentialId`.
        id: String,
        /// `applicationCredentialSecret`.
        secret: SecretString,
    },
}

/// Access to a Kubernetes API server.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesAccess {
    /// API server URL (`interfaceInfo/endpoint`).
    pub endpoint: String,
    /// PEM CA certificate of the cluster (`interfaceInfo/ssl_ca_cert`; not secret).
    pub ca_cert: Option<String>,
    /// How to authenticate.
    pub credentials: KubernetesCredentials,
    /// Namespace to deploy into.
    pub namespace: Option<String>,
}

/// Kubernetes credentials.
#[derive(Debug, Clone, PartialEq)]
pub enum KubernetesCredentials {
    /// A bearer token (service account token).
    BearerToken(SecretString),
    /// HTTP Basic user name and password.
    Basic {
        /// `username`.
        username: String,
        /// `password`.
        password: SecretString,
    },
}

impl VimAccess {
    /// Validates `info` (a `vimConnectionInfo` entry with its `accessInfo`). Errors are
    /// [`LcmError::InvalidRequest`] naming the attribute as a pointer relative to the entry
    /// (`/accessInfo/password`), or [`LcmError::Unprocessable`] for an unsupported `vimType`.
    pub fn parse(info: &VimConnectionInfo) -> Result<VimAccess, LcmError> {
        let empty = KeyValuePairs::new();
        let access = info.access_info.as_ref().unwrap_or(&empty);
        let iface = info.interface_info.as_ref().unwrap_or(&empty);
        match info.vim_type.as_str() {
            OPENSTACK => {
                only_known(access, OPENSTACK_ACCESS)?;
                parse_openstack(iface, access).map(VimAccess::OpenStack)
            }
            KUBERNETES => {
                only_known(access, KUBERNETES_ACCESS)?;
                parse_kubernetes(iface, access).map(VimAccess::Kubernetes)
            }
            HELM => {
                only_known(access, KUBERNETES_ACCESS)?;
                parse_kubernetes(iface, access).map(VimAccess::Helm)
            }
            other => Err(LcmError::Unprocessable {
                pointer: "/vimType".into(),
                message: format!(
                    "VIM type `{}` is not supported; supported types: {OPENSTACK}, {KUBERNETES}, {HELM}",
                    echo(other)
                ),
            }),
        }
    }

    /// The `vimType`.
    pub fn vim_type(&self) -> &'static str {
        match self {
            VimAccess::OpenStack(_) => OPENSTACK,
            VimAccess::Kubernetes(_) => KUBERNETES,
            VimAccess::Helm(_) => HELM,
        }
    }

    /// The `accessInfo` keys whose values are secret for this type.
    pub fn secret_keys(&self) -> &'static [&'static str] {
        secret_keys(self.vim_type())
    }

    /// `info` in the canonical layout: the endpoint and CA certificate in `interfaceInfo`
    /// (aliases removed), `accessInfo` rebuilt from the typed fields (secrets included).
    pub(super) fn canonical(&self, info: &VimConnectionInfo) -> VimConnectionInfo {
        let mut iface = info.interface_info.clone().unwrap_or_default();
        iface.remove("caCert");
        let mut access = KeyValuePairs::new();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                access.insert(k.into(), Value::String(v.clone()));
            }
        };
        let (endpoint, ca_cert) = match self {
            VimAccess::OpenStack(os) => {
                match &os.credentials {
                    OpenStackCredentials::Password { username, password } => {
                        put("username", &Some(username.clone()));
                        put("password", &Some(password.expose().to_owned()));
                    }
                    OpenStackCredentials::ApplicationCredential { id, secret } => {
                        put("applicationCredentialId", &Some(id.clone()));
                        put(
                            "applicationCredentialSecret",
                            &Some(secret.expose().to_owned()),
                        );
                    }
                }
                put("project", &os.project);
                put("projectId", &os.project_id);
                put("projectDomain", &os.project_domain);
                put("userDomain", &os.user_domain);
                put("region", &os.region);
                (&os.endpoint, &os.ca_cert)
            }
            VimAccess::Kubernetes(k) | VimAccess::Helm(k) => {
                match &k.credentials {
                    KubernetesCredentials::BearerToken(t) => {
                        put("bearer_token", &Some(t.expose().to_owned()));
                    }
                    KubernetesCredentials::Basic { username, password } => {
                        put("username", &Some(username.clone()));
                        put("password", &Some(password.expose().to_owned()));
                    }
                }
                put("namespace", &k.namespace);
                (&k.endpoint, &k.ca_cert)
            }
        };
        iface.insert("endpoint".into(), Value::String(endpoint.clone()));
        match ca_cert {
            Some(c) => iface.insert("ssl_ca_cert".into(), Value::String(c.clone())),
            None => iface.remove("ssl_ca_cert"),
        };
        VimConnectionInfo {
            vim_id: info.vim_id.clone(),
            vim_type: self.vim_type().to_owned(),
            interface_info: Some(iface),
            access_info: Some(access),
            extra: info.extra.clone(),
        }
    }
}

/// The secret `accessInfo` keys of a VIM type (canonical names).
pub(super) fn secret_keys(vim_type: &str) -> &'static [&'static str] {
    match vim_type {
        OPENSTACK => &["password", "applicationCredentialSecret"],
        KUBERNETES | HELM => &["bearer_token", "password"],
        _ => &[],
    }
}
