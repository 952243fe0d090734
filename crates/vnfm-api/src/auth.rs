//! Authentication: OAuth 2.0 client credentials (RFC 6749 clause 4.4) with a built-in token
//! endpoint, HTTP Basic as an option, OpenStack Keystone tokens (`X-Auth-Token`) when a
//! [`KeystoneValidator`] is configured ([`Authenticator::with_keystone`]; see the `keystone`
//! module for the answers), bearer tokens of an external OAuth 2.0 authorization server
//! when an [`OAuthVerifier`] is configured ([`Authenticator::with_oauth`]; the `oauth`
//! module), and TLS client certificates when a certificate map is configured
//! ([`Authenticator::with_certificates`]; the `certificate` module and [`crate::mtls`]). A
//! request's credentials (`Authorization`, `X-Auth-Token`) decide who it is when it has
//! some; a certificate identifies only requests without; a certificate-bound token (RFC 8705)
//! is accepted only with its certificate.
//!
//! Access tokens are Fernet tokens (sealed with the server's token keyring) carrying the
//! client id and the expiry: every replica that shares the token key file accepts them, no
//! token table is needed, and rotating the key file invalidates them all. Client secrets are
//! compared through their SHA-256 digests in constant time. Failed client authentication backs
//! off per client id and address, and per address (`throttle`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Form;
use axum::extract::{Request, State};
use axum::http::{Extensions, HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use vnfm_lcm::Keyring;
use vnfm_store::{SettingStore, StoreError};
use vnfm_types::SecretString;

use vnfm_keystone::KeystoneValidator;
use vnfm_oauth::OAuthVerifier;

use crate::error::ApiError;
use crate::mtls::{CertificateIdentities, ClientCertificate};

mod certificate;
mod keystone;
mod oauth;
mod throttle;

/// Default lifetime of access tokens.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(3600);

/// An OAuth 2.0 client allowed to call the API.
#[derive(Clone, Serialize, Deserialize)]
pub struct ClientCredentials {
    /// Client identifier.
    pub client_id: String,
    /// Client secret.
    pub client_secret: SecretString,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &"***")
            .finish()
    }
}

impl ClientCredentials {
    /// A client with a fresh random id and secret.
    pub fn generate() -> ClientCredentials {
        ClientCredentials {
            client_id: format!("vnfm-{}", random_token(8)),
            client_secret: SecretString::new(random_token(32)),
        }
    }
}

