//! Policies, definitions versions, functions and the normalized models.

use super::*;

#[test]
fn single_file_vnfd_without_substitution_is_one_flavour() {
    let single = format!(
        "{}      requirements: []\n",
        TOP.replace("  - types.yaml\n  - df_small.yaml\n", "  - types.yaml\n")
            .replace(
                "flavour_id: { get_input: selected_flavour }",
                "flavour_id: small"
            )
    );
    let df_nodes = &DF[DF.find("    VDU1:").unwrap()..];
    let single = format!(
        "{}{}",
        single.replace("      requirements: []\n", ""),
        df_nodes
    );
    let files = MemFiles::new("Definitions/top.yaml")
        .with("Definitions/top.yaml", single)
        .with("Definitions/types.yaml", TYPES);
    let loaded = load(&files);
    let v = vnfd(&loaded);
    assert_eq!(v.flavours.len(), 1);
    assert_eq!(v.flavours[0].id, "small");
    assert_eq!(v.flavours[0].file, "Definitions/top.yaml");
    assert_eq!(v.flavours[0].vdus[0].id, "VDU1");
    assert_eq!(v.flavours[0].vdu_cps[0].vdu.as_deref(), Some("VDU1"));
}

#[test]
fn policies_scaling_levels_and_placement() {
    let policies = r#"  groups:
    grp:
      type: tosca.groups.nfv.PlacementGroup
      properties: { description: g }
      members: [ VDU1 ]
  policies:
    - aspects:
        type: tosca.policies.nfv.ScalingAspects
        properties:
          aspects:
            big: { name: big, description: b, max_scale_level: 3, step_deltas: [ d1, d2 ] }
    - deltas:
        type: tosca.policies.nfv.VduScalingAspectDeltas
        properties:
          aspect: big
          deltas: { d1: { number_of_instances: 1 }, d2: { number_of_instances: 2 } }
        targets: [ VDU1 ]
    - levels:
        type: tosca.policies.nfv.InstantiationLevels
        properties:
          levels:
            l1: { description: one, scale_info: { big: { scale_level: 0 } } }
            l2: { description: two, scale_info: { big: { scale_level: 3 } } }
          default_level: l1
    - vdu_levels:
        type: tosca.policies.nfv.VduInstantiationLevels
        properties:
          levels: { l1: { number_of_instances: 1 }, l2: { number_of_instances: 7 } }
        targets: [ VDU1 ]
    - initial:
        type: tosca.policies.nfv.VduInitialDelta
        properties: { initial_delta: { number_of_instances: 1 } }
        targets: [ VDU1 ]
    - anti:
        type: tosca.policies.nfv.AntiAffinityRule
        properties: { scope: nfvi_node }
        targets: [ grp ]
"#;
    let files = base().with("Definitions/df_small.yaml", format!("{DF}{policies}"));
    let loaded = load(&files);
    let f = &vnfd(&loaded).flavours[0];
    let a = f.scaling_aspect("big").unwrap();
    assert_eq!(a.max_scale_level, 3);
    assert_eq!(a.step_deltas, ["d1", "d2"]);
    assert_eq!(a.vdu_deltas["VDU1"]["d2"], 2);
    assert_eq!(a.step_delta(2), Some("d2"));
    assert_eq!(
        f.instantiation_level("l2").unwrap().vdu_instances["VDU1"],
        7
    );
    assert_eq!(f.instantiation_level("l2").unwrap().scale_levels["big"], 3);
    assert_eq!(f.default_instantiation_level.as_deref(), Some("l1"));
    assert_eq!(f.vdu("VDU1").unwrap().initial_delta, Some(1));
    assert_eq!(f.placement_rules.len(), 1);
    assert_eq!(f.placement_rules[0].scope, "nfvi_node");
    assert_eq!(f.placement_rules[0].vdus, ["VDU1"]);

    // A delta for an aspect nobody declares is an error at the aspect name.
    let bad = format!("{DF}{}", policies.replace("aspect: big", "aspect: huge"));
    let files = base().with("Definitions/df_small.yaml", bad.clone());
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-scaling-aspect");
    assert_at(d, "Definitions/df_small.yaml", at(&bad, "huge"));
}

