//! Kubernetes manifests: multi-document YAML into objects, and `$VAR` / `${VAR}` placeholders
//! replaced from the request's parameters.
//!
//! Substitution works on the parsed YAML, string by string, so a parameter value can never
//! inject YAML structure. A string that is exactly one placeholder (`replicas: $REPLICAS`)
//! takes the parameter's JSON value with its type (a number stays a number); a placeholder
//! inside a longer string is replaced by the value's text. `$$` is a literal `$`; a `$` not
//! followed by a name or `{` is kept as it is. A placeholder the parameters do not define is
//! an error, reported before anything is applied.
//!
//! Plain scalars are read as Kubernetes reads them, not as YAML 1.2: kubectl, Helm and the
//! API machinery turn YAML into JSON with sigs.k8s.io/yaml over go-yaml v2, whose scalars
//! follow YAML 1.1. So `0666` is the octal 438 (`defaultMode: 0666`), `0x1F` is 31, `1_000`
//! is 1000, and `y`/`yes`/`on`/`true` and `n`/`no`/`off`/`false` are booleans, while a quoted
//! scalar (`'0666'`, `"yes"`) stays a string. A float with no fractional part is written as
//! an integer, as Go's JSON encoder writes it (go-yaml v2 reads `08`, not octal, and `1e3` as
//! floats; kubectl sends `8` and `1000`). `1:20` stays a string: go-yaml v2 has no base-60
//! numbers. Descriptors are not read here: they stay YAML 1.2.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::KubeError;

/// One object read from a manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Package path of the file (or chart template) it came from.
    pub source: String,
    /// Position of the document in the file (0-based).
    pub index: usize,
    /// The object.
    pub object: Value,
}

/// Reads every document of a multi-document YAML file, its scalars as Kubernetes reads them
/// (see the module's overview). Empty documents are skipped; a `List` contributes its items.
/// Every object must have `apiVersion` and `kind`.
pub fn parse_documents(source: &str, text: &str) -> Result<Vec<Document>, KubeError> {
    // YAML 1.1's octal integers and booleans, as go-yaml v2 resolves untagged plain scalars.
    let options = serde_saphyr::options! {
        legacy_octal_numbers: true,
        strict_booleans: false,
    };
    let values: Vec<Value> = serde_saphyr::from_str_multiple_with_options(text, options)
        .map_err(|e| KubeError::manifest(source, format!("not valid YAML: {e}")))?;
    let mut out = Vec::new();
    for mut v in values {
        integral_floats_as_integers(&mut v);
        if v.is_null() {
            continue;
        }
        let items = if v.get("kind").and_then(Value::as_str) == Some("List") {
            v.get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        } else {
            vec![v]
        };
        for object in items {
            check_object(source, out.len(), &object)?;
            out.push(Document {
                source: source.to_string(),
                index: out.len(),
                object,
            });
        }
    }
    Ok(out)
}

/// Whole floats become integers, as Go's JSON encoder writes a float64 below 1e21 (`8`, not
/// `8.0`): what kubectl sends for `replicas: 1.0` or `port: 08`.
fn integral_floats_as_integers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            // 2^63: every whole float below it in magnitude is an exact i64.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0;
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < LIMIT
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(m) => m.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

fn check_object(source: &str, index: usize, v: &Value) -> Result<(), KubeError> {
    let what = format!("document {}", index + 1);
    if !v.is_object() {
        return Err(KubeError::manifest(
            source,
            format!("{what} is not a mapping (a Kubernetes object)"),
        ));
    }
    for key in ["apiVersion", "kind"] {
        if v.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(KubeError::manifest(
                source,
                format!("{what} has no `{key}`"),
            ));
        }
    }
    if let Some(m) = v.get("metadata")
        && !m.is_object()
    {
        return Err(KubeError::manifest(
            source,
            format!("{what}: `metadata` is not a mapping"),
        ));
    }
    Ok(())
}

