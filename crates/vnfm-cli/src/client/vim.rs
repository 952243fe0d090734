//! `vnfm vim`: register VIMs from Tacker `vim-config.yaml` files (or the server's own body),
//! list, show (secrets redacted), delete.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};

/// `vnfm vim ...`.
#[derive(Debug, Subcommand)]
pub enum VimCommand {
    /// Register a VIM from a Tacker vim-config.yaml, a Tacker `{"vim": {...}}` request, or the
    /// server's own body (`{"name", "vimType", "interfaceInfo", "accessInfo", "extra"}`).
    Register(RegisterArgs),
    /// List the registered VIMs.
    List,
    /// Show one VIM (secret values read `***`).
    Show {
        /// VIM id.
        id: String,
    },
    /// Delete a VIM (refused while a VNF instance uses it).
    Delete {
        /// VIM id.
        id: String,
    },
}

/// VIM types `--type` accepts (Tacker's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VimKind {
    /// `ETSINFV.OPENSTACK_KEYSTONE.V_3`.
    Openstack,
    /// `ETSINFV.KUBERNETES.V_1`.
    Kubernetes,
    /// `ETSINFV.HELM.V_3` (a Kubernetes cluster driven through Helm).
    Helm,
}

impl VimKind {
    fn vim_type(self) -> &'static str {
        match self {
            VimKind::Openstack => "ETSINFV.OPENSTACK_KEYSTONE.V_3",
            VimKind::Kubernetes => "ETSINFV.KUBERNETES.V_1",
            VimKind::Helm => "ETSINFV.HELM.V_3",
        }
    }

    fn from_tacker(t: &str) -> Option<VimKind> {
        match t.to_ascii_lowercase().as_str() {
            "openstack" => Some(VimKind::Openstack),
            "kubernetes" | "k8s" => Some(VimKind::Kubernetes),
            "helm" => Some(VimKind::Helm),
            _ => None,
        }
    }
}

/// `vnfm vim register`.
#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The VIM type; defaults to the file's `type` (openstack when it has none and no
    /// bearer_token).
    #[arg(long = "type", value_enum)]
    pub kind: Option<VimKind>,
    /// The configuration file (YAML or JSON).
    #[arg(long, short = 'f', value_name = "FILE")]
    pub from_file: PathBuf,
    /// Display name [default: the file's `name`, else the file name without extension].
    #[arg(long)]
    pub name: Option<String>,
    /// Share the VIM with every project: their members see it (without its credentials) and
    /// name it in their requests. Needs a caller that sees every project (an admin).
    #[arg(long)]
    pub shared: bool,
    /// Print the body that would be sent (secrets redacted) instead of registering.
    #[arg(long)]
    pub dry_run: bool,
}

/// Members that hold secrets, in every accepted layout.
const SECRET_KEYS: &[&str] = &[
    "password",
    "bearer_token",
    "bearerToken",
    "applicationCredentialSecret",
    "client_secret",
];

