//! A certificate authority made in the test (EC P-256 keys, with the `openssl` crate): its CA
//! certificate, and server and client certificates it issues with the names the tests ask
//! for. Shared by the mutual TLS tests of `vnfm-oauth` and `vnfm-api`.

#![allow(dead_code)]

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509, X509Builder, X509Name, X509NameBuilder};

/// A name of a certificate's subjectAltName.
#[derive(Debug, Clone, Copy)]
pub enum San<'a> {
    Dns(&'a str),
    Ip(&'a str),
    Uri(&'a str),
    Email(&'a str),
}

/// A certificate and its key.
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PEM (PKCS#8).
    pub key_pem: String,
    /// The certificate, DER.
    pub der: Vec<u8>,
}

impl Issued {
    /// The certificate and key in one PEM text (a client identity).
    pub fn identity_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.key_pem)
    }
}

/// A CA.
pub struct Pki {
    cert: X509,
    key: PKey<Private>,
    /// The CA certificate, PEM.
    pub ca_pem: String,
}

fn new_key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
}

fn name(cn: &str) -> X509Name {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
    name.build()
}

fn builder(cn: &str, key: &PKey<Private>) -> X509Builder {
    let mut b = X509Builder::new().unwrap();
    b.set_version(2).unwrap();
    let mut serial = BigNum::new().unwrap();
    serial.rand(120, MsbOption::MAYBE_ZERO, false).unwrap();
    b.set_serial_number(&serial.to_asn1_integer().unwrap())
        .unwrap();
    b.set_subject_name(&name(cn)).unwrap();
    b.set_pubkey(key).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    b.set_not_before(&Asn1Time::from_unix(now - 3600).unwrap())
        .unwrap();
    b.set_not_after(&Asn1Time::from_unix(now + 86_400).unwrap())
        .unwrap();
    b
}

impl Pki {
    /// A CA named `name`.
    pub fn new(ca_name: &str) -> Pki {
        let key = new_key();
        let mut b = builder(ca_name, &key);
        let self_name = name(ca_name);
        b.set_issuer_name(&self_name).unwrap();
        b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
            .unwrap();
        b.append_extension(
            KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .build()
                .unwrap(),
        )
        .unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        let cert = b.build();
        let ca_pem = String::from_utf8(cert.to_pem().unwrap()).unwrap();
        Pki { cert, key, ca_pem }
    }

    /// A certificate for a TLS server (`serverAuth`) with subject CN `cn` and `sans`.
    pub fn server(&self, cn: &str, sans: &[San<'_>]) -> Issued {
        self.issue(cn, sans, false)
    }

    /// A certificate for a TLS client (`clientAuth`) with subject CN `cn` and `sans`.
    pub fn client(&self, cn: &str, sans: &[San<'_>]) -> Issued {
        self.issue(cn, sans, true)
    }

    fn issue(&self, cn: &str, sans: &[San<'_>], client: bool) -> Issued {
        let key = new_key();
        let mut b = builder(cn, &key);
        b.set_issuer_name(self.cert.subject_name()).unwrap();
        b.append_extension(BasicConstraints::new().critical().build().unwrap())
            .unwrap();
        b.append_extension(
            KeyUsage::new()
                .critical()
                .digital_signature()
                .build()
                .unwrap(),
        )
        .unwrap();
        let mut eku = ExtendedKeyUsage::new();
        if client {
            eku.client_auth();
        } else {
            eku.server_auth();
        }
        b.append_extension(eku.build().unwrap()).unwrap();
        if !sans.is_empty() {
            let ext = {
                let ctx = b.x509v3_context(Some(&self.cert), None);
                let mut alt = SubjectAlternativeName::new();
                for san in sans {
                    match san {
                        San::Dns(v) => alt.dns(v),
                        San::Ip(v) => alt.ip(v),
                        San::Uri(v) => alt.uri(v),
                        San::Email(v) => alt.email(v),
                    };
                }
                alt.build(&ctx).unwrap()
            };
            b.append_extension(ext).unwrap();
        }
        b.sign(&self.key, MessageDigest::sha256()).unwrap();
        let cert = b.build();
        Issued {
            cert_pem: String::from_utf8(cert.to_pem().unwrap()).unwrap(),
            key_pem: String::from_utf8(key.private_key_to_pem_pkcs8().unwrap()).unwrap(),
            der: cert.to_der().unwrap(),
        }
    }
}
