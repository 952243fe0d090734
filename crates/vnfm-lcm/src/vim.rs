//! [`VimRegistry`]: the VIMs registered with the VNFM, with their secrets encrypted at rest.
//!
//! A VIM is registered as a SOL003 `VimConnectionInfo` of one of the supported types
//! ([`OPENSTACK`], [`KUBERNETES`], [`HELM`]). Registration validates it into a typed
//! [`VimAccess`] (errors name the offending attribute as a JSON pointer, e.g.
//! `/accessInfo/password`), normalizes the accepted aliases to one canonical layout, and stores
//! it as two parts: the public JSON (endpoint, user name, project, CA certificate, ...) and
//! the secret values (password, application credential secret, bearer token) sealed with the
//! [`Keyring`]. [`VimRegistry::show`] returns the public part with each secret replaced by
//! `"***"`; only [`VimDirectory::resolve`] decrypts, into a [`ResolvedVim`] for a driver.
//!
//! # Canonical layout
//!
//! | type | `interfaceInfo` | `accessInfo` |
//! |---|---|---|
//! | `ETSINFV.OPENSTACK_KEYSTONE.V_3` | `endpoint` (Keystone v3 URL; alias `accessInfo/authUrl`), `ssl_ca_cert` (PEM; alias `caCert`) | `username` + **`password`**, or `applicationCredentialId` + **`applicationCredentialSecret`**; `project` (name) or `projectId`; `projectDomain` (with `project`), `userDomain` (with `username`), `region` |
//! | `ETSINFV.KUBERNETES.V_1`, `ETSINFV.HELM.V_3` | `endpoint` (API server URL), `ssl_ca_cert` (PEM; alias `caCert`) | **`bearer_token`** (alias `bearerToken`), or `username` + **`password`**; `namespace` |
//!
//! Secret attributes are in bold. Other `interfaceInfo` members and `extra` are kept as given;
//! unknown `accessInfo` members are refused (they could be secrets that would otherwise be
//! stored in clear).
//!
//! # Inline credentials in requests
//! As the runner's [`VimDirectory`], the registry also takes the `vimConnectionInfo` entries
//! that operation requests carry with inline `accessInfo` ([`VimDirectory::seal_inline`]): each
//! is validated like a registration (errors point into the request:
//! `/vimConnectionInfo/<key>/accessInfo/password`) and stored as a VIM of its own, named
//! `inline:<instanceId>:<key>` and owned by the instance (`createdByInstance`), with a new
//! `vimId` (the NFVO's `vimId`, if the entry had one, is not kept). The request, and everything
//! the runner stores after it, holds only a reference to it. An entry whose content equals the
//! VIM the instance already references under the same key reuses that VIM; otherwise a new one
//! is registered, and the one it replaces is deleted once the operation has ended and nothing
//! references it ([`VimDirectory::release_inline`]), so a rollback can put the old reference
//! back. Deleting the VNF identifier deletes the VIMs it owns ([`VimDirectory::release_owned`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vnfm_driver_api::{ResolvedVim, VimRegistration};
use vnfm_store::{Conflict, Store, StoreError, Version, VimRecord};
use vnfm_types::{KeyValuePairs, SecretString, VimConnectionInfo, VimId, VnfInstanceId};

use crate::LcmError;
use crate::error::echo;
use crate::plan::merge_object;
use crate::ports::{SealedVim, VimDirectory};
use crate::secrets::{Keyring, new_id};

mod inline;

pub use inline::InlineVimDirectory;

/// `vimType` of an OpenStack VIM reached through Keystone v3.
pub const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
/// `vimType` of a Kubernetes cluster.
pub const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";
/// `vimType` of a Kubernetes cluster driven through Helm 3.
pub const HELM: &str = "ETSINFV.HELM.V_3";
/// What [`VimRegistry::show`] puts in place of a secret value.
pub const REDACTED: &str = "***";

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
    fn canonical(&self, info: &VimConnectionInfo) -> VimConnectionInfo {
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
fn secret_keys(vim_type: &str) -> &'static [&'static str] {
    match vim_type {
        OPENSTACK => &["password", "applicationCredentialSecret"],
        KUBERNETES | HELM => &["bearer_token", "password"],
        _ => &[],
    }
}

fn only_known(access: &KeyValuePairs, known: &[&str]) -> Result<(), LcmError> {
    if let Some(k) = access.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(LcmError::invalid(
            format!("/accessInfo/{}", pointer_token(k)),
            format!("unknown attribute; allowed: {}", known.join(", ")),
        ));
    }
    Ok(())
}

/// RFC 6901 escaping of one reference token (cut, since it echoes input).
fn pointer_token(k: &str) -> String {
    echo(&k.replace('~', "~0").replace('/', "~1"))
}

