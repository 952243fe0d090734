//! Automatic healing: an alarm on VNFCs of an instance whose `vnfConfigurableProperties` have
//! `isAutohealEnabled: true` (SOL001 `VnfConfigurableProperties.is_autoheal_enabled`, the
//! name OpenStack Tacker reads too) starts a HEAL of those VNFCs, with
//! `isAutomaticInvocation: true`.
//!
//! Every automatic heal is bounded: an alarm below [`AutoHealPolicy::min_severity`] heals
//! nothing, one instance is healed at most as often as [`AutoHealPolicy::bounds`] allow, and
//! a heal never queues behind another operation: while one holds the instance the heal is
//! dropped, and the [`AutomaticOutcome`] (logged by the fault manager) says so. The same
//! alarm raised again while open does not heal again; a new alarm does, once the bounds
//! allow it.
//!
//! The cooldown and rate limit are counted from the instance's automatic HEAL occurrences in
//! the store (see [`super::automatic`]): they hold across restarts and between replicas.
//!
//! A monitoring system may also name the VNFCs to heal directly (OpenStack Tacker's
//! `auto_heal` alerts, [`AutoHeal::request`]): as Tacker's plugin does, the requests of one
//! instance are gathered for a window ([`DEFAULT_BATCH_WINDOW`], Tacker's `timer_interval`)
//! and then heal all their VNFCs in one HEAL, within the same bounds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use vnfm_types::{Alarm, HealVnfRequest, PerceivedSeverity, VnfInstance, VnfInstanceId};

use super::automatic::{
    AutomaticOutcome, Bounds, Limiter, instance_of, start_bounded, switched_on,
};
use vnfm_lcm::{Lcm, OperationRequest};

pub use vnfm_lcm::automation::AUTOHEAL_PROPERTY;

/// The bounds of automatic healing, the same for every instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoHealPolicy {
    /// The least severe alarm that heals: with the default `MAJOR`, `CRITICAL` and `MAJOR`
    /// alarms heal, `MINOR`, `WARNING` and `INDETERMINATE` ones do not.
    pub min_severity: PerceivedSeverity,
    /// How often one instance may be healed automatically.
    pub bounds: Bounds,
}

/// How long [`AutoHeal::request`] gathers the VNFCs of one instance before healing them in
/// one HEAL: 20 s, the default `timer_interval` of Tacker's Prometheus plugin.
pub const DEFAULT_BATCH_WINDOW: Duration = Duration::from_secs(20);

impl Default for AutoHealPolicy {
    /// `MAJOR`, no cooldown (as OpenStack Tacker, which heals every `auto_heal` alert), at
    /// most 5 heals an hour per instance.
    fn default() -> Self {
        AutoHealPolicy {
            min_severity: PerceivedSeverity::Major,
            bounds: Bounds {
                cooldown: Duration::ZERO,
                max_in_window: 5,
                window: Duration::from_secs(3600),
            },
        }
    }
}

impl AutoHealPolicy {
    /// Whether an alarm of `severity` is severe enough to heal.
    pub fn heals(&self, severity: PerceivedSeverity) -> bool {
        // PerceivedSeverity orders from CRITICAL (least) to CLEARED (greatest).
        severity != PerceivedSeverity::Cleared && severity <= self.min_severity
    }
}

/// The HEAL `alarm` calls for on `instance` under `policy`, or why there is none. Pure: the
/// cooldown and rate limit are checked apart ([`Limiter`]).
pub fn wanted_heal(
    policy: &AutoHealPolicy,
    alarm: &Alarm,
    instance: &VnfInstance,
) -> Result<HealVnfRequest, AutomaticOutcome> {
    switched_on(instance, AUTOHEAL_PROPERTY)?;
    if !policy.heals(alarm.perceived_severity) {
        return Err(AutomaticOutcome::BelowSeverity);
    }
    let vnfcs = alarm.vnfc_instance_ids.clone().unwrap_or_default();
    if vnfcs.is_empty() {
        return Err(AutomaticOutcome::NoVnfc);
    }
    Ok(HealVnfRequest {
        vnfc_instance_id: Some(vnfcs),
        cause: Some(format!(
            "automatic healing for alarm {}: {}",
            alarm.id, alarm.probable_cause
        )),
        additional_params: None,
        heal_script: None,
    })
}

/// Automatic healing over the lifecycle manager.
#[derive(Clone)]
pub struct AutoHeal {
    lcm: Lcm,
    policy: AutoHealPolicy,
    limiter: Arc<Mutex<Limiter>>,
    batch_window: Duration,
    pending: Arc<Mutex<Pending>>,
}

