//! Small hand-written VNFDs, one per diagnostic: each test asserts the code and the exact
//! file:line:column the reader reports.

use vnfm_descriptor::{Diagnostic, Severity, Vnfd};
use vnfm_tosca::{Loaded, MemFiles, load};

mod imports_and_flavours;
mod policies_and_models;
mod values_and_templates;

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