/// A non-empty string member, or `None` when absent. `null` counts as absent.
fn opt_str(map: &KeyValuePairs, section: &str, keys: &[&str]) -> Result<Option<String>, LcmError> {
    for key in keys {
        match map.get(*key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) if !s.trim().is_empty() => return Ok(Some(s.clone())),
            Some(Value::String(_)) => {
                return Err(LcmError::invalid(
                    format!("/{section}/{key}"),
                    "must not be empty",
                ));
            }
            Some(_) => {
                return Err(LcmError::invalid(
                    format!("/{section}/{key}"),
                    "must be a string",
                ));
            }
        }
    }
    Ok(None)
}

fn required(value: Option<String>, pointer: &str, why: &str) -> Result<String, LcmError> {
    value.ok_or_else(|| LcmError::invalid(pointer, format!("missing: {why}")))
}

fn check_endpoint(endpoint: &str, pointer: &str) -> Result<(), LcmError> {
    match reqwest::Url::parse(endpoint) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(LcmError::invalid(
            pointer,
            format!("`{}` is not an http(s) URL", echo(endpoint)),
        )),
    }
}

fn check_ca(ca: &Option<String>, pointer: &str) -> Result<(), LcmError> {
    match ca {
        Some(c) if !c.contains("-----BEGIN CERTIFICATE-----") => Err(LcmError::invalid(
            pointer,
            "must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)",
        )),
        _ => Ok(()),
    }
}

fn ca_cert(iface: &KeyValuePairs) -> Result<Option<String>, LcmError> {
    let ca = opt_str(iface, "interfaceInfo", &["ssl_ca_cert", "caCert"])?;
    check_ca(&ca, "/interfaceInfo/ssl_ca_cert")?;
    Ok(ca)
}

fn endpoint(iface: &KeyValuePairs, access: &KeyValuePairs) -> Result<String, LcmError> {
    let from_iface = opt_str(iface, "interfaceInfo", &["endpoint"])?;
    let (value, pointer) = match from_iface {
        Some(e) => (e, "/interfaceInfo/endpoint"),
        None => match opt_str(access, "accessInfo", &["authUrl"])? {
            Some(e) => (e, "/accessInfo/authUrl"),
            None => {
                return Err(LcmError::invalid(
                    "/interfaceInfo/endpoint",
                    "missing: the URL of the VIM's API endpoint",
                ));
            }
        },
    };
    check_endpoint(&value, pointer)?;
    Ok(value)
}

fn parse_openstack(
    iface: &KeyValuePairs,
    access: &KeyValuePairs,
) -> Result<OpenStackAccess, LcmError> {
    let s = |k: &str| opt_str(access, "accessInfo", &[k]);
    let endpoint = endpoint(iface, access)?;
    let ca_cert = ca_cert(iface)?;
    let username = s("username")?;
    let password = s("password")?;
    let app_id = s("applicationCredentialId")?;
    let app_secret = s("applicationCredentialSecret")?;
    let project = s("project")?;
    let project_id = s("projectId")?;
    let project_domain = s("projectDomain")?;
    let user_domain = s("userDomain")?;
    let region = s("region")?;
    let password_given = username.is_some() || password.is_some();
    let app_given = app_id.is_some() || app_secret.is_some();
    let credentials = match (password_given, app_given) {
        (true, true) => {
            return Err(LcmError::invalid(
                "/accessInfo/applicationCredentialId",
                "give either username and password or applicationCredentialId and applicationCredentialSecret, not both",
            ));
        }
        (false, true) => OpenStackCredentials::ApplicationCredential {
            id: required(
                app_id,
                "/accessInfo/applicationCredentialId",
                "the id of the application credential",
            )?,
            secret: SecretString::new(required(
                app_secret,
                "/accessInfo/applicationCredentialSecret",
                "the secret of the application credential",
            )?),
        },
        _ => {
            let username = required(
                username,
                "/accessInfo/username",
                "a user name and password, or an application credential",
            )?;
            let password = required(password, "/accessInfo/password", "the user's password")?;
            if user_domain.is_none() {
                return Err(LcmError::invalid(
                    "/accessInfo/userDomain",
                    "missing: the domain of the user (e.g. Default)",
                ));
            }
            if project.is_none() && project_id.is_none() {
                return Err(LcmError::invalid(
                    "/accessInfo/project",
                    "missing: the project (name in project, or id in projectId) to scope to",
                ));
            }
            OpenStackCredentials::Password {
                username,
                password: SecretString::new(password),
            }
        }
    };
    if project.is_some() && project_id.is_some() {
        return Err(LcmError::invalid(
            "/accessInfo/projectId",
            "give either project (a name) or projectId, not both",
        ));
    }
    if project.is_some() && project_domain.is_none() {
        return Err(LcmError::invalid(
            "/accessInfo/projectDomain",
            "missing: the domain of the project named in project (e.g. Default)",
        ));
    }
    Ok(OpenStackAccess {
        endpoint,
        ca_cert,
        credentials,
        project,
        project_id,
        project_domain,
        user_domain,
        region,
    })
}

