//! CMS signatures over the manifest and over individual artifacts.
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
//!
//! The CMS structure is read by [`crate::cms`]; signatures and certificate chains are checked
//! with `rustls-webpki` on *ring*, the same code that checks the server's TLS peers. Accepted:
//! signers with RSA keys (PKCS #1 v1.5 and PSS, 2048 to 8192 bits) or ECDSA keys on P-256 and
//! P-384, with SHA-256, SHA-384 or SHA-512 (ECDSA: SHA-256 or SHA-384); X.509 v3
//! certificates. SHA-1 is refused. Chains may also use Ed25519.

use base64::Engine as _;
use rustls_pki_types::{
    CertificateDer, SignatureVerificationAlgorithm, SubjectPublicKeyInfoDer, TrustAnchor, UnixTime,
};
use webpki::{EndEntityCert, ExtendedKeyUsageValidator, KeyPurposeIdIter, RawPublicKeyEntity};

use crate::cms::{
    CmsError, DigestAlgorithm, SignatureAlgorithm, SignerId, SignerInfo, parse_signed_data,
};
use crate::error::CsarError;
use crate::x509::CertFields;

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

/// Why a signature was not accepted: the error, sorted by the diagnostic it becomes.
#[derive(Debug)]
pub(crate) enum SigFailure {
    /// The signature bytes are not a CMS `SignedData` structure.
    Malformed(CsarError),
    /// The signature uses an algorithm or option that is not accepted.
    Unsupported(CsarError),
    /// The signature does not match the content (or was not made by the given certificate).
    Mismatch(CsarError),
    /// The signature matches, but the signer does not chain to a trusted root.
    Untrusted(CsarError),
}

