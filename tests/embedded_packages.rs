//! An embedder gets the package onboarding and lookup of `vnfm serve` from the builder: a
//! package onboarded through `Vnfm::packages` is found by the catalog and instantiated.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vnfm::lcm::types::{LcmOperationStateType, PackageOnboardingState, PackageOperationalState};
use vnfm::lcm::{Keyring, MemoryInfraDriver, Packages};
use vnfm_store::ProjectScope;

/// Waits until the package's onboarding has ended, and returns its state.
async fn onboarded(packages: &Packages, id: &str) -> vnfm::lcm::types::VnfPkgInfo {
    for _ in 0..200 {
        let (info, _) = packages.get(id).await.unwrap();
        if info.onboarding_state != PackageOnboardingState::Processing {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("package {id} is still being onboarded after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedder_onboards_a_package_and_instantiates_it() {
    let dir = tempfile::tempdir().unwrap();
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
    let services = vnfm::lcm::builder()
        .data_dir(dir.path())
        .keyring(keyring)
        .infra_driver(Arc::new(MemoryInfraDriver::new()))
        .recovery_interval(None)
        .assemble()
        .await
        .unwrap();
    services.start().await.unwrap();
    let packages = services.packages.clone();

    let info = packages.create(Default::default(), None).await.unwrap();
    assert_eq!(
        info.links.self_.href,
        format!("/vnfpkgm/v2/vnf_packages/{}", info.id)
    );
    let zip = vnfm::csar::zip_directory(Path::new("vnfd-samples/hello-vnf")).unwrap();
    let mut writer = packages.spool().writer(zip.len() as u64).unwrap();
    writer.push(&zip).await.unwrap();
    let content = writer.finish().await.unwrap();
    packages.accept_content(&info.id, content).await.unwrap();
    let info = onboarded(&packages, &info.id).await;
    assert_eq!(
        info.onboarding_state,
        PackageOnboardingState::Onboarded,
        "{:?}",
        info.onboarding_failure_details
    );
    assert_eq!(info.operational_state, PackageOperationalState::Enabled);
    assert_eq!(
        info.links.vnfd.as_ref().map(|l| l.href.clone()),
        Some(format!("/vnfpkgm/v2/vnf_packages/{}/vnfd", info.id))
    );
    let vnfd_id = info.vnfd_id.clone().unwrap();
    packages
        .ensure_instantiable(&vnfd_id, &ProjectScope::All)
        .await
        .unwrap();
    assert_eq!(
        packages.package_id_for(&vnfd_id).await,
        Some(info.id.clone())
    );

    let lcm = &services.lcm;
    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": vnfd_id})).unwrap())
        .await
        .unwrap();
    let occ = lcm
        .instantiate(
            &vnf.id,
            serde_json::from_value(json!({"flavourId": "simple"})).unwrap(),
        )
        .await
        .unwrap();
    let done = lcm.wait(&occ.id, Duration::from_secs(30)).await.unwrap();
    assert_eq!(
        done.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        done.error
    );
    services.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn an_embedder_without_an_nfvo_is_told_to_onboard_an_unknown_vnfd() {
    let dir = tempfile::tempdir().unwrap();
    let services = vnfm::lcm::builder()
        .data_dir(dir.path())
        .infra_driver(Arc::new(MemoryInfraDriver::new()))
        .recovery_interval(None)
        .assemble()
        .await
        .unwrap();
    let err = services
        .packages
        .ensure_instantiable("no-such-vnfd", &ProjectScope::All)
        .await
        .unwrap_err();
    assert!(
        matches!(err, vnfm::lcm::EmbedError::PackageUnprocessable(_)),
        "{err}"
    );
    assert!(err.to_string().contains("onboard it"), "{err}");
}

#[tokio::test]
async fn a_temporary_package_directory_goes_with_the_services() {
    let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
    let services = vnfm::lcm::builder()
        .store_url("sqlite::memory:")
        .keyring(keyring)
        .recovery_interval(None)
        .assemble()
        .await
        .unwrap();
    services.start().await.unwrap();
    let dir = services.packages.spool().dir().to_owned();
    assert!(dir.is_dir(), "{}", dir.display());
    services.shutdown(Duration::from_secs(1)).await;
    assert!(!dir.exists(), "{} is still there", dir.display());
}
