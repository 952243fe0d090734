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
