//! Small hand-written VNFDs, one per diagnostic: each test asserts the code and the exact
//! file:line:column the reader reports.

use vnfm_descriptor::{Diagnostic, Severity, Vnfd};
use vnfm_tosca::{Loaded, MemFiles, load};

const TYPES: &str = r#"tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/etsi_nfv_sol001_common_types.yaml
  - https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/etsi_nfv_sol001_vnfd_types.yaml
node_types:
  acme.VNF:
    derived_from: tosca.nodes.nfv.VNF
    properties:
      descriptor_id: { type: string, default: d-1 }
      descriptor_version: { type: string, default: '1.0' }
      provider: { type: string, default: Acme }
      product_name: { type: string, default: Demo }
      software_version: { type: string, default: '1.0' }
      vnfm_info:
        type: list
        entry_schema: { type: string }
        default: [ '0:vnfm' ]
      flavour_id:
        type: string
        constraints: [ valid_values: [ small ] ]
        default: small
      flavour_description: { type: string, default: '' }
    requirements:
      - virtual_link_ext:
          capability: tosca.capabilities.nfv.VirtualLinkable
          occurrences: [ 0, 1 ]
"#;

const TOP: &str = r#"tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - types.yaml
  - df_small.yaml
topology_template:
  inputs:
    selected_flavour: { type: string }
  node_templates:
    VNF:
      type: acme.VNF
      properties:
        flavour_id: { get_input: selected_flavour }
        descriptor_id: d-1
        descriptor_version: '1.0'
        provider: Acme
        product_name: Demo
        software_version: '1.0'
        vnfm_info: [ '0:vnfm' ]
"#;

const DF: &str = r#"tosca_definitions_version: tosca_simple_yaml_1_3
imports:
  - types.yaml
topology_template:
  inputs:
    descriptor_id: { type: string }
  substitution_mappings:
    node_type: acme.VNF
    properties: { flavour_id: small }
    requirements:
      virtual_link_ext: [ CP1, virtual_link ]
  node_templates:
    VNF:
      type: acme.VNF
      properties:
        flavour_description: Small
        product_info_name: { get_input: descriptor_id }
      interfaces:
        Vnflcm:
          instantiate_start:
            implementation:
              primary: hook
              timeout: 90
          terminate_end: hook
      artifacts:
        hook:
          type: tosca.artifacts.Implementation.Python
          file: ../Scripts/hook.py
          checksum: abc123
          checksum_algorithm: sha-256
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: vdu1
        description: first
        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 2 }
      capabilities:
        virtual_compute:
          properties:
            virtual_memory: { virtual_mem_size: 1 GiB }
            virtual_cpu: { num_virtual_cpu: 2 }
            virtual_local_storage:
              - size_of_storage: 10 gb
    CP1:
      type: tosca.nodes.nfv.VduCp
      properties:
        layer_protocols: [ ipv4 ]
      requirements:
        - virtual_binding: VDU1
"#;

const HOOK: &[u8] = b"print('hook')\n";

fn base() -> MemFiles {
    MemFiles::new("Definitions/top.yaml")
        .with("Definitions/top.yaml", TOP)
        .with("Definitions/types.yaml", TYPES)
        .with("Definitions/df_small.yaml", DF)
        .with("Scripts/hook.py", HOOK)
}

/// The base package with `from` replaced by `to` in `file`.
fn variant(file: &str, from: &str, to: &str) -> (MemFiles, String) {
    let mut files = base();
    let text = String::from_utf8(files.files[file].clone()).unwrap();
    assert!(text.contains(from), "`{from}` is not in {file}");
    let changed = text.replacen(from, to, 1);
    files
        .files
        .insert(file.to_string(), changed.clone().into_bytes());
    (files, changed)
}

/// 1-based line and column of the first occurrence of `needle` in `text`.
fn at(text: &str, needle: &str) -> (u32, u32) {
    let offset = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not found"));
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32 + 1;
    let column = (offset - before.rfind('\n').map_or(0, |i| i + 1)) as u32 + 1;
    (line, column)
}

fn find<'a>(loaded: &'a Loaded, code: &str) -> &'a Diagnostic {
    loaded
        .diagnostics
        .iter()
        .find(|d| d.code == code)
        .unwrap_or_else(|| panic!("no `{code}` in {:#?}", loaded.diagnostics))
}

