//! The parts of a CMS `SignedData` (RFC 5652) that a detached-signature check needs.
//!
//! Parsing only: which certificates the structure carries, and per signer who signed, with
//! which algorithms, over which signed attributes. [`crate::signature`] does the
//! cryptography and the trust decisions.

use sha2::{Digest, Sha256, Sha384, Sha512};

use crate::der::{Reader, Tlv, oid, tag};
use crate::error::CsarError;

/// Why a CMS structure was not read: the error, sorted by whether the structure is broken
/// or only uses what this reader does not accept.
#[derive(Debug)]
pub(crate) enum CmsError {
    /// The bytes are not a well-formed `SignedData`.
    Malformed(CsarError),
    /// Well-formed, but made with an algorithm or option this reader does not accept.
    Unsupported(CsarError),
}

impl CmsError {
    /// The error, whichever class it is in.
    pub fn into_inner(self) -> CsarError {
        match self {
            CmsError::Malformed(e) | CmsError::Unsupported(e) => e,
        }
    }
}

impl From<CsarError> for CmsError {
    fn from(e: CsarError) -> CmsError {
        CmsError::Malformed(e)
    }
}

/// A malformed structure, saying `problem`.
fn malformed(problem: impl Into<String>) -> CmsError {
    CmsError::Malformed(CsarError::Cms {
        problem: problem.into(),
    })
}

/// An algorithm or option not accepted, saying `problem`.
fn unsupported(problem: impl Into<String>) -> CmsError {
    CmsError::Unsupported(CsarError::UnsupportedSignature {
        problem: problem.into(),
    })
}

/// A parsed `SignedData` whose content is detached.
#[derive(Debug)]
pub(crate) struct SignedData<'a> {
    /// The DER of each X.509 certificate the structure carries.
    pub certificates: Vec<&'a [u8]>,
    /// One entry per `SignerInfo`; never empty.
    pub signers: Vec<SignerInfo<'a>>,
}

/// How a `SignerInfo` names its signer's certificate.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SignerId<'a> {
    /// The certificate's issuer name (content of the `Name` sequence) and serial number
    /// (content of the `INTEGER`).
    IssuerSerial { issuer: &'a [u8], serial: &'a [u8] },
    /// The certificate's subject key identifier extension.
    KeyId(&'a [u8]),
}

/// One signer of the content.
#[derive(Debug)]
pub(crate) struct SignerInfo<'a> {
    pub sid: SignerId<'a>,
    pub digest: DigestAlgorithm,
    /// The signed attributes, when the signature covers them instead of the content.
    pub signed_attrs: Option<SignedAttrs<'a>>,
    pub algorithm: SignatureAlgorithm,
    pub signature: &'a [u8],
}

/// Signed attributes: the signature is over their DER (as a `SET OF`), and they carry the
/// digest of the content.
#[derive(Debug)]
pub(crate) struct SignedAttrs<'a> {
    /// The attributes re-tagged from `[0] IMPLICIT` to `SET OF`, which is what was signed.
    pub signed_bytes: Vec<u8>,
    pub message_digest: &'a [u8],
}

/// Digest algorithms accepted for signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DigestAlgorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl DigestAlgorithm {
    fn from_oid(value: &[u8]) -> Result<DigestAlgorithm, CmsError> {
        match value {
            oid::SHA256 => Ok(DigestAlgorithm::Sha256),
            oid::SHA384 => Ok(DigestAlgorithm::Sha384),
            oid::SHA512 => Ok(DigestAlgorithm::Sha512),
            oid::SHA1 => Err(unsupported(
                "SHA-1 digests are not accepted; sign with SHA-256 or better",
            )),
            other => Err(unsupported(format!(
                "digest algorithm {} is not supported; use SHA-256, SHA-384 or SHA-512",
                dotted(other)
            ))),
        }
    }

    fn output_len(self) -> usize {
        match self {
            DigestAlgorithm::Sha256 => 32,
            DigestAlgorithm::Sha384 => 48,
            DigestAlgorithm::Sha512 => 64,
        }
    }

    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            DigestAlgorithm::Sha256 => Sha256::digest(data).to_vec(),
            DigestAlgorithm::Sha384 => Sha384::digest(data).to_vec(),
            DigestAlgorithm::Sha512 => Sha512::digest(data).to_vec(),
        }
    }
}

/// Signature algorithms accepted, with the hash each signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignatureAlgorithm {
    RsaPkcs1(DigestAlgorithm),
    RsaPss(DigestAlgorithm),
    Ecdsa(DigestAlgorithm),
}

