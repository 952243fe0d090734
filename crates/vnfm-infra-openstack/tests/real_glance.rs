//! A package's software image through the real Glance of the test cloud: uploaded at the first
//! instantiate with its checksum, formats and the driver's tags, the servers boot from it, a
//! second instance reuses it, and it is deleted at the last terminate. A file whose checksum
//! is not the VNFD's fails the instantiation naming the image and the VIM, and nothing is
//! uploaded. Ignored, with the reason, when the test cloud was not there at
//! build time (`#[vnfm_test_env::needs(openstack)]`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::Digest;
use support::Cloud;
use vnfm_driver_api::{ArtifactSource, ResolvedVim};
use vnfm_infra_openstack::DriverState;
use vnfm_infra_openstack::OpenStackDriver;
use vnfm_infra_openstack::glance::{MANAGED_TAG, instance_tag};
use vnfm_lcm::MemoryCatalog;
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_types::{LcmOperationStateType, VnfInstance, VnfInstanceId, VnfLcmOpOcc};

const WAIT: Duration = Duration::from_secs(600);
const IMAGE_FILE: &str = "Files/images/vnfm-test.qcow2";

/// The test VNFD whose VDUs boot from image `name`, the package file `IMAGE_FILE` with SHA-256
/// `sha256`.
fn vnfd_with_image(id: &str, name: &str, sha256: &str) -> vnfm_descriptor::Vnfd {
    let mut v = serde_json::to_value(support::vnfd(id)).unwrap();
    for vdu in v["flavours"][0]["vdus"].as_array_mut().unwrap() {
        vdu["swImage"] = json!({
            "name": name, "version": "1.0", "checksumAlgorithm": "sha-256", "checksumHash": sha256,
            "containerFormat": "bare", "diskFormat": "qcow2", "minDiskBytes": 1073741824u64,
            "minRamBytes": 268435456u64, "file": IMAGE_FILE
        });
    }
    serde_json::from_value(v).unwrap()
}

fn sorted(tags: &[&str]) -> Vec<String> {
    let mut t: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    t.sort();
    t
}

