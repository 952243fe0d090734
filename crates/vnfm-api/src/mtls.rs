//! Mutual TLS: which client certificates `vnfm serve` asks for and trusts
//! ([`ClientCertMode`], [`client_verifier`]), what the server reads from the certificate a
//! connection presented ([`ClientCertificate`]: its SHA-256 thumbprint, subject CN and
//! subjectAltNames), and which callers certificates identify ([`CertificateIdentities`]).
//!
//! A connection's verified certificate goes with each of its requests (as a request extension)
//! to authentication (`crate::auth`), where it serves twice:
//!
//! - **as an identity**: a request without `Authorization` or `X-Auth-Token` whose certificate
//!   matches an entry of the map is that entry's caller, with the entry's roles and project,
//!   read as the roles of an external authorization server's tokens are
//!   ([`vnfm_oauth::RoleMapping`], `--oauth-reader-roles` ...), so project scoping and
//!   read-only callers work the same way with every identity source;
//! - **as the proof of a certificate-bound token** (RFC 8705 clause 3): a bearer token with a
//!   `cnf.x5t#S256` confirmation is accepted only on a connection whose certificate has that
//!   thumbprint.

use std::sync::Arc;

use base64::Engine;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::CertificateDer;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use vnfm_oauth::{Access, RoleMapping};

/// Whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCertMode {
    /// A client without a certificate from the configured CAs fails the TLS handshake.
    Required,
    /// A client may present a certificate (it must then be from the configured CAs) or none;
    /// one without authenticates as it would without mutual TLS.
    Optional,
}

impl std::str::FromStr for ClientCertMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "required" => Ok(ClientCertMode::Required),
            "optional" => Ok(ClientCertMode::Optional),
            other => Err(format!(
                "`{other}` is no client certificate mode: use required or optional"
            )),
        }
    }
}

/// The verifier of client certificates issued by the CAs of `ca_pems` (PEM texts, each one or
/// more certificates), requiring one or not as `mode` says; the error says what is wrong.
pub fn client_verifier(
    ca_pems: &[(String, Vec<u8>)],
    mode: ClientCertMode,
) -> Result<Arc<dyn ClientCertVerifier>, String> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for (name, pem) in ca_pems {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{name}: {e}"))?;
        if certs.is_empty() {
            return Err(format!("{name}: no certificate found"));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| format!("{name}: not a usable CA certificate: {e}"))?;
        }
    }
    if roots.is_empty() {
        return Err("client certificates need at least one CA (--tls-client-ca)".into());
    }
    let builder = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    );
    let builder = match mode {
        ClientCertMode::Required => builder,
        ClientCertMode::Optional => builder.allow_unauthenticated(),
    };
    builder.build().map_err(|e| e.to_string())
}

/// What the server reads from a verified client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    thumbprint: String,
    common_name: Option<String>,
    dns_names: Vec<String>,
    uris: Vec<String>,
    emails: Vec<String>,
}

/// The RFC 8705 thumbprint of a certificate: base64url (no padding) of the SHA-256 of its DER.
pub fn thumbprint(der: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(der))
}

impl ClientCertificate {
    /// The certificate `der` (the end-entity certificate the TLS handshake verified). Names
    /// that cannot be read are left out; the thumbprint is always there.
    pub fn from_der(der: &[u8]) -> ClientCertificate {
        let mut cert = ClientCertificate {
            thumbprint: thumbprint(der),
            common_name: None,
            dns_names: Vec::new(),
            uris: Vec::new(),
            emails: Vec::new(),
        };
        let Ok(x509) = openssl::x509::X509::from_der(der) else {
            return cert;
        };
        cert.common_name = x509
            .subject_name()
            .entries_by_nid(openssl::nid::Nid::COMMONNAME)
            .next()
            .and_then(|e| e.data().to_string().ok());
        for name in x509.subject_alt_names().into_iter().flatten() {
            if let Some(dns) = name.dnsname() {
                cert.dns_names.push(dns.to_owned());
            } else if let Some(uri) = name.uri() {
                cert.uris.push(uri.to_owned());
            } else if let Some(email) = name.email() {
                cert.emails.push(email.to_owned());
            }
        }
        cert
    }

