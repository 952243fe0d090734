//! Local verification of JWT access tokens: the header read by hand first (so that `alg: none`,
//! HMAC algorithms and unknown extensions are refused before any key is looked at), the
//! issuer's key set (JWKS) as usable public keys, then the signature and the registered claims
//! by `jsonwebtoken`.
//!
//! Only asymmetric algorithms are accepted (RS256/384/512, PS256/384/512, ES256, ES384,
//! EdDSA), and a key is used only for an algorithm of its own type (an RSA key never verifies
//! an `HS256` MAC made with its public key as the secret); symmetric (`oct`) keys of a key
//! set are ignored.

use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use crate::config::OAuthConfig;
use crate::error::Refusal;

/// The algorithms accepted, by their JWS names.
const ACCEPTED: &[(&str, Algorithm)] = &[
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("PS384", Algorithm::PS384),
    ("PS512", Algorithm::PS512),
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
    ("EdDSA", Algorithm::EdDSA),
];

/// What the verification needs of a JWS header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) alg: Algorithm,
    pub(crate) kid: Option<String>,
}

/// Whether `token` has the shape of a compact JWS (three base64url segments) whose first
/// segment is a JSON object: the tokens [`header`] reads. Anything else is an opaque token.
pub(crate) fn is_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(head), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    decode_segment(head)
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .is_some_and(|v| v.is_object())
}

fn decode_segment(segment: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .ok()
}

/// The header of a compact JWS, checked: an accepted algorithm, no `crit` extension, and a
/// `typ`, if any, of an access token or a plain JWT. A JWE (five segments) is malformed here.
pub(crate) fn header(token: &str) -> Result<Header, Refusal> {
    let segments: Vec<&str> = token.split('.').collect();
    if segments.len() != 3 {
        return Err(Refusal::Malformed);
    }
    let raw = decode_segment(segments[0]).ok_or(Refusal::Malformed)?;
    let head: Map<String, Value> = serde_json::from_slice(&raw).map_err(|_| Refusal::Malformed)?;
    let alg = head
        .get("alg")
        .and_then(Value::as_str)
        .ok_or(Refusal::Malformed)?;
    let alg = ACCEPTED
        .iter()
        .find(|(name, _)| *name == alg)
        .map(|(_, a)| *a)
        .ok_or(Refusal::Algorithm)?;
    if head.contains_key("crit") {
        return Err(Refusal::Malformed);
    }
    if let Some(typ) = head.get("typ") {
        let typ = typ.as_str().ok_or(Refusal::Malformed)?.to_ascii_lowercase();
        if !matches!(typ.as_str(), "jwt" | "at+jwt" | "application/at+jwt") {
            return Err(Refusal::Malformed);
        }
    }
    let kid = match head.get("kid") {
        None => None,
        Some(Value::String(k)) => Some(k.clone()),
        Some(_) => return Err(Refusal::Malformed),
    };
    Ok(Header { alg, kid })
}

/// The type of a key (a JWK's `kty`), which decides the algorithms it may verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Rsa,
    Ec,
    Okp,
}

impl KeyType {
    /// The key type of an accepted algorithm.
    fn of(alg: Algorithm) -> Option<KeyType> {
        use Algorithm as A;
        match alg {
            A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => Some(KeyType::Rsa),
            A::ES256 | A::ES384 => Some(KeyType::Ec),
            A::EdDSA => Some(KeyType::Okp),
            A::HS256 | A::HS384 | A::HS512 => None,
        }
    }
}

/// A public key of the issuer's key set.
pub(crate) struct Key {
    kid: Option<String>,
    kty: KeyType,
    /// The algorithm the key set restricts it to, if any.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl Key {
    /// Whether the key may verify `alg`: of the algorithm's type, and not restricted to
    /// another algorithm.
    fn fits(&self, alg: Algorithm) -> bool {
        KeyType::of(alg) == Some(self.kty) && self.alg.is_none_or(|a| a == alg)
    }
}

/// The issuer's signing keys.
#[derive(Default)]
pub(crate) struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.kid))
            .finish()
    }
}

impl KeySet {
    /// The usable keys of a JWKS document: RSA, EC and OKP keys that may sign (not
    /// `use: enc`); symmetric keys and keys this server cannot read are left out. `None` when
    /// the document has no `keys` array.
    pub(crate) fn parse(doc: &Value) -> Option<KeySet> {
        let keys = doc.get("keys")?.as_array()?;
        let keys = keys
            .iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
            .filter(|jwk| {
                !matches!(
                    jwk.common.public_key_use,
                    Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
                )
            })
            .filter_map(|jwk| {
                let kty = match jwk.algorithm {
                    AlgorithmParameters::RSA(_) => KeyType::Rsa,
                    AlgorithmParameters::EllipticCurve(_) => KeyType::Ec,
                    AlgorithmParameters::OctetKeyPair(_) => KeyType::Okp,
                    // A symmetric key never verifies anything here.
                    AlgorithmParameters::OctetKey(_) => return None,
                };
                let alg = match jwk.common.key_algorithm {
                    None => None,
                    Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
                };
                Some(Key {
                    kid: jwk.common.key_id.clone(),
                    kty,
                    alg,
                    key: DecodingKey::from_jwk(&jwk).ok()?,
                })
            })
            .collect();
        Some(KeySet { keys })
    }

