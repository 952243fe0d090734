//! The real lifecycle runner (`vnfm_lcm::Lcm` on SQLite) with the Kubernetes driver on the
//! real control plane of `KUBECONFIG` (`scripts/test-env/kubernetes.sh`; built ignored without
//! it, see `build.rs`): a corpus CNF through instantiate, scale, heal and terminate, and a
//! failed instantiation rolled back with nothing left behind.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::real::{assert_pods_ready, corpus_names, in_namespace};
use support::*;
use vnfm_driver_api::memory::RecordingMgmtDriver;
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, MemoryCatalog};
use vnfm_types::{CreateVnfRequest, LcmOperationStateType as State, VnfInstance, VnfLcmOpOcc};

const WAIT: Duration = Duration::from_secs(60);

const FILES: &[&str] = &[
    "Files/kubernetes/namespace.yaml",
    "Files/kubernetes/config-map.yaml",
    "Files/kubernetes/replicaset_service_secret.yaml",
    "Files/kubernetes/deployment.yaml",
    "Files/kubernetes/statefulset.yaml",
    "Files/kubernetes/storage-class.yaml",
    // The StatefulSet's claim binds to it (the class has no provisioner).
    "Files/kubernetes/persistent-volume-0.yaml",
    "Files/kubernetes/pod.yaml",
    "Files/kubernetes/daemon-set.yaml",
    "Files/kubernetes/role_rolebinding_SA.yaml",
];

struct Env {
    lcm: Lcm,
    _dir: tempfile::TempDir,
}

/// The corpus package, with the image of its Deployment `vdu2` replaced by `error-image`
/// (which the test environment's simulated pods cannot pull) when `broken`.
struct Package {
    dir: DirArtifacts,
    broken: bool,
}

impl vnfm_driver_api::ArtifactSource for Package {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        let bytes = self.dir.read(path)?;
        if !self.broken || path != "Files/kubernetes/deployment.yaml" {
            return Ok(bytes);
        }
        let text = String::from_utf8_lossy(&bytes).replace("image: nginx", "image: error-image");
        Ok(text.into_bytes())
    }
}

async fn env(driver: vnfm_infra_kubernetes::KubernetesDriver, broken: bool) -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("lcm.db").display());
    let store = vnfm_store_sql::open(&url).await.expect("store");
    let catalog = MemoryCatalog::new();
    let pkg = corpus_dir("v2-cnf-instantiate-resources");
    let files = Package {
        dir: DirArtifacts(pkg.clone()),
        broken,
    };
    catalog.insert(load_vnfd(&pkg), Arc::new(files));
    let lcm = Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog),
    )
    .infra_driver(Arc::new(driver))
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .build();
    Env { lcm, _dir: dir }
}

impl Env {
    async fn done(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&occ.id, WAIT).await.expect("wait")
    }

    async fn completed(&self, occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(occ).await;
        assert_eq!(
            done.operation_state,
            State::Completed,
            "{:?}: {:#?}",
            done.operation,
            done.error
        );
        done
    }

    async fn create(&self) -> VnfInstance {
        self.lcm
            .create_vnf_identifier(CreateVnfRequest {
                vnfd_id: "b1bb0ce7-ebca-4fa7-95ed-4840d7000000".into(),
                vnf_instance_name: Some("cnf".into()),
                vnf_instance_description: None,
                metadata: None,
            })
            .await
            .expect("create")
    }
}

fn req<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("request")
}

