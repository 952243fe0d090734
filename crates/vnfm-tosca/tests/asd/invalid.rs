//! Descriptors the loader refuses or warns about: each diagnostic at its file and line.

use super::*;

#[test]
fn deployment_item_naming_an_undeclared_artifact_is_an_error() {
    let text = LISTED_ITEMS.replace("artifactId: Artifacts/infra.tf", "artifactId: nowhere");
    let files = MemFiles::new(ENTRY)
        .with(ENTRY, text.clone())
        .with("Artifacts/helmfile.yaml", "releases: []\n");
    let loaded = load(&files);
    assert_single_error(
        &loaded,
        "asd.undeclared-artifact",
        line_of(&text, "nowhere"),
    );
    assert!(errors(&loaded)[0].message.contains("`nowhere`"));
}

// ---- errors ---------------------------------------------------------------------------------

/// The O-RAN fixture with one line replaced.
fn oran_variant(from: &str, to: &str) -> (String, MemFiles) {
    let text = std::fs::read_to_string(format!("{DATA}/oran_asd.yaml")).unwrap();
    assert!(text.contains(from), "`{from}` not in the fixture");
    let text = text.replacen(from, to, 1);
    (text.clone(), oran_package().with(ENTRY, text))
}

#[test]
fn missing_asd_id_is_an_error_at_the_properties() {
    let (text, files) = oran_variant("        asdId: 3f6c2c2e-5b7a-4b53-9a55-0c1f3a7d9e21\n", "");
    let loaded = load(&files);
    // The node template's `properties:` (the first one; artifacts' are indented deeper).
    let properties_line = text
        .lines()
        .position(|l| l == "      properties:")
        .map(|i| i as u32 + 1)
        .unwrap();
    assert_single_error(&loaded, "asd.missing-property", properties_line);
    assert!(errors(&loaded)[0].message.contains("`asdId`"));
    assert!(loaded.descriptor.is_none(), "no descriptor without an id");
}

#[test]
fn absent_artifact_file_is_an_error_at_the_file() {
    let mut files = oran_package();
    files
        .files
        .remove("Artifacts/Deployment/HELM/ts-core-3.4.1.tgz");
    let text = std::fs::read_to_string(format!("{DATA}/oran_asd.yaml")).unwrap();
    let loaded = load(&files);
    assert_single_error(
        &loaded,
        "asd.artifact-file-missing",
        line_of(&text, "file: Artifacts/Deployment/HELM/ts-core-3.4.1.tgz"),
    );
    // The item is still listed (and staged); the error makes the descriptor invalid.
    assert!(loaded.valid_descriptor().is_none());
    let asd = asd_of(&loaded);
    assert_eq!(asd.deployment_items.len(), 3);
    assert_stages_partition_items(asd);
}

/// An ONAP 0.1 ASD with one item of `artifact_type` whose file is `file`.
fn one_item_asd(artifact_type: &str, file: &str) -> String {
    format!(
        "tosca_definitions_version: tosca_simple_yaml_1_2
topology_template:
  node_templates:
    app:
      type: tosca.nodes.asd
      properties:
        descriptor_id: dir-chart
        descriptor_invariant_id: dir-chart
        descriptor_version: '1'
        schema_version: '0.1'
        provider: Acme
        application_name: app
        application_version: '1'
      artifacts:
        cache:
          type: tosca.artifacts.asd.deploymentItem
          file: {file}
          properties:
            item_id: cache
            artifact_type: {artifact_type}
            deployment_order: 1
"
    )
}

fn chart_dir_files(text: &str) -> MemFiles {
    MemFiles::new(ENTRY)
        .with(ENTRY, text)
        .with(
            "Artifacts/Deployment/HELM/cache/Chart.yaml",
            "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
        )
        .with(
            "Artifacts/Deployment/HELM/cache/templates/deployment.yaml",
            "kind: Deployment\n",
        )
}

#[test]
fn a_helm_chart_item_may_name_a_chart_directory() {
    for (file, expected) in [
        (
            "Artifacts/Deployment/HELM/cache",
            "Artifacts/Deployment/HELM/cache",
        ),
        (
            "Artifacts/Deployment/HELM/cache/",
            "Artifacts/Deployment/HELM/cache",
        ),
        // Relative to the entry definitions, as TOSCA artifact paths are too.
        (
            "../Artifacts/Deployment/HELM/cache",
            "Artifacts/Deployment/HELM/cache",
        ),
    ] {
        let loaded = load(&chart_dir_files(&one_item_asd("helm_chart", file)));
        assert!(
            loaded.diagnostics.is_empty(),
            "{file}: {:#?}",
            loaded.diagnostics
        );
        let item = &asd_of(&loaded).deployment_items[0];
        assert_eq!(item.artifact_type, DeploymentArtifactType::HelmChart);
        assert_eq!(item.file, expected);
        assert!(!item.external);
        assert_eq!(item.sha256, None, "a directory has no digest");
    }
}

