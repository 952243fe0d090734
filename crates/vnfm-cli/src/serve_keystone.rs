//! The Keystone options of `vnfm serve`: accept OpenStack Keystone tokens (`X-Auth-Token`,
//! as python-tackerclient sends them) next to the built-in OAuth 2.0 tokens.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use vnfm::lcm::types::SecretString;
use vnfm_keystone::{KeystoneConfig, KeystoneValidator, RolePolicy, ServiceCredentials};

use crate::serve_error::ServeError;

/// Keystone authentication options.
#[derive(Debug, Args)]
pub struct KeystoneArgs {
    /// Accept Keystone tokens (X-Auth-Token) validated by this Keystone
    /// (`http://keystone:5000/v3`); OAuth 2.0 bearer tokens stay accepted. Needs a service
    /// identity allowed to validate tokens (role `admin` or `service`): --keystone-user with
    /// --keystone-password-file and --keystone-project, or --keystone-app-credential-id with
    /// --keystone-app-credential-secret-file.
    #[arg(long, value_name = "URL")]
    keystone_url: Option<String>,
    /// The service user's name.
    #[arg(
        long,
        value_name = "NAME",
        requires_all = ["keystone_url", "keystone_password_file", "keystone_project"],
        conflicts_with = "keystone_app_credential_id"
    )]
    keystone_user: Option<String>,
    /// File holding the service user's password (one line; never given on the command line).
    #[arg(long, value_name = "FILE", requires = "keystone_user")]
    keystone_password_file: Option<PathBuf>,
    /// The service user's domain name.
    #[arg(long, default_value = "Default", value_name = "NAME")]
    keystone_user_domain: String,
    /// The project the service token is scoped to.
    #[arg(long, value_name = "NAME", requires = "keystone_user")]
    keystone_project: Option<String>,
    /// The service project's domain name.
    #[arg(long, default_value = "Default", value_name = "NAME")]
    keystone_project_domain: String,
    /// An application credential id as the service identity (instead of a user).
    #[arg(
        long,
        value_name = "ID",
        requires_all = ["keystone_url", "keystone_app_credential_secret_file"]
    )]
    keystone_app_credential_id: Option<String>,
    /// File holding the application credential's secret (one line).
    #[arg(long, value_name = "FILE", requires = "keystone_app_credential_id")]
    keystone_app_credential_secret_file: Option<PathBuf>,
    /// Seconds a validated token is trusted before Keystone is asked again: a revoked token
    /// is refused at most this long after its revocation.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    keystone_revalidate_secs: u64,
    /// Most validated tokens kept in memory (the least recently used goes first).
    #[arg(long, default_value_t = vnfm_keystone::DEFAULT_CACHE_CAPACITY, value_name = "N")]
    keystone_cache_size: usize,
    /// Keystone roles that may read (GET), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "reader",
        value_name = "ROLES"
    )]
    keystone_reader_roles: Vec<String>,
    /// Keystone roles that may read and change (POST, PUT, PATCH, DELETE), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "member,admin",
        value_name = "ROLES"
    )]
    keystone_writer_roles: Vec<String>,
    /// Keystone roles that see every project (on a token of the admin project or a
    /// system-scoped token), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "admin",
        value_name = "ROLES"
    )]
    keystone_admin_roles: Vec<String>,
}

/// Reads a one-line secret file (the trailing line break is not part of the secret).
pub(crate) fn secret_file(option: &'static str, path: &Path) -> Result<SecretString, ServeError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
        option,
        path: path.to_owned(),
        source,
    })?;
    let secret = text.trim_end_matches(['\n', '\r']);
    if secret.is_empty() {
        return Err(ServeError::EmptySecretFile {
            option,
            path: path.to_owned(),
        });
    }
    Ok(SecretString::new(secret))
}

