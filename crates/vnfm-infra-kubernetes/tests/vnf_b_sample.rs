//! The VNF-B sample package (`vnfd-samples/vnf-b-cnf`, read with `vnfm_tosca` from the
//! directory) through the real lifecycle runner (`vnfm_lcm::Lcm` on SQLite, VIM registry with
//! a keyring) and this driver on the real control plane of `KUBECONFIG`
//! (`scripts/test-env/kubernetes.sh`; built ignored without it, see `build.rs`), with the Helm SDK library
//! (`VNFM_HELM_C_LIB`; built ignored without it too). The sample's own instantiate request
//! names the cluster by `vimId`, deploys the web server's manifests and the cache's chart
//! together, and its `instantiate_end` runs the cnf-check plugin (in process, through the
//! SDK's harness) against the same cluster; scale and terminate follow.

use crate::support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use support::real::{Kube, assert_pods_ready, with_clean_up};
use support::*;
use vnfm_driver_api::{DriverError, HookCall, HookOutcome, MgmtDriver};
use vnfm_infra_kubernetes::HelmLibrary;
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{Keyring, Lcm, MemoryCatalog, VimRegistry};
use vnfm_plugin_cnf_check::CnfCheck;
use vnfm_plugin_sdk::protocol::ErrorKind;
use vnfm_plugin_sdk::testing::HookHarness;
use vnfm_types::{CreateVnfRequest, LcmOperationStateType as State, VnfLcmOpOcc};

const WAIT: Duration = Duration::from_secs(60);
const VIM_ID: &str = "vnf-a-cluster-vim";
const PLACEHOLDER: &str = "REPLACE-WITH-VNF-A-CLUSTER-VIM-ID";
const INSTANCE_LABEL: &str = "vnfm.io/vnf-instance-id";

fn sample() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vnfd-samples/vnf-b-cnf"
    ))
}

/// The cnf-check plugin, run in process as the plugin host would run the library: the hook
/// call becomes the plugin's request, on a thread of its own (the plugin blocks on its own
/// runtime).
#[derive(Default)]
struct CnfCheckInProcess {
    calls: Mutex<Vec<Called>>,
}

/// A hook call: the hook, the artifact's file and the VIM connections (key, JSON).
type Called = (String, String, Vec<(String, Value)>);

#[async_trait]
impl MgmtDriver for CnfCheckInProcess {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        if call.artifact.name != "cnf-check" {
            return Err(DriverError::invalid_input(format!(
                "unexpected artifact {}",
                call.artifact.name
            )));
        }
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).push((
            call.operation.clone(),
            call.artifact.file.clone(),
            call.vims
                .iter()
                .map(|v| {
                    let info = v.connection_info();
                    (
                        v.connection_id.clone(),
                        serde_json::to_value(info).unwrap_or_default(),
                    )
                })
                .collect(),
        ));
        let mut h = HookHarness::new(CnfCheck)
            .request(call.request.clone())
            .instance(call.instance.clone())
            .inputs(
                call.inputs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
            .vnfd(serde_json::to_value(&*call.vnfd).unwrap_or_default());
        if let Some(f) = &call.flavour_id {
            h = h.flavour(f.clone());
        }
        for v in &call.vims {
            // The plugin ABI's VimConnection has the JSON form of the SOL VimConnectionInfo.
            let wire = serde_json::to_value(v.connection_info())
                .and_then(serde_json::from_value)
                .expect("a VIM connection converts to its wire form");
            h = h.vim(v.connection_id.clone(), wire);
        }
        let hook = call.operation.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(h.run(&hook));
        });
        match rx.await {
            Ok(Ok(out)) => Ok(HookOutcome {
                metadata: out.metadata,
                ..HookOutcome::default()
            }),
            Ok(Err(e)) if e.kind == ErrorKind::Transient => Err(DriverError::transient(e.message)),
            Ok(Err(e)) => Err(DriverError::permanent(e.message)),
            Err(_) => Err(DriverError::permanent(
                "the hook thread ended without an answer",
            )),
        }
    }
}

struct Env {
    lcm: Lcm,
    mgmt: Arc<CnfCheckInProcess>,
    vnfd_id: String,
    _dir: tempfile::TempDir,
}

