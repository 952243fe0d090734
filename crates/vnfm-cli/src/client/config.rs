//! Where the client connects and with which credentials: command-line flags, then the
//! environment (`VNFM_URL`, `VNFM_CLIENT_ID`, `VNFM_CLIENT_SECRET`, ...), then a YAML
//! configuration file, then the defaults. Instead of an OAuth 2.0 client, a Keystone user
//! can log in as with the OpenStack client ([`super::openstack_auth`]: `--os-cloud`, the
//! `OS_*` variables).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Deserialize;

use super::error::ClientError;
use super::openstack_auth::{KeystoneLogin, keystone_login, process_env};

/// The server address used when no flag, variable or file gives one.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9890";

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Readable tables and summaries.
    Table,
    /// The server's JSON documents (pretty-printed).
    Json,
    /// The same documents as YAML.
    Yaml,
}

/// Options every client command takes (before or after the subcommand).
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Base URL of the VNFM (`vnfm serve`).
    #[arg(
        long,
        env = "VNFM_URL",
        global = true,
        value_name = "URL",
        help_heading = "Connection"
    )]
    pub url: Option<String>,
    /// OAuth 2.0 client id.
    #[arg(
        long,
        env = "VNFM_CLIENT_ID",
        global = true,
        value_name = "ID",
        help_heading = "Connection"
    )]
    pub client_id: Option<String>,
    /// OAuth 2.0 client secret (prefer the environment or the configuration file: command
    /// lines are visible to other users). A secret may begin with `-`, as generated ones do.
    #[arg(
        long,
        allow_hyphen_values = true,
        env = "VNFM_CLIENT_SECRET",
        hide_env_values = true,
        global = true,
        value_name = "SECRET",
        help_heading = "Connection"
    )]
    pub client_secret: Option<String>,
    /// The server's `credentials.json` (from its data directory) to take the client id and
    /// secret from.
    #[arg(
        long,
        env = "VNFM_CREDENTIALS_FILE",
        global = true,
        value_name = "FILE",
        help_heading = "Connection"
    )]
    pub credentials_file: Option<PathBuf>,
    /// Get tokens from this OAuth 2.0 authorization server (the issuer the server was given
    /// with `--oauth-issuer`, e.g. `https://keycloak.example/realms/nfv`) instead of the
    /// server's own `/oauth2/token`: by client credentials (--client-id, --client-secret of a
    /// client of that server) at the token endpoint its metadata names.
    #[arg(
        long,
        env = "VNFM_OAUTH_ISSUER",
        global = true,
        value_name = "URL",
        help_heading = "Connection"
    )]
    pub oauth_issuer: Option<String>,
    /// Log in through Keystone as the user of this cloud of `clouds.yaml` (as `openstack
    /// --os-cloud`); without it, the `OS_*` variables (`OS_AUTH_URL`, ...) log in when no
    /// OAuth 2.0 client is given.
    #[arg(
        long,
        env = "OS_CLOUD",
        global = true,
        value_name = "CLOUD",
        help_heading = "Connection"
    )]
    pub os_cloud: Option<String>,
    /// YAML configuration file [default: $XDG_CONFIG_HOME/vnfm/config.yaml when it exists].
    #[arg(
        long,
        env = "VNFM_CONFIG",
        global = true,
        value_name = "FILE",
        help_heading = "Connection"
    )]
    pub config: Option<PathBuf>,
    /// PEM file with the CA certificate(s) to trust for an https URL (in addition to the
    /// system's).
    #[arg(
        long,
        env = "VNFM_CA_CERT",
        global = true,
        value_name = "PEM",
        help_heading = "Connection"
    )]
    pub ca_cert: Option<PathBuf>,
    /// Do not keep the access token between runs (by default it is cached, mode 0600, in
    /// $XDG_CACHE_HOME/vnfm until it expires).
    #[arg(long, global = true, help_heading = "Connection")]
    pub no_token_cache: bool,
    /// Output format.
    #[arg(
        short = 'o',
        long,
        value_enum,
        default_value = "table",
        global = true,
        help_heading = "Output"
    )]
    pub output: OutputFormat,
}

/// The configuration file's members (all optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    url: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    credentials_file: Option<PathBuf>,
    oauth_issuer: Option<String>,
    ca_cert: Option<PathBuf>,
}

/// The server's `credentials.json`.
#[derive(Deserialize)]
struct CredentialsFile {
    client_id: String,
    client_secret: String,
}