#[test]
fn policy_target_of_the_wrong_type() {
    let policies = "  policies:\n    - initial:\n        type: tosca.policies.nfv.VduInitialDelta\n        properties: { initial_delta: { number_of_instances: 1 } }\n        targets: [ CP1 ]\n";
    let df = format!("{DF}{policies}");
    let files = base().with("Definitions/df_small.yaml", df.clone());
    let loaded = load(&files);
    let d = find(&loaded, "tosca.invalid-target");
    assert_at(d, "Definitions/df_small.yaml", at(&df, "CP1 ]"));
}

#[test]
fn policies_as_a_map_are_a_quirk() {
    let policies = "  policies:\n    initial:\n      type: tosca.policies.nfv.VduInitialDelta\n      properties: { initial_delta: { number_of_instances: 2 } }\n      targets: [ VDU1 ]\n";
    let files = base().with("Definitions/df_small.yaml", format!("{DF}{policies}"));
    let loaded = load(&files);
    let d = find(&loaded, "tosca.quirk.policies-as-map");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(vnfd(&loaded).flavours[0].vdus[0].initial_delta, Some(2));
}

#[test]
fn empty_list_operation_is_a_quirk_and_not_a_hook() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "terminate_end: hook",
        "terminate_end: []",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.quirk.empty-list-operation");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "terminate_end"));
    assert!(vnfd(&loaded).flavours[0].hook("terminate_end").is_none());
}

#[test]
fn yaml_errors_carry_positions() {
    let (files, _) = variant("Definitions/df_small.yaml", "name: vdu1", "name: [vdu1");
    let loaded = load(&files);
    let d = loaded
        .diagnostics
        .iter()
        .find(|d| d.code.starts_with("yaml."))
        .expect("a YAML diagnostic");
    assert_eq!(
        d.location.as_ref().unwrap().file,
        "Definitions/df_small.yaml"
    );
    assert!(d.location.as_ref().unwrap().line > 0);
    assert!(loaded.descriptor.is_none());
}

#[test]
fn missing_definitions_version() {
    let (files, _) = variant(
        "Definitions/types.yaml",
        "tosca_definitions_version: tosca_simple_yaml_1_3\n",
        "",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.missing-entry-definitions-field");
    assert_at(d, "Definitions/types.yaml", (1, 1));
}

#[test]
fn unsupported_definitions_version() {
    let (files, text) = variant(
        "Definitions/top.yaml",
        "tosca_simple_yaml_1_3",
        "tosca_simple_yaml_2_0",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unsupported-version");
    assert_at(
        d,
        "Definitions/top.yaml",
        at(&text, "tosca_simple_yaml_2_0"),
    );
}

#[test]
fn missing_entry_definitions() {
    let files = MemFiles::new("Definitions/top.yaml").with("Definitions/other.yaml", TYPES);
    let loaded = load(&files);
    let d = find(&loaded, "tosca.entry-definitions-not-found");
    assert_eq!(d.location.as_ref().unwrap().file, "Definitions/top.yaml");
    assert!(loaded.descriptor.is_none());
}

#[test]
fn wrong_kind_of_type_for_a_node_template() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "type: tosca.nodes.nfv.Vdu.Compute",
        "type: tosca.datatypes.nfv.VduProfile",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.wrong-kind-of-type");
    assert_at(
        d,
        "Definitions/df_small.yaml",
        at(&text, "tosca.datatypes.nfv.VduProfile"),
    );
}

#[test]
fn unknown_input_in_get_input() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "get_input: descriptor_id",
        "get_input: nope",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-input");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "get_input: nope"));
}

#[test]
fn functions_are_accepted_as_values_without_type_errors() {
    let (files, _) = variant(
        "Definitions/df_small.yaml",
        "num_virtual_cpu: 2",
        "num_virtual_cpu: { get_property: [ SELF, name ] }",
    );
    let loaded = load(&files);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let (files, _) = variant(
        "Definitions/df_small.yaml",
        "description: first",
        "description: { concat: [ a, { get_attribute: [ SELF, tosca_id ] } ] }",
    );
    assert!(!load(&files).has_errors());
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "description: first",
        "description: { token: [ a ] }",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.invalid-function");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "token"));
}

