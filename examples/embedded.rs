//! Embedding the VNF Manager: the whole life of one VNF, in one process.
//!
//! The program onboards the `vnfd-samples/hello-vnf` package into an in-memory catalog
//! (`vnfm::lcm::onboard_dir` reads and checks it with `vnfm::package::inspect`), builds an
//! `Lcm` on an SQLite file with the in-memory infrastructure driver (a fake VIM; swap in the
//! OpenStack or Kubernetes driver for real infrastructure), then creates a VNF identifier,
//! instantiates it, scales it out and back in, terminates it and deletes the identifier,
//! printing the instance after each operation.
//!
//! Every operation call returns at once with the operation occurrence in `STARTING`; the
//! occurrence runs in the background and `Lcm::wait` waits for its result. The store keeps
//! every occurrence, its step journal and the notifications to send; if the process dies, the
//! next `build()` on the same file recovers the occurrences it left.
//!
//! Run it with `cargo run --example embedded` (optionally pass a store URL, e.g.
//! `sqlite:///tmp/vnfm.db` or `postgres://...`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vnfm::lcm::types::{LcmOperationStateType, VnfInstance, VnfLcmOpOcc};
use vnfm::lcm::{self, Lcm, MEMORY_VIM_TYPE, MemoryCatalog, MemoryInfraDriver};

/// Waits for an occurrence and fails unless it COMPLETED.
async fn completed(lcm: &Lcm, op: VnfLcmOpOcc) -> Result<(), Box<dyn std::error::Error>> {
    let done = lcm.wait(&op.id, Duration::from_secs(30)).await?;
    if done.operation_state != LcmOperationStateType::Completed {
        return Err(format!(
            "{:?} ended {:?}: {:?}",
            done.operation, done.operation_state, done.error
        )
        .into());
    }
    Ok(())
}

fn describe(what: &str, vnf: &VnfInstance) {
    let info = vnf.instantiated_vnf_info.as_ref();
    let vnfcs = info
        .and_then(|i| i.vnfc_resource_info.as_ref())
        .map_or(0, Vec::len);
    let level = info
        .and_then(|i| i.scale_status.as_ref())
        .and_then(|s| s.first())
        .map_or(0, |s| s.scale_level);
    println!(
        "{what:<12} {:?}, {vnfcs} VNFC(s), scale level {level}",
        vnf.instantiation_state
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("vnfm.db").display()));

    let catalog = MemoryCatalog::new();
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("vnfd-samples/hello-vnf");
    let vnfd_id = lcm::onboard_dir(&catalog, &package)?;

    let lcm = lcm::builder()
        .store_url(url)
        .infra_driver(Arc::new(MemoryInfraDriver::new()))
        .catalog(Arc::new(catalog))
        .build()
        .await?;

    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(json!({
            "vnfdId": vnfd_id, "vnfInstanceName": "hello-1"
        }))?)
        .await?;
    describe("created", &vnf);

    let op = lcm
        .instantiate(
            &vnf.id,
            serde_json::from_value(json!({
                "flavourId": "simple",
                "vimConnectionInfo": {"vim1": {"vimType": MEMORY_VIM_TYPE}}
            }))?,
        )
        .await?;
    completed(&lcm, op).await?;
    describe("instantiated", &lcm.get_instance(&vnf.id).await?);

    let op = lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({
                "type": "SCALE_OUT", "aspectId": "web_scale", "numberOfSteps": 2
            }))?,
        )
        .await?;
    completed(&lcm, op).await?;
    describe("scaled out", &lcm.get_instance(&vnf.id).await?);

    let op = lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({"type": "SCALE_IN", "aspectId": "web_scale"}))?,
        )
        .await?;
    completed(&lcm, op).await?;
    describe("scaled in", &lcm.get_instance(&vnf.id).await?);

    let op = lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({
                "terminationType": "GRACEFUL", "gracefulTerminationTimeout": 10
            }))?,
        )
        .await?;
    completed(&lcm, op).await?;
    describe("terminated", &lcm.get_instance(&vnf.id).await?);

    lcm.delete_vnf_identifier(&vnf.id).await?;
    println!("deleted      {}", vnf.id);
    lcm.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
