//! The checker's side: reading every occurrence back, checking each journal against its
//! occurrence's state, and a recovering runner in the parent process that settles the store.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::runner_support::*;
use serde_json::{Value, json};
use vnfm_driver_api::memory::{MemoryInfraDriver, RecordingMgmtDriver};
use vnfm_lcm::testing::NoSubscribers;
use vnfm_lcm::{InlineVimDirectory, Lcm, LcmConfig};
use vnfm_store::{InstanceQuery, NameFilter, OpOccQuery, StepOutcome, Store, Timestamp};
use vnfm_types::{LcmOperationStateType as State, VnfInstanceId, VnfLcmOpOcc};

use super::worker::catalog;

pub(crate) async fn all_op_occs(store: &Arc<dyn Store>) -> Vec<VnfLcmOpOcc> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_op_occs(&OpOccQuery {
                after: after.clone(),
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .expect("op-occs");
        out.extend(page.items);
        match page.next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

pub(crate) fn running(state: State) -> bool {
    matches!(
        state,
        State::Starting | State::Processing | State::RollingBack
    )
}

/// The journal of `occ` agrees with its state; returns the number of completed steps.
pub(crate) async fn check_journal(store: &Arc<dyn Store>, occ: &VnfLcmOpOcc) -> usize {
    let journal = store.journal(&occ.id).await.expect("journal");
    let mut plans: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut completed: HashSet<(String, u64)> = HashSet::new();
    let mut last_step_outcome = None;
    let mut steps = 0;
    for e in &journal {
        if let Some(phase) = e.step.strip_prefix("plan:") {
            let names: Vec<String> = e.detail["plan"]["steps"]
                .as_array()
                .expect("plan steps")
                .iter()
                .map(step_name)
                .collect();
            assert!(
                plans.insert(phase.to_string(), names).is_none(),
                "{}: two {phase} plans",
                occ.id
            );
            continue;
        }
        let phase = e.detail["phase"].as_str().expect("phase").to_string();
        let index = e.detail["index"].as_u64().expect("index");
        let names = plans
            .get(&phase)
            .unwrap_or_else(|| panic!("{}: step before its plan", occ.id));
        assert_eq!(
            names.get(index as usize),
            Some(&e.step),
            "{}: row names a step the plan does not have there",
            occ.id
        );
        if e.outcome == StepOutcome::Completed {
            assert!(
                completed.insert((phase.clone(), index)),
                "{}: {phase} step {index} completed twice",
                occ.id
            );
            // Steps complete in order.
            if index > 0 {
                assert!(
                    completed.contains(&(phase.clone(), index - 1)),
                    "{}: out of order",
                    occ.id
                );
            }
            steps += 1;
        }
        last_step_outcome = Some(e.outcome);
    }
    let all_done = |phase: &str| {
        plans.get(phase).is_some_and(|p| {
            (0..p.len() as u64).all(|i| completed.contains(&(phase.to_string(), i)))
        })
    };
    match occ.operation_state {
        State::Completed => assert!(all_done("forward"), "{}: COMPLETED with steps left", occ.id),
        State::RolledBack => assert!(
            steps == 0 || all_done("rollback"),
            "{}: ROLLED_BACK with rollback steps left",
            occ.id
        ),
        State::FailedTemp | State::Failed => {
            assert!(occ.error.is_some(), "{}: failed without an error", occ.id);
            assert_ne!(
                last_step_outcome,
                Some(StepOutcome::Completed),
                "{}: {:?} but its last step completed",
                occ.id,
                occ.operation_state
            );
        }
        other => panic!("{}: still {other:?}", occ.id),
    }
    steps
}

fn step_name(step: &Value) -> String {
    match step["step"].as_str() {
        Some("hook") => format!("hook:{}", step["operation"].as_str().unwrap_or("")),
        Some("infra") => {
            let kind = step["kind"].as_str().unwrap_or("");
            // camelCase kind -> snake_case method name.
            let mut name = String::new();
            for c in kind.chars() {
                if c.is_ascii_uppercase() {
                    name.push('_');
                    name.push(c.to_ascii_lowercase());
                } else {
                    name.push(c);
                }
            }
            format!("infra:{name}")
        }
        Some("applyModifications") => "info:apply_modifications".into(),
        Some("revertModifications") => "info:revert_modifications".into(),
        other => panic!("unknown step {other:?}"),
    }
}

/// A runner that recovers in the parent process.
pub(crate) fn parent_lcm(
    store: Arc<dyn Store>,
    infra: Arc<MemoryInfraDriver>,
    lease: Duration,
) -> Lcm {
    Lcm::builder(
        store,
        Arc::new(InlineVimDirectory),
        Arc::new(NoSubscribers),
        Arc::new(catalog()),
    )
    .infra_driver(infra)
    .mgmt_driver(Arc::new(RecordingMgmtDriver::new()))
    .config(LcmConfig::default().with_lease_ttl(lease))
    .build()
}

/// Waits for every resumed occurrence, then asserts the store is consistent.
pub(crate) async fn settle_and_check(
    lcm: &Lcm,
    store: &Arc<dyn Store>,
    resumed: &[vnfm_types::VnfLcmOpOccId],
    logged: &[String],
    tag: &str,
) {
    for id in resumed {
        let occ = lcm
            .wait(id, Duration::from_secs(20))
            .await
            .expect("resumed occurrence comes to rest");
        assert!(vnfm_lcm::runner::is_at_rest(occ.operation_state));
    }
    let now = Timestamp::now();
    let ours = instances_named(lcm, tag).await;
    let occs: Vec<VnfLcmOpOcc> = all_op_occs(store).await;
    let ids: HashSet<String> = occs.iter().map(|o| o.id.to_string()).collect();
    // No logged occurrence is lost.
    for id in logged {
        assert!(
            ids.contains(id),
            "logged occurrence {id} is missing from the store"
        );
    }
    let logged: HashSet<&String> = logged.iter().collect();
    let mine: Vec<&VnfLcmOpOcc> = occs
        .iter()
        .filter(|o| logged.contains(&o.id.to_string()) || ours.contains(&o.vnf_instance_id))
        .collect();
    // Nothing runs without a live lease (and after settling, nothing runs at all).
    for o in &mine {
        if running(o.operation_state) {
            let lease = store.lease(&o.id).await.unwrap();
            assert!(
                lease.is_some_and(|l| l.expires_at > now),
                "{} is {:?} without a live lease",
                o.id,
                o.operation_state
            );
            panic!(
                "{} is still {:?} after recovery settled",
                o.id, o.operation_state
            );
        }
    }
    // Journals agree with states.
    let mut steps = 0;
    for o in &mine {
        steps += check_journal(store, o).await;
    }
    assert!(steps > 0);
    // No instance is held by a final occurrence: one holder at most, and a free instance takes
    // a new operation.
    let mut by_instance: BTreeMap<VnfInstanceId, Vec<&VnfLcmOpOcc>> = BTreeMap::new();
    for o in &mine {
        by_instance
            .entry(o.vnf_instance_id.clone())
            .or_default()
            .push(o);
    }
    for id in &ours {
        let holders: Vec<_> = by_instance
            .get(id)
            .map(|v| v.iter().filter(|o| !o.operation_state.is_final()).collect())
            .unwrap_or_default();
        assert!(holders.len() <= 1, "{id} has {} holders", holders.len());
        let active = store.active_op_occ(id).await.unwrap();
        assert_eq!(
            active.as_ref().map(|(o, _)| o.id.clone()),
            holders.first().map(|o| o.id.clone())
        );
        if active.is_none() {
            let op = lcm
                .modify_info(id, req(json!({"vnfInstanceDescription": "checked"})))
                .await
                .unwrap_or_else(|e| panic!("{id} is free but refused an operation: {e}"));
            let done = lcm.wait(&op.id, Duration::from_secs(10)).await.unwrap();
            assert_eq!(done.operation_state, State::Completed);
        }
    }
}

/// The instances named `tag` (a worker names every instance it creates after its run's tag).
pub(crate) async fn instances_named(lcm: &Lcm, tag: &str) -> HashSet<VnfInstanceId> {
    lcm.list_instances(&InstanceQuery {
        name: Some(NameFilter::Exact(tag.to_string())),
        limit: Some(1000),
        ..Default::default()
    })
    .await
    .unwrap()
    .items
    .into_iter()
    .map(|i| i.id)
    .collect()
}
