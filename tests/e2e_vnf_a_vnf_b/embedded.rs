//! The embedded VNFM a flow runs on (its LCM, VIM registry, plugin host and drivers on the
//! test cloud and cluster), and its calls that wait for an occurrence to finish.

use std::sync::Arc;
use std::time::Duration;

use crate::e2e_support::World;
use serde_json::{Value, json};
use vnfm::lcm::types::{LcmOperationStateType, VnfInstanceId, VnfLcmOpOcc};
use vnfm::lcm::{DelivererConfig, Keyring, Lcm, LcmConfig, MemoryCatalog, VimRegistry};
use vnfm_infra_kubernetes::{HelmLibrary, KubernetesDriver};
use vnfm_infra_openstack::{DriverConfig, OpenStackDriver, PollPolicy};
use vnfm_plugin_host::{HostConfig, Isolation, PluginHost};

const WAIT: Duration = Duration::from_secs(600);

/// The embedded VNFM of a flow.
pub(crate) struct Vnfm {
    pub(crate) lcm: Lcm,
    pub(crate) registry: Arc<VimRegistry>,
    pub(crate) db: std::path::PathBuf,
    pub(crate) world: Arc<World>,
    pub(crate) _services: vnfm::lcm::Vnfm,
}

fn openstack_driver() -> OpenStackDriver {
    OpenStackDriver::new(DriverConfig {
        stack_timeout: Duration::from_secs(300),
        poll: PollPolicy {
            initial: Duration::from_millis(250),
            factor: 1.5,
            max: Duration::from_secs(1),
        },
        ..DriverConfig::default()
    })
}

fn kubernetes_driver() -> KubernetesDriver {
    let driver = KubernetesDriver::new();
    match std::env::var_os("VNFM_HELM_C_LIB") {
        Some(lib) => driver.with_helm(Arc::new(HelmLibrary::load(lib).unwrap())),
        None => driver,
    }
}

impl Vnfm {
    pub(crate) async fn start(world: &Arc<World>, catalog: MemoryCatalog) -> Vnfm {
        let db = world.dir.path().join("vnfm.db");
        let keyring = Arc::new(Keyring::from_keys([Keyring::generate_key()]).unwrap());
        let host = PluginHost::new(
            HostConfig::new(world.dir.path().join("plugin-cache"))
                .package_libraries(Isolation::Process)
                .runner(world.profile.join("vnfm-plugin-runner")),
        );
        // Assembled as `vnfm serve` assembles it: the composition root with its defaults
        // (VIM registry, subscriptions, HTTP notifications through the deliverer).
        let services = vnfm::lcm::builder()
            .store_url(format!("sqlite://{}", db.display()))
            .keyring(keyring)
            .catalog(Arc::new(catalog))
            .infra_driver(Arc::new(openstack_driver()))
            .infra_driver(Arc::new(kubernetes_driver()))
            .mgmt_driver(Arc::new(host))
            .config(LcmConfig {
                step_timeout: WAIT,
                ..LcmConfig::default()
            })
            .deliver_notifications(DelivererConfig::new("e2e"))
            .assemble()
            .await
            .unwrap();
        let created = services
            .subscriptions
            .create(
                &serde_json::from_value(json!({"callbackUri": world.subscriber.url})).unwrap(),
                &vnfm::lcm::CreateOptions {
                    verify_callback: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        drop(created);
        services.start().await.unwrap();
        Vnfm {
            lcm: services.lcm.clone(),
            registry: Arc::new(services.vims.clone()),
            db,
            world: world.clone(),
            _services: services,
        }
    }

    pub(crate) async fn done(&self, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        self.lcm.wait(&op.id, WAIT).await.unwrap()
    }

    pub(crate) async fn completed(&self, world: &World, op: VnfLcmOpOcc) -> VnfLcmOpOcc {
        let done = self.done(op).await;
        assert_eq!(
            done.operation_state,
            LcmOperationStateType::Completed,
            "{:?} ended {:?}: {:#?}",
            done.operation,
            done.operation_state,
            done.error
        );
        world
            .subscriber
            .wait_for(done.id.as_str(), "COMPLETED")
            .await;
        // The notifications of one instance arrive in order (a repeated delivery may
        // duplicate one in place).
        let mut states = world.subscriber.states_of(done.id.as_str());
        states.dedup();
        assert_eq!(
            (
                states.first().map(String::as_str),
                states.get(1).map(String::as_str),
                states.last().map(String::as_str)
            ),
            (Some("STARTING"), Some("PROCESSING"), Some("COMPLETED")),
            "{states:?}"
        );
        done
    }

    /// Registers the test cloud as the operator's OpenStack VIM.
    pub(crate) async fn register_cloud(&self, world: &World) -> vnfm_lcm::VimView {
        self.registry
            .create(
                "test-cloud",
                &serde_json::from_value(world.cloud.vim()).unwrap(),
                None,
            )
            .await
            .unwrap()
    }

    pub(crate) async fn instance(&self, id: &VnfInstanceId) -> Value {
        serde_json::to_value(self.lcm.get_instance(id).await.unwrap()).unwrap()
    }

    pub(crate) async fn create(&self, vnfd_id: &str, name: &str) -> VnfInstanceId {
        let id = self
            .lcm
            .create_vnf_identifier(
                serde_json::from_value(json!({"vnfdId": vnfd_id, "vnfInstanceName": name}))
                    .unwrap(),
            )
            .await
            .unwrap()
            .id;
        self.world.track(id.as_str());
        id
    }
}
