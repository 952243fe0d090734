//! The indicator collector: evaluates the PromQL of every declared indicator of every
//! instantiated instance (when a metrics source is configured), periodically, and drops the
//! values that no longer apply (always, so that pushed values of a terminated instance go).

use std::collections::BTreeSet;
use std::time::Duration;

use vnfm_store::{InstanceQuery, MAX_PAGE_SIZE, ProjectScope};
use vnfm_types::{InstantiationState, VnfInstance, VnfInstanceId};

use super::IndicatorManager;
use vnfm_lcm::LcmError;
use vnfm_lcm::runner::store_err;

/// What one evaluation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evaluated {
    /// Indicator values that changed (each stored and notified).
    pub changed: usize,
    /// Indicators whose value could not be read, and instances whose evaluation failed (each
    /// logged).
    pub failures: usize,
    /// Stored values dropped: their instance is no longer instantiated, or its VNFD no
    /// longer declares them.
    pub dropped: u64,
}

/// The background task running the collector.
#[derive(Debug)]
pub struct IndicatorCollector {
    _task: vnfm_lcm::periodic::Periodic,
}

impl IndicatorCollector {
    /// Evaluates `indicators` every `tick` until dropped. Must be called inside a tokio
    /// runtime.
    pub fn start(indicators: IndicatorManager, tick: Duration) -> IndicatorCollector {
        let task = vnfm_lcm::periodic::Periodic::start(tick, move || {
            let indicators = indicators.clone();
            async move {
                if let Err(e) = indicators.evaluate_all().await {
                    tracing::warn!(error = %e, "indicator evaluation failed; trying again at the next run");
                }
            }
        });
        IndicatorCollector { _task: task }
    }
}

impl IndicatorManager {
    /// One evaluation of every indicator with a PromQL expression of every instantiated
    /// instance; values of instances no longer instantiated, and of indicators no longer
    /// declared, are dropped.
    pub async fn evaluate_all(&self) -> Result<Evaluated, LcmError> {
        let mut out = Evaluated::default();
        let mut stale = self.instances_with_values().await?;
        if self.metrics().is_none() {
            // Nothing to compute: only the instances that have values need a look.
            let mut gone = BTreeSet::new();
            for id in stale {
                let id = VnfInstanceId::new(id);
                match self.store().get_instance(&id).await.map_err(store_err)? {
                    Some((instance, _))
                        if instance.instantiation_state == InstantiationState::Instantiated =>
                    {
                        self.evaluate_logged(&instance, true, &mut out).await;
                    }
                    _ => {
                        gone.insert(id.to_string());
                    }
                }
            }
            return self.drop_values_of(gone, out).await;
        }
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store()
                .list_instances(&InstanceQuery {
                    instantiation_state: Some(InstantiationState::Instantiated),
                    after: after.take(),
                    limit: Some(MAX_PAGE_SIZE),
                    ..InstanceQuery::default()
                })
                .await
                .map_err(store_err)?;
            for instance in &page.items {
                let had_values = stale.remove(instance.id.as_str());
                self.evaluate_logged(instance, had_values, &mut out).await;
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        self.drop_values_of(stale, out).await
    }

    /// Drops every value of the instances `ids` (no longer instantiated, or deleted).
    async fn drop_values_of(
        &self,
        ids: BTreeSet<String>,
        mut out: Evaluated,
    ) -> Result<Evaluated, LcmError> {
        for id in ids {
            out.dropped += self
                .store()
                .retain_indicators(&VnfInstanceId::new(id), &[])
                .await
                .map_err(store_err)?;
        }
        Ok(out)
    }

    /// [`Self::evaluate`], counting and logging a failure: one instance's failure (a store
    /// conflict, say) does not stop the others.
    async fn evaluate_logged(&self, instance: &VnfInstance, had_values: bool, out: &mut Evaluated) {
        if let Err(e) = self.evaluate(instance, had_values, out).await {
            out.failures += 1;
            tracing::warn!(vnf_instance_id = %instance.id, error = %e, "evaluating the VNF indicators of an instance failed");
        }
    }

    async fn evaluate(
        &self,
        instance: &VnfInstance,
        had_values: bool,
        out: &mut Evaluated,
    ) -> Result<(), LcmError> {
        let defs = self.declared(instance).await?;
        if had_values {
            let keep: Vec<String> = defs.iter().map(|d| d.id.clone()).collect();
            let stored = self
                .store()
                .list_indicators(&ProjectScope::All, Some(&instance.id), None, MAX_PAGE_SIZE)
                .await
                .map_err(store_err)?;
            if stored.items.iter().any(|i| !keep.contains(&i.id)) {
                // An empty `keep` would drop everything, which is also what is wanted.
                out.dropped += self
                    .store()
                    .retain_indicators(&instance.id, &keep)
                    .await
                    .map_err(store_err)?;
            }
        }
        let Some(metrics) = self.metrics() else {
            return Ok(());
        };
        for def in &defs {
            let Some(promql) = &def.promql else { continue };
            match metrics.indicator(promql, instance.id.as_str()).await {
                Ok(Some(value)) => {
                    let Some(number) = serde_json::Number::from_f64(value) else {
                        continue;
                    };
                    if self
                        .record(instance, def, serde_json::Value::Number(number))
                        .await?
                    {
                        out.changed += 1;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    out.failures += 1;
                    tracing::warn!(
                        vnf_instance_id = %instance.id,
                        indicator = %def.id,
                        error = %e,
                        "reading a VNF indicator failed"
                    );
                }
            }
        }
        Ok(())
    }

    async fn instances_with_values(&self) -> Result<BTreeSet<String>, LcmError> {
        let mut out = BTreeSet::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store()
                .instances_with_indicators(after.as_deref(), MAX_PAGE_SIZE)
                .await
                .map_err(store_err)?;
            out.extend(page.items);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }
}
