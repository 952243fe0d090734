//! Helm charts of a request: the values given to the chart (`helm_parameters`,
//! `helm_value_names`), rendering a packaged chart or a chart directory (copied from the
//! package by its manifest's file list to a work directory), and naming the package path in
//! the rendered documents and errors.

use serde_json::{Value, json};
use vnfm_driver_api::ArtifactSource;

use super::RenderInput;
use crate::KubeError;
use crate::helm::{ChartRequest, ChartSource, HelmRenderer, set_value};
use crate::manifest::Document;

/// The values of the request's chart: `helm_parameters`, and the VDUs' instance counts at
/// the paths `helm_value_names` gives.
pub(super) fn chart_values(input: &RenderInput<'_>) -> Result<Value, KubeError> {
    let mut values = json!({});
    if let Some(p) = input.params.get("helm_parameters") {
        let m = p.as_object().ok_or_else(|| {
            KubeError::input("additionalParams.helm_parameters must be an object of value paths")
        })?;
        for (k, v) in m {
            set_value(&mut values, k, v.clone())?;
        }
    }
    if let Some(names) = input.params.get("helm_value_names") {
        let m = names.as_object().ok_or_else(|| {
            KubeError::input("additionalParams.helm_value_names must be an object keyed by VDU id")
        })?;
        for (vdu, v) in m {
            if let Some(replica) = v.get("replica").and_then(Value::as_str)
                && let Some(count) = input.counts.get(vdu)
            {
                set_value(&mut values, replica, json!(count))?;
            }
        }
    }
    Ok(values)
}

pub(super) async fn render_chart(
    helm: Option<&dyn HelmRenderer>,
    files: &dyn ArtifactSource,
    path: &str,
    input: &RenderInput<'_>,
    values: Value,
) -> Result<Vec<Document>, KubeError> {
    let helm = helm.ok_or_else(|| {
        KubeError::input(format!(
            "the package deploys the Helm chart `{path}`, but the Kubernetes driver has no Helm renderer (no `helm` on PATH and no Helm SDK library configured)"
        ))
    })?;
    // A packaged chart (`.tgz`) is a file; a chart directory is not, but has a Chart.yaml.
    let (chart, work) = match files.read(path) {
        Ok(bytes) => (
            ChartSource::Archive {
                name: path.to_string(),
                bytes,
            },
            None,
        ),
        Err(e) => {
            let dir = path.trim_end_matches('/');
            if dir.is_empty() || files.read(&format!("{dir}/Chart.yaml")).is_err() {
                return Err(KubeError::input(format!(
                    "Helm chart `{path}` cannot be read from the package: {e} (name a packaged chart `.tgz`, or a chart directory with its Chart.yaml)"
                )));
            }
            let entry = input.vnfd.map(|v| v.entry_definitions.as_str());
            let (work, root) = chart_directory(files, dir, entry)?;
            (ChartSource::Directory(root), Some(work))
        }
    };
    let work_name = chart.name();
    let mut docs = helm
        .render(&ChartRequest {
            chart,
            release: input.release.clone(),
            namespace: input.namespace.clone(),
            values,
        })
        .await
        .map_err(|e| match e {
            KubeError::Helm {
                renderer, message, ..
            } => KubeError::Helm {
                chart: path.to_string(),
                renderer,
                message: message.replace(&work_name, path),
            },
            other => other,
        })?;
    if work.is_some() {
        // Name the package path, not the work directory (which is gone after this call).
        for d in &mut docs {
            if let Some(rest) = d.source.strip_prefix(&work_name) {
                d.source = format!("{}{rest}", path.trim_end_matches('/'));
            }
        }
    }
    Ok(docs)
}

/// Most files a chart directory may have.
const MAX_CHART_FILES: usize = 2000;

/// The package paths a package lists: the `Source:` entries of its manifests (the ones
/// `TOSCA.meta` names, else the one named after the entry definitions) and the `Name:`
/// entries of `TOSCA.meta`. The package interface reads files but does not list them; a
/// SOL004 manifest lists every file of the package.
fn listed_files(files: &dyn ArtifactSource, entry: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut manifests = Vec::new();
    if let Ok(meta) = files.read("TOSCA-Metadata/TOSCA.meta") {
        for line in String::from_utf8_lossy(&meta).lines() {
            if let Some((k, v)) = line.split_once(':') {
                let v = v.trim().to_string();
                match k.trim() {
                    "Name" => out.push(v),
                    "ETSI-Entry-Manifest" | "Entry-Manifest" => manifests.push(v),
                    _ => {}
                }
            }
        }
    }
    if let Some(stem) = entry
        .and_then(|e| e.rsplit('/').next())
        .and_then(|b| b.strip_suffix(".yaml").or_else(|| b.strip_suffix(".yml")))
    {
        manifests.push(format!("{stem}.mf"));
    }
    for m in manifests {
        if let Ok(text) = files.read(&m) {
            for line in String::from_utf8_lossy(&text).lines() {
                if let Some(v) = line.trim().strip_prefix("Source:") {
                    out.push(v.trim().to_string());
                }
            }
        }
    }
    let mut out: Vec<String> = out
        .iter()
        .map(|p| p.trim_start_matches("./").to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Copies the chart directory `dir` of the package (its files as the package's manifest
/// lists them) to a private work directory, for a renderer that loads charts from the file
/// system; the work directory lives as long as the returned guard.
fn chart_directory(
    files: &dyn ArtifactSource,
    dir: &str,
    entry: Option<&str>,
) -> Result<(tempfile::TempDir, std::path::PathBuf), KubeError> {
    let prefix = format!("{dir}/");
    let members: Vec<String> = listed_files(files, entry)
        .into_iter()
        .filter(|p| p.starts_with(&prefix))
        .collect();
    if !members.iter().any(|p| *p == format!("{prefix}Chart.yaml")) {
        return Err(KubeError::input(format!(
            "Helm chart directory `{dir}`: the package's manifest does not list its files (the driver reads a chart directory by the manifest's `Source:` entries): list every file of the chart in the manifest, or package the chart as a .tgz"
        )));
    }
    if members.len() > MAX_CHART_FILES {
        return Err(KubeError::input(format!(
            "Helm chart directory `{dir}` has {} files, more than the {MAX_CHART_FILES} the driver reads: package the chart as a .tgz",
            members.len()
        )));
    }
    let work = tempfile::tempdir().map_err(|e| {
        KubeError::input(format!(
            "Helm chart directory `{dir}`: cannot create a work directory: {e}"
        ))
    })?;
    let root = work.path().join("chart");
    for member in &members {
        let rel = &member[prefix.len()..];
        // Plain relative paths only: a manifest entry must not reach outside the work directory.
        if rel
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
            || rel.contains('\\')
        {
            return Err(KubeError::input(format!(
                "Helm chart directory `{dir}`: the manifest lists `{member}`, which is not a plain path inside the chart"
            )));
        }
        let bytes = files.read(member).map_err(|e| {
            KubeError::input(format!(
                "Helm chart directory `{dir}`: `{member}` cannot be read from the package: {e}"
            ))
        })?;
        let target = root.join(rel);
        let written = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, bytes));
        written.map_err(|e| {
            KubeError::input(format!(
                "Helm chart directory `{dir}`: cannot copy `{member}` to the work directory: {e}"
            ))
        })?;
    }
    Ok((work, root))
}