fn assert_at(d: &Diagnostic, file: &str, (line, column): (u32, u32)) {
    let loc = d.location.as_ref().expect("a location");
    assert_eq!(
        (loc.file.as_str(), loc.line, loc.column),
        (file, line, column),
        "{d}"
    );
}

fn vnfd(loaded: &Loaded) -> &Vnfd {
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    loaded
        .valid_descriptor()
        .and_then(|d| d.as_vnfd())
        .expect("a VNFD")
}

#[test]
fn base_package_loads_cleanly_and_normalizes() {
    let loaded = load(&base());
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
    let v = vnfd(&loaded);
    assert_eq!(v.descriptor_id, "d-1");
    assert_eq!(v.vnf_node_type, "acme.VNF");
    assert_eq!(v.tosca_definitions_version, "tosca_simple_yaml_1_3");
    assert_eq!(v.sol001_version.as_deref(), Some("3.3.1"));
    assert_eq!(v.vnfm_info, ["0:vnfm"]);
    // get_input in the flavour is bound to the top-level VNF node's property.
    assert_eq!(v.flavours.len(), 1);
    let f = &v.flavours[0];
    assert_eq!((f.id.as_str(), f.description.as_str()), ("small", "Small"));
    assert_eq!(f.file, "Definitions/df_small.yaml");
    let vdu = f.vdu("VDU1").unwrap();
    assert_eq!((vdu.min_instances, vdu.max_instances), (1, 2));
    let vc = vdu.virtual_compute.as_ref().unwrap();
    assert_eq!(vc.virtual_mem_size_bytes, Some(1_073_741_824));
    assert_eq!(vc.num_virtual_cpu, Some(2));
    assert_eq!(vc.local_storage_bytes, [10_000_000_000]);
    assert_eq!(f.ext_cps.len(), 1);
    assert_eq!(f.ext_cps[0].id, "CP1");
    assert_eq!(
        f.ext_cps[0].requirement.as_deref(),
        Some("virtual_link_ext")
    );
    assert_eq!(f.ext_cps[0].vdu.as_deref(), Some("VDU1"));
    let start = f.hook("instantiate_start").unwrap();
    assert_eq!(start.artifact, "hook");
    assert_eq!(start.timeout_seconds, Some(90));
    assert_eq!(f.hook("terminate_end").unwrap().artifact, "hook");
    let hook = f.artifact(Some("VNF"), "hook").unwrap();
    assert_eq!(hook.file, "Scripts/hook.py");
    assert_eq!(hook.declared_checksum.as_deref(), Some("sha-256:abc123"));
    use sha2::Digest;
    assert_eq!(
        hook.sha256.as_deref(),
        Some(hex::encode(sha2::Sha256::digest(HOOK)).as_str())
    );
    assert!(!hook.external);
    let info = v.flavours[0].artifacts.len();
    assert_eq!(info, 1);
}

#[test]
fn get_input_in_a_flavour_sees_the_top_level_vnf_properties() {
    let loaded = load(&base());
    // product_info_name: { get_input: descriptor_id } in the flavour's VNF node: the flavour's
    // own VNF node is not used for VNF-level fields, so check the normalized VNF properties of
    // the flavour through the VDU-independent path: the top-level node wins, and the flavour
    // sees `d-1`.
    let v = vnfd(&loaded);
    assert_eq!(v.descriptor_id, "d-1");
    let (files, _) = variant(
        "Definitions/top.yaml",
        "descriptor_id: d-1",
        "descriptor_id: d-2",
    );
    let loaded = load(&files);
    assert!(!loaded.has_errors(), "{:#?}", loaded.diagnostics);
    assert_eq!(vnfd(&loaded).descriptor_id, "d-2");
}

#[test]
fn cyclic_imports_are_reported_at_the_closing_import() {
    let a = "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n  - b.yaml\n";
    let b = "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n  - a.yaml\n";
    let files = MemFiles::new("Definitions/a.yaml")
        .with("Definitions/a.yaml", a)
        .with("Definitions/b.yaml", b);
    let loaded = load(&files);
    let d = find(&loaded, "tosca.cyclic-import");
    assert_at(d, "Definitions/b.yaml", (3, 5));
    assert!(
        d.message
            .contains("Definitions/a.yaml -> Definitions/b.yaml -> Definitions/a.yaml"),
        "{d}"
    );
    assert!(loaded.descriptor.is_none());
}

