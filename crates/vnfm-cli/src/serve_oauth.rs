//! The external authorization server options of `vnfm serve`: accept bearer tokens of an
//! OAuth 2.0 authorization server (Keycloak, ...) next to the built-in OAuth 2.0 clients and
//! Keystone: JWTs verified against the issuer's keys, opaque tokens by introspection; and the
//! same client (`--oauth-client-id`, authenticating as for introspection) getting access
//! tokens there for the server's outgoing calls (`--nfvo-oauth-from-issuer`,
//! `--notify-oauth-from-issuer`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use vnfm_oauth::{
    ClaimMapping, ClientAuth, ClientCredentials, ClientCredentialsConfig, IntrospectionConfig,
    OAuthConfig, OAuthVerifier, RoleMapping, Secret, TokenCheck,
};

use crate::serve_error::ServeError;
use crate::serve_keystone::{roles, secret_file};

/// External authorization server options.
#[derive(Debug, Args)]
pub struct OAuthArgs {
    /// Accept bearer tokens issued by this OAuth 2.0 authorization server
    /// (`https://keycloak.example/realms/nfv`): tokens' `iss` must be exactly this, and its
    /// metadata (keys, introspection endpoint) is read from
    /// `<issuer>/.well-known/openid-configuration`. Needs --oauth-audience.
    #[arg(long, value_name = "URL", requires = "oauth_audience")]
    oauth_issuer: Option<String>,
    /// The audiences this server answers to, comma-separated: a token's `aud` must name one.
    #[arg(
        long,
        value_name = "AUD",
        value_delimiter = ',',
        requires = "oauth_issuer"
    )]
    oauth_audience: Vec<String>,
    /// How tokens are checked: `jwt` (every token is a JWT verified with the issuer's keys),
    /// `introspection` (every token is introspected, RFC 7662) or `auto` (JWTs locally, other
    /// tokens introspected). Default: `auto` with --oauth-client-id, else `jwt`.
    #[arg(long, value_name = "MODE", value_parser = ["jwt", "introspection", "auto"], requires = "oauth_issuer")]
    oauth_token_check: Option<String>,
    /// The key set's URL, instead of the metadata's `jwks_uri`.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_jwks_url: Option<String>,
    /// The introspection endpoint, instead of the metadata's `introspection_endpoint`.
    #[arg(long, value_name = "URL", requires = "oauth_client_id")]
    oauth_introspection_url: Option<String>,
    /// This server's client id at the authorization server, for introspection.
    #[arg(long, value_name = "ID", requires = "oauth_issuer")]
    oauth_client_id: Option<String>,
    /// How this server authenticates to the introspection endpoint: client_secret_basic,
    /// client_secret_post, client_secret_jwt (with --oauth-client-secret-file),
    /// private_key_jwt (with --oauth-client-key-file) or tls_client_auth (RFC 8705: mutual
    /// TLS with --oauth-client-cert-file and --oauth-client-key-file).
    #[arg(
        long,
        value_name = "METHOD",
        default_value = "client_secret_basic",
        value_parser = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "tls_client_auth"]
    )]
    oauth_client_auth: String,
    /// File holding the client secret (one line; never given on the command line).
    #[arg(long, value_name = "FILE", requires = "oauth_client_id")]
    oauth_client_secret_file: Option<PathBuf>,
    /// The client's private key (PEM: RSA, P-256 or Ed25519) for private_key_jwt; for
    /// tls_client_auth, the key of --oauth-client-cert-file.
    #[arg(long, value_name = "PEM", requires = "oauth_client_id")]
    oauth_client_key_file: Option<PathBuf>,
    /// The client certificate (PEM, its chain may follow) this server presents to the
    /// authorization server for tls_client_auth.
    #[arg(long, value_name = "PEM", requires = "oauth_client_id")]
    oauth_client_cert_file: Option<PathBuf>,
    /// CA certificates (PEM) to trust for the authorization server's TLS certificate, instead
    /// of the system's.
    #[arg(long, value_name = "PEM", requires = "oauth_issuer")]
    oauth_ca_file: Option<PathBuf>,
    /// The `kid` the authorization server knows that key by.
    #[arg(long, value_name = "KID", requires = "oauth_client_key_file")]
    oauth_client_key_id: Option<String>,
    /// The `aud` of client assertions (client_secret_jwt, private_key_jwt); by default the
    /// token endpoint of the metadata.
    #[arg(long, value_name = "URL", requires = "oauth_client_id")]
    oauth_assertion_audience: Option<String>,
    /// The `scope` asked for with the access tokens of this server's outgoing calls
    /// (--nfvo-oauth-from-issuer, --notify-oauth-from-issuer), space-separated; none by
    /// default (the client's default scopes).
    #[arg(long, value_name = "SCOPE", requires = "oauth_client_id")]
    oauth_outbound_scope: Option<String>,
    /// The token endpoint of those access tokens, instead of the metadata's `token_endpoint`
    /// (`mtls_endpoint_aliases.token_endpoint` for tls_client_auth).
    #[arg(long, value_name = "URL", requires = "oauth_client_id")]
    oauth_token_url: Option<String>,
    /// Seconds an introspection answer is kept: a revoked token is refused at most this long
    /// after its revocation (never past the token's expiry); 0 keeps none.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    oauth_introspection_cache_secs: u64,
    /// Most introspection answers kept in memory (the least recently used goes first).
    #[arg(long, default_value_t = vnfm_oauth::DEFAULT_CACHE_CAPACITY, value_name = "N")]
    oauth_cache_size: usize,
    /// Claims whose values are the caller's roles, comma-separated: dotted paths
    /// (`realm_access.roles`), each an array of strings or a space-separated string (`scope`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "roles,realm_access.roles,scope",
        value_name = "CLAIMS"
    )]
    oauth_role_claims: Vec<String>,
    /// The claim holding the caller's project (a dotted path; empty for none).
    #[arg(long, default_value = "project_id", value_name = "CLAIM")]
    oauth_project_claim: String,
    /// The claim holding the project's name (a dotted path; empty for none).
    #[arg(long, default_value = "project_name", value_name = "CLAIM")]
    oauth_project_name_claim: String,
    /// Roles (or scopes) that may read (GET), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "reader",
        value_name = "ROLES"
    )]
    oauth_reader_roles: Vec<String>,
    /// Roles (or scopes) that may read and change (POST, PUT, PATCH, DELETE), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "member,admin",
        value_name = "ROLES"
    )]
    oauth_writer_roles: Vec<String>,
    /// Roles (or scopes) that see every project, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "admin",
        value_name = "ROLES"
    )]
    oauth_admin_roles: Vec<String>,
    /// Seconds of leeway on a token's `exp` and `nbf`.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    oauth_leeway_secs: u64,
    /// Seconds after which the issuer's key set is read again (a key it no longer publishes
    /// is refused from then on); a token naming an unknown key reads it sooner, at most once
    /// per 10 s.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    oauth_jwks_refresh_secs: u64,
}

