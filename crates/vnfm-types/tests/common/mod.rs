//! Helpers shared by the sample tests: corpus paths and a field-by-field JSON comparison.

#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

/// `corpus/<rel>` of the shared corpus.
pub fn corpus(rel: &str) -> PathBuf {
    vnfm_test_env::corpus(rel)
}

/// Parses a corpus JSON file.
pub fn load(rel: &str) -> Value {
    let path = corpus(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every difference between `a` and `b`, as `pointer: description`, compared member by member.
pub fn diff(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

fn walk(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{at}/{k}");
                match y.get(k) {
                    Some(vb) => walk(va, vb, p, out),
                    None => out.push(format!("{p}: missing on the right")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{at}/{k}: missing on the left"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{at}: array length {} vs {}", x.len(), y.len()));
            }
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                walk(va, vb, format!("{at}/{i}"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{at}: {a} vs {b}")),
    }
}

/// Removes every `null` member (SOL013: an absent and a null attribute mean the same).
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Removes the member at `pointer` (no-op when absent).
pub fn remove(v: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    if let Some(Value::Object(m)) = v.pointer_mut(parent) {
        m.shift_remove(key);
    }
}
