//! Imports, hooks, flavours and type definitions across files.

use super::*;

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

/// A flavour file beside the entry definitions that nothing imports is read, as Tacker reads
/// every file of `Definitions/`, with a warning at its topology. Files that could not change
/// the VNFD without an import are left alone: a second file of an already read flavour, a file
/// that does not parse, a flavour in a subdirectory.
#[test]
fn flavour_beside_the_entry_definitions_is_read_without_an_import() {
    let large = DF.replace("flavour_id: small", "flavour_id: large");
    let files = base()
        .with(
            "Definitions/types.yaml",
            TYPES.replace("valid_values: [ small ]", "valid_values: [ small, large ]"),
        )
        .with("Definitions/df_large.yaml", large.clone())
        .with(
            "Definitions/df_small_copy.yaml",
            DF.replace("Small", "Copy"),
        )
        .with("Definitions/notes.yaml", "key: [unclosed\n")
        .with(
            "Definitions/old/df_old.yaml",
            DF.replace("flavour_id: small", "flavour_id: old"),
        );
    let loaded = load(&files);
    let v = vnfd(&loaded);
    let ids: Vec<&str> = v.flavours.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["small", "large"]);
    let small = v.flavour("small").unwrap();
    assert_eq!(small.description, "Small");
    let warnings: Vec<&Diagnostic> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "tosca.flavour-not-imported")
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", loaded.diagnostics);
    assert_eq!(warnings[0].severity, Severity::Warning);
    assert_at(
        warnings[0],
        "Definitions/df_large.yaml",
        at(&large, "topology_template"),
    );
    assert!(warnings[0].message.contains("`large`"), "{}", warnings[0]);
    // Imported, the same file is read without the warning.
    let top = TOP.replace(
        "  - df_small.yaml\n",
        "  - df_small.yaml\n  - df_large.yaml\n",
    );
    let loaded = load(&files.with("Definitions/top.yaml", top));
    assert_eq!(vnfd(&loaded).flavours.len(), 2);
    assert!(
        !loaded
            .diagnostics
            .iter()
            .any(|d| d.code == "tosca.flavour-not-imported"),
        "{:#?}",
        loaded.diagnostics
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