/// The VNFCs [`AutoHeal::request`] gathers per instance, with the first request's cause.
type Pending = HashMap<VnfInstanceId, (Vec<String>, String)>;

impl std::fmt::Debug for AutoHeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoHeal")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl AutoHeal {
    /// Automatic healing that starts HEALs on `lcm` within `policy`.
    pub fn new(lcm: Lcm, policy: AutoHealPolicy) -> Self {
        AutoHeal {
            lcm,
            policy,
            limiter: Arc::default(),
            batch_window: DEFAULT_BATCH_WINDOW,
            pending: Arc::default(),
        }
    }

    /// The same automatic healing, gathering the requests of [`AutoHeal::request`] for
    /// `window` (default [`DEFAULT_BATCH_WINDOW`]).
    pub fn with_batch_window(mut self, window: Duration) -> Self {
        self.batch_window = window;
        self
    }

    /// The bounds in force.
    pub fn policy(&self) -> &AutoHealPolicy {
        &self.policy
    }

    /// Whether an alarm now at `severity`, previously at `before` (`None`: new), is one to
    /// consider: it just became severe enough to heal.
    pub fn triggered_by(
        &self,
        before: Option<PerceivedSeverity>,
        severity: PerceivedSeverity,
    ) -> bool {
        self.policy.heals(severity) && !before.is_some_and(|b| self.policy.heals(b))
    }

    /// Starts the HEAL `alarm` calls for, if any and if the bounds allow it.
    pub async fn consider(&self, alarm: &Alarm) -> AutomaticOutcome {
        let id = &alarm.managed_object_id;
        let instance = match instance_of(&self.lcm, id).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        match wanted_heal(&self.policy, alarm, &instance) {
            Ok(req) => {
                let req = OperationRequest::Heal(req);
                let ops = [vnfm_types::LcmOperationType::Heal];
                start_bounded(&self.lcm, &self.limiter, &self.policy.bounds, &ops, id, req).await
            }
            Err(outcome) => outcome,
        }
    }

    /// A monitoring system asks for a HEAL of `vnfcs` (`vnfcInfo` ids) of `instance` because
    /// of `cause`. The VNFCs asked for within the batch window of the first request are
    /// healed together in one HEAL when the window ends (in the background), within the
    /// policy's bounds; the outcome is logged.
    pub fn request(&self, instance: &VnfInstanceId, vnfcs: &[String], cause: &str) {
        let first = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let first = !pending.contains_key(instance);
            let (gathered, _) = pending
                .entry(instance.clone())
                .or_insert_with(|| (Vec::new(), cause.to_owned()));
            for v in vnfcs {
                if !gathered.contains(v) {
                    gathered.push(v.clone());
                }
            }
            first
        };
        if !first {
            return;
        }
        let (this, instance) = (self.clone(), instance.clone());
        tokio::spawn(async move {
            tokio::time::sleep(this.batch_window).await;
            let taken = this
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&instance);
            let (vnfcs, cause) = taken.unwrap_or_default();
            let outcome = this.heal_vnfcs(&instance, &vnfcs, &cause).await;
            outcome.log(
                &format!("HEAL of {} ({cause})", vnfcs.join(", ")),
                &instance,
            );
        });
    }

    /// Starts a HEAL of those of `vnfcs` that `instance` has, if its switch is on and the
    /// bounds allow it (Tacker ignores VNFCs an instance does not have; so does this).
    pub async fn heal_vnfcs(
        &self,
        instance: &VnfInstanceId,
        vnfcs: &[String],
        cause: &str,
    ) -> AutomaticOutcome {
        let found = match instance_of(&self.lcm, instance).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        if let Err(outcome) = switched_on(&found, AUTOHEAL_PROPERTY) {
            return outcome;
        }
        let known: Vec<String> = found
            .instantiated_vnf_info
            .as_ref()
            .and_then(|i| i.vnfc_info.as_ref())
            .into_iter()
            .flatten()
            .filter(|v| vnfcs.contains(&v.id))
            .map(|v| v.id.clone())
            .collect();
        if known.is_empty() {
            return AutomaticOutcome::Refused {
                reason: format!(
                    "the instance has none of the VNFCs asked for ({})",
                    vnfcs.join(", ")
                ),
            };
        }
        let req = OperationRequest::Heal(HealVnfRequest {
            vnfc_instance_id: Some(known),
            cause: Some(format!("automatic healing: {cause}")),
            additional_params: None,
            heal_script: None,
        });
        let ops = [vnfm_types::LcmOperationType::Heal];
        start_bounded(
            &self.lcm,
            &self.limiter,
            &self.policy.bounds,
            &ops,
            instance,
            req,
        )
        .await
    }
}
