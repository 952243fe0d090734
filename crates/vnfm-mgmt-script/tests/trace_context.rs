//! A script runs with the trace context of its hook's span in `TRACEPARENT`, and the span
//! says a script ran in it.

use crate::support;

use std::sync::Arc;

use serde_json::json;
use support::*;
use tracing::Instrument;
use vnfm_driver_api::MgmtDriver;
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_trace::testing::{attribute, capture, trace_id, traceparent_of};

/// Writes `$TRACEPARENT` (or `unset`) to `additionalParams.record`.
const ECHO_TRACEPARENT: &str = r#"
import os, pickle, sys

args = pickle.load(sys.stdin.buffer)
with open(args['request']['additionalParams']['record'], 'w') as f:
    f.write(os.environ.get('TRACEPARENT', 'unset'))
pickle.dump({}, sys.stdout.buffer, protocol=5)
"#;

#[tokio::test]
async fn a_script_gets_the_traceparent_of_its_hook_span() {
    let captured = capture();
    let outside = tempfile::tempdir().unwrap();
    let record = outside.path().join("traceparent");
    let driver = ScriptMgmtDriver::new(ScriptConfig::default());
    let call = call(
        "occ-trace",
        Arc::new(package(ECHO_TRACEPARENT)),
        json!({"flavourId": "simple", "additionalParams": {"record": record}}),
        control(),
    );
    let hook = tracing::info_span!(
        "lcm.hook",
        hook = "instantiate_end",
        hook.kind = tracing::field::Empty
    );
    let trace = trace_id(&hook);
    driver.call(&call).instrument(hook.clone()).await.unwrap();
    drop(hook);
    let spans = captured.named(trace, "lcm.hook");
    assert_eq!(attribute(&spans[0], "hook.kind").as_deref(), Some("script"));
    assert_eq!(
        std::fs::read_to_string(&record).unwrap(),
        traceparent_of(&spans[0]),
        "the script's TRACEPARENT names its hook's span"
    );
}