impl SignatureAlgorithm {
    /// Reads a signature `AlgorithmIdentifier`; `digest` is the signer's digest algorithm,
    /// which is the hash when the identifier names only the key type.
    pub fn from_identifier(
        identifier: Tlv<'_>,
        digest: DigestAlgorithm,
    ) -> Result<SignatureAlgorithm, CmsError> {
        let (algorithm, params) = algorithm_identifier(identifier, "signature algorithm")?;
        Ok(match algorithm {
            oid::RSA_ENCRYPTION => SignatureAlgorithm::RsaPkcs1(digest),
            oid::SHA256_WITH_RSA => SignatureAlgorithm::RsaPkcs1(DigestAlgorithm::Sha256),
            oid::SHA384_WITH_RSA => SignatureAlgorithm::RsaPkcs1(DigestAlgorithm::Sha384),
            oid::SHA512_WITH_RSA => SignatureAlgorithm::RsaPkcs1(DigestAlgorithm::Sha512),
            oid::RSASSA_PSS => SignatureAlgorithm::RsaPss(pss_hash(params)?),
            oid::EC_PUBLIC_KEY => SignatureAlgorithm::Ecdsa(digest),
            oid::ECDSA_WITH_SHA256 => SignatureAlgorithm::Ecdsa(DigestAlgorithm::Sha256),
            oid::ECDSA_WITH_SHA384 => SignatureAlgorithm::Ecdsa(DigestAlgorithm::Sha384),
            oid::ECDSA_WITH_SHA512 => SignatureAlgorithm::Ecdsa(DigestAlgorithm::Sha512),
            other => {
                return Err(unsupported(format!(
                    "signature algorithm {} is not supported; RSA (PKCS #1 v1.5 or PSS) and \
                     ECDSA with SHA-2 are accepted",
                    dotted(other)
                )));
            }
        })
    }
}

/// The hash of RSASSA-PSS parameters. Its default, SHA-1, is refused, and so is a salt
/// length other than the hash length: that is the only one *ring* verifies.
fn pss_hash(params: Option<Tlv<'_>>) -> Result<DigestAlgorithm, CmsError> {
    let params = params.ok_or_else(|| malformed("RSASSA-PSS without parameters"))?;
    let mut fields = params
        .expect(tag::SEQUENCE, "RSASSA-PSS parameters")?
        .reader();
    let hash = match fields.optional(tag::CONTEXT_0, "RSASSA-PSS hash")? {
        Some(hash) => {
            let identifier = hash.reader().expect(tag::SEQUENCE, "RSASSA-PSS hash")?;
            DigestAlgorithm::from_oid(algorithm_identifier(identifier, "RSASSA-PSS hash")?.0)?
        }
        None => DigestAlgorithm::from_oid(oid::SHA1)?,
    };
    fields.optional(tag::CONTEXT_1, "RSASSA-PSS mask generation")?;
    let salt_len = match fields.optional(tag::CONTEXT_2, "RSASSA-PSS salt length")? {
        Some(salt) => {
            let value = salt
                .reader()
                .expect(tag::INTEGER, "RSASSA-PSS salt length")?;
            value
                .content
                .iter()
                .try_fold(0usize, |acc, b| {
                    acc.checked_mul(256).map(|v| v + usize::from(*b))
                })
                .ok_or_else(|| malformed("RSASSA-PSS salt length too large"))?
        }
        None => 20,
    };
    if salt_len != hash.output_len() {
        return Err(unsupported(format!(
            "RSASSA-PSS signatures with a {salt_len}-byte salt are not supported; the salt must \
             be as long as the digest ({} bytes: `openssl cms -sign -keyopt \
             rsa_pss_saltlen:digest`)",
            hash.output_len()
        )));
    }
    Ok(hash)
}

