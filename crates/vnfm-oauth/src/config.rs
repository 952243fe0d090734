//! What the verifier needs: the issuer, the audiences this server answers to, how tokens are
//! checked (locally, by introspection, or each by its shape), how this server authenticates to
//! the introspection endpoint, the cache and refresh bounds, and which claims carry the
//! caller's roles and project.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

/// Default leeway on `exp` and `nbf` (clocks of the two servers may differ this much).
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// Default age after which the key set is read again, whatever the tokens say.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(300);
/// Shortest time between two reads of the key set for tokens signed with an unknown `kid`.
pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(10);
/// Default time an introspection answer is kept.
pub const DEFAULT_INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(30);
/// Default number of introspection answers kept.
pub const DEFAULT_CACHE_CAPACITY: usize = 10_000;
/// Default timeout of one request to the authorization server.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Default longest token accepted (longer ones are refused before anything is parsed).
pub const DEFAULT_MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A secret (client secret) that `Debug` does not show.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How a token is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCheck {
    /// Every token must be a JWT, verified locally against the issuer's key set.
    Jwt,
    /// Every token (a JWT too) is introspected (RFC 7662): a revoked token is refused as soon
    /// as the introspection cache lets go of it.
    Introspection,
    /// A JWT is verified locally, any other token introspected.
    Auto,
}

/// How this server authenticates to the introspection endpoint (RFC 7591's
/// `token_endpoint_auth_method` names).
#[derive(Clone)]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic with the client id and secret.
    SecretBasic(Secret),
    /// `client_secret_post`: `client_id` and `client_secret` in the form.
    SecretPost(Secret),
    /// `client_secret_jwt`: an HS256 client assertion made with the secret (RFC 7523).
    SecretJwt(Secret),
    /// `private_key_jwt`: a client assertion signed with the client's private key (RFC 7523):
    /// RS256 for an RSA key, ES256 for a P-256 key, EdDSA for an Ed25519 key.
    PrivateKeyJwt {
        /// The private key, PEM (PKCS#1 or PKCS#8 RSA, PKCS#8 EC or Ed25519).
        pem: Secret,
        /// The `kid` the authorization server knows the key by, if it needs one.
        key_id: Option<String>,
    },
    /// `tls_client_auth` (RFC 8705 clause 2.1): mutual TLS with this certificate and key on
    /// the connection to the authorization server, and `client_id` in the form; the
    /// authorization server recognises the client by the certificate's subject or
    /// subjectAltName registered for it. The introspection endpoint is then the metadata's
    /// `mtls_endpoint_aliases.introspection_endpoint` when it names one (RFC 8705 clause 5).
    TlsClientAuth {
        /// The client certificate (PEM; its chain may follow it).
        cert_pem: String,
        /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
        key_pem: Secret,
    },
}

impl ClientAuth {
    /// The method's registered name.
    pub fn method(&self) -> &'static str {
        match self {
            ClientAuth::SecretBasic(_) => "client_secret_basic",
            ClientAuth::SecretPost(_) => "client_secret_post",
            ClientAuth::SecretJwt(_) => "client_secret_jwt",
            ClientAuth::PrivateKeyJwt { .. } => "private_key_jwt",
            ClientAuth::TlsClientAuth { .. } => "tls_client_auth",
        }
    }
}

impl fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientAuth::PrivateKeyJwt { key_id, .. } => f
                .debug_struct("PrivateKeyJwt")
                .field("key_id", key_id)
                .finish_non_exhaustive(),
            other => f.write_str(other.method()),
        }
    }
}

/// The introspection endpoint and this server's client there.
#[derive(Debug, Clone)]
pub struct IntrospectionConfig {
    /// The endpoint; from the issuer's metadata (`introspection_endpoint`) when `None`.
    pub url: Option<String>,
    /// This server's client id at the authorization server.
    pub client_id: String,
    /// How it authenticates.
    pub auth: ClientAuth,
    /// The `aud` of client assertions (`client_secret_jwt`, `private_key_jwt`); the
    /// issuer's token endpoint when `None` (RFC 7523), or the issuer when the metadata has none.
    pub assertion_audience: Option<String>,
    /// How long an answer is kept: a revoked token is refused at most this long after its
    /// revocation. An active token is never kept past its `exp`.
    pub cache_ttl: Duration,
    /// Most answers kept (the least recently used goes first).
    pub cache_capacity: usize,
}

impl IntrospectionConfig {
    /// Introspection as `client_id` with `auth`, the endpoint from the metadata, answers kept
    /// 30 s, at most 10,000.
    pub fn new(client_id: impl Into<String>, auth: ClientAuth) -> IntrospectionConfig {
        IntrospectionConfig {
            url: None,
            client_id: client_id.into(),
            auth,
            assertion_audience: None,
            cache_ttl: DEFAULT_INTROSPECTION_CACHE_TTL,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
        }
    }
}

/// Which claims say who the caller is and what it may do. A claim is named by a path of
/// object members separated by dots (`realm_access.roles`, `project.id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMapping {
    /// Claims whose values are the caller's roles: an array of strings, or a string of
    /// space-separated values (as `scope`).
    pub role_claims: Vec<String>,
    /// The claim holding the caller's project id.
    pub project_claim: Option<String>,
    /// The claim holding the project's name.
    pub project_name_claim: Option<String>,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        ClaimMapping {
            role_claims: ["roles", "realm_access.roles", "scope"]
                .map(str::to_owned)
                .to_vec(),
            project_claim: Some("project_id".into()),
            project_name_claim: Some("project_name".into()),
        }
    }
}

