//! Package-level behaviour: short notation, files named by TOSCA.meta, digest checks with
//! every algorithm spelling, and reading through the public API.

use std::io::{Cursor, Write};

use sha2::{Digest, Sha256, Sha384, Sha512};
use vnfm_csar::{Limits, MetaOrigin, Package, VerifyOptions};
use vnfm_descriptor::diag::Diagnostic;

const META: &str = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: tests\nEntry-Definitions: Definitions/top.yaml\n";
const TOP: &[u8] = b"tosca_definitions_version: tosca_simple_yaml_1_3\n";

fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    for (name, data) in files {
        if name.ends_with('/') {
            zip.add_directory(*name, opts).unwrap();
        } else {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(data).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

fn open(files: &[(&str, &[u8])]) -> Package {
    Package::from_zip_bytes(zip(files), &Limits::default()).unwrap()
}

fn codes(diags: &[Diagnostic]) -> Vec<&str> {
    diags.iter().map(|d| d.code.as_ref()).collect()
}

#[test]
fn package_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Package>();
}

#[test]
fn short_notation_uses_the_single_root_yaml_and_its_siblings() {
    let vnfd: &[u8] = b"tosca_definitions_version: tosca_simple_yaml_1_3\nmetadata:\n  template_name: mrf\n  template_author: acme\n  template_version: 1.0\n";
    let manifest = format!(
        "metadata:\n  vnf_product_name: mrf\n\nSource: MRF.yaml\nAlgorithm: SHA-256\nHash: {}\n",
        hex::encode(Sha256::digest(vnfd))
    );
    let pkg = open(&[
        ("MRF.yaml", vnfd),
        ("MRF.mf", manifest.as_bytes()),
        ("Files/ChangeLog.txt", b"v1"),
    ]);
    assert_eq!(pkg.entry_definitions(), "MRF.yaml");
    assert_eq!(pkg.meta().origin, MetaOrigin::ShortNotation);
    assert_eq!(pkg.manifest().unwrap().file, "MRF.mf");
    assert_eq!(pkg.manifest().unwrap().vnf_product_name(), Some("mrf"));
    let diags = pkg.verify(&VerifyOptions::default());
    // The digest matches; the change log is not listed.
    assert_eq!(codes(&diags), ["csar.unlisted-file"]);
}

#[test]
fn short_notation_requires_exactly_one_root_yaml_with_metadata() {
    let with_meta: &[u8] = b"metadata:\n  template_name: a\n";
    let err = Package::from_zip_bytes(
        zip(&[("a.yaml", with_meta), ("b.yml", with_meta)]),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "csar.ambiguous-entry-definitions");
    assert!(err.to_string().contains("a.yaml, b.yml"), "{err}");

    let err = Package::from_zip_bytes(zip(&[("a.yaml", b"node_types: {}\n")]), &Limits::default())
        .unwrap_err();
    assert_eq!(err.code(), "csar.no-entry-definitions");
    assert!(
        err.to_string()
            .contains("`a.yaml` has no top-level `metadata:` section"),
        "{err}"
    );

    let err = Package::from_zip_bytes(
        zip(&[("Definitions/a.yaml", with_meta)]),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), "csar.no-entry-definitions");
}