#[test]
fn into_result_separates_valid_from_invalid() {
    let (descriptor, warnings) = load(&base()).into_result().expect("valid");
    assert_eq!(descriptor.id(), "d-1");
    assert!(warnings.is_empty());
    let (files, _) = variant(
        "Definitions/df_small.yaml",
        "terminate_end: hook",
        "terminate_end: nohook",
    );
    match load(&files).into_result() {
        Err(vnfm_tosca::Error::Invalid { first, count, .. }) => {
            assert_eq!(first.code, "tosca.unknown-artifact");
            assert_eq!(count, 1);
        }
        Err(other) => panic!("expected an invalid descriptor, got {other}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn version_range_timestamp_map_and_key_schema_values() {
    let types = TYPES.replace(
        "      flavour_description: { type: string, default: '' }\n",
        "      flavour_description: { type: string, default: '' }
      v: { type: version, required: false }
      r: { type: range, required: false }
      t: { type: timestamp, required: false }
      m:
        type: map
        required: false
        key_schema: { type: string, constraints: [ { pattern: '[a-z]+' } ] }
        entry_schema: { type: scalar-unit.time }
      f: { type: scalar-unit.frequency, required: false }
      b: { type: scalar-unit.bitrate, required: false }
",
    );
    let good = TOP.replace(
        "        vnfm_info: [ '0:vnfm' ]\n",
        "        vnfm_info: [ '0:vnfm' ]\n        v: 1.2.3.beta-4\n        r: [ 1, UNBOUNDED ]\n        t: 2024-02-29T10:00:00Z\n        m: { ok: 10 s }\n        f: 2.4 GHz\n        b: 10 Mbps\n",
    );
    let files = base()
        .with("Definitions/types.yaml", types.clone())
        .with("Definitions/top.yaml", good);
    let loaded = load(&files);
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);

    let bad = TOP.replace(
        "        vnfm_info: [ '0:vnfm' ]\n",
        "        vnfm_info: [ '0:vnfm' ]\n        v: one.two\n        r: [ 5, 1 ]\n        t: tomorrow\n        m: { Bad1: 10 parsecs }\n        f: 2.4 GB\n        b: fast\n",
    );
    let files = base()
        .with("Definitions/types.yaml", types)
        .with("Definitions/top.yaml", bad.clone());
    let loaded = load(&files);
    let found: Vec<(&str, (u32, u32))> = loaded
        .diagnostics
        .iter()
        .map(|d| {
            let l = d.location.as_ref().unwrap();
            (&*d.code, (l.line, l.column))
        })
        .collect();
    assert_eq!(
        found,
        [
            ("tosca.wrong-type", at(&bad, "one.two")),
            ("tosca.wrong-type", at(&bad, "[ 5, 1 ]")),
            ("tosca.wrong-type", at(&bad, "tomorrow")),
            ("tosca.constraint-violated", at(&bad, "Bad1")),
            ("tosca.wrong-type", at(&bad, "10 parsecs")),
            ("tosca.wrong-type", at(&bad, "2.4 GB")),
            ("tosca.wrong-type", at(&bad, "fast")),
        ]
    );
}

#[test]
fn import_through_a_repository() {
    let top = TOP.replace(
        "imports:\n  - types.yaml\n",
        "repositories:\n  etsi: https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/\n  elsewhere: { url: https://example.com/defs }\nimports:\n  - types.yaml\n  - file: etsi_nfv_sol001_vnfd_types.yaml\n    repository: etsi\n",
    );
    let files = base().with("Definitions/top.yaml", top.clone());
    let loaded = load(&files);
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);

    let top = top.replace("repository: etsi\n", "repository: elsewhere\n");
    let files = base().with("Definitions/top.yaml", top.clone());
    let loaded = load(&files);
    let d = find(&loaded, "tosca.import-external");
    assert!(
        d.message
            .contains("https://example.com/defs/etsi_nfv_sol001_vnfd_types.yaml"),
        "{d}"
    );
}

