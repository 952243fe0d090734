//! The checks and sealing every kind of subscription shares: the callback URI, the
//! `authentication` parameters, the SOL003 notification endpoint test, and the callback
//! credentials sealed with the [`Keyring`] for the store.

use std::time::Duration;

use vnfm_driver_api::{CallbackMethod, CallbackRequest, CallbackSender};
use vnfm_types::{AuthType, SubscriptionAuthentication, SubscriptionId};

use crate::LcmError;
use crate::error::echo;
use crate::secrets::Keyring;

/// The SOL003 notification endpoint test: `GET callback_uri` with the subscription's
/// authentication must answer `204 No Content` within `timeout` (422 pointing at
/// `/callbackUri` otherwise).
pub async fn verify_callback(
    sender: &dyn CallbackSender,
    callback_uri: &str,
    authentication: Option<&SubscriptionAuthentication>,
    timeout: Duration,
) -> Result<(), LcmError> {
    let fail = |message: String| LcmError::Unprocessable {
        pointer: "/callbackUri".into(),
        message,
    };
    let test = sender.send(CallbackRequest {
        method: CallbackMethod::Get,
        uri: callback_uri,
        body: None,
        authentication,
        timeout,
        traceparent: None,
    });
    match tokio::time::timeout(timeout, test).await {
        Err(_) => Err(fail(format!(
            "the notification endpoint test failed: GET got no answer within {} ms",
            timeout.as_millis()
        ))),
        Ok(Err(e)) => Err(fail(format!(
            "the notification endpoint test failed: GET {e}"
        ))),
        Ok(Ok(answer)) if answer.is_no_content() => Ok(()),
        Ok(Ok(answer)) => Err(fail(format!(
            "the notification endpoint test failed: GET answered {}, expected 204 No Content",
            answer.status_text
        ))),
    }
}

/// Seals `authentication` with the keyring (what the store keeps).
pub fn seal_authentication(
    keyring: &Keyring,
    authentication: Option<&SubscriptionAuthentication>,
) -> Result<Option<Vec<u8>>, LcmError> {
    authentication
        .map(|a| {
            serde_json::to_vec(a)
                .map(|plain| keyring.encrypt(&plain))
                .map_err(|e| {
                    LcmError::inconsistent(format!("authentication does not serialize: {e}"))
                        .because(e)
                })
        })
        .transpose()
}

/// The callback credentials `blob` of subscription `id`, decrypted.
pub(crate) fn open_sealed(
    keyring: &Keyring,
    id: &SubscriptionId,
    blob: Option<&[u8]>,
) -> Result<Option<SubscriptionAuthentication>, LcmError> {
    let Some(blob) = blob else {
        return Ok(None);
    };
    let plain = keyring.decrypt(blob, &format!("the credentials of subscription {id}"))?;
    // A serde error could quote a credential: report only the position.
    serde_json::from_slice(&plain).map(Some).map_err(|e| {
        LcmError::inconsistent(format!(
            "the decrypted credentials of subscription {id} do not parse (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}
/// Checks the `authentication` of a subscription request: at least one scheme, complete
/// `BASIC` / `OAUTH2_CLIENT_CREDENTIALS` parameters (a `tokenEndpoint` that is an http(s)
/// URI), and no `TLS_CERT` (422: not supported).
pub fn validate_authentication(
    authentication: Option<&SubscriptionAuthentication>,
) -> Result<(), LcmError> {
    if let Some(auth) = authentication {
        if auth.auth_type.is_empty() {
            return Err(LcmError::invalid(
                "/authentication/authType",
                "must list at least one of BASIC, OAUTH2_CLIENT_CREDENTIALS",
            ));
        }
        for t in &auth.auth_type {
            match t {
                AuthType::Basic => {
                    let p = auth.params_basic.as_ref();
                    if p.and_then(|p| p.user_name.as_deref())
                        .is_none_or(str::is_empty)
                    {
                        return Err(LcmError::invalid(
                            "/authentication/paramsBasic/userName",
                            "required for BASIC authentication",
                        ));
                    }
                    if p.and_then(|p| p.password.as_ref()).is_none() {
                        return Err(LcmError::invalid(
                            "/authentication/paramsBasic/password",
                            "required for BASIC authentication",
                        ));
                    }
                }
                AuthType::Oauth2ClientCredentials => {
                    let p = auth.params_oauth2_client_credentials.as_ref();
                    let base = "/authentication/paramsOauth2ClientCredentials";
                    if p.and_then(|p| p.client_id.as_deref())
                        .is_none_or(str::is_empty)
                    {
                        return Err(LcmError::invalid(
                            format!("{base}/clientId"),
                            "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                        ));
                    }
                    if p.and_then(|p| p.client_password.as_ref()).is_none() {
                        return Err(LcmError::invalid(
                            format!("{base}/clientPassword"),
                            "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                        ));
                    }
                    match p.and_then(|p| p.token_endpoint.as_deref()) {
                        Some(e) => check_url(e, &format!("{base}/tokenEndpoint"))?,
                        None => {
                            return Err(LcmError::invalid(
                                format!("{base}/tokenEndpoint"),
                                "required for OAUTH2_CLIENT_CREDENTIALS authentication",
                            ));
                        }
                    }
                }
                AuthType::TlsCert => {
                    return Err(LcmError::Unprocessable {
                        pointer: "/authentication/authType".into(),
                        message: "TLS_CERT authentication is not supported by this VNFM; use BASIC or OAUTH2_CLIENT_CREDENTIALS".into(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Checks a callback URI: an http(s) URI with a host and without user information (400
/// pointing at `pointer` otherwise).
pub fn check_url(uri: &str, pointer: &str) -> Result<(), LcmError> {
    let url = url::Url::parse(uri)
        .map_err(|e| LcmError::invalid(pointer, format!("`{}` is not a URI: {e}", echo(uri))))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(LcmError::invalid(
            pointer,
            format!("`{}` is not an http or https URI", echo(uri)),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials in the URI would be stored and shown in clear.
        return Err(LcmError::invalid(
            pointer,
            "must not contain user information; give credentials in authentication",
        ));
    }
    Ok(())
}