async fn env(kube: &Kube, helm: HelmLibrary) -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = vnfm_store_sql::open(&format!("sqlite://{}", dir.path().join("lcm.db").display()))
        .await
        .expect("store");
    // VNF-A's cluster, registered as VNF-A's instantiate_end registers it.
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).expect("keyring"));
    let registry = Arc::new(VimRegistry::new(store.clone(), keyring, all_vim_kinds()));
    registry
        .create(
            "vnf-a-cluster",
            &serde_json::from_value({
                let mut info = kube.vim_info.clone();
                info["vimId"] = json!(VIM_ID);
                info
            })
            .expect("vim"),
            None,
        )
        .await
        .expect("register the cluster");
    let vnfd = load_vnfd(&sample());
    let vnfd_id = vnfd.descriptor_id.clone();
    let catalog = MemoryCatalog::new();
    catalog.insert(vnfd, Arc::new(DirArtifacts(sample())));
    let mgmt = Arc::new(CnfCheckInProcess::default());
    let lcm = Lcm::builder(store, registry, Arc::new(NoSubscribers), Arc::new(catalog))
        .infra_driver(Arc::new(driver().with_helm(Arc::new(helm))))
        .mgmt_driver(mgmt.clone())
        .build();
    Env {
        lcm,
        mgmt,
        vnfd_id,
        _dir: dir,
    }
}

impl Env {
    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.lcm.wait(&occ.id, WAIT).await.expect("wait");
        assert_eq!(
            done.operation_state,
            State::Completed,
            "{:?}: {:#?}",
            done.operation,
            done.error
        );
        done
    }
}

fn sample_request(name: &str) -> Value {
    let text = std::fs::read_to_string(sample().join("requests").join(name)).expect("request");
    assert!(
        text.contains(PLACEHOLDER),
        "the sample request names the cluster by a placeholder"
    );
    serde_json::from_str(&text.replace(PLACEHOLDER, VIM_ID)).expect("JSON")
}

fn labelled(obj: &Value, instance: &str) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(INSTANCE_LABEL))
        .and_then(Value::as_str)
        == Some(instance)
}

fn vdu_count(i: &vnfm_types::VnfInstance, vdu: &str) -> usize {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|info| info.vnfc_resource_info.as_ref())
        .map_or(0, |v| v.iter().filter(|r| r.vdu_id == vdu).count())
}

/// The namespace the sample's request names (its manifests' placeholders say it too).
const NS: &str = "web-cnf";

