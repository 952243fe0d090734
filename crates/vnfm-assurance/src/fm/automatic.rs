//! What automatic healing ([`super::auto_heal`]) and automatic scaling
//! ([`super::auto_scale`]) share: the per-instance switch in `vnfConfigurableProperties`, the
//! bounds (a cooldown and a rate limit per instance), and starting the operation without
//! queueing it behind another one.
//!
//! The bounds are counted from the instance's operation occurrences in the store (those with
//! `isAutomaticInvocation` of the kind's operations, by `startTime`), so they hold across
//! restarts and between replicas sharing a store; this process's [`Limiter`] adds the starts
//! it has reserved and not yet seen stored, so that two decisions of one process at the same
//! moment do not both pass.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use vnfm_store::OpOccQuery;
use vnfm_types::time::{Timestamp, parse_rfc3339};
use vnfm_types::{InstantiationState, LcmOperationType, VnfInstance, VnfInstanceId};

use vnfm_lcm::{Lcm, LcmError, OperationRequest};

/// How often automatic operations of one kind may start on one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// How long after an automatic operation of an instance started the next may start.
    pub cooldown: Duration,
    /// At most this many automatic operations of one instance start within [`Self::window`].
    pub max_in_window: usize,
    /// The window of [`Self::max_in_window`].
    pub window: Duration,
}

/// What came of a condition that may start an automatic operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutomaticOutcome {
    /// The operation started: its occurrence.
    Started {
        /// The occurrence.
        op_occ_id: String,
    },
    /// The instance does not have its switch (`switch`) set to `true`.
    Disabled {
        /// The `vnfConfigurableProperties` member that turns it on.
        switch: &'static str,
    },
    /// The alarm is less severe than automatic healing needs.
    BelowSeverity,
    /// The alarm names no VNFC: the whole VNF is never healed automatically.
    NoVnfc,
    /// The instance has no scaling rule (in `vnfConfigurableProperties.<property>`) for the
    /// crossed threshold's metric or the changed indicator.
    NoScalingRule {
        /// `thresholdScaling` or `indicatorScaling`.
        property: &'static str,
        /// The metric or indicator id.
        key: String,
    },
    /// The indicator's value moved within its band of the instance's rule: nothing to do.
    NotTriggered,
    /// The instance does not exist.
    UnknownInstance,
    /// The instance is not instantiated.
    NotInstantiated,
    /// The last automatic operation of the kind started less than the cooldown ago.
    CoolingDown {
        /// How long until the cooldown ends.
        remaining: Duration,
    },
    /// As many automatic operations of the kind started as the window allows.
    RateLimited {
        /// The maximum.
        max: usize,
        /// The window.
        window: Duration,
    },
    /// Another operation holds the instance: the automatic one is dropped, not queued.
    Busy {
        /// The occurrence holding the instance.
        op_occ_id: String,
    },
    /// The operation was refused (e.g. VNFCs the instance does not have, a scale beyond the
    /// aspect's maximum level).
    Refused {
        /// Why.
        reason: String,
    },
}

impl AutomaticOutcome {
    /// Whether an operator wants to hear of this outcome (an operation that was wanted but
    /// did not start), as opposed to a condition the automation is not meant for.
    pub fn is_dropped(&self) -> bool {
        matches!(
            self,
            AutomaticOutcome::CoolingDown { .. }
                | AutomaticOutcome::RateLimited { .. }
                | AutomaticOutcome::Busy { .. }
                | AutomaticOutcome::Refused { .. }
        )
    }

    /// Logs the outcome for `what` (e.g. "HEAL for alarm 1") of `instance`: a start at info
    /// level, a dropped operation as a warning, anything else at debug level.
    pub fn log(&self, what: &str, instance: &VnfInstanceId) {
        match self {
            AutomaticOutcome::Started { op_occ_id } => tracing::info!(
                vnf_instance_id = %instance, op_occ_id = %op_occ_id, "automatic {what} started"
            ),
            o if o.is_dropped() => {
                tracing::warn!(vnf_instance_id = %instance, "automatic {what} not started: {o}")
            }
            o => tracing::debug!(vnf_instance_id = %instance, "no automatic {what}: {o}"),
        }
    }
}