/// Connection settings after every source has been applied.
#[derive(Clone)]
pub struct Settings {
    /// Base URL without a trailing slash.
    pub url: String,
    /// OAuth 2.0 client id.
    pub client_id: String,
    /// OAuth 2.0 client secret.
    pub client_secret: String,
    /// The external authorization server that issues the tokens (`None`: the VNFM's own
    /// `/oauth2/token`).
    pub oauth_issuer: Option<String>,
    /// Extra trusted CA certificates (PEM bytes).
    pub ca_pem: Option<Vec<u8>>,
    /// Where tokens are cached; `None` disables the cache.
    pub token_cache_dir: Option<PathBuf>,
    /// Log in through Keystone (the client id and secret are then unused), sending its token
    /// as `X-Auth-Token`.
    pub keystone: Option<KeystoneLogin>,
}

impl std::fmt::Debug for Settings {
    // The secret stays out of debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("oauth_issuer", &self.oauth_issuer)
            .field("token_cache_dir", &self.token_cache_dir)
            .finish_non_exhaustive()
    }
}

fn env_dir(var: &str, home_suffix: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(home_suffix)),
    }
}

/// The default configuration file path (`$XDG_CONFIG_HOME/vnfm/config.yaml`).
pub fn default_config_path() -> Option<PathBuf> {
    env_dir("XDG_CONFIG_HOME", ".config").map(|d| d.join("vnfm").join("config.yaml"))
}

/// The token cache directory: `$VNFM_CACHE_DIR`, else `$XDG_CACHE_HOME/vnfm`.
fn default_cache_dir() -> Option<PathBuf> {
    match std::env::var_os("VNFM_CACHE_DIR") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => env_dir("XDG_CACHE_HOME", ".cache").map(|d| d.join("vnfm")),
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, ClientError> {
    std::fs::read(path).map_err(|source| ClientError::ReadFile {
        what,
        path: path.to_owned(),
        source,
    })
}

fn read_config(path: &Path) -> Result<ConfigFile, ClientError> {
    let bytes = read("configuration file", path)?;
    let text = String::from_utf8(bytes).map_err(|_| ClientError::BadFile {
        what: "configuration file",
        path: path.to_owned(),
        message: "not UTF-8 text".into(),
    })?;
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
    }
    serde_saphyr::from_str(&text).map_err(|e| ClientError::BadFile {
        what: "configuration file",
        path: path.to_owned(),
        message: format!(
            "{e} (members: url, client_id, client_secret, credentials_file, oauth_issuer, ca_cert)"
        ),
    })
}

/// A relative path in the configuration file is relative to the file's directory.
fn relative_to(file: &Path, p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        p
    } else {
        file.parent().map(|d| d.join(&p)).unwrap_or(p)
    }
}

