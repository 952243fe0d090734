//! Logging in through Keystone as the OpenStack client does: a cloud of `clouds.yaml`
//! (`--os-cloud` / `OS_CLOUD`), else the `OS_*` variables (`OS_AUTH_URL`, `OS_USERNAME`,
//! `OS_PASSWORD`, `OS_PROJECT_NAME`, `OS_USER_DOMAIN_NAME`, `OS_PROJECT_DOMAIN_NAME`, or
//! `OS_APPLICATION_CREDENTIAL_ID` and `OS_APPLICATION_CREDENTIAL_SECRET`; `OS_CACERT`). The
//! token is the one `vnfm serve --keystone-url` accepts from a user of that project, so the
//! client sees what the user's project owns.
//!
//! `clouds.yaml` is looked for where the OpenStack client looks: `$OS_CLIENT_CONFIG_FILE`,
//! `./clouds.yaml`, `$XDG_CONFIG_HOME/openstack/clouds.yaml` (`~/.config/openstack`),
//! `/etc/openstack/clouds.yaml`. Variables `OS_PASSWORD` and `OS_APPLICATION_CREDENTIAL_SECRET`
//! fill a secret a cloud leaves out (as they would from `secure.yaml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use vnfm_keystone::ServiceCredentials;
use vnfm_types::SecretString;

use super::error::ClientError;

/// Where and as whom to log in to Keystone.
#[derive(Clone)]
pub struct KeystoneLogin {
    /// Keystone's URL (`/v3` is appended when missing).
    pub auth_url: String,
    /// The user and project, or the application credential.
    pub credentials: ServiceCredentials,
    /// A CA certificate file to trust for Keystone (`cacert`, `OS_CACERT`).
    pub ca_cert: Option<PathBuf>,
}

impl std::fmt::Debug for KeystoneLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoneLogin")
            .field("auth_url", &self.auth_url)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// A cloud's `auth` section (the members the password and application credential methods