fn optional(claim: &str) -> Option<String> {
    let claim = claim.trim();
    (!claim.is_empty()).then(|| claim.to_owned())
}

/// The text of the file `path` given to `--option`.
fn read(option: &'static str, path: &PathBuf) -> Result<String, ServeError> {
    std::fs::read_to_string(path).map_err(|source| ServeError::ReadFile {
        option,
        path: path.clone(),
        source,
    })
}

impl OAuthArgs {
    /// Which roles grant reading, writing and every project (`--oauth-reader-roles`,
    /// `--oauth-writer-roles`, `--oauth-admin-roles`): of the authorization server's tokens,
    /// and of the client certificates of `--tls-client-map`.
    pub fn role_mapping(&self) -> RoleMapping {
        RoleMapping {
            reader: roles(&self.oauth_reader_roles),
            writer: roles(&self.oauth_writer_roles),
            admin: roles(&self.oauth_admin_roles),
        }
    }

    /// The verifier the options describe; `None` without `--oauth-issuer`.
    pub fn verifier(&self) -> Result<Option<Arc<OAuthVerifier>>, ServeError> {
        let Some(issuer) = &self.oauth_issuer else {
            return Ok(None);
        };
        let mut config = OAuthConfig::new(issuer.clone(), "");
        config.audiences = self
            .oauth_audience
            .iter()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
            .collect();
        config.jwks_url = self.oauth_jwks_url.clone();
        config.leeway = Duration::from_secs(self.oauth_leeway_secs);
        config.jwks_refresh = Duration::from_secs(self.oauth_jwks_refresh_secs);
        config.claims = ClaimMapping {
            role_claims: self
                .oauth_role_claims
                .iter()
                .filter_map(|c| optional(c))
                .collect(),
            project_claim: optional(&self.oauth_project_claim),
            project_name_claim: optional(&self.oauth_project_name_claim),
        };
        config.roles = self.role_mapping();
        config.ca_pem = match &self.oauth_ca_file {
            Some(path) => Some(read("oauth-ca-file", path)?),
            None => None,
        };
        config.introspection = self.introspection()?;
        config.check = match self.oauth_token_check.as_deref() {
            Some("jwt") => TokenCheck::Jwt,
            Some("introspection") => TokenCheck::Introspection,
            Some(_) => TokenCheck::Auto,
            None if config.introspection.is_some() => TokenCheck::Auto,
            None => TokenCheck::Jwt,
        };
        if config.check != TokenCheck::Jwt && config.introspection.is_none() {
            return Err(ServeError::Options(
                "--oauth-token-check introspection or auto needs --oauth-client-id (this server's client at the introspection endpoint)",
            ));
        }
        // The verifier's HTTP client needs the process's TLS provider (ring), which the
        // server would install only later.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let verifier = OAuthVerifier::new(config).map_err(|source| ServeError::OAuth {
            issuer: issuer.clone(),
            source,
        })?;
        Ok(Some(Arc::new(verifier)))
    }

    fn introspection(&self) -> Result<Option<IntrospectionConfig>, ServeError> {
        let Some(client_id) = &self.oauth_client_id else {
            return Ok(None);
        };
        let auth = self.client_auth()?;
        let mut config = IntrospectionConfig::new(client_id.clone(), auth);
        config.url = self.oauth_introspection_url.clone();
        config.assertion_audience = self.oauth_assertion_audience.clone();
        config.cache_ttl = Duration::from_secs(self.oauth_introspection_cache_secs);
        config.cache_capacity = self.oauth_cache_size.max(1);
        Ok(Some(config))
    }

    /// How this server authenticates as `--oauth-client-id` (`--oauth-client-auth` with its
    /// secret, key or certificate file): at the introspection endpoint and at the token
    /// endpoint alike.
    fn client_auth(&self) -> Result<ClientAuth, ServeError> {
        let secret = || -> Result<Secret, ServeError> {
            let path = self.oauth_client_secret_file.as_deref().ok_or(ServeError::Options(
                "--oauth-client-auth client_secret_basic, client_secret_post and client_secret_jwt need --oauth-client-secret-file",
            ))?;
            Ok(Secret::new(
                secret_file("oauth-client-secret-file", path)?.expose(),
            ))
        };
        Ok(match self.oauth_client_auth.as_str() {
            "client_secret_post" => ClientAuth::SecretPost(secret()?),
            "client_secret_jwt" => ClientAuth::SecretJwt(secret()?),
            "private_key_jwt" => {
                let path = self
                    .oauth_client_key_file
                    .as_ref()
                    .ok_or(ServeError::Options(
                        "--oauth-client-auth private_key_jwt needs --oauth-client-key-file",
                    ))?;
                ClientAuth::PrivateKeyJwt {
                    pem: Secret::new(read("oauth-client-key-file", path)?),
                    key_id: self.oauth_client_key_id.clone(),
                }
            }
            "tls_client_auth" => {
                let (Some(cert), Some(key)) =
                    (&self.oauth_client_cert_file, &self.oauth_client_key_file)
                else {
                    return Err(ServeError::Options(
                        "--oauth-client-auth tls_client_auth needs --oauth-client-cert-file and --oauth-client-key-file",
                    ));
                };
                ClientAuth::TlsClientAuth {
                    cert_pem: read("oauth-client-cert-file", cert)?,
                    key_pem: Secret::new(read("oauth-client-key-file", key)?),
                }
            }
            _ => ClientAuth::SecretBasic(secret()?),
        })
    }

    /// The access tokens of this server's outgoing calls: the client credentials grant at
    /// `--oauth-issuer` as `--oauth-client-id`, authenticating as for introspection; `None`
    /// without a client id.
    pub fn client_credentials(&self) -> Result<Option<Arc<ClientCredentials>>, ServeError> {
        let (Some(issuer), Some(client_id)) = (&self.oauth_issuer, &self.oauth_client_id) else {
            return Ok(None);
        };
        let mut config =
            ClientCredentialsConfig::new(issuer.clone(), client_id.clone(), self.client_auth()?);
        config.token_url = self.oauth_token_url.clone();
        config.scope = self.oauth_outbound_scope.clone();
        config.assertion_audience = self.oauth_assertion_audience.clone();
        config.ca_pem = match &self.oauth_ca_file {
            Some(path) => Some(read("oauth-ca-file", path)?),
            None => None,
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tokens = ClientCredentials::new(config).map_err(|source| ServeError::OAuth {
            issuer: issuer.clone(),
            source,
        })?;
        Ok(Some(Arc::new(tokens)))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        oauth: OAuthArgs,
    }

    fn parse(line: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("x").chain(line.iter().copied()))
    }

    #[test]
    fn an_issuer_needs_an_audience_and_introspection_a_client() {
        assert!(parse(&[]).unwrap().oauth.verifier().unwrap().is_none());
        assert!(parse(&["--oauth-issuer", "http://127.0.0.1:8080/realms/nfv"]).is_err());
        let jwt = parse(&[
            "--oauth-issuer",
            "http://127.0.0.1:8080/realms/nfv",
            "--oauth-audience",
            "vnfm, nfvo",
            "--oauth-writer-roles",
            "vnf_operator",
            "--oauth-project-claim",
            "",
        ])
        .unwrap();
        let v = jwt.oauth.verifier().unwrap().unwrap();
        let c = v.config();
        assert_eq!(c.audiences, ["vnfm", "nfvo"]);
        assert_eq!(c.check, TokenCheck::Jwt);
        assert_eq!(c.claims.project_claim, None);
        assert_eq!(
            c.claims.role_claims,
            ["roles", "realm_access.roles", "scope"]
        );
        assert_eq!(c.roles.writer, ["vnf_operator".to_owned()].into());
        let e = parse(&[
            "--oauth-issuer",
            "http://127.0.0.1:8080/realms/nfv",
            "--oauth-audience",
            "vnfm",
            "--oauth-token-check",
            "introspection",
        ])
        .unwrap()
        .oauth
        .verifier()
        .unwrap_err();
        assert!(e.to_string().contains("--oauth-client-id"), "{e}");
    }

    #[test]
    fn the_client_secret_comes_from_a_file_and_introspection_turns_auto_on() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "s3cret-of-vnfm\n").unwrap();
        let cli = parse(&[
            "--oauth-issuer",
            "http://127.0.0.1:8080/realms/nfv",
            "--oauth-audience",
            "vnfm",
            "--oauth-client-id",
            "vnfm",
            "--oauth-client-auth",
            "client_secret_post",
            "--oauth-client-secret-file",
            secret.to_str().unwrap(),
        ])
        .unwrap();
        let v = cli.oauth.verifier().unwrap().unwrap();
        assert_eq!(v.config().check, TokenCheck::Auto);
        let i = v.config().introspection.as_ref().unwrap();
        assert_eq!(i.auth.method(), "client_secret_post");
        assert!(!format!("{v:?}").contains("s3cret-of-vnfm"));
        // A method that needs a secret, without its file.
        let e = parse(&[
            "--oauth-issuer",
            "http://127.0.0.1:8080/realms/nfv",
            "--oauth-audience",
            "vnfm",
            "--oauth-client-id",
            "vnfm",
        ])
        .unwrap()
        .oauth
        .verifier()
        .unwrap_err();
        assert!(e.to_string().contains("--oauth-client-secret-file"), "{e}");
    }

    #[test]
    fn tls_client_auth_needs_a_certificate_and_its_key_and_the_ca_file_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        let made = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args([
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=vnfm",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl runs");
        assert!(made.status.success(), "{made:?}");
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        let base = [
            "--oauth-issuer",
            "https://127.0.0.1:8443/realms/nfv",
            "--oauth-audience",
            "vnfm",
            "--oauth-client-id",
            "vnfm",
            "--oauth-client-auth",
            "tls_client_auth",
        ];
        let e = parse(&base).unwrap().oauth.verifier().unwrap_err();
        assert!(
            e.to_string()
                .contains("--oauth-client-cert-file and --oauth-client-key-file"),
            "{e}"
        );
        let mut line = base.to_vec();
        line.extend([
            "--oauth-client-cert-file",
            cert,
            "--oauth-client-key-file",
            key,
        ]);
        let mut with_ca = line.clone();
        with_ca.extend(["--oauth-ca-file", cert]);
        let v = parse(&with_ca).unwrap().oauth.verifier().unwrap().unwrap();
        let c = v.config();
        assert_eq!(c.check, TokenCheck::Auto);
        let i = c.introspection.as_ref().unwrap();
        assert_eq!(i.auth.method(), "tls_client_auth");
        assert!(
            c.ca_pem
                .as_deref()
                .is_some_and(|p| p.contains("CERTIFICATE"))
        );
        assert!(!format!("{v:?}").contains("PRIVATE KEY"));
        // A CA file without a certificate (the key file) is refused at start.
        line.extend(["--oauth-ca-file", key]);
        let e = parse(&line).unwrap().oauth.verifier().unwrap_err();
        assert!(e.to_string().contains("CA file"), "{e}");
        assert!(!e.to_string().contains("PRIVATE KEY"), "{e}");
    }
}