/// 32 random bytes -> base64url, no padding.
pub(crate) fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    // getrandom only fails when the OS has no entropy source; an all-zero secret must not
    // be handed out then.
    if getrandom::fill(&mut buf).is_err() {
        panic!("the operating system's random number generator is unavailable");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// How requests are authenticated.
pub struct Authenticator {
    /// This server's clients: id and SHA-256 of the secret.
    own: Vec<(String, [u8; 32])>,
    /// The clients other replicas on the same store published.
    others: std::sync::RwLock<Vec<(String, [u8; 32])>>,
    /// The store whose client list replicas share ([`Authenticator::share_clients`]).
    shared: std::sync::OnceLock<Arc<dyn SettingStore>>,
    allow_basic: bool,
    token_ttl: Duration,
    tokens: Arc<Keyring>,
    /// Validates `X-Auth-Token` headers, when Keystone authentication is on.
    keystone: Option<Arc<KeystoneValidator>>,
    /// Verifies bearer tokens of an external authorization server, when one is configured.
    oauth: Option<Arc<OAuthVerifier>>,
    /// The callers client certificates identify, when a map is configured.
    certificates: Option<Arc<CertificateIdentities>>,
    /// The back-off after failed client secrets.
    throttle: throttle::Throttle,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field(
                "clients",
                &self.known().into_iter().map(|c| c.0).collect::<Vec<_>>(),
            )
            .field("allow_basic", &self.allow_basic)
            .field("token_ttl", &self.token_ttl)
            .field("keystone", &self.keystone.as_ref().map(|k| k.url()))
            .field("oauth", &self.oauth.as_ref().map(|o| o.issuer()))
            .field("certificates", &self.certificates.as_ref().map(|c| c.len()))
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
struct Claims {
    /// Always `access_token`: a blob sealed with the same key for another purpose is refused.
    typ: String,
    sub: String,
    exp: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

fn same_digest(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The OAuth 2.0 client id, or the Keystone user id of a caller authenticated with
    /// `X-Auth-Token`.
    pub client_id: String,
    /// The Keystone user and project of a caller authenticated with `X-Auth-Token`.
    pub keystone: Option<KeystoneCaller>,
    /// Whether the caller may change resources (`POST`, `PUT`, `PATCH`, `DELETE`); always
    /// for OAuth 2.0 and Basic clients, from the roles for Keystone callers.
    pub may_write: bool,
    /// Whether the caller sees every project's resources; always for OAuth 2.0 and Basic
    /// clients, from the roles for Keystone callers.
    pub all_projects: bool,
    /// The issuer of the caller's token when an external OAuth 2.0 authorization server
    /// authenticated it (`vnfm serve --oauth-issuer`): its subject, project and roles are then
    /// in [`Caller::keystone`], as a Keystone token's are, so that project scoping treats
    /// both identity sources alike.
    pub oauth_issuer: Option<String>,
    /// The thumbprint (RFC 8705 `x5t#S256`) of the client certificate that identified the
    /// caller (`vnfm serve --tls-client-map`): its client id, project and roles are then in
    /// [`Caller::keystone`] too.
    pub certificate: Option<String>,
}

/// The Keystone side of a [`Caller`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeystoneCaller {
    /// User id.
    pub user_id: String,
    /// User name.
    pub user_name: String,
    /// The project the token is scoped to (none for domain- or system-scoped tokens).
    pub project_id: Option<String>,
    /// That project's name.
    pub project_name: Option<String>,
    /// The token's role names.
    pub roles: Vec<String>,
}

impl Caller {
    /// An OAuth 2.0 or Basic client: may read and write everything.
    pub fn client(client_id: impl Into<String>) -> Caller {
        Caller {
            client_id: client_id.into(),
            keystone: None,
            may_write: true,
            all_projects: true,
            oauth_issuer: None,
            certificate: None,
        }
    }

    /// A caller with a user, a project and roles (of a Keystone token, of an external
    /// authorization server's token, of a mapped client certificate), that may write and see
    /// every project as its roles say.
    pub(crate) fn with_roles(
        client_id: String,
        who: KeystoneCaller,
        may_write: bool,
        all_projects: bool,
    ) -> Caller {
        Caller {
            client_id,
            keystone: Some(who),
            may_write,
            all_projects,
            oauth_issuer: None,
            certificate: None,
        }
    }
}

/// What the connection of a request tells about its client: its address and the certificate
/// it presented (mutual TLS).
#[derive(Debug, Clone, Copy, Default)]
pub struct Peer<'a> {
    /// The client's address, when the request came through [`crate::server`].
    pub ip: Option<IpAddr>,
    /// The client's verified TLS certificate.
    pub certificate: Option<&'a ClientCertificate>,
}

impl<'a> Peer<'a> {
    /// The peer of a request with `extensions` (what [`crate::server`] puts there).
    pub fn of(extensions: &'a Extensions) -> Peer<'a> {
        Peer {
            ip: peer_ip(extensions),
            certificate: extensions
                .get::<Arc<ClientCertificate>>()
                .map(|c| c.as_ref()),
        }
    }
}

impl Authenticator {
    /// Clients `clients`, tokens sealed with `tokens`, Basic authentication when `allow_basic`.
    pub fn new(
        clients: &[ClientCredentials],
        tokens: Arc<Keyring>,
        allow_basic: bool,
        token_ttl: Duration,
    ) -> Authenticator {
        Authenticator {
            own: clients
                .iter()
                .map(|c| (c.client_id.clone(), digest(c.client_secret.expose())))
                .collect(),
            others: std::sync::RwLock::new(Vec::new()),
            shared: std::sync::OnceLock::new(),
            allow_basic,
            token_ttl,
            tokens,
            keystone: None,
            oauth: None,
            certificates: None,
            throttle: throttle::Throttle::new(crate::limit_settings::AuthBackoff::default()),
        }
    }

    /// Backs off after failed client secrets as `policy` says (instead of its defaults).
    pub fn with_backoff(mut self, policy: crate::limit_settings::AuthBackoff) -> Authenticator {
        self.throttle = throttle::Throttle::new(policy);
        self
    }

    /// [`Authenticator::authenticate_request`] for a client at `peer`, with the back-off of
    /// failed client secrets (HTTP Basic): 429 while the client id at that address, or the
    /// address, backs off. A request without credentials whose client certificate the
    /// certificate map knows is that certificate's caller.
    pub async fn authenticate_from(
        &self,
        headers: &HeaderMap,
        from: Peer<'_>,
    ) -> Result<Caller, ApiError> {
        let credentials = headers.contains_key(header::AUTHORIZATION)
            || headers.contains_key(keystone::X_AUTH_TOKEN);
        if !credentials
            && let Some(caller) = self
                .certificates
                .as_deref()
                .zip(from.certificate)
                .and_then(|(map, cert)| certificate::caller(map, cert))
        {
            return Ok(caller);
        }
        let peer = from.ip;
        let keystone_token =
            self.keystone.is_some() && headers.contains_key(keystone::X_AUTH_TOKEN);
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(basic_credentials)
            .filter(|_| self.allow_basic && !keystone_token);
        let Some((client, _)) = basic else {
            return self.authenticate_request(headers, from.certificate).await;
        };
        self.throttle
            .check(&client, peer)
            .map_err(|left| too_many_failures(&client, left))?;
        let result = self.authenticate_request(headers, from.certificate).await;
        match &result {
            Ok(_) => self.throttle.succeeded(&client, peer),
            Err(_) => self.throttle.failed(&client, peer),
        }
        result
    }

    /// Also accepts Keystone tokens in `X-Auth-Token`, validated by `validator`.
    pub fn with_keystone(mut self, validator: Arc<KeystoneValidator>) -> Authenticator {
        self.keystone = Some(validator);
        self
    }

    /// Also accepts bearer tokens of an external OAuth 2.0 authorization server, verified by
    /// `verifier`; this server's own tokens (from `POST /oauth2/token`) stay accepted.
    pub fn with_oauth(mut self, verifier: Arc<OAuthVerifier>) -> Authenticator {
        self.oauth = Some(verifier);
        self
    }

    /// Also identifies requests without credentials by their TLS client certificate, as
    /// `certificates` maps them.
    pub fn with_certificates(mut self, certificates: Arc<CertificateIdentities>) -> Authenticator {
        self.certificates = Some(certificates);
        self
    }

    /// The caller behind a request's headers: its `X-Auth-Token` when Keystone authentication
    /// is on and the header is present, else its `Authorization` (a bearer token that is not
    /// one of this server's own goes to the external authorization server, when one is
    /// configured). `certificate`, the connection's client certificate, is what a
    /// certificate-bound token must have been issued for.
    pub async fn authenticate_request(
        &self,
        headers: &HeaderMap,
        certificate: Option<&ClientCertificate>,
    ) -> Result<Caller, ApiError> {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let x_auth = headers.get(keystone::X_AUTH_TOKEN);
        match (&self.keystone, x_auth) {
            (Some(validator), Some(token)) => keystone::authenticate(validator, token).await,
            (None, Some(_)) if authorization.is_none() => Err(ApiError::Unauthorized(
                "Keystone tokens (X-Auth-Token) are not accepted by this server: send `Authorization: Bearer <token>` with a token from POST /oauth2/token"
                    .into(),
            )),
            (Some(_), None) if authorization.is_none() => Err(ApiError::Unauthorized(
                "authentication required: send `X-Auth-Token` with a Keystone token, or `Authorization: Bearer <token>` with a token from POST /oauth2/token"
                    .into(),
            )),
            _ => self.authenticate_bearer(authorization, certificate).await,
        }
    }

    /// [`Authenticator::authenticate_shared`], or the external authorization server for a
    /// bearer token that is not this server's own (and for one that looks like it but is not,
    /// when that server introspects opaque tokens).
    async fn authenticate_bearer(
        &self,
        authorization: Option<&str>,
        certificate: Option<&ClientCertificate>,
    ) -> Result<Caller, ApiError> {
        let external = self
            .oauth
            .as_ref()
            .zip(authorization.and_then(bearer_token));
        if let Some((verifier, token)) = external
            && !oauth::is_own_token(token)
        {
            return oauth::authenticate(verifier, token, certificate).await;
        }
        let own = self.authenticate_shared(authorization).await;
        match external {
            Some((verifier, token))
                if own.is_err() && verifier.config().check != vnfm_oauth::TokenCheck::Jwt =>
            {
                oauth::authenticate(verifier, token, certificate).await
            }
            _ => own,
        }
    }

    /// This server's clients and those of the other replicas on its store.
    fn known(&self) -> Vec<(String, [u8; 32])> {
        let others = self.others.read().unwrap_or_else(|e| e.into_inner());
        self.own.iter().chain(others.iter()).cloned().collect()
    }

    /// The name under which this server publishes its clients: its first (bootstrap) client.
    fn replica(&self) -> String {
        self.own.first().map(|c| c.0.clone()).unwrap_or_default()
    }

    /// Publishes this server's clients (id and secret digest, never the secret) in `store`'s
    /// shared client list, replacing what it published before (a client removed from
    /// `--clients-file` goes), and accepts the clients the other replicas on the same store
    /// published, re-reading them whenever a request names a client this one does not know: a
    /// token issued by any replica that shares `token.keys` is then accepted by every one.
    pub async fn share_clients(&self, store: Arc<dyn SettingStore>) -> Result<(), StoreError> {
        let replica = self.replica();
        let stored = stored_clients(&*store).await?;
        let mut all: Vec<SharedClient> = stored
            .iter()
            .filter(|c| c.replica != replica)
            .cloned()
            .collect();
        all.extend(self.own.iter().map(|(id, digest)| SharedClient {
            id: id.clone(),
            digest: *digest,
            replica: replica.clone(),
        }));
        if all != stored {
            let value = serde_json::Value::Array(all.iter().map(SharedClient::to_json).collect());
            store.put_setting(CLIENTS_SETTING, Some(&value)).await?;
        }
        self.adopt(all);
        let _ = self.shared.set(store);
        Ok(())
    }

    /// Takes the other replicas' clients from `all` (this server's own stay as they are).
    fn adopt(&self, all: Vec<SharedClient>) {
        let others = all
            .into_iter()
            .filter(|c| !self.own.iter().any(|(id, _)| *id == c.id))
            .map(|c| (c.id, c.digest))
            .collect();
        *self.others.write().unwrap_or_else(|e| e.into_inner()) = others;
    }

    /// Re-reads the shared client list (after a request named an unknown client).
    async fn refresh(&self) -> bool {
        let Some(store) = self.shared.get() else {
            return false;
        };
        match stored_clients(&**store).await {
            Ok(all) => {
                self.adopt(all);
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the shared OAuth 2.0 clients failed");
                false
            }
        }
    }

    /// [`Authenticator::authenticate`], re-reading the shared client list once when the
    /// credentials name a client this server does not know.
    pub async fn authenticate_shared(
        &self,
        authorization: Option<&str>,
    ) -> Result<Caller, ApiError> {
        match self.authenticate(authorization) {
            Err(e) if self.shared.get().is_some() && self.refresh().await => {
                self.authenticate(authorization).map_err(|_| e)
            }
            other => other,
        }
    }

    /// [`Authenticator::issue`], for another replica's client after re-reading the shared
    /// client list (so that a client its replica no longer publishes gets no token).
    pub async fn issue_shared(
        &self,
        client_id: &str,
        client_secret: &str,
    ) -> Option<(String, Duration)> {
        if !self.own.iter().any(|(id, _)| id == client_id) {
            self.refresh().await;
        }
        self.issue(client_id, client_secret)
    }

    fn check_client(&self, id: &str, secret: &str) -> bool {
        let presented = digest(secret);
        // Compare against every client so the time taken does not reveal which ids exist.
        let mut ok = false;
        for (client, expected) in self.known().iter() {
            ok |= client == id && same_digest(expected, &presented);
        }
        ok
    }

    /// Issues an access token for a client that proved its secret.
    pub fn issue(&self, client_id: &str, client_secret: &str) -> Option<(String, Duration)> {
        if !self.check_client(client_id, client_secret) {
            return None;
        }
        let claims = Claims {
            typ: "access_token".into(),
            sub: client_id.to_owned(),
            exp: now_secs() + self.token_ttl.as_secs(),
        };
        let plain = serde_json::to_vec(&claims).ok()?;
        let token = String::from_utf8(self.tokens.encrypt(&plain)).ok()?;
        Some((token, self.token_ttl))
    }

    /// The caller behind an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Caller, ApiError> {
        let Some(value) = authorization else {
            return Err(ApiError::Unauthorized(
                "authentication required: send `Authorization: Bearer <token>` with a token from POST /oauth2/token"
                    .into(),
            ));
        };
        let (scheme, credentials) = value.trim().split_once(' ').unwrap_or((value, ""));
        let credentials = credentials.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            let invalid = || {
                ApiError::InvalidToken(
                    "the bearer token is invalid or expired: request a new one from POST /oauth2/token"
                        .into(),
                )
            };
            let plain = self
                .tokens
                .decrypt(credentials.as_bytes(), "an access token")
                .map_err(|_| invalid())?;
            let claims: Claims = serde_json::from_slice(&plain).map_err(|_| invalid())?;
            if claims.typ != "access_token" || claims.exp <= now_secs() {
                return Err(invalid());
            }
            if !self.known().iter().any(|(id, _)| *id == claims.sub) {
                return Err(invalid());
            }
            return Ok(Caller::client(claims.sub));
        }
        if scheme.eq_ignore_ascii_case("basic") {
            if !self.allow_basic {
                return Err(ApiError::Unauthorized(
                    "HTTP Basic authentication is not enabled on this server: use a bearer token from POST /oauth2/token"
                        .into(),
                ));
            }
            let (id, secret) = decode_basic(credentials)
                .ok_or_else(|| ApiError::Unauthorized("malformed Basic credentials".into()))?;
            if self.check_client(&id, &secret) {
                return Ok(Caller::client(id));
            }
            return Err(ApiError::Unauthorized("invalid client id or secret".into()));
        }
        Err(ApiError::Unauthorized(
            "unsupported authorization scheme: use Bearer".into(),
        ))
    }
}

