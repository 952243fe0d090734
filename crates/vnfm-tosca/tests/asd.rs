//! Application Service Descriptor reading: the published ONAP / O-RAN SC samples, an O-RAN 2.0
//! descriptor, error cases and the stage grouping.

use proptest::prelude::*;
use vnfm_descriptor::asd::{
    Asd, AsdDialect, ClusterLabel, DeploymentArtifactType, InterfaceOption, InterfaceRedundancy,
    InterfaceType, Ipam, LabelRequirement, RequiredCustomResource, RequiredPlugin,
};
use vnfm_descriptor::{Diagnostic, Severity};
use vnfm_tosca::{Loaded, MemFiles, load};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/asd");
const ENTRY: &str = "Definitions/asd.yaml";
const TYPES: &str = "Definitions/asd_types.yaml";

#[path = "asd/invalid.rs"]
mod invalid;

fn corpus(name: &str) -> Vec<u8> {
    let path = vnfm_test_env::corpus("asd").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Bytes standing in for a chart archive: distinct per name so digests differ.
fn fake_chart(name: &str) -> Vec<u8> {
    format!("fake chart archive {name}").into_bytes()
}

fn onap_package() -> MemFiles {
    MemFiles::new(ENTRY)
        .with(ENTRY, corpus("onap-so-cnfm_asd.yaml"))
        .with(TYPES, corpus("onap-so-cnfm_asd_types.yaml"))
        .with("asd.mf", corpus("onap-so-cnfm_asd.mf"))
        .with(
            "TOSCA-Metadata/TOSCA.meta",
            corpus("onap-so-cnfm_asd-TOSCA.meta"),
        )
        .with(
            "Artifacts/Deployment/HELM/sampleapp-db-operator-helm.tgz",
            fake_chart("sampleapp-db-operator-helm"),
        )
        .with(
            "Artifacts/Deployment/HELM/sampleapp-services-helm.tgz",
            fake_chart("sampleapp-services-helm"),
        )
}

fn rapp_all_package() -> MemFiles {
    MemFiles::new(ENTRY)
        .with(ENTRY, corpus("oran-sc-rappmanager_rapp-all_asd.yaml"))
        .with(TYPES, corpus("oran-sc-rappmanager_asd_types_rapp.yaml"))
        .with("asd.mf", corpus("oran-sc-rappmanager_rapp-all_asd.mf"))
        .with(
            "Artifacts/Deployment/HELM/hello-world-chart-0.1.0.tgz",
            fake_chart("hello-world-chart-0.1.0"),
        )
        .with(
            "Artifacts/Deployment/HELM/hello-world-sme-invoker-0.1.0.tgz",
            fake_chart("hello-world-sme-invoker-0.1.0"),
        )
}

fn energy_saving_package() -> MemFiles {
    MemFiles::new(ENTRY)
        .with(ENTRY, corpus("oran-sc-rappmanager_energy-saving_asd.yaml"))
        .with(TYPES, corpus("oran-sc-rappmanager_asd_types_rapp.yaml"))
        .with(
            "Artifacts/Deployment/HELM/energy-saving-rapp-0.2.16.tgz",
            fake_chart("energy-saving-rapp-0.2.16"),
        )
}

fn oci_index(refs: &[(&str, &str)]) -> Vec<u8> {
    let manifests: Vec<serde_json::Value> = refs
        .iter()
        .map(|(digest, name)| {
            serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": 1024,
                "annotations": { "org.opencontainers.image.ref.name": name },
            })
        })
        .collect();
    serde_json::to_vec_pretty(&serde_json::json!({ "schemaVersion": 2, "manifests": manifests }))
        .unwrap()
}