/// Replaces the placeholders of `object` from `vars`.
pub fn substitute(
    object: &mut Value,
    vars: &BTreeMap<String, Value>,
    source: &str,
) -> Result<(), KubeError> {
    match object {
        Value::String(s) => {
            if let Some(v) = substitute_str(s, vars, source)? {
                *object = v;
            }
        }
        Value::Array(items) => {
            for i in items {
                substitute(i, vars, source)?;
            }
        }
        Value::Object(m) => {
            let entries = std::mem::take(m);
            for (k, mut v) in entries {
                let key = match substitute_str(&k, vars, source)? {
                    Some(Value::String(s)) => s,
                    Some(other) => text_of(&other),
                    None => k,
                };
                substitute(&mut v, vars, source)?;
                m.insert(key, v);
            }
        }
        _ => {}
    }
    Ok(())
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

enum Piece {
    Text(String),
    Var(String),
}

fn pieces(s: &str, source: &str) -> Result<Vec<Piece>, KubeError> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            text.push(c);
            continue;
        }
        match chars.peek().map(|&(_, c)| c) {
            Some('$') => {
                chars.next();
                text.push('$');
            }
            Some('{') => {
                let rest = &s[i + 2..];
                let Some(end) = rest.find('}') else {
                    return Err(KubeError::manifest(
                        source,
                        format!("unterminated placeholder in `{}`", cut(s)),
                    ));
                };
                let name = &rest[..end];
                if !is_name(name) {
                    return Err(KubeError::manifest(
                        source,
                        format!(
                            "`${{{}}}` is not a valid placeholder (letters, digits and _ only; write $$ for a literal $)",
                            cut(name)
                        ),
                    ));
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Var(name.to_string()));
                // Skip `{name}`.
                for _ in 0..name.chars().count() + 2 {
                    chars.next();
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Var(name));
            }
            _ => text.push('$'),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

fn is_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `None` when `s` has nothing to replace (not even `$$`).
fn substitute_str(
    s: &str,
    vars: &BTreeMap<String, Value>,
    source: &str,
) -> Result<Option<Value>, KubeError> {
    if !s.contains('$') {
        return Ok(None);
    }
    let parts = pieces(s, source)?;
    let lookup = |name: &str| {
        vars.get(name).ok_or_else(|| KubeError::UnknownPlaceholder {
            file: source.to_string(),
            name: name.to_string(),
        })
    };
    if let [Piece::Var(name)] = parts.as_slice() {
        return Ok(Some(lookup(name)?.clone()));
    }
    let mut out = String::new();
    for p in &parts {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => out.push_str(&text_of(lookup(name)?)),
        }
    }
    Ok(Some(Value::String(out)))
}

