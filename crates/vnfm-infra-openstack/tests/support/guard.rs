//! [`StackGuard`]: what a panicking test leaves on the shared test cloud, deleted.

use std::time::Duration;

use vnfm_types::VnfInstanceId;

use super::Cloud;

/// Deletes the Heat stacks of the VNF instances it was given, and the Glance images the driver
/// uploaded for them, when the test panics (a failed assertion leaves no servers, ports,
/// networks and images behind on the shared test cloud); a test that ends well terminates
/// them itself.
pub struct StackGuard {
    cloud: Cloud,
    driver: std::sync::Arc<vnfm_infra_openstack::OpenStackDriver>,
    instances: std::sync::Mutex<Vec<VnfInstanceId>>,
}

impl StackGuard {
    /// A guard for stacks `driver` creates on `cloud`.
    pub fn new(
        cloud: Cloud,
        driver: std::sync::Arc<vnfm_infra_openstack::OpenStackDriver>,
    ) -> Self {
        StackGuard {
            cloud,
            driver,
            instances: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Deletes the stack of `id` too if the test panics.
    pub fn watch(&self, id: &VnfInstanceId) {
        self.instances.lock().unwrap().push(id.clone());
    }
}

impl Drop for StackGuard {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let ids = std::mem::take(&mut *self.instances.lock().unwrap());
        let (cloud, driver) = (self.cloud.clone(), self.driver.clone());
        // A thread with a runtime of its own: the test's runtime is unwinding.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let vim = vnfm_driver_api::ResolvedVim::new(
                    "vim1",
                    serde_json::from_value(cloud.vim_connection()).unwrap(),
                );
                let Ok(session) = driver.session(&vim) else {
                    return;
                };
                let control = vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(60));
                let Ok(heat) = vnfm_infra_openstack::heat::Heat::connect(
                    &session,
                    &control,
                    driver.config().poll.clone(),
                )
                .await
                else {
                    return;
                };
                let glance = vnfm_infra_openstack::glance::Glance::connect(
                    &session,
                    &control,
                    driver.config().poll.clone(),
                    "vim1",
                )
                .await;
                for id in ids {
                    if let Ok(Some(stack)) = heat.find(&driver.stack_name(id.as_str())).await {
                        match heat.delete(&stack.reference()).await {
                            Ok(()) => eprintln!("deleted the stack of {id} after the panic"),
                            Err(e) => eprintln!("could not delete the stack of {id}: {e}"),
                        }
                    }
                    // The images the driver uploaded to Glance for the instance, as its
                    // terminate would.
                    if let Ok(glance) = &glance {
                        match glance.release(id.as_str()).await {
                            Ok(deleted) if !deleted.is_empty() => {
                                eprintln!("deleted the images {deleted:?} of {id} after the panic")
                            }
                            Ok(_) => {}
                            Err(e) => eprintln!("could not delete the images of {id}: {e}"),
                        }
                    }
                }
            });
        })
        .join();
    }
}
