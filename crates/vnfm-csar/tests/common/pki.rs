//! A throwaway CA and signer generated with OpenSSL at test time, for signature tests.
//!
//! Shared by the crate's unit tests (through `#[path]`) and its integration tests.

#![allow(dead_code)]

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::BasicConstraints;
use openssl::x509::{X509, X509NameBuilder};

/// A CA certificate and a leaf certificate it issued, with the leaf's key.
pub struct Pki {
    pub ca: X509,
    pub leaf: X509,
    pub leaf_key: PKey<Private>,
}

fn cert(
    cn: &str,
    key: &PKey<Private>,
    issuer: Option<(&X509, &PKey<Private>)>,
    serial: u32,
    expired: bool,
) -> X509 {
    let mut name = X509NameBuilder::new().unwrap();
    name.append_entry_by_text("CN", cn).unwrap();
    let name = name.build();
    let mut b = X509::builder().unwrap();
    b.set_version(2).unwrap();
    let serial = BigNum::from_u32(serial).unwrap();
    b.set_serial_number(&serial.to_asn1_integer().unwrap())
        .unwrap();
    b.set_subject_name(&name).unwrap();
    b.set_pubkey(key).unwrap();
    if expired {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        b.set_not_before(&Asn1Time::from_unix(now - 10 * 86_400).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::from_unix(now - 86_400).unwrap())
            .unwrap();
    } else {
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(2).unwrap())
            .unwrap();
    }
    match issuer {
        Some((icert, ikey)) => {
            b.set_issuer_name(icert.subject_name()).unwrap();
            b.sign(ikey, MessageDigest::sha256()).unwrap();
        }
        None => {
            b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
                .unwrap();
            b.set_issuer_name(&name).unwrap();
            b.sign(key, MessageDigest::sha256()).unwrap();
        }
    }
    b.build()
}

/// P-256 keys: fast to generate, so every test can make its own.
fn key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap()
}

impl Pki {
    /// A fresh CA and signer; `name` goes into the subject names.
    pub fn new(name: &str) -> Pki {
        Pki::with_validity(name, false)
    }

    /// Like [`Pki::new`], but the signer certificate expired yesterday.
    pub fn expired(name: &str) -> Pki {
        Pki::with_validity(name, true)
    }

    fn with_validity(name: &str, expired: bool) -> Pki {
        let ca_key = key();
        let ca = cert(&format!("{name} CA"), &ca_key, None, 1, false);
        let leaf_key = key();
        let leaf = cert(
            &format!("{name} signer"),
            &leaf_key,
            Some((&ca, &ca_key)),
            2,
            expired,
        );
        Pki { ca, leaf, leaf_key }
    }

    /// A detached CMS signature over `content`, PEM-encoded (`-----BEGIN CMS-----`).
    pub fn sign_pem(&self, content: &[u8]) -> Vec<u8> {
        let flags = CMSOptions::DETACHED | CMSOptions::BINARY;
        CmsContentInfo::sign(
            Some(&self.leaf),
            Some(&self.leaf_key),
            None,
            Some(content),
            flags,
        )
        .unwrap()
        .to_pem()
        .unwrap()
    }

    /// The CA certificate, PEM-encoded.
    pub fn ca_pem(&self) -> Vec<u8> {
        self.ca.to_pem().unwrap()
    }

    /// The signer certificate, PEM-encoded.
    pub fn leaf_pem(&self) -> Vec<u8> {
        self.leaf.to_pem().unwrap()
    }
}