fn parse_kubernetes(
    iface: &KeyValuePairs,
    access: &KeyValuePairs,
) -> Result<KubernetesAccess, LcmError> {
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
            return Err(LcmError::invalid(
                "/accessInfo/namespace",
                format!(
                    "`{}` is not a Kubernetes namespace name (lowercase letters, digits and '-', at most 63)",
                    echo(ns)
                ),
            ));
        }
    }
    let credentials = match (token, username.is_some() || password.is_some()) {
        (Some(_), true) => {
            return Err(LcmError::invalid(
                "/accessInfo/bearer_token",
                "give either bearer_token or username and password, not both",
            ));
        }
        (Some(t), false) => KubernetesCredentials::BearerToken(SecretString::new(t)),
        (None, true) => KubernetesCredentials::Basic {
            username: required(username, "/accessInfo/username", "the user name")?,
            password: SecretString::new(required(
                password,
                "/accessInfo/password",
                "the user's password",
            )?),
        },
        (None, false) => {
            return Err(LcmError::invalid(
                "/accessInfo/bearer_token",
                "missing: a bearer_token, or username and password",
            ));
        }
    };
    Ok(KubernetesAccess {
        endpoint,
        ca_cert,
        credentials,
        namespace,
    })
}

/// A registered VIM as shown to users: secrets replaced by [`REDACTED`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VimView {
    /// `vimId`.
    pub id: VimId,
    /// Display name.
    pub name: String,
    /// `vimType`.
    pub vim_type: String,
    /// `interfaceInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<KeyValuePairs>,
    /// `accessInfo` with every secret value replaced by `"***"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<KeyValuePairs>,
    /// `extra`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<KeyValuePairs>,
    /// The VNF instance whose lifecycle hook registered the VIM (or whose request carried it
    /// as inline credentials). While other instances use such a VIM, that instance cannot be
    /// terminated unless forced ([`crate::runner::FORCE_WITH_DEPENDENTS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_instance: Option<VnfInstanceId>,
    /// The VNF instances that use the VIM (their `vimConnectionInfo` references it, or one of
    /// their resources names it), ordered by id. The VIM cannot be deleted while any does.
    #[serde(default)]
    pub used_by_instances: Vec<VnfInstanceId>,
    /// Revision (the HTTP entity tag is `"<version>"`).
    pub version: i64,
}

/// A change to a registered VIM: each given section is applied to the stored one as a JSON
/// Merge Patch (RFC 7396: `null` removes a member). In `accessInfo`, a value `"***"` (what
/// [`VimRegistry::show`] returns for secrets) keeps the stored value, so a shown VIM can be
/// edited and sent back.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VimUpdate {
    /// New display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Patch of `interfaceInfo`.
    #[serde(default)]
    pub interface_info: Option<KeyValuePairs>,
    /// Patch of `accessInfo` (may hold secrets).
    #[serde(default)]
    pub access_info: Option<KeyValuePairs>,
    /// Patch of `extra`.
    #[serde(default)]
    pub extra: Option<KeyValuePairs>,
}

impl std::fmt::Debug for VimUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimUpdate")
            .field("name", &self.name)
            .field("interface_info", &self.interface_info)
            .field(
                "access_info_keys",
                &self
                    .access_info
                    .as_ref()
                    .map(|m| m.keys().collect::<Vec<_>>()),
            )
            .field("extra", &self.extra)
            .finish()
    }
}

/// The registered VIMs: CRUD for the API and the CLI, and the [`VimDirectory`] of the runner.
#[derive(Clone)]
pub struct VimRegistry {
    store: Arc<dyn Store>,
    keyring: Arc<Keyring>,
}

impl std::fmt::Debug for VimRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimRegistry")
            .field("keyring", &self.keyring)
            .finish_non_exhaustive()
    }
}

impl VimRegistry {
    /// A registry over `store`, sealing secrets with `keyring`.
    pub fn new(store: Arc<dyn Store>, keyring: Arc<Keyring>) -> Self {
        VimRegistry { store, keyring }
    }

    /// Registers a VIM under `name` (its `vimId` is `info.vim_id`, or a new UUID).
    /// `created_by` marks a VIM a lifecycle hook of that instance created.
    pub async fn create(
        &self,
        name: &str,
        info: &VimConnectionInfo,
        created_by: Option<&VnfInstanceId>,
    ) -> Result<VimView, LcmError> {
        if name.trim().is_empty() {
            return Err(LcmError::invalid("/name", "must not be empty"));
        }
        if info
            .vim_id
            .as_ref()
            .is_some_and(|v| v.as_str().trim().is_empty())
        {
            return Err(LcmError::invalid("/vimId", "must not be empty"));
        }
        let access = VimAccess::parse(info)?;
        let id = info.vim_id.clone().unwrap_or_else(|| VimId::new(new_id()));
        let mut info = info.clone();
        info.vim_id = Some(id.clone());
        let record = self.seal(&id, name, &access.canonical(&info), created_by.cloned())?;
        let version = self.store.create_vim(&record).await.map_err(store_err)?;
        tracing::info!(
            vim_id = %id,
            vim_type = access.vim_type(),
            created_by = created_by.map(|c| c.as_str()),
            "VIM registered"
        );
        Ok(view(&record, version, Vec::new()))
    }

