//! Every Tacker sample package of the corpus loads without errors, with only the expected
//! warnings, and its normalized model says what the VNFD declares.

use crate::common;

use std::collections::BTreeSet;

use vnfm_descriptor::{Flavour, Severity, VduKind, Vnfd};
use vnfm_tosca::{Loaded, load};

/// Warnings any Tacker package may produce: Tacker's habits (named quirks) and artifact files
/// the corpus copy leaves out (Python scripts, images).
const COMMON_WARNINGS: &[&str] = &[
    "tosca.artifact-file-missing",
    "tosca.quirk.empty-list-operation",
    "tosca.quirk.empty-substitution-requirement",
    "tosca.quirk.placement-group-without-description",
    "tosca.quirk.undeclared-substitution-requirement",
    "tosca.quirk.vnf-requirement-lower-bound",
];

/// Warnings only one sample has, with the package that has them.
const PACKAGE_WARNINGS: &[(&str, &str)] = &[
    ("v1-pkg-short-notation", "tosca.quirk.untyped-artifact"),
    (
        "v1-pkg-meta-and-manifest",
        "tosca.quirk.vnf-property-not-in-valid-values",
    ),
    ("v1-cnf-all-kinds", "tosca.quirk.undeclared-flavour-id"),
    (
        "v2-vm-userdata-standard-non-boot-volume",
        "tosca.quirk.dangling-substitution-requirement",
    ),
    // Aspects whose top level exceeds a VDU's max_number_of_instances (Tacker does not check).
    ("doc-v2-chg-vnfpkg-before", SCALE_BEYOND_PROFILE),
    ("mgmt-ansible", SCALE_BEYOND_PROFILE),
    ("v1-vm-enhanced-policy", SCALE_BEYOND_PROFILE),
    ("v1-vm-functional6-vdu2-scale", SCALE_BEYOND_PROFILE),
    ("v1-vm-functional7-multi-aspect", SCALE_BEYOND_PROFILE),
    ("v2-cnf-change-vnfpkg-deployment", SCALE_BEYOND_PROFILE),
    ("v2-cnf-instantiate-resources", SCALE_BEYOND_PROFILE),
    ("v2-vm-change-vnfpkg-new-image", SCALE_BEYOND_PROFILE),
    ("v2-vm-change-vnfpkg-new-volume", SCALE_BEYOND_PROFILE),
    ("v2-vm-change-vnfpkg-update-failed", SCALE_BEYOND_PROFILE),
    // The `volume` flavour no file imports (Tacker reads every file of `Definitions/`).
    ("v2-vm-change-vnfpkg-new-image", FLAVOUR_NOT_IMPORTED),
    ("v2-vm-change-vnfpkg-new-volume", FLAVOUR_NOT_IMPORTED),
];

const FLAVOUR_NOT_IMPORTED: &str = "tosca.flavour-not-imported";

const SCALE_BEYOND_PROFILE: &str = "tosca.scale-beyond-vdu-profile";

/// Packages the corpus documents as partial.
const PARTIAL: &[&str] = &["unit-v2-sample2-cnf-manifests"];

fn load_package(name: &str) -> Loaded {
    load(&common::tacker_files(name))
}

fn vnfd(name: &str) -> Vnfd {
    let loaded = load_package(name);
    let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
    loaded
        .valid_descriptor()
        .and_then(|d| d.as_vnfd())
        .cloned()
        .unwrap_or_else(|| panic!("{name}: no descriptor"))
}

fn flavour<'a>(v: &'a Vnfd, id: &str) -> &'a Flavour {
    v.flavour(id)
        .unwrap_or_else(|| panic!("no flavour {id} in {:?}", flavour_ids(v)))
}

fn flavour_ids(v: &Vnfd) -> Vec<&str> {
    v.flavours.iter().map(|f| f.id.as_str()).collect()
}

fn vdu_ids(f: &Flavour) -> Vec<&str> {
    f.vdus.iter().map(|v| v.id.as_str()).collect()
}