#[test]
fn cyclic_derived_from_is_reported() {
    let extra = "  acme.A:\n    derived_from: acme.B\n  acme.B:\n    derived_from: acme.A\n";
    let (files, text) = variant(
        "Definitions/types.yaml",
        "node_types:\n",
        &format!("node_types:\n{extra}"),
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.cyclic-derived-from");
    // Walking up from acme.A, acme.B's `derived_from: acme.A` closes the cycle.
    assert_at(d, "Definitions/types.yaml", at(&text, "acme.A\n"));
    assert!(d.message.contains("acme.A -> acme.B -> acme.A"), "{d}");
    assert!(loaded.descriptor.is_none());
}

#[test]
fn missing_required_property_is_reported_at_the_template() {
    let (files, text) = variant("Definitions/df_small.yaml", "        name: vdu1\n", "");
    let loaded = load(&files);
    let d = find(&loaded, "tosca.missing-required-property");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "VDU1:"));
    assert!(d.message.contains("`name`"), "{d}");
}

#[test]
fn unknown_node_type_is_reported_at_the_type_name() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "type: tosca.nodes.nfv.Vdu.Compute",
        "type: acme.Nope",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-type");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "acme.Nope"));
}

/// Regression (issue 25, item 11): a misspelt SOL001 type was advised to "import the ETSI
/// SOL001 type definitions", which the package already does. A name a few edits from a
/// known type gets "did you mean"; a name in an imported namespace that matches nothing is
/// advised to check the spelling; the import advice is kept for namespaces nothing defines.
#[test]
fn unknown_type_typo_is_advised_to_import_the_sol001_types() {
    let help = |written: &str| {
        let (files, _) = variant(
            "Definitions/df_small.yaml",
            "type: tosca.nodes.nfv.Vdu.Compute",
            &format!("type: {written}"),
        );
        let loaded = load(&files);
        let d = find(&loaded, "tosca.unknown-type");
        assert!(d.message.contains(written), "{d}");
        d.help.clone().unwrap_or_default()
    };
    assert_eq!(
        help("tosca.nodes.nfv.Vdu.Computer"),
        "did you mean `tosca.nodes.nfv.Vdu.Compute`?"
    );
    assert_eq!(
        help("tosca.nodes.nfv.VDU.Compute"),
        "did you mean `tosca.nodes.nfv.Vdu.Compute`?"
    );
    assert_eq!(
        help("tosca.nodes.nfv.Vdu.Hypervisor"),
        "no node type of that name is defined in `tosca.nodes.nfv.Vdu`: check the spelling, or define the type"
    );
    assert_eq!(
        help("tosca.nodes.acme.Router"),
        "import the ETSI SOL001 type definitions (or the file) that define it"
    );
    assert_eq!(
        help("acme.Nope"),
        "no node type of that name is defined in `acme`: check the spelling, or define the type"
    );
    assert_eq!(
        help("nobody.Nope"),
        "define the type, or import the file that defines it"
    );
}

#[test]
fn string_for_integer_is_a_wrong_type() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "num_virtual_cpu: 2",
        "num_virtual_cpu: two",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.wrong-type");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "two"));
    assert!(d.message.contains("integer"), "{d}");
}

#[test]
fn unknown_size_unit_is_a_wrong_type() {
    let (files, text) = variant("Definitions/df_small.yaml", "1 GiB", "3 parsecs");
    let loaded = load(&files);
    let d = find(&loaded, "tosca.wrong-type");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "3 parsecs"));
    assert!(d.message.contains("scalar-unit.size"), "{d}");
    assert!(d.message.contains("parsecs"), "{d}");
}

#[test]
fn constraint_violation_is_reported_at_the_value() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "min_number_of_instances: 1",
        "min_number_of_instances: -1",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.constraint-violated");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "-1"));
    assert!(d.message.contains("greater_or_equal"), "{d}");
}