    /// All registered VIMs, redacted, ordered by id, with the instances using each.
    pub async fn list(&self) -> Result<Vec<VimView>, LcmError> {
        let records = self.store.list_vims().await.map_err(store_err)?;
        let mut usage = self.usage().await?;
        Ok(records
            .iter()
            .map(|(r, v)| view(r, *v, usage.remove(&r.id).unwrap_or_default()))
            .collect())
    }

    /// The VIMs the hooks of `instance` registered, redacted, with the instances using each.
    pub async fn created_by(&self, instance: &VnfInstanceId) -> Result<Vec<VimView>, LcmError> {
        let records = self
            .store
            .vims_created_by(instance)
            .await
            .map_err(store_err)?;
        let mut out = Vec::with_capacity(records.len());
        for (r, v) in &records {
            out.push(view(r, *v, self.users(&r.id).await?));
        }
        Ok(out)
    }

    /// One VIM, redacted, with the instances using it. [`LcmError::NotFound`] if it is not
    /// registered.
    pub async fn show(&self, id: &VimId) -> Result<VimView, LcmError> {
        let (record, version) = self.get(id).await?;
        Ok(view(&record, version, self.users(id).await?))
    }

    /// The instances using VIM `id`.
    async fn users(&self, id: &VimId) -> Result<Vec<VnfInstanceId>, LcmError> {
        self.store.instances_using_vim(id).await.map_err(store_err)
    }

    /// The instances using each VIM.
    async fn usage(&self) -> Result<BTreeMap<VimId, Vec<VnfInstanceId>>, LcmError> {
        let mut out: BTreeMap<VimId, Vec<VnfInstanceId>> = BTreeMap::new();
        for (vim, instance) in self.store.vim_usage().await.map_err(store_err)? {
            out.entry(vim).or_default().push(instance);
        }
        Ok(out)
    }

    /// Applies `update` (validated like a registration; the secrets are re-encrypted with the
    /// newest key). `expected` is the version the caller read (an `If-Match`), if any.
    pub async fn update(
        &self,
        id: &VimId,
        update: &VimUpdate,
        expected: Option<Version>,
    ) -> Result<VimView, LcmError> {
        let (record, version) = self.get(id).await?;
        if let Some(e) = expected
            && e != version
        {
            return Err(LcmError::Conflict(format!(
                "VIM {id} is at version {version}, not {e}"
            )));
        }
        let mut info = self.open(&record)?;
        if let Some(p) = &update.interface_info {
            merge_patch(info.interface_info.get_or_insert_default(), p, false);
        }
        if let Some(p) = &update.access_info {
            merge_patch(info.access_info.get_or_insert_default(), p, true);
        }
        if let Some(p) = &update.extra {
            merge_patch(info.extra.get_or_insert_default(), p, false);
        }
        for section in [&mut info.interface_info, &mut info.extra] {
            if section.as_ref().is_some_and(|m| m.is_empty()) {
                *section = None;
            }
        }
        let access = VimAccess::parse(&info)?;
        let name = match &update.name {
            Some(n) if n.trim().is_empty() => {
                return Err(LcmError::invalid("/name", "must not be empty"));
            }
            Some(n) => n.as_str(),
            None => record.name.as_str(),
        };
        let new = self.seal(
            id,
            name,
            &access.canonical(&info),
            record.created_by_instance.clone(),
        )?;
        let version = self
            .store
            .update_vim(&new, version)
            .await
            .map_err(store_err)?;
        tracing::info!(vim_id = %id, "VIM updated");
        Ok(view(&new, version, self.users(id).await?))
    }

    /// Deletes a VIM; refused with [`LcmError::VimInUse`] (naming them) while instances use it.
    pub async fn delete(&self, id: &VimId) -> Result<(), LcmError> {
        let (_, version) = self.get(id).await?;
        let users = self
            .store
            .instances_using_vim(id)
            .await
            .map_err(store_err)?;
        if !users.is_empty() {
            return Err(in_use(id, users.iter().map(|u| u.to_string()).collect()));
        }
        match self.store.delete_vim(id, version).await {
            Ok(()) => {}
            Err(StoreError::Conflict(Conflict::InUse { by, .. })) => return Err(in_use(id, by)),
            Err(e) => return Err(store_err(e)),
        }
        tracing::info!(vim_id = %id, "VIM deleted");
        Ok(())
    }