    /// The RFC 8705 `x5t#S256` thumbprint.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// The subject's common name (CN), if it has one.
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// A name for messages: the CN, else the first SAN, else the thumbprint.
    pub fn name(&self) -> &str {
        self.common_name
            .as_deref()
            .or(self.dns_names.first().map(String::as_str))
            .or(self.uris.first().map(String::as_str))
            .or(self.emails.first().map(String::as_str))
            .unwrap_or(&self.thumbprint)
    }
}

/// One entry of the certificate map (`vnfm serve --tls-client-map`): which certificate (exactly
/// one of `subject_cn`, `san_dns`, `san_uri`, `san_email`, compared exactly; DNS names and
/// e-mail addresses without regard to ASCII case) is which client, with which roles and
/// project.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateClient {
    /// The subject's common name.
    #[serde(default)]
    pub subject_cn: Option<String>,
    /// A DNS name of the subjectAltName.
    #[serde(default)]
    pub san_dns: Option<String>,
    /// A URI of the subjectAltName (a SPIFFE id, say).
    #[serde(default)]
    pub san_uri: Option<String>,
    /// An e-mail address (rfc822Name) of the subjectAltName.
    #[serde(default)]
    pub san_email: Option<String>,
    /// The client id the caller gets.
    pub client_id: String,
    /// Its roles, read as the role mapping says (by default `reader`, `member`, `admin`).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Its project: it then sees and changes that project's resources only (unless an admin
    /// role lets it see every project).
    #[serde(default)]
    pub project_id: Option<String>,
    /// The project's name.
    #[serde(default)]
    pub project_name: Option<String>,
}

impl CertificateClient {
    /// Whether `cert` is this entry's.
    fn matches(&self, cert: &ClientCertificate) -> bool {
        let exact = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_some_and(|w| have == Some(w))
        };
        let any = |want: &Option<String>, have: &[String], fold: bool| {
            want.as_deref().is_some_and(|w| {
                have.iter().any(|h| {
                    if fold {
                        h.eq_ignore_ascii_case(w)
                    } else {
                        h == w
                    }
                })
            })
        };
        exact(&self.subject_cn, cert.common_name())
            || any(&self.san_dns, &cert.dns_names, true)
            || any(&self.san_uri, &cert.uris, false)
            || any(&self.san_email, &cert.emails, true)
    }

    fn selectors(&self) -> usize {
        [
            &self.subject_cn,
            &self.san_dns,
            &self.san_uri,
            &self.san_email,
        ]
        .iter()
        .filter(|s| s.as_deref().is_some_and(|v| !v.is_empty()))
        .count()
    }
}

/// The callers client certificates identify: the entries of the map, the first that matches
/// a certificate wins, and the role mapping that reads their roles.
#[derive(Debug, Clone)]
pub struct CertificateIdentities {
    clients: Vec<CertificateClient>,
    roles: RoleMapping,
}

impl CertificateIdentities {
    /// The map `clients` with roles read by `roles`. Refused (the error says which entry and
    /// why) when an entry names no certificate or more than one way to match it, has no client
    /// id, or roles that allow nothing.
    pub fn new(
        clients: Vec<CertificateClient>,
        roles: RoleMapping,
    ) -> Result<CertificateIdentities, String> {
        for (i, c) in clients.iter().enumerate() {
            let at = format!("entry {} (client_id `{}`)", i + 1, c.client_id);
            if c.client_id.trim().is_empty() {
                return Err(format!("entry {}: client_id is empty", i + 1));
            }
            if c.selectors() != 1 {
                return Err(format!(
                    "{at}: give exactly one of subject_cn, san_dns, san_uri, san_email"
                ));
            }
            if !roles.access(&c.roles).read {
                return Err(format!(
                    "{at}: its roles ({}) allow nothing: give one of {}",
                    c.roles.join(", "),
                    roles.known().join(", ")
                ));
            }
        }
        Ok(CertificateIdentities { clients, roles })
    }

    /// The map of a JSON text: an array of [`CertificateClient`] objects.
    pub fn from_json(text: &str, roles: RoleMapping) -> Result<CertificateIdentities, String> {
        let clients: Vec<CertificateClient> =
            serde_json::from_str(text).map_err(|e| e.to_string())?;
        CertificateIdentities::new(clients, roles)
    }

