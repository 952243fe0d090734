//! Resolving attribute paths in a JSON Schema (schemars output), so that filters and
//! attribute selectors naming attributes a resource does not have are refused.

use serde_json::{Map, Value};

use crate::error::{Sol013Error, echo};
use crate::filter::Segment;

/// Most `$ref`/combinator hops followed for one path (recursive types end here, accepted).
const MAX_SCHEMA_DEPTH: usize = 64;
/// Most schema nodes visited for one path (bounds `anyOf` fan-out).
const MAX_SCHEMA_STEPS: usize = 20_000;

/// What the schema says about the attribute a path reaches (union over all branches).
#[derive(Debug, Default)]
pub(crate) struct Kinds<'s> {
    /// Some branch accepts anything (no type information).
    pub any: bool,
    pub string: bool,
    pub number: bool,
    pub boolean: bool,
    /// `Some` when every branch that reached the attribute restricts it to an enum/const.
    pub enum_values: Option<Vec<&'s Value>>,
    /// Some branch without an enum restriction was seen.
    unrestricted: bool,
}

struct Walker<'s> {
    root: &'s Value,
    steps: usize,
    /// Deepest segment index reached by a failing branch, with the reason.
    miss: Option<(usize, &'static str)>,
}

/// Resolves `path` in `schema`; on failure, [`Sol013Error::UnknownAttribute`] for the query
/// parameter `parameter`, showing the path as `shown` gives it and naming the failing segment.
pub(crate) fn lookup<'s>(
    schema: &'s Value,
    path: &[Segment],
    parameter: &'static str,
    shown: impl FnOnce() -> String,
) -> Result<Kinds<'s>, Sol013Error> {
    let mut w = Walker {
        root: schema,
        steps: 0,
        miss: None,
    };
    let mut kinds = Kinds::default();
    if w.walk(schema, path, 0, 0, &mut kinds) {
        if kinds.unrestricted {
            kinds.enum_values = None;
        }
        Ok(kinds)
    } else {
        let (at, why) = w.miss.unwrap_or((0, "not found"));
        let seg = path.get(at).map_or_else(String::new, ToString::to_string);
        let reason = if at == 0 {
            format!("{} is {why} at the top level", echo(&seg))
        } else {
            let mut parent = String::new();
            let _ = crate::filter::write_path(&mut parent, &path[..at]);
            format!("{} is {why} in {}", echo(&seg), echo(&parent))
        };
        Err(Sol013Error::UnknownAttribute {
            parameter,
            path: echo(&shown()),
            reason,
        })
    }
}

fn is_any(o: &Map<String, Value>) -> bool {
    const TYPED: [&str; 12] = [
        "type",
        "properties",
        "items",
        "prefixItems",
        "additionalProperties",
        "patternProperties",
        "enum",
        "const",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
    ];
    !TYPED.iter().any(|k| o.contains_key(*k))
}

fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    // JSON pointer tokens are already ~0/~1-escaped, as Value::pointer expects; percent
    // escapes (URI fragment form) are not used by schemars.
    root.pointer(pointer)
}

impl<'s> Walker<'s> {
    fn miss(&mut self, at: usize, why: &'static str) {
        if self.miss.is_none_or(|(m, _)| at >= m) {
            self.miss = Some((at, why));
        }
    }