/// The server body for a VIM configuration document read from `file`, and warnings about
/// what was not kept. Without a name (`name`, or one in the document) the VIM is named after
/// the file's stem.
///
/// # Errors
/// [`ClientError::BadFile`] saying what the document lacks or contradicts.
pub fn vim_body(
    doc: &Value,
    kind: Option<VimKind>,
    name: Option<&str>,
    file: &Path,
) -> Result<(Value, Vec<String>), ClientError> {
    let bad = |message: String| ClientError::BadFile {
        what: "VIM configuration file",
        path: file.to_path_buf(),
        message,
    };
    let default_name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "vim".into());
    let default_name = default_name.as_str();
    let Value::Object(top) = doc else {
        return Err(bad(
            "expected a mapping (auth_url, username, password, ...)".into(),
        ));
    };
    // The server's own layout passes through (the type must agree with --type).
    if let Some(vim_type) = top.get("vimType").and_then(Value::as_str) {
        if let Some(k) = kind
            && k.vim_type() != vim_type
        {
            return Err(bad(format!(
                "--type {} does not match the file's vimType {vim_type}",
                k.vim_type()
            )));
        }
        let mut body = top.clone();
        let name = name
            .map(str::to_owned)
            .or_else(|| top.get("name").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| default_name.to_owned());
        body.insert("name".into(), Value::String(name));
        return Ok((Value::Object(body), Vec::new()));
    }
    let mut warnings = Vec::new();
    // Tacker's API request `{"vim": {...}}`: flatten auth_cred and vim_project.
    let flat: Map<String, Value> = match top.get("vim") {
        Some(Value::Object(vim)) => {
            let mut flat = Map::new();
            for (k, v) in vim {
                match (k.as_str(), v) {
                    ("auth_cred", Value::Object(c)) => {
                        for (ck, cv) in c {
                            flat.insert(ck.clone(), cv.clone());
                        }
                    }
                    ("vim_project", Value::Object(p)) => {
                        for (pk, pv) in p {
                            let key = match pk.as_str() {
                                "name" => "project_name",
                                "id" => "project_id",
                                other => other,
                            };
                            flat.insert(key.to_owned(), pv.clone());
                        }
                    }
                    _ => {
                        flat.insert(k.clone(), v.clone());
                    }
                }
            }
            flat
        }
        _ => top.clone(),
    };
    let get = |k: &str| -> Option<String> {
        match flat.get(k) {
            Some(Value::String(s)) => {
                let t = s.trim();
                // Tacker samples write `ssl_ca_cert: None` for "no CA certificate".
                (!t.is_empty() && t != "None" && t != "null").then(|| s.clone())
            }
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        }
    };
    let extra_in = flat.get("extra").and_then(Value::as_object).cloned();
    let use_helm = extra_in
        .as_ref()
        .and_then(|e| e.get("use_helm"))
        .is_some_and(|v| {
            v == &json!(true) || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true"))
        });
    let file_kind = match get("type") {
        Some(t) => Some(VimKind::from_tacker(&t).ok_or_else(|| {
            bad(format!(
                "type `{t}` is not supported; use openstack, kubernetes or helm"
            ))
        })?),
        None => None,
    };
    let kind = match (kind, file_kind) {
        (Some(flag), Some(file))
            if flag != file && !(flag == VimKind::Helm && file == VimKind::Kubernetes) =>
        {
            return Err(bad(format!(
                "--type {} does not match the file's type {}",
                flag.vim_type(),
                file.vim_type()
            )));
        }
        (Some(flag), _) => flag,
        (None, Some(VimKind::Kubernetes)) if use_helm => VimKind::Helm,
        (None, Some(file)) => file,
        (None, None) if flat.contains_key("bearer_token") => VimKind::Kubernetes,
        (None, None) => VimKind::Openstack,
    };
    if flat.contains_key("oidc_token_url") {
        return Err(bad(
            "OpenID Connect authentication (oidc_token_url) is not supported; use bearer_token, or username and password".into(),
        ));
    }
    let endpoint = get("auth_url")
        .ok_or_else(|| bad("auth_url is missing: the URL of the VIM's API".into()))?;
    let mut iface = Map::new();
    let mut access = Map::new();
    let mut used: Vec<&str> = vec!["type", "auth_url", "name", "extra", "ssl_ca_cert"];
    if let Some(ca) = get("ssl_ca_cert") {
        // Sent as read: the server repairs line breaks YAML folded into spaces.
        iface.insert("ssl_ca_cert".into(), Value::String(ca));
    }
    let put = |access: &mut Map<String, Value>, key: &str, value: Option<String>| {
        if let Some(v) = value {
            access.insert(key.into(), Value::String(v));
        }
    };
    match kind {
        VimKind::Openstack => {
            iface.insert("endpoint".into(), Value::String(keystone_v3(&endpoint)));
            let username = get("username").ok_or_else(|| {
                bad(
                    "username is missing (OpenStack VIMs authenticate with username and password)"
                        .into(),
                )
            })?;
            let password = get("password").ok_or_else(|| bad("password is missing".into()))?;
            put(&mut access, "username", Some(username));
            put(&mut access, "password", Some(password));
            let domain = get("domain_name");
            put(&mut access, "project", get("project_name"));
            put(&mut access, "projectId", get("project_id"));
            if get("project_name").is_none() && get("project_id").is_none() {
                return Err(bad(
                    "project_name (or project_id) is missing: the project to work in".into(),
                ));
            }
            put(
                &mut access,
                "projectDomain",
                get("project_domain_name")
                    .or_else(|| domain.clone())
                    .or(Some("Default".into())),
            );
            put(
                &mut access,
                "userDomain",
                get("user_domain_name")
                    .or(domain)
                    .or(Some("Default".into())),
            );
            put(
                &mut access,
                "region",
                get("region_name").or_else(|| get("region")),
            );
            used.extend([
                "username",
                "password",
                "project_name",
                "project_id",
                "project_domain_name",
                "user_domain_name",
                "domain_name",
                "region_name",
                "region",
            ]);
        }
        VimKind::Kubernetes | VimKind::Helm => {
            iface.insert("endpoint".into(), Value::String(endpoint));
            match (get("bearer_token"), get("username"), get("password")) {
                (Some(t), _, _) => put(&mut access, "bearer_token", Some(t)),
                (None, Some(u), Some(p)) => {
                    put(&mut access, "username", Some(u));
                    put(&mut access, "password", Some(p));
                }
                _ => {
                    return Err(bad(
                        "bearer_token (or username and password) is missing: how to authenticate to the API server".into(),
                    ));
                }
            }
            // Tacker's project_name of a Kubernetes VIM is the namespace.
            put(
                &mut access,
                "namespace",
                get("namespace").or_else(|| get("project_name")),
            );
            used.extend([
                "bearer_token",
                "username",
                "password",
                "project_name",
                "namespace",
            ]);
        }
    }
    if let Some(v) = get("cert_verify")
        && v.eq_ignore_ascii_case("false")
    {
        warnings.push(
            "cert_verify: False is not supported: the VNFM verifies the VIM's certificate (give ssl_ca_cert to trust a private CA)".into(),
        );
    }
    used.push("cert_verify");
    let mut extra = Map::new();
    if let Some(e) = extra_in {
        for (k, v) in e {
            if k != "use_helm" {
                extra.insert(k, v);
            }
        }
    }
    if let Some(d) = get("description") {
        extra.insert("description".into(), Value::String(d));
    }
    used.push("description");
    for k in flat.keys() {
        if !used.contains(&k.as_str()) {
            warnings.push(format!(
                "`{k}` is not used by this VIM type and was ignored"
            ));
        }
    }
    let name = name
        .map(str::to_owned)
        .or_else(|| get("name"))
        .unwrap_or_else(|| default_name.to_owned());
    let mut body = json!({
        "name": name,
        "vimType": kind.vim_type(),
        "interfaceInfo": iface,
        "accessInfo": access,
    });
    if !extra.is_empty() {
        body["extra"] = Value::Object(extra);
    }
    Ok((body, warnings))
}

