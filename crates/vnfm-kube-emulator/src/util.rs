//! Small helpers: timestamps, label and field selectors, JSON paths for server-side apply.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::EmulatorError;

/// Now as RFC 3339 (`2024-01-02T03:04:05Z`), as the API server writes timestamps.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` / `key==value`.
    Eq(String, String),
    /// `key!=value`.
    NotEq(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    NotExists(String),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

impl LabelSelector {
    /// Parses the `labelSelector` query syntax.
    pub fn parse(s: &str) -> Result<Self, EmulatorError> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some(k) = part.strip_prefix('!') {
                reqs.push(Requirement::NotExists(k.trim().to_string()));
            } else if let Some((k, rest)) = split_word(part, " notin ") {
                reqs.push(Requirement::NotIn(k, set_values(&rest)?));
            } else if let Some((k, rest)) = split_word(part, " in ") {
                reqs.push(Requirement::In(k, set_values(&rest)?));
            } else if let Some((k, v)) = part.split_once("!=") {
                reqs.push(Requirement::NotEq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once("==") {
                reqs.push(Requirement::Eq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once('=') {
                reqs.push(Requirement::Eq(k.trim().into(), v.trim().into()));
            } else {
                reqs.push(Requirement::Exists(part.to_string()));
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// Builds a selector from a plain label map (a Service's `spec.selector`).
    pub fn from_map(m: &Map<String, Value>) -> Self {
        LabelSelector(
            m.iter()
                .map(|(k, v)| Requirement::Eq(k.clone(), v.as_str().unwrap_or("").into()))
                .collect(),
        )
    }

    /// Whether `obj`'s labels satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEq(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn split_word(part: &str, word: &str) -> Option<(String, String)> {
    part.find(word).map(|i| {
        (
            part[..i].trim().to_string(),
            part[i + word.len()..].to_string(),
        )
    })
}

fn set_values(rest: &str) -> Result<Vec<String>, EmulatorError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| EmulatorError::LabelSelectorSet {
            set: rest.to_string(),
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

/// A parsed field selector: `metadata.name=x,metadata.namespace!=y`.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses the `fieldSelector` query syntax.
    pub fn parse(s: &str) -> Self {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some((k, v)) = part.split_once("!=") {
                out.push((k.trim().into(), false, v.trim().into()));
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                out.push((k.trim().into(), true, v.trim().into()));
            }
        }
        FieldSelector(out)
    }

    /// Whether `obj` satisfies the selector (field paths are dotted JSON paths).
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let got = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            (got == *want) == *eq
        })
    }
}

/// A field path for server-side apply ownership (map keys; lists are atomic leaves).
pub type FieldPath = Vec<String>;

/// The leaf paths of `v`: every non-map value, keyed by its map path. Empty maps are leaves
/// too, so `{}` values are owned.
pub fn leaf_paths(v: &Value) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    fn walk(v: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    prefix.push(k.clone());
                    walk(child, prefix, out);
                    prefix.pop();
                }
            }
            _ => {
                if !prefix.is_empty() {
                    out.insert(prefix.clone());
                }
            }
        }
    }
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// The value at `path`.
pub fn get_path<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object()?.get(k)?;
    }
    Some(cur)
}

/// Removes the value at `path` (leaving parents in place).
pub fn remove_path(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        match cur.as_object_mut().and_then(|m| m.get_mut(k)) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

/// Merges `patch` into `base`: maps merge recursively, other values replace.
pub fn deep_merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, pv) in p {
                match b.get_mut(k) {
                    Some(bv) if bv.is_object() && pv.is_object() => deep_merge(bv, pv),
                    _ => {
                        b.insert(k.clone(), pv.clone());
                    }
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Field paths as a `FieldsV1` object (`{"f:spec": {"f:replicas": {}}}`).
pub fn fields_v1(paths: &BTreeSet<FieldPath>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for k in p {
            let entry = cur
                .entry(format!("f:{k}"))
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(next) = entry else {
                break;
            };
            cur = next;
        }
    }
    Value::Object(root)
}

/// The inverse of [`fields_v1`].
pub fn paths_of_fields_v1(v: &Value) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    fn walk(v: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        let Some(m) = v.as_object() else { return };
        let children: Vec<(&String, &Value)> =
            m.iter().filter(|(k, _)| k.starts_with("f:")).collect();
        if children.is_empty() {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            return;
        }
        for (k, child) in children {
            prefix.push(k[2..].to_string());
            walk(child, prefix, out);
            prefix.pop();
        }
    }
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// A short, deterministic lowercase hash of `v` (names of ReplicaSets, revisions).
pub fn short_hash(v: &Value) -> String {
    // FNV-1a: stable across runs, no dependency.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let alphabet = b"bcdfghjklmnpqrstvwxz2456789";
    let mut s = String::new();
    for _ in 0..10 {
        s.push(alphabet[(h % alphabet.len() as u64) as usize] as char);
        h /= alphabet.len() as u64;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_parse_and_match() {
        let obj = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (sel, want) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("missing", false),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        let err = LabelSelector::parse("app in db").unwrap_err();
        assert!(matches!(err, EmulatorError::LabelSelectorSet { ref set } if set == "db"));
        assert_eq!(err.to_string(), "invalid set in label selector: db");
    }

    #[test]
    fn fields_v1_round_trips() {
        let v = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": []}}}, "metadata": {"labels": {"a": "b"}}});
        let paths = leaf_paths(&v);
        assert_eq!(paths_of_fields_v1(&fields_v1(&paths)), paths);
        assert!(paths.contains(&vec!["spec".to_string(), "replicas".to_string()]));
    }

    #[test]
    fn timestamps_are_rfc3339() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }
}