const TS_CORE_DIGEST: &str =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const TS_OPERATOR_DIGEST: &str =
    "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn oran_package() -> MemFiles {
    let asd = std::fs::read(format!("{DATA}/oran_asd.yaml")).unwrap();
    MemFiles::new(ENTRY)
        .with(ENTRY, asd)
        .with(
            "TOSCA-Metadata/TOSCA.meta",
            "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/asd.yaml\nETSI-Entry-Manifest: asd.mf\n",
        )
        .with(
            "asd.mf",
            "metadata:\n  application_name: traffic-steering\n  entry_definition_type: asd\n\nSource: Definitions/asd.yaml\nSource: images/ts-core/oci-layout\nSource: images/ts-core/index.json\n",
        )
        .with("Artifacts/Deployment/CRD/ts-crds.yaml", "kind: CustomResourceDefinition\n")
        .with(
            "Artifacts/Deployment/HELM/ts-operator-1.0.0.tgz",
            fake_chart("ts-operator-1.0.0"),
        )
        .with(
            "Artifacts/Deployment/HELM/ts-core-3.4.1.tgz",
            fake_chart("ts-core-3.4.1"),
        )
        .with("images/ts-core/oci-layout", r#"{"imageLayoutVersion":"1.0.0"}"#)
        .with(
            "images/ts-core/index.json",
            oci_index(&[
                (TS_CORE_DIGEST, "registry.example.com/ts/ts-core:3.4.1"),
                (TS_OPERATOR_DIGEST, "registry.example.com/ts/ts-operator:1.0.0"),
            ]),
        )
}

fn asd_of(loaded: &Loaded) -> &Asd {
    loaded
        .descriptor
        .as_ref()
        .and_then(|d| d.as_asd())
        .unwrap_or_else(|| panic!("no ASD; diagnostics: {:#?}", loaded.diagnostics))
}

fn codes(diags: &[Diagnostic]) -> Vec<&str> {
    diags.iter().map(|d| d.code.as_ref()).collect()
}

fn errors(loaded: &Loaded) -> Vec<&Diagnostic> {
    loaded
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
}

/// The 1-based line of the only line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> u32 {
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "`{needle}` must be on exactly one line");
    lines[0] as u32
}