/// Keystone's v3 API URL: Tacker configurations often give the identity root.
fn keystone_v3(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    if trimmed.ends_with("/v3") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v3")
    }
}

/// A copy with every secret member's value replaced by `***`.
pub fn redacted(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if SECRET_KEYS.contains(&k.as_str()) && !v.is_null() {
                        Value::String("***".into())
                    } else {
                        redacted(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

/// Tacker's documented Kubernetes files continue a quoted PEM certificate on lines that
/// start in column 0, which PyYAML reads but a YAML 1.2 parser refuses: indent every
/// column-0 line that is not a `key:` so that the quoted scalar continues.
fn indent_continuations(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        let is_key = line.split_once(':').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        });
        let starts_block = line.is_empty()
            || line.starts_with([' ', '\t', '#'])
            || line.starts_with("- ")
            || line == "---"
            || line == "...";
        if !is_key && !starts_block {
            out.push_str("  ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn read_doc(path: &Path) -> Result<Value, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|source| ClientError::ReadFile {
        what: "VIM configuration file",
        path: path.to_owned(),
        source,
    })?;
    serde_saphyr::from_str::<Value>(&text)
        .or_else(|e| serde_saphyr::from_str::<Value>(&indent_continuations(&text)).map_err(|_| e))
        .map_err(|e| ClientError::BadFile {
            what: "VIM configuration file",
            path: path.to_owned(),
            message: format!("not YAML or JSON: {e}"),
        })
}

fn vim_fields(v: &Value) -> String {
    fields(&[
        ("ID", s(v, "/id")),
        ("Name", s(v, "/name")),
        ("Type", s(v, "/vimType")),
        ("Endpoint", s(v, "/interfaceInfo/endpoint")),
        (
            "CA certificate",
            if s(v, "/interfaceInfo/ssl_ca_cert").is_empty() {
                String::new()
            } else {
                "yes".into()
            },
        ),
        ("Access", output::nested_yaml(&redacted(v), "/accessInfo")),
        ("Extra", output::nested_yaml(v, "/extra")),
        ("Created by", s(v, "/createdByInstance")),
        ("Project", s(v, "/project")),
        ("Shared", shared(v)),
    ])
}

/// `yes` for a VIM shared with every project, else empty.
fn shared(v: &Value) -> String {
    if v.get("shared").and_then(Value::as_bool) == Some(true) {
        "yes".into()
    } else {
        String::new()
    }
}

/// Runs a `vnfm vim` command.
pub async fn run(ctx: &Ctx, cmd: VimCommand) -> Result<(), ClientError> {
    match cmd {
        VimCommand::Register(a) => {
            let doc = read_doc(&a.from_file)?;
            let (mut body, warnings) = vim_body(&doc, a.kind, a.name.as_deref(), &a.from_file)?;
            if a.shared {
                body["shared"] = Value::Bool(true);
            }
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            if a.dry_run {
                let shown = redacted(&body);
                return output::print(ctx.format, &shown, |v| {
                    output::document(super::config::OutputFormat::Yaml, v)
                });
            }
            let api = ctx.api()?;
            let created = api
                .call(Method::POST, "/vnfm/v1/vims", Body::Json(body))
                .await?
                .body;
            output::print(ctx.format, &redacted(&created), vim_fields)
        }
        VimCommand::List => {
            let api = ctx.api()?;
            let list = Value::Array(api.list("/vnfm/v1/vims", &[]).await?);
            output::print(ctx.format, &redacted(&list), |v| {
                let mut t = Table::new(&["ID", "NAME", "TYPE", "ENDPOINT", "SHARED"]);
                for vim in v.as_array().into_iter().flatten() {
                    t.row(vec![
                        s(vim, "/id"),
                        s(vim, "/name"),
                        s(vim, "/vimType"),
                        s(vim, "/interfaceInfo/endpoint"),
                        shared(vim),
                    ]);
                }
                t.render()
            })
        }
        VimCommand::Show { id } => {
            let api = ctx.api()?;
            let vim = api
                .get(&format!("/vnfm/v1/vims/{}", super::seg(&id)))
                .await?;
            output::print(ctx.format, &redacted(&vim), vim_fields)
        }
        VimCommand::Delete { id } => {
            let api = ctx.api()?;
            api.call(
                Method::DELETE,
                &format!("/vnfm/v1/vims/{}", super::seg(&id)),
                Body::Empty,
            )
            .await?;
            ctx.done(
                &format!("VIM {id} deleted"),
                json!({"id": id, "deleted": true}),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[vnfm_test_env::needs(corpus)]
    #[test]
    fn tacker_getting_started_openstack_config() {
        let path = vnfm_test_env::corpus("tacker/doc-v2-getting-started/vim_config.yaml");
        let doc = read_doc(&path).unwrap();
        let (body, warnings) = vim_body(
            &doc,
            Some(VimKind::Openstack),
            None,
            Path::new("vim_config"),
        )
        .unwrap();
        assert_eq!(
            body,
            json!({
                "name": "vim_config",
                "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3",
                "interfaceInfo": {"endpoint": "http://192.168.56.10/identity/v3"},
                "accessInfo": {"username": "nfv_user", "password": "devstack", "project": "nfv",
                               "projectDomain": "default", "userDomain": "default"}
            })
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("cert_verify: False"));
    }

    #[vnfm_test_env::needs(corpus)]
    #[test]
    fn tacker_api_request_shape() {
        let path = vnfm_test_env::corpus("tacker/api-ref-samples/v1/vims/vims-create-request.json");
        let doc = read_doc(&path).unwrap();
        let (body, warnings) = vim_body(&doc, None, None, Path::new("x")).unwrap();
        assert_eq!(body["name"], "VIM0");
        assert_eq!(body["vimType"], "ETSINFV.OPENSTACK_KEYSTONE.V_3");
        assert_eq!(
            body["interfaceInfo"]["endpoint"],
            "http://192.168.56.10/identity/v3"
        );
        assert_eq!(body["accessInfo"]["userDomain"], "Default");
        assert_eq!(body["accessInfo"]["projectDomain"], "Default");
        assert_eq!(body["accessInfo"]["project"], "nfv");
        // cert_verify True is fine; is_default has no meaning here.
        assert_eq!(
            warnings,
            vec!["`is_default` is not used by this VIM type and was ignored"]
        );
    }

    #[test]
    fn kubernetes_bearer_token_with_ca_and_helm_extra() {
        let doc: Value = serde_saphyr::from_str(
            "auth_url: \"https://192.168.33.100:6443\"\nbearer_token: \"tok\"\nssl_ca_cert: \"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\"\nproject_name: \"default\"\ntype: \"kubernetes\"\nextra:\n  use_helm: true\n",
        )
        .unwrap();
        let (body, warnings) = vim_body(&doc, None, Some("edge"), Path::new("f")).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(body["vimType"], "ETSINFV.HELM.V_3");
        assert_eq!(body["name"], "edge");
        assert_eq!(
            body["accessInfo"],
            json!({"bearer_token": "tok", "namespace": "default"})
        );
        assert!(
            body["interfaceInfo"]["ssl_ca_cert"]
                .as_str()
                .unwrap()
                .starts_with("-----BEGIN")
        );
        assert!(body.get("extra").is_none());
        // --type kubernetes keeps the plain type even with use_helm.
        let (body, _) = vim_body(&doc, Some(VimKind::Kubernetes), None, Path::new("f")).unwrap();
        assert_eq!(body["vimType"], "ETSINFV.KUBERNETES.V_1");
    }

    #[test]
    fn tacker_kubernetes_file_with_an_unindented_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vim-k8s.yaml");
        std::fs::write(
            &path,
            "auth_url: \"https://192.168.33.100:6443\"\nbearer_token: \"tok\"\nssl_ca_cert: \"-----BEGIN CERTIFICATE-----\nMIIDBzCCAe+gAwIBAgIJ\nAKsample==\n-----END CERTIFICATE-----\"\nproject_name: \"default\"\ntype: \"kubernetes\"\n",
        )
        .unwrap();
        let doc = read_doc(&path).unwrap();
        let (body, _) = vim_body(&doc, None, None, Path::new("k")).unwrap();
        // YAML folds the quoted scalar's line breaks; the server restores them.
        assert_eq!(
            body["interfaceInfo"]["ssl_ca_cert"],
            "-----BEGIN CERTIFICATE----- MIIDBzCCAe+gAwIBAgIJ AKsample== -----END CERTIFICATE-----"
        );
        assert_eq!(body["accessInfo"]["namespace"], "default");
    }

    #[test]
    fn kubernetes_password_and_none_ca() {
        let doc = json!({"auth_url": "https://k:6443", "username": "admin", "password": "pw",
                         "ssl_ca_cert": "None", "project_name": "default", "type": "kubernetes"});
        let (body, _) = vim_body(&doc, None, None, Path::new("k")).unwrap();
        assert_eq!(body["interfaceInfo"], json!({"endpoint": "https://k:6443"}));
        assert_eq!(
            body["accessInfo"],
            json!({"username": "admin", "password": "pw", "namespace": "default"})
        );
    }

    #[test]
    fn refusals_name_what_is_missing() {
        let e = vim_body(
            &json!({"auth_url": "https://k", "type": "kubernetes"}),
            None,
            None,
            Path::new("k"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bearer_token"), "{e}");
        let e = vim_body(&json!({"username": "u"}), None, None, Path::new("k"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("auth_url"), "{e}");
        let e = vim_body(
            &json!({"auth_url": "https://k", "type": "vmware"}),
            None,
            None,
            Path::new("k"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("vmware"), "{e}");
        let e = vim_body(
            &json!({"auth_url": "https://k", "type": "kubernetes", "bearer_token": "t"}),
            Some(VimKind::Openstack),
            None,
            Path::new("k"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not match"), "{e}");
        let e = vim_body(
            &json!({"auth_url": "https://k", "oidc_token_url": "https://o", "client_secret": "s"}),
            Some(VimKind::Kubernetes),
            None,
            Path::new("k"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("OpenID"), "{e}");
        assert!(!e.contains("\"s\""));
        assert!(vim_body(&json!([1]), None, None, Path::new("k")).is_err());
    }

    #[test]
    fn native_body_passes_through() {
        let doc = json!({"vimType": "ETSINFV.KUBERNETES.V_1", "interfaceInfo": {"endpoint": "https://k"},
                         "accessInfo": {"bearer_token": "t"}});
        let (body, w) = vim_body(&doc, Some(VimKind::Kubernetes), None, Path::new("file")).unwrap();
        assert!(w.is_empty());
        assert_eq!(body["name"], "file");
        assert_eq!(body["accessInfo"]["bearer_token"], "t");
        assert!(vim_body(&doc, Some(VimKind::Openstack), None, Path::new("f")).is_err());
    }

    #[test]
    fn redaction_covers_every_secret_key() {
        let v = json!({"accessInfo": {"password": "p", "bearer_token": "t", "username": "u"},
                       "list": [{"applicationCredentialSecret": "s"}]});
        let r = redacted(&v);
        assert_eq!(r["accessInfo"]["password"], "***");
        assert_eq!(r["accessInfo"]["bearer_token"], "***");
        assert_eq!(r["accessInfo"]["username"], "u");
        assert_eq!(r["list"][0]["applicationCredentialSecret"], "***");
    }
}