#[test]
fn container_vdus_containers_storage_and_ext_cps() {
    let types = TYPES.replace("v3.3.1", "v4.2.1");
    let df = r#"tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - types.yaml
topology_template:
  substitution_mappings:
    node_type: acme.VNF
    properties: { flavour_id: small }
    requirements:
      virtual_link_ext: [ EXT1, external_virtual_link ]
  node_templates:
    POD:
      type: tosca.nodes.nfv.Vdu.OsContainerDeployableUnit
      properties:
        name: pod
        description: a pod
        vdu_profile: { min_number_of_instances: 2, max_number_of_instances: 4 }
      requirements:
        - container: C1
        - virtual_storage: OBJ
    C1:
      type: tosca.nodes.nfv.Vdu.OsContainer
      properties:
        name: web
        description: nginx
        requested_memory_resources: 256 MiB
      artifacts:
        sw_image:
          type: tosca.artifacts.nfv.SwImage
          file: https://registry.example.com/nginx:1.25
          properties:
            name: nginx
            version: '1.25'
            checksum: { algorithm: sha-256, hash: aa }
            container_format: docker
            disk_format: raw
            min_disk: 0 B
            size: 100 MB
    OBJ:
      type: tosca.nodes.nfv.Vdu.VirtualObjectStorage
      properties:
        virtual_object_storage_data: { max_size_of_storage: 5 GiB }
    VL1:
      type: tosca.nodes.nfv.VnfVirtualLink
      properties:
        connectivity_type: { layer_protocols: [ ipv4 ] }
        vl_profile:
          max_bitrate_requirements: { root: 1000 }
          min_bitrate_requirements: { root: 1000 }
          virtual_link_protocol_data:
            - associated_layer_protocol: ipv4
              l3_protocol_data: { ip_version: ipv4, cidr: 10.0.0.0/24 }
    EXT1:
      type: tosca.nodes.nfv.VnfExtCp
      properties:
        layer_protocols: [ ipv4 ]
      requirements:
        - internal_virtual_link: VL1
"#;
    let files = MemFiles::new("Definitions/top.yaml")
        .with("Definitions/top.yaml", TOP)
        .with("Definitions/types.yaml", types)
        .with("Definitions/df_small.yaml", df);
    let loaded = load(&files);
    let v = vnfd(&loaded);
    let f = &v.flavours[0];
    let pod = f.vdu("POD").unwrap();
    assert_eq!(
        pod.kind,
        vnfm_descriptor::VduKind::OsContainerDeployableUnit
    );
    assert_eq!(pod.containers, ["C1"]);
    assert_eq!(pod.virtual_storages, ["OBJ"]);
    assert_eq!((pod.min_instances, pod.max_instances), (2, 4));
    assert_eq!(f.containers[0].id, "C1");
    assert_eq!(f.containers[0].name, "web");
    let sw = f.containers[0].sw_image.as_ref().unwrap();
    assert_eq!(
        sw.file.as_deref(),
        Some("https://registry.example.com/nginx:1.25")
    );
    // SOL001 v3+ image data on the artifact's properties.
    assert_eq!((sw.name.as_str(), sw.version.as_str()), ("nginx", "1.25"));
    assert_eq!(sw.size_bytes, Some(100_000_000));
    assert_eq!(sw.container_format.as_deref(), Some("docker"));
    let image = f.artifact(Some("C1"), "sw_image").unwrap();
    assert!(image.external);
    assert!(image.sha256.is_none());
    assert_eq!(
        f.virtual_storages[0].kind,
        vnfm_descriptor::StorageKind::Object
    );
    assert_eq!(f.virtual_storages[0].size_bytes, Some(5 << 30));
    assert_eq!(f.virtual_links[0].cidrs, ["10.0.0.0/24"]);
    assert_eq!(f.virtual_links[0].layer_protocols, ["ipv4"]);
    assert_eq!(f.ext_cps.len(), 1);
    let ext = &f.ext_cps[0];
    assert_eq!(
        (
            ext.id.as_str(),
            ext.requirement.as_deref(),
            ext.internal_virtual_link.as_deref()
        ),
        ("EXT1", Some("virtual_link_ext"), Some("VL1"))
    );
    assert!(ext.vdu.is_none());
}

