//! Tacker's VIM attributes to the registry's and back: the request body of `POST` and `PUT`
//! ([`TackerVimBody`]), the registry VIM it registers ([`connection`]) or the change it makes
//! ([`change`]), and a registry VIM as Tacker shows it ([`tacker_view`]), as the table of the
//! parent module says.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use vnfm_lcm::vim::{DEFAULT_FLAG, REDACTED, VimUpdate, VimView};
use vnfm_types::{KeyValuePairs, VimConnectionInfo};

use crate::error::ApiError;
use crate::scope::Tenancy;

const OPENSTACK: &str = "ETSINFV.OPENSTACK_KEYSTONE.V_3";
const KUBERNETES: &str = "ETSINFV.KUBERNETES.V_1";
const HELM: &str = "ETSINFV.HELM.V_3";
/// The `extra` member holding the Tacker-only attributes.
const META: &str = "tacker";
/// The member of [`META`] (and of the Tacker view) listing what the VIM's registration
/// accepted but a user should know (a cluster whose certificate is not verified).
const WARNINGS: &str = "warnings";
/// The Kubernetes VIM's `extra` member choosing where CNFs go (`vim` or `tacker`).
const NAMESPACE_RULE: &str = "namespaceRule";
/// The Kubernetes VIM's `interfaceInfo` member that turns certificate verification off.
const SKIP_TLS_VERIFY: &str = "insecureSkipTlsVerify";

/// The Tacker attribute a registry pointer (relative to a `vimConnectionInfo`) names.
pub(super) fn tacker_pointer(pointer: &str) -> String {
    let member = match pointer {
        "/name" => "name",
        "/vimType" => "type",
        "/interfaceInfo/endpoint" | "/accessInfo/authUrl" => "auth_url",
        "/interfaceInfo/ssl_ca_cert" | "/interfaceInfo/caCert" => "auth_cred/ssl_ca_cert",
        "/interfaceInfo/skipCertificateVerification" => "auth_cred/cert_verify",
        "/accessInfo/username" => "auth_cred/username",
        "/accessInfo/password" => "auth_cred/password",
        "/accessInfo/bearer_token" => "auth_cred/bearer_token",
        "/accessInfo/userDomain" => "auth_cred/user_domain_name",
        "/accessInfo/project" | "/accessInfo/projectId" | "/accessInfo/namespace" => {
            "vim_project/name"
        }
        "/accessInfo/projectDomain" => "vim_project/project_domain_name",
        "/accessInfo/region" => "placement_attr/regions/0",
        other => return format!("/vim{other}"),
    };
    format!("/vim/{member}")
}

/// Body of `POST` and `PUT`: `{"vim": {...}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Envelope {
    pub(super) vim: TackerVimBody,
}

/// Tacker's VIM attributes as a client sends them.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct TackerVimBody {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "type")]
    vim_type: Option<String>,
    #[serde(default)]
    auth_url: Option<String>,
    #[serde(default)]
    auth_cred: Option<Map<String, Value>>,
    #[serde(default)]
    vim_project: Option<Map<String, Value>>,
    #[serde(default)]
    is_default: Option<Value>,
    #[serde(default)]
    placement_attr: Option<Value>,
    #[serde(default)]
    extra: Option<Value>,
    #[serde(default)]
    pub(super) tenant_id: Option<String>,
    #[serde(default)]
    pub(super) project_id: Option<String>,
    /// Set by callers that see every project only (see [`crate::vims::may_share`]).
    #[serde(default)]
    shared: Option<Value>,
    // Read-only attributes: refused when given.
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    status: Option<Value>,
    #[serde(default)]
    created_at: Option<Value>,
    #[serde(default)]
    updated_at: Option<Value>,
}