/// Every placeholder name used in `object` (for messages and checks).
pub fn placeholders(object: &Value, source: &str) -> Result<Vec<String>, KubeError> {
    let mut out = Vec::new();
    fn walk(v: &Value, source: &str, out: &mut Vec<String>) -> Result<(), KubeError> {
        match v {
            Value::String(s) if s.contains('$') => {
                for p in pieces(s, source)? {
                    if let Piece::Var(n) = p
                        && !out.contains(&n)
                    {
                        out.push(n);
                    }
                }
            }
            Value::Array(a) => {
                for i in a {
                    walk(i, source, out)?;
                }
            }
            Value::Object(m) => {
                for (k, v) in m {
                    walk(&Value::String(k.clone()), source, out)?;
                    walk(v, source, out)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    walk(object, source, &mut out)?;
    Ok(out)
}

fn cut(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> BTreeMap<String, Value> {
        [
            ("REPLICAS".to_string(), json!(3)),
            ("IMAGE".to_string(), json!("nginx:1.25")),
            ("NS".to_string(), json!("cnf-a")),
        ]
        .into()
    }

    #[test]
    fn multi_document_yaml_with_lists_and_empty_documents() {
        let text = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n";
        let docs = parse_documents("f.yaml", text).unwrap();
        let kinds: Vec<&str> = docs
            .iter()
            .map(|d| d.object["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["ConfigMap", "Secret"]);
        let e = parse_documents("f.yaml", "metadata: {name: a}\n").unwrap_err();
        assert!(e.to_string().contains("has no `apiVersion`"), "{e}");
        let e = parse_documents("bad.yaml", "a: [\n").unwrap_err();
        assert!(e.to_string().contains("bad.yaml"), "{e}");
    }

    /// The `data` of a ConfigMap-shaped document read from `yaml` (its members indented by
    /// two spaces).
    fn data_of(yaml: &str) -> Value {
        let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: m}}\ndata:\n{yaml}");
        let docs = parse_documents("f.yaml", &text).unwrap();
        docs[0].object["data"].clone()
    }

    #[test]
    fn an_octal_file_mode_is_read_as_kubernetes_reads_it_not_as_yaml_1_2() {
        // Tacker's sample pod_volume.yaml: `defaultMode: 0666` is 438 for kubectl; read as
        // YAML 1.2 it was 666, which the API server refuses (more than 0777).
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: volume-test}\nspec:\n  volumes:\n  - name: cm-volume\n    configMap:\n      name: cm-data\n      defaultMode: 0666\n  - name: sec-volume\n    secret: {secretName: s, defaultMode: 0600}\n";
        let pod = &parse_documents("pod_volume.yaml", text).unwrap()[0].object;
        assert_eq!(
            pod["spec"]["volumes"][0]["configMap"]["defaultMode"],
            json!(438)
        );
        assert_eq!(
            pod["spec"]["volumes"][1]["secret"]["defaultMode"],
            json!(384)
        );
    }

    #[test]
    fn plain_scalars_resolve_as_go_yaml_v2_does_and_quoted_ones_stay_strings() {
        let data = data_of(concat!(
            "  octal: 0666\n  signed: -0644\n  plus: +0755\n  grouped: 0_666\n",
            "  hex: 0x1F\n  HEX: 0X1f\n  o: 0o17\n  bin: 0b101\n  under: 1_000\n",
            "  zero: 0\n  zeros: 00\n  dec: 42\n  eight: 08\n  whole: 1.0\n  exp: 1e3\n",
            "  half: .5\n  frac: 2.5\n  sexagesimal: 1:20\n  date: 2001-12-14\n",
            "  q1: '0666'\n  q2: \"0x1F\"\n  q3: 'yes'\n  q4: \"on\"\n  word: yesterday\n",
        ));
        let expected = json!({
            "octal": 438, "signed": -420, "plus": 493, "grouped": 438,
            "hex": 31, "HEX": 31, "o": 15, "bin": 5, "under": 1000,
            "zero": 0, "zeros": 0, "dec": 42, "eight": 8, "whole": 1, "exp": 1000,
            "half": 0.5, "frac": 2.5, "sexagesimal": "1:20", "date": "2001-12-14",
            "q1": "0666", "q2": "0x1F", "q3": "yes", "q4": "on", "word": "yesterday",
        });
        assert_eq!(data, expected);
        // Whole floats are integers in the JSON sent, as Go writes them.
        assert_eq!(data["eight"].to_string(), "8");
        assert_eq!(data["whole"].to_string(), "1");
    }

    #[test]
    fn yaml_1_1_booleans_are_booleans_as_for_go_yaml_v2() {
        // go-yaml v2's resolve table: y Y yes Yes YES true True TRUE on On ON (and the
        // negatives n N no No NO false False FALSE off Off OFF).
        let yes = [
            "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        ];
        let no = [
            "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        ];
        for (words, value) in [(yes, true), (no, false)] {
            for w in words {
                assert_eq!(data_of(&format!("  b: {w}\n"))["b"], json!(value), "`{w}`");
                assert_eq!(
                    data_of(&format!("  b: '{w}'\n"))["b"],
                    json!(w),
                    "quoted `{w}`"
                );
            }
        }
        for null in ["~", "null", "Null", "NULL", ""] {
            assert_eq!(
                data_of(&format!("  v: {null}\n"))["v"],
                Value::Null,
                "`{null}`"
            );
        }
    }

    #[test]
    fn typed_and_embedded_substitution() {
        let mut o = json!({
            "spec": {"replicas": "$REPLICAS", "image": "${IMAGE}", "cmd": "echo $$HOME ${NS}-x $1 cost$"},
            "metadata": {"labels": {"ns-${NS}": "v"}}
        });
        substitute(&mut o, &vars(), "f.yaml").unwrap();
        assert_eq!(o["spec"]["replicas"], 3);
        assert_eq!(o["spec"]["image"], "nginx:1.25");
        assert_eq!(o["spec"]["cmd"], "echo $HOME cnf-a-x $1 cost$");
        assert_eq!(o["metadata"]["labels"]["ns-cnf-a"], "v");
    }

    #[test]
    fn unknown_and_malformed_placeholders_are_errors() {
        let mut o = json!({"a": "x-${MISSING}"});
        let e = substitute(&mut o, &vars(), "f.yaml").unwrap_err();
        assert!(matches!(e, KubeError::UnknownPlaceholder { ref name, .. } if name == "MISSING"));
        let mut o = json!({"a": "${NOT CLOSED"});
        assert!(substitute(&mut o, &vars(), "f.yaml").is_err());
        let mut o = json!({"a": "${a-b}"});
        assert!(substitute(&mut o, &vars(), "f.yaml").is_err());
        assert_eq!(
            placeholders(&json!({"x": "$A ${B}", "y": ["$A"]}), "f").unwrap(),
            ["A", "B"]
        );
    }
}