/// What each test starts from: the test cloud, the driver and the services' APIs, and an
/// image file with a name of this run only (the cloud is shared).
struct Fixture {
    cloud: Cloud,
    data: Vec<u8>,
    sha256: String,
    name: String,
    driver: Arc<OpenStackDriver>,
    services: support::Services,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let cloud = Cloud::from_env();
        let data = support::qcow2_image();
        let sha256 = hex::encode(sha2::Sha256::digest(&data));
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!("vnfm-test-image-{}-{stamp}", std::process::id());
        let driver = Arc::new(OpenStackDriver::new(support::driver_config()));
        let vim = ResolvedVim::new(
            "vim1",
            serde_json::from_value(cloud.vim_connection()).unwrap(),
        );
        let services = support::Services::new(driver.session(&vim).unwrap());
        Fixture {
            cloud,
            data,
            sha256,
            name,
            driver,
            services,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Adds to `catalog` the VNFD `id` booting from the image, its package holding `data` as
    /// the image file.
    fn insert(&self, catalog: &MemoryCatalog, id: &str, data: &[u8]) {
        let package: Arc<dyn ArtifactSource> =
            Arc::new(support::package("").with(IMAGE_FILE, data.to_vec()));
        catalog.insert(vnfd_with_image(id, &self.name, &self.sha256), package);
    }

    /// The core on `catalog` and the driver.
    async fn lcm(&self, catalog: MemoryCatalog) -> vnfm_lcm::Lcm {
        support::lcm(self.dir.path(), catalog, self.driver.clone()).await
    }
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_images_are_uploaded_to_glance_shared_and_deleted_at_the_last_terminate() {
    let f = Fixture::new();
    let (cloud, data, sha256, name, driver) = (&f.cloud, &f.data, &f.sha256, &f.name, &f.driver);
    let catalog = MemoryCatalog::new();
    f.insert(&catalog, "vnfd-glance", data);
    let mut corrupt = data.clone();
    corrupt[600] = 1;
    f.insert(&catalog, "vnfd-glance-corrupt", &corrupt);
    let lcm = f.lcm(catalog).await;
    let services = &f.services;
    let guard = Arc::new(support::StackGuard::new(cloud.clone(), driver.clone()));
    let run = |vnfd: &'static str, address: &'static str| {
        let lcm = lcm.clone();
        let cloud = cloud.clone();
        let guard = guard.clone();
        async move {
            let vnf = lcm
                .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": vnfd})).unwrap())
                .await
                .unwrap();
            guard.watch(&vnf.id);
            let op = lcm
                .instantiate(
                    &vnf.id,
                    serde_json::from_value(support::instantiate_request_at(&cloud, address))
                        .unwrap(),
                )
                .await
                .unwrap();
            (vnf.id, lcm.wait(&op.id, WAIT).await.unwrap())
        }
    };
    let terminate = |id: VnfInstanceId| {
        let lcm = lcm.clone();
        async move {
            let op = lcm
                .terminate(
                    &id,
                    serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
                )
                .await
                .unwrap();
            let done = lcm.wait(&op.id, WAIT).await.unwrap();
            assert_eq!(
                done.operation_state,
                LcmOperationStateType::Completed,
                "{:?}",
                done.error
            );
        }
    };
    let servers_boot_from = |inst: VnfInstance, image: String| {
        let services = &services;
        async move {
            let vnfcs = inst
                .instantiated_vnf_info
                .unwrap()
                .vnfc_resource_info
                .unwrap();
            assert_eq!(vnfcs.len(), 3);
            for v in vnfcs {
                let server = services
                    .server(&v.compute_resource.resource_id)
                    .await
                    .unwrap();
                assert_eq!(server["status"], "ACTIVE", "{server}");
                assert_eq!(server["image"]["id"], image.as_str(), "{server}");
            }
        }
    };

    // A file that is not the one the VNFD describes: refused before anything is uploaded.
    let (bad, failed) = run("vnfd-glance-corrupt", "10.10.0.64").await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let detail = failed.error.map(|e| e.detail).unwrap_or_default();
    assert!(
        detail.contains(&format!("software image `{name}` on VIM `vim1`"))
            && detail.contains("checksum")
            && detail.contains(IMAGE_FILE),
        "{detail}"
    );
    assert!(services.images_named(name).await.is_empty());
    let op = lcm.rollback(&failed.id).await.unwrap();
    lcm.wait(&op.id, WAIT).await.unwrap();
    let _ = bad;

    // First instance: the image is uploaded, with the VNFD's formats and the file's data.
    let (a, done) = run("vnfd-glance", "10.10.0.65").await;
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    let images = services.images_named(name).await;
    assert_eq!(images.len(), 1, "{images:?}");
    let image = images[0].clone();
    let id = image["id"].as_str().unwrap().to_string();
    assert_eq!(image["status"], "active", "{image}");
    assert_eq!(image["disk_format"], "qcow2");
    assert_eq!(image["container_format"], "bare");
    assert_eq!(image["size"], data.len());
    assert_eq!(image["min_disk"], 1);
    assert_eq!(image["min_ram"], 256);
    assert_eq!(image["vnfm_sha256"], sha256.as_str());
    // Glance's own hash of what it stored.
    assert_eq!(image["os_hash_algo"], "sha512");
    assert_eq!(
        image["os_hash_value"],
        hex::encode(sha2::Sha512::digest(data)).as_str()
    );
    let tags = |i: &Value| -> Vec<String> {
        let mut t: Vec<String> = i["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        t.sort();
        t
    };
    assert_eq!(
        tags(&image),
        sorted(&[MANAGED_TAG, &instance_tag(a.as_str())])
    );
    servers_boot_from(lcm.get_instance(&a).await.unwrap(), id.clone()).await;

    // Second instance of the package: the same image, now used by both.
    let (b, done) = run("vnfd-glance", "10.10.0.66").await;
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    let images = services.images_named(name).await;
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(images[0]["id"], id.as_str());
    assert_eq!(
        tags(&images[0]),
        sorted(&[
            MANAGED_TAG,
            &instance_tag(a.as_str()),
            &instance_tag(b.as_str())
        ])
    );
    servers_boot_from(lcm.get_instance(&b).await.unwrap(), id.clone()).await;

    // Terminating the first keeps the image for the second; the last terminate deletes it.
    terminate(a.clone()).await;
    let images = services.images_named(name).await;
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(
        tags(&images[0]),
        sorted(&[MANAGED_TAG, &instance_tag(b.as_str())])
    );
    terminate(b).await;
    assert!(services.images_named(name).await.is_empty());
    lcm.shutdown(Duration::from_secs(5)).await;
}

/// A test that panics with an instance on the cloud leaves nothing behind: the guard deletes
/// the instance's stack and the image the driver uploaded for it to Glance.
#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_test_leaves_neither_its_stack_nor_its_image() {
    let f = Fixture::new();
    let (cloud, name, driver, services) = (&f.cloud, &f.name, &f.driver, &f.services);
    let catalog = MemoryCatalog::new();
    f.insert(&catalog, "vnfd-glance-panic", &f.data);
    let lcm = f.lcm(catalog).await;
    let vnf = lcm
        .create_vnf_identifier(
            serde_json::from_value(json!({"vnfdId": "vnfd-glance-panic"})).unwrap(),
        )
        .await
        .unwrap();
    // Watched from the start, as a test does, in case this test itself fails before the end.
    let outer = support::StackGuard::new(cloud.clone(), driver.clone());
    outer.watch(&vnf.id);
    let op = lcm
        .instantiate(
            &vnf.id,
            serde_json::from_value(support::instantiate_request_at(cloud, "10.10.0.67")).unwrap(),
        )
        .await
        .unwrap();
    let done = lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    assert_eq!(services.images_named(name).await.len(), 1);
    let servers: Vec<String> = lcm
        .get_instance(&vnf.id)
        .await
        .unwrap()
        .instantiated_vnf_info
        .unwrap()
        .vnfc_resource_info
        .unwrap()
        .into_iter()
        .map(|v| v.compute_resource.resource_id)
        .collect();

    // A test thread that panics while its guard watches the instance.
    let (cloud2, driver2, id) = (cloud.clone(), driver.clone(), vnf.id.clone());
    let panicked = tokio::task::spawn_blocking(move || {
        std::thread::spawn(move || {
            let guard = support::StackGuard::new(cloud2, driver2);
            guard.watch(&id);
            panic!("a failed assertion, on purpose");
        })
        .join()
    })
    .await
    .unwrap();
    assert!(panicked.is_err());
    assert!(
        services.images_named(name).await.is_empty(),
        "the image of {} is still in Glance",
        vnf.id
    );
    // Heat deletes the servers with the stack.
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    for server in &servers {
        while services.server(server).await.is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "Nova still holds {server}"
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    lcm.shutdown(Duration::from_secs(5)).await;
}

/// A heal by a package's user data class gets, in its grant, the software image of the
/// instance's current package uploaded to Glance, as Tacker's NFVO grants it for a heal: after
/// a MODIFY_INFO onto a package whose image has a file, Tacker's `StandardUserData.heal`
/// rebuilds the healed VNFCs on that image (Tacker's `test_basic_lcms_min` of
/// `st_userdata`). The last terminate deletes the image.
#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heal_after_a_package_change_gets_the_new_packages_image_in_its_grant() {
    const CLASS_FILE: &str = "UserData/userdata.py";
    let mut f = Fixture::new();
    let scripts = Arc::new(ScriptMgmtDriver::new(ScriptConfig::default()));
    f.driver =
        Arc::new(OpenStackDriver::new(support::driver_config()).with_user_data_scripts(scripts));
    let catalog = MemoryCatalog::new();
    // The first package boots from the cloud's image by name; the second carries an image file.
    let class = support::package("").with(CLASS_FILE, crate::real_user_data::CLASS);
    catalog.insert(support::vnfd("vnfd-heal-image-a"), Arc::new(class.clone()));
    catalog.insert(
        vnfd_with_image("vnfd-heal-image-b", &f.name, &f.sha256),
        Arc::new(class.with(IMAGE_FILE, f.data.clone())),
    );
    let lcm = f.lcm(catalog).await;
    let guard = support::StackGuard::new(f.cloud.clone(), f.driver.clone());
    let vnf = lcm
        .create_vnf_identifier(
            serde_json::from_value(json!({"vnfdId": "vnfd-heal-image-a"})).unwrap(),
        )
        .await
        .unwrap();
    guard.watch(&vnf.id);
    let with_class = json!({
        "lcm-operation-user-data": "./UserData/userdata.py",
        "lcm-operation-user-data-class": "UserData"
    });
    let completed = |op: VnfLcmOpOcc| {
        assert_eq!(
            op.operation_state,
            LcmOperationStateType::Completed,
            "{:?}",
            op.error
        );
    };
    let mut request = support::instantiate_request_at(&f.cloud, "10.10.0.93");
    request["additionalParams"] = with_class.clone();
    let op = lcm
        .instantiate(&vnf.id, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    assert!(f.services.images_named(&f.name).await.is_empty());

    let op = lcm
        .modify_info(
            &vnf.id,
            serde_json::from_value(json!({"vnfdId": "vnfd-heal-image-b"})).unwrap(),
        )
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    let op = lcm
        .heal(
            &vnf.id,
            serde_json::from_value(json!({"additionalParams": with_class})).unwrap(),
        )
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());

    let images = f.services.images_named(&f.name).await;
    assert_eq!(images.len(), 1, "{images:?}");
    let uploaded = images[0]["id"].as_str().unwrap().to_string();
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    let info = inst.instantiated_vnf_info.as_ref().unwrap();
    let state: DriverState =
        serde_json::from_value(info.metadata.as_ref().unwrap()["driverState"].clone()).unwrap();
    assert_eq!(state.nfv["VDU"]["VDU1"]["vcImageId"], uploaded.as_str());
    // VDU2 was not given the image by the class: it stays on the cloud's image.
    assert_eq!(state.nfv["VDU"]["VDU2"]["vcImageId"], "cirros-0.6");
    let vdu1: Vec<_> = info
        .vnfc_resource_info
        .iter()
        .flatten()
        .filter(|v| v.vdu_id == "VDU1")
        .cloned()
        .collect();
    assert_eq!(vdu1.len(), 2);
    f.services.assert_servers_built(&vdu1, &f.name).await;

    let op = lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    completed(lcm.wait(&op.id, WAIT).await.unwrap());
    assert!(f.services.images_named(&f.name).await.is_empty());
    lcm.shutdown(Duration::from_secs(5)).await;
}
