//! Tests of the merge patch that keeps redacted secrets (the validation of each VIM type is
//! its kind's, tested with the driver that provides it).

use serde_json::{Value, json};

use crate::vim::redact::merge_patch;

#[test]
fn merge_patch_keeps_redacted_and_removes_null() {
    let mut t = json!({"a": "1", "password": "old", "o": {"x": 1}})
        .as_object()
        .unwrap()
        .clone();
    let p = json!({"a": null, "password": "***", "o": {"y": 2}, "n": "v"})
        .as_object()
        .unwrap()
        .clone();
    merge_patch(&mut t, &p, true);
    assert_eq!(
        Value::Object(t),
        json!({"password": "old", "o": {"x": 1, "y": 2}, "n": "v"})
    );
}