/// Parses DER or BER `ContentInfo` bytes holding a `SignedData` with detached content.
pub(crate) fn parse_signed_data(bytes: &[u8]) -> Result<SignedData<'_>, CmsError> {
    let mut outer = Reader::new(bytes);
    let content_info = outer.expect(tag::SEQUENCE, "ContentInfo")?;
    if !outer.is_empty() {
        return Err(malformed("bytes after the ContentInfo"));
    }
    let mut fields = content_info.reader();
    let content_type = fields.expect(tag::OID, "ContentInfo content type")?;
    if content_type.content != oid::SIGNED_DATA {
        return Err(malformed(format!(
            "the CMS structure is {}, not SignedData",
            dotted(content_type.content)
        )));
    }
    let explicit = fields.expect(tag::CONTEXT_0, "ContentInfo content")?;
    let signed_data = explicit.reader().expect(tag::SEQUENCE, "SignedData")?;

    let mut fields = signed_data.reader();
    fields.expect(tag::INTEGER, "SignedData version")?;
    fields.expect(tag::SET, "SignedData digest algorithms")?;
    let encap = fields.expect(tag::SEQUENCE, "EncapsulatedContentInfo")?;
    let mut encap_fields = encap.reader();
    let econtent_type = encap_fields
        .expect(tag::OID, "EncapsulatedContentInfo content type")?
        .content;
    if econtent_type != oid::DATA {
        return Err(malformed(format!(
            "the signed content type is {}, not id-data",
            dotted(econtent_type)
        )));
    }
    if !encap_fields.is_empty() {
        return Err(malformed(
            "the signature embeds its content; SOL004 signatures are detached",
        ));
    }
    let mut certificates = Vec::new();
    if let Some(set) = fields.optional(tag::CONTEXT_0, "SignedData certificates")? {
        let mut choices = set.reader();
        while !choices.is_empty() {
            let choice = choices.read("certificate")?;
            // Attribute certificates and other formats name no signer key; skip them.
            if choice.tag == tag::SEQUENCE {
                certificates.push(choice.raw);
            }
        }
    }
    fields.optional(tag::CONTEXT_1, "SignedData revocation lists")?;
    let signer_set = fields.expect(tag::SET, "SignedData signer infos")?;
    let mut signer_reader = signer_set.reader();
    let mut signers = Vec::new();
    while !signer_reader.is_empty() {
        let info = signer_reader.expect(tag::SEQUENCE, "SignerInfo")?;
        signers.push(parse_signer_info(info, econtent_type)?);
    }
    if signers.is_empty() {
        return Err(malformed("the signature has no signer"));
    }
    Ok(SignedData {
        certificates,
        signers,
    })
}

fn parse_signer_info<'a>(info: Tlv<'a>, econtent_type: &[u8]) -> Result<SignerInfo<'a>, CmsError> {
    let mut fields = info.reader();
    fields.expect(tag::INTEGER, "SignerInfo version")?;
    let sid_tlv = fields.read("SignerInfo signer identifier")?;
    let sid = match sid_tlv.tag {
        tag::SEQUENCE => {
            let mut parts = sid_tlv.reader();
            let issuer = parts.expect(tag::SEQUENCE, "signer issuer")?.content;
            let serial = parts.expect(tag::INTEGER, "signer serial number")?.content;
            SignerId::IssuerSerial { issuer, serial }
        }
        tag::CONTEXT_0_PRIMITIVE => SignerId::KeyId(sid_tlv.content),
        other => {
            return Err(malformed(format!(
                "unknown signer identifier (tag 0x{other:02x})"
            )));
        }
    };
    let (digest_oid, _) = algorithm_identifier(
        fields.expect(tag::SEQUENCE, "SignerInfo digest algorithm")?,
        "digest algorithm",
    )?;
    let digest = DigestAlgorithm::from_oid(digest_oid)?;
    let signed_attrs = fields
        .optional(tag::CONTEXT_0, "SignerInfo signed attributes")?
        .map(|attrs| signed_attributes(attrs, econtent_type))
        .transpose()?;
    let algorithm = SignatureAlgorithm::from_identifier(
        fields.expect(tag::SEQUENCE, "SignerInfo signature algorithm")?,
        digest,
    )?;
    let signature = fields
        .expect(tag::OCTET_STRING, "SignerInfo signature")?
        .content;
    Ok(SignerInfo {
        sid,
        digest,
        signed_attrs,
        algorithm,
        signature,
    })
}