#[test]
fn artifact_properties_are_checked_against_the_artifact_type() {
    let types = TYPES.replace("v3.3.1", "v4.2.1");
    let df = DF.replace(
        "          checksum_algorithm: sha-256\n",
        "          checksum_algorithm: sha-256\n    IMG:\n      type: tosca.nodes.nfv.Vdu.VirtualBlockStorage\n      properties:\n        virtual_block_storage_data: { size_of_storage: 1 GB }\n      artifacts:\n        sw_image:\n          type: tosca.artifacts.nfv.SwImage\n          file: ../Files/disk.img\n          properties:\n            name: disk\n            version: '1'\n            checksum: { algorithm: sha-256, hash: aa }\n            container_format: bare\n            colour: blue\n",
    );
    let files = base()
        .with("Definitions/types.yaml", types)
        .with("Definitions/df_small.yaml", df.clone())
        .with("Files/disk.img", b"x".to_vec());
    let loaded = load(&files);
    let missing = find(&loaded, "tosca.missing-required-property");
    assert_at(missing, "Definitions/df_small.yaml", at(&df, "sw_image:"));
    assert!(missing.message.contains("`size`"), "{missing}");
    let unknown = find(&loaded, "tosca.unknown-property");
    assert_at(unknown, "Definitions/df_small.yaml", at(&df, "colour"));
}

#[test]
fn a_vnf_package_change_policy_is_normalized() {
    let policy = r#"  policies:
    - to_d2:
        type: tosca.policies.nfv.VnfPackageChange
        properties:
          selector:
            source_descriptor_id: d-1
            destination_descriptor_id: d-2
            source_flavour_id: small
          modification_qualifier: up
          additional_modification_description: Demo 2.0
          component_mappings:
            - component_type: vdu
              source_id: VDU1
              destination_id: VDU1
          destination_flavour_id: small
"#;
    let mut files = base();
    let df = format!("{DF}{policy}");
    files
        .files
        .insert("Definitions/df_small.yaml".into(), df.into_bytes());
    let loaded = load(&files);
    let v = vnfd(&loaded);
    assert_eq!(v.package_changes.len(), 1, "{:#?}", v.package_changes);
    let change = v.package_change("d-1", "d-2", "small").expect("selected");
    assert_eq!(change.id, "to_d2");
    assert_eq!(change.destination_flavour_id, "small");
    assert_eq!(change.modification_qualifier, "up");
    assert_eq!(change.description.as_deref(), Some("Demo 2.0"));
    assert_eq!(change.component_mappings.len(), 1);
    assert_eq!(change.component_mappings[0].component_type, "vdu");
    // Another source flavour or destination is not selected.
    assert!(v.package_change("d-1", "d-3", "small").is_none());
    assert!(v.package_change("d-1", "d-2", "big").is_none());
}

/// `policies` scaling VDU1 (1 to 2 instances) by one per step up to `max_level`.
fn scaled(max_level: u32) -> MemFiles {
    let policy = format!(
        r#"  policies:
    - scaling:
        type: tosca.policies.nfv.ScalingAspects
        properties:
          aspects:
            vdu1_aspect:
              name: vdu1_aspect
              description: more VDU1
              max_scale_level: {max_level}
              step_deltas: [ delta_1 ]
    - vdu1_deltas:
        type: tosca.policies.nfv.VduScalingAspectDeltas
        properties:
          aspect: vdu1_aspect
          deltas:
            delta_1:
              number_of_instances: 1
        targets: [ VDU1 ]
"#
    );
    let mut files = base();
    files.files.insert(
        "Definitions/df_small.yaml".into(),
        format!("{DF}{policy}").into_bytes(),
    );
    files
}

#[test]
fn a_max_scale_level_beyond_the_vdu_profile_is_a_warning() {
    let loaded = load(&scaled(3));
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    let d = find(&loaded, "tosca.scale-beyond-vdu-profile");
    assert_eq!(d.severity, Severity::Warning);
    assert!(
        d.message
            .contains("aspect `vdu1_aspect` at its max_scale_level 3 gives VDU `VDU1` 4 instances, above the 2"),
        "{d}"
    );
    // Within the profile: nothing to say.
    let loaded = load(&scaled(1));
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
}
