//! Every Tacker sample package of the shared corpus, opened as a directory and as a zip built
//! in memory, plus an ASD package assembled from the ONAP pieces.
//!
//! The corpus copy omits Python scripts and OS images that some packages list (see
//! corpus/tacker/INDEX.md), and a few upstream digests are stale; the expectations below pin
//! exactly which package reports what, so a change in either the corpus or the reader shows.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use vnfm_csar::{CsarError, Limits, MetaOrigin, Package, VerifyOptions};
use vnfm_descriptor::diag::Diagnostic;

fn tacker() -> PathBuf {
    vnfm_test_env::corpus("tacker")
}

/// The package directory `root` as a zip archive.
fn zip_dir(root: &Path) -> Vec<u8> {
    vnfm_csar::zip_directory(root).expect("zip the package directory")
}

/// (code, "file:line", first back-quoted name in the message) of each error, and of each
/// missing-artifact warning (listed files absent from this copy of the package).
fn errors(diags: &[Diagnostic]) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = diags
        .iter()
        .filter(|d| d.is_error() || d.code == "csar.missing-artifact")
        .map(|d| {
            let loc = d
                .location
                .as_ref()
                .map(|l| l.to_string())
                .unwrap_or_default();
            let name = d.message.split('`').nth(1).unwrap_or("").to_string();
            (d.code.to_string(), loc, name)
        })
        .collect();
    out.sort();
    out
}

fn codes(diags: &[Diagnostic]) -> Vec<&str> {
    let mut c: Vec<&str> = diags.iter().map(|d| d.code.as_ref()).collect();
    c.sort();
    c.dedup();
    c
}

const CIRROS: &str = "Files/images/cirros-0.5.2-x86_64-disk.img";

