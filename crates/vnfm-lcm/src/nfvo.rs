//! The connection to a remote SOL003 NFVO as the operator configures it: kept in the store
//! (setting [`NFVO_SETTING`], shared by every replica) with its secret sealed by the keyring
//! like VIM secrets ([`save_nfvo_settings`], [`load_nfvo_settings`]). The HTTP client that
//! uses it lives outside the core (`vnfm-outbound`).

pub use vnfm_driver_api::{NfvoAuth, NfvoSettings};
use vnfm_types::SecretString;

use crate::LcmError;

/// Name of the store setting that holds the NFVO connection.
pub const NFVO_SETTING: &str = "nfvo";

/// The stored form of [`NfvoSettings`]: everything but the secret in clear, the secret as a
/// Fernet token.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredNfvo {
    url: String,
    /// `none`, `basic` or `oauth2`.
    auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ca_pem: Option<String>,
}

const SECRET_LABEL: &str = "the NFVO secret";

fn seal(keyring: &crate::Keyring, secret: &SecretString) -> String {
    String::from_utf8_lossy(&keyring.encrypt(secret.expose().as_bytes())).into_owned()
}

/// Stores `settings` (their secret sealed with `keyring`), or removes the stored ones
/// (`None`: the built-in NFVO is used from then on).
pub async fn save_nfvo_settings(
    store: &dyn vnfm_store::Store,
    keyring: &crate::Keyring,
    settings: Option<&NfvoSettings>,
) -> Result<(), LcmError> {
    let value = match settings {
        None => None,
        Some(s) => {
            let (auth, user, token_endpoint, sealed_secret) = match &s.auth {
                NfvoAuth::None => ("none", None, None, None),
                NfvoAuth::Basic { user, password } => (
                    "basic",
                    Some(user.clone()),
                    None,
                    Some(seal(keyring, password)),
                ),
                NfvoAuth::OAuth2 {
                    client_id,
                    client_secret,
                    token_endpoint,
                } => (
                    "oauth2",
                    Some(client_id.clone()),
                    Some(token_endpoint.clone()),
                    Some(seal(keyring, client_secret)),
                ),
            };
            let stored = StoredNfvo {
                url: s.url.clone(),
                auth: auth.into(),
                user,
                token_endpoint,
                sealed_secret,
                ca_pem: s.ca_pem.clone(),
            };
            Some(serde_json::to_value(&stored).map_err(|e| {
                LcmError::inconsistent(format!("the NFVO settings do not serialize: {e}"))
                    .because(e)
            })?)
        }
    };
    store
        .put_setting(NFVO_SETTING, value.as_ref())
        .await
        .map_err(LcmError::store)
}

/// The stored NFVO settings with their secret unsealed, `None` when none are stored. A secret
/// sealed with an older key of `keyring` is sealed again with the newest one (key rotation).
pub async fn load_nfvo_settings(
    store: &dyn vnfm_store::Store,
    keyring: &crate::Keyring,
) -> Result<Option<NfvoSettings>, LcmError> {
    let Some(value) = store
        .get_setting(NFVO_SETTING)
        .await
        .map_err(LcmError::store)?
    else {
        return Ok(None);
    };
    let mut stored: StoredNfvo = serde_json::from_value(value).map_err(|e| {
        LcmError::inconsistent(format!(
            "the stored NFVO settings (setting `{NFVO_SETTING}`) are unreadable: {e}"
        ))
    })?;
    let secret = match &stored.sealed_secret {
        Some(blob) => {
            let plain = keyring.decrypt(blob.as_bytes(), SECRET_LABEL)?;
            let text = String::from_utf8(plain)
                .map_err(|_| LcmError::inconsistent(format!("{SECRET_LABEL} is not UTF-8 text")))?;
            Some(SecretString::new(text))
        }
        None => None,
    };
    let missing = |what: &str| {
        LcmError::inconsistent(format!(
            "the stored NFVO settings use {} authentication but have no {what}; configure the NFVO again",
            stored.auth
        ))
    };
    let auth = match stored.auth.as_str() {
        "none" => NfvoAuth::None,
        "basic" => NfvoAuth::Basic {
            user: stored.user.clone().ok_or_else(|| missing("user"))?,
            password: secret.clone().ok_or_else(|| missing("secret"))?,
        },
        "oauth2" => NfvoAuth::OAuth2 {
            client_id: stored.user.clone().ok_or_else(|| missing("client id"))?,
            client_secret: secret.clone().ok_or_else(|| missing("secret"))?,
            token_endpoint: stored
                .token_endpoint
                .clone()
                .ok_or_else(|| missing("token endpoint"))?,
        },
        other => {
            return Err(LcmError::inconsistent(format!(
                "the stored NFVO settings name an unknown authentication `{other}`; configure the NFVO again"
            )));
        }
    };
    if let (Some(blob), Some(secret)) = (&stored.sealed_secret, &secret)
        && !keyring.is_current(blob.as_bytes())
    {
        stored.sealed_secret = Some(seal(keyring, secret));
        if let Ok(v) = serde_json::to_value(&stored) {
            // Best effort: the secret opens with the old key until the next start.
            if let Err(e) = store.put_setting(NFVO_SETTING, Some(&v)).await {
                tracing::warn!(error = %e, "could not re-seal the NFVO secret with the newest key");
            }
        }
    }
    Ok(Some(NfvoSettings {
        url: stored.url,
        auth,
        ca_pem: stored.ca_pem,
    }))
}