/// Setting holding the OAuth 2.0 clients every replica on the store accepts.
const CLIENTS_SETTING: &str = "oauth2Clients";

/// One entry of the shared client list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SharedClient {
    id: String,
    digest: [u8; 32],
    /// The replica that published it (its bootstrap client id).
    replica: String,
}

impl SharedClient {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "clientId": self.id,
            "secretSha256": hex::encode(self.digest),
            "publishedBy": self.replica,
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<SharedClient> {
        Some(SharedClient {
            id: v.get("clientId")?.as_str()?.to_owned(),
            digest: hex::decode(v.get("secretSha256")?.as_str()?)
                .ok()?
                .try_into()
                .ok()?,
            replica: v.get("publishedBy")?.as_str()?.to_owned(),
        })
    }
}

/// The shared client list of `store` (entries that do not decode are skipped).
async fn stored_clients(store: &dyn SettingStore) -> Result<Vec<SharedClient>, StoreError> {
    let value = store.get_setting(CLIENTS_SETTING).await?;
    Ok(value
        .as_ref()
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(SharedClient::from_json)
        .collect())
}

/// The token of an `Authorization: Bearer` value.
fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, rest) = authorization.trim().split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The client id and secret of an `Authorization: Basic` value.
fn basic_credentials(authorization: &str) -> Option<(String, String)> {
    let (scheme, rest) = authorization.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("basic")
        .then(|| decode_basic(rest.trim()))
        .flatten()
}