#[test]
fn only_a_helm_chart_item_with_a_chart_yaml_may_name_a_directory() {
    // A manifest item naming the chart's directory: its file is not in the package.
    let text = one_item_asd("crd", "Artifacts/Deployment/HELM/cache");
    let loaded = load(&chart_dir_files(&text));
    assert_single_error(
        &loaded,
        "asd.artifact-file-missing",
        line_of(&text, "file: Artifacts/Deployment/HELM/cache"),
    );
    // A chart item naming a directory without Chart.yaml (the templates' directory).
    let text = one_item_asd("helm_chart", "Artifacts/Deployment/HELM/cache/templates");
    let loaded = load(&chart_dir_files(&text));
    assert_single_error(
        &loaded,
        "asd.artifact-file-missing",
        line_of(&text, "file: Artifacts/Deployment/HELM/cache/templates"),
    );
    let help = errors(&loaded)[0].help.as_deref().unwrap_or_default();
    assert!(help.contains("Chart.yaml"), "{help}");
}

#[test]
fn non_integer_deployment_order_is_an_error() {
    let (text, files) = oran_variant("deploymentOrder: 2", "deploymentOrder: first");
    let loaded = load(&files);
    assert_single_error(
        &loaded,
        "asd.invalid-deployment-order",
        line_of(&text, "deploymentOrder: first"),
    );
    assert!(errors(&loaded)[0].message.contains("\"first\""));
    // The item is not dropped: it moves to the unordered stage.
    let asd = asd_of(&loaded);
    assert_eq!(asd.stages.last().unwrap().order, None);
    assert_eq!(asd.stages.last().unwrap().items, ["ts-core"]);
    assert_stages_partition_items(asd);
}

#[test]
fn negative_deployment_order_is_an_error() {
    let (text, files) = oran_variant("deploymentOrder: 2", "deploymentOrder: -2");
    let loaded = load(&files);
    assert_single_error(
        &loaded,
        "asd.invalid-deployment-order",
        line_of(&text, "deploymentOrder: -2"),
    );
}

#[test]
fn duplicate_deployment_item_id_is_an_error_at_the_second() {
    let (text, files) = oran_variant("deploymentItemId: ts-core", "deploymentItemId: ts-crds");
    let loaded = load(&files);
    let second = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("deploymentItemId: ts-crds"))
        .map(|(i, _)| i as u32 + 1)
        .nth(1)
        .unwrap();
    assert_single_error(&loaded, "asd.duplicate-deployment-item-id", second);
    assert!(errors(&loaded)[0].message.contains("`crds`"));
}

#[test]
fn unknown_artifact_type_is_an_error() {
    let (text, files) = oran_variant("artifactType: crd", "artifactType: kustomize");
    let loaded = load(&files);
    assert_single_error(
        &loaded,
        "asd.unknown-artifact-type",
        line_of(&text, "artifactType: kustomize"),
    );
}

