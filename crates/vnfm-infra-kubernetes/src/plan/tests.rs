//! Tests of rendering: label values and DNS names, manifests and a chart together, chart
//! directories read by the package manifest, and ASD chart items.

use super::*;
use crate::helm::{ChartRequest, ChartSource};

#[test]
fn label_values_and_dns_names() {
    assert_eq!(label_value("3f2a-9c"), "3f2a-9c");
    let long = "x".repeat(70);
    let h = label_value(&long);
    assert!(h.len() <= 63 && h.starts_with('h'));
    assert_eq!(label_value("bad id!"), label_value("bad id!"));
    assert_eq!(dns_name("vnf-", "AB_cd", 63), "vnf-ab-cd");
    assert_eq!(
        dns_name(
            "vnf",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
            53
        )
        .len(),
        53
    );
}

/// A chart of one Deployment named `cache-<release>` whose replicas are the value
/// `replicaCount`.
struct OneDeploymentChart;

#[async_trait::async_trait]
impl HelmRenderer for OneDeploymentChart {
    fn name(&self) -> &str {
        "test chart"
    }

    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
        Ok(vec![Document {
            source: "cache/templates/deployment.yaml".into(),
            index: 0,
            object: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("cache-{}", req.release)},
                "spec": {"replicas": req.values["replicaCount"],
                         "template": {"metadata": {"labels": {"app": "cache"}}}}}),
        }])
    }
}

fn flavour_with_vdu_manifest() -> Flavour {
    serde_json::from_value(json!({
        "id": "simple", "file": "Definitions/df.yaml",
        "vdus": [{"id": "cache", "name": "cache", "kind": "osContainerDeployableUnit",
                  "nodeType": "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit",
                  "minInstances": 1, "maxInstances": 3}],
        "artifacts": [{"name": "m", "owner": "cache", "artifactType": "tosca.artifacts.File",
                       "file": "Files/bound.yaml"}]
    }))
    .expect("flavour")
}

fn names(planned: &[Planned]) -> Vec<String> {
    planned
        .iter()
        .map(|p| format!("{}/{}", p.kind(), p.name()))
        .collect()
}

#[tokio::test]
async fn listed_manifests_and_a_chart_make_one_set_of_objects() {
    let files = vnfm_driver_api::memory::MemArtifacts::new()
        .with(
            "Files/web.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {labels: {app: web}}}}\n",
        )
        .with("Files/bound.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bound}\n")
        .with("Files/cache.tgz", b"chart".to_vec());
    let flavour = flavour_with_vdu_manifest();
    let input = |params: Value| RenderInput {
        params: params.as_object().cloned().unwrap_or_default(),
        flavour: Some(&flavour),
        instance_id: "i".into(),
        namespace: "ns".into(),
        release: "rel".into(),
        counts: [("cache".to_string(), 2)].into(),
        ..RenderInput::default()
    };
    let chart = OneDeploymentChart;
    let both = render(
        &input(json!({
            "lcm-kubernetes-def-files": ["Files/web.yaml"],
            "helm_chart_path": "Files/cache.tgz",
            "helm_value_names": {"cache": {"replica": "replicaCount"}}
        })),
        &files,
        Some(&chart),
    )
    .await
    .expect("render");
    // Tier order: the Service, then both Deployments (files first, then the chart).
    assert_eq!(
        names(&both),
        ["Service/web", "Deployment/web", "Deployment/cache-rel"]
    );
    let cache = both
        .iter()
        .find(|p| p.name() == "cache-rel")
        .expect("chart");
    assert_eq!(cache.vdu.as_deref(), Some("cache"));
    assert_eq!(cache.object["spec"]["replicas"], 2);
    assert!(both.iter().all(|p| p.namespace() == Some("ns")));
    // A chart alone: the VDU-bound manifest is not added.
    let chart_only = render(
        &input(json!({"helm_chart_path": "Files/cache.tgz"})),
        &files,
        Some(&chart),
    )
    .await
    .expect("render");
    assert_eq!(names(&chart_only), ["Deployment/cache-rel"]);
    // Neither: the VDU-bound manifests, as before.
    let bound = render(&input(json!({})), &files, Some(&chart))
        .await
        .expect("render");
    assert_eq!(names(&bound), ["ConfigMap/bound"]);
    // The same object from both sources is refused.
    let files = files.with(
        "Files/dup.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache-rel}\nspec: {template: {metadata: {labels: {app: c}}}}\n",
    );
    let err = render(
        &input(json!({"lcm-kubernetes-def-files": ["Files/dup.yaml"], "helm_chart_path": "Files/cache.tgz"})),
        &files,
        Some(&chart),
    )
    .await
    .expect_err("duplicate");
    assert!(err.to_string().contains("defined twice"), "{err}");
}