pub(crate) fn roles(names: &[String]) -> std::collections::BTreeSet<String> {
    names
        .iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

impl KeystoneArgs {
    /// The validator the options describe; `None` without `--keystone-url`.
    pub fn validator(&self) -> Result<Option<Arc<KeystoneValidator>>, ServeError> {
        let Some(url) = &self.keystone_url else {
            return Ok(None);
        };
        let credentials = match (&self.keystone_user, &self.keystone_app_credential_id) {
            (Some(user), None) => ServiceCredentials::Password {
                user: user.clone(),
                password: secret_file(
                    "keystone-password-file",
                    self.keystone_password_file
                        .as_deref()
                        .ok_or(ServeError::Options("--keystone-user needs --keystone-password-file"))?,
                )?,
                user_domain: self.keystone_user_domain.clone(),
                project: self
                    .keystone_project
                    .clone()
                    .ok_or(ServeError::Options("--keystone-user needs --keystone-project"))?,
                project_domain: self.keystone_project_domain.clone(),
            },
            (None, Some(id)) => ServiceCredentials::ApplicationCredential {
                id: id.clone(),
                secret: secret_file(
                    "keystone-app-credential-secret-file",
                    self.keystone_app_credential_secret_file.as_deref().ok_or(
                        ServeError::Options(
                            "--keystone-app-credential-id needs --keystone-app-credential-secret-file",
                        ),
                    )?,
                )?,
            },
            _ => {
                return Err(ServeError::Options(
                    "--keystone-url needs a service identity: --keystone-user (with --keystone-password-file and --keystone-project) or --keystone-app-credential-id (with --keystone-app-credential-secret-file)",
                ));
            }
        };
        let mut config = KeystoneConfig::new(url.clone(), credentials);
        config.revalidate_after = Duration::from_secs(self.keystone_revalidate_secs);
        config.cache_capacity = self.keystone_cache_size.max(1);
        config.roles = RolePolicy {
            reader: roles(&self.keystone_reader_roles),
            writer: roles(&self.keystone_writer_roles),
            admin: roles(&self.keystone_admin_roles),
        };
        // The validator's HTTP client needs the process's TLS provider (ring), which the
        // server would install only later.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let validator = KeystoneValidator::new(config).map_err(|source| ServeError::Keystone {
            url: url.clone(),
            source,
        })?;
        Ok(Some(Arc::new(validator)))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        keystone: KeystoneArgs,
    }

    #[test]
    fn the_secret_comes_from_the_file_and_roles_from_lists() {
        // No TLS provider is installed first: `validator` installs it, as `vnfm serve` needs.
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "s3cret-pw\n").unwrap();
        let cli = Cli::try_parse_from([
            "x",
            "--keystone-url",
            "http://127.0.0.1:5000",
            "--keystone-user",
            "vnfm",
            "--keystone-password-file",
            pw.to_str().unwrap(),
            "--keystone-project",
            "service",
            "--keystone-writer-roles",
            "member, vnf_operator",
        ])
        .unwrap();
        let v = cli.keystone.validator().unwrap().unwrap();
        assert_eq!(v.url(), "http://127.0.0.1:5000/v3");
        assert_eq!(
            v.roles().writer,
            ["member".to_owned(), "vnf_operator".to_owned()].into()
        );
        assert!(!format!("{v:?}").contains("s3cret-pw"));
        // The password is never an argument, and a user needs a project.
        assert!(
            Cli::try_parse_from(["x", "--keystone-url", "http://k", "--keystone-user", "vnfm"])
                .is_err()
        );
        let none = Cli::try_parse_from(["x"]).unwrap();
        assert!(none.keystone.validator().unwrap().is_none());
        let no_identity = Cli::try_parse_from(["x", "--keystone-url", "http://k"]).unwrap();
        assert!(matches!(
            no_identity.keystone.validator(),
            Err(ServeError::Options(m)) if m.contains("needs a service identity")
        ));
    }

    #[test]
    fn an_unreadable_or_empty_secret_file_names_the_option_and_keeps_the_cause() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let err = secret_file("keystone-password-file", &empty).unwrap_err();
        assert!(matches!(
            err,
            ServeError::EmptySecretFile {
                option: "keystone-password-file",
                ..
            }
        ));
        assert!(err.to_string().ends_with("the file is empty"), "{err}");
        let err = secret_file("keystone-password-file", &dir.path().join("missing")).unwrap_err();
        assert!(
            err.to_string().starts_with("--keystone-password-file "),
            "{err}"
        );
        let io = err
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