/// What a caller may do ([`RoleMapping::access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// May read (`GET`, `HEAD`).
    pub read: bool,
    /// May change (`POST`, `PUT`, `PATCH`, `DELETE`).
    pub write: bool,
    /// Sees the resources of every project, not only its token's.
    pub all_projects: bool,
}

/// Which roles (values of the role claims, scopes among them) grant reading, writing and
/// every project. Names are compared without regard to ASCII case. The defaults are
/// Keystone's default roles, so that one policy reads the same with either identity source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleMapping {
    /// Roles that grant reading.
    pub reader: BTreeSet<String>,
    /// Roles that grant reading and writing.
    pub writer: BTreeSet<String>,
    /// Roles that grant seeing every project. Writing still needs a writer role.
    pub admin: BTreeSet<String>,
}

impl Default for RoleMapping {
    fn default() -> Self {
        let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect();
        RoleMapping {
            reader: set(&["reader"]),
            writer: set(&["member", "admin"]),
            admin: set(&["admin"]),
        }
    }
}

impl RoleMapping {
    /// What a caller with `roles` may do.
    pub fn access(&self, roles: &[String]) -> Access {
        let has = |set: &BTreeSet<String>| {
            roles
                .iter()
                .any(|r| set.iter().any(|s| s.eq_ignore_ascii_case(r)))
        };
        let write = has(&self.writer);
        let all_projects = has(&self.admin);
        Access {
            read: write || all_projects || has(&self.reader),
            write,
            all_projects,
        }
    }

    /// Every role name the mapping knows, sorted, for messages.
    pub fn known(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .reader
            .iter()
            .chain(&self.writer)
            .chain(&self.admin)
            .map(String::as_str)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Settings of a [`crate::OAuthVerifier`].
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The issuer (`https://keycloak.example/realms/nfv`): tokens' `iss` must be exactly this,
    /// and its metadata is read from `<issuer>/.well-known/openid-configuration` (or RFC
    /// 8414's `oauth-authorization-server`).
    pub issuer: String,
    /// The audiences this server answers to: a token's `aud` must name one of them.
    pub audiences: Vec<String>,
    /// How tokens are checked.
    pub check: TokenCheck,
    /// The key set's URL; from the metadata (`jwks_uri`) when `None`.
    pub jwks_url: Option<String>,
    /// Introspection, for opaque tokens (or every token, [`TokenCheck::Introspection`]).
    pub introspection: Option<IntrospectionConfig>,
    /// Leeway on `exp` and `nbf`.
    pub leeway: Duration,
    /// Age after which the key set is read again (a key the issuer no longer publishes is
    /// then no longer accepted); a token with an unknown `kid` reads it sooner, at most once
    /// per `min(10 s, jwks_refresh)`.
    pub jwks_refresh: Duration,
    /// Longest token accepted.
    pub max_token_bytes: usize,
    /// Timeout of one request to the authorization server.
    pub request_timeout: Duration,
    /// Which claims carry roles and the project.
    pub claims: ClaimMapping,
    /// Which roles grant what.
    pub roles: RoleMapping,
    /// CA certificates (PEM) trusted for the authorization server's TLS certificate, instead
    /// of the system's; `None` trusts the system's.
    pub ca_pem: Option<String>,
}

impl OAuthConfig {
    /// Tokens of `issuer` for `audience`, verified as JWTs, with the defaults.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            audiences: vec![audience.into()],
            check: TokenCheck::Jwt,
            jwks_url: None,
            introspection: None,
            leeway: DEFAULT_LEEWAY,
            jwks_refresh: DEFAULT_JWKS_REFRESH,
            max_token_bytes: DEFAULT_MAX_TOKEN_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            claims: ClaimMapping::default(),
            roles: RoleMapping::default(),
            ca_pem: None,
        }
    }

    /// The shortest time between two reads of the key set for unknown `kid`s.
    pub fn jwks_min_refresh(&self) -> Duration {
        self.jwks_refresh.min(DEFAULT_JWKS_MIN_REFRESH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_roles_are_keystones() {
        let m = RoleMapping::default();
        let roles = |r: &[&str]| r.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(m.access(&roles(&["profile", "email"])), Access::default());
        let reader = m.access(&roles(&["Reader"]));
        assert!(reader.read && !reader.write && !reader.all_projects);
        let member = m.access(&roles(&["member"]));
        assert!(member.read && member.write && !member.all_projects);
        let admin = m.access(&roles(&["admin"]));
        assert!(admin.read && admin.write && admin.all_projects);
        assert_eq!(m.known(), ["admin", "member", "reader"]);
    }

    #[test]
    fn debug_output_hides_secrets() {
        let auth = ClientAuth::SecretPost(Secret::new("s3cret-value"));
        let c = IntrospectionConfig::new("vnfm", auth);
        let shown = format!("{c:?}");
        assert!(shown.contains("client_secret_post"), "{shown}");
        assert!(!shown.contains("s3cret-value"), "{shown}");
        let key = ClientAuth::PrivateKeyJwt {
            pem: Secret::new("-----BEGIN PRIVATE KEY-----xyz"),
            key_id: Some("k1".into()),
        };
        let shown = format!("{key:?}");
        assert!(shown.contains("k1") && !shown.contains("xyz"), "{shown}");
        let tls = ClientAuth::TlsClientAuth {
            cert_pem: "-----BEGIN CERTIFICATE-----abc".into(),
            key_pem: Secret::new("-----BEGIN PRIVATE KEY-----xyz"),
        };
        let shown = format!("{tls:?}");
        assert!(shown == "tls_client_auth", "{shown}");
    }
}