/// Renders a chart directory the way Helm reads one from disk: one document per file
/// under `templates/`, its `source` naming the chart as given.
struct DirectoryChart(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl HelmRenderer for DirectoryChart {
    fn name(&self) -> &str {
        "test directory chart"
    }

    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
        let ChartSource::Directory(dir) = &req.chart else {
            return Err(KubeError::input("expected a chart directory"));
        };
        let chart = std::fs::read_to_string(dir.join("Chart.yaml"))
            .map_err(|e| KubeError::input(e.to_string()))?;
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(chart);
        let mut docs = Vec::new();
        let mut names: Vec<_> = std::fs::read_dir(dir.join("templates"))
            .map_err(|e| KubeError::input(e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        names.sort();
        for p in names {
            let text = std::fs::read_to_string(&p).map_err(|e| KubeError::input(e.to_string()))?;
            let file = p.file_name().unwrap_or_default().to_string_lossy();
            docs.extend(parse_documents(
                &format!("{}:templates/{file}", req.chart.name()),
                &text.replace("{{ .Release.Name }}", &req.release),
            )?);
        }
        Ok(docs)
    }
}

fn chart_dir_package(manifest: &str) -> vnfm_driver_api::memory::MemArtifacts {
    vnfm_driver_api::memory::MemArtifacts::new()
        .with(
            "TOSCA-Metadata/TOSCA.meta",
            "TOSCA-Meta-File-Version: 1.0\nEntry-Definitions: Definitions/top.yaml\nETSI-Entry-Manifest: top.mf\n",
        )
        .with("top.mf", manifest.to_string())
        .with("Files/chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
        .with(
            "Files/chart/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 'cm-{{ .Release.Name }}'}\n",
        )
        .with(
            "Files/chart/templates/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: 'svc-{{ .Release.Name }}'}\n",
        )
}

#[tokio::test]
async fn a_chart_directory_is_read_by_the_manifest_and_named_by_its_package_path() {
    let listed = "Source: Files/chart/Chart.yaml\nAlgorithm: SHA-256\nHash: 0\n\nSource: Files/chart/templates/cm.yaml\n\nSource: ./Files/chart/templates/svc.yaml\n\nSource: Files/other.yaml\n";
    let files = chart_dir_package(listed);
    let input = |path: &str| RenderInput {
        params: json!({"helm_chart_path": path})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        instance_id: "i".into(),
        namespace: "ns".into(),
        release: "rel".into(),
        ..RenderInput::default()
    };
    let chart = DirectoryChart(Default::default());
    for path in ["Files/chart", "Files/chart/"] {
        let planned = render(&input(path), &files, Some(&chart))
            .await
            .expect("render");
        assert_eq!(names(&planned), ["ConfigMap/cm-rel", "Service/svc-rel"]);
        for p in &planned {
            assert!(
                p.source.starts_with("Files/chart:templates/"),
                "{}",
                p.source
            );
        }
    }
    assert_eq!(
        chart.0.lock().unwrap_or_else(|e| e.into_inner()).len(),
        2,
        "the renderer loaded the copied directory"
    );

    // Only what the manifest lists is copied: without its Chart.yaml listed, the
    // directory is refused with what to do.
    let files = chart_dir_package("Source: Files/chart/templates/cm.yaml\n");
    let err = render(&input("Files/chart"), &files, Some(&chart))
        .await
        .expect_err("unlisted");
    assert!(err.to_string().contains("does not list its files"), "{err}");
    // A manifest entry that climbs out of the chart is refused, not written.
    let files = chart_dir_package(
        "Source: Files/chart/Chart.yaml\nSource: Files/chart/../../../../tmp/evil.yaml\n",
    );
    let err = render(&input("Files/chart"), &files, Some(&chart))
        .await
        .expect_err("hostile");
    assert!(err.to_string().contains("not a plain path"), "{err}");
    // Neither a file nor a chart directory.
    let err = render(&input("Files/nothing"), &files, Some(&chart))
        .await
        .expect_err("absent");
    assert!(
        err.to_string().contains("cannot be read from the package"),
        "{err}"
    );
}

/// An ONAP-style ASD with one `helm_chart` item (`file` as given) declaring two
/// lifecycle parameters.
fn chart_asd(file: &str, external: bool) -> Vnfd {
    let items = json!([{"id": "cache", "artifactName": "cache", "artifactType": "helm_chart",
        "file": file, "external": external, "deploymentOrder": 1,
        "lifecycleParameters": [".Values.replicaCount", ".Values.service.port"]}]);
    let stages = vnfm_descriptor::asd::stages_of(
        &serde_json::from_value::<Vec<vnfm_descriptor::asd::DeploymentItem>>(items.clone())
            .expect("items"),
    );
    let asd: Asd = serde_json::from_value(json!({
        "asdId": "asd-1", "dialect": "onap-0.1", "toscaDefinitionsVersion": "tosca_simple_yaml_1_2",
        "entryDefinitions": "Definitions/asd.yaml", "nodeTemplate": "app", "asdVersion": "1.0",
        "provider": "Acme", "applicationName": "app", "applicationVersion": "1.0",
        "deploymentItems": items, "stages": stages,
    }))
    .expect("asd");
    crate::asd_vnfd(&asd)
}

fn input(vnfd: &Vnfd, params: Value) -> RenderInput<'_> {
    RenderInput {
        params: params.as_object().cloned().unwrap_or_default(),
        vnfd: Some(vnfd),
        flavour: vnfd.flavours.first(),
        instance_id: "i".into(),
        namespace: "ns".into(),
        release: "rel".into(),
        ..RenderInput::default()
    }
}

/// Records the values each render was given.
struct ValuesChart(std::sync::Mutex<Vec<Value>>);

#[async_trait::async_trait]
impl HelmRenderer for ValuesChart {
    fn name(&self) -> &str {
        "values chart"
    }

    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(req.values.clone());
        OneDeploymentChart.render(req).await
    }
}

#[tokio::test]
async fn asd_chart_items_take_their_lifecycle_parameters_and_package_files_only() {
    let files =
        vnfm_driver_api::memory::MemArtifacts::new().with("Artifacts/cache.tgz", b"chart".to_vec());
    let vnfd = chart_asd("Artifacts/cache.tgz", false);
    let vnfd = &vnfd;
    let chart = ValuesChart(Default::default());
    // Both spellings of a lifecycle parameter reach the chart as nested values.
    let planned = render(
        &input(
            vnfd,
            json!({".Values.replicaCount": 2, "service.port": 8080, "other": "x"}),
        ),
        &files,
        Some(&chart),
    )
    .await
    .expect("render");
    assert_eq!(names(&planned), ["Deployment/cache-rel"]);
    assert_eq!(planned[0].vdu.as_deref(), Some("cache"));
    assert_eq!(planned[0].object["spec"]["replicas"], 2);
    assert_eq!(
        chart.0.lock().unwrap_or_else(|e| e.into_inner())[0],
        json!({"replicaCount": 2, "service": {"port": 8080}})
    );
    // A `.Values.` key that no item declares is a mistake the request hears about.
    let err = render(
        &input(vnfd, json!({".Values.replicas": 2})),
        &files,
        Some(&chart),
    )
    .await
    .expect_err("undeclared");
    assert!(
        err.to_string().contains("not a lifecycle parameter"),
        "{err}"
    );
    // A chart outside the package (an OCI or HTTP reference) is refused by name.
    let external = chart_asd("oci://registry.example/charts/cache", true);
    let err = render(&input(&external, json!({})), &files, Some(&chart))
        .await
        .expect_err("external");
    assert!(
        err.to_string().contains("outside the package")
            && err
                .to_string()
                .contains("oci://registry.example/charts/cache"),
        "{err}"
    );
}