    /// Re-encrypts, with the newest key, the secrets of every VIM sealed with an older one;
    /// returns how many were re-encrypted.
    pub async fn rotate_secrets(&self) -> Result<usize, LcmError> {
        let mut n = 0;
        for (mut record, version) in self.store.list_vims().await.map_err(store_err)? {
            if self.keyring.is_current(&record.secret) {
                continue;
            }
            record.secret = self
                .keyring
                .rotate(&record.secret, &secret_label(&record.id))?;
            self.store
                .update_vim(&record, version)
                .await
                .map_err(store_err)?;
            n += 1;
        }
        tracing::info!(reencrypted = n, "VIM secrets rotated to the newest key");
        Ok(n)
    }

    async fn get(&self, id: &VimId) -> Result<(VimRecord, Version), LcmError> {
        self.store
            .get_vim(id)
            .await
            .map_err(store_err)?
            .ok_or_else(|| LcmError::NotFound {
                kind: "VIM",
                id: id.to_string(),
            })
    }

    /// Splits the canonical `info` into public JSON and the sealed secret values.
    fn seal(
        &self,
        id: &VimId,
        name: &str,
        info: &VimConnectionInfo,
        created_by: Option<VnfInstanceId>,
    ) -> Result<VimRecord, LcmError> {
        let mut public = info.clone();
        let mut secrets = KeyValuePairs::new();
        if let Some(access) = public.access_info.as_mut() {
            for key in secret_keys(&info.vim_type) {
                // The public part keeps the key with a placeholder, so it shows which
                // secrets the VIM has.
                if let Some(v) = access.insert((*key).to_owned(), Value::String(REDACTED.into())) {
                    secrets.insert((*key).to_owned(), v);
                } else {
                    access.remove(*key);
                }
            }
        }
        let public = serde_json::to_value(&public)
            .map_err(|e| LcmError::Inconsistent(format!("VIM {id} does not serialize: {e}")))?;
        let plain = serde_json::to_vec(&secrets)
            .map_err(|e| LcmError::Inconsistent(format!("VIM {id} does not serialize: {e}")))?;
        Ok(VimRecord {
            id: id.clone(),
            name: name.to_owned(),
            vim_type: info.vim_type.clone(),
            public,
            secret: self.keyring.encrypt(&plain),
            created_by_instance: created_by,
        })
    }

