//! A minimal reader of ASN.1 BER/DER encodings, enough to walk a CMS `SignedData`.
//!
//! Only single-byte tags occur in the structures read here. Definite lengths are read as
//! DER; an indefinite length (BER, which some signing tools write for the outer wrappers)
//! is accepted for constructed values and resolved by walking the nested values up to
//! their end-of-contents marker. Nesting is bounded, so a hostile signature cannot exhaust
//! the stack.

use crate::error::{CsarError, DerProblem};

/// Universal tags used by CMS and X.509.
pub(crate) mod tag {
    pub const INTEGER: u8 = 0x02;
    pub const OCTET_STRING: u8 = 0x04;
    pub const NULL: u8 = 0x05;
    pub const OID: u8 = 0x06;
    pub const SEQUENCE: u8 = 0x30;
    pub const SET: u8 = 0x31;
    /// `[0]` constructed (explicit tagging, or implicit tagging of a constructed type).
    pub const CONTEXT_0: u8 = 0xa0;
    /// `[1]` constructed.
    pub const CONTEXT_1: u8 = 0xa1;
    /// `[2]` constructed.
    pub const CONTEXT_2: u8 = 0xa2;
    /// `[3]` constructed.
    pub const CONTEXT_3: u8 = 0xa3;
    /// `[0]` primitive (implicit tagging of a primitive type).
    pub const CONTEXT_0_PRIMITIVE: u8 = 0x80;
}

/// Deepest nesting of indefinite-length values accepted.
const MAX_DEPTH: u32 = 32;

/// One tag-length-value element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    /// The value, without tag and length (and without the end-of-contents marker).
    pub content: &'a [u8],
    /// The whole element, tag and length included.
    pub raw: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// A reader over this element's nested values.
    pub fn reader(&self) -> Reader<'a> {
        Reader::new(self.content)
    }

    /// This element's content when its tag is `expected`.
    pub fn expect(self, expected: u8, what: &'static str) -> Result<Tlv<'a>, CsarError> {
        if self.tag == expected {
            Ok(self)
        } else {
            Err(CsarError::DerTag {
                what,
                expected,
                found: self.tag,
            })
        }
    }
}

