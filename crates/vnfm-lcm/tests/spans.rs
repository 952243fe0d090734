//! The spans of an operation occurrence: `lcm.op_occ` with the VIMs it uses, its `lcm.grant`,
//! and each hook's `lcm.hook` under the step that runs it; the occurrence keeps its trace
//! context for a run after a restart.

mod runner_support;

use runner_support::*;
use serde_json::json;
use tracing::Instrument;
use vnfm_trace::testing::{attribute, capture, trace_id, traceparent_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instantiate_has_its_grant_hook_and_vim_in_its_trace() {
    let captured = capture();
    let env = Env::with(vec![hooks_vnfd()]).await;
    let inst = env.create("vnfd-hooks").await;
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .instrument(root.clone())
        .await
        .unwrap();
    let op = env.completed(op).await;
    drop(root);

    // The occurrence's span ends when its task does, just after the occurrence completed.
    let mut occ = captured.named(trace, "lcm.op_occ");
    for _ in 0..100 {
        if !occ.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        occ = captured.named(trace, "lcm.op_occ");
    }
    assert_eq!(occ.len(), 1, "{:#?}", captured.spans_of(trace));
    let occ = &occ[0];
    assert_eq!(attribute(occ, "op_occ_id").as_deref(), Some(op.id.as_str()));
    assert_eq!(attribute(occ, "operation").as_deref(), Some("INSTANTIATE"));
    assert_eq!(attribute(occ, "vim_id").as_deref(), Some("vim1"));

    let grants = captured.named(trace, "lcm.grant");
    assert_eq!(grants.len(), 1);

    let steps = captured.named(trace, "lcm.step");
    let hooks = captured.named(trace, "lcm.hook");
    let names: Vec<String> = hooks.iter().filter_map(|h| attribute(h, "hook")).collect();
    assert!(
        names.contains(&"instantiate_start".to_owned())
            && names.contains(&"instantiate_end".to_owned()),
        "{names:?}"
    );
    for hook in &hooks {
        let step = steps
            .iter()
            .find(|s| s.span_context.span_id() == hook.parent_span_id)
            .expect("a hook span is a child of a step span");
        assert_eq!(step.parent_span_id, occ.span_context.span_id());
    }

    let kept = env
        .store
        .get_op_occ_data(&op.id, "traceContext")
        .await
        .unwrap();
    assert_eq!(kept, Some(json!(traceparent_of(occ))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_after_a_restart_links_to_the_occurrences_earlier_trace() {
    use std::time::{Duration, Instant};
    let captured = capture();
    let env = Env::builder()
        .vnfd(hello_vnfd())
        .infra_delay(Duration::from_secs(10))
        .config(|c| c.with_lease_ttl(Duration::from_millis(600)))
        .build()
        .await;
    let inst = env.create(&hello_vnfd().descriptor_id).await;
    let first = tracing::info_span!("test.first");
    let first_trace = trace_id(&first);
    let op = env
        .lcm
        .instantiate(
            &inst.id,
            req(json!({"flavourId": "simple", "vimConnectionInfo": memory_vims()})),
        )
        .instrument(first.clone())
        .await
        .unwrap();
    drop(first);
    let t0 = Instant::now();
    while env.infra.calls().is_empty() {
        assert!(t0.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A second runner takes the occurrence over, as after a restart.
    let b = second_runner(&env, |c| c);
    let later = tracing::info_span!("test.later");
    let later_trace = trace_id(&later);
    let report = b.lcm.recover().instrument(later.clone()).await.unwrap();
    assert_eq!(report.resumed, std::slice::from_ref(&op.id));
    b.lcm.wait(&op.id, WAIT).await.unwrap();
    drop(later);
    // The first run's span ends once its task gave up.
    let t0 = Instant::now();
    let earlier = loop {
        if let Some(s) = captured.named(first_trace, "lcm.op_occ").pop() {
            break s;
        }
        assert!(t0.elapsed() < WAIT, "the first run's span did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let t0 = Instant::now();
    let linked = loop {
        let linked: Vec<_> = captured
            .named(later_trace, "lcm.op_occ")
            .into_iter()
            .filter(|s| !s.links.is_empty())
            .collect();
        if !linked.is_empty() {
            break linked;
        }
        assert!(
            t0.elapsed() < WAIT,
            "no span of the later run links to the earlier trace"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let link = &linked[0].links.links[0].span_context;
    assert_eq!(link.trace_id(), first_trace);
    assert_eq!(link.span_id(), earlier.span_context.span_id());
}
