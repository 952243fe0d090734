//! CMS signatures over the manifest and over individual artifacts (OpenSSL).
//!
//! SOL004 signs a package in two ways this module checks: a CMS `SignedData` block at the
//! end of the manifest, signing the manifest text before it, and per-artifact signature files
//! named by `Signature:` in the manifest. Both are detached signatures. The signer
//! certificate comes from `Certificate:` (per artifact), `ETSI-Entry-Certificate` (package),
//! or the certificates embedded in the CMS structure.
//!
//! Verification has two steps. Integrity: the signature must match the content, made with
//! the key of the package's certificate when the package names one. Trust: when the caller
//! gives trusted root certificates, the signer's chain must lead to one of them; without
//! roots, integrity is all that can be checked and the caller is told so with a warning.

use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::stack::Stack;
use openssl::x509::store::{X509Store, X509StoreBuilder};
use openssl::x509::{X509, X509PurposeId};

/// What [`Package::verify`](crate::Package::verify) checks and trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// PEM-encoded root certificates (each entry may hold several). With roots, signer
    /// certificates must chain to one of them; without, signatures are only checked for
    /// integrity and a `csar.signature-untrusted` warning says so.
    pub trusted_roots_pem: Vec<Vec<u8>>,
    /// When true, a package whose manifest is not signed is an error (`csar.unsigned`).
    pub require_signature: bool,
}

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SigFailure {
    /// The signature bytes are not a CMS structure.
    Malformed(String),
    /// The signature does not match the content (or was not made by the given certificate).
    Mismatch(String),
    /// The signature matches, but the signer does not chain to a trusted root.
    Untrusted(String),
}

/// The trusted roots, parsed once per verification run.
pub(crate) struct Trust {
    store: Option<X509Store>,
}

impl Trust {
    /// Builds the trust store from PEM roots; an empty list means "no trust anchors".
    pub(crate) fn from_pem_roots(roots: &[Vec<u8>]) -> Result<Trust, String> {
        if roots.is_empty() {
            return Ok(Trust { store: None });
        }
        let mut builder = X509StoreBuilder::new().map_err(|e| e.to_string())?;
        for pem in roots {
            let certs = X509::stack_from_pem(pem).map_err(|e| e.to_string())?;
            if certs.is_empty() {
                return Err("a trusted root entry holds no PEM certificate".to_string());
            }
            for cert in certs {
                builder.add_cert(cert).map_err(|e| e.to_string())?;
            }
        }
        // Vendors sign packages with code-signing certificates; OpenSSL's CMS default
        // purpose (S/MIME signing) would refuse those.
        builder
            .set_purpose(X509PurposeId::ANY)
            .map_err(|e| e.to_string())?;
        Ok(Trust {
            store: Some(builder.build()),
        })
    }
}

/// Parses certificates from PEM (one or more) or DER bytes.
pub(crate) fn parse_certificates(bytes: &[u8]) -> Result<Vec<X509>, String> {
    if looks_like_pem(bytes) {
        let certs = X509::stack_from_pem(bytes).map_err(|e| e.to_string())?;
        if certs.is_empty() {
            return Err("no PEM certificate found".to_string());
        }
        Ok(certs)
    } else {
        X509::from_der(bytes)
            .map(|c| vec![c])
            .map_err(|e| e.to_string())
    }
}

fn looks_like_pem(bytes: &[u8]) -> bool {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    bytes[start..].starts_with(b"-----BEGIN")
}

/// Verifies the detached CMS signature `cms` (PEM or DER) over one of `contents` (the
/// candidates are alternative spellings of the same signed bytes, tried in order).
///
/// `signer_certs` are the package's certificates for this signature; when non-empty, the
/// signer must be one of them. Returns `Ok(true)` when the signer chains to a trusted root,
/// `Ok(false)` when no roots were given and integrity holds.
pub(crate) fn verify_detached(
    cms: &[u8],
    contents: &[&[u8]],
    signer_certs: &[X509],
    trust: &Trust,
) -> Result<bool, SigFailure> {
    let mut info = if looks_like_pem(cms) {
        CmsContentInfo::from_pem(cms)
    } else {
        CmsContentInfo::from_der(cms)
    }
    .map_err(|e| SigFailure::Malformed(first_reason(&e.to_string())))?;

    let mut certs = Stack::new().map_err(|e| SigFailure::Malformed(e.to_string()))?;
    for cert in signer_certs {
        certs
            .push(cert.clone())
            .map_err(|e| SigFailure::Malformed(e.to_string()))?;
    }
    let restrict = if signer_certs.is_empty() {
        CMSOptions::empty()
    } else {
        // Only the package's certificate may be the signer, not one smuggled into the CMS.
        CMSOptions::NOINTERN
    };
    let certs_arg = (!signer_certs.is_empty()).then_some(certs.as_ref());

    // Integrity first, so a tampered file is reported as such even without trust anchors.
    // Binary mode first (exact bytes); then S/MIME text canonicalization, which
    // `openssl cms -sign` without `-binary` applies.
    let mut matched: Option<(&[u8], CMSOptions)> = None;
    let mut last_error = String::new();
    'outer: for content in contents {
        for mode in [CMSOptions::BINARY, CMSOptions::empty()] {
            let flags = mode | restrict | CMSOptions::NO_SIGNER_CERT_VERIFY;
            match info.verify(certs_arg, None, Some(content), None, flags) {
                Ok(()) => {
                    matched = Some((content, mode));
                    break 'outer;
                }
                Err(e) => last_error = first_reason(&e.to_string()),
            }
        }
    }
    let Some((content, mode)) = matched else {
        return Err(SigFailure::Mismatch(last_error));
    };
    let Some(store) = &trust.store else {
        return Ok(false);
    };
    info.verify(certs_arg, Some(store), Some(content), None, mode | restrict)
        .map(|()| true)
        .map_err(|e| SigFailure::Untrusted(first_reason(&e.to_string())))
}

