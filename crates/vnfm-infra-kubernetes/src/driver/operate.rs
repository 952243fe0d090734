//! Operate: stopping a VNF scales its workloads to zero (recording their replicas) and
//! starting it gives them back.

use serde_json::Value;
use vnfm_driver_api::{InfraOutcome, InfraRequest, InfraStep};
use vnfm_types::{StopType, VnfOperationalState};

use super::{Ctx, DriverState, KubernetesDriver, StoppedWorkload, check, reference, require_state};
use crate::KubeError;
use crate::order::{is_scalable, is_workload};
use crate::plan::{INSTANCE_LABEL, Planned, label_value};
use crate::ready::{wait_gone, wait_ready};

impl KubernetesDriver {
    pub(super) async fn operate_inner(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, KubeError> {
        let InfraStep::Operate {
            change_state_to,
            stop_type,
            graceful_stop_timeout_seconds,
            vnfc_resource_ids,
        } = &req.step
        else {
            return Err(KubeError::input("operate was called with another step"));
        };
        if !vnfc_resource_ids.is_empty() {
            return Err(KubeError::input(format!(
                "operating single VNFCs ({}) is not supported for CNFs: a pod of a Deployment, StatefulSet or ReplicaSet cannot be stopped on its own (its controller replaces it); operate the whole VNF (no vnfcInstanceId)",
                vnfc_resource_ids.join(", ")
            )));
        }
        let ctx = self.connect(req)?;
        let mut state = require_state(req)?;
        match change_state_to {
            VnfOperationalState::Stopped => {
                let grace = match stop_type {
                    Some(StopType::Forceful) => Some(0),
                    Some(StopType::Graceful) => *graceful_stop_timeout_seconds,
                    None => None,
                };
                self.stop(&ctx, &mut state, grace).await?;
            }
            VnfOperationalState::Started => self.start(&ctx, &mut state).await?,
        }
        let resources = ctx.inventory(&state).await?;
        let mut out = ctx.outcome(resources, Some(&state));
        out.vnf_state = Some(*change_state_to);
        Ok(out)
    }

    /// Scales every workload with replicas to zero (recording the replicas it had), deletes
    /// the instance's pods with `grace` seconds, and waits until they are gone. Refused before
    /// anything changes when a workload cannot be scaled to zero.
    async fn stop(
        &self,
        ctx: &Ctx<'_>,
        state: &mut DriverState,
        grace: Option<u32>,
    ) -> Result<(), KubeError> {
        let unstoppable: Vec<String> = state
            .objects
            .iter()
            .filter(|p| is_workload(p.group(), p.kind()) && !is_scalable(p.group(), p.kind()))
            .map(Planned::display)
            .collect();
        if !unstoppable.is_empty() {
            return Err(KubeError::input(format!(
                "the VNF cannot be stopped: {} run pods that cannot be scaled to zero (only Deployment, StatefulSet and ReplicaSet workloads can be stopped); nothing was changed",
                unstoppable.join(", ")
            )));
        }
        let workloads: Vec<usize> = (0..state.objects.len())
            .filter(|&i| is_scalable(state.objects[i].group(), state.objects[i].kind()))
            .collect();
        for &i in &workloads {
            check(&ctx.req.control, "stopping workloads")?;
            if !state.stopped.iter().any(|w| w.is(&state.objects[i])) {
                let replicas = self.replicas_to_restore(ctx, state, i).await?;
                let p = &state.objects[i];
                state.stopped.push(StoppedWorkload {
                    kind: p.kind().to_string(),
                    namespace: p.namespace().unwrap_or("").to_string(),
                    name: p.name().to_string(),
                    replicas,
                });
            }
            ctx.set_replicas(&mut state.objects[i], 0).await?;
        }
        // The controllers remove the pods with their own grace period; deleting them as well
        // gives them the one the request asked for.
        let selector = format!("{INSTANCE_LABEL}={}", label_value(&ctx.instance_id));
        let pod_kind = ctx.cluster.pod_kind().await?;
        let mut gone = Vec::new();
        for pod in ctx
            .cluster
            .list(&pod_kind, Some(&state.namespace), &selector)
            .await?
        {
            check(&ctx.req.control, "stopping pods")?;
            let name = pod.metadata.name.clone().unwrap_or_default();
            if let Some(uid) = ctx
                .cluster
                .delete_pod(&state.namespace, &name, grace)
                .await?
            {
                gone.push((reference("v1", "Pod", Some(&state.namespace), &name), uid));
            }
        }
        wait_gone(&ctx.cluster, &gone, ctx.delete_timeout, &ctx.req.control).await?;
        let stopped: Vec<Planned> = workloads
            .iter()
            .map(|&i| state.objects[i].clone())
            .collect();
        wait_ready(
            &ctx.cluster,
            &stopped,
            &ctx.instance_id,
            self.ready_timeout(&state.params),
            &ctx.req.control,
        )
        .await
    }

    /// The replicas a start gives back to workload `i`: its planned count, or for a workload
    /// an autoscaler owns, the replicas it has now (the autoscaler's minimum when it has none).
    async fn replicas_to_restore(
        &self,
        ctx: &Ctx<'_>,
        state: &DriverState,
        i: usize,
    ) -> Result<u32, KubeError> {
        let p = &state.objects[i];
        let as_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let Some(hpa) = &p.hpa else {
            return Ok(p
                .object
                .pointer("/spec/replicas")
                .and_then(Value::as_u64)
                .map_or(1, as_u32));
        };
        let live = ctx
            .cluster
            .get(p)
            .await?
            .and_then(|o| o.data.pointer("/spec/replicas").and_then(Value::as_u64))
            .filter(|n| *n > 0);
        let minimum = state
            .objects
            .iter()
            .find(|o| o.kind() == "HorizontalPodAutoscaler" && o.name() == hpa)
            .and_then(|o| {
                o.object
                    .pointer("/spec/minReplicas")
                    .and_then(Value::as_u64)
            })
            .unwrap_or(1);
        Ok(as_u32(live.unwrap_or(minimum)))
    }

    /// Gives the stopped workloads their recorded replicas back and waits until they are
    /// ready. Starting a VNF that is not stopped changes nothing.
    async fn start(&self, ctx: &Ctx<'_>, state: &mut DriverState) -> Result<(), KubeError> {
        let mut started = Vec::new();
        for w in state.stopped.clone() {
            check(&ctx.req.control, "starting workloads")?;
            let Some(i) = state.objects.iter().position(|p| w.is(p)) else {
                continue;
            };
            ctx.set_replicas(&mut state.objects[i], w.replicas).await?;
            started.push(state.objects[i].clone());
        }
        wait_ready(
            &ctx.cluster,
            &started,
            &ctx.instance_id,
            self.ready_timeout(&state.params),
            &ctx.req.control,
        )
        .await?;
        state.stopped.clear();
        Ok(())
    }
}