/// use; the others are ignored, as the OpenStack client ignores what a method does not use).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CloudAuth {
    auth_url: Option<String>,
    username: Option<String>,
    password: Option<String>,
    project_name: Option<String>,
    user_domain_name: Option<String>,
    project_domain_name: Option<String>,
    application_credential_id: Option<String>,
    application_credential_secret: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Cloud {
    auth: CloudAuth,
    cacert: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CloudsFile {
    clouds: BTreeMap<String, Cloud>,
}

/// The `clouds.yaml` files looked at, in order.
fn clouds_files(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(f) = env("OS_CLIENT_CONFIG_FILE") {
        out.push(PathBuf::from(f));
    }
    out.push(PathBuf::from("clouds.yaml"));
    if let Some(d) = env("XDG_CONFIG_HOME") {
        out.push(Path::new(&d).join("openstack/clouds.yaml"));
    } else if let Some(h) = env("HOME") {
        out.push(Path::new(&h).join(".config/openstack/clouds.yaml"));
    }
    out.push(PathBuf::from("/etc/openstack/clouds.yaml"));
    out
}

/// The login of cloud `name` of the first `clouds.yaml` that has it.
fn from_cloud(
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<KeystoneLogin, ClientError> {
    let searched = clouds_files(env);
    for path in &searched {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let mut file: CloudsFile =
            serde_saphyr::from_str(&text).map_err(|e| ClientError::BadFile {
                what: "clouds.yaml",
                path: path.clone(),
                message: e.to_string(),
            })?;
        let Some(mut cloud) = file.clouds.remove(name) else {
            continue;
        };
        cloud.auth.password = cloud.auth.password.or_else(|| env("OS_PASSWORD"));
        cloud.auth.application_credential_secret = cloud
            .auth
            .application_credential_secret
            .or_else(|| env("OS_APPLICATION_CREDENTIAL_SECRET"));
        return login_of(cloud, &format!("cloud `{name}` of {}", path.display()));
    }
    Err(ClientError::Config(format!(
        "no cloud named `{name}` (--os-cloud / OS_CLOUD) in {}",
        searched
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The login the `OS_*` variables describe.
fn from_variables(env: &dyn Fn(&str) -> Option<String>) -> Result<KeystoneLogin, ClientError> {
    let cloud = Cloud {
        auth: CloudAuth {
            auth_url: env("OS_AUTH_URL"),
            username: env("OS_USERNAME"),
            password: env("OS_PASSWORD"),
            project_name: env("OS_PROJECT_NAME").or_else(|| env("OS_TENANT_NAME")),
            user_domain_name: env("OS_USER_DOMAIN_NAME"),
            project_domain_name: env("OS_PROJECT_DOMAIN_NAME"),
            application_credential_id: env("OS_APPLICATION_CREDENTIAL_ID"),
            application_credential_secret: env("OS_APPLICATION_CREDENTIAL_SECRET"),
        },
        cacert: env("OS_CACERT").map(PathBuf::from),
    };
    login_of(cloud, "the OS_* variables")
}

/// The login `cloud` describes (`source` names it in errors): an application credential
/// when it has one, else a user, password and project (domains default to `Default`).
fn login_of(cloud: Cloud, source: &str) -> Result<KeystoneLogin, ClientError> {
    let a = cloud.auth;
    let missing = |what: &str| {
        ClientError::Config(format!(
            "{source} give no {what}: a Keystone login needs auth_url and either \
             application_credential_id and application_credential_secret, or username, \
             password and project_name (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME)"
        ))
    };
    let auth_url = a.auth_url.ok_or_else(|| missing("auth_url"))?;
    let credentials = match a.application_credential_id {
        Some(id) => ServiceCredentials::ApplicationCredential {
            id,
            secret: SecretString::new(
                a.application_credential_secret
                    .ok_or_else(|| missing("application_credential_secret"))?,
            ),
        },
        None => ServiceCredentials::Password {
            user: a.username.ok_or_else(|| missing("username"))?,
            password: SecretString::new(a.password.ok_or_else(|| missing("password"))?),
            user_domain: a.user_domain_name.unwrap_or_else(|| "Default".into()),
            project: a.project_name.ok_or_else(|| missing("project_name"))?,
            project_domain: a.project_domain_name.unwrap_or_else(|| "Default".into()),
        },
    };
    Ok(KeystoneLogin {
        auth_url,
        credentials,
        ca_cert: cloud.cacert,
    })
}

/// The Keystone login the command asks for: cloud `os_cloud` when given, else the `OS_*`
/// variables when `OS_AUTH_URL` is set and `oauth_given` is false (OAuth 2.0 client
/// credentials given explicitly win over a shell's OpenStack variables); `None` otherwise.
pub fn keystone_login(
    os_cloud: Option<&str>,
    oauth_given: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<KeystoneLogin>, ClientError> {
    if let Some(name) = os_cloud.filter(|n| !n.is_empty()) {
        return from_cloud(name, env).map(Some);
    }
    if !oauth_given && env("OS_AUTH_URL").is_some() {
        return from_variables(env).map(Some);
    }
    Ok(None)
}

/// The process environment, empty values as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_cloud_of_clouds_yaml_logs_in_with_its_password_or_the_variables() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("clouds.yaml");
        std::fs::write(
            &file,
            "clouds:\n  demo:\n    auth:\n      auth_url: http://ks:5000/v3\n      username: alice\n      project_name: demo\n      user_domain_name: Default\n    region_name: RegionOne\n  app:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://ks:5000\n      application_credential_id: ac1\n      application_credential_secret: s3cret\n",
        )
        .unwrap();
        let path = file.display().to_string();
        let env = env_of(&[("OS_CLIENT_CONFIG_FILE", &path), ("OS_PASSWORD", "pw")]);
        let login = keystone_login(Some("demo"), false, &env).unwrap().unwrap();
        assert_eq!(login.auth_url, "http://ks:5000/v3");
        match login.credentials {
            ServiceCredentials::Password {
                user,
                password,
                project,
                project_domain,
                ..
            } => {
                assert_eq!(
                    (user.as_str(), password.expose(), project.as_str()),
                    ("alice", "pw", "demo")
                );
                assert_eq!(project_domain, "Default");
            }
            other => panic!("{other:?}"),
        }
        let login = keystone_login(Some("app"), true, &env).unwrap().unwrap();
        assert!(matches!(
            login.credentials,
            ServiceCredentials::ApplicationCredential { ref id, .. } if id == "ac1"
        ));
        let e = keystone_login(Some("nope"), false, &env).unwrap_err();
        assert!(e.to_string().contains("no cloud named `nope`"), "{e}");
    }

    #[test]
    fn the_os_variables_log_in_unless_oauth_credentials_are_given() {
        let env = env_of(&[
            ("OS_AUTH_URL", "http://ks:5000"),
            ("OS_USERNAME", "bob"),
            ("OS_PASSWORD", "pw"),
            ("OS_PROJECT_NAME", "other"),
        ]);
        let login = keystone_login(None, false, &env).unwrap().unwrap();
        assert!(matches!(
            login.credentials,
            ServiceCredentials::Password { ref project, .. } if project == "other"
        ));
        assert!(keystone_login(None, true, &env).unwrap().is_none());
        assert!(keystone_login(None, false, &env_of(&[])).unwrap().is_none());
        let e = keystone_login(None, false, &env_of(&[("OS_AUTH_URL", "http://ks")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("username"), "{e}");
        assert!(!e.contains("pw"), "{e}");
    }
}
