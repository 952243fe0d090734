//! Manifest and per-artifact CMS signatures, with a CA and signer generated at test time.

#[path = "common/pki.rs"]
mod pki;

use std::io::{Cursor, Write};

use pki::Pki;
use sha2::{Digest, Sha256};
use vnfm_csar::{Limits, Package, VerifyOptions};
use vnfm_descriptor::diag::Diagnostic;

const TOP: &[u8] = b"tosca_definitions_version: tosca_simple_yaml_1_3\n";
const SCRIPT: &[u8] = b"#!/bin/sh\necho configured\n";
const META: &[u8] = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: test\nEntry-Definitions: Definitions/top.yaml\nETSI-Entry-Manifest: top.mf\nETSI-Entry-Certificate: Files/Certificates/signer.cert\n";

fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, data) in files {
        zip.start_file(*name, opts).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The manifest text before its signature, listing every file with its digest.
fn manifest_body(extra: &str) -> String {
    format!(
        "metadata:\n  vnf_product_name: signed\n  vnf_provider_id: test\n  vnf_package_version: 1.0\n  vnf_release_date_time: 2024-01-01T00:00:00+00:00\n\nSource: Definitions/top.yaml\nAlgorithm: SHA-256\nHash: {}\n\nSource: TOSCA-Metadata/TOSCA.meta\nAlgorithm: SHA-256\nHash: {}\n\nSource: Files/app.sh\nAlgorithm: SHA-256\nHash: {}\n{extra}\n",
        sha(TOP),
        sha(META),
        sha(SCRIPT)
    )
}

struct Signed {
    pki: Pki,
    manifest: Vec<u8>,
}

/// The manifest listing every file (and `extra`), followed by `pki`'s signature of it.
fn signed_manifest(pki: &Pki, extra: &str) -> Vec<u8> {
    let body = manifest_body(extra);
    let mut manifest = body.clone().into_bytes();
    manifest.extend(pki.sign_pem(body.as_bytes()));
    manifest
}

fn signed(pki: Pki) -> Signed {
    let manifest = signed_manifest(&pki, "");
    Signed { pki, manifest }
}

fn package(manifest: &[u8], cert: &[u8], script: &[u8], extra: &[(&str, &[u8])]) -> Package {
    let mut files: Vec<(&str, &[u8])> = vec![
        ("TOSCA-Metadata/TOSCA.meta", META),
        ("Definitions/top.yaml", TOP),
        ("Files/app.sh", script),
        ("Files/Certificates/signer.cert", cert),
        ("top.mf", manifest),
    ];
    files.extend_from_slice(extra);
    Package::from_zip_bytes(zip(&files), &Limits::default()).unwrap()
}

fn codes(diags: &[Diagnostic]) -> Vec<(&str, bool)> {
    diags
        .iter()
        .map(|d| (d.code.as_ref(), d.is_error()))
        .collect()
}

#[test]
fn a_signed_package_without_trusted_roots_is_intact_but_untrusted() {
    let s = signed(Pki::new("ok"));
    let pkg = package(&s.manifest, &s.pki.leaf_pem(), SCRIPT, &[]);
    assert!(pkg.manifest().unwrap().signature.is_some());
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(
        codes(&diags),
        [("csar.signature-untrusted", false)],
        "{diags:#?}"
    );
    assert_eq!(diags[0].location.as_ref().unwrap().to_string(), "top.mf:19");
}

#[test]
fn a_signer_chaining_to_a_trusted_root_passes_cleanly() {
    let s = signed(Pki::new("trusted"));
    let pkg = package(&s.manifest, &s.pki.leaf_pem(), SCRIPT, &[]);
    let opts = VerifyOptions {
        trusted_roots_pem: vec![s.pki.ca_pem()],
        require_signature: true,
    };
    let diags = pkg.verify(&opts);
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn a_manifest_signed_in_text_mode_is_checked_with_crlf_line_ends() {
    // `openssl cms -sign` without `-binary` signs the text with CRLF line ends, while the
    // manifest in the package keeps its LF ones.
    let pki = Pki::new("text");
    let body = manifest_body("");
    let mut manifest = body.clone().into_bytes();
    manifest.extend(pki.sign_pem(body.replace('\n', "\r\n").as_bytes()));
    let pkg = package(&manifest, &pki.leaf_pem(), SCRIPT, &[]);
    let opts = VerifyOptions {
        trusted_roots_pem: vec![pki.ca_pem()],
        require_signature: true,
    };
    let diags = pkg.verify(&opts);
    assert!(diags.is_empty(), "{diags:#?}");

    // A per-artifact signature gets no such leeway: a binary file's bytes are what is signed.
    let script_crlf = String::from_utf8(SCRIPT.to_vec())
        .unwrap()
        .replace('\n', "\r\n");
    let sig = pki.sign_pem(script_crlf.as_bytes());
    let manifest = signed_manifest(&pki, "Signature: Files/app.sh.sm\n");
    let pkg = package(
        &manifest,
        &pki.leaf_pem(),
        SCRIPT,
        &[("Files/app.sh.sm", &sig)],
    );
    let diags = pkg.verify(&opts);
    assert_eq!(codes(&diags), [("csar.bad-signature", true)], "{diags:#?}");
}

#[test]
fn a_signer_outside_the_trusted_roots_is_an_error() {
    let s = signed(Pki::new("vendor"));
    let pkg = package(&s.manifest, &s.pki.leaf_pem(), SCRIPT, &[]);
    let opts = VerifyOptions {
        trusted_roots_pem: vec![Pki::new("someone else").ca_pem()],
        require_signature: false,
    };
    assert_eq!(codes(&pkg.verify(&opts)), [("csar.untrusted-signer", true)]);
}

#[test]
fn a_tampered_manifest_fails_its_signature() {
    let s = signed(Pki::new("tamper"));
    let text = String::from_utf8(s.manifest.clone()).unwrap();
    let tampered = text.replace("vnf_product_name: signed", "vnf_product_name: evil!");
    assert_ne!(tampered, text);
    let pkg = package(tampered.as_bytes(), &s.pki.leaf_pem(), SCRIPT, &[]);
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(codes(&diags), [("csar.bad-signature", true)], "{diags:#?}");
    // A byte flipped inside the signature itself is caught too.
    let sig_at = text.find("-----BEGIN CMS-----").unwrap() + 100;
    let mut broken = s.manifest.clone();
    broken[sig_at] = if broken[sig_at] == b'A' { b'B' } else { b'A' };
    let pkg = package(&broken, &s.pki.leaf_pem(), SCRIPT, &[]);
    assert_eq!(
        codes(&pkg.verify(&VerifyOptions::default())),
        [("csar.bad-signature", true)]
    );
}

#[test]
fn a_signature_by_another_key_than_the_package_certificate_fails() {
    let s = signed(Pki::new("real"));
    let impostor = Pki::new("impostor");
    let pkg = package(&s.manifest, &impostor.leaf_pem(), SCRIPT, &[]);
    assert_eq!(
        codes(&pkg.verify(&VerifyOptions::default())),
        [("csar.bad-signature", true)]
    );
}

#[test]
fn a_changed_artifact_breaks_its_digest_not_the_signature() {
    let s = signed(Pki::new("artifact"));
    let pkg = package(
        &s.manifest,
        &s.pki.leaf_pem(),
        b"#!/bin/sh\nrm -rf /\n",
        &[],
    );
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(
        codes(&diags),
        [
            ("csar.digest-mismatch", true),
            ("csar.signature-untrusted", false)
        ]
    );
    let d = &diags[0];
    assert_eq!(d.location.as_ref().unwrap().to_string(), "top.mf:17");
    assert!(d.message.contains("Files/app.sh"), "{}", d.message);
    assert!(d.message.contains(&sha(SCRIPT)), "{}", d.message);
    assert!(
        d.message.contains(&sha(b"#!/bin/sh\nrm -rf /\n")),
        "{}",
        d.message
    );
}

#[test]
fn an_unsigned_manifest_is_an_error_only_when_signatures_are_required() {
    let body = manifest_body("");
    let pki = Pki::new("unsigned");
    let pkg = package(body.as_bytes(), &pki.leaf_pem(), SCRIPT, &[]);
    assert!(pkg.verify(&VerifyOptions::default()).is_empty());
    let required = VerifyOptions {
        trusted_roots_pem: vec![],
        require_signature: true,
    };
    let diags = pkg.verify(&required);
    assert_eq!(codes(&diags), [("csar.unsigned", true)]);
    assert_eq!(diags[0].location.as_ref().unwrap().file, "top.mf");
}

#[test]
fn unlisted_files_are_errors_when_signatures_are_required() {
    let s = signed(Pki::new("unlisted"));
    let pkg = package(
        &s.manifest,
        &s.pki.leaf_pem(),
        SCRIPT,
        &[("Files/extra.sh", b"echo hi\n")],
    );
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(
        codes(&diags),
        [
            ("csar.unlisted-file", false),
            ("csar.signature-untrusted", false)
        ]
    );
    let required = VerifyOptions {
        trusted_roots_pem: vec![s.pki.ca_pem()],
        require_signature: true,
    };
    let diags = pkg.verify(&required);
    assert_eq!(codes(&diags), [("csar.unlisted-file", true)]);
    assert_eq!(diags[0].location.as_ref().unwrap().file, "Files/extra.sh");
}

#[test]
fn per_artifact_signatures_are_verified() {
    let pki = Pki::new("per-artifact");
    let sig = pki.sign_pem(SCRIPT);
    let extra = "Signature: Files/app.sh.sm\nCertificate: Files/Certificates/signer.cert\n";
    let manifest = signed_manifest(&pki, extra);
    let pkg = package(
        &manifest,
        &pki.leaf_pem(),
        SCRIPT,
        &[("Files/app.sh.sm", &sig)],
    );
    let art = &pkg.manifest().unwrap().artifacts[2];
    assert_eq!(art.signature.as_ref().unwrap().value, "Files/app.sh.sm");
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(
        codes(&diags),
        [
            ("csar.signature-untrusted", false),
            ("csar.signature-untrusted", false)
        ]
    );
    let trusted = VerifyOptions {
        trusted_roots_pem: vec![pki.ca_pem()],
        require_signature: true,
    };
    assert!(pkg.verify(&trusted).is_empty());

    // The artifact changes: its digest and its own signature both fail.
    let pkg = package(
        &manifest,
        &pki.leaf_pem(),
        b"tampered\n",
        &[("Files/app.sh.sm", &sig)],
    );
    let diags = pkg.verify(&trusted);
    assert_eq!(
        codes(&diags),
        [("csar.digest-mismatch", true), ("csar.bad-signature", true)]
    );
    assert_eq!(diags[1].location.as_ref().unwrap().to_string(), "top.mf:18");

    // The signature file is missing.
    let pkg = package(&manifest, &pki.leaf_pem(), SCRIPT, &[]);
    let diags = pkg.verify(&trusted);
    assert!(
        diags.iter().any(|d| d.code == "csar.missing-signature"
            && d.is_error()
            && d.message.contains("Files/app.sh.sm")),
        "{diags:#?}"
    );
}

#[test]
fn an_unreadable_certificate_is_reported() {
    let s = signed(Pki::new("badcert"));
    let pkg = package(
        &s.manifest,
        b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n",
        SCRIPT,
        &[],
    );
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(codes(&diags), [("csar.bad-certificate", true)]);
    assert_eq!(
        diags[0].location.as_ref().unwrap().file,
        "Files/Certificates/signer.cert"
    );
}

#[test]
fn a_bad_trust_anchor_is_reported_instead_of_ignored() {
    let s = signed(Pki::new("anchor"));
    let pkg = package(&s.manifest, &s.pki.leaf_pem(), SCRIPT, &[]);
    let opts = VerifyOptions {
        trusted_roots_pem: vec![b"not pem".to_vec()],
        require_signature: false,
    };
    assert_eq!(codes(&pkg.verify(&opts)), [("csar.bad-trust-anchor", true)]);
}

#[test]
fn artifact_signatures_are_checked_even_when_the_package_certificate_is_unreadable() {
    let pki = Pki::new("own-cert");
    let sig = pki.sign_pem(SCRIPT);
    let manifest = signed_manifest(
        &pki,
        "Signature: Files/app.sh.sm\nCertificate: Files/app.cert\n",
    );
    let leaf = pki.leaf_pem();
    let pkg = package(
        &manifest,
        b"garbage",
        b"tampered\n",
        &[("Files/app.sh.sm", &sig), ("Files/app.cert", &leaf)],
    );
    let diags = pkg.verify(&VerifyOptions::default());
    assert_eq!(
        codes(&diags),
        [
            ("csar.digest-mismatch", true),
            ("csar.bad-certificate", true),
            ("csar.bad-signature", true)
        ],
        "{diags:#?}"
    );
}