#[test]
fn in_range_and_pattern_constraints() {
    let types = TYPES.replace(
        "      flavour_description: { type: string, default: '' }\n",
        "      flavour_description: { type: string, default: '' }\n      port:\n        type: integer\n        required: false\n        constraints: [ in_range: [ 1, 10 ] ]\n      code:\n        type: string\n        required: false\n        constraints: [ { pattern: '[a-z]+' }, { max_length: 4 } ]\n",
    );
    let top = TOP.replace(
        "        vnfm_info: [ '0:vnfm' ]\n",
        "        vnfm_info: [ '0:vnfm' ]\n        port: 11\n        code: abc1\n",
    );
    let files = base()
        .with("Definitions/types.yaml", types)
        .with("Definitions/top.yaml", top.clone());
    let loaded = load(&files);
    let violations: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "tosca.constraint-violated")
        .collect();
    assert_eq!(violations.len(), 2, "{:#?}", loaded.diagnostics);
    assert_at(violations[0], "Definitions/top.yaml", at(&top, "11"));
    assert!(violations[0].message.contains("in_range"));
    assert_at(violations[1], "Definitions/top.yaml", at(&top, "abc1"));
    assert!(violations[1].message.contains("pattern"));
}

#[test]
fn unknown_property_is_reported_at_its_key() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "        name: vdu1\n",
        "        name: vdu1\n        colour: red\n",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-property");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "colour"));
    assert!(
        d.help
            .as_deref()
            .unwrap_or_default()
            .contains("vdu_profile"),
        "{d}"
    );
}

#[test]
fn requirement_naming_an_unknown_node_template() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "virtual_binding: VDU1",
        "virtual_binding: VDU9",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-node-template");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "VDU9"));
}

#[test]
fn unknown_requirement_name() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "- virtual_binding: VDU1",
        "- virtual_bind: VDU1",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-requirement");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "virtual_bind:"));
}

/// Tacker's `practical_vnf_package` maps `[VDU0_extCP0, external_virtual_link]` onto a
/// `VduCp`, which has no such requirement; it was refused with `tosca.unknown-requirement`
/// while the neighbouring mapping mistakes were tolerated quirks.
#[test]
fn a_substitution_mapping_naming_a_requirement_its_node_lacks_is_a_quirk_warning() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "virtual_link_ext: [ CP1, virtual_link ]",
        "virtual_link_ext: [ CP1, external_virtual_link ]",
    );
    let loaded = load(&files);
    let d = find(
        &loaded,
        "tosca.quirk.substitution-target-requirement-undeclared",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_at(
        d,
        "Definitions/df_small.yaml",
        at(&text, "external_virtual_link"),
    );
    assert!(
        d.message
            .contains("SubstitutionTargetRequirementUndeclared")
            && d.message.contains("`CP1`")
            && d.message.contains("tosca.nodes.nfv.VduCp"),
        "{d}"
    );
    assert!(
        loaded
            .diagnostics
            .iter()
            .all(|d| d.code != "tosca.unknown-requirement"),
        "{:#?}",
        loaded.diagnostics
    );
    // The mapping is kept: CP1 is still the flavour's external connection point.
    let cp = &vnfd(&loaded).flavours[0].ext_cps[0];
    assert_eq!(
        (cp.id.as_str(), cp.requirement.as_deref()),
        ("CP1", Some("virtual_link_ext"))
    );
}

#[test]
fn import_escaping_the_package() {
    let (files, text) = variant(
        "Definitions/top.yaml",
        "  - types.yaml\n",
        "  - types.yaml\n  - ../../outside.yaml\n",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.import-escapes-package");
    assert_at(d, "Definitions/top.yaml", at(&text, "../../outside.yaml"));
}

#[test]
fn missing_import_file() {
    let (files, text) = variant(
        "Definitions/top.yaml",
        "  - types.yaml\n",
        "  - types.yaml\n  - nothere.yaml\n",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.import-not-found");
    assert_at(d, "Definitions/top.yaml", at(&text, "nothere.yaml"));
    assert!(d.message.contains("Definitions/nothere.yaml"), "{d}");
}

#[test]
fn external_import_is_not_fetched() {
    let (files, text) = variant(
        "Definitions/top.yaml",
        "  - types.yaml\n",
        "  - types.yaml\n  - https://example.com/x.yaml\n",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.import-external");
    assert_at(d, "Definitions/top.yaml", at(&text, "https://example.com"));
}

#[test]
fn hook_bound_to_an_undeclared_artifact() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "terminate_end: hook",
        "terminate_end: nohook",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-artifact");
    assert!(d.is_error());
    assert_at(d, "Definitions/df_small.yaml", at(&text, "nohook"));
    assert!(loaded.descriptor.is_none());
}

#[test]
fn unknown_lcm_operation() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "terminate_end: hook",
        "explode_end: hook",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.unknown-operation");
    assert_at(d, "Definitions/df_small.yaml", at(&text, "explode_end"));
}

#[test]
fn undeclared_flavour_id_is_a_quirk_warning() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "flavour_id: small",
        "flavour_id: large",
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.quirk.undeclared-flavour-id");
    assert_eq!(d.severity, Severity::Warning);
    assert_at(d, "Definitions/df_small.yaml", at(&text, "large"));
    assert!(d.message.contains("UndeclaredFlavourId"), "{d}");
    assert_eq!(vnfd(&loaded).flavours[0].id, "large");
}

