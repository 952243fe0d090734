//! Automatic scaling: a monitoring system that decides an instance needs more or fewer
//! VNFCs (a Prometheus alerting rule with `function_type: auto_scale`, as OpenStack Tacker's
//! Prometheus plugin reads it) asks for a SCALE, which starts with
//! `isAutomaticInvocation: true` when the instance's `vnfConfigurableProperties` have
//! `isAutoscaleEnabled: true` (SOL001 `VnfConfigurableProperties.is_autoscale_enabled`).
//!
//! A threshold of performance management ([`crate::pm`]) scales too: when the instance's
//! `vnfConfigurableProperties` hold a `thresholdScaling` rule for the threshold's metric
//! (`{"VCpuUsageMeanVnf": {"aspectId": "web_scale", "numberOfSteps": 1}}`), a crossing `UP`
//! asks for a SCALE_OUT of that aspect and a crossing `DOWN` for a SCALE_IN
//! ([`AutoScale::consider_crossing`]).
//!
//! A VNF indicator scales too: the instance's `indicatorScaling` rule for it
//! ([`super::indicator_scaling`]) asks for a SCALE or a SCALE_TO_LEVEL when the value moves
//! into another band ([`AutoScale::consider_indicator`]).
//!
//! The VNFD's bounds hold as for any SCALE: a step beyond the aspect's maximum (or below
//! level 0) is refused, and the refusal is the outcome. One instance is scaled automatically
//! at most as often as [`AutoScalePolicy::bounds`] allow (per instance, both directions
//! together, counted from the instance's automatic SCALE and SCALE_TO_LEVEL occurrences in
//! the store, see [`super::automatic`]), and never while another operation holds it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use vnfm_types::{ScaleType, ScaleVnfRequest, ScaleVnfToLevelRequest, VnfInstance, VnfInstanceId};

use super::automatic::{
    AutomaticOutcome, Bounds, Limiter, instance_of, start_bounded, switched_on,
};
use super::indicator_scaling::{INDICATOR_SCALING_PROPERTY, IndicatorAction, IndicatorRule};
use vnfm_lcm::{Lcm, OperationRequest};

/// The operations whose automatic starts the scaling bounds count together.
const SCALES: &[vnfm_types::LcmOperationType] = &[
    vnfm_types::LcmOperationType::Scale,
    vnfm_types::LcmOperationType::ScaleToLevel,
];

pub use vnfm_lcm::automation::{AUTOSCALE_PROPERTY, THRESHOLD_SCALING_PROPERTY};

/// What a threshold crossing on one metric scales: `numberOfSteps` (default 1) of
/// `aspectId`, out when the value crosses up, in when it crosses down.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScalingRule {
    /// The VNFD's scaling aspect.
    pub aspect_id: String,
    /// Steps per crossing.
    #[serde(default = "one_step")]
    pub number_of_steps: u32,
}

fn one_step() -> u32 {
    1
}

/// The rule of `instance` for threshold crossings on `metric`: `Err` with the outcome when
/// there is none or it is malformed.
pub fn scaling_rule(instance: &VnfInstance, metric: &str) -> Result<ScalingRule, AutomaticOutcome> {
    let rule = instance
        .vnf_configurable_properties
        .as_ref()
        .and_then(|p| p.get(THRESHOLD_SCALING_PROPERTY))
        .and_then(|rules| rules.get(metric));
    let Some(rule) = rule else {
        return Err(AutomaticOutcome::NoScalingRule {
            property: THRESHOLD_SCALING_PROPERTY,
            key: metric.to_owned(),
        });
    };
    let malformed = |why: String| AutomaticOutcome::Refused {
        reason: format!(
            "vnfConfigurableProperties.{THRESHOLD_SCALING_PROPERTY}.{metric} is malformed: {why} \
             (expected {{\"aspectId\": \"<aspect>\", \"numberOfSteps\": <1 or more>}})"
        ),
    };
    let rule = ScalingRule::deserialize(rule).map_err(|e| malformed(e.to_string()))?;
    if rule.number_of_steps == 0 {
        return Err(malformed("numberOfSteps is 0".into()));
    }
    Ok(rule)
}

/// The bounds of automatic scaling, the same for every instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoScalePolicy {
    /// How often one instance may be scaled automatically.
    pub bounds: Bounds,
}

impl Default for AutoScalePolicy {
    /// No cooldown, as OpenStack Tacker, which scales on every `auto_scale` alert (a
    /// scale-in may follow a scale-out at once; give a cooldown for time for a scaled VNF's
    /// load to settle), and at most 12 scalings an hour per instance.
    fn default() -> Self {
        AutoScalePolicy {
            bounds: Bounds {
                cooldown: Duration::ZERO,
                max_in_window: 12,
                window: Duration::from_secs(3600),
            },
        }
    }
}

/// Automatic scaling over the lifecycle manager.
#[derive(Clone)]
pub struct AutoScale {
    lcm: Lcm,
    policy: AutoScalePolicy,
    limiter: Arc<Mutex<Limiter>>,
}