fn hook_ops(f: &Flavour) -> Vec<&str> {
    f.lcm_hooks.iter().map(|h| h.operation.as_str()).collect()
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn the_corpus_has_the_expected_packages() {
    let packages = common::tacker_packages();
    assert_eq!(packages.len(), 48, "{packages:?}");
    for p in [
        "v2-vm-basic-lcms-max",
        "mgmt-k8s-cluster-v1",
        "v1-vm-single-file-vnfd-vnflcm3",
    ] {
        assert!(packages.iter().any(|x| x == p), "{p} missing");
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn every_package_loads_without_errors_and_with_only_expected_warnings() {
    let mut seen_specific = BTreeSet::new();
    for name in common::tacker_packages() {
        if PARTIAL.contains(&name.as_str()) {
            continue;
        }
        let loaded = load_package(&name);
        for d in &loaded.diagnostics {
            assert_eq!(d.severity, Severity::Warning, "{name}: {d}");
            let specific = PACKAGE_WARNINGS
                .iter()
                .any(|(p, code)| *p == name && d.code == *code);
            assert!(
                COMMON_WARNINGS.contains(&&*d.code) || specific,
                "{name}: unexpected {d}"
            );
            if specific {
                seen_specific.insert((name.clone(), d.code.to_string()));
            }
        }
        let v = loaded
            .valid_descriptor()
            .and_then(|d| d.as_vnfd())
            .unwrap_or_else(|| panic!("{name}: no descriptor"));
        assert!(!v.flavours.is_empty(), "{name}: no flavour");
        assert!(!v.descriptor_id.is_empty(), "{name}");
        assert_eq!(v.sol001_version.as_deref(), Some("2.6.1"), "{name}");
    }
    // Each package-specific quirk is really met in its package.
    assert_eq!(
        seen_specific.len(),
        PACKAGE_WARNINGS.len(),
        "{seen_specific:?}"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn every_package_loads_the_same_through_vnfm_csar() {
    for name in common::tacker_packages() {
        if PARTIAL.contains(&name.as_str()) {
            continue;
        }
        let package = vnfm_csar::Package::open(&common::tacker(&name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let through_csar = load(&package);
        let in_memory = load_package(&name);
        assert_eq!(through_csar.diagnostics, in_memory.diagnostics, "{name}");
        assert_eq!(through_csar.descriptor, in_memory.descriptor, "{name}");
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn partial_package_fails_on_its_missing_top_level_vnfd() {
    let loaded = load_package("unit-v2-sample2-cnf-manifests");
    assert!(loaded.descriptor.is_none());
    assert_eq!(loaded.diagnostics.len(), 1, "{:#?}", loaded.diagnostics);
    let d = &loaded.diagnostics[0];
    assert_eq!(d.code, "tosca.entry-definitions-not-found");
    assert_eq!(
        d.location.as_ref().unwrap().file,
        "Definitions/sample_cnf_top.vnfd.yaml"
    );
    assert!(d.message.contains("Definitions/sample_cnf_top.vnfd.yaml"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vm_basic_lcms_max() {
    let v = vnfd("v2-vm-basic-lcms-max");
    assert_eq!(v.descriptor_id, "b1bb0ce7-ebca-4fa7-95ed-4840d7000000");
    assert_eq!(
        (
            v.provider.as_str(),
            v.product_name.as_str(),
            v.software_version.as_str()
        ),
        ("Company", "Sample VNF", "1.0")
    );
    assert_eq!(v.vnfm_info, ["Tacker"]);
    assert_eq!(v.vnf_node_type, "company.provider.VNF");
    assert_eq!(v.entry_definitions, "Definitions/v2_sample1_top.vnfd.yaml");
    assert_eq!(flavour_ids(&v), ["simple"]);
    let f = flavour(&v, "simple");
    assert_eq!(f.description, "A simple flavour");
    assert_eq!(vdu_ids(f), ["VDU1", "VDU2"]);
    let vdu1 = f.vdu("VDU1").unwrap();
    assert_eq!(
        (vdu1.min_instances, vdu1.max_instances, vdu1.initial_delta),
        (1, 3, Some(1))
    );
    assert_eq!(vdu1.kind, VduKind::Compute);
    let vc = vdu1.virtual_compute.as_ref().unwrap();
    assert_eq!(vc.virtual_mem_size_bytes, Some(512_000_000));
    assert_eq!(vc.local_storage_bytes, [3_000_000_000]);
    assert_eq!(vc.additional_capability_names, ["m1.tiny"]);
    assert_eq!(vdu1.virtual_storages, ["VDU1-VirtualStorage"]);

    let aspect = f.scaling_aspect("VDU1_scale").unwrap();
    assert_eq!(aspect.max_scale_level, 2);
    assert_eq!(aspect.step_deltas, ["delta_1"]);
    assert_eq!(aspect.vdu_deltas["VDU1"]["delta_1"], 1);
    assert_eq!(
        f.default_instantiation_level.as_deref(),
        Some("instantiation_level_1")
    );
    let l1 = f.instantiation_level("instantiation_level_1").unwrap();
    assert_eq!(l1.scale_levels["VDU1_scale"], 0);
    assert_eq!((l1.vdu_instances["VDU1"], l1.vdu_instances["VDU2"]), (1, 1));
    let l2 = f.instantiation_level("instantiation_level_2").unwrap();
    assert_eq!(l2.scale_levels["VDU1_scale"], 2);
    assert_eq!((l2.vdu_instances["VDU1"], l2.vdu_instances["VDU2"]), (3, 1));

    let storage = &f.virtual_storages[0];
    assert_eq!(storage.id, "VDU1-VirtualStorage");
    assert_eq!(storage.size_bytes, Some(1_000_000_000));
    let image = storage.sw_image.as_ref().unwrap();
    assert_eq!(
        image.file.as_deref(),
        Some("Files/images/cirros-0.5.2-x86_64-disk.img")
    );
    assert_eq!(image.min_ram_bytes, Some(256_000_000));
    assert_eq!(image.checksum_algorithm.as_deref(), Some("sha-256"));

    let ext: Vec<(&str, Option<&str>, Option<&str>)> = f
        .ext_cps
        .iter()
        .map(|e| (e.id.as_str(), e.requirement.as_deref(), e.vdu.as_deref()))
        .collect();
    assert_eq!(
        ext,
        [
            ("VDU1_CP1", Some("virtual_link_external1_1"), Some("VDU1")),
            ("VDU2_CP1-1", Some("virtual_link_external1_2"), Some("VDU2")),
            ("VDU2_CP1-2", Some("virtual_link_external1_3"), Some("VDU2")),
            ("VDU1_CP2", Some("virtual_link_external2_1"), Some("VDU1")),
            ("VDU2_CP2", Some("virtual_link_external2_2"), Some("VDU2")),
        ]
    );
    let cp3 = f.vdu_cps.iter().find(|c| c.id == "VDU1_CP3").unwrap();
    assert_eq!(
        (cp3.vdu.as_deref(), cp3.virtual_link.as_deref(), cp3.order),
        (Some("VDU1"), Some("internalVL1"), Some(2))
    );
    let vls: Vec<(&str, &[String])> = f
        .virtual_links
        .iter()
        .map(|l| (l.id.as_str(), l.cidrs.as_slice()))
        .collect();
    assert_eq!(vls[2].0, "internalVL3");
    assert_eq!(vls[2].1, ["192.168.5.0/24"]);
    // Affinity over a group: expanded to its members.
    assert_eq!(f.placement_rules.len(), 1);
    assert_eq!(f.placement_rules[0].vdus, ["VDU1", "VDU2"]);
    assert_eq!(f.placement_rules[0].scope, "zone");
    // Every Vnflcm operation is `[]`: no hooks, one quirk warning naming all nine.
    assert!(f.lcm_hooks.is_empty());
    let loaded = load_package("v2-vm-basic-lcms-max");
    let empty_ops: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "tosca.quirk.empty-list-operation")
        .collect();
    assert_eq!(empty_ops.len(), 1, "{empty_ops:?}");
    let message = &empty_ops[0].message;
    for op in [
        "`instantiate`",
        "`terminate_end`",
        "`modify_information_end`",
    ] {
        assert!(message.contains(op), "{message}");
    }
    assert!(message.contains("are `[]`"), "{message}");
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn mgmt_k8s_cluster_v1_flavours_and_mgmt_driver_hooks() {
    let v = vnfd("mgmt-k8s-cluster-v1");
    assert_eq!(flavour_ids(&v), ["simple", "complex", "podaffinity"]);
    for id in ["simple", "complex", "podaffinity"] {
        let f = flavour(&v, id);
        assert_eq!(vdu_ids(f), ["masterNode", "workerNode"], "{id}");
        assert_eq!(
            hook_ops(f),
            [
                "instantiate_end",
                "terminate_end",
                "heal_start",
                "heal_end",
                "scale_start",
                "scale_end"
            ],
            "{id}"
        );
        assert!(
            f.lcm_hooks
                .iter()
                .all(|h| h.artifact == "mgmt-drivers-kubernetes")
        );
        let a = f.artifact(Some("VNF"), "mgmt-drivers-kubernetes").unwrap();
        assert_eq!(a.artifact_type, "tosca.artifacts.Implementation.Python");
        assert!(
            a.sha256.is_none(),
            "the corpus leaves the Python driver out"
        );
    }
    let complex = flavour(&v, "complex");
    let master = complex.vdu("masterNode").unwrap();
    assert_eq!((master.min_instances, master.max_instances), (3, 5));
    assert_eq!(
        master
            .virtual_compute
            .as_ref()
            .unwrap()
            .virtual_mem_size_bytes,
        Some(4_000_000_000)
    );
    assert_eq!(
        master
            .sw_image
            .as_ref()
            .unwrap()
            .checksum_algorithm
            .as_deref(),
        Some("sha-512")
    );
    assert_eq!(
        complex
            .scaling_aspect("worker_instance")
            .unwrap()
            .vdu_deltas["workerNode"]["delta_1"],
        1
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_vm_server_notification_rollback_hooks() {
    let v = vnfd("v2-vm-server-notification");
    let f = flavour(&v, "simple");
    assert_eq!(
        hook_ops(f),
        [
            "instantiate_start",
            "instantiate_end",
            "heal_start",
            "heal_end",
            "scale_start",
            "scale_end",
            "terminate_start",
            "terminate_end",
            "change_external_connectivity_start",
            "modify_information_start",
            "instantiate_rollback_start",
            "scale_rollback_start",
        ]
    );
    let rollback = f.hook("instantiate_rollback_start").unwrap();
    assert_eq!(rollback.artifact, "sample-script");
    assert_eq!(
        f.artifact(Some("VNF"), "sample-script").unwrap().file,
        "Scripts/sample_script.py"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_cnf_instantiate_resources_vdus() {
    let v = vnfd("v2-cnf-instantiate-resources");
    let f = flavour(&v, "simple");
    assert_eq!(vdu_ids(f), ["VDU1", "VDU2", "VDU3", "VDU5", "VDU6"]);
    let names: Vec<&str> = f.vdus.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["vdu1", "vdu2", "vdu3", "vdu5", "vdu6"]);
    assert_eq!((f.vdus[1].min_instances, f.vdus[1].max_instances), (1, 3));
    assert!(f.vdus.iter().all(|v| v.virtual_compute.is_none()));
    // `virtual_link_external: []` maps nothing.
    assert!(f.ext_cps.is_empty());
    assert_eq!(f.lcm_hooks.len(), 10);
    let l2 = f.instantiation_level("instantiation_level_2").unwrap();
    assert_eq!(l2.vdu_instances["VDU2"], 3);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn single_file_style_vnfd_vnflcm3() {
    let v = vnfd("v1-vm-single-file-vnfd-vnflcm3");
    assert_eq!(v.vnf_node_type, "ntt.nslab.VNF");
    assert_eq!(v.provider, "NTT NS lab");
    assert_eq!(
        v.entry_definitions,
        "Definitions/helloworld3.vnfd.tosca.yaml"
    );
    assert_eq!(flavour_ids(&v), ["simple"]);
    assert_eq!(
        flavour(&v, "simple").file,
        "Definitions/helloworld3simple.vnfd.tosca.yaml"
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn entry_definitions_that_are_a_flavour() {
    // TOSCA.meta points at the flavour file itself: the VNF properties come from its VNF node
    // template and the type defaults.
    let v = vnfd("v1-pkg-short-notation");
    assert_eq!(
        v.entry_definitions,
        "Definitions/helloworld3_df_simple.yaml"
    );
    assert_eq!(v.descriptor_id, "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177");
    let f = flavour(&v, "simple");
    assert_eq!(vdu_ids(f), ["VDU1", "VDU2"]);
    let image = f.artifact(Some("VDU1"), "sw_image").unwrap();
    assert_eq!(image.artifact_type, "tosca.artifacts.nfv.SwImage");
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn artifacts_present_in_the_package_get_their_sha256() {
    use sha2::Digest;
    let v = vnfd("v1-pkg-meta-and-manifest");
    assert_eq!(flavour_ids(&v), ["simple", "complex"]);
    let f = flavour(&v, "simple");
    let image = f.artifact(Some("VDU1"), "sw_image").unwrap();
    let bytes =
        std::fs::read(common::tacker("v1-pkg-meta-and-manifest").join(&image.file)).unwrap();
    assert_eq!(
        image.sha256.as_deref(),
        Some(hex::encode(sha2::Sha256::digest(&bytes)).as_str())
    );
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn multiple_flavours_with_their_own_node_templates() {
    let v = vnfd("v1-cnf-heal");
    assert_eq!(flavour_ids(&v), ["simple", "complex"]);
    assert_eq!(vdu_ids(flavour(&v, "simple")), ["VDU1"]);
    assert_eq!(vdu_ids(flavour(&v, "complex")), ["VDU1", "VDU2"]);
    let v = vnfd("mgmt-k8s-cluster-v2");
    let complex = flavour(&v, "complex");
    assert_eq!(complex.placement_rules[0].vdus, ["workerNode"]);
    assert_eq!(flavour(&v, "simple").placement_rules.len(), 0);
}

/// Tacker's change_vnfpkg samples import their `simple` flavour only and keep the `volume`
/// one beside it in `Definitions/`, where Tacker finds it: both are flavours of the VNFD.
#[vnfm_test_env::needs(corpus)]
#[test]
fn unimported_flavours_of_the_change_vnfpkg_samples() {
    for (name, file) in [
        (
            "v2-vm-change-vnfpkg-new-image",
            "Definitions/change_vnf_pkg_new_image_df_volume.yaml",
        ),
        (
            "v2-vm-change-vnfpkg-new-volume",
            "Definitions/change_vnf_pkg_new_volume_df_volume.yaml",
        ),
    ] {
        let v = vnfd(name);
        assert_eq!(flavour_ids(&v), ["simple", "volume"], "{name}");
        let volume = flavour(&v, "volume");
        assert_eq!(volume.file, file, "{name}");
        assert_eq!(vdu_ids(volume), ["VDU1", "VDU2"], "{name}");
        assert_eq!(
            volume.vdus[0].virtual_storages,
            ["VDU1-VirtualStorage"],
            "{name}"
        );
    }
}

/// v1-mgmt-multi-flavour is a fragment: one flavour file and the scripts, no TOSCA.meta, no
/// top-level VNFD and no VNF type (Tacker's test harness merges them in).
#[vnfm_test_env::needs(corpus)]
#[test]
fn v1_mgmt_multi_flavour_fragment_needs_its_vnf_type() {
    let dir = common::tacker("v1-mgmt-multi-flavour");
    assert!(common::entry_definitions(&dir).is_none());
    let files = common::mem_files_with_entry(&dir, "Definitions/helloworld3_df_simple.yaml");
    let loaded = load(&files);
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code == "tosca.unknown-type")
        .expect("company.provider.VNF is not defined");
    assert!(d.message.contains("company.provider.VNF"));
    let loc = d.location.as_ref().unwrap();
    assert_eq!(
        (loc.file.as_str(), loc.line, loc.column),
        ("Definitions/helloworld3_df_simple.yaml", 37, 16)
    );
}

/// The same fragment completed with a top-level VNFD and VNF type, as Tacker's harness does:
/// the hook has a primary artifact and dependencies.
#[vnfm_test_env::needs(corpus)]
#[test]
fn v1_mgmt_multi_flavour_primary_and_dependencies() {
    let dir = common::tacker("v1-mgmt-multi-flavour");
    let top = "tosca_definitions_version: tosca_simple_yaml_1_2\nimports:\n  - etsi_nfv_sol001_common_types.yaml\n  - etsi_nfv_sol001_vnfd_types.yaml\n  - types.yaml\n  - helloworld3_df_simple.yaml\ntopology_template:\n  node_templates:\n    VNF:\n      type: company.provider.VNF\n      properties:\n        descriptor_id: multi-1\n";
    let types = "tosca_definitions_version: tosca_simple_yaml_1_2\nimports:\n  - etsi_nfv_sol001_common_types.yaml\n  - etsi_nfv_sol001_vnfd_types.yaml\nnode_types:\n  company.provider.VNF:\n    derived_from: tosca.nodes.nfv.VNF\n    properties:\n      descriptor_id: { type: string }\n      descriptor_version: { type: string, default: '1.0' }\n      provider: { type: string, default: Company }\n      product_name: { type: string, default: Sample }\n      software_version: { type: string, default: '1.0' }\n      vnfm_info: { type: list, entry_schema: { type: string }, default: [ '0:tacker' ] }\n      flavour_id: { type: string, default: simple }\n      flavour_description: { type: string, default: '' }\n      id: { type: string, required: false }\n      vendor: { type: string, required: false }\n      version: { type: version, required: false }\n    requirements:\n      - virtual_link_external: { capability: tosca.capabilities.nfv.VirtualLinkable, occurrences: [0, 1] }\n    interfaces:\n      Vnflcm: { type: tosca.interfaces.nfv.Vnflcm }\n";
    let mut files = common::mem_files_with_entry(&dir, "Definitions/top.yaml");
    files
        .files
        .insert("Definitions/top.yaml".into(), top.as_bytes().to_vec());
    files
        .files
        .insert("Definitions/types.yaml".into(), types.as_bytes().to_vec());
    let loaded = load(&files);
    // The flavour's VNF node template leaves `descriptor_id` to the top level: required there.
    let errors: Vec<_> = loaded.diagnostics.iter().filter(|d| d.is_error()).collect();
    let only_descriptor_id = errors.iter().all(|d| {
        d.code == "tosca.missing-required-property" && d.message.contains("descriptor_id")
    });
    assert!(only_descriptor_id, "{errors:#?}");
    let types = types.replace(
        "descriptor_id: { type: string }",
        "descriptor_id: { type: string, default: multi-1 }",
    );
    files
        .files
        .insert("Definitions/types.yaml".into(), types.into_bytes());
    let loaded = load(&files);
    let codes: BTreeSet<&str> = loaded.diagnostics.iter().map(|d| &*d.code).collect();
    assert_eq!(
        codes,
        BTreeSet::from([
            "tosca.artifact-file-missing",
            "tosca.quirk.artifact-path-from-package-root",
            "tosca.quirk.empty-list-operation",
            "tosca.quirk.undefined-implementation-artifact-type",
        ]),
        "{:#?}",
        loaded.diagnostics
    );
    let v = loaded.valid_descriptor().and_then(|d| d.as_vnfd()).unwrap();
    let f = flavour(v, "simple");
    assert_eq!(hook_ops(f), ["instantiate_end"]);
    let hook = f.hook("instantiate_end").unwrap();
    assert_eq!(hook.artifact, "vnflcm_noop");
    assert_eq!(hook.dependencies, ["mgmt-drivers-ansible-sample-end"]);
    let dep = f
        .artifact(Some("VNF"), "mgmt-drivers-ansible-sample-end")
        .unwrap();
    assert_eq!(dep.file, "ScriptANSIBLE/config_complex_end.yaml");
    assert!(dep.sha256.is_some());
    assert_eq!(dep.artifact_type, "tosca.artifacts.Implementation.Yaml");
}

/// Tacker's copies of the ETSI type files are recognised by their content and not parsed; a
/// copy that differs by one byte is parsed like any other file, and what is wrong in it is
/// reported at its own path, line and column.
#[vnfm_test_env::needs(corpus)]
#[test]
fn an_etsi_type_file_one_byte_off_is_parsed_and_reported_in_place() {
    let path = "Definitions/etsi_nfv_sol001_vnfd_types.yaml";
    let mut files = common::tacker_files("v2-vm-userdata-standard");
    let text = String::from_utf8(files.files[path].clone()).unwrap();
    let clean = load(&files);
    assert!(!clean.has_errors(), "{:#?}", clean.diagnostics);

    let needle = "derived_from: tosca.nodes.Root\n";
    let at = text.find(needle).unwrap() + "derived_from: ".len();
    let edited = format!(
        "{}tosca.nodes.Roo7{}",
        &text[..at],
        &text[at + "tosca.nodes.Root".len()..]
    );
    assert_eq!(edited.len(), text.len());
    files.files.insert(path.into(), edited.into_bytes());
    let loaded = load(&files);
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code == "tosca.unknown-type")
        .unwrap_or_else(|| panic!("{:#?}", loaded.diagnostics));
    let line = text[..at].matches('\n').count() as u32 + 1;
    let column = (at - text[..at].rfind('\n').map_or(0, |n| n + 1)) as u32 + 1;
    let loc = d.location.as_ref().unwrap();
    assert_eq!(
        (loc.file.as_str(), loc.line, loc.column),
        (path, line, column),
        "{d}"
    );
    assert!(d.message.contains("tosca.nodes.Roo7"), "{d}");
}
