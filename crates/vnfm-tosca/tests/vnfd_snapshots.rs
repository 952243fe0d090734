//! Snapshots of the normalized model (and the diagnostics) of Tacker sample packages.
//!
//! Update with `INSTA_UPDATE=always cargo test -p vnfm-tosca --test integration
//! vnfd_snapshots::` and review the diff.

use crate::common;

fn snapshot_of(name: &str) -> serde_json::Value {
    let loaded = vnfm_tosca::load(&common::tacker_files(name));
    let diagnostics: Vec<String> = loaded.diagnostics.iter().map(ToString::to_string).collect();
    serde_json::json!({
        "diagnostics": diagnostics,
        "descriptor": loaded.descriptor,
    })
}

macro_rules! snapshots {
    ($($test:ident => $package:literal),* $(,)?) => {
        $(
            #[vnfm_test_env::needs(corpus)]
            #[test]
            fn $test() {
                insta::assert_json_snapshot!($package, snapshot_of($package));
            }
        )*
    };
}

snapshots! {
    v2_vm_basic_lcms_max => "v2-vm-basic-lcms-max",
    v2_vm_basic_lcms_min => "v2-vm-basic-lcms-min",
    v2_vm_server_notification => "v2-vm-server-notification",
    v2_vm_userdata_standard => "v2-vm-userdata-standard",
    v2_vm_individual_vnfc_max => "v2-vm-individual-vnfc-max",
    v2_cnf_instantiate_resources => "v2-cnf-instantiate-resources",
    v2_cnf_container_update_before => "v2-cnf-container-update-before",
    v2_helm_instantiate => "v2-helm-instantiate",
    v2_terraform_basic => "v2-terraform-basic",
    v1_vm_functional => "v1-vm-functional",
    v1_vm_single_file_vnfd_vnflcm3 => "v1-vm-single-file-vnfd-vnflcm3",
    v1_pkg_short_notation => "v1-pkg-short-notation",
    v1_pkg_meta_and_manifest => "v1-pkg-meta-and-manifest",
    v1_cnf_heal => "v1-cnf-heal",
    v1_cnf_all_kinds => "v1-cnf-all-kinds",
    mgmt_k8s_cluster_v1 => "mgmt-k8s-cluster-v1",
    mgmt_k8s_cluster_v2 => "mgmt-k8s-cluster-v2",
    mgmt_ansible => "mgmt-ansible",
    etsi_getting_started => "etsi-getting-started",
    unit_v2_sample2_cnf_manifests => "unit-v2-sample2-cnf-manifests",
}