#[test]
fn missing_flavour_id() {
    let (files, text) = variant(
        "Definitions/df_small.yaml",
        "    properties: { flavour_id: small }\n",
        "",
    );
    // Without the mapping value the type default (`small`) applies; remove it too.
    let types = TYPES.replace("        default: small\n", "");
    let files = MemFiles {
        files: {
            let mut f = files.files;
            f.insert("Definitions/types.yaml".into(), types.into_bytes());
            f
        },
        ..files
    };
    let loaded = load(&files);
    let d = find(&loaded, "tosca.missing-flavour-id");
    assert_at(
        d,
        "Definitions/df_small.yaml",
        at(&text, "substitution_mappings"),
    );
}

#[test]
fn duplicate_flavour_id_across_files() {
    let df2 = DF.replace("Small", "Other");
    let top = TOP.replace(
        "  - df_small.yaml\n",
        "  - df_small.yaml\n  - df_other.yaml\n",
    );
    let files = base()
        .with("Definitions/df_other.yaml", df2.clone())
        .with("Definitions/top.yaml", top);
    let loaded = load(&files);
    let d = find(&loaded, "tosca.duplicate-flavour-id");
    assert_at(
        d,
        "Definitions/df_other.yaml",
        at(&df2, "substitution_mappings"),
    );
}

#[test]
fn missing_artifact_file_is_only_a_warning() {
    let mut files = base();
    files.files.remove("Scripts/hook.py");
    let loaded = load(&files);
    let d = find(&loaded, "tosca.artifact-file-missing");
    assert_eq!(d.severity, Severity::Warning);
    assert_at(d, "Definitions/df_small.yaml", at(DF, "../Scripts/hook.py"));
    let v = vnfd(&loaded);
    let a = v.flavours[0].artifact(Some("VNF"), "hook").unwrap();
    assert_eq!(a.file, "Scripts/hook.py");
    assert!(a.sha256.is_none());
}

#[test]
fn conflicting_duplicate_type_is_reported_identical_one_is_not() {
    let same = TYPES.to_string();
    let files = base().with("Definitions/types2.yaml", same);
    let (files, _) = {
        let mut f = files;
        let top = TOP.replace("  - types.yaml\n", "  - types.yaml\n  - types2.yaml\n");
        f.files
            .insert("Definitions/top.yaml".into(), top.clone().into_bytes());
        (f, top)
    };
    let loaded = load(&files);
    assert!(
        !loaded
            .diagnostics
            .iter()
            .any(|d| d.code == "tosca.duplicate-type"),
        "{:#?}",
        loaded.diagnostics
    );

    let different = TYPES.replace("default: Acme", "default: Other");
    let mut files = files;
    files.files.insert(
        "Definitions/types2.yaml".into(),
        different.clone().into_bytes(),
    );
    let loaded = load(&files);
    let d = find(&loaded, "tosca.duplicate-type");
    assert_at(d, "Definitions/types2.yaml", at(&different, "acme.VNF:"));
    assert!(d.message.contains("Definitions/types.yaml:6"), "{d}");
}

