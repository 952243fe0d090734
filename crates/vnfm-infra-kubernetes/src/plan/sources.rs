//! The package sources of a request: reading a manifest file, the lists of package paths in
//! `additionalParams`, the manifests bound to the flavour's VDUs, and the check of an ASD's
//! lifecycle parameters.

use serde_json::{Map, Value};
use vnfm_descriptor::{Asd, Flavour};
use vnfm_driver_api::ArtifactSource;

use crate::KubeError;

pub(super) fn read_text(files: &dyn ArtifactSource, path: &str) -> Result<String, KubeError> {
    let bytes = files
        .read(path)
        .map_err(|e| KubeError::manifest(path, format!("cannot be read from the package: {e}")))?;
    String::from_utf8(bytes).map_err(|_| KubeError::manifest(path, "is not UTF-8 text"))
}

pub(crate) fn string_list(
    params: &Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<String>>, KubeError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(String::from).ok_or_else(|| {
                    KubeError::input(format!(
                        "additionalParams.{key} must be a list of package paths"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(KubeError::input(format!(
            "additionalParams.{key} must be a list of package paths"
        ))),
    }
}

/// Manifests bound to the flavour's VDUs as artifacts: `(path, VDU id)`.
pub(super) fn vdu_manifests(flavour: &Flavour) -> Vec<(String, String)> {
    flavour
        .artifacts
        .iter()
        .filter(|a| flavour.vdu(&a.owner).is_some() && !a.external)
        .filter(|a| {
            let t = a.artifact_type.to_ascii_lowercase();
            let f = a.file.to_ascii_lowercase();
            !t.contains("swimage")
                && !t.contains("implementation")
                && (f.ends_with(".yaml") || f.ends_with(".yml") || f.ends_with(".json"))
        })
        .map(|a| (a.file.clone(), a.owner.clone()))
        .collect()
}

pub(super) fn check_lifecycle_params(
    asd: &Asd,
    params: &Map<String, Value>,
) -> Result<(), KubeError> {
    let declared: Vec<&str> = asd
        .deployment_items
        .iter()
        .flat_map(|i| i.lifecycle_parameters.iter())
        .map(|p| p.strip_prefix(".Values.").unwrap_or(p))
        .collect();
    for k in params.keys().filter(|k| k.starts_with(".Values.")) {
        let bare = k.trim_start_matches(".Values.");
        if !declared.contains(&bare) {
            return Err(KubeError::input(format!(
                "additionalParams `{k}` is not a lifecycle parameter of any deployment item of ASD {}; declared: {}",
                asd.asd_id,
                declared.join(", ")
            )));
        }
    }
    Ok(())
}