#[vnfm_test_env::needs(kwok, helm)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vnf_b_sample_deploys_manifests_and_chart_together_checks_and_terminates_clean() {
    let helm = helm_library();
    let kube = Kube::get();
    // The web server's claim needs a volume (the cluster has no provisioner).
    let volume = ("v1", "PersistentVolume", "web-cnf-data");
    with_clean_up(&kube, &[NS], &[volume], async move {
        let kube = Kube::get();
        kube.create(json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "web-cnf-data"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/web-cnf-data"}}}))
            .await;
        let env = env(&kube, helm).await;
        let vnf = env
            .lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: env.vnfd_id.clone().into(),
                vnf_instance_name: Some("vnf-b".into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .expect("create");
        let id = vnf.id.as_str().to_string();
        let occ = env
            .lcm
            .instantiate(
                &vnf.id,
                serde_json::from_value(sample_request("instantiate.json")).expect("request"),
            )
            .await
            .expect("instantiate");
        env.completed(occ).await;

        // The manifests' objects and the chart's, in the request's namespace, all labelled with
        // the instance.
        let ns = NS;
        assert_pods_ready(&kube, ns, "instantiate").await;
        let release = format!("vnf{}", id.replace('-', ""));
        let expected = [
            ("v1", "ConfigMap", "web-config".to_string()),
            ("v1", "PersistentVolumeClaim", "web-data".to_string()),
            ("apps/v1", "Deployment", "web".to_string()),
            ("v1", "Service", "web".to_string()),
            ("apps/v1", "Deployment", format!("cache-{release}")),
            ("v1", "Service", format!("cache-{release}")),
        ];
        for (api, kind, name) in &expected {
            let obj = kube
                .object(api, kind, Some(ns), name)
                .await
                .unwrap_or_else(|| panic!("{kind} {ns}/{name} was not deployed"));
            assert!(labelled(&obj, &id), "{kind} {name}: {:#}", obj["metadata"]);
        }
        let namespace = kube
            .object("v1", "Namespace", None, ns)
            .await
            .expect("namespace");
        assert!(labelled(&namespace, &id));
        // Placeholders of the manifests were filled in; the chart got the VDU's count.
        let page = kube
            .object("v1", "ConfigMap", Some(ns), "web-config")
            .await
            .expect("config");
        assert!(
            page["data"]["index.html"]
                .as_str()
                .is_some_and(|p| p.contains(&id) && p.contains("namespace web-cnf")),
            "{page:#}"
        );
        let cache = kube
            .object(
                "apps/v1",
                "Deployment",
                Some(ns),
                &format!("cache-{release}"),
            )
            .await
            .expect("cache");
        assert_eq!(cache["spec"]["replicas"], 1);
        assert_eq!(
            cache["spec"]["template"]["metadata"]["labels"]["vnfm.io/vdu"],
            "cache"
        );

        // The instance: one pod per VDU, the web server's volume, and the plugin's record from
        // the same cluster, reached through the registered VIM the request named.
        let inst = env.lcm.get_instance(&vnf.id).await.expect("instance");
        assert_eq!((vdu_count(&inst, "web"), vdu_count(&inst, "cache")), (1, 1));
        let storage = inst
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.virtual_storage_resource_info.clone())
            .unwrap_or_default();
        assert!(
            storage
                .iter()
                .any(|s| s.virtual_storage_desc_id == "web_storage"),
            "{storage:#?}"
        );
        let checked = &inst.metadata.as_ref().expect("metadata")["cnfCheck"];
        assert_eq!(checked["namespace"], ns);
        assert_eq!(checked["service"], "web");
        assert_eq!(checked["availableReplicas"], 1);
        let calls = env
            .mgmt
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        assert_eq!(calls.len(), 1, "{calls:?}");
        let (hook, file, vims) = &calls[0];
        assert_eq!(
            (hook.as_str(), file.as_str()),
            ("instantiate_end", "Plugins/libvnfm_plugin_cnf_check.so")
        );
        assert_eq!(vims.len(), 1);
        assert_eq!(vims[0].0, "k8s");
        assert_eq!(vims[0].1["vimId"], VIM_ID);
        assert_eq!(
            vims[0].1["interfaceInfo"]["endpoint"],
            kube.vim_info["interfaceInfo"]["endpoint"]
        );

        // Scale the cache out: the chart's Deployment follows the VDU.
        let occ = env
            .lcm
            .scale(
                &vnf.id,
                serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "cache_aspect"}))
                    .expect("scale"),
            )
            .await
            .expect("scale");
        env.completed(occ).await;
        let cache = kube
            .object(
                "apps/v1",
                "Deployment",
                Some(ns),
                &format!("cache-{release}"),
            )
            .await
            .expect("cache");
        assert_eq!(cache["spec"]["replicas"], 2);
        let inst = env.lcm.get_instance(&vnf.id).await.expect("instance");
        assert_eq!(vdu_count(&inst, "cache"), 2);

        // Terminate: every object of both sources is gone, and the namespace the driver made.
        let occ = env
            .lcm
            .terminate(
                &vnf.id,
                serde_json::from_value(json!({"terminationType": "FORCEFUL"})).expect("terminate"),
            )
            .await
            .expect("terminate");
        env.completed(occ).await;
        let left = kube.labelled(INSTANCE_LABEL, &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
        for (api, kind, name) in &expected {
            assert!(
                kube.object(api, kind, Some(ns), name).await.is_none(),
                "{kind} {name}"
            );
        }
        assert!(kube.object("v1", "Namespace", None, ns).await.is_none());
        env.lcm.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

/// The VIM kind of the Kubernetes driver.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new().with(std::sync::Arc::new(
        vnfm_infra_kubernetes::KubernetesVimKind,
    ))
}