#[test]
fn files_named_in_tosca_meta_must_exist() {
    let meta = format!(
        "{META}ETSI-Entry-Manifest: top.mf\nETSI-Entry-Change-Log: Files/ChangeLog.txt\nETSI-Entry-Licenses: Licenses\nETSI-Entry-Certificate: top.cert\nOther-Definitions: Definitions/extra.yaml Definitions/absent.yaml\n"
    );
    let pkg = open(&[
        ("TOSCA-Metadata/TOSCA.meta", meta.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("Definitions/extra.yaml", TOP),
        ("Licenses/LICENSE-2.0.txt", b"license"),
    ]);
    let missing: Vec<(String, u32)> = pkg
        .diagnostics()
        .iter()
        .map(|d| {
            assert_eq!(d.code, "csar.missing-file");
            assert!(d.is_error());
            let loc = d.location.as_ref().unwrap();
            (d.message.split('`').nth(1).unwrap().to_string(), loc.line)
        })
        .collect();
    // Licenses is a directory with files: fine. The rest are absent.
    assert_eq!(
        missing,
        [
            ("top.mf".to_string(), 5),
            ("top.cert".to_string(), 8),
            ("Files/ChangeLog.txt".to_string(), 6),
            ("Definitions/absent.yaml".to_string(), 9),
        ]
    );
    assert!(pkg.manifest().is_none());
    let others: Vec<_> = pkg
        .meta()
        .other_definitions
        .iter()
        .map(|f| f.value.as_str())
        .collect();
    assert_eq!(
        others,
        ["Definitions/extra.yaml", "Definitions/absent.yaml"]
    );
}

#[test]
fn an_undeclared_root_manifest_is_used_with_a_warning() {
    let pkg = open(&[
        ("TOSCA-Metadata/TOSCA.meta", META.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("vnf.mf", b"metadata:\n  vnf_product_name: x\n"),
    ]);
    assert_eq!(pkg.manifest().unwrap().file, "vnf.mf");
    assert_eq!(codes(pkg.diagnostics()), ["csar.manifest-not-declared"]);
}

/// A manifest entry whose file is missing was accepted with a warning; OpenStack Tacker
/// refuses it. Now an error naming the manifest's file:line and the path, except for a VM
/// image (Tacker skips image entries, by extension), which stays a warning.
#[test]
fn a_manifest_entry_whose_file_is_missing_is_an_error_unless_it_is_an_image() {
    let hash = "a".repeat(64);
    let manifest = format!(
        "metadata:\n  vnf_product_name: x\n\n\
         Source: Scripts/install.sh\nAlgorithm: SHA-256\nHash: {hash}\n\n\
         Source: Files/images/cirros.QCOW2\nAlgorithm: SHA-256\nHash: {hash}\n\n\
         Source: Files/notes.txt\n"
    );
    let meta = format!(
        "{META}ETSI-Entry-Manifest: vnf.mf\n\nName: Scripts/mgmt.py\nContent-Type: text/x-python\nAlgorithm: SHA-256\nHash: {hash}\n"
    );
    let pkg = open(&[
        ("TOSCA-Metadata/TOSCA.meta", meta.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("vnf.mf", manifest.as_bytes()),
    ]);
    let diags = pkg.verify(&VerifyOptions::default());
    let mut missing: Vec<(bool, String, &str)> = diags
        .iter()
        .filter(|d| d.code == "csar.missing-artifact")
        .map(|d| {
            (
                d.is_error(),
                d.location.as_ref().unwrap().to_string(),
                d.message.split('`').nth(1).unwrap(),
            )
        })
        .collect();
    missing.sort();
    assert_eq!(
        missing,
        [
            (false, "vnf.mf:8".to_string(), "Files/images/cirros.QCOW2"),
            (
                true,
                "TOSCA-Metadata/TOSCA.meta:7".to_string(),
                "Scripts/mgmt.py"
            ),
            (true, "vnf.mf:12".to_string(), "Files/notes.txt"),
            (true, "vnf.mf:4".to_string(), "Scripts/install.sh"),
        ],
        "{diags:#?}"
    );
    let script = diags
        .iter()
        .find(|d| d.message.contains("Scripts/install.sh"))
        .unwrap();
    assert!(
        script.message.contains("`vnf.mf` (line 4)"),
        "the message names the manifest and its line: {script}"
    );
    assert!(vnfm_csar::is_image_path("Files/images/cirros.QCOW2"));
    assert!(!vnfm_csar::is_image_path("Files/images/.img"));
    assert!(!vnfm_csar::is_image_path("Scripts/img"));
}

#[test]
fn digests_are_checked_for_every_algorithm_spelling() {
    let data: &[u8] = b"artifact bytes\n";
    let s256 = hex::encode(Sha256::digest(data));
    let s384 = hex::encode(Sha384::digest(data));
    let s512 = hex::encode(Sha512::digest(data));
    let manifest = format!(
        "Source: Files/a.bin\nAlgorithm: sha256\nHash: {}\n\n\
         Source: Files/a.bin\nAlgorithm: SHA-384\nHash: {s384}\n\n\
         Source: Files/a.bin\nAlgorithm: Sha_512\nHash: {s512}\n\n\
         Source: Files/a.bin\nAlgorithm: SHA-512\nHash: {}\n\n\
         Source: Files/a.bin\nAlgorithm: MD5\nHash: 0123\n\n\
         Source: Files/a.bin\nHash: {s256}\n\n\
         Source: Files/a.bin\nAlgorithm: SHA-256\nHash: abc\n\n\
         Source: Files/gone.bin\nAlgorithm: SHA-256\nHash: {s256}\n\n\
         Source: https://vendor.example/big.img\nAlgorithm: SHA-256\nHash: {s256}\n\n\
         Source: ../outside.bin\nAlgorithm: SHA-256\nHash: {s256}\n",
        s256.to_uppercase(),
        "f".repeat(128)
    );
    let meta = format!(
        "{META}ETSI-Entry-Manifest: top.mf\n\nName: Files/a.bin\nContent-Type: application/octet-stream\nAlgorithm: SHA-256\nHash: {}\n",
        "e".repeat(64)
    );
    let pkg = open(&[
        ("TOSCA-Metadata/TOSCA.meta", meta.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("Files/a.bin", data),
        ("top.mf", manifest.as_bytes()),
    ]);
    let diags = pkg.verify(&VerifyOptions::default());
    let missing = diags
        .iter()
        .find(|d| d.code == "csar.missing-artifact")
        .unwrap();
    assert!(
        missing.is_error(),
        "a listed but absent file is an error: {missing}"
    );
    let found: Vec<(&str, String)> = diags
        .iter()
        .filter(|d| d.is_error() || d.code == "csar.missing-artifact")
        .map(|d| {
            (
                d.code.as_ref(),
                d.location
                    .as_ref()
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("csar.digest-mismatch", "top.mf:15".to_string()),
            ("csar.unknown-algorithm", "top.mf:18".to_string()),
            ("csar.missing-algorithm", "top.mf:22".to_string()),
            ("csar.invalid-digest", "top.mf:26".to_string()),
            ("csar.missing-artifact", "top.mf:28".to_string()),
            ("csar.path-traversal", "top.mf:36".to_string()),
            (
                "csar.digest-mismatch",
                "TOSCA-Metadata/TOSCA.meta:10".to_string()
            ),
        ],
        "{diags:#?}"
    );
}

#[test]
fn reading_normalizes_paths_and_reports_absent_files() {
    let pkg = open(&[
        ("TOSCA-Metadata/TOSCA.meta", META.as_bytes()),
        ("Definitions/top.yaml", TOP),
    ]);
    assert_eq!(pkg.read("./Definitions//top.yaml").unwrap(), TOP);
    assert!(pkg.contains("Definitions/x/../top.yaml"));
    assert!(!pkg.contains("../Definitions/top.yaml"));
    assert_eq!(
        pkg.read("Definitions/none.yaml").unwrap_err().code(),
        "csar.file-not-found"
    );
    assert_eq!(
        pkg.read("../etc/passwd").unwrap_err().code(),
        "csar.path-traversal"
    );
    assert_eq!(
        pkg.sha256_hex("Definitions/top.yaml").unwrap(),
        hex::encode(Sha256::digest(TOP))
    );
}

#[test]
fn directories_and_zips_list_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("TOSCA-Metadata")).unwrap();
    std::fs::create_dir_all(root.join("Definitions/nested")).unwrap();
    std::fs::write(root.join("TOSCA-Metadata/TOSCA.meta"), META).unwrap();
    std::fs::write(root.join("Definitions/top.yaml"), TOP).unwrap();
    std::fs::write(root.join("Definitions/nested/b.yaml"), TOP).unwrap();
    let from_dir = Package::open(root).unwrap();
    let from_zip = open(&[
        ("TOSCA-Metadata/", b""),
        ("TOSCA-Metadata/TOSCA.meta", META.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("Definitions/nested/b.yaml", TOP),
    ]);
    let listed: Vec<_> = from_dir.files().collect();
    assert_eq!(
        listed,
        [
            "Definitions/nested/b.yaml",
            "Definitions/top.yaml",
            "TOSCA-Metadata/TOSCA.meta"
        ]
    );
    assert_eq!(listed, from_zip.files().collect::<Vec<_>>());
    assert_eq!(from_dir.read("Definitions/nested/b.yaml").unwrap(), TOP);

    let limits = Limits {
        max_entry_uncompressed_bytes: 10,
        ..Limits::default()
    };
    let err = Package::open_with(root, &limits).unwrap_err();
    assert_eq!(err.code(), "csar.too-large");
}

#[test]
fn zip_files_on_disk_read_the_same_whether_read_whole_or_on_demand() {
    // Small zips are read into memory when opened, large ones (over 4 MiB) entry by entry.
    let dir = tempfile::tempdir().unwrap();
    for (name, len) in [("small.zip", 1 << 10), ("large.zip", 5 << 20)] {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let payload: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let manifest = format!(
            "metadata:\n  vnf_product_name: x\n\nSource: Files/blob.bin\nAlgorithm: SHA-256\nHash: {}\n",
            hex::encode(Sha256::digest(&payload))
        );
        let meta = format!("{META}ETSI-Entry-Manifest: x.mf\n");
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (path, data) in [
            ("TOSCA-Metadata/TOSCA.meta", meta.as_bytes()),
            ("Definitions/top.yaml", TOP),
            ("x.mf", manifest.as_bytes()),
            ("Files/blob.bin", &payload),
        ] {
            zip.start_file(path, stored).unwrap();
            zip.write_all(data).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();

        let pkg = Package::open_with(&path, &Limits::default()).unwrap();
        assert_eq!(pkg.read("Files/blob.bin").unwrap(), payload, "{name}");
        assert_eq!(pkg.read("Definitions/top.yaml").unwrap(), TOP, "{name}");
        // The digest matches; the definitions file is not listed.
        assert_eq!(
            codes(&pkg.verify(&VerifyOptions::default())),
            ["csar.unlisted-file"],
            "{name}"
        );
        // An open file reads the same, entry by entry, and copies an entry out by streaming;
        // errors name the given label, not the file's path.
        let from_file = Package::from_zip_file(
            std::fs::File::open(&path).unwrap(),
            "the upload",
            &Limits::default(),
        )
        .unwrap();
        let mut copied = Vec::new();
        let n = from_file.copy_to("./Files//blob.bin", &mut copied).unwrap();
        assert_eq!((n, copied == payload), (len as u64, true), "{name}");
        assert_eq!(
            codes(&from_file.verify(&VerifyOptions::default())),
            ["csar.unlisted-file"],
            "{name}"
        );
    }
    let not_a_zip = dir.path().join("not.zip");
    std::fs::write(&not_a_zip, b"plain text, not a zip archive").unwrap();
    let err = Package::from_zip_file(
        std::fs::File::open(&not_a_zip).unwrap(),
        "the upload",
        &Limits::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("the upload") && !err.to_string().contains("not.zip"),
        "{err}"
    );
}