impl std::fmt::Display for AutomaticOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AutomaticOutcome::Started { op_occ_id } => {
                write!(f, "started as operation occurrence {op_occ_id}")
            }
            AutomaticOutcome::Disabled { switch } => {
                write!(f, "off for the instance ({switch} is not true)")
            }
            AutomaticOutcome::BelowSeverity => {
                write!(f, "the alarm is less severe than automatic healing needs")
            }
            AutomaticOutcome::NoVnfc => write!(
                f,
                "the alarm names no VNFC, and the whole VNF is never healed automatically"
            ),
            AutomaticOutcome::NoScalingRule { property, key } => write!(
                f,
                "the instance's vnfConfigurableProperties.{property} has no rule for {key}"
            ),
            AutomaticOutcome::NotTriggered => write!(
                f,
                "the value stayed within its band of the instance's indicatorScaling rule"
            ),
            AutomaticOutcome::UnknownInstance => write!(f, "the VNF instance does not exist"),
            AutomaticOutcome::NotInstantiated => write!(f, "the VNF instance is not instantiated"),
            AutomaticOutcome::CoolingDown { remaining } => write!(
                f,
                "dropped: the last automatic one started a moment ago; the cooldown ends in {} s",
                remaining.as_secs().max(1)
            ),
            AutomaticOutcome::RateLimited { max, window } => write!(
                f,
                "dropped: {max} automatic ones started within {} s",
                window.as_secs()
            ),
            AutomaticOutcome::Busy { op_occ_id } => write!(
                f,
                "dropped: operation occurrence {op_occ_id} holds the instance"
            ),
            AutomaticOutcome::Refused { reason } => write!(f, "refused: {reason}"),
        }
    }
}

/// Whether `instance` has `switch` set to `true` in its `vnfConfigurableProperties` and is
/// instantiated.
pub fn switched_on(instance: &VnfInstance, switch: &'static str) -> Result<(), AutomaticOutcome> {
    let on = instance
        .vnf_configurable_properties
        .as_ref()
        .and_then(|p| p.get(switch))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if !on {
        return Err(AutomaticOutcome::Disabled { switch });
    }
    if instance.instantiation_state != InstantiationState::Instantiated {
        return Err(AutomaticOutcome::NotInstantiated);
    }
    Ok(())
}

/// The automatic operations started per instance, for the cooldown and the rate limit.
#[derive(Debug, Default)]
pub struct Limiter {
    starts: HashMap<VnfInstanceId, VecDeque<Instant>>,
}

/// What the store knows of an instance's recent automatic operations of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// How many started within the window.
    pub in_window: usize,
    /// How long ago the last one started, if one did within the window.
    pub since_last: Option<Duration>,
}

impl Limiter {
    /// Admits an operation on `instance` at `now` and reserves its place, or says why not.
    pub fn admit(
        &mut self,
        bounds: &Bounds,
        instance: &VnfInstanceId,
        now: Instant,
    ) -> Result<(), AutomaticOutcome> {
        self.admit_with(bounds, instance, now, History::default())
    }

    /// [`Self::admit`], also counting the starts `stored` (the store's record, which may
    /// hold starts of other processes, or of this one before a restart). This process's own
    /// starts are in both, so the larger count and the later start decide.
    pub fn admit_with(
        &mut self,
        bounds: &Bounds,
        instance: &VnfInstanceId,
        now: Instant,
        stored: History,
    ) -> Result<(), AutomaticOutcome> {
        let starts = self.starts.entry(instance.clone()).or_default();
        while starts
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= bounds.window)
        {
            starts.pop_front();
        }
        let mine = starts.back().map(|t| now.saturating_duration_since(*t));
        let since_last = match (mine, stored.since_last) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(since) = since_last
            && since < bounds.cooldown
        {
            return Err(AutomaticOutcome::CoolingDown {
                remaining: bounds.cooldown - since,
            });
        }
        if starts.len().max(stored.in_window) >= bounds.max_in_window {
            return Err(AutomaticOutcome::RateLimited {
                max: bounds.max_in_window,
                window: bounds.window,
            });
        }
        starts.push_back(now);
        Ok(())
    }

    /// Gives back the place [`Self::admit`] reserved at `at` (the operation did not start).
    pub fn release(&mut self, instance: &VnfInstanceId, at: Instant) {
        if let Some(starts) = self.starts.get_mut(instance) {
            if let Some(i) = starts.iter().rposition(|t| *t == at) {
                starts.remove(i);
            }
            if starts.is_empty() {
                self.starts.remove(instance);
            }
        }
    }
}