impl TackerVimBody {
    /// Refuses the attributes a client cannot set (`put`: those it cannot change either).
    pub(super) fn refuse_read_only(&self, put: bool) -> Result<(), ApiError> {
        let given = [
            ("id", self.id.is_some()),
            ("status", self.status.is_some()),
            ("created_at", self.created_at.is_some()),
            ("updated_at", self.updated_at.is_some()),
            ("type", put && self.vim_type.is_some()),
            ("auth_url", put && self.auth_url.is_some()),
            ("tenant_id", put && self.tenant_id.is_some()),
            ("project_id", put && self.project_id.is_some()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((name, _)) => Err(ApiError::invalid(
                format!("/vim/{name}"),
                format!(
                    "/vim/{name}: the attribute cannot be {}",
                    if put { "changed" } else { "set" }
                ),
            )),
            None => Ok(()),
        }
    }

    /// The `shared` the body sets, if any, refused (`403`) unless `tenancy` sees every
    /// project.
    pub(super) fn shared(&self, tenancy: &Tenancy) -> Result<Option<bool>, ApiError> {
        let Some(v) = &self.shared else {
            return Ok(None);
        };
        let shared = boolean(v, "/vim/shared")?;
        crate::vims::may_share(tenancy, "/vim/shared")?;
        Ok(Some(shared))
    }
}

/// A boolean as Tacker takes it: `true`/`false`, or the strings `True`/`False`
/// (any case).
fn boolean(value: &Value, pointer: &str) -> Result<bool, ApiError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ApiError::invalid(
            pointer,
            format!("{pointer}: must be true or false"),
        )),
    }
}

/// The string member `key` of `map` (`None` when absent, null or empty).
fn text(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(
            format!("{at}/{key}"),
            format!("{at}/{key}: must be a string"),
        )),
    }
}

/// The `auth_cred` members this API knows; members Tacker itself adds to what it returns
/// (`auth_url`, `key_type`, `secret_uuid`, the project) are accepted and ignored, so a shown
/// VIM can be sent back.
const AUTH_CRED_MEMBERS: &[&str] = &[
    "username",
    "password",
    "user_domain_name",
    "cert_verify",
    "bearer_token",
    "ssl_ca_cert",
];
const AUTH_CRED_IGNORED: &[&str] = &[
    "auth_url",
    "key_type",
    "secret_uuid",
    "project_id",
    "project_name",
    "project_domain_name",
];