/// Entry definitions of every package that opens.
const ENTRY_DEFINITIONS: &[(&str, &str)] = &[
    (
        "doc-v2-chg-vnfpkg-before",
        "Definitions/change_vnf_pkg_top.vnfd.yaml",
    ),
    ("doc-v2-getting-started", "Definitions/sample_vnfd_top.yaml"),
    ("etsi-getting-started", "Definitions/sample_vnfd_top.yaml"),
    ("mgmt-ansible", "Definitions/helloworld3_top.vnfd.yaml"),
    (
        "mgmt-k8s-cluster-v1",
        "Definitions/sample_kubernetes_top.vnfd.yaml",
    ),
    (
        "mgmt-k8s-cluster-v2",
        "Definitions/sample_kubernetes_top.vnfd.yaml",
    ),
    (
        "unit-v2-standard-sample",
        "Definitions/v2_sample3_top.vnfd.yaml",
    ),
    ("v1-cnf-all-kinds", "Definitions/helloworld3_top.vnfd.yaml"),
    (
        "v1-cnf-ext-artifact",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    ("v1-cnf-heal", "Definitions/helloworld3_top.vnfd.yaml"),
    ("v1-cnf-helmchart", "Definitions/sample_vnfd_top.yaml"),
    ("v1-cnf-scale", "Definitions/helloworld3_top.vnfd.yaml"),
    ("v1-pkg-compliance", "Definitions/helloworld3_top.vnfd.yaml"),
    (
        "v1-pkg-manifest-vnfpkgm2",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-pkg-meta-and-manifest",
        "Definitions/sample_vnfd_top.yaml",
    ),
    // Despite its name, this package has a TOSCA.meta; its entry is the flavour file.
    (
        "v1-pkg-short-notation",
        "Definitions/helloworld3_df_simple.yaml",
    ),
    ("v1-vm-enhanced-policy", "Definitions/sample_vnfd_top.yaml"),
    ("v1-vm-functional", "Definitions/helloworld3_top.vnfd.yaml"),
    (
        "v1-vm-functional6-vdu2-scale",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-vm-functional7-multi-aspect",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-vm-single-file-vnfd-vnflcm3",
        "Definitions/helloworld3.vnfd.tosca.yaml",
    ),
    (
        "v1-vm-stack-update-in-heal",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-vm-stack-update-in-scale",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-vm-tosca-only-vnflcm1",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v1-vm-userdata-normal",
        "Definitions/sample_lcm_with_user_data_top.vnfd.yaml",
    ),
    (
        "v1-vm-userdata-normal-scaling",
        "Definitions/helloworld3_top.vnfd.yaml",
    ),
    (
        "v2-cnf-change-vnfpkg-deployment",
        "Definitions/sample_cnf_top.vnfd.yaml",
    ),
    (
        "v2-cnf-container-update-before",
        "Definitions/sample_top.vnfd.yaml",
    ),
    (
        "v2-cnf-instantiate-resources",
        "Definitions/sample_cnf_top.vnfd.yaml",
    ),
    (
        "v2-helm-change-vnfpkg",
        "Definitions/sample_cnf_top.vnfd.yaml",
    ),
    (
        "v2-helm-instantiate",
        "Definitions/sample_cnf_top.vnfd.yaml",
    ),
    ("v2-terraform-basic", "Definitions/sample_tf_top.vnfd.yaml"),
    (
        "v2-terraform-change-vnfpkg",
        "Definitions/sample_tf_top.vnfd.yaml",
    ),
    (
        "v2-vm-basic-lcms-max",
        "Definitions/v2_sample1_top.vnfd.yaml",
    ),
    (
        "v2-vm-basic-lcms-min",
        "Definitions/v2_sample2_top.vnfd.yaml",
    ),
    (
        "v2-vm-change-vnfpkg-new-image",
        "Definitions/change_vnf_pkg_top.vnfd.yaml",
    ),
    (
        "v2-vm-change-vnfpkg-new-volume",
        "Definitions/change_vnf_pkg_top.vnfd.yaml",
    ),
    (
        "v2-vm-change-vnfpkg-standard",
        "Definitions/v2_sample4_top.vnfd.yaml",
    ),
    (
        "v2-vm-change-vnfpkg-update-failed",
        "Definitions/change_vnf_pkg_top.vnfd.yaml",
    ),
    (
        "v2-vm-error-network",
        "Definitions/v2_sample2_top.vnfd.yaml",
    ),
    (
        "v2-vm-individual-vnfc-max",
        "Definitions/v2_sample3_top.vnfd.yaml",
    ),
    (
        "v2-vm-individual-vnfc-min",
        "Definitions/v2_sample4_top.vnfd.yaml",
    ),
    ("v2-vm-scale-ng", "Definitions/v2_sample1_top.vnfd.yaml"),
    (
        "v2-vm-server-notification",
        "Definitions/v2_sample2_top.vnfd.yaml",
    ),
    ("v2-vm-update-vnf", "Definitions/v2_sample2_top.vnfd.yaml"),
    (
        "v2-vm-userdata-standard",
        "Definitions/v2_sample3_top.vnfd.yaml",
    ),
    (
        "v2-vm-userdata-standard-non-boot-volume",
        "Definitions/v2_sample7_top.vnfd.yaml",
    ),
];

/// Errors `verify` reports: files listed but absent from this copy (INDEX.md "missing refs"
/// and the omitted Python script), and digests that no longer match upstream files.
fn expected_verify_errors()
-> BTreeMap<&'static str, Vec<(&'static str, &'static str, &'static str)>> {
    let missing = "csar.missing-artifact";
    let mismatch = "csar.digest-mismatch";
    BTreeMap::from([
        (
            "mgmt-ansible",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
        (
            "mgmt-k8s-cluster-v1",
            vec![
                (
                    mismatch,
                    "TOSCA-Metadata/TOSCA.meta:12",
                    "Scripts/install_k8s_cluster.sh",
                ),
                (
                    missing,
                    "TOSCA-Metadata/TOSCA.meta:19",
                    "Scripts/kubernetes_mgmt.py",
                ),
                (
                    missing,
                    "TOSCA-Metadata/TOSCA.meta:6",
                    "Files/images/ubuntu-20.04-server-cloudimg-amd64.img",
                ),
            ],
        ),
        (
            "mgmt-k8s-cluster-v2",
            vec![(
                missing,
                "TOSCA-Metadata/TOSCA.meta:6",
                "Files/images/ubuntu-22.04-server-cloudimg-amd64.img",
            )],
        ),
        (
            "v1-pkg-compliance",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
        // Listed in the manifest and in TOSCA.meta: reported once, where the manifest lists it.
        (
            "v1-pkg-manifest-vnfpkgm2",
            vec![(missing, "manifest.mf:1", CIRROS)],
        ),
        // The image is a 50-byte placeholder; the manifest still has the real image's digest.
        (
            "v1-pkg-meta-and-manifest",
            vec![(mismatch, "manifest.mf:3", "Files/images/cirros.img")],
        ),
        (
            "v1-pkg-short-notation",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
        (
            "v1-vm-single-file-vnfd-vnflcm3",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
        (
            "v1-vm-tosca-only-vnflcm1",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
        (
            "v1-vm-userdata-normal",
            vec![(missing, "TOSCA-Metadata/TOSCA.meta:6", CIRROS)],
        ),
    ])
}

fn check_package(name: &str, pkg: &Package, entry: &str, how: &str) -> Vec<Diagnostic> {
    assert_eq!(pkg.entry_definitions(), entry, "{name} ({how})");
    assert_eq!(
        pkg.meta().origin,
        MetaOrigin::ToscaMetaFile,
        "{name} ({how})"
    );
    assert!(pkg.contains(entry), "{name} ({how})");
    assert!(
        pkg.diagnostics().iter().all(|d| !d.is_error()),
        "{name} ({how}) opened with errors: {:?}",
        pkg.diagnostics()
    );
    let diags = pkg.verify(&VerifyOptions::default());
    let expected = expected_verify_errors();
    let want: Vec<(String, String, String)> = {
        let mut w: Vec<_> = expected
            .get(name)
            .into_iter()
            .flatten()
            .map(|(c, l, p)| (c.to_string(), l.to_string(), p.to_string()))
            .collect();
        w.sort();
        w
    };
    assert_eq!(errors(&diags), want, "{name} ({how}): {diags:#?}");
    diags
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn every_tacker_package_opens_as_directory_and_as_zip() {
    let entries: BTreeMap<&str, &str> = ENTRY_DEFINITIONS.iter().copied().collect();
    let mut seen = Vec::new();
    let mut dirs: Vec<_> = fs::read_dir(tacker())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        if name == "api-ref-samples" || name == "etsi-types" {
            continue;
        }
        let Some(entry) = entries.get(name.as_str()) else {
            continue; // the packages that do not open are checked below
        };
        seen.push(name.clone());
        let from_dir = Package::open(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let dir_diags = check_package(&name, &from_dir, entry, "directory");
        let from_zip = Package::from_zip_bytes(zip_dir(&dir), &Limits::default())
            .unwrap_or_else(|e| panic!("{name} (zip): {e}"));
        let zip_diags = check_package(&name, &from_zip, entry, "zip");
        assert_eq!(
            from_dir.files().collect::<Vec<_>>(),
            from_zip.files().collect::<Vec<_>>(),
            "{name}"
        );
        assert_eq!(dir_diags, zip_diags, "{name}");
        assert_eq!(from_dir.diagnostics(), from_zip.diagnostics(), "{name}");
    }
    assert_eq!(
        seen.len(),
        ENTRY_DEFINITIONS.len(),
        "packages seen: {seen:?}"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn incomplete_tacker_copies_fail_with_specific_errors() {
    // The source fixture has no top VNFD (INDEX.md: missing Definitions/sample_cnf_top.vnfd.yaml).
    let dir = tacker().join("unit-v2-sample2-cnf-manifests");
    for result in [
        Package::open(&dir),
        Package::from_zip_bytes(zip_dir(&dir), &Limits::default()),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.code(), "csar.entry-definitions-not-found");
        let diag = err.to_diagnostic();
        assert_eq!(
            diag.location.unwrap().to_string(),
            "TOSCA-Metadata/TOSCA.meta:4"
        );
        assert!(
            diag.message
                .contains("Definitions/sample_cnf_top.vnfd.yaml")
        );
    }
    // Only flavour, scripts and types were copied: no TOSCA.meta, no root YAML.
    let err = Package::open(&tacker().join("v1-mgmt-multi-flavour")).unwrap_err();
    assert!(matches!(err, CsarError::NoEntryDefinitions { .. }), "{err}");
    assert_eq!(err.code(), "csar.no-entry-definitions");
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn tacker_packages_with_manifests_expose_it() {
    let pkg = Package::open(&tacker().join("v1-pkg-meta-and-manifest")).unwrap();
    let m = pkg.manifest().expect("manifest.mf");
    assert_eq!(m.file, "manifest.mf");
    let sources: Vec<_> = m
        .artifacts
        .iter()
        .map(|a| a.source.value.as_str())
        .collect();
    assert_eq!(
        sources,
        [
            "Files/images/cirros.img",
            "Scripts/install.sh",
            "Files/kubernetes/deployment.yaml"
        ]
    );
    assert_eq!(m.artifacts[0].algorithm.as_ref().unwrap().value, "SHA-512");
    // The TOSCA.meta of this package has no trailing newline after its last Hash.
    let art = &pkg.meta().artifacts[0];
    assert_eq!(art.name.value, "Scripts/install.sh");
    assert_eq!(
        art.hash.as_ref().unwrap().value,
        "27bbdb25d8f4ed6d07d6f6581b86515e8b2f0059b236ef7b6f50d6674b34f02a"
    );
    assert_eq!(
        pkg.sha256_hex("Scripts/install.sh").unwrap(),
        art.hash.as_ref().unwrap().value
    );
    // Every other file is outside the manifest's protection.
    let diags = pkg.verify(&VerifyOptions::default());
    let unlisted: Vec<_> = diags
        .iter()
        .filter(|d| d.code == "csar.unlisted-file")
        .map(|d| d.location.as_ref().unwrap().file.as_str())
        .collect();
    assert!(unlisted.contains(&"Definitions/sample_vnfd_top.yaml"));
    assert!(!unlisted.contains(&"Scripts/install.sh"));
    assert!(!unlisted.contains(&"manifest.mf"));
    // TOSCA.meta need not be listed, unless a signature must cover everything.
    assert!(!unlisted.contains(&"TOSCA-Metadata/TOSCA.meta"));
    let strict = VerifyOptions {
        require_signature: true,
        ..VerifyOptions::default()
    };
    let unlisted_strict: Vec<_> = pkg
        .verify(&strict)
        .into_iter()
        .filter(|d| d.code == "csar.unlisted-file" && d.is_error())
        .filter_map(|d| d.location.map(|l| l.file))
        .collect();
    assert!(
        unlisted_strict
            .iter()
            .any(|f| f == "TOSCA-Metadata/TOSCA.meta")
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn external_artifacts_are_kept_but_never_fetched() {
    let pkg = Package::open(&tacker().join("v1-cnf-ext-artifact")).unwrap();
    let art = &pkg.meta().artifacts[0];
    assert_eq!(
        art.name.value,
        "http://127.0.0.1:44380/storage-class-url.yaml"
    );
    assert_eq!(art.algorithm.as_ref().unwrap().value, "SHA-256");
    let diags = pkg.verify(&VerifyOptions::default());
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    assert_eq!(codes(&diags), ["csar.no-manifest"]);
}

/// Copies the ONAP ASD pieces into a package layout.
fn asd_package(dir: &Path) {
    let asd = vnfm_test_env::corpus("asd");
    fs::create_dir_all(dir.join("TOSCA-Metadata")).unwrap();
    fs::create_dir_all(dir.join("Definitions")).unwrap();
    fs::copy(
        asd.join("onap-so-cnfm_asd-TOSCA.meta"),
        dir.join("TOSCA-Metadata/TOSCA.meta"),
    )
    .unwrap();
    fs::copy(asd.join("onap-so-cnfm_asd.mf"), dir.join("asd.mf")).unwrap();
    fs::copy(
        asd.join("onap-so-cnfm_asd.yaml"),
        dir.join("Definitions/asd.yaml"),
    )
    .unwrap();
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn the_onap_asd_package_opens_with_its_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    asd_package(tmp.path());
    let from_dir = Package::open(tmp.path()).unwrap();
    let from_zip = Package::from_zip_bytes(zip_dir(tmp.path()), &Limits::default()).unwrap();
    for pkg in [&from_dir, &from_zip] {
        assert_eq!(pkg.entry_definitions(), "Definitions/asd.yaml");
        let meta = pkg.meta();
        assert_eq!(
            meta.created_by.as_ref().unwrap().value,
            "Ericsson (Zu Qiang 2021-10-21)"
        );
        assert_eq!(meta.etsi_entry_manifest.as_ref().unwrap().value, "asd.mf");
        // CSAR-Version 1.0 (CRLF file, no final newline) is accepted with a warning.
        let d = &pkg.diagnostics()[0];
        assert_eq!(
            (d.code.as_ref(), d.is_error()),
            ("csar.unsupported-version", false)
        );
        assert_eq!(
            d.location.as_ref().unwrap().to_string(),
            "TOSCA-Metadata/TOSCA.meta:2"
        );
        assert_eq!(pkg.diagnostics().len(), 1);

        let m = pkg.manifest().unwrap();
        assert_eq!(m.metadata_value("application_name"), Some("SampleApp"));
        assert_eq!(m.metadata_value("application_provider"), Some("MyCompany"));
        assert_eq!(
            m.metadata_value("release_date_time"),
            Some("2021-10-21T11:30:00+05:00")
        );
        assert_eq!(m.metadata_value("entry_definition_type"), Some("asd"));
        assert_eq!(m.artifacts.len(), 13);
        let sets: Vec<_> = m
            .non_mano_artifact_sets
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            sets,
            [
                "onap_ves_events",
                "onap_pm_dictionary",
                "onap_yang_modules",
                "onap_others",
                "onap_vendor_artifacts"
            ]
        );
        let vendor = &m.non_mano_artifact_sets["onap_vendor_artifacts"];
        assert_eq!(vendor.sources[0].value, "Files/rapp1/rapp.zip");
        assert_eq!(vendor.other["vendor_name"].value, "Ericsson");
        assert_eq!(vendor.other["artifact_type"].value, "rApp_name1");

        let diags = pkg.verify(&VerifyOptions::default());
        let mut missing: Vec<_> = errors(&diags)
            .into_iter()
            .map(|(code, loc, path)| {
                assert_eq!(code, "csar.missing-artifact");
                assert!(loc.starts_with("asd.mf:"), "{loc}");
                path
            })
            .collect();
        missing.sort();
        assert_eq!(
            missing,
            [
                "Artifacts/Deployment/HELM/sampleapp-db-operator-helm.tgz",
                "Artifacts/Deployment/HELM/sampleapp-services-helm.tgz",
                "Definitions/asd_types.yaml",
                "Files/ChangeLog.txt",
                "Files/Events/MyASD_v1.yaml",
                "Files/Guides/user_guide.txt",
                "Files/Measurements/PM_Dictionary.yaml",
                "Files/Scripts/my_script.sh",
                "Files/Yang_module/mynetconf.yang",
                "Files/rapp1/rapp.zip",
            ]
        );
        // The three present files are listed without digests; nothing is unlisted.
        let no_digest: Vec<_> = diags
            .iter()
            .filter(|d| d.code == "csar.missing-digest")
            .map(|d| d.message.split('`').nth(1).unwrap())
            .collect();
        assert_eq!(
            no_digest,
            [
                "asd.mf",
                "Definitions/asd.yaml",
                "TOSCA-Metadata/TOSCA.meta"
            ]
        );
        assert!(!diags.iter().any(|d| d.code == "csar.unlisted-file"));
    }
}
