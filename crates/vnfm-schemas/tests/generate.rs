//! The committed files in `schemas/` are exactly what schemars generates from the Rust model
//! (`vnfm-types` request types, `vnfm_descriptor::Descriptor`). On drift this test fails;
//! `UPDATE_SCHEMAS=1 cargo test -p vnfm-schemas --test integration generate::` rewrites
//! the files.

use std::path::PathBuf;

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

fn schemas_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../schemas"))
}

/// Rewrites the `oneOf` of single-`const` string schemas that schemars emits for a documented
/// unit enum into one `enum` keyword, so a wrong value is reported as "is not one of ...".
#[derive(Debug, Clone)]
struct ConstOneOfToEnum;

impl Transform for ConstOneOfToEnum {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(Value::Array(variants)) = schema.get("oneOf") else {
            return;
        };
        let values: Option<Vec<Value>> = variants
            .iter()
            .map(|v| {
                let o = v.as_object()?;
                let only_const = o
                    .keys()
                    .all(|k| matches!(k.as_str(), "type" | "const" | "description"));
                (only_const && o.get("type") == Some(&Value::from("string")))
                    .then(|| o.get("const").cloned())
                    .flatten()
            })
            .collect();
        if let Some(values) = values {
            schema.remove("oneOf");
            schema.insert("type".into(), "string".into());
            schema.insert("enum".into(), Value::Array(values));
        }
    }
}

/// Draft 2020-12 schema of `T`, pretty-printed with a trailing newline.
fn generate<T: JsonSchema>() -> String {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(ConstOneOfToEnum)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serializes");
    text.push('\n');
    text
}

fn all() -> Vec<(&'static str, String)> {
    use vnfm_types as t;
    vec![
        (
            "InstantiateVnfRequest.schema.json",
            generate::<t::InstantiateVnfRequest>(),
        ),
        (
            "TerminateVnfRequest.schema.json",
            generate::<t::TerminateVnfRequest>(),
        ),
        (
            "HealVnfRequest.schema.json",
            generate::<t::HealVnfRequest>(),
        ),
        (
            "ScaleVnfRequest.schema.json",
            generate::<t::ScaleVnfRequest>(),
        ),
        (
            "ScaleVnfToLevelRequest.schema.json",
            generate::<t::ScaleVnfToLevelRequest>(),
        ),
        (
            "ChangeVnfFlavourRequest.schema.json",
            generate::<t::ChangeVnfFlavourRequest>(),
        ),
        (
            "OperateVnfRequest.schema.json",
            generate::<t::OperateVnfRequest>(),
        ),
        (
            "ChangeExtVnfConnectivityRequest.schema.json",
            generate::<t::ChangeExtVnfConnectivityRequest>(),
        ),
        (
            "VnfInfoModificationRequest.schema.json",
            generate::<t::VnfInfoModificationRequest>(),
        ),
        (
            "ChangeCurrentVnfPkgRequest.schema.json",
            generate::<t::ChangeCurrentVnfPkgRequest>(),
        ),
        (
            "LccnSubscriptionRequest.schema.json",
            generate::<t::LccnSubscriptionRequest>(),
        ),
        (
            "CreateVnfRequest.schema.json",
            generate::<t::CreateVnfRequest>(),
        ),
        ("CancelMode.schema.json", generate::<t::CancelMode>()),
        (
            "descriptor.schema.json",
            generate::<vnfm_descriptor::Descriptor>(),
        ),
    ]
}

#[test]
fn committed_schemas_match_the_rust_model() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let dir = schemas_dir();
    let mut drifted = Vec::new();
    for (file, fresh) in all() {
        let path = dir.join(file);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == fresh {
            continue;
        }
        if update {
            std::fs::write(&path, &fresh)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            eprintln!("rewrote {}", path.display());
        } else {
            drifted.push(file);
        }
    }
    assert!(
        drifted.is_empty(),
        "schemas/ is out of date with the Rust model: {drifted:?}.\n\
         Re-run with UPDATE_SCHEMAS=1 to rewrite them:\n    \
         UPDATE_SCHEMAS=1 cargo test -p vnfm-schemas --test integration generate::\n\
         then review and commit the diff."
    );
}

#[test]
fn every_generated_file_is_served_by_the_crate() {
    let generated: Vec<&str> = all().into_iter().map(|(f, _)| f).collect();
    let served: Vec<&str> = vnfm_schemas::SchemaId::all()
        .iter()
        .map(|id| id.file_name())
        .collect();
    assert_eq!(generated, served);
}