    /// The entry `cert` identifies, and what its roles allow.
    pub fn identify(&self, cert: &ClientCertificate) -> Option<(&CertificateClient, Access)> {
        let client = self.clients.iter().find(|c| c.matches(cert))?;
        Some((client, self.roles.access(&client.roles)))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Whether the map has no entry.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(cn: Option<&str>, dns: &[&str], uris: &[&str], emails: &[&str]) -> ClientCertificate {
        let all = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        ClientCertificate {
            thumbprint: "tp".into(),
            common_name: cn.map(str::to_owned),
            dns_names: all(dns),
            uris: all(uris),
            emails: all(emails),
        }
    }

    #[test]
    fn each_kind_of_name_identifies_its_entry_and_the_first_match_wins() {
        let map = CertificateIdentities::from_json(
            r#"[
              {"subject_cn": "nfvo-1", "client_id": "nfvo", "roles": ["member"]},
              {"san_dns": "Reader.Example", "client_id": "reader", "roles": ["reader"],
               "project_id": "proj-a", "project_name": "Project A"},
              {"san_uri": "spiffe://example/ops", "client_id": "ops", "roles": ["admin"]},
              {"san_email": "noc@example.com", "client_id": "noc", "roles": ["reader"]},
              {"subject_cn": "nfvo-1", "client_id": "shadowed", "roles": ["admin"]}
            ]"#,
            RoleMapping::default(),
        )
        .unwrap();
        assert_eq!(map.len(), 5);
        let id = |c: &ClientCertificate| map.identify(c).map(|(e, a)| (e.client_id.clone(), a));
        let (who, access) = id(&cert(Some("nfvo-1"), &[], &[], &[])).unwrap();
        assert_eq!(who, "nfvo");
        assert!(access.write && !access.all_projects);
        let (who, access) = id(&cert(None, &["reader.example"], &[], &[])).unwrap();
        assert_eq!(who, "reader");
        assert!(access.read && !access.write);
        let (who, access) = id(&cert(Some("x"), &[], &["spiffe://example/ops"], &[])).unwrap();
        assert_eq!(who, "ops");
        assert!(access.all_projects);
        assert_eq!(
            id(&cert(None, &[], &[], &["NOC@example.com"])).unwrap().0,
            "noc"
        );
        // A URI is compared exactly, a CN too; nothing else matches.
        assert!(id(&cert(None, &[], &["spiffe://example/OPS"], &[])).is_none());
        assert!(id(&cert(Some("NFVO-1"), &[], &[], &[])).is_none());
        assert!(id(&cert(None, &["nfvo-1"], &[], &[])).is_none());
    }

    #[test]
    fn entries_that_cannot_work_are_refused_at_start() {
        let refused = |json: &str| {
            CertificateIdentities::from_json(json, RoleMapping::default()).unwrap_err()
        };
        let e = refused(r#"[{"client_id": "a", "roles": ["reader"]}]"#);
        assert!(e.contains("exactly one of subject_cn"), "{e}");
        let e = refused(
            r#"[{"subject_cn": "a", "san_dns": "a", "client_id": "a", "roles": ["reader"]}]"#,
        );
        assert!(e.contains("entry 1 (client_id `a`)"), "{e}");
        let e = refused(r#"[{"subject_cn": "a", "client_id": "a", "roles": ["viewer"]}]"#);
        assert!(
            e.contains("allow nothing") && e.contains("admin, member, reader"),
            "{e}"
        );
        let e = refused(r#"[{"subject_cn": "a", "client_id": " ", "roles": ["reader"]}]"#);
        assert!(e.contains("client_id is empty"), "{e}");
        let e = refused(r#"[{"subject": "a", "client_id": "a"}]"#);
        assert!(e.contains("unknown field"), "{e}");
    }

    #[test]
    fn modes_are_read_from_their_names() {
        assert_eq!("required".parse(), Ok(ClientCertMode::Required));
        assert_eq!("optional".parse(), Ok(ClientCertMode::Optional));
        assert!("request".parse::<ClientCertMode>().is_err());
    }

    #[test]
    fn a_verifier_needs_a_ca_and_refuses_what_is_none() {
        let e = client_verifier(&[], ClientCertMode::Required)
            .err()
            .unwrap();
        assert!(e.contains("--tls-client-ca"), "{e}");
        let e = client_verifier(
            &[("ca.pem".into(), b"not a certificate".to_vec())],
            ClientCertMode::Optional,
        )
        .err()
        .unwrap();
        assert!(e.contains("ca.pem: no certificate found"), "{e}");
    }

    #[test]
    fn thumbprints_are_base64url_sha256_without_padding() {
        // SHA-256 of the empty string.
        assert_eq!(
            thumbprint(b""),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }
}