fn check_members(
    map: &Map<String, Value>,
    known: &[&str],
    ignored: &[&str],
    at: &str,
) -> Result<(), ApiError> {
    for key in map.keys() {
        if !known.contains(&key.as_str()) && !ignored.contains(&key.as_str()) {
            return Err(ApiError::invalid(
                format!("{at}/{key}"),
                format!(
                    "{at}/{}: unknown attribute; this server takes {}",
                    crate::util::cut(key, 60),
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Tacker's `type` of a registry VIM type.
fn tacker_type(vim_type: &str) -> &str {
    match vim_type {
        OPENSTACK => "openstack",
        KUBERNETES | HELM => "kubernetes",
        other => other,
    }
}

/// The Tacker user `extra`: an object without the members this API keeps for itself.
fn user_extra(extra: Option<&Value>) -> Result<Map<String, Value>, ApiError> {
    match extra {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => {
            for reserved in [META, DEFAULT_FLAG] {
                if m.contains_key(reserved) {
                    return Err(ApiError::invalid(
                        format!("/vim/extra/{reserved}"),
                        format!(
                            "/vim/extra/{reserved}: reserved by this server (use is_default, description)"
                        ),
                    ));
                }
            }
            Ok(m.clone())
        }
        Some(_) => Err(ApiError::invalid(
            "/vim/extra",
            "/vim/extra: must be an object",
        )),
    }
}

/// The region of `placement_attr` (`{"regions": ["RegionOne", ...]}`): its first one.
fn region(placement: Option<&Value>) -> Result<Option<String>, ApiError> {
    match placement {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => match m.get("regions") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(r)) => match r.first() {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(ApiError::invalid(
                    "/vim/placement_attr/regions/0",
                    "/vim/placement_attr/regions/0: must be a string",
                )),
            },
            Some(_) => Err(ApiError::invalid(
                "/vim/placement_attr/regions",
                "/vim/placement_attr/regions: must be a list of region names",
            )),
        },
        Some(_) => Err(ApiError::invalid(
            "/vim/placement_attr",
            "/vim/placement_attr: must be an object",
        )),
    }
}

fn now() -> String {
    vnfm_types::time::format_utc_seconds(vnfm_types::time::Timestamp::now())
}

/// `auth_url` as Tacker stores an OpenStack one: ending in `/v3`.
fn keystone_v3(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    if trimmed.ends_with("/v3") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v3")
    }
}

/// The registry VIM of a `POST` body.
pub(super) fn connection(body: &TackerVimBody) -> Result<VimConnectionInfo, ApiError> {
    let missing = |name: &str| {
        ApiError::invalid(
            format!("/vim/{name}"),
            format!("/vim/{name}: missing (Tacker's VIM body needs it)"),
        )
    };
    let kind = body.vim_type.as_deref().ok_or_else(|| missing("type"))?;
    let auth_url = body
        .auth_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| missing("auth_url"))?;
    let cred = body
        .auth_cred
        .as_ref()
        .ok_or_else(|| missing("auth_cred"))?;
    let project = body
        .vim_project
        .as_ref()
        .ok_or_else(|| missing("vim_project"))?;
    check_members(cred, AUTH_CRED_MEMBERS, AUTH_CRED_IGNORED, "/vim/auth_cred")?;
    let mut extra = user_extra(body.extra.as_ref())?;
    let vim_type = match kind {
        "openstack" => OPENSTACK,
        "kubernetes" if extra.get("use_helm").and_then(Value::as_bool) == Some(true) => HELM,
        "kubernetes" => KUBERNETES,
        other => {
            return Err(ApiError::invalid(
                "/vim/type",
                format!(
                    "/vim/type: `{}` is not a VIM type of this API; use openstack or kubernetes",
                    crate::util::cut(other, 60)
                ),
            ));
        }
    };
    let mut iface = KeyValuePairs::new();
    let mut access = KeyValuePairs::new();
    let put = |map: &mut KeyValuePairs, k: &str, v: Option<String>| {
        if let Some(v) = v {
            map.insert(k.into(), Value::String(v));
        }
    };
    let c = |k: &str| text(cred, k, "/vim/auth_cred");
    let p = |k: &str| text(project, k, "/vim/vim_project");
    let mut warnings = Vec::new();
    if vim_type == OPENSTACK {
        if let Some(ca) = c("ssl_ca_cert")? {
            iface.insert("ssl_ca_cert".into(), Value::String(ca));
        }
    } else {
        // A cluster registered the Tacker way places CNFs as Tacker does, unless the VIM
        // file's `extra` says otherwise.
        extra
            .entry(NAMESPACE_RULE)
            .or_insert_with(|| Value::String("tacker".into()));
        let (ca, skip, warning) = cluster_trust(c("ssl_ca_cert")?);
        iface.extend([("ssl_ca_cert".into(), ca), (SKIP_TLS_VERIFY.into(), skip)]);
        iface.retain(|_, v| !v.is_null());
        warnings.extend(warning);
    }
    for key in ["username", "password"] {
        put(&mut access, key, c(key)?);
    }
    if vim_type == OPENSTACK {
        iface.insert("endpoint".into(), Value::String(keystone_v3(auth_url)));
        put(&mut access, "userDomain", c("user_domain_name")?);
        put(&mut access, "project", p("name")?);
        put(&mut access, "projectDomain", p("project_domain_name")?);
        put(&mut access, "region", region(body.placement_attr.as_ref())?);
        if let Some(v) = cred.get("cert_verify")
            && !boolean(v, "/vim/auth_cred/cert_verify")?
        {
            iface.insert("skipCertificateVerification".into(), Value::Bool(true));
        }
    } else {
        iface.insert("endpoint".into(), Value::String(auth_url.to_owned()));
        put(&mut access, "bearer_token", c("bearer_token")?);
        put(&mut access, "namespace", p("name")?);
    }
    if let Some(d) = &body.is_default
        && boolean(d, "/vim/is_default")?
    {
        extra.insert(DEFAULT_FLAG.into(), Value::Bool(true));
    }
    let mut meta = Map::new();
    meta.insert(
        "description".into(),
        Value::String(body.description.clone().unwrap_or_default()),
    );
    if let Some(pa) = body.placement_attr.as_ref().filter(|v| !v.is_null()) {
        meta.insert("placement_attr".into(), pa.clone());
    }
    if let Some(t) = body.tenant_id.as_ref().or(body.project_id.as_ref()) {
        meta.insert("tenant_id".into(), Value::String(t.clone()));
    }
    meta.insert("created_at".into(), Value::String(now()));
    if !warnings.is_empty() {
        meta.insert(WARNINGS.into(), json!(warnings));
    }
    extra.insert(META.into(), Value::Object(meta));
    Ok(VimConnectionInfo {
        vim_id: None,
        vim_type: vim_type.to_owned(),
        interface_info: Some(iface),
        access_info: Some(access),
        extra: Some(extra),
    })
}

/// `interfaceInfo`'s `ssl_ca_cert` and skip-verification members of a Kubernetes VIM whose
/// Tacker `ssl_ca_cert` is `ca`, and the warning the VIM then carries. Tacker verifies the
/// API server's certificate only when a CA is given (`"None"`, what its `gen_vim_config.sh`
/// writes without one, means none), so a Tacker VIM file without a CA keeps working here,
/// said on the VIM.
fn cluster_trust(ca: Option<String>) -> (Value, Value, Option<String>) {
    match ca.filter(|c| !c.trim().eq_ignore_ascii_case("none")) {
        Some(ca) => (Value::String(ca), Value::Null, None),
        None => (
            Value::Null,
            Value::Bool(true),
            Some(
                "no CA certificate (auth_cred.ssl_ca_cert) was given, so the API server's certificate is not verified, as OpenStack Tacker does; give the cluster's CA to have it verified"
                    .into(),
            ),
        ),
    }
}

/// The registry change of a `PUT` body on a VIM of type `vim_type` (Tacker's rules: new
/// `username` and `password` replace a `bearer_token`, a new `bearer_token` replaces them).
pub(super) fn change(body: &TackerVimBody, vim_type: &str) -> Result<VimUpdate, ApiError> {
    let mut update = VimUpdate {
        name: body.name.clone(),
        ..VimUpdate::default()
    };
    let mut iface = KeyValuePairs::new();
    let mut access = KeyValuePairs::new();
    let openstack = vim_type == OPENSTACK;
    let mut warning_change = None;
    if let Some(cred) = &body.auth_cred {
        check_members(cred, AUTH_CRED_MEMBERS, AUTH_CRED_IGNORED, "/vim/auth_cred")?;
        let c = |k: &str| text(cred, k, "/vim/auth_cred");
        let username = c("username")?;
        // An empty or redacted password keeps the stored one.
        let password = c("password")?.filter(|p| p != REDACTED);
        let token = c("bearer_token")?.filter(|t| t != REDACTED);
        if openstack {
            if let Some(u) = username {
                access.insert("username".into(), Value::String(u));
            }
            if let Some(p) = password {
                access.insert("password".into(), Value::String(p));
            }
            if let Some(d) = c("user_domain_name")? {
                access.insert("userDomain".into(), Value::String(d));
            }
            if let Some(v) = cred.get("cert_verify") {
                let skip = !boolean(v, "/vim/auth_cred/cert_verify")?;
                iface.insert(
                    "skipCertificateVerification".into(),
                    if skip { Value::Bool(true) } else { Value::Null },
                );
            }
        } else if let (Some(u), Some(p)) = (&username, &password) {
            access.insert("username".into(), Value::String(u.clone()));
            access.insert("password".into(), Value::String(p.clone()));
            access.insert("bearer_token".into(), Value::Null);
        } else if let Some(t) = token {
            access.insert("bearer_token".into(), Value::String(t));
            access.insert("username".into(), Value::Null);
            access.insert("password".into(), Value::Null);
        }
        if cred.contains_key("ssl_ca_cert") {
            if openstack {
                iface.insert(
                    "ssl_ca_cert".into(),
                    c("ssl_ca_cert")?.map_or(Value::Null, Value::String),
                );
            } else {
                let (ca, skip, warning) = cluster_trust(c("ssl_ca_cert")?);
                iface.extend([("ssl_ca_cert".into(), ca), (SKIP_TLS_VERIFY.into(), skip)]);
                warning_change = Some(warning.map_or(Value::Null, |w| json!([w])));
            }
        }
    }
    if let Some(project) = &body.vim_project {
        let p = |k: &str| text(project, k, "/vim/vim_project");
        if openstack {
            if let Some(n) = p("name")? {
                access.insert("project".into(), Value::String(n));
            }
            if let Some(d) = p("project_domain_name")? {
                access.insert("projectDomain".into(), Value::String(d));
            }
        } else if let Some(n) = p("name")? {
            access.insert("namespace".into(), Value::String(n));
        }
    }
    if openstack && body.placement_attr.is_some() {
        access.insert(
            "region".into(),
            region(body.placement_attr.as_ref())?.map_or(Value::Null, Value::String),
        );
    }
    let mut extra = user_extra(body.extra.as_ref())?;
    if let Some(d) = &body.is_default {
        let on = boolean(d, "/vim/is_default")?;
        extra.insert(
            DEFAULT_FLAG.into(),
            if on { Value::Bool(true) } else { Value::Null },
        );
    }
    let mut meta = Map::new();
    if let Some(d) = &body.description {
        meta.insert("description".into(), Value::String(d.clone()));
    }
    if let Some(pa) = &body.placement_attr {
        meta.insert("placement_attr".into(), pa.clone());
    }
    meta.insert("updated_at".into(), Value::String(now()));
    if let Some(w) = warning_change {
        meta.insert(WARNINGS.into(), w);
    }
    extra.insert(META.into(), Value::Object(meta));
    update.extra = Some(extra);
    if !iface.is_empty() {
        update.interface_info = Some(iface);
    }
    if !access.is_empty() {
        update.access_info = Some(access);
    }
    Ok(update)
}

/// A registry VIM in Tacker's shape (secrets read `"***"`).
pub(super) fn tacker_view(v: &VimView) -> Map<String, Value> {
    let empty = KeyValuePairs::new();
    let iface = v.interface_info.as_ref().unwrap_or(&empty);
    let access = v.access_info.as_ref().unwrap_or(&empty);
    let mut extra = v.extra.clone().unwrap_or_default();
    let meta = match extra.remove(META) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let is_default = extra.remove(DEFAULT_FLAG).and_then(|d| d.as_bool()) == Some(true)
        && v.created_by_instance.is_none();
    let s = |m: &KeyValuePairs, k: &str| m.get(k).cloned();
    let mut cred = Map::new();
    let mut project = Map::new();
    let copy = |to: &mut Map<String, Value>, from: &KeyValuePairs, src: &str, dst: &str| {
        if let Some(x) = s(from, src) {
            to.insert(dst.into(), x);
        }
    };
    copy(&mut cred, access, "username", "username");
    copy(&mut cred, access, "password", "password");
    copy(&mut cred, access, "bearer_token", "bearer_token");
    copy(&mut cred, iface, "ssl_ca_cert", "ssl_ca_cert");
    if v.vim_type == OPENSTACK {
        copy(&mut cred, access, "userDomain", "user_domain_name");
        copy(
            &mut cred,
            access,
            "applicationCredentialId",
            "application_credential_id",
        );
        copy(
            &mut cred,
            access,
            "applicationCredentialSecret",
            "application_credential_secret",
        );
        let skip = iface
            .get("skipCertificateVerification")
            .is_some_and(|x| x == &Value::Bool(true) || x == "true");
        cred.insert(
            "cert_verify".into(),
            Value::String(if skip { "False" } else { "True" }.into()),
        );
        copy(&mut project, access, "project", "name");
        copy(&mut project, access, "projectId", "id");
        copy(&mut project, access, "projectDomain", "project_domain_name");
    } else {
        copy(&mut project, access, "namespace", "name");
    }
    // Whatever else could be secret is masked too (a VIM registered through another API).
    for (k, x) in cred.iter_mut() {
        if vnfm_lcm::vim::is_secret_member(k) {
            *x = Value::String(REDACTED.into());
        }
    }
    let placement = meta.get("placement_attr").cloned().unwrap_or_else(|| {
        access
            .get("region")
            .map_or(Value::Null, |r| json!({"regions": [r]}))
    });
    let mut out = Map::new();
    out.insert("id".into(), Value::String(v.id.to_string()));
    out.insert("name".into(), Value::String(v.name.clone()));
    out.insert(
        "description".into(),
        meta.get("description")
            .cloned()
            .unwrap_or(Value::String(String::new())),
    );
    out.insert(
        "type".into(),
        Value::String(tacker_type(&v.vim_type).into()),
    );
    out.insert(
        "auth_url".into(),
        iface.get("endpoint").cloned().unwrap_or(Value::Null),
    );
    out.insert("auth_cred".into(), Value::Object(cred));
    out.insert("vim_project".into(), Value::Object(project));
    out.insert("is_default".into(), Value::Bool(is_default));
    out.insert("shared".into(), Value::Bool(v.shared));
    out.insert("status".into(), Value::String("ACTIVE".into()));
    out.insert("placement_attr".into(), placement);
    out.insert("extra".into(), Value::Object(extra));
    if let Some(t) = v
        .project
        .as_ref()
        .map(|p| Value::String(p.clone()))
        .or_else(|| meta.get("tenant_id").cloned())
    {
        out.insert("tenant_id".into(), t.clone());
        out.insert("project_id".into(), t);
    }
    for key in ["created_at", "updated_at"] {
        out.insert(key.into(), meta.get(key).cloned().unwrap_or(Value::Null));
    }
    if let Some(w) = meta.get(WARNINGS) {
        out.insert(WARNINGS.into(), w.clone());
    }
    out
}
