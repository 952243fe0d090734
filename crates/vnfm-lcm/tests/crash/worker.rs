//! The worker's side: its randomness, the jittery infrastructure driver, the configuration
//! the parent passes in [`WORKER_ENV`], and the loop of operations each instance runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::runner_support::*;
use async_trait::async_trait;
use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemArtifacts, MemoryInfraDriver};
use vnfm_driver_api::{DriverError, InfraDriver, InfraOperation, InfraOutcome, InfraRequest};
use vnfm_lcm::{Lcm, LcmError, MemoryCatalog};
use vnfm_store::Timestamp;
use vnfm_types::{
    InstantiationState, LcmOperationStateType as State, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
};

use super::WORKER_ENV;
use super::started_log;

// ----- randomness -----

static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

pub(crate) fn seed(s: u64) {
    SEED.store(s | 1, Ordering::SeqCst);
}

/// xorshift64*: good enough to pick operations and kill points.
fn rand() -> u64 {
    let mut x = SEED.load(Ordering::Relaxed);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    SEED.store(x, Ordering::Relaxed);
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

pub(crate) fn below(n: u64) -> u64 {
    if n == 0 { 0 } else { rand() % n }
}

// ----- the worker -----

/// The memory driver behind a random delay of `base..=base+jitter` ms per call; with a call
/// log, each call's occurrence and start time (ms since the epoch) are appended to it first,
/// one `write(2)` each.
pub(crate) struct Jittery {
    pub(crate) inner: MemoryInfraDriver,
    pub(crate) base_ms: u64,
    pub(crate) jitter_ms: u64,
    pub(crate) calls: Option<std::sync::Mutex<std::fs::File>>,
}

impl Jittery {
    async fn pause(&self, req: &InfraRequest) {
        if let Some(log) = &self.calls {
            use std::io::Write;
            let line = format!("{} {}\n", req.op_occ_id, Timestamp::now().0);
            let _ = log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_all(line.as_bytes());
        }
        let ms = self.base_ms + below(self.jitter_ms + 1);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

macro_rules! jittery_impl {
    ($($m:ident),*) => {
        #[async_trait]
        impl InfraDriver for Jittery {
            fn name(&self) -> &str {
                "jittery-memory"
            }

            fn vim_types(&self) -> &[&str] {
                self.inner.vim_types()
            }

            $(
                async fn $m(&self, req: &InfraRequest) -> Result<InfraOutcome, DriverError> {
                    self.pause(req).await;
                    self.inner.$m(req).await
                }
            )*
        }
    };
}

jittery_impl!(
    instantiate,
    terminate,
    scale,
    scale_to_level,
    heal,
    operate,
    change_ext_conn,
    change_flavour,
    change_vnfpkg,
    rollback_instantiate,
    rollback_scale,
    rollback_change_ext_conn,
    rollback_change_vnfpkg
);

pub(crate) fn catalog() -> MemoryCatalog {
    let c = MemoryCatalog::new();
    let files = Arc::new(MemArtifacts::new().with("Scripts/mgmt.so", b"plugin".to_vec()));
    c.insert(hello_vnfd(), files.clone());
    c.insert(hooks_vnfd(), files);
    c
}

pub(crate) struct WorkerCfg {
    pub(crate) store: String,
    pub(crate) log: String,
    pub(crate) tag: String,
    pub(crate) lease_ms: u64,
    pub(crate) base_ms: u64,
    pub(crate) jitter_ms: u64,
    pub(crate) loops: usize,
    /// Where the infrastructure calls are logged (see [`Jittery`]).
    pub(crate) calls: Option<String>,
    /// Whether SIGTERM shuts the runner down (releasing its leases) before the worker exits.
    pub(crate) sigterm: bool,
}

pub(crate) fn worker_cfg() -> Option<WorkerCfg> {
    let v: Value = serde_json::from_str(&std::env::var(WORKER_ENV).ok()?).ok()?;
    Some(WorkerCfg {
        store: v["store"].as_str()?.to_string(),
        log: v["log"].as_str()?.to_string(),
        tag: v["tag"].as_str()?.to_string(),
        lease_ms: v["leaseMs"].as_u64()?,
        base_ms: v["baseMs"].as_u64()?,
        jitter_ms: v["jitterMs"].as_u64()?,
        loops: usize::try_from(v["loops"].as_u64()?).ok()?,
        calls: v["calls"].as_str().map(str::to_owned),
        sigterm: v["sigterm"].as_bool().unwrap_or(false),
    })
}

pub(crate) async fn worker_loop(
    lcm: Lcm,
    infra: Arc<Jittery>,
    log: Arc<std::sync::Mutex<std::fs::File>>,
    tag: String,
    k: usize,
    mut mine: Vec<VnfInstanceId>,
) {
    let vnfd = if k.is_multiple_of(2) {
        "hello-vnf"
    } else {
        "vnfd-hooks"
    };
    let flavour = "simple";
    loop {
        if mine.is_empty() {
            match lcm
                .create_vnf_identifier(req(
                    json!({"vnfdId": vnfd_id_of(vnfd), "vnfInstanceName": tag}),
                ))
                .await
            {
                Ok(i) => mine.push(i.id),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        }
        let id = mine[usize::try_from(below(mine.len() as u64)).unwrap_or(0)].clone();
        let Ok(instance) = lcm.get_instance(&id).await else {
            mine.retain(|x| *x != id);
            continue;
        };
        if below(10) == 0 {
            let op = match below(3) {
                0 => InfraOperation::Instantiate,
                1 => InfraOperation::Scale,
                _ => InfraOperation::Terminate,
            };
            infra
                .inner
                .fail_next(op, DriverError::transient("injected failure"));
        }
        let active = lcm.store().active_op_occ(&id).await.ok().flatten();
        let started: Result<VnfLcmOpOcc, LcmError> = match active {
            Some((occ, _)) if occ.operation_state == State::FailedTemp => match below(3) {
                0 => lcm.retry(&occ.id).await,
                1 => match lcm.rollback(&occ.id).await {
                    Err(_) => lcm.fail(&occ.id).await,
                    ok => ok,
                },
                _ => lcm.fail(&occ.id).await,
            },
            Some((occ, _)) => {
                // Held by a run of a dead lifetime: recovery takes it over.
                let _ = lcm.wait(&occ.id, Duration::from_secs(5)).await;
                continue;
            }
            None => next_operation(&lcm, &instance, flavour, &mut mine).await,
        };
        let Ok(occ) = started else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        {
            let mut f = log.lock().unwrap_or_else(|e| e.into_inner());
            let _ = started_log::append(&mut *f, occ.id.as_ref());
        }
        let _ = lcm.wait(&occ.id, Duration::from_secs(10)).await;
    }
}

fn vnfd_id_of(name: &str) -> String {
    if name == "hello-vnf" {
        hello_vnfd().descriptor_id
    } else {
        name.to_string()
    }
}

async fn next_operation(
    lcm: &Lcm,
    instance: &VnfInstance,
    flavour: &str,
    mine: &mut Vec<VnfInstanceId>,
) -> Result<VnfLcmOpOcc, LcmError> {
    let id = &instance.id;
    if instance.instantiation_state == InstantiationState::NotInstantiated {
        if below(5) == 0 {
            lcm.delete_vnf_identifier(id).await?;
            mine.retain(|x| x != id);
            return Err(LcmError::conflict("deleted"));
        }
        return lcm
            .instantiate(
                id,
                req(json!({"flavourId": flavour, "vimConnectionInfo": memory_vims()})),
            )
            .await;
    }
    let aspect = instance
        .instantiated_vnf_info
        .as_ref()
        .and_then(|i| i.scale_status.as_ref())
        .and_then(|s| s.first())
        .map(|s| (s.aspect_id.clone(), s.scale_level));
    match (below(4), aspect) {
        (0, Some((a, l))) if l < 2 => {
            lcm.scale(id, req(json!({"type": "SCALE_OUT", "aspectId": a})))
                .await
        }
        (1, Some((a, l))) if l > 0 => {
            lcm.scale(id, req(json!({"type": "SCALE_IN", "aspectId": a})))
                .await
        }
        (2, _) => lcm.heal(id, req(json!({}))).await,
        _ => {
            lcm.terminate(id, req(json!({"terminationType": "FORCEFUL"})))
                .await
        }
    }
}