impl std::fmt::Debug for AutoScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoScale")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl AutoScale {
    /// Automatic scaling that starts SCALEs on `lcm` within `policy`.
    pub fn new(lcm: Lcm, policy: AutoScalePolicy) -> Self {
        AutoScale {
            lcm,
            policy,
            limiter: Arc::default(),
        }
    }

    /// The bounds in force.
    pub fn policy(&self) -> &AutoScalePolicy {
        &self.policy
    }

    /// Starts a SCALE of `aspect_id` by `steps` (out or in) on instance `id`, if the instance
    /// has automatic scaling on and the bounds allow it. `cause` says what asked for it (it
    /// goes into the request's `additionalParams.cause`).
    pub async fn consider(
        &self,
        id: &VnfInstanceId,
        scale_out: bool,
        aspect_id: &str,
        steps: u32,
        cause: &str,
    ) -> AutomaticOutcome {
        let instance = match instance_of(&self.lcm, id).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        if let Err(outcome) = switched_on(&instance, AUTOSCALE_PROPERTY) {
            return outcome;
        }
        self.start(id, scale_out, aspect_id, steps, cause).await
    }

    /// A threshold on `metric` of instance `id` crossed (`up` or down): starts the SCALE
    /// that the instance's `thresholdScaling` rule for `metric` names, out when `up`, if the
    /// instance has automatic scaling on and the bounds allow it. `cause` goes into the
    /// request's `additionalParams.cause`.
    pub async fn consider_crossing(
        &self,
        id: &VnfInstanceId,
        metric: &str,
        up: bool,
        cause: &str,
    ) -> AutomaticOutcome {
        let instance = match instance_of(&self.lcm, id).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        if let Err(outcome) = switched_on(&instance, AUTOSCALE_PROPERTY) {
            return outcome;
        }
        let rule = match scaling_rule(&instance, metric) {
            Ok(rule) => rule,
            Err(outcome) => return outcome,
        };
        self.start(id, up, &rule.aspect_id, rule.number_of_steps, cause)
            .await
    }

    /// Indicator `indicator_id` of instance `id` changed from `old` to `new`: starts what the
    /// instance's `indicatorScaling` rule for it asks for (a SCALE or a SCALE_TO_LEVEL), if
    /// the value moved into another band, the instance has automatic scaling on and the
    /// bounds allow it. `cause` goes into the request's `additionalParams.cause`.
    pub async fn consider_indicator(
        &self,
        id: &VnfInstanceId,
        indicator_id: &str,
        old: Option<f64>,
        new: f64,
        cause: &str,
    ) -> AutomaticOutcome {
        let instance = match instance_of(&self.lcm, id).await {
            Ok(i) => i,
            Err(outcome) => return outcome,
        };
        if let Err(outcome) = switched_on(&instance, AUTOSCALE_PROPERTY) {
            return outcome;
        }
        let rule = instance
            .vnf_configurable_properties
            .as_ref()
            .and_then(|p| p.get(INDICATOR_SCALING_PROPERTY))
            .and_then(|rules| rules.get(indicator_id));
        let Some(rule) = rule else {
            return AutomaticOutcome::NoScalingRule {
                property: INDICATOR_SCALING_PROPERTY,
                key: indicator_id.to_owned(),
            };
        };
        let rule = match IndicatorRule::parse(rule) {
            Ok(rule) => rule,
            Err(why) => {
                return AutomaticOutcome::Refused {
                    reason: format!(
                        "vnfConfigurableProperties.{INDICATOR_SCALING_PROPERTY}.{indicator_id} \
                         is malformed: {why}"
                    ),
                };
            }
        };
        match rule.decide(old, new) {
            None => AutomaticOutcome::NotTriggered,
            Some(IndicatorAction::Scale {
                out,
                aspect_id,
                steps,
            }) => self.start(id, out, &aspect_id, steps, cause).await,
            Some(IndicatorAction::ToLevel(level)) => {
                let req = OperationRequest::ScaleToLevel(ScaleVnfToLevelRequest {
                    instantiation_level_id: Some(level),
                    scale_info: None,
                    additional_params: Some(cause_param(cause)),
                });
                start_bounded(
                    &self.lcm,
                    &self.limiter,
                    &self.policy.bounds,
                    SCALES,
                    id,
                    req,
                )
                .await
            }
        }
    }

    async fn start(
        &self,
        id: &VnfInstanceId,
        scale_out: bool,
        aspect_id: &str,
        steps: u32,
        cause: &str,
    ) -> AutomaticOutcome {
        let params = cause_param(cause);
        let req = ScaleVnfRequest {
            scale_type: if scale_out {
                ScaleType::ScaleOut
            } else {
                ScaleType::ScaleIn
            },
            aspect_id: aspect_id.to_owned(),
            number_of_steps: Some(steps),
            additional_params: Some(params),
        };
        let req = OperationRequest::Scale(req);
        start_bounded(
            &self.lcm,
            &self.limiter,
            &self.policy.bounds,
            SCALES,
            id,
            req,
        )
        .await
    }
}

/// `additionalParams` saying what asked for an automatic operation.
fn cause_param(cause: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut params = serde_json::Map::new();
    params.insert("cause".into(), serde_json::Value::String(cause.to_owned()));
    params
}