/// The automatic occurrences of `operations` on `id` that started within `window` of now, as
/// the store records them.
pub async fn stored_history(
    lcm: &Lcm,
    id: &VnfInstanceId,
    operations: &[LcmOperationType],
    window: Duration,
) -> Result<History, LcmError> {
    let now = Timestamp::now();
    let mut out = History::default();
    for operation in operations {
        let mut after = None;
        loop {
            let page = lcm
                .list_op_occs(&OpOccQuery {
                    vnf_instance_id: Some(id.clone()),
                    operation: Some(*operation),
                    after,
                    limit: Some(vnfm_store::MAX_PAGE_SIZE),
                    ..OpOccQuery::default()
                })
                .await?;
            for occ in page.items.iter().filter(|o| o.is_automatic_invocation) {
                let Some(started) = parse_rfc3339(occ.start_time.as_str()) else {
                    continue;
                };
                // A start in the future (clocks of replicas apart) counts as now.
                let since = Duration::try_from(now.duration_since(started)).unwrap_or_default();
                if since < window {
                    out.in_window += 1;
                    out.since_last = Some(out.since_last.map_or(since, |s| s.min(since)));
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    Ok(out)
}

/// Starts `req` on `id` as an automatic operation if the bounds admit it: the automatic
/// occurrences of `operations` the store records, and this process's `limiter`. A refusal
/// gives the place back.
pub async fn start_bounded(
    lcm: &Lcm,
    limiter: &Mutex<Limiter>,
    bounds: &Bounds,
    operations: &[LcmOperationType],
    id: &VnfInstanceId,
    req: OperationRequest,
) -> AutomaticOutcome {
    let lock = || limiter.lock().unwrap_or_else(PoisonError::into_inner);
    let stored = match stored_history(lcm, id, operations, bounds.window).await {
        Ok(h) => h,
        Err(e) => {
            return AutomaticOutcome::Refused {
                reason: format!("the instance's past automatic operations cannot be read: {e}"),
            };
        }
    };
    let now = Instant::now();
    if let Err(outcome) = lock().admit_with(bounds, id, now, stored) {
        return outcome;
    }
    match lcm.start_automatic(id, req).await {
        Ok(occ) => AutomaticOutcome::Started {
            op_occ_id: occ.id.to_string(),
        },
        Err(e) => {
            lock().release(id, now);
            match e {
                LcmError::InstanceBusy { op_occ_id, .. } => AutomaticOutcome::Busy { op_occ_id },
                e => AutomaticOutcome::Refused {
                    reason: e.to_string(),
                },
            }
        }
    }
}

/// The instance `id`, or the outcome that ends the automatic operation when it cannot be read.
pub async fn instance_of(lcm: &Lcm, id: &VnfInstanceId) -> Result<VnfInstance, AutomaticOutcome> {
    match lcm.get_instance(id).await {
        Ok(i) => Ok(i),
        Err(LcmError::NotFound { .. }) => Err(AutomaticOutcome::UnknownInstance),
        Err(e) => Err(AutomaticOutcome::Refused {
            reason: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(cooldown: u64, max: usize) -> Bounds {
        Bounds {
            cooldown: Duration::from_secs(cooldown),
            max_in_window: max,
            window: Duration::from_secs(3600),
        }
    }

    #[test]
    fn the_cooldown_and_the_window_bound_each_instance_apart() {
        let (a, b) = (VnfInstanceId::new("a"), VnfInstanceId::new("b"));
        let mut l = Limiter::default();
        let t0 = Instant::now();
        let b2 = bounds(60, 2);
        l.admit(&b2, &a, t0).unwrap();
        assert!(matches!(
            l.admit(&b2, &a, t0 + Duration::from_secs(30)),
            Err(AutomaticOutcome::CoolingDown { remaining }) if remaining == Duration::from_secs(30)
        ));
        l.admit(&b2, &b, t0 + Duration::from_secs(30)).unwrap();
        l.admit(&b2, &a, t0 + Duration::from_secs(61)).unwrap();
        assert!(matches!(
            l.admit(&b2, &a, t0 + Duration::from_secs(200)),
            Err(AutomaticOutcome::RateLimited { max: 2, .. })
        ));
        // An hour after the first start, one place is free again.
        l.admit(&b2, &a, t0 + Duration::from_secs(3600)).unwrap();
    }

    #[test]
    fn stored_starts_bound_a_fresh_process() {
        let a = VnfInstanceId::new("a");
        let mut l = Limiter::default();
        let t0 = Instant::now();
        let b2 = bounds(60, 2);
        // Another process (or this one before a restart) started one 10 s ago.
        let recent = History {
            in_window: 1,
            since_last: Some(Duration::from_secs(10)),
        };
        assert!(matches!(
            l.admit_with(&b2, &a, t0, recent),
            Err(AutomaticOutcome::CoolingDown { remaining }) if remaining == Duration::from_secs(50)
        ));
        // Two in the hour, the last long ago: the rate limit holds.
        let two = History {
            in_window: 2,
            since_last: Some(Duration::from_secs(600)),
        };
        assert!(matches!(
            l.admit_with(&b2, &a, t0, two),
            Err(AutomaticOutcome::RateLimited { max: 2, .. })
        ));
        // This process's own start is in the store too: not counted twice.
        l.admit_with(&b2, &a, t0, History::default()).unwrap();
        let own = History {
            in_window: 1,
            since_last: Some(Duration::from_secs(61)),
        };
        l.admit_with(&b2, &a, t0 + Duration::from_secs(61), own)
            .unwrap();
    }

    #[test]
    fn a_released_place_is_free_again() {
        let a = VnfInstanceId::new("a");
        let mut l = Limiter::default();
        let t0 = Instant::now();
        let b = bounds(60, 1);
        l.admit(&b, &a, t0).unwrap();
        l.release(&a, t0);
        l.admit(&b, &a, t0 + Duration::from_secs(1)).unwrap();
    }
}