    /// The full connection info of a record, secrets decrypted.
    fn open(&self, record: &VimRecord) -> Result<VimConnectionInfo, LcmError> {
        let corrupt = |why: String| {
            LcmError::Inconsistent(format!("stored VIM {} is unreadable: {why}", record.id))
        };
        let mut info: VimConnectionInfo =
            serde_json::from_value(record.public.clone()).map_err(|e| corrupt(e.to_string()))?;
        let plain = self
            .keyring
            .decrypt(&record.secret, &secret_label(&record.id))?;
        // The serde error of a secret document could quote it: give only its position.
        let secrets: KeyValuePairs = serde_json::from_slice(&plain).map_err(|e| {
            corrupt(format!(
                "its decrypted secrets are not a JSON object (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if !secrets.is_empty() {
            info.access_info.get_or_insert_default().extend(secrets);
        }
        info.vim_id = Some(record.id.clone());
        Ok(info)
    }
}

fn secret_label(id: &VimId) -> String {
    format!("the secrets of VIM {id}")
}

fn in_use(id: &VimId, mut by: Vec<String>) -> LcmError {
    const SHOWN: usize = 10;
    let more = by.len().saturating_sub(SHOWN);
    by.truncate(SHOWN);
    if more > 0 {
        by.push(format!("and {more} more"));
    }
    LcmError::VimInUse {
        vim_id: id.to_string(),
        instances: by,
    }
}

fn view(record: &VimRecord, version: Version, used_by: Vec<VnfInstanceId>) -> VimView {
    let info: Option<VimConnectionInfo> = serde_json::from_value(record.public.clone()).ok();
    // The public part holds every secret as "***" already (see `seal`).
    let (interface_info, access_info, extra) = match info {
        Some(i) => (i.interface_info, i.access_info, i.extra),
        None => (None, None, None),
    };
    VimView {
        id: record.id.clone(),
        name: record.name.clone(),
        vim_type: record.vim_type.clone(),
        interface_info,
        access_info,
        extra,
        created_by_instance: record.created_by_instance.clone(),
        used_by_instances: used_by,
        version: version.0,
    }
}

/// Whether the `accessInfo` member `key` holds a secret, judged by its name: it names a
/// password, secret, token, private key or credential, and not an id, URL, name or domain.
/// Used to redact entries that were not sealed into a registry (a registered VIM knows its
/// secrets exactly, see [`VimAccess::secret_keys`]).
pub fn is_secret_member(key: &str) -> bool {
    const MARKERS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "token",
        "private",
        "credential",
        "key",
    ];
    let k = key.to_ascii_lowercase();
    let names_something_public = ["id", "url", "uri", "name", "domain"]
        .iter()
        .any(|s| k.ends_with(s));
    !names_something_public && MARKERS.iter().any(|m| k.contains(m))
}

/// Replaces, in an `accessInfo` object, every value whose member name is secret
/// ([`is_secret_member`], at any depth) with `"***"`.
pub fn redact_access_info(access: &mut KeyValuePairs) {
    for (k, v) in access.iter_mut() {
        if v.is_null() {
            continue;
        }
        if is_secret_member(k) {
            *v = Value::String(REDACTED.into());
        } else {
            redact_nested(v);
        }
    }
}

fn redact_nested(v: &mut Value) {
    match v {
        Value::Object(m) => redact_access_info(m),
        Value::Array(items) => items.iter_mut().for_each(redact_nested),
        _ => {}
    }
}

/// `info` as shown to users: inline `accessInfo` secrets replaced by `"***"` (a reference to
/// a registered VIM has none).
pub fn redact_connection(info: &mut VimConnectionInfo) {
    if let Some(a) = info.access_info.as_mut() {
        redact_access_info(a);
    }
}

/// Redacts the entries of a `vimConnectionInfo` member of a JSON object (a request body or
/// `changedInfo`); `null` entries (removals in a merge patch) stay.
pub fn redact_vim_connections_in(doc: &mut KeyValuePairs) {
    let Some(Value::Object(map)) = doc.get_mut("vimConnectionInfo") else {
        return;
    };
    for entry in map.values_mut() {
        if let Some(Value::Object(a)) = entry.get_mut("accessInfo") {
            redact_access_info(a);
        }
    }
}

/// RFC 7396 merge of `patch` into `target`; with `keep_redacted`, members whose value is
/// `"***"` (at any depth of objects) are left as they are.
fn merge_patch(target: &mut KeyValuePairs, patch: &KeyValuePairs, keep_redacted: bool) {
    if keep_redacted {
        let mut patch = patch.clone();
        drop_redacted(&mut patch);
        merge_object(target, &patch);
    } else {
        merge_object(target, patch);
    }
}

/// Removes the members whose value is `"***"` from `patch` and the objects in it.
fn drop_redacted(patch: &mut KeyValuePairs) {
    patch.retain(|_, v| match v {
        Value::String(s) => s != REDACTED,
        Value::Object(inner) => {
            drop_redacted(inner);
            true
        }
        _ => true,
    });
}

/// A store failure as an [`LcmError`]: missing records are 404, concurrent changes 409.
pub(crate) fn store_err(e: StoreError) -> LcmError {
    match e {
        StoreError::NotFound { kind, id } => LcmError::NotFound { kind, id },
        e @ (StoreError::VersionMismatch { .. } | StoreError::Conflict(_)) => {
            LcmError::Conflict(e.to_string())
        }
        other => LcmError::Store(other.to_string()),
    }
}

#[async_trait]
impl VimDirectory for VimRegistry {
    async fn resolve(&self, key: &str, info: &VimConnectionInfo) -> Result<ResolvedVim, LcmError> {
        // An empty accessInfo carries nothing inline: treat it as a reference too.
        let inline = info.access_info.as_ref().is_some_and(|a| !a.is_empty());
        let (Some(vim_id), false) = (&info.vim_id, inline) else {
            // Inline access information (or nothing to look up): used as given.
            return Ok(ResolvedVim::new(key, info.clone()));
        };
        let pointer = format!("/vimConnectionInfo/{}", pointer_token(key));
        let Some((record, _)) = self.store.get_vim(vim_id).await.map_err(store_err)? else {
            return Err(LcmError::UnknownVim {
                pointer,
                vim_id: vim_id.to_string(),
            });
        };
        if !info.vim_type.is_empty() && info.vim_type != record.vim_type {
            return Err(LcmError::invalid(
                format!("{pointer}/vimType"),
                format!(
                    "`{}` does not match the type of registered VIM {vim_id}: {}",
                    echo(&info.vim_type),
                    record.vim_type
                ),
            ));
        }
        let mut full = self.open(&record)?;
        // The entry may refine the registered VIM's endpoints and extra (e.g. a namespace).
        if let Some(i) = &info.interface_info {
            full.interface_info
                .get_or_insert_default()
                .extend(i.clone());
        }
        if let Some(x) = &info.extra {
            full.extra.get_or_insert_default().extend(x.clone());
        }
        tracing::debug!(vim_id = %vim_id, connection = key, "VIM resolved");
        Ok(ResolvedVim::new(key, full))
    }

    async fn register(
        &self,
        registration: &VimRegistration,
        created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        let view = self
            .create(&registration.name, &registration.info, Some(created_by))
            .await?;
        Ok(VimConnectionInfo {
            vim_id: Some(view.id),
            vim_type: view.vim_type,
            interface_info: view.interface_info,
            access_info: None,
            extra: view.extra,
        })
    }

    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError> {
        self.delete(vim_id).await
    }

    async fn seal_inline(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        let pointer = format!("/vimConnectionInfo/{}", pointer_token(key));
        let access = VimAccess::parse(info).map_err(|e| under(e, &pointer))?;
        // The NFVO's vimId (if any) names the VIM in its own inventory; the sealed copy gets
        // an id of its own, so that two instances (or two operations) never collide on it.
        let mut probe = info.clone();
        probe.vim_id = None;
        let mut canonical = access.canonical(&probe);
        if let Some(existing) = self.reusable(current, owner, &canonical).await? {
            tracing::debug!(vim_id = %existing, connection = key, "inline VIM credentials unchanged; reusing their VIM");
            return Ok(SealedVim {
                reference: reference_to(existing, &canonical),
                created: false,
            });
        }
        let id = VimId::new(new_id());
        canonical.vim_id = Some(id.clone());
        let record = self.seal(
            &id,
            &inline_name(owner, key),
            &canonical,
            Some(owner.clone()),
        )?;
        self.store.create_vim(&record).await.map_err(store_err)?;
        tracing::info!(
            vim_id = %id,
            vim_type = access.vim_type(),
            connection = key,
            vnf_instance_id = %owner,
            "inline VIM credentials sealed into a VIM of the instance"
        );
        Ok(SealedVim {
            reference: reference_to(id, &canonical),
            created: true,
        })
    }

    async fn release_inline(
        &self,
        owner: &VnfInstanceId,
        candidates: &[VimId],
    ) -> Result<Vec<VimId>, LcmError> {
        let mut released = Vec::new();
        for id in candidates {
            if released.contains(id) {
                continue;
            }
            let Some((record, _)) = self.store.get_vim(id).await.map_err(store_err)? else {
                continue;
            };
            if is_inline_of(&record, owner) && self.delete_unused(id).await? {
                released.push(id.clone());
            }
        }
        Ok(released)
    }

    async fn release_owned(&self, owner: &VnfInstanceId) -> Result<Vec<VimId>, LcmError> {
        let mut released = Vec::new();
        for (record, _) in self.store.vims_created_by(owner).await.map_err(store_err)? {
            if self.delete_unused(&record.id).await? {
                released.push(record.id);
            }
        }
        Ok(released)
    }
}

impl VimRegistry {
    /// The VIM `current` references, when it is the inline VIM of `owner` and holds exactly
    /// `canonical` (secrets included).
    async fn reusable(
        &self,
        current: Option<&VimConnectionInfo>,
        owner: &VnfInstanceId,
        canonical: &VimConnectionInfo,
    ) -> Result<Option<VimId>, LcmError> {
        let Some(cur) = current else {
            return Ok(None);
        };
        let Some(id) = &cur.vim_id else {
            return Ok(None);
        };
        if cur.access_info.as_ref().is_some_and(|a| !a.is_empty()) {
            return Ok(None);
        }
        let Some((record, _)) = self.store.get_vim(id).await.map_err(store_err)? else {
            return Ok(None);
        };
        if !is_inline_of(&record, owner) {
            return Ok(None);
        }
        let mut stored = self.open(&record)?;
        stored.vim_id = None;
        Ok((&stored == canonical).then(|| id.clone()))
    }

    /// Deletes `id` unless an instance references it; whether it was deleted.
    async fn delete_unused(&self, id: &VimId) -> Result<bool, LcmError> {
        match self.delete(id).await {
            Ok(()) => Ok(true),
            Err(LcmError::VimInUse { .. } | LcmError::NotFound { .. }) => Ok(false),
            // Deleted or changed concurrently: whoever did it owns the outcome.
            Err(LcmError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Name of the VIM holding the inline credentials of connection `key` of `owner`.
fn inline_name(owner: &VnfInstanceId, key: &str) -> String {
    format!("{}{key}", inline_prefix(owner))
}

fn inline_prefix(owner: &VnfInstanceId) -> String {
    format!("inline:{owner}:")
}

/// Whether `record` holds inline credentials sealed for `owner`.
fn is_inline_of(record: &VimRecord, owner: &VnfInstanceId) -> bool {
    record.created_by_instance.as_ref() == Some(owner)
        && record.name.starts_with(&inline_prefix(owner))
}

/// The `vimConnectionInfo` entry referencing VIM `id` (no `accessInfo`: a reference).
fn reference_to(id: VimId, canonical: &VimConnectionInfo) -> VimConnectionInfo {
    VimConnectionInfo {
        vim_id: Some(id),
        vim_type: canonical.vim_type.clone(),
        interface_info: canonical.interface_info.clone(),
        access_info: None,
        extra: canonical.extra.clone(),
    }
}

/// `e` with its JSON pointer (relative to a `vimConnectionInfo` entry) put under `prefix`.
fn under(e: LcmError, prefix: &str) -> LcmError {
    match e {
        LcmError::InvalidRequest { pointer, message } => LcmError::InvalidRequest {
            pointer: format!("{prefix}{pointer}"),
            message,
        },
        LcmError::Unprocessable { pointer, message } => LcmError::Unprocessable {
            pointer: format!("{prefix}{pointer}"),
            message,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(v: Value) -> VimConnectionInfo {
        serde_json::from_value(v).unwrap()
    }

    fn err_pointer(v: Value) -> String {
        match VimAccess::parse(&info(v)).unwrap_err() {
            LcmError::InvalidRequest { pointer, .. } | LcmError::Unprocessable { pointer, .. } => {
                pointer
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn os(access: Value) -> Value {
        json!({"vimType": OPENSTACK, "interfaceInfo": {"endpoint": "http://ks/v3"}, "accessInfo": access})
    }

    #[test]
    fn openstack_validation_names_the_field() {
        let ok = json!({"username": "u", "password": "p", "project": "nfv",
                        "projectDomain": "Default", "userDomain": "Default"});
        assert!(VimAccess::parse(&info(os(ok.clone()))).is_ok());
        let mut no_pw = ok.clone();
        no_pw.as_object_mut().unwrap().remove("password");
        assert_eq!(err_pointer(os(no_pw)), "/accessInfo/password");
        let mut no_pd = ok.clone();
        no_pd.as_object_mut().unwrap().remove("projectDomain");
        assert_eq!(err_pointer(os(no_pd)), "/accessInfo/projectDomain");
        let mut no_ud = ok.clone();
        no_ud.as_object_mut().unwrap().remove("userDomain");
        assert_eq!(err_pointer(os(no_ud)), "/accessInfo/userDomain");
        let mut unknown = ok.clone();
        unknown["pasword"] = json!("typo");
        assert_eq!(err_pointer(os(unknown)), "/accessInfo/pasword");
        let mut number = ok.clone();
        number["password"] = json!(1234);
        assert_eq!(err_pointer(os(number)), "/accessInfo/password");
        assert_eq!(
            err_pointer(json!({"vimType": OPENSTACK, "accessInfo": ok})),
            "/interfaceInfo/endpoint"
        );
        assert_eq!(
            err_pointer(os(json!({"applicationCredentialId": "a"}))),
            "/accessInfo/applicationCredentialSecret"
        );
        assert_eq!(
            err_pointer(os(json!({"applicationCredentialId": "a", "username": "u"}))),
            "/accessInfo/applicationCredentialId"
        );
        let app = VimAccess::parse(&info(os(
            json!({"applicationCredentialId": "a", "applicationCredentialSecret": "s"}),
        )))
        .unwrap();
        assert!(matches!(
            app,
            VimAccess::OpenStack(OpenStackAccess {
                credentials: OpenStackCredentials::ApplicationCredential { .. },
                ..
            })
        ));
    }

    #[test]
    fn kubernetes_validation_names_the_field() {
        let k = |iface: Value, access: Value| json!({"vimType": KUBERNETES, "interfaceInfo": iface, "accessInfo": access});
        let ep = json!({"endpoint": "https://k8s:6443"});
        assert_eq!(
            err_pointer(k(ep.clone(), json!({}))),
            "/accessInfo/bearer_token"
        );
        assert_eq!(
            err_pointer(k(ep.clone(), json!({"username": "u"}))),
            "/accessInfo/password"
        );
        assert_eq!(
            err_pointer(k(ep.clone(), json!({"bearer_token": "t", "password": "p"}))),
            "/accessInfo/bearer_token"
        );
        assert_eq!(
            err_pointer(k(
                json!({"endpoint": "ftp://x"}),
                json!({"bearer_token": "t"})
            )),
            "/interfaceInfo/endpoint"
        );
        assert_eq!(
            err_pointer(k(
                json!({"endpoint": "https://k", "ssl_ca_cert": "nope"}),
                json!({"bearer_token": "t"})
            )),
            "/interfaceInfo/ssl_ca_cert"
        );
        assert_eq!(
            err_pointer(k(
                ep.clone(),
                json!({"bearer_token": "t", "namespace": "Bad_NS"})
            )),
            "/accessInfo/namespace"
        );
        assert_eq!(
            err_pointer(json!({"vimType": "kubernetes", "accessInfo": {}})),
            "/vimType"
        );
        // The camelCase alias is normalized to the canonical name.
        let a = VimAccess::parse(&info(k(ep.clone(), json!({"bearerToken": "t"})))).unwrap();
        let c = a.canonical(&info(k(ep, json!({"bearerToken": "t"}))));
        assert_eq!(
            c.access_info.unwrap().get("bearer_token"),
            Some(&json!("t"))
        );
    }

    #[test]
    fn merge_patch_keeps_redacted_and_removes_null() {
        let mut t = json!({"a": "1", "password": "old", "o": {"x": 1}})
            .as_object()
            .unwrap()
            .clone();
        let p = json!({"a": null, "password": "***", "o": {"y": 2}, "n": "v"})
            .as_object()
            .unwrap()
            .clone();
        merge_patch(&mut t, &p, true);
        assert_eq!(
            Value::Object(t),
            json!({"password": "old", "o": {"x": 1, "y": 2}, "n": "v"})
        );
    }
}