/// The refusal of a client id (at an address) in its back-off.
fn too_many_failures(client: &str, left: Duration) -> ApiError {
    let seconds = left.as_secs_f64().ceil() as u64;
    ApiError::TooManyRequests {
        detail: format!(
            "too many failed authentications of client {} from this address: retry in {seconds} s",
            crate::util::cut(client, 64)
        ),
        retry_after: seconds.max(1),
    }
}

/// The client's address, when the request came through [`crate::server`].
pub(crate) fn peer_ip(extensions: &Extensions) -> Option<IpAddr> {
    extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

fn decode_basic(credentials: &str) -> Option<(String, String)> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

/// Middleware: refuses requests without valid credentials (`401`), or whose caller may not
/// use the method (`403`: a read-only Keystone role and a method that changes resources), and
/// adds the [`Caller`] to the request extensions.
pub async fn require_auth(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = Peer::of(request.extensions());
    let caller = match auth.authenticate_from(request.headers(), peer).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let allowed = if caller.oauth_issuer.is_some() {
        oauth::check_method(&caller, request.method())
    } else if caller.certificate.is_some() {
        certificate::check_method(&caller, request.method())
    } else {
        keystone::check_method(&caller, request.method())
    };
    if let Err(e) = allowed {
        return e.into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// Form of `POST /oauth2/token`.
#[derive(Debug, Deserialize)]
pub struct TokenRequest {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let mut response = (
        status,
        axum::Json(serde_json::json!({"error": error, "error_description": description})),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Basic realm=\"vnfm\""),
        );
    }
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

/// `POST /oauth2/token`: the client credentials grant. The client authenticates with HTTP
/// Basic or with `client_id`/`client_secret` form members.
pub async fn token_endpoint(
    State(auth): State<Arc<Authenticator>>,
    extensions: Extensions,
    headers: HeaderMap,
    form: Result<Form<TokenRequest>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "send an application/x-www-form-urlencoded body with grant_type=client_credentials",
        );
    };
    match form.grant_type.as_deref() {
        Some("client_credentials") => {}
        Some(_) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "only grant_type=client_credentials is supported",
            );
        }
        None => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "grant_type is missing",
            );
        }
    }
    let from_header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(basic_credentials);
    let (id, secret) = match (from_header, form.client_id, form.client_secret) {
        (Some(pair), _, _) => pair,
        (None, Some(id), Some(secret)) => (id, secret),
        _ => {
            return oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client authentication is missing: use HTTP Basic or client_id and client_secret",
            );
        }
    };
    let peer = peer_ip(&extensions);
    if let Err(left) = auth.throttle.check(&id, peer) {
        let e = too_many_failures(&id, left);
        let mut response = oauth_error(StatusCode::TOO_MANY_REQUESTS, "slow_down", &e.to_string());
        if let Some(v) = e.retry_after() {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return response;
    }
    let issued = auth.issue_shared(&id, &secret).await;
    match &issued {
        Some(_) => auth.throttle.succeeded(&id, peer),
        None => auth.throttle.failed(&id, peer),
    }
    match issued {
        Some((token, ttl)) => {
            let mut response = axum::Json(serde_json::json!({
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": ttl.as_secs(),
            }))
            .into_response();
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-store"),
            );
            response
        }
        None => oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "unknown client or wrong secret",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(allow_basic: bool, ttl: Duration) -> Authenticator {
        let keys = Arc::new(Keyring::from_keys([&Keyring::generate_key()]).unwrap());
        Authenticator::new(
            &[ClientCredentials {
                client_id: "c1".into(),
                client_secret: SecretString::new("s3cret"),
            }],
            keys,
            allow_basic,
            ttl,
        )
    }

    #[test]
    fn issued_tokens_authenticate_until_they_expire() {
        let a = auth(false, Duration::from_secs(60));
        assert!(a.issue("c1", "wrong").is_none());
        assert!(a.issue("c2", "s3cret").is_none());
        let (token, _) = a.issue("c1", "s3cret").unwrap();
        let caller = a.authenticate(Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(caller.client_id, "c1");
        let expired = auth(false, Duration::ZERO);
        let (old, _) = expired.issue("c1", "s3cret").unwrap();
        let e = expired
            .authenticate(Some(&format!("Bearer {old}")))
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::UNAUTHORIZED);
        // A token sealed by another server's key is refused.
        let e = auth(false, Duration::from_secs(60))
            .authenticate(Some(&format!("Bearer {token}")))
            .unwrap_err();
        assert!(e.to_string().contains("invalid or expired"), "{e}");
    }

    #[test]
    fn basic_is_accepted_only_when_enabled() {
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("c1:s3cret")
        );
        let e = auth(false, DEFAULT_TOKEN_TTL)
            .authenticate(Some(&header))
            .unwrap_err();
        assert!(e.to_string().contains("not enabled"), "{e}");
        let a = auth(true, DEFAULT_TOKEN_TTL);
        assert_eq!(a.authenticate(Some(&header)).unwrap().client_id, "c1");
        let wrong = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("c1:nope")
        );
        assert!(a.authenticate(Some(&wrong)).is_err());
        assert!(a.authenticate(None).is_err());
        assert!(a.authenticate(Some("Bearer garbage")).is_err());
    }

    #[test]
    fn debug_output_hides_secrets() {
        let c = ClientCredentials::generate();
        let shown = format!("{c:?}");
        assert!(!shown.contains(c.client_secret.expose()), "{shown}");
    }
}