/// Reads the signed attributes; RFC 5652 requires a content type equal to the
/// encapsulated one and exactly one message digest.
fn signed_attributes<'a>(
    attrs: Tlv<'a>,
    econtent_type: &[u8],
) -> Result<SignedAttrs<'a>, CmsError> {
    let header_len = attrs.raw.len() - attrs.content.len();
    if attrs.raw.ends_with(&[0, 0]) && attrs.raw.get(1) == Some(&0x80) {
        return Err(malformed("signed attributes are not DER-encoded"));
    }
    let mut signed_bytes = Vec::with_capacity(attrs.raw.len());
    signed_bytes.push(tag::SET);
    signed_bytes.extend_from_slice(&attrs.raw[1..header_len]);
    signed_bytes.extend_from_slice(attrs.content);

    let mut message_digest = None;
    let mut content_type = None;
    let mut reader = attrs.reader();
    while !reader.is_empty() {
        let mut attribute = reader.expect(tag::SEQUENCE, "signed attribute")?.reader();
        let kind = attribute.expect(tag::OID, "signed attribute type")?.content;
        let values = attribute.expect(tag::SET, "signed attribute values")?;
        let slot = match kind {
            oid::MESSAGE_DIGEST => &mut message_digest,
            oid::CONTENT_TYPE => &mut content_type,
            _ => continue,
        };
        let mut value_reader = values.reader();
        let value = value_reader.read("signed attribute value")?;
        if slot.is_some() || !value_reader.is_empty() {
            return Err(malformed(format!(
                "signed attribute {} is repeated",
                dotted(kind)
            )));
        }
        *slot = Some(value);
    }
    let content_type =
        content_type.ok_or_else(|| malformed("the signed attributes have no content type"))?;
    if content_type.tag != tag::OID || content_type.content != econtent_type {
        return Err(malformed(
            "the signed content type differs from the encapsulated one",
        ));
    }
    let message_digest = message_digest
        .ok_or_else(|| malformed("the signed attributes have no message digest"))?
        .expect(tag::OCTET_STRING, "message digest")?
        .content;
    Ok(SignedAttrs {
        signed_bytes,
        message_digest,
    })
}

/// The OID of an `AlgorithmIdentifier` and its parameters, if any (NULL counts as none).
fn algorithm_identifier<'a>(
    identifier: Tlv<'a>,
    what: &'static str,
) -> Result<(&'a [u8], Option<Tlv<'a>>), CsarError> {
    let mut fields = identifier.expect(tag::SEQUENCE, what)?.reader();
    let algorithm = fields.expect(tag::OID, what)?.content;
    let params = if fields.is_empty() {
        None
    } else {
        Some(fields.read(what)?).filter(|p| p.tag != tag::NULL)
    };
    Ok((algorithm, params))
}

/// Dotted notation of an OID's content octets, for messages.
fn dotted(value: &[u8]) -> String {
    let mut arcs = Vec::new();
    let mut current: u64 = 0;
    for byte in value {
        current = (current << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            arcs.push(current);
            current = 0;
        }
    }
    let Some(first) = arcs.first().copied() else {
        return "(empty OID)".to_string();
    };
    let (a, b) = match first {
        0..40 => (0, first),
        40..80 => (1, first - 40),
        _ => (2, first - 80),
    };
    let mut out = format!("{a}.{b}");
    for arc in &arcs[1..] {
        out.push_str(&format!(".{arc}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_oids_in_dotted_notation() {
        assert_eq!(dotted(oid::SHA256), "2.16.840.1.101.3.4.2.1");
        assert_eq!(dotted(oid::SHA1), "1.3.14.3.2.26");
        assert_eq!(dotted(oid::SIGNED_DATA), "1.2.840.113549.1.7.2");
    }

    #[test]
    fn refuses_other_content_types_and_embedded_content() {
        // ContentInfo { id-data, [0] { OCTET STRING } }
        let mut data = vec![0x30, 0x10, 0x06, 0x09];
        data.extend_from_slice(oid::DATA);
        data.extend([0xa0, 0x03, 0x04, 0x01, 0x41]);
        let err = parse_signed_data(&data).unwrap_err();
        assert!(
            matches!(err, CmsError::Malformed(CsarError::Cms { .. })),
            "{err:?}"
        );
        assert_eq!(
            err.into_inner().to_string(),
            "the CMS structure is 1.2.840.113549.1.7.1, not SignedData"
        );

        // SignedData with eContent present.
        let mut encap = vec![0x30, 0x10, 0x06, 0x09];
        encap.extend_from_slice(oid::DATA);
        encap.extend([0xa0, 0x03, 0x04, 0x01, 0x41]);
        let mut sd = vec![0x02, 0x01, 0x01, 0x31, 0x00];
        sd.extend(&encap);
        sd.extend([0x31, 0x00]);
        let mut signed = vec![0x30, sd.len() as u8];
        signed.extend(sd);
        let mut explicit = vec![0xa0, signed.len() as u8];
        explicit.extend(signed);
        let mut ci = vec![0x06, 0x09];
        ci.extend_from_slice(oid::SIGNED_DATA);
        ci.extend(explicit);
        let mut whole = vec![0x30, ci.len() as u8];
        whole.extend(ci);
        let err = parse_signed_data(&whole).unwrap_err();
        assert!(
            matches!(err, CmsError::Malformed(CsarError::Cms { .. })),
            "{err:?}"
        );
        assert_eq!(
            err.into_inner().to_string(),
            "the signature embeds its content; SOL004 signatures are detached"
        );
    }
}