#[test]
fn unknown_enum_value_is_an_error() {
    let (text, files) = oran_variant(
        "interfaceRedundancy: activePassiveBond",
        "interfaceRedundancy: sideways",
    );
    let loaded = load(&files);
    assert_single_error(&loaded, "asd.invalid-value", line_of(&text, "sideways"));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn unknown_property_is_a_warning_against_shipped_or_built_in_types() {
    // Built-in O-RAN types (the standard types file is not shipped).
    let (text, files) = oran_variant("asdProvider:", "asdProvidr: typo\n        asdProvider:");
    let loaded = load(&files);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    assert_eq!(codes(&loaded.diagnostics), ["asd.unknown-property"]);
    let loc = loaded.diagnostics[0].location.as_ref().unwrap();
    assert_eq!(loc.line, line_of(&text, "asdProvidr"));
    // Kept, not dropped.
    assert_eq!(asd_of(&loaded).extensions["asdProvidr"], "typo");

    // The ONAP types file shipped in the package, nested in a data type.
    let text = String::from_utf8(corpus("onap-so-cnfm_asd.yaml"))
        .unwrap()
        .replacen(
            "nad_namespace: myNamespace2",
            "nad_namespaces: myNamespace2",
            1,
        );
    let loaded = load(&onap_package().with(ENTRY, text.clone()));
    let unknown: Vec<&Diagnostic> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "asd.unknown-property")
        .collect();
    assert_eq!(unknown.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(
        unknown[0].location.as_ref().unwrap().line,
        line_of(&text, "nad_namespaces")
    );
    assert!(
        unknown[0]
            .message
            .contains("tosca.datatypes.asd.paramMappings")
    );
    assert!(unknown[0].message.contains(TYPES));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn missing_types_import_is_a_warning_and_built_in_types_apply() {
    let mut files = onap_package();
    files.files.remove(TYPES);
    let loaded = load(&files);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let codes = codes(&loaded.diagnostics);
    assert!(codes.contains(&"asd.import-missing"), "{codes:?}");
    assert!(!codes.contains(&"asd.quirk.types-at-column-0"));
    assert!(!codes.contains(&"asd.unknown-property"), "{codes:?}");
    assert_eq!(loaded.descriptor, load(&onap_package()).descriptor);
}

#[test]
fn hostile_shapes_give_diagnostics_not_panics() {
    let cases = [
        "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    a:\n      type: tosca.nodes.asd.Asd\n      properties: [1, 2]\n      artifacts: nope\n",
        "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    a:\n      type: tosca.nodes.asd.Asd\n      properties:\n        asdId: {x: 1}\n        asdExtCpd: {not: a list}\n        enhancedClusterCapabilities: [1]\n        deploymentItems: 7\n",
        "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    a:\n      type: tosca.nodes.asd.Asd\n      properties:\n        asdId: x\n        asdExtCpd: [7, {id: [1]}, {id: a, networkInterfaceRealizationRequirements: {trunkMode: maybe, interfaceOption: 3}}]\n        enhancedClusterCapabilities: {clusterLabel: [{a: 1, b: 2}], requiredPlugin: [{}], requiredCustomResource: [x]}\n      artifacts:\n        x: {type: tosca.artifacts.asd.DeploymentItem, properties: {deploymentOrder: 99999999999}}\n        y: just/a/path\n",
        "tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    a:\n      type: tosca.nodes.asd.Asd\n      properties:\n        asdId: x\n      artifacts:\n        x: {type: tosca.artifacts.asd.DeploymentItem, file: x.tgz, properties: {artifactType: crd, deploymentOrder: 99999999999, deploymentParameter: {a: 1}}}\n        y: {type: tosca.artifacts.asd.DeploymentItem, file: ../../etc/passwd, properties: {artifactType: crd}}\n",
        "tosca_definitions_version: tosca_simple_yaml_1_3\nimports: [{a: {file: ../../../x}}, 5, {file: []}]\ntopology_template:\n  node_templates:\n    a: {type: tosca.nodes.asd.Asd, artifacts: {}}\n",
        "topology_template: 5\n",
        "[]\n",
        "",
    ];
    for text in cases {
        // Straight to the ASD reader: these do not all look like an ASD to `load`.
        let files = MemFiles::new(ENTRY)
            .with(ENTRY, text)
            .with("x.tgz", b"x".to_vec());
        let loaded = vnfm_tosca::asd::load(&files);
        // Each has at least one error; some come back without a descriptor.
        assert!(loaded.has_errors(), "{text}\n{:#?}", loaded.diagnostics);
        for d in &loaded.diagnostics {
            assert!(!d.message.is_empty());
        }
    }
}

#[test]
fn wrongly_typed_id_is_reported_once() {
    let (text, files) = oran_variant(
        "asdId: 3f6c2c2e-5b7a-4b53-9a55-0c1f3a7d9e21",
        "asdId: [3f6c2c2e]",
    );
    let loaded = load(&files);
    assert_single_error(&loaded, "asd.type-mismatch", line_of(&text, "asdId: ["));
    assert!(loaded.descriptor.is_none());
}

#[test]
fn second_asd_node_and_foreign_node_are_reported() {
    let text = std::fs::read_to_string(format!("{DATA}/oran_asd.yaml"))
        .unwrap()
        .replacen(
            "  node_templates:\n",
            "  node_templates:\n    other:\n      type: tosca.nodes.Compute\n",
            1,
        )
        + "    twin:\n      type: tosca.nodes.asd.Asd\n";
    let loaded = load(&oran_package().with(ENTRY, text.clone()));
    assert_eq!(
        codes(&loaded.diagnostics),
        ["asd.ignored-node-template", "asd.multiple-asd-nodes"]
    );
    // The first ASD node in document order is read.
    assert_eq!(asd_of(&loaded).node_template, "TrafficSteeringApp");
    let second = loaded.diagnostics[1].location.as_ref().unwrap();
    assert_eq!(second.line, line_of(&text, "twin:"));
}
