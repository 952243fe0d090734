//! The fields of an X.509 certificate that naming and checking a CMS signer needs.
//!
//! Version 1 certificates are read as well as version 3: `openssl x509 -req` without an
//! extension file still issues version 1 certificates, and package signers made that way
//! are common.

use crate::der::{Reader, Tlv, oid, tag};
use crate::error::CsarError;

/// A [`CsarError::Certificate`] saying `problem`.
fn bad(problem: impl Into<String>) -> CsarError {
    CsarError::Certificate {
        problem: problem.into(),
    }
}

/// A certificate's fields, borrowed from its DER.
#[derive(Debug)]
pub(crate) struct CertFields<'a> {
    /// The whole certificate.
    pub der: &'a [u8],
    /// 0 for v1, 2 for v3.
    pub version: u8,
    /// Content of the serial number `INTEGER`.
    pub serial: &'a [u8],
    /// Content of the issuer `Name` sequence.
    pub issuer: &'a [u8],
    /// The `SubjectPublicKeyInfo`, tag and length included.
    pub spki: &'a [u8],
    /// Validity period, seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// The signed part, tag and length included.
    pub tbs: &'a [u8],
    /// The issuer's signature algorithm identifier.
    pub signature_algorithm: Tlv<'a>,
    /// The issuer's signature (content of the `BIT STRING`, unused-bits octet removed).
    pub signature: &'a [u8],
    /// The subject key identifier extension's value.
    pub subject_key_id: Option<&'a [u8]>,
}

const BIT_STRING: u8 = 0x03;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

impl<'a> CertFields<'a> {
    /// Reads a DER certificate.
    pub fn parse(der: &'a [u8]) -> Result<CertFields<'a>, CsarError> {
        let mut outer = Reader::new(der);
        let cert = outer.expect(tag::SEQUENCE, "Certificate")?;
        if !outer.is_empty() {
            return Err(bad("bytes after the certificate"));
        }
        let mut parts = cert.reader();
        let tbs = parts.expect(tag::SEQUENCE, "TBSCertificate")?;
        let signature_algorithm = parts.expect(tag::SEQUENCE, "certificate signature algorithm")?;
        let signature = bit_string(parts.expect(BIT_STRING, "certificate signature")?)?;

        let mut fields = tbs.reader();
        let version = match fields.optional(tag::CONTEXT_0, "certificate version")? {
            Some(v) => match v
                .reader()
                .expect(tag::INTEGER, "certificate version")?
                .content
            {
                [n @ 0..=2] => *n,
                _ => return Err(bad("unknown certificate version")),
            },
            None => 0,
        };
        let serial = fields.expect(tag::INTEGER, "serial number")?.content;
        fields.expect(tag::SEQUENCE, "TBSCertificate signature algorithm")?;
        let issuer = fields.expect(tag::SEQUENCE, "issuer")?.content;
        let mut validity = fields.expect(tag::SEQUENCE, "validity")?.reader();
        let not_before = time(validity.read("notBefore")?)?;
        let not_after = time(validity.read("notAfter")?)?;
        fields.expect(tag::SEQUENCE, "subject")?;
        let spki = fields.expect(tag::SEQUENCE, "subject public key info")?.raw;
        let mut subject_key_id = None;
        while let Some(next) = fields.peek_tag() {
            let field = fields.read("certificate field")?;
            if next == tag::CONTEXT_3 {
                subject_key_id = find_subject_key_id(field)?;
            }
        }
        Ok(CertFields {
            der: cert.raw,
            version,
            serial,
            issuer,
            spki,
            not_before,
            not_after,
            tbs: tbs.raw,
            signature_algorithm,
            signature,
            subject_key_id,
        })
    }
}

fn bit_string(value: Tlv<'_>) -> Result<&[u8], CsarError> {
    match value.content {
        [0, rest @ ..] => Ok(rest),
        _ => Err(bad("signature bit string with unused bits")),
    }
}

fn find_subject_key_id<'a>(extensions: Tlv<'a>) -> Result<Option<&'a [u8]>, CsarError> {
    let mut list = extensions
        .reader()
        .expect(tag::SEQUENCE, "extensions")?
        .reader();
    while !list.is_empty() {
        let mut extension = list.expect(tag::SEQUENCE, "extension")?.reader();
        if extension.expect(tag::OID, "extension id")?.content != oid::SUBJECT_KEY_IDENTIFIER {
            continue;
        }
        const BOOLEAN: u8 = 0x01;
        extension.optional(BOOLEAN, "extension criticality")?;
        let value = extension.expect(tag::OCTET_STRING, "extension value")?;
        let key_id = Reader::new(value.content).expect(tag::OCTET_STRING, "key identifier")?;
        return Ok(Some(key_id.content));
    }
    Ok(None)
}

/// An X.509 `Time` (UTCTime or GeneralizedTime, in UTC) as seconds since the Unix epoch.
fn time(value: Tlv<'_>) -> Result<i64, CsarError> {
    let text = std::str::from_utf8(value.content).map_err(|_| bad("bad time"))?;
    let (year, rest) = match value.tag {
        UTC_TIME if text.len() == 13 => {
            let yy: i64 = number(&text[..2])?;
            // RFC 5280: 50 to 99 are 1950 to 1999, 00 to 49 are 2000 to 2049.
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() == 15 => (number(&text[..4])?, &text[4..]),
        _ => return Err(bad(format!("unsupported time encoding `{text}`"))),
    };
    if !rest.ends_with('Z') {
        return Err(bad(format!("time `{text}` is not in UTC")));
    }
    let month = number(&rest[0..2])?;
    let day = number(&rest[2..4])?;
    let (hour, minute, second) = (
        number(&rest[4..6])?,
        number(&rest[6..8])?,
        number(&rest[8..10])?,
    );
    let out_of_range = || bad(format!("time `{text}` is out of range"));
    let small = |v: i64| i8::try_from(v).map_err(|_| out_of_range());
    let at = jiff::civil::DateTime::new(
        i16::try_from(year).map_err(|_| out_of_range())?,
        small(month)?,
        small(day)?,
        small(hour)?,
        small(minute)?,
        small(second)?,
        0,
    )
    .and_then(|dt| jiff::tz::Offset::UTC.to_timestamp(dt))
    .map_err(|_| out_of_range())?;
    Ok(at.as_second())
}

fn number(digits: &str) -> Result<i64, CsarError> {
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits
            .parse()
            .map_err(|_| bad(format!("bad number `{digits}`")))
    } else {
        Err(bad(format!("bad number `{digits}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_both_time_encodings() {
        let utc = |s: &str| {
            time(Tlv {
                tag: UTC_TIME,
                content: s.as_bytes(),
                raw: &[],
            })
        };
        let generalized = |s: &str| {
            time(Tlv {
                tag: GENERALIZED_TIME,
                content: s.as_bytes(),
                raw: &[],
            })
        };
        assert_eq!(utc("700101000000Z").ok(), Some(0));
        assert_eq!(utc("000229120000Z").ok(), Some(951_825_600));
        assert_eq!(generalized("21260101000001Z").ok(), Some(4_922_899_201));
        assert_eq!(utc("491231235959Z").ok(), Some(2_524_607_999));
        assert_eq!(
            utc("700101000000+0100").unwrap_err().to_string(),
            "unsupported time encoding `700101000000+0100`"
        );
        assert!(utc("701301000000Z").is_err());
        assert!(utc("210229000000Z").is_err()); // 2021 is no leap year
        assert!(generalized("2126010100000Z").is_err());
    }
}