    /// How many keys there are.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The keys that may verify a token with `header`: the one with its `kid` (if it fits
    /// the algorithm); without a `kid`, every key that fits.
    fn candidates(&self, header: &Header) -> Vec<&Key> {
        self.keys
            .iter()
            .filter(|k| k.fits(header.alg))
            .filter(|k| header.kid.is_none() || k.kid == header.kid)
            .collect()
    }

    /// Whether a key may verify a token with `header`.
    pub(crate) fn knows(&self, header: &Header) -> bool {
        !self.candidates(header).is_empty()
    }

    /// The verified claims of `token` (whose header is `header`), signed by one of the
    /// candidate keys and valid now under `config` (issuer, audiences, `exp` and `nbf` with
    /// the leeway).
    pub(crate) fn verify(
        &self,
        token: &str,
        header: &Header,
        config: &OAuthConfig,
    ) -> Result<Map<String, Value>, Refusal> {
        let candidates = self.candidates(header);
        if candidates.is_empty() {
            return Err(Refusal::UnknownKey);
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&config.issuer]);
        validation.set_audience(&config.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let mut last = Refusal::Signature;
        for key in candidates {
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                // Without a `kid`, another key may be the one.
                Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => {
                    last = Refusal::Signature;
                }
                Err(e) => return Err(refusal(e.kind())),
            }
        }
        Err(last)
    }
}

/// The refusal of a `jsonwebtoken` error (whose text is never shown: it can quote claims).
fn refusal(kind: &jsonwebtoken::errors::ErrorKind) -> Refusal {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::InvalidSignature => Refusal::Signature,
        K::ExpiredSignature => Refusal::Expired,
        K::ImmatureSignature => Refusal::NotYetValid,
        K::InvalidIssuer => Refusal::Issuer,
        K::InvalidAudience => Refusal::Audience,
        K::MissingRequiredClaim(_) => Refusal::MissingClaim,
        K::InvalidAlgorithm | K::InvalidAlgorithmName => Refusal::Algorithm,
        K::InvalidEcdsaKey | K::InvalidRsaKey(_) | K::InvalidKeyFormat | K::Crypto(_) => {
            Refusal::Signature
        }
        _ => Refusal::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(v: &Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    fn token(head: Value) -> String {
        format!(
            "{}.{}.c2ln",
            b64(&head),
            b64(&serde_json::json!({"sub": "x"}))
        )
    }

    #[test]
    fn only_asymmetric_algorithms_and_plain_headers_pass() {
        use serde_json::json;
        let h = header(&token(json!({"alg": "RS256", "kid": "k1", "typ": "JWT"}))).unwrap();
        assert_eq!(h.alg, Algorithm::RS256);
        assert_eq!(h.kid.as_deref(), Some("k1"));
        assert!(header(&token(json!({"alg": "EdDSA", "typ": "at+jwt"}))).is_ok());
        for alg in ["none", "None", "HS256", "HS512", "RS1", ""] {
            assert_eq!(
                header(&token(json!({"alg": alg}))),
                Err(Refusal::Algorithm),
                "{alg}"
            );
        }
        assert_eq!(
            header(&token(json!({"typ": "JWT"}))),
            Err(Refusal::Malformed)
        );
        let crit = json!({"alg": "ES256", "crit": ["exp"], "exp": 1});
        assert_eq!(header(&token(crit)), Err(Refusal::Malformed));
        let jwe = json!({"alg": "RS256", "typ": "JWE"});
        assert_eq!(header(&token(jwe)), Err(Refusal::Malformed));
        assert_eq!(header("a.b.c.d.e"), Err(Refusal::Malformed));
        assert_eq!(header("not-a-jwt"), Err(Refusal::Malformed));
        let kid_number = json!({"alg": "ES256", "kid": 7});
        assert_eq!(header(&token(kid_number)), Err(Refusal::Malformed));
    }

    #[test]
    fn opaque_tokens_are_not_taken_for_jwts() {
        assert!(is_jwt(&token(serde_json::json!({"alg": "none"}))));
        assert!(!is_jwt("gAAAAABnQ2x0b2tlbg=="));
        assert!(!is_jwt("2YotnFZFEjr1zCsicMWpAA"));
        assert!(!is_jwt("a.b.c"));
        assert!(!is_jwt("a.b.c.d"));
    }

    #[test]
    fn symmetric_and_encryption_keys_are_left_out_of_key_sets() {
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "alg": "RSA-OAEP",
             "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw",
             "e": "AQAB"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "EC", "crv": "P-256", "kid": "bad"}
        ]});
        let set = KeySet::parse(&doc).unwrap();
        assert_eq!(set.len(), 1, "{set:?}");
        let ed = Header {
            alg: Algorithm::EdDSA,
            kid: Some("ed".into()),
        };
        assert!(set.knows(&ed));
        let rs = Header {
            alg: Algorithm::RS256,
            kid: Some("ed".into()),
        };
        assert!(!set.knows(&rs), "an OKP key never verifies RS256");
        assert!(KeySet::parse(&serde_json::json!({"nokeys": []})).is_none());
    }
}