#[test]
fn bare_etsi_file_name_falls_back_to_the_bundled_copy() {
    let types = TYPES
        .replace(
            "https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/etsi_nfv_sol001_common_types.yaml",
            "etsi_nfv_sol001_common_types.yaml",
        )
        .replace(
            "https://forge.etsi.org/rep/nfv/SOL001/raw/v3.3.1/etsi_nfv_sol001_vnfd_types.yaml",
            "etsi_nfv_sol001_vnfd_types.yaml",
        );
    let files = base().with("Definitions/types.yaml", types.clone());
    let loaded = load(&files);
    let warnings: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "tosca.import-bundled")
        .collect();
    assert_eq!(warnings.len(), 2, "{:#?}", loaded.diagnostics);
    assert_at(
        warnings[0],
        "Definitions/types.yaml",
        at(&types, "etsi_nfv_sol001_common"),
    );
    // tosca_simple_yaml_1_3 without a forge URL picks the newest bundled version.
    assert_eq!(vnfd(&loaded).sol001_version.as_deref(), Some("4.2.1"));
}

fn etsi_imports(version: &str, files: &[&str]) -> String {
    let mut imports = String::new();
    for f in files {
        if version == "2.5.1" && *f == "common" {
            continue; // v2.5.1 has no common types file
        }
        imports.push_str(&format!(
            "  - https://forge.etsi.org/rep/nfv/SOL001/raw/v{version}/etsi_nfv_sol001_{f}_types.yaml\n"
        ));
    }
    format!(
        "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n{imports}{}",
        &TYPES[TYPES.find("node_types:").unwrap()..]
    )
}

#[test]
fn every_bundled_sol001_version_loads_cleanly() {
    for version in vnfm_tosca::SOL001_VERSIONS {
        let files = base().with(
            "Definitions/types.yaml",
            etsi_imports(version, &["common", "vnfd"]),
        );
        let loaded = load(&files);
        assert!(
            loaded.diagnostics.is_empty(),
            "v{version}: {:#?}",
            loaded.diagnostics
        );
        assert_eq!(vnfd(&loaded).sol001_version.as_deref(), Some(version));
    }
}

#[test]
fn etsi_nsd_files_redefining_vnfd_types_are_a_quirk() {
    let mut with_quirk = Vec::new();
    for version in vnfm_tosca::SOL001_VERSIONS {
        let files = base().with(
            "Definitions/types.yaml",
            etsi_imports(version, &["common", "vnfd", "nsd", "pnfd"]),
        );
        let loaded = load(&files);
        let other: Vec<_> = loaded
            .diagnostics
            .iter()
            .filter(|d| d.code != "tosca.quirk.etsi-type-redefinition")
            .collect();
        assert!(other.is_empty(), "v{version}: {other:#?}");
        if !loaded.diagnostics.is_empty() {
            with_quirk.push(version);
            assert!(loaded.diagnostics.iter().all(|d| {
                let file = &d.location.as_ref().unwrap().file;
                file.starts_with("bundled:sol001/") && d.severity == Severity::Warning
            }));
        }
    }
    assert_eq!(with_quirk, ["2.5.1", "2.6.1"]);
}

#[test]
fn namespace_prefix_qualifies_imported_types() {
    let lib = "tosca_definitions_version: tosca_simple_yaml_1_3\ndata_types:\n  Size:\n    derived_from: tosca.datatypes.Root\n    properties:\n      value: { type: scalar-unit.size }\n  Pair:\n    derived_from: Size\n";
    let types = TYPES
        .replace("imports:\n", "imports:\n  - file: lib.yaml\n    namespace_prefix: lib\n")
        .replace(
            "      flavour_description: { type: string, default: '' }\n",
            "      flavour_description: { type: string, default: '' }\n      disk:\n        type: lib:Pair\n        required: false\n",
        );
    let top = TOP.replace(
        "        vnfm_info: [ '0:vnfm' ]\n",
        "        vnfm_info: [ '0:vnfm' ]\n        disk: { value: 2 parsecs }\n",
    );
    let files = base()
        .with("Definitions/lib.yaml", lib)
        .with("Definitions/types.yaml", types)
        .with("Definitions/top.yaml", top.clone());
    let loaded = load(&files);
    // `lib:Pair` resolves (its parent `Size` is found inside the prefixed file), so the value is
    // checked against it.
    let d = find(&loaded, "tosca.wrong-type");
    assert_at(d, "Definitions/top.yaml", at(&top, "2 parsecs"));
    assert!(
        !loaded
            .diagnostics
            .iter()
            .any(|d| d.code == "tosca.unknown-type"),
        "{:#?}",
        loaded.diagnostics
    );
}

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