/// Failures of the same class saying the same thing are equal (for tests).
#[cfg(test)]
impl PartialEq for SigFailure {
    fn eq(&self, other: &SigFailure) -> bool {
        use SigFailure::*;
        match (self, other) {
            (Malformed(a), Malformed(b))
            | (Unsupported(a), Unsupported(b))
            | (Mismatch(a), Mismatch(b))
            | (Untrusted(a), Untrusted(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

/// A [`CsarError::SignatureCheck`] saying `problem`.
fn check_failed(problem: impl Into<String>) -> CsarError {
    CsarError::SignatureCheck {
        problem: problem.into(),
    }
}

/// A DER-encoded X.509 certificate that parsed as one.
pub(crate) type Certificate = CertificateDer<'static>;

/// The trusted roots, parsed once per verification run.
pub(crate) struct Trust {
    anchors: Option<Vec<TrustAnchor<'static>>>,
}

impl Trust {
    /// Builds the trust anchors from PEM roots; an empty list means "no trust anchors".
    pub(crate) fn from_pem_roots(roots: &[Vec<u8>]) -> Result<Trust, CsarError> {
        if roots.is_empty() {
            return Ok(Trust { anchors: None });
        }
        let mut anchors = Vec::new();
        for pem in roots {
            let certs = pem_blocks(pem, &["CERTIFICATE"])?;
            if certs.is_empty() {
                return Err(CsarError::Pem {
                    problem: "a trusted root entry holds no PEM certificate",
                });
            }
            for der in certs {
                let der = CertificateDer::from(der);
                let anchor = webpki::anchor_from_trusted_cert(&der)
                    .map_err(|source| CsarError::TrustedRoot { source })?;
                anchors.push(anchor.to_owned());
            }
        }
        Ok(Trust {
            anchors: Some(anchors),
        })
    }
}

/// Parses certificates from PEM (one or more) or DER bytes.
pub(crate) fn parse_certificates(bytes: &[u8]) -> Result<Vec<Certificate>, CsarError> {
    let ders = if looks_like_pem(bytes) {
        let blocks = pem_blocks(bytes, &["CERTIFICATE"])?;
        if blocks.is_empty() {
            return Err(CsarError::Pem {
                problem: "no PEM certificate found",
            });
        }
        blocks
    } else {
        vec![bytes.to_vec()]
    };
    ders.into_iter()
        .map(|der| {
            CertFields::parse(&der)?;
            Ok(CertificateDer::from(der))
        })
        .collect()
}

fn looks_like_pem(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().starts_with(b"-----BEGIN")
}

/// Decodes the PEM blocks whose label is one of `labels`; other blocks are skipped.
fn pem_blocks(bytes: &[u8], labels: &[&str]) -> Result<Vec<Vec<u8>>, CsarError> {
    let mut blocks = Vec::new();
    let mut open: Option<(&[u8], Vec<u8>)> = None;
    for line in bytes.split(|b| *b == b'\n').map(<[u8]>::trim_ascii) {
        match &mut open {
            None => {
                if let Some(label) = pem_label(line, b"-----BEGIN ") {
                    open = Some((label, Vec::new()));
                }
            }
            Some((label, body)) => {
                if let Some(end) = pem_label(line, b"-----END ") {
                    if end != *label {
                        return Err(CsarError::Pem {
                            problem: "a PEM block ends with another label than it began",
                        });
                    }
                    if labels.iter().any(|l| l.as_bytes() == end) {
                        let der = base64::engine::general_purpose::STANDARD
                            .decode(&*body)
                            .map_err(|source| CsarError::PemBase64 { source })?;
                        blocks.push(der);
                    }
                    open = None;
                } else {
                    body.extend_from_slice(line);
                }
            }
        }
    }
    if open.is_some() {
        return Err(CsarError::Pem {
            problem: "a PEM block has no END line",
        });
    }
    Ok(blocks)
}

fn pem_label<'a>(line: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    line.strip_prefix(prefix)?.strip_suffix(b"-----")
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
    signer_certs: &[Certificate],
    trust: &Trust,
) -> Result<bool, SigFailure> {
    let der = if looks_like_pem(cms) {
        let mut blocks = pem_blocks(cms, &["CMS", "PKCS7"]).map_err(SigFailure::Malformed)?;
        if blocks.len() != 1 {
            return Err(SigFailure::Malformed(CsarError::Pem {
                problem: "expected one PEM block labelled CMS or PKCS7",
            }));
        }
        blocks.remove(0)
    } else {
        cms.to_vec()
    };
    let signed = parse_signed_data(&der).map_err(|e| match e {
        CmsError::Malformed(e) => SigFailure::Malformed(e),
        CmsError::Unsupported(e) => SigFailure::Unsupported(e),
    })?;
    let embedded: Vec<Certificate> = signed
        .certificates
        .iter()
        .map(|c| CertificateDer::from(c.to_vec()))
        .collect();
    // Only the package's certificate may be the signer, not one smuggled into the CMS.
    let candidates = if signer_certs.is_empty() {
        &embedded[..]
    } else {
        signer_certs
    };

    let candidates: Vec<CertFields<'_>> = candidates
        .iter()
        .filter_map(|c| CertFields::parse(c).ok())
        .collect();
    let mut signers = Vec::with_capacity(signed.signers.len());
    for info in &signed.signers {
        let cert = candidates
            .iter()
            .find(|c| names_signer(c, &info.sid))
            .ok_or_else(|| {
                SigFailure::Mismatch(check_failed(if signer_certs.is_empty() {
                    "the signature does not carry its signer's certificate"
                } else {
                    "the signer is not the package's certificate"
                }))
            })?;
        let algorithms =
            verification_algorithms(info.algorithm).map_err(SigFailure::Unsupported)?;
        signers.push((info, cert, algorithms));
    }

    // Every signer must have signed the same spelling of the content.
    let mut first_error = None;
    let verified = contents.iter().any(|content| {
        signers
            .iter()
            .try_for_each(|(info, cert, algorithms)| verify_signer(info, cert, algorithms, content))
            .map_err(|e| {
                first_error.get_or_insert(e);
            })
            .is_ok()
    });
    if !verified {
        let reason = first_error.unwrap_or_else(|| check_failed("no content to check"));
        return Err(SigFailure::Mismatch(reason));
    }

    let Some(anchors) = &trust.anchors else {
        return Ok(false);
    };
    let intermediates: Vec<Certificate> = signer_certs.iter().chain(&embedded).cloned().collect();
    for (_, cert, _) in &signers {
        verify_chain(cert, anchors, &intermediates).map_err(SigFailure::Untrusted)?;
    }
    Ok(true)
}

/// Checks that `cert` chains to one of `anchors`, for any purpose, at the current time.
fn verify_chain(
    cert: &CertFields<'_>,
    anchors: &[TrustAnchor<'_>],
    intermediates: &[Certificate],
) -> Result<(), CsarError> {
    if cert.version == 0 {
        return verify_v1_certificate(cert, anchors);
    }
    let der = CertificateDer::from(cert.der);
    let end_entity =
        EndEntityCert::try_from(&der).map_err(|source| CsarError::CertificateCheck { source })?;
    end_entity
        .verify_for_usage(
            CHAIN_ALGORITHMS,
            anchors,
            intermediates,
            UnixTime::now(),
            AnyPurpose,
            None,
            None,
        )
        .map(|_| ())
        .map_err(|source| CsarError::CertificateCheck { source })
}

/// A version 1 certificate has no extensions, so no chain rules to check beyond dates and
/// its issuer's signature; it is accepted when a trusted root issued it directly.
fn verify_v1_certificate(
    cert: &CertFields<'_>,
    anchors: &[TrustAnchor<'_>],
) -> Result<(), CsarError> {
    let now = i64::try_from(UnixTime::now().as_secs()).unwrap_or(i64::MAX);
    if now > cert.not_after {
        return Err(check_failed(
            "a certificate in the signer's chain has expired",
        ));
    }
    if now < cert.not_before {
        return Err(check_failed(
            "a certificate in the signer's chain is not valid yet",
        ));
    }
    let algorithm =
        SignatureAlgorithm::from_identifier(cert.signature_algorithm, DigestAlgorithm::Sha256)
            .map_err(CmsError::into_inner)?;
    let algorithms = verification_algorithms(algorithm)?;
    for anchor in anchors.iter().filter(|a| a.subject.as_ref() == cert.issuer) {
        let spki = SubjectPublicKeyInfoDer::from(der_element(
            crate::der::tag::SEQUENCE,
            anchor.subject_public_key_info.as_ref(),
        ));
        let Ok(key) = RawPublicKeyEntity::try_from(&spki) else {
            continue;
        };
        if algorithms
            .iter()
            .any(|alg| key.verify_signature(*alg, cert.tbs, cert.signature).is_ok())
        {
            return Ok(());
        }
    }
    Err(check_failed(
        "the signer's version 1 certificate was not issued by a trusted root (a version 1 \
         certificate must be issued directly by a root; re-issue it as version 3 to sign \
         through an intermediate CA)",
    ))
}

/// A DER element with a definite length.
fn der_element(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// True when `cert` is the certificate `sid` names.
fn names_signer(cert: &CertFields<'_>, sid: &SignerId<'_>) -> bool {
    match sid {
        SignerId::IssuerSerial { issuer, serial } => {
            cert.issuer == *issuer && cert.serial == *serial
        }
        SignerId::KeyId(key_id) => cert.subject_key_id == Some(*key_id),
    }
}

/// Checks one signer's signature over `content`.
fn verify_signer(
    info: &SignerInfo<'_>,
    cert: &CertFields<'_>,
    algorithms: &[&'static dyn SignatureVerificationAlgorithm],
    content: &[u8],
) -> Result<(), CsarError> {
    let message = match &info.signed_attrs {
        Some(attrs) => {
            if info.digest.digest(content) != attrs.message_digest {
                return Err(check_failed(
                    "the content's digest differs from the signed one",
                ));
            }
            &attrs.signed_bytes[..]
        }
        None => content,
    };
    let spki = SubjectPublicKeyInfoDer::from(cert.spki);
    let key = RawPublicKeyEntity::try_from(&spki)
        .map_err(|source| CsarError::CertificateCheck { source })?;
    let mut last = check_failed("no algorithm fits the certificate's key");
    for algorithm in algorithms {
        match key.verify_signature(*algorithm, message, info.signature) {
            Ok(()) => return Ok(()),
            Err(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) => {
                last = check_failed(format!(
                    "the signature algorithm ({:?}) does not fit the signer's key",
                    info.algorithm
                ));
            }
            Err(source) => last = CsarError::CertificateCheck { source },
        }
    }
    Err(last)
}

/// The verifiers that may check a signature made with `algorithm`; the key decides which.
fn verification_algorithms(
    algorithm: SignatureAlgorithm,
) -> Result<Vec<&'static dyn SignatureVerificationAlgorithm>, CsarError> {
    use DigestAlgorithm::*;
    use webpki::ring as alg;
    Ok(match algorithm {
        SignatureAlgorithm::RsaPkcs1(Sha256) => vec![alg::RSA_PKCS1_2048_8192_SHA256],
        SignatureAlgorithm::RsaPkcs1(Sha384) => vec![alg::RSA_PKCS1_2048_8192_SHA384],
        SignatureAlgorithm::RsaPkcs1(Sha512) => vec![alg::RSA_PKCS1_2048_8192_SHA512],
        SignatureAlgorithm::RsaPss(Sha256) => vec![alg::RSA_PSS_2048_8192_SHA256_LEGACY_KEY],
        SignatureAlgorithm::RsaPss(Sha384) => vec![alg::RSA_PSS_2048_8192_SHA384_LEGACY_KEY],
        SignatureAlgorithm::RsaPss(Sha512) => vec![alg::RSA_PSS_2048_8192_SHA512_LEGACY_KEY],
        SignatureAlgorithm::Ecdsa(Sha256) => vec![alg::ECDSA_P256_SHA256, alg::ECDSA_P384_SHA256],
        SignatureAlgorithm::Ecdsa(Sha384) => vec![alg::ECDSA_P384_SHA384, alg::ECDSA_P256_SHA384],
        SignatureAlgorithm::Ecdsa(Sha512) => {
            return Err(CsarError::UnsupportedSignature {
                problem: "ECDSA with SHA-512 is not supported; use SHA-256 or SHA-384".into(),
            });
        }
    })
}

/// The algorithms certificates in a chain may be signed with.
const CHAIN_ALGORITHMS: &[&dyn SignatureVerificationAlgorithm] = &[
    webpki::ring::ECDSA_P256_SHA256,
    webpki::ring::ECDSA_P256_SHA384,
    webpki::ring::ECDSA_P384_SHA256,
    webpki::ring::ECDSA_P384_SHA384,
    webpki::ring::ED25519,
    webpki::ring::RSA_PKCS1_2048_8192_SHA256,
    webpki::ring::RSA_PKCS1_2048_8192_SHA384,
    webpki::ring::RSA_PKCS1_2048_8192_SHA512,
    webpki::ring::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS,
    webpki::ring::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
    webpki::ring::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS,
    webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
];

/// Vendors sign packages with code-signing certificates, others with S/MIME ones: any
/// extended key usage is accepted, as long as the extension is well-formed.
struct AnyPurpose;

impl ExtendedKeyUsageValidator for AnyPurpose {
    fn validate(&self, purposes: KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        for purpose in purposes {
            purpose?;
        }
        Ok(())
    }
}

/// A plain-language account of a certificate or signature error.
pub(crate) fn describe(error: &webpki::Error) -> String {
    use webpki::Error as E;
    match error {
        E::UnknownIssuer => "the signer's certificate does not chain to a trusted root".into(),
        E::CertExpired { .. } => "a certificate in the signer's chain has expired".into(),
        E::CertNotValidYet { .. } => "a certificate in the signer's chain is not valid yet".into(),
        E::InvalidSignatureForPublicKey => "the signature does not match".into(),
        E::UnsupportedCertVersion => "only X.509 v3 certificates are accepted".into(),
        E::CaUsedAsEndEntity => "the signer's certificate is a CA certificate".into(),
        E::BadDer | E::BadDerTime => "the certificate is not valid DER".into(),
        other => format!("{other:?}"),
    }
}

/// S/MIME text canonicalization, which `openssl cms -sign` applies without `-binary`: every
/// line ends in CRLF (a run of CR and LF characters ending in LF becomes one CRLF).
pub(crate) fn canonical_text(content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + content.len() / 32);
    for line in content.split_inclusive(|b| *b == b'\n') {
        if line.ends_with(b"\n") {
            let end = line
                .iter()
                .rposition(|b| !matches!(b, b'\n' | b'\r'))
                .map_or(0, |i| i + 1);
            out.extend_from_slice(&line[..end]);
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
#[path = "../tests/common/pki.rs"]
mod test_pki;

#[cfg(test)]
mod tests {
    use super::test_pki::Pki;
    use super::*;

    fn der(cert: &openssl::x509::X509) -> Vec<Certificate> {
        vec![CertificateDer::from(cert.to_der().unwrap())]
    }

    fn no_roots() -> Trust {
        Trust::from_pem_roots(&[]).unwrap()
    }

    #[test]
    fn accepts_a_good_signature_and_refuses_tampered_content() {
        let pki = Pki::new("t1");
        let sig = pki.sign_pem(b"hello manifest\n");
        let leaf = der(&pki.leaf);
        assert_eq!(
            verify_detached(&sig, &[b"hello manifest\n"], &leaf, &no_roots()),
            Ok(false)
        );
        // Without a package certificate, the certificate embedded in the CMS is used.
        assert_eq!(
            verify_detached(&sig, &[b"hello manifest\n"], &[], &no_roots()),
            Ok(false)
        );
        let tampered = verify_detached(&sig, &[b"hello manifesT\n"], &leaf, &no_roots());
        assert_eq!(
            tampered,
            Err(SigFailure::Mismatch(check_failed(
                "the content's digest differs from the signed one"
            )))
        );
    }

    #[test]
    fn a_forged_signature_over_the_right_digest_is_refused() {
        let pki = Pki::new("forged");
        let mut sig = der_of(&pki.sign_pem(b"data"));
        // The signature value is the last OCTET STRING; flip a byte in its middle.
        let at = sig.len() - 20;
        sig[at] ^= 0x01;
        let outcome = verify_detached(&sig, &[b"data"], &der(&pki.leaf), &no_roots());
        assert!(
            matches!(outcome, Err(SigFailure::Mismatch(_))),
            "{outcome:?}"
        );
    }

    fn der_of(pem: &[u8]) -> Vec<u8> {
        pem_blocks(pem, &["CMS"]).unwrap().remove(0)
    }

    /// Re-encodes a DER `ContentInfo` the way streaming signers write it: the ContentInfo,
    /// its `[0]` and the `SignedData` sequence with indefinite lengths.
    fn indefinite_lengths(der: &[u8]) -> Vec<u8> {
        use crate::der::{Reader, tag};
        let info = Reader::new(der).expect(tag::SEQUENCE, "info").unwrap();
        let mut fields = info.reader();
        let content_type = fields.read("type").unwrap();
        let explicit = fields.read("[0]").unwrap();
        let signed_data = explicit.reader().read("signed data").unwrap();
        let mut out = vec![tag::SEQUENCE, 0x80];
        out.extend_from_slice(content_type.raw);
        out.extend([tag::CONTEXT_0, 0x80, tag::SEQUENCE, 0x80]);
        out.extend_from_slice(signed_data.content);
        out.extend([0, 0, 0, 0, 0, 0]);
        out
    }

    #[test]
    fn the_signer_must_be_the_package_certificate() {
        let signer = Pki::new("signer");
        let other = Pki::new("other");
        let sig = signer.sign_pem(b"data");
        assert_eq!(
            verify_detached(&sig, &[b"data"], &der(&other.leaf), &no_roots()),
            Err(SigFailure::Mismatch(check_failed(
                "the signer is not the package's certificate"
            )))
        );
    }

    #[test]
    fn trusted_roots_decide_trust() {
        let pki = Pki::new("t2");
        let stranger = Pki::new("stranger");
        let sig = pki.sign_pem(b"data");
        let trusted = Trust::from_pem_roots(&[pki.ca_pem()]).unwrap();
        assert_eq!(
            verify_detached(&sig, &[b"data"], &der(&pki.leaf), &trusted),
            Ok(true)
        );
        let wrong = Trust::from_pem_roots(&[stranger.ca_pem()]).unwrap();
        assert_eq!(
            verify_detached(&sig, &[b"data"], &der(&pki.leaf), &wrong),
            Err(SigFailure::Untrusted(check_failed(
                "the signer's certificate does not chain to a trusted root"
            )))
        );
    }

    #[test]
    fn an_expired_signer_is_not_trusted() {
        let pki = Pki::expired("old");
        let sig = pki.sign_pem(b"data");
        // Integrity does not depend on validity dates ...
        assert_eq!(
            verify_detached(&sig, &[b"data"], &der(&pki.leaf), &no_roots()),
            Ok(false)
        );
        // ... trust does.
        let trusted = Trust::from_pem_roots(&[pki.ca_pem()]).unwrap();
        assert_eq!(
            verify_detached(&sig, &[b"data"], &der(&pki.leaf), &trusted),
            Err(SigFailure::Untrusted(check_failed(
                "a certificate in the signer's chain has expired"
            )))
        );
    }

    #[test]
    fn tries_content_candidates_in_order_and_refuses_garbage() {
        let pki = Pki::new("t3");
        let sig = pki.sign_pem(b"body");
        assert_eq!(
            verify_detached(&sig, &[b"body\n", b"body"], &[], &no_roots()),
            Ok(false)
        );
        for garbage in [
            &b"-----BEGIN CMS-----\nAAAA\n-----END CMS-----\n"[..],
            b"\x30\x03\x02\x01\x01",
            b"-----BEGIN CMS-----\nAAAA\n",
            b"",
        ] {
            let outcome = verify_detached(garbage, &[b"body"], &[], &no_roots());
            assert!(
                matches!(outcome, Err(SigFailure::Malformed(_))),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn parses_pem_and_der_certificates() {
        let pki = Pki::new("t4");
        let mut pem = pki.leaf_pem();
        pem.extend(pki.ca_pem());
        assert_eq!(parse_certificates(&pem).unwrap().len(), 2);
        assert_eq!(
            parse_certificates(&pki.leaf.to_der().unwrap())
                .unwrap()
                .len(),
            1
        );
        assert!(parse_certificates(b"not a certificate").is_err());
        assert!(
            parse_certificates(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----")
                .is_err()
        );
        assert!(Trust::from_pem_roots(&[b"garbage".to_vec()]).is_err());
    }

    #[test]
    fn canonical_text_ends_every_line_in_crlf() {
        assert_eq!(canonical_text(b"a\nb\r\nc\r\r\nd"), b"a\r\nb\r\nc\r\nd");
        assert_eq!(canonical_text(b"\n\n"), b"\r\n\r\n");
        assert_eq!(canonical_text(b""), b"");
    }

    /// Signatures made by the OpenSSL command-line tool (`tests/data/cms/make.sh`): every
    /// accepted algorithm, a signer named by key identifier without signed attributes, and
    /// BER with indefinite lengths, each checked through an intermediate CA to the root.
    #[test]
    fn verifies_signatures_made_by_the_openssl_tool() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cms/");
        let read = |name: &str| std::fs::read(format!("{dir}{name}")).unwrap();
        let content = read("content.txt");
        let trusted = Trust::from_pem_roots(&[read("root.pem")]).unwrap();
        let mut tampered = content.clone();
        tampered[0] ^= 0x20;
        for (signer, sig) in [
            ("rsa-pkcs1-sha256", "rsa-pkcs1-sha256.cms"),
            ("rsa-pkcs1-sha512", "rsa-pkcs1-sha512.cms"),
            ("rsa-pss-sha256", "rsa-pss-sha256.cms"),
            ("ecdsa-p384-sha384", "ecdsa-p384-sha384.cms"),
            ("ecdsa-p256-keyid-noattr", "ecdsa-p256-keyid-noattr.cms"),
            ("ecdsa-p384-sha384", "BER"),
        ] {
            let sig = if sig == "BER" {
                indefinite_lengths(&der_of(&read("ecdsa-p384-sha384.cms")))
            } else {
                read(sig)
            };
            let cert = parse_certificates(&read(&format!("{signer}.cert"))).unwrap();
            assert_eq!(
                verify_detached(&sig, &[&content], &cert, &trusted),
                Ok(true),
                "{signer}"
            );
            assert_eq!(
                verify_detached(&sig, &[&content], &[], &trusted),
                Ok(true),
                "{signer} with the certificate the signature carries"
            );
            let outcome = verify_detached(&sig, &[&tampered], &cert, &trusted);
            assert!(
                matches!(outcome, Err(SigFailure::Mismatch(_))),
                "{signer}: {outcome:?}"
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Damaged signatures (one byte changed, or cut short) are refused without a panic.
        #[test]
        fn damaged_signatures_never_panic(
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prelude::any::<u8>(),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
        ) {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cms/");
            let content = std::fs::read(format!("{dir}content.txt")).unwrap();
            let sig = der_of(&std::fs::read(format!("{dir}ecdsa-p384-sha384.cms")).unwrap());
            let mut changed = sig.clone();
            let i = at.index(changed.len());
            changed[i] = byte;
            let _ = verify_detached(&changed, &[&content], &[], &no_roots());
            let short = &sig[..cut.index(sig.len())];
            proptest::prop_assert!(verify_detached(short, &[&content], &[], &no_roots()).is_err());
        }
    }

    /// `openssl x509 -req` without extensions issues version 1 certificates, which webpki
    /// does not read; they are trusted when a root issued them directly.
    #[test]
    fn version_1_signers_are_trusted_only_when_a_root_issued_them() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cms/");
        let read = |name: &str| std::fs::read(format!("{dir}{name}")).unwrap();
        let content = read("content.txt");
        let trusted = Trust::from_pem_roots(&[read("root.pem")]).unwrap();
        let by_root = parse_certificates(&read("v1-by-root.cert")).unwrap();
        let sig = read("v1-by-root.cms");
        assert_eq!(
            verify_detached(&sig, &[&content], &by_root, &trusted),
            Ok(true)
        );
        let elsewhere = Trust::from_pem_roots(&[Pki::new("v1").ca_pem()]).unwrap();
        let outcome = verify_detached(&sig, &[&content], &by_root, &elsewhere);
        assert!(
            matches!(outcome, Err(SigFailure::Untrusted(_))),
            "{outcome:?}"
        );

        let by_intermediate = parse_certificates(&read("v1-by-intermediate.cert")).unwrap();
        let sig = read("v1-by-intermediate.cms");
        assert_eq!(
            verify_detached(&sig, &[&content], &by_intermediate, &no_roots()),
            Ok(false)
        );
        let Err(SigFailure::Untrusted(message)) =
            verify_detached(&sig, &[&content], &by_intermediate, &trusted)
        else {
            panic!("a version 1 certificate below an intermediate must not be trusted");
        };
        assert!(
            message.to_string().contains("issued directly by a root"),
            "{message}"
        );
    }

    #[test]
    fn text_mode_signatures_cover_crlf_line_ends_and_weak_options_are_refused() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cms/");
        let read = |name: &str| std::fs::read(format!("{dir}{name}")).unwrap();
        let content = read("content.txt");
        let sig = read("text-mode.cms");
        assert!(matches!(
            verify_detached(&sig, &[&content], &[], &no_roots()),
            Err(SigFailure::Mismatch(_))
        ));
        assert_eq!(
            verify_detached(
                &sig,
                &[&content, &canonical_text(&content)],
                &[],
                &no_roots()
            ),
            Ok(false)
        );
        let outcome = verify_detached(&read("sha1.cms"), &[&content], &[], &no_roots());
        assert_eq!(
            outcome,
            Err(SigFailure::Unsupported(check_failed(
                "SHA-1 digests are not accepted; sign with SHA-256 or better"
            )))
        );
        let outcome = verify_detached(&read("rsa-pss-max-salt.cms"), &[&content], &[], &no_roots());
        let Err(SigFailure::Unsupported(message)) = outcome else {
            panic!("{outcome:?}");
        };
        assert!(message.to_string().contains("222-byte salt"), "{message}");
    }
}