/// Asserts there is exactly one error, with `code`, in the entry file at `line`.
fn assert_single_error(loaded: &Loaded, code: &str, line: u32) {
    let errs = errors(loaded);
    assert_eq!(errs.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(errs[0].code, code, "{}", errs[0]);
    let loc = errs[0].location.as_ref().expect("error has a location");
    assert_eq!((loc.file.as_str(), loc.line), (ENTRY, line), "{}", errs[0]);
    assert!(loc.column > 0, "{}", errs[0]);
}

/// Every deployment item is in exactly one stage, stages ascend, the unordered stage is last.
fn assert_stages_partition_items(asd: &Asd) {
    let mut staged: Vec<&str> = asd
        .stages
        .iter()
        .flat_map(|s| s.items.iter().map(String::as_str))
        .collect();
    let mut items: Vec<&str> = asd.deployment_items.iter().map(|i| i.id.as_str()).collect();
    staged.sort_unstable();
    items.sort_unstable();
    assert_eq!(
        staged, items,
        "an item is missing from the stages or staged twice"
    );
    let orders: Vec<Option<u32>> = asd.stages.iter().map(|s| s.order).collect();
    let ordered: Vec<u32> = orders.iter().flatten().copied().collect();
    assert!(ordered.windows(2).all(|w| w[0] < w[1]), "{orders:?}");
    if let Some(pos) = orders.iter().position(Option::is_none) {
        assert_eq!(pos, orders.len() - 1, "the unordered stage must be last");
    }
    for stage in &asd.stages {
        for id in &stage.items {
            let item = asd.deployment_item(id).unwrap();
            assert_eq!(item.deployment_order, stage.order, "{id}");
        }
    }
}

// ---- published samples ----------------------------------------------------------------------

#[vnfm_test_env::needs(corpus)]
#[test]
fn onap_sample_reads_into_the_normalized_model() {
    let loaded = load(&onap_package());
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let asd = asd_of(&loaded);
    assert_eq!(asd.asd_id, "123e4567-e89b-12d3-a456-426614174000");
    assert_eq!(asd.dialect, AsdDialect::Onap01);
    assert_eq!(asd.tosca_definitions_version, "tosca_simple_yaml_1_2");
    assert_eq!(asd.node_template, "applicationServiceDescriptor");
    assert_eq!(
        asd.invariant_id.as_deref(),
        Some("123e4yyy-e89b-12d3-a456-426614174abc")
    );
    // YAML floats in string properties keep their written form.
    assert_eq!(asd.asd_version, "1.0");
    assert_eq!(asd.schema_version.as_deref(), Some("2.0"));
    assert_eq!(asd.application_version, "2.3");
    assert_eq!(asd.provider, "MyCompany");
    assert_eq!(asd.application_name, "SampleApp");
    assert_eq!(asd.function_description.as_deref(), Some("my description"));
    assert_eq!(asd.description.as_deref(), Some("Sample Application"));

    // Two items in two stages, in deployment order.
    let items: Vec<(&str, &str, Option<u32>)> = asd
        .deployment_items
        .iter()
        .map(|i| (i.id.as_str(), i.artifact_name.as_str(), i.deployment_order))
        .collect();
    assert_eq!(
        items,
        [
            ("1", "sampleapp-db", Some(1)),
            ("2", "sampleapp-services", Some(2))
        ]
    );
    let stages: Vec<(Option<u32>, Vec<&str>)> = asd
        .stages
        .iter()
        .map(|s| (s.order, s.items.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(stages, [(Some(1), vec!["1"]), (Some(2), vec!["2"])]);
    assert_stages_partition_items(asd);
    let db = asd.deployment_item("1").unwrap();
    assert_eq!(db.artifact_type, DeploymentArtifactType::HelmChart);
    assert_eq!(
        db.file,
        "Artifacts/Deployment/HELM/sampleapp-db-operator-helm.tgz"
    );
    assert_eq!(
        db.lifecycle_parameters,
        [
            ".Values.db.fullBackupInterval",
            ".Values.db.walConsolidationInterval"
        ]
    );
    assert_eq!(db.sha256.as_deref().map(str::len), Some(64));
    assert_eq!(
        asd.deployment_item("2").unwrap().lifecycle_parameters,
        [".Values.app.initialWebReplicas"]
    );

    // External connection points, with ONAP enum spellings mapped to O-RAN 2.0 ones.
    assert_eq!(asd.ext_cpds.len(), 2);
    let web = asd.ext_cpd("1").unwrap();
    assert_eq!(web.description.as_deref(), Some("webpage-service"));
    assert_eq!(web.virtual_link_requirement.as_deref(), Some("endUser"));
    assert_eq!(
        web.resource_mapping.as_deref(),
        Some("my resource manifest")
    );
    let nir = web
        .network_interface_realization_requirements
        .as_ref()
        .unwrap();
    assert!(!nir.trunk_mode);
    assert_eq!(nir.ipam, Ipam::Orchestrated);
    assert_eq!(nir.interface_type, InterfaceType::DirectUserspace);
    assert_eq!(
        nir.interface_options,
        [InterfaceOption::Virtio, InterfaceOption::Memif]
    );
    assert_eq!(
        nir.interface_redundancy,
        Some(InterfaceRedundancy::ActivePassiveBond)
    );
    assert_eq!(nir.nic_options, ["nic id1", "nic id2"]);
    let ipm = web.input_param_mappings.as_ref().unwrap();
    assert_eq!(ipm.loadbalancer_ip.as_deref(), Some("1.2.3.4"));
    assert_eq!(ipm.external_ips, ["5.6.7.8", "10.11.12.13"]);
    assert_eq!(ipm.nad_names, ["nad name 1", "nad name 2"]);
    assert_eq!(ipm.nad_namespace.as_deref(), Some("myNamespace"));
    let backhaul = asd.ext_cpd("2").unwrap();
    assert!(
        backhaul
            .network_interface_realization_requirements
            .as_ref()
            .unwrap()
            .trunk_mode
    );

    // Cluster capabilities.
    let ecc = asd.enhanced_cluster_capabilities.as_ref().unwrap();
    assert_eq!(ecc.min_kernel_version.as_deref(), Some("1.2.3"));
    assert_eq!(ecc.required_kernel_modules, ["ip6_tables", "cryptd"]);
    assert_eq!(ecc.conflicting_kernel_modules, ["nf_nat"]);
    assert_eq!(
        ecc.required_custom_resources,
        [
            RequiredCustomResource {
                kind: "myKind".into(),
                api_version: Some("myVersion".into())
            },
            RequiredCustomResource {
                kind: "mySecondKind".into(),
                api_version: Some("mySecondVersion".into())
            },
        ]
    );
    assert_eq!(
        ecc.cluster_labels,
        [
            ClusterLabel {
                label: "label 1".into(),
                requirement: LabelRequirement::Mandatory
            },
            ClusterLabel {
                label: "label 2".into(),
                requirement: LabelRequirement::Mandatory
            },
        ]
    );
    assert_eq!(
        ecc.required_plugins,
        [
            RequiredPlugin {
                name: "plugin1Name".into(),
                version: Some("1.2.3".into())
            },
            RequiredPlugin {
                name: "plugin2Name".into(),
                version: Some("4.5.6".into())
            },
        ]
    );
    assert!(asd.images.is_empty());
    assert!(asd.extensions.is_empty());
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn onap_sample_warns_with_the_named_quirks_only() {
    let loaded = load(&onap_package());
    assert_eq!(
        codes(&loaded.diagnostics),
        [
            "asd.quirk.crlf-line-endings",
            "asd.quirk.types-at-column-0",
            "asd.quirk.types-at-column-0",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
            "asd.quirk.item-id-spelling",
            "asd.quirk.item-id-spelling",
        ]
    );
    let text = String::from_utf8(corpus("onap-so-cnfm_asd.yaml")).unwrap();
    let at = |i: usize| {
        let l = loaded.diagnostics[i].location.as_ref().unwrap();
        (l.file.as_str(), l.line)
    };
    assert_eq!(at(1), (TYPES, 3)); // data_types:
    assert_eq!(at(2).0, TYPES);
    assert_eq!(at(3), (ENTRY, line_of(&text, "descriptor_version: 1.0")));
    assert_eq!(at(6), (ENTRY, line_of(&text, "itemId: 1")));
    assert!(loaded.diagnostics[3].message.contains("\"1.0\""));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn rapp_all_items_without_order_form_the_final_stage() {
    let loaded = load(&rapp_all_package());
    assert_eq!(
        codes(&loaded.diagnostics),
        [
            "asd.quirk.crlf-line-endings",
            "asd.quirk.types-at-column-0",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
        ]
    );
    let asd = asd_of(&loaded);
    assert_eq!(asd.asd_id, "123e4567-e89b-12d3-a456-426614174000");
    assert_eq!(asd.application_name, "rapp-all");
    assert_eq!(asd.application_version, "1.0");
    assert_eq!(asd.deployment_items.len(), 2);
    assert_eq!(asd.stages.len(), 1);
    assert_eq!(asd.stages[0].order, None);
    assert_eq!(asd.stages[0].items, ["1", "2"]);
    assert_stages_partition_items(asd);
    // Vendor properties declared by the rApp types stay with the item.
    let item = asd.deployment_item("2").unwrap();
    assert_eq!(item.artifact_name, "helloworld-sme-invoker");
    assert_eq!(item.extensions["target_server"], "chartmuseum");
    assert_eq!(
        item.extensions["target_server_uri"],
        "UPDATE_THIS_CHART_MUSEUM_POST_CHARTS_URI"
    );
    assert!(asd.ext_cpds.is_empty());
    assert!(asd.enhanced_cluster_capabilities.is_none());
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn energy_saving_sample_without_trailing_newline_reads() {
    let text = corpus("oran-sc-rappmanager_energy-saving_asd.yaml");
    assert_ne!(
        text.last(),
        Some(&b'\n'),
        "the sample ends without a newline"
    );
    let loaded = load(&energy_saving_package());
    assert_eq!(
        codes(&loaded.diagnostics),
        [
            "asd.quirk.crlf-line-endings",
            "asd.quirk.types-at-column-0",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
            "asd.quirk.float-for-string",
        ]
    );
    let asd = asd_of(&loaded);
    assert_eq!(asd.asd_id, "364545c9-f1b1-48bb-a774-2b999e47692d");
    assert_eq!(asd.stages.len(), 1);
    assert_eq!(asd.stages[0].items, ["1"]);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn corpus_samples_snapshot() {
    for (name, files) in [
        ("onap_so_cnfm", onap_package()),
        ("rapp_all", rapp_all_package()),
        ("energy_saving", energy_saving_package()),
    ] {
        let loaded = load(&files);
        insta::assert_json_snapshot!(name, asd_of(&loaded));
    }
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn crlf_and_lf_variants_read_identically() {
    let crlf = load(&onap_package());
    let lf_text = String::from_utf8(corpus("onap-so-cnfm_asd.yaml"))
        .unwrap()
        .replace("\r\n", "\n");
    let lf = load(&onap_package().with(ENTRY, lf_text));
    assert_eq!(crlf.descriptor, lf.descriptor);
    assert_eq!(crlf.diagnostics[0].code, "asd.quirk.crlf-line-endings");
    assert_eq!(crlf.diagnostics[1..], lf.diagnostics[..]);

    // The other way round: an LF types file turned CRLF adds one warning naming it.
    let types_crlf = String::from_utf8(corpus("oran-sc-rappmanager_asd_types_rapp.yaml"))
        .unwrap()
        .replace('\n', "\r\n");
    let base = load(&rapp_all_package());
    let variant = load(&rapp_all_package().with(TYPES, types_crlf));
    assert_eq!(base.descriptor, variant.descriptor);
    let extra: Vec<&Diagnostic> = variant
        .diagnostics
        .iter()
        .filter(|d| !base.diagnostics.contains(d))
        .collect();
    assert_eq!(extra.len(), 1, "{extra:#?}");
    assert_eq!(extra[0].code, "asd.quirk.crlf-line-endings");
    assert_eq!(extra[0].location.as_ref().unwrap().file, TYPES);
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn sdc_reemitted_node_type_serves_as_types_file() {
    // ONAP SDC re-emits the ASD node type in its own template, importing SDC-internal files.
    let loaded =
        load(&onap_package().with(TYPES, corpus("onap-so-cnfm_sdc-resource-Asd-template.yml")));
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let missing = codes(&loaded.diagnostics)
        .into_iter()
        .filter(|c| *c == "asd.import-missing")
        .count();
    assert_eq!(missing, 7, "{:#?}", loaded.diagnostics);
    assert_eq!(
        loaded.descriptor,
        load(&onap_package()).descriptor,
        "the model does not depend on which types file declares the properties"
    );
}

// ---- O-RAN 2.0 ------------------------------------------------------------------------------

#[test]
fn oran_descriptor_reads_with_shared_order_in_one_stage() {
    let loaded = load(&oran_package());
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let asd = asd_of(&loaded);
    assert_eq!(asd.dialect, AsdDialect::Oran20);
    assert_eq!(asd.asd_id, "3f6c2c2e-5b7a-4b53-9a55-0c1f3a7d9e21");
    assert_eq!(asd.asd_version, "1.2.0");
    // No schema version property in O-RAN 2.0: the imported standard types name it.
    assert_eq!(asd.schema_version.as_deref(), Some("02.00.00"));
    assert_eq!(asd.application_version, "3.4.1");
    assert_eq!(
        asd.application_info_name.as_deref(),
        Some("Traffic Steering")
    );
    assert_eq!(
        asd.function_description.as_deref(),
        Some("Steers UE traffic between cells")
    );

    // Three items, two sharing order 1: both in stage 1, none dropped.
    assert_eq!(asd.deployment_items.len(), 3);
    let stages: Vec<(Option<u32>, Vec<&str>)> = asd
        .stages
        .iter()
        .map(|s| (s.order, s.items.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        stages,
        [
            (Some(1), vec!["ts-crds", "ts-operator"]),
            (Some(2), vec!["ts-core"]),
        ]
    );
    assert_stages_partition_items(asd);
    assert_eq!(
        asd.deployment_item("ts-crds").unwrap().artifact_type,
        DeploymentArtifactType::Crd
    );
    let core = asd.deployment_item("ts-core").unwrap();
    assert_eq!(
        core.lifecycle_parameters,
        [
            ".Values.image.repository",
            ".Values.image.tag",
            ".Values.e2.nadLeft"
        ]
    );
    assert_eq!(core.description.as_deref(), Some("The application itself"));

    let e2 = asd.ext_cpd("e2").unwrap();
    let nir = e2
        .network_interface_realization_requirements
        .as_ref()
        .unwrap();
    assert!(nir.trunk_mode);
    assert_eq!(nir.interface_type, InterfaceType::DirectUserspace);
    assert_eq!(
        nir.interface_redundancy,
        Some(InterfaceRedundancy::ActivePassiveBond)
    );
    let ipm = e2.input_param_mappings.as_ref().unwrap();
    // A single string in O-RAN 2.0, a list in the model.
    assert_eq!(ipm.external_ips, ["ts-core:service.externalIPs"]);
    assert_eq!(ipm.nad_names, ["ts-core:e2.nadLeft", "ts-core:e2.nadRight"]);
    // Defaults apply where the O-RAN requirements are absent.
    assert!(
        asd.ext_cpd("oam")
            .unwrap()
            .network_interface_realization_requirements
            .is_none()
    );

    let ecc = asd.enhanced_cluster_capabilities.as_ref().unwrap();
    assert_eq!(ecc.required_custom_resources[1].api_version, None);
    assert_eq!(
        ecc.cluster_labels
            .iter()
            .map(|l| (l.label.as_str(), l.requirement))
            .collect::<Vec<_>>(),
        [
            (
                "feature.node.kubernetes.io/network-sriov.capable=true",
                LabelRequirement::Mandatory
            ),
            (
                "topology.kubernetes.io/zone=edge",
                LabelRequirement::Preferred
            ),
        ]
    );
    assert_eq!(ecc.required_plugins[0].version.as_deref(), Some("4.0"));
    assert_eq!(ecc.required_plugins[1].version, None);

    assert_eq!(asd.executable_images.len(), 1);
    assert_eq!(asd.executable_images[0].location, "images/ts-core");
    assert!(!asd.executable_images[0].external);

    let images: Vec<(&str, Option<&str>, &str)> = asd
        .images
        .iter()
        .map(|i| (i.layout.as_str(), i.ref_name.as_deref(), i.digest.as_str()))
        .collect();
    assert_eq!(
        images,
        [
            (
                "images/ts-core",
                Some("registry.example.com/ts/ts-core:3.4.1"),
                TS_CORE_DIGEST
            ),
            (
                "images/ts-core",
                Some("registry.example.com/ts/ts-operator:1.0.0"),
                TS_OPERATOR_DIGEST
            ),
        ]
    );
}

#[test]
fn oran_descriptor_snapshot() {
    let loaded = load(&oran_package());
    insta::assert_json_snapshot!("oran_traffic_steering", asd_of(&loaded));
}

const LISTED_ITEMS: &str = "tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - oran_asd_types_v02.00.00
topology_template:
  node_templates:
    app:
      type: tosca.nodes.asd.Asd
      properties:
        asdId: listed
        asdSchemaVersion: 2.0.0
        asdVersion: '1'
        asdProvider: Acme
        asdApplicationName: listed
        asdApplicationVersion: '1'
        asdFunctionDescription: items given as a property list
        deploymentItems:
          - deploymentItemId: base
            artifactType: helmfile
            artifactId: baseArtifact
            deploymentOrder: 0
            lifecycleParameters: [.Values.a]
          - deploymentItemId: tf
            artifactType: terraform
            artifactId: Artifacts/infra.tf
      artifacts:
        baseArtifact:
          type: tosca.artifacts.asd.DeploymentItem
          file: Artifacts/helmfile.yaml
";

#[test]
fn deployment_items_listed_as_a_property_resolve_their_artifacts() {
    let files = MemFiles::new(ENTRY)
        .with(ENTRY, LISTED_ITEMS)
        .with("Artifacts/helmfile.yaml", "releases: []\n")
        .with("Artifacts/infra.tf", "terraform {}\n");
    let loaded = load(&files);
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let asd = asd_of(&loaded);
    assert_eq!(asd.schema_version.as_deref(), Some("2.0.0"));
    assert_eq!(
        asd.function_description.as_deref(),
        Some("items given as a property list")
    );
    let items: Vec<(&str, &str, &str, DeploymentArtifactType)> = asd
        .deployment_items
        .iter()
        .map(|i| {
            (
                i.id.as_str(),
                i.artifact_name.as_str(),
                i.file.as_str(),
                i.artifact_type,
            )
        })
        .collect();
    // The artifact named by `artifactId` is not read a second time as its own item.
    assert_eq!(
        items,
        [
            (
                "base",
                "baseArtifact",
                "Artifacts/helmfile.yaml",
                DeploymentArtifactType::Helmfile
            ),
            (
                "tf",
                "Artifacts/infra.tf",
                "Artifacts/infra.tf",
                DeploymentArtifactType::Terraform
            ),
        ]
    );
    assert_eq!(asd.stages.len(), 2);
    assert_eq!((asd.stages[0].order, asd.stages[1].order), (Some(0), None));
    assert_stages_partition_items(asd);
}

// ---- stages never drop an item --------------------------------------------------------------

fn generated_asd(orders: &[Option<u8>]) -> (String, MemFiles) {
    let mut text = String::from(
        "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    app:\n      type: tosca.nodes.asd.Asd\n      properties:\n        asdId: gen\n        asdVersion: '1'\n        asdProvider: p\n        asdApplicationName: gen\n        asdApplicationSwVersion: '1'\n      artifacts:\n",
    );
    let mut files = MemFiles::new(ENTRY);
    for (i, order) in orders.iter().enumerate() {
        let file = format!("Artifacts/c{i}.tgz");
        text.push_str(&format!(
            "        a{i}:\n          type: tosca.artifacts.asd.DeploymentItem\n          file: {file}\n          properties:\n            deploymentItemId: item{i}\n            artifactType: helm_chart\n"
        ));
        if let Some(o) = order {
            text.push_str(&format!("            deploymentOrder: {o}\n"));
        }
        files = files.with(file, fake_chart(&i.to_string()));
    }
    (text.clone(), files.with(ENTRY, text))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_item_lands_in_exactly_one_stage(
        orders in proptest::collection::vec(proptest::option::of(0u8..4), 1..10)
    ) {
        let (_, files) = generated_asd(&orders);
        let loaded = load(&files);
        prop_assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
        let asd = asd_of(&loaded);
        prop_assert_eq!(asd.deployment_items.len(), orders.len());
        assert_stages_partition_items(asd);
        let mut distinct: Vec<u8> = orders.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let unordered = usize::from(orders.iter().any(Option::is_none));
        prop_assert_eq!(asd.stages.len(), distinct.len() + unordered);
    }
}