fn vnfcs(i: &VnfInstance, vdu: &str) -> Vec<(String, String)> {
    let info = i.instantiated_vnf_info.as_ref().expect("instantiated");
    let infos = info.vnfc_info.clone().unwrap_or_default();
    info.vnfc_resource_info
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.vdu_id == vdu)
        .map(|r| {
            let info_id = infos
                .iter()
                .find(|v| v.vnfc_resource_info_id.as_deref() == Some(r.id.as_str()))
                .map(|v| v.id.clone())
                .unwrap_or_default();
            (r.id, info_id)
        })
        .collect()
}

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lifecycle_runner_drives_a_cnf_through_its_life() {
    // The package's own Namespace, StorageClass and PersistentVolume have fixed names: one
    // test using them at a time.
    let _names = corpus_names().await;
    let own = [
        "v1/Namespace/curry",
        "storage.k8s.io/v1/StorageClass/curry-sc-local",
        "v1/PersistentVolume/curry-sc-pv",
    ];
    in_namespace("lcm", &own, |kube, ns| async move {
        let env = env(driver(), false).await;
        let vnf = env.create().await;
        let occ = env
            .lcm
            .instantiate(
                &vnf.id,
                req(json!({
                    "flavourId": "simple",
                    "vimConnectionInfo": {"vim1": kube.vim_info.clone()},
                    "additionalParams": {"lcm-kubernetes-def-files": FILES, "namespace": ns}
                })),
            )
            .await
            .expect("instantiate");
        env.completed(occ).await;
        assert_pods_ready(&kube, &ns, "instantiate").await;
        let inst = env.lcm.get_instance(&vnf.id).await.expect("instance");
        // GET vnf_instances/{id} shows each container instance.
        assert_eq!(
            vnfcs(&inst, "VDU2").len(),
            2,
            "{:#?}",
            inst.instantiated_vnf_info
        );
        assert_eq!(
            vnfcs(&inst, "VDU1"),
            vec![("vdu1".to_string(), "VDU1-vdu1".to_string())]
        );
        let info = inst.instantiated_vnf_info.as_ref().expect("info");
        let vdu1 = info
            .vnfc_resource_info
            .as_ref()
            .and_then(|v| v.iter().find(|r| r.id == "vdu1"))
            .expect("vdu1");
        assert_eq!(
            vdu1.compute_resource.container_namespace.as_deref(),
            Some(ns.as_str())
        );
        assert!(
            vdu1.metadata
                .as_ref()
                .is_some_and(|m| m["nodeName"].is_string())
        );
        assert!(
            info.virtual_storage_resource_info
                .as_ref()
                .is_some_and(|s| s.iter().any(|s| s.id == "www-vdu5-0"))
        );

        let occ = env
            .lcm
            .scale(
                &vnf.id,
                req(json!({"type": "SCALE_OUT", "aspectId": "vdu2_aspect"})),
            )
            .await
            .expect("scale");
        let done = env.completed(occ).await;
        let added = done
            .resource_changes
            .and_then(|c| c.affected_vnfcs)
            .unwrap_or_default();
        assert_eq!(added.len(), 1);
        let inst = env.lcm.get_instance(&vnf.id).await.expect("instance");
        let vdu2 = vnfcs(&inst, "VDU2");
        assert_eq!(vdu2.len(), 3);

        let (victim, victim_info) = vdu2[0].clone();
        let occ = env
            .lcm
            .heal(&vnf.id, req(json!({"vnfcInstanceId": [victim_info]})))
            .await
            .expect("heal");
        env.completed(occ).await;
        let inst = env.lcm.get_instance(&vnf.id).await.expect("instance");
        let vdu2 = vnfcs(&inst, "VDU2");
        assert_eq!(vdu2.len(), 3);
        assert!(
            vdu2.iter().all(|(id, _)| *id != victim),
            "{victim} was replaced"
        );

        let occ = env
            .lcm
            .terminate(
                &vnf.id,
                req(json!({"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 5})),
            )
            .await
            .expect("terminate");
        env.completed(occ).await;
        let left = kube
            .labelled("vnfm.io/vnf-instance-id", vnf.id.as_str())
            .await;
        assert!(left.is_empty(), "left behind: {left:?}");
        assert!(kube.object("v1", "Namespace", None, &ns).await.is_none());
        env.lcm
            .delete_vnf_identifier(&vnf.id)
            .await
            .expect("delete");
        env.lcm.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[vnfm_test_env::needs(kwok, corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_instantiation_is_failed_temp_and_rolls_back_without_leaks() {
    in_namespace("lcm-fail", &[], |kube, ns| async move {
    // The Deployment's pods never start.
    let env = env(driver().with_ready_timeout(Duration::from_secs(8)), true).await;
    let vnf = env.create().await;
    let occ = env
        .lcm
        .instantiate(
            &vnf.id,
            req(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": kube.vim_info.clone()},
                "additionalParams": {"lcm-kubernetes-def-files": ["Files/kubernetes/deployment.yaml"],
                    "namespace": ns}
            })),
        )
        .await
        .expect("instantiate");
    let failed = env.done(occ).await;
    assert_eq!(failed.operation_state, State::FailedTemp);
    let detail = failed
        .error
        .as_ref()
        .map(|e| e.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("Deployment") && detail.contains("vdu2"),
        "{detail}"
    );
    assert!(detail.contains("ImagePullBackOff"), "{detail}");
    assert!(
        !kube
            .labelled("vnfm.io/vnf-instance-id", vnf.id.as_str())
            .await
            .is_empty()
    );
    let occ = env.lcm.rollback(&failed.id).await.expect("rollback");
    let rolled = env.done(occ).await;
    assert_eq!(
        rolled.operation_state,
        State::RolledBack,
        "{:#?}",
        rolled.error
    );
    let leaked = kube.labelled("vnfm.io/vnf-instance-id", vnf.id.as_str()).await;
    assert!(leaked.is_empty(), "leaked: {leaked:?}");
    env.lcm.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}