    /// `true` if some branch of `node` resolves `path[at..]`; merges what it finds into `out`.
    fn walk(
        &mut self,
        node: &'s Value,
        path: &[Segment],
        at: usize,
        depth: usize,
        out: &mut Kinds<'s>,
    ) -> bool {
        self.steps += 1;
        if depth > MAX_SCHEMA_DEPTH || self.steps > MAX_SCHEMA_STEPS {
            // A recursive or huge schema: accept rather than refuse a possibly valid path.
            out.any = true;
            return true;
        }
        let o = match node {
            Value::Bool(true) => {
                out.any = true;
                return true;
            }
            Value::Object(o) => o,
            _ => {
                self.miss(at, "not allowed");
                return false;
            }
        };
        let mut ok = false;
        if let Some(r) = o.get("$ref").and_then(Value::as_str) {
            match resolve(self.root, r) {
                Some(target) => ok |= self.walk(target, path, at, depth + 1, out),
                None => {
                    // A reference this crate cannot follow: do not refuse on its account.
                    out.any = true;
                    ok = true;
                }
            }
        }
        for kw in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = o.get(kw) {
                for b in branches {
                    ok |= self.walk(b, path, at, depth + 1, out);
                }
            }
        }
        if is_any(o) {
            out.any = true;
            return true;
        }
        if at == path.len() {
            return self.leaf(o, depth, out) || ok;
        }
        // Arrays are looked through: the path continues inside the items.
        if let Some(items) = o.get("items") {
            ok |= self.walk(items, path, at, depth + 1, out);
        }
        if let Some(Value::Array(items)) = o.get("prefixItems") {
            for i in items {
                ok |= self.walk(i, path, at, depth + 1, out);
            }
        }
        let is_map = matches!(
            o.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(true))
        ) || o.contains_key("patternProperties")
            || (!o.contains_key("properties")
                && !o.contains_key("additionalProperties")
                && type_includes(o, "object"));
        match &path[at] {
            Segment::Key => {
                if is_map {
                    out.string = true;
                    out.unrestricted = true;
                    ok = true;
                } else if !ok {
                    self.miss(at, "not applicable (@key needs a map)");
                }
            }
            Segment::Name(name) => {
                let mut found = false;
                if let Some(p) = o.get("properties").and_then(|p| p.get(name)) {
                    found = true;
                    ok |= self.walk(p, path, at + 1, depth + 1, out);
                }
                if !found {
                    if let Some(ap @ (Value::Object(_) | Value::Bool(true))) =
                        o.get("additionalProperties")
                    {
                        found = true;
                        ok |= self.walk(ap, path, at + 1, depth + 1, out);
                    }
                    if let Some(Value::Object(pp)) = o.get("patternProperties") {
                        for s in pp.values() {
                            found = true;
                            ok |= self.walk(s, path, at + 1, depth + 1, out);
                        }
                    }
                    if is_map && !found {
                        // An object type with no property list: any key.
                        out.any = true;
                        found = true;
                        ok = true;
                    }
                }
                if !found && !ok {
                    self.miss(at, "not an attribute");
                }
            }
        }
        ok
    }

    /// Records the types of the node a path ends at.
    fn leaf(&mut self, o: &'s Map<String, Value>, depth: usize, out: &mut Kinds<'s>) -> bool {
        let (mut string, mut number, mut boolean) = (false, false, false);
        let mut typed = false;
        let mut add_type = |t: &str| match t {
            "string" => string = true,
            "number" | "integer" => number = true,
            "boolean" => boolean = true,
            _ => {}
        };
        match o.get("type") {
            Some(Value::String(t)) => {
                typed = true;
                add_type(t);
            }
            Some(Value::Array(ts)) => {
                typed = true;
                ts.iter().filter_map(Value::as_str).for_each(&mut add_type);
            }
            _ => {}
        }
        let consts: Option<Vec<&'s Value>> = match (o.get("enum"), o.get("const")) {
            (Some(Value::Array(vs)), _) => Some(vs.iter().collect()),
            (_, Some(c)) => Some(vec![c]),
            _ => None,
        };
        if let Some(vs) = consts {
            typed = true;
            for v in &vs {
                match v {
                    Value::String(_) => string = true,
                    Value::Number(_) => number = true,
                    Value::Bool(_) => boolean = true,
                    _ => {}
                }
            }
            out.enum_values
                .get_or_insert_with(Vec::new)
                .extend(vs.into_iter().filter(|v| !v.is_null()));
        } else if string || number || boolean {
            out.unrestricted = true;
        }
        out.string |= string;
        out.number |= number;
        out.boolean |= boolean;
        // An array attribute compares element by element: what matters is the items' type.
        if let Some(items) = o.get("items") {
            typed = true;
            let _ = self.walk(items, &[], 0, depth + 1, out);
        }
        if o.contains_key("properties") || o.contains_key("additionalProperties") {
            typed = true;
        }
        typed
    }
}

fn type_includes(o: &Map<String, Value>, t: &str) -> bool {
    match o.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(ts)) => ts.iter().any(|x| x.as_str() == Some(t)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn look<'s>(s: &'s Value, path: &[Segment]) -> Result<Kinds<'s>, String> {
        lookup(s, path, "filter", || "shown/path".into()).map_err(|e| match e {
            Sol013Error::UnknownAttribute {
                parameter,
                path,
                reason,
            } => {
                assert_eq!((parameter, path.as_str()), ("filter", "'shown/path'"));
                reason
            }
            other => panic!("not an UnknownAttribute: {other}"),
        })
    }

    fn seg(path: &str) -> Vec<Segment> {
        path.split('/')
            .map(|s| {
                if s == "@key" {
                    Segment::Key
                } else {
                    Segment::Name(s.to_owned())
                }
            })
            .collect()
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "n": {"type": ["integer", "null"]},
                "state": {"$ref": "#/$defs/State"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
                "kv": {"type": "object", "additionalProperties": true},
                "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Inner"}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "rec": {"$ref": "#/$defs/Rec"},
                "anything": {"description": "free"}
            },
            "$defs": {
                "State": {"type": "string", "enum": ["A", "B"]},
                "Inner": {"type": "object", "properties": {"x": {"type": "boolean"}}},
                "Rec": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Rec"}, "v": {"type": "string"}}}
            }
        })
    }

    #[test]
    fn resolves_properties_refs_items_and_maps() {
        let s = schema();
        for ok in [
            "id",
            "n",
            "state",
            "maybe/x",
            "list/x",
            "kv/anything/below",
            "map/k1/x",
            "tags",
            "rec/next/next/next/v",
            "anything/goes/here",
            "map/@key",
            "kv/@key",
        ] {
            assert!(look(&s, &seg(ok)).is_ok(), "{ok}");
        }
        let k = look(&s, &seg("state")).expect("state");
        assert!(k.string && !k.any);
        assert_eq!(k.enum_values.map(|v| v.len()), Some(2));
        assert!(look(&s, &seg("n")).expect("n").number);
        assert!(look(&s, &seg("list/x")).expect("x").boolean);
        assert!(look(&s, &seg("tags")).expect("tags").string);
    }

    #[test]
    fn refuses_unknown_segments_naming_them() {
        let s = schema();
        let e = look(&s, &seg("nope")).unwrap_err();
        assert!(e.contains("'nope'") && e.contains("top level"), "{e}");
        let e = look(&s, &seg("maybe/y")).unwrap_err();
        assert!(e.contains("'y'") && e.contains("'maybe'"), "{e}");
        assert!(look(&s, &seg("map/k1/y")).is_err());
        assert!(look(&s, &seg("id/deeper")).is_err());
        assert!(look(&s, &seg("maybe/@key")).is_err());
    }
}
