//! Validation of a `vimConnectionInfo` entry per VIM type: known `accessInfo` attributes
//! only, string members, the endpoint URL (http or https) and the PEM CA certificate, and the
//! OpenStack and Kubernetes credentials. Errors name the attribute as a JSON pointer relative
//! to the entry.

use serde_json::Value;
use vnfm_types::{KeyValuePairs, SecretString};

use super::access::{
    KubernetesAccess, KubernetesCredentials, OpenStackAccess, OpenStackCredentials,
};
use crate::LcmError;
use crate::error::echo;

pub(super) fn only_known(access: &KeyValuePairs, known: &[&str]) -> Result<(), LcmError> {
    if let Some(k) = access.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(LcmError::invalid(
            format!("/accessInfo/{}", pointer_token(k)),
            format!("unknown attribute; allowed: {}", known.join(", ")),
        ));
    }
    Ok(())
}

/// RFC 6901 escaping of one reference token (cut, since it echoes input).
pub(super) fn pointer_token(k: &str) -> String {
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
    match url::Url::parse(endpoint) {
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

pub(super) fn parse_openstack(
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

pub(super) fn parse_kubernetes(
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