/// OpenSSL error stacks are long; the first entry says what failed.
fn first_reason(stack: &str) -> String {
    stack
        .split(", error:")
        .next()
        .unwrap_or(stack)
        .trim()
        .to_string()
}

#[cfg(test)]
#[path = "../tests/common/pki.rs"]
mod test_pki;

#[cfg(test)]
mod tests {
    use super::test_pki::Pki;
    use super::*;

    #[test]
    fn accepts_a_good_signature_and_refuses_tampered_content() {
        let pki = Pki::new("t1");
        let sig = pki.sign_pem(b"hello manifest\n");
        let none = Trust::from_pem_roots(&[]).unwrap();
        assert_eq!(
            verify_detached(
                &sig,
                &[b"hello manifest\n"],
                std::slice::from_ref(&pki.leaf),
                &none
            ),
            Ok(false)
        );
        // Without a package certificate, the certificate embedded in the CMS is used.
        assert_eq!(
            verify_detached(&sig, &[b"hello manifest\n"], &[], &none),
            Ok(false)
        );
        assert!(matches!(
            verify_detached(
                &sig,
                &[b"hello manifesT\n"],
                std::slice::from_ref(&pki.leaf),
                &none
            ),
            Err(SigFailure::Mismatch(_))
        ));
    }

    #[test]
    fn the_signer_must_be_the_package_certificate() {
        let signer = Pki::new("signer");
        let other = Pki::new("other");
        let sig = signer.sign_pem(b"data");
        let none = Trust::from_pem_roots(&[]).unwrap();
        assert!(matches!(
            verify_detached(&sig, &[b"data"], std::slice::from_ref(&other.leaf), &none),
            Err(SigFailure::Mismatch(_))
        ));
    }

    #[test]
    fn trusted_roots_decide_trust() {
        let pki = Pki::new("t2");
        let stranger = Pki::new("stranger");
        let sig = pki.sign_pem(b"data");
        let trusted = Trust::from_pem_roots(&[pki.ca.to_pem().unwrap()]).unwrap();
        assert_eq!(
            verify_detached(&sig, &[b"data"], std::slice::from_ref(&pki.leaf), &trusted),
            Ok(true)
        );
        let wrong = Trust::from_pem_roots(&[stranger.ca.to_pem().unwrap()]).unwrap();
        assert!(matches!(
            verify_detached(&sig, &[b"data"], std::slice::from_ref(&pki.leaf), &wrong),
            Err(SigFailure::Untrusted(_))
        ));
    }

    #[test]
    fn tries_content_candidates_in_order_and_refuses_garbage() {
        let pki = Pki::new("t3");
        let sig = pki.sign_pem(b"body");
        let none = Trust::from_pem_roots(&[]).unwrap();
        assert_eq!(
            verify_detached(&sig, &[b"body\n", b"body"], &[], &none),
            Ok(false)
        );
        assert!(matches!(
            verify_detached(
                b"-----BEGIN CMS-----\nAAAA\n-----END CMS-----\n",
                &[b"body"],
                &[],
                &none
            ),
            Err(SigFailure::Malformed(_))
        ));
        assert!(matches!(
            verify_detached(b"\x30\x03\x02\x01\x01", &[b"body"], &[], &none),
            Err(SigFailure::Malformed(_))
        ));
    }

    #[test]
    fn parses_pem_and_der_certificates() {
        let pki = Pki::new("t4");
        let mut pem = pki.leaf.to_pem().unwrap();
        pem.extend(pki.ca.to_pem().unwrap());
        assert_eq!(parse_certificates(&pem).unwrap().len(), 2);
        assert_eq!(
            parse_certificates(&pki.leaf.to_der().unwrap())
                .unwrap()
                .len(),
            1
        );
        assert!(parse_certificates(b"not a certificate").is_err());
        assert!(Trust::from_pem_roots(&[b"garbage".to_vec()]).is_err());
    }
}