impl ClientArgs {
    /// Applies flags and environment (already merged by clap), then the configuration file,
    /// then the defaults.
    pub fn settings(&self) -> Result<Settings, ClientError> {
        let (file, file_path) = match &self.config {
            Some(p) => (read_config(p)?, Some(p.clone())),
            None => match default_config_path().filter(|p| p.is_file()) {
                Some(p) => (read_config(&p)?, Some(p)),
                None => (ConfigFile::default(), None),
            },
        };
        let in_file = |p: PathBuf| match &file_path {
            Some(f) => relative_to(f, p),
            None => p,
        };
        let url = self
            .url
            .clone()
            .or(file.url)
            .unwrap_or_else(|| DEFAULT_URL.to_owned());
        let url = url.trim().trim_end_matches('/').to_owned();
        match reqwest::Url::parse(&url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => {
                return Err(ClientError::Config(format!(
                    "the VNFM URL `{url}` is not an http(s) URL (e.g. {DEFAULT_URL})"
                )));
            }
        }
        let oauth_given = self.client_id.is_some() || self.credentials_file.is_some();
        if let Some(login) = keystone_login(self.os_cloud.as_deref(), oauth_given, &process_env)? {
            let mut ca_pem = match self.ca_cert.clone().or(file.ca_cert.map(in_file)) {
                Some(p) => Some(read("CA certificate", &p)?),
                None => None,
            };
            if let Some(p) = &login.ca_cert {
                ca_pem
                    .get_or_insert_default()
                    .extend(read("Keystone CA certificate", p)?);
            }
            return Ok(Settings {
                url,
                client_id: String::new(),
                client_secret: String::new(),
                oauth_issuer: None,
                ca_pem,
                token_cache_dir: None,
                keystone: Some(login),
            });
        }
        let mut client_id = self.client_id.clone();
        let mut client_secret = self.client_secret.clone();
        let credentials_file = self
            .credentials_file
            .clone()
            .or(file.credentials_file.map(in_file));
        if (client_id.is_none() || client_secret.is_none())
            && let Some(path) = &credentials_file
        {
            let creds: CredentialsFile = serde_json::from_slice(&read("credentials file", path)?)
                .map_err(|e| ClientError::BadFile {
                what: "credentials file",
                path: path.clone(),
                message: format!("expected {{\"client_id\": ..., \"client_secret\": ...}}: {e}"),
            })?;
            client_id = client_id.or(Some(creds.client_id));
            client_secret = client_secret.or(Some(creds.client_secret));
        }
        let client_id = client_id.or(file.client_id);
        let client_secret = client_secret.or(file.client_secret);
        let (Some(client_id), Some(client_secret)) = (client_id, client_secret) else {
            return Err(ClientError::Config(
                "no client credentials: give --client-id and --client-secret (or VNFM_CLIENT_ID and VNFM_CLIENT_SECRET), --credentials-file with the server's credentials.json, client_id/client_secret in the configuration file, or log in through Keystone with --os-cloud (or OS_CLOUD, or the OS_* variables)".into(),
            ));
        };
        let oauth_issuer = self
            .oauth_issuer
            .clone()
            .or(file.oauth_issuer)
            .map(|i| i.trim().trim_end_matches('/').to_owned());
        if let Some(issuer) = &oauth_issuer {
            match reqwest::Url::parse(issuer) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    return Err(ClientError::Config(format!(
                        "the OAuth 2.0 issuer `{issuer}` is not an http(s) URL (e.g. https://keycloak.example/realms/nfv)"
                    )));
                }
            }
        }
        let ca = self.ca_cert.clone().or(file.ca_cert.map(in_file));
        let ca_pem = match ca {
            Some(p) => Some(read("CA certificate", &p)?),
            None => None,
        };
        Ok(Settings {
            url,
            client_id,
            client_secret,
            oauth_issuer,
            ca_pem,
            token_cache_dir: if self.no_token_cache {
                None
            } else {
                default_cache_dir()
            },
            keystone: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ClientArgs {
        ClientArgs {
            url: None,
            client_id: None,
            client_secret: None,
            credentials_file: None,
            oauth_issuer: None,
            config: None,
            os_cloud: None,
            ca_cert: None,
            no_token_cache: true,
            output: OutputFormat::Table,
        }
    }

    #[test]
    fn flags_win_over_the_configuration_file() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.yaml");
        std::fs::write(
            &cfg,
            "url: http://file.example:1/\nclient_id: from-file\nclient_secret: file-secret\n",
        )
        .unwrap();
        let mut a = args();
        a.config = Some(cfg.clone());
        let s = a.settings().unwrap();
        assert_eq!(s.url, "http://file.example:1");
        assert_eq!(s.client_id, "from-file");
        a.url = Some("http://flag.example:2".into());
        a.client_id = Some("from-flag".into());
        let s = a.settings().unwrap();
        assert_eq!(s.url, "http://flag.example:2");
        assert_eq!(s.client_id, "from-flag");
        assert_eq!(s.client_secret, "file-secret");
        assert!(!format!("{s:?}").contains("file-secret"));
    }

    #[test]
    fn credentials_file_relative_to_the_configuration_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("credentials.json"),
            r#"{"client_id": "vnfm-x", "client_secret": "s3"}"#,
        )
        .unwrap();
        let cfg = dir.path().join("config.yaml");
        std::fs::write(&cfg, "credentials_file: credentials.json\n").unwrap();
        let mut a = args();
        a.config = Some(cfg);
        let s = a.settings().unwrap();
        assert_eq!(
            (s.client_id.as_str(), s.client_secret.as_str()),
            ("vnfm-x", "s3")
        );
        assert_eq!(s.url, DEFAULT_URL);
    }

    #[test]
    fn unknown_member_and_bad_url_are_configuration_errors() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.yaml");
        std::fs::write(&cfg, "uri: http://x\n").unwrap();
        let mut a = args();
        a.config = Some(cfg);
        let e = a.settings().unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("members: url"), "{e}");
        let mut a = args();
        a.url = Some("ftp://x".into());
        a.client_id = Some("a".into());
        a.client_secret = Some("b".into());
        assert!(matches!(a.settings(), Err(ClientError::Config(_))));
    }

    #[test]
    fn missing_credentials_say_where_to_give_them() {
        let mut a = args();
        a.config = Some(PathBuf::from("/nonexistent/vnfm.yaml"));
        assert!(matches!(a.settings(), Err(ClientError::ReadFile { .. })));
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("empty.yaml");
        std::fs::write(&cfg, "").unwrap();
        let mut a = args();
        a.config = Some(cfg);
        let e = a.settings().unwrap_err();
        assert!(e.to_string().contains("VNFM_CLIENT_ID"), "{e}");
    }
}