/// Reads consecutive elements from a byte slice.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// True when every element has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The tag of the next element, if any.
    pub fn peek_tag(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// Reads the next element.
    pub fn read(&mut self, what: &'static str) -> Result<Tlv<'a>, CsarError> {
        let (tlv, len) = parse(&self.data[self.pos..], 0).map_err(|problem| CsarError::Der {
            what,
            problem,
            offset: self.pos,
        })?;
        self.pos += len;
        Ok(tlv)
    }

    /// Reads the next element and checks its tag.
    pub fn expect(&mut self, expected: u8, what: &'static str) -> Result<Tlv<'a>, CsarError> {
        self.read(what)?.expect(expected, what)
    }

    /// Reads the next element when it has tag `wanted`; leaves the reader as it was otherwise.
    pub fn optional(
        &mut self,
        wanted: u8,
        what: &'static str,
    ) -> Result<Option<Tlv<'a>>, CsarError> {
        if self.peek_tag() == Some(wanted) {
            self.read(what).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Parses one element at the start of `data`; returns it and the bytes it spans.
fn parse(data: &[u8], depth: u32) -> Result<(Tlv<'_>, usize), DerProblem> {
    let truncated = DerProblem::Truncated;
    let tag = *data.first().ok_or(truncated)?;
    if tag & 0x1f == 0x1f {
        return Err(DerProblem::MultiByteTag);
    }
    let first = *data.get(1).ok_or(truncated)?;
    let (header, length) = match first {
        0x80 => {
            if tag & 0x20 == 0 {
                return Err(DerProblem::IndefinitePrimitive);
            }
            if depth >= MAX_DEPTH {
                return Err(DerProblem::TooDeep);
            }
            // Indefinite length: nested elements up to the 00 00 end-of-contents marker.
            let mut pos = 2;
            loop {
                match data.get(pos..pos + 2) {
                    None => return Err(truncated),
                    Some([0, 0]) => break,
                    Some(_) => pos += parse(&data[pos..], depth + 1)?.1,
                }
            }
            let tlv = Tlv {
                tag,
                content: &data[2..pos],
                raw: &data[..pos + 2],
            };
            return Ok((tlv, pos + 2));
        }
        n if n < 0x80 => (2, usize::from(n)),
        n => {
            let count = usize::from(n & 0x7f);
            if count > 4 {
                return Err(DerProblem::LengthTooLarge);
            }
            let bytes = data.get(2..2 + count).ok_or(truncated)?;
            let length = bytes
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
            (2 + count, length)
        }
    };
    let end = header
        .checked_add(length)
        .filter(|end| *end <= data.len())
        .ok_or(truncated)?;
    let tlv = Tlv {
        tag,
        content: &data[header..end],
        raw: &data[..end],
    };
    Ok((tlv, end))
}

/// DER encoding of an OID's content octets, for comparison with parsed OIDs.
pub(crate) mod oid {
    /// id-data (1.2.840.113549.1.7.1).
    pub const DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01];
    /// id-signedData (1.2.840.113549.1.7.2).
    pub const SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
    /// id-contentType attribute (1.2.840.113549.1.9.3).
    pub const CONTENT_TYPE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x03];
    /// id-messageDigest attribute (1.2.840.113549.1.9.4).
    pub const MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04];
    /// id-sha1 (1.3.14.3.2.26).
    pub const SHA1: &[u8] = &[0x2b, 0x0e, 0x03, 0x02, 0x1a];
    /// id-sha256 (2.16.840.1.101.3.4.2.1).
    pub const SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
    /// id-sha384 (2.16.840.1.101.3.4.2.2).
    pub const SHA384: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02];
    /// id-sha512 (2.16.840.1.101.3.4.2.3).
    pub const SHA512: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];
    /// rsaEncryption (1.2.840.113549.1.1.1).
    pub const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
    /// RSASSA-PSS (1.2.840.113549.1.1.10).
    pub const RSASSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];
    /// sha256WithRSAEncryption (1.2.840.113549.1.1.11).
    pub const SHA256_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];
    /// sha384WithRSAEncryption (1.2.840.113549.1.1.12).
    pub const SHA384_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c];
    /// sha512WithRSAEncryption (1.2.840.113549.1.1.13).
    pub const SHA512_WITH_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d];
    /// id-ecPublicKey (1.2.840.10045.2.1), which some signers put as the signature algorithm.
    pub const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    /// ecdsa-with-SHA256 (1.2.840.10045.4.3.2).
    pub const ECDSA_WITH_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
    /// ecdsa-with-SHA384 (1.2.840.10045.4.3.3).
    pub const ECDSA_WITH_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];
    /// ecdsa-with-SHA512 (1.2.840.10045.4.3.4).
    pub const ECDSA_WITH_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04];
    /// id-ce-subjectKeyIdentifier (2.5.29.14).
    pub const SUBJECT_KEY_IDENTIFIER: &[u8] = &[0x55, 0x1d, 0x0e];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_and_long_definite_lengths() {
        let mut long = vec![0x04, 0x81, 200];
        long.extend([7u8; 200]);
        let mut r = Reader::new(&long);
        let t = r.expect(tag::OCTET_STRING, "octets").unwrap();
        assert_eq!(t.content.len(), 200);
        assert_eq!(t.raw.len(), 203);
        assert!(r.is_empty());

        let mut r = Reader::new(&[0x30, 0x03, 0x02, 0x01, 0x05, 0x05, 0x00]);
        let seq = r.expect(tag::SEQUENCE, "seq").unwrap();
        assert_eq!(
            seq.reader().expect(tag::INTEGER, "int").unwrap().content,
            &[5]
        );
        assert_eq!(r.optional(tag::SET, "set").unwrap(), None);
        assert_eq!(r.expect(tag::NULL, "null").unwrap().content, &[] as &[u8]);
    }

    #[test]
    fn resolves_indefinite_lengths_of_constructed_values() {
        // SEQUENCE (indefinite) { [0] (indefinite) { INTEGER 1 } } then NULL.
        let data = [
            0x30, 0x80, 0xa0, 0x80, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00,
        ];
        let mut r = Reader::new(&data);
        let seq = r.expect(tag::SEQUENCE, "seq").unwrap();
        assert_eq!(seq.raw.len(), 11);
        let inner = seq.reader().expect(tag::CONTEXT_0, "explicit").unwrap();
        assert_eq!(inner.content, &[0x02, 0x01, 0x01]);
        assert_eq!(r.expect(tag::NULL, "null").unwrap().raw, &[0x05, 0x00]);
    }

    #[test]
    fn refuses_truncated_oversized_and_deep_encodings() {
        for bad in [
            &[0x30, 0x05, 0x02][..],
            &[0x04, 0x85, 1, 0, 0, 0, 0],
            &[0x04, 0x80, 0x00, 0x00],
            &[0x1f, 0x01, 0x00],
            &[0x30, 0x80, 0x02, 0x01],
        ] {
            assert!(Reader::new(bad).read("x").is_err(), "{bad:?}");
        }
        let mut deep = Vec::new();
        for _ in 0..100 {
            deep.extend([0x30, 0x80]);
        }
        for _ in 0..100 {
            deep.extend([0x00, 0x00]);
        }
        let err = Reader::new(&deep).read("deep").unwrap_err();
        assert!(
            matches!(
                err,
                CsarError::Der {
                    what: "deep",
                    problem: DerProblem::TooDeep,
                    offset: 0
                }
            ),
            "{err}"
        );
        assert_eq!(err.to_string(), "deep: nesting too deep at byte 0");
        let err = Reader::new(&[0x05, 0x00, 0x02, 0x01])
            .expect(tag::INTEGER, "int")
            .unwrap_err();
        assert_eq!(err.to_string(), "int: expected tag 0x02, found 0x05");
    }
}
