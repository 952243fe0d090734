//! YAML loading with source positions.
//!
//! Every TOSCA file is loaded into a [`Node`] tree where each value and each mapping key carries
//! the 1-based line and column it came from, so that later phases can point at the exact spot of
//! a problem. The events of the `granit-parser` YAML 1.2 parser are built into the tree here
//! (the `load` module), with the core schema's strict booleans (`yes`/`on` stay strings, as
//! TOSCA requires; the `scalar` module), duplicate keys rejected, and budgets on: alias bombs,
//! deep nesting and oversized documents are refused with a diagnostic instead of exhausting
//! memory or the stack.

mod load;
mod scalar;

use load::LoadError;
use vnfm_descriptor::Diagnostic;

/// Largest YAML file accepted, in bytes. Descriptors are small; anything bigger is refused
/// before parsing.
pub const MAX_YAML_BYTES: usize = 16 * 1024 * 1024;

/// Deepest nesting of collections accepted (the budget's limit).
pub const MAX_DEPTH: usize = 64;

/// A 1-based line/column position in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// 1-based line; 0 when unknown.
    pub line: u32,
    /// 1-based column; 0 when unknown.
    pub column: u32,
}

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub pos: Pos,
}

/// A mapping key with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key as a string (scalar keys of other types are kept in their source spelling).
    pub name: String,
    /// Where the key starts.
    pub pos: Pos,
}

/// A YAML value (YAML 1.2 core schema).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null` or an empty value.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order.
    Map(Vec<(Key, Node)>),
}

impl Value {
    /// A short name of the value's YAML kind, for messages (`"a mapping"`, `"a string"`...).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a map",
        }
    }
}

impl Node {
    /// A node without a known position (for synthesized values such as defaults).
    pub fn synthetic(value: Value) -> Node {
        Node {
            value,
            pos: Pos::default(),
        }
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The mapping entries, if this is a mapping.
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The sequence items, if this is a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// True for null.
    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// The value under `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }

    /// The key entry (with its position) and value under `key` when this is a mapping.
    pub fn get_entry(&self, key: &str) -> Option<(&Key, &Node)> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(k, v)| (k, v))
    }

    /// Converts to JSON. Non-finite floats become strings (`".inf"`, `".nan"`), since JSON cannot
    /// carry them.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or_else(|| J::String(format_float(*f))),
            Value::Str(s) => J::String(s.as_str().to_owned()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.as_str().to_owned(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The scalar as written, for messages and for string-typed contexts that received a number
    /// (e.g. `version: 1.0`).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.as_str().to_owned()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(format_float(*f)),
            Value::Bool(b) => Some(b.to_string()),
            Value::Null => None,
            Value::Seq(_) | Value::Map(_) => None,
        }
    }
}

fn format_float(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        }
    } else if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{f:.1}")
    } else {
        f.to_string()
    }
}

/// Parses one YAML document of `file` (a package-relative path used in diagnostics).
///
/// An empty document yields a null node. Errors carry the file, line and column.
pub fn parse(file: &str, text: &str) -> Result<Node, Diagnostic> {
    let mut docs = load_checked(file, text)?;
    match docs.len() {
        0 => Ok(Node::synthetic(Value::Null)),
        1 => Ok(docs.remove(0)),
        n => Err(Diagnostic::error(
            "yaml.syntax",
            format!("the file holds {n} YAML documents where one is expected"),
        )
        .at_pos(file, docs[1].pos.line, docs[1].pos.column)
        .with_help("remove the `---` separators, or split the file")),
    }
}

/// Parses a stream of YAML documents (`---` separated), such as a Kubernetes manifest file.
/// Empty documents are skipped.
pub fn parse_multi(file: &str, text: &str) -> Result<Vec<Node>, Diagnostic> {
    Ok(load_checked(file, text)?
        .into_iter()
        .filter(|n| !n.is_null())
        .collect())
}

fn load_checked(file: &str, text: &str) -> Result<Vec<Node>, Diagnostic> {
    if text.len() > MAX_YAML_BYTES {
        return Err(Diagnostic::error(
            "yaml.too-large",
            format!(
                "YAML file is {} bytes; the limit is {MAX_YAML_BYTES}",
                text.len()
            ),
        )
        .at(vnfm_descriptor::Location::file(file)));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    load::documents(text).map_err(|e| to_diagnostic(file, e))
}

fn to_diagnostic(file: &str, e: LoadError) -> Diagnostic {
    let (code, message, pos) = match e {
        LoadError::Syntax(m, pos) | LoadError::Unsupported(m, pos) => ("yaml.syntax", m, pos),
        LoadError::DuplicateKey(m, pos) => ("yaml.duplicate-key", m, pos),
        LoadError::Budget(m, pos) => ("yaml.budget-exceeded", m, pos),
    };
    let mut d = Diagnostic::error(code, message).at_pos(file, pos.line, pos.column);
    if code == "yaml.budget-exceeded" {
        d = d.with_help(format!(
            "descriptors may nest at most {MAX_DEPTH} levels and may not expand aliases into huge documents"
        ));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_keys_and_values_are_one_based() {
        let n = parse("a.yaml", "a: 1\nb:\n  - x\n  - {c: d}\n").unwrap();
        let (k, v) = n.get_entry("b").unwrap();
        assert_eq!(k.pos, Pos { line: 2, column: 1 });
        let items = v.as_seq().unwrap();
        assert_eq!(items[0].pos, Pos { line: 3, column: 5 });
        assert_eq!(items[1].get("c").unwrap().pos, Pos { line: 4, column: 9 });
    }

    #[test]
    fn comments_anywhere_leave_the_tree_unchanged_and_are_still_checked() {
        let plain = "a: 1\nb:\n  - x\n  - {c: d}\ne: |\n  # kept: inside a block scalar\n";
        let commented = "# head\na: 1 # after a value\n# between keys\nb: # after a key\n  # before an item\n  - x\n  - {c: d} # after a flow map\ne: |\n  # kept: inside a block scalar\n# tail";
        let (p, c) = (
            parse("a.yaml", plain).unwrap(),
            parse("a.yaml", commented).unwrap(),
        );
        let values = |n: &Node| (n.to_json(), n.get("b").unwrap().as_seq().unwrap().len());
        assert_eq!(values(&p), values(&c));
        assert_eq!(
            c.get("e").unwrap().as_str(),
            Some("# kept: inside a block scalar\n")
        );
        // Positions come from the commented text.
        assert_eq!(c.get_entry("b").unwrap().0.pos, Pos { line: 4, column: 1 });
        // A comment that is not separated from its value by white space is a syntax error.
        let bad = parse("a.yaml", "a: [1]# no space\n").unwrap_err();
        assert_eq!(bad.code, "yaml.syntax");
    }

    #[test]
    fn yaml_1_1_booleans_stay_strings() {
        let n = parse("a.yaml", "a: yes\nb: on\nc: true\nd: 'true'\n").unwrap();
        assert_eq!(n.get("a").unwrap().value, Value::Str("yes".into()));
        assert_eq!(n.get("b").unwrap().value, Value::Str("on".into()));
        assert_eq!(n.get("c").unwrap().value, Value::Bool(true));
        assert_eq!(n.get("d").unwrap().value, Value::Str("true".into()));
    }

    #[test]
    fn scalars_are_typed_by_the_core_schema() {
        let n = parse("a.yaml", "i: 12\nf: 1.5\nn: ~\ne:\nv: 1.0\n").unwrap();
        assert_eq!(n.get("i").unwrap().value, Value::Int(12));
        assert_eq!(n.get("f").unwrap().value, Value::Float(1.5));
        assert!(n.get("n").unwrap().is_null());
        assert!(n.get("e").unwrap().is_null());
        assert_eq!(n.get("v").unwrap().scalar_text().as_deref(), Some("1.0"));
    }

    #[test]
    fn empty_document_is_null() {
        assert!(parse("a.yaml", "").unwrap().is_null());
        assert!(parse("a.yaml", "# only a comment\n").unwrap().is_null());
    }

    #[test]
    fn duplicate_keys_are_refused_with_position() {
        let d = parse("a.yaml", "a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(d.code, "yaml.duplicate-key", "{d}");
        let loc = d.location.unwrap();
        assert_eq!((loc.file.as_str(), loc.line), ("a.yaml", 3));
    }

    #[test]
    fn syntax_error_has_position() {
        let d = parse("x/b.yaml", "a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(d.code, "yaml.syntax");
        assert_eq!(d.location.as_ref().unwrap().file, "x/b.yaml");
        assert!(d.location.unwrap().line >= 1);
    }

    #[test]
    fn alias_bomb_is_refused() {
        let mut text = String::from("a: &a [x,x,x,x,x,x,x,x,x]\n");
        for (name, prev) in [
            ("b", "a"),
            ("c", "b"),
            ("d", "c"),
            ("e", "d"),
            ("f", "e"),
            ("g", "f"),
        ] {
            let refs = vec![format!("*{prev}"); 9].join(",");
            text.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let d = parse("bomb.yaml", &text).unwrap_err();
        assert_eq!(d.code, "yaml.budget-exceeded", "{d}");
    }

    #[test]
    fn ten_thousand_deep_block_nesting_is_refused_not_overflowing() {
        // `- - - ... x` nests one block sequence per dash on a single line.
        let text = "- ".repeat(10_000) + "x\n";
        let d = parse("deep.yaml", &text).unwrap_err();
        assert_eq!(d.code, "yaml.budget-exceeded", "{d}");
    }

    #[test]
    fn ten_thousand_deep_flow_nesting_is_refused() {
        let text = "[".repeat(10_000) + &"]".repeat(10_000);
        let d = parse("deep.yaml", &text).unwrap_err();
        assert_eq!(d.code, "yaml.budget-exceeded", "{d}");
    }

    #[test]
    fn deepest_accepted_nesting_parses_on_a_small_stack() {
        let block: String = (0..MAX_DEPTH - 1)
            .map(|i| format!("{}a:\n", "  ".repeat(i)))
            .collect();
        let flow = "{a: ".repeat(MAX_DEPTH - 1) + "1" + &"}".repeat(MAX_DEPTH - 1);
        let check = move || {
            for text in [&block, &flow] {
                let mut n = parse("deep.yaml", text).unwrap();
                let mut depth = 0;
                while let Some(inner) = n.get("a") {
                    n = inner.clone();
                    depth += 1;
                }
                assert_eq!(depth, MAX_DEPTH - 1);
            }
            let bomb = "[".repeat(10_000) + &"]".repeat(10_000);
            assert_eq!(
                parse("deep.yaml", &bomb).unwrap_err().code,
                "yaml.budget-exceeded"
            );
        };
        // The tree is built without recursion, so a thread with a small stack suffices.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(check)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn merge_keys_add_what_the_mapping_lacks() {
        let n = parse(
            "m.yaml",
            "base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nm:\n  <<: [*b, *o]\n  x: 9\n",
        )
        .unwrap();
        let m = n.get("m").unwrap();
        assert_eq!(m.to_json().to_string(), r#"{"x":9,"y":2,"z":4}"#);
        // A quoted `<<` is an ordinary key.
        let q = parse("m.yaml", "'<<': 1\n").unwrap();
        assert_eq!(q.get("<<").unwrap().value, Value::Int(1));
    }

    #[test]
    fn an_alias_takes_the_position_where_it_is_used() {
        let n = parse("a.yaml", "a: &x {k: v}\nb: *x\n").unwrap();
        let b = n.get("b").unwrap();
        assert_eq!(b.pos, Pos { line: 2, column: 4 });
        let (k, v) = b.get_entry("k").unwrap();
        assert_eq!((k.pos, v.as_str()), (Pos { line: 2, column: 4 }, Some("v")));
    }

    #[test]
    fn collection_keys_recursive_aliases_and_many_documents_are_refused() {
        let key = parse("k.yaml", "? [a, b]\n: 1\n").unwrap_err();
        assert_eq!(key.code, "yaml.syntax");
        assert_eq!(key.location.unwrap().line, 1);
        let recursive = parse("r.yaml", "a: &x [1, *x]\n").unwrap_err();
        assert!(recursive.message.contains("recursive"), "{recursive}");
        let two = parse("t.yaml", "a: 1\n---\nb: 2\n").unwrap_err();
        assert!(two.message.contains("2 YAML documents"), "{two}");
        let tag = parse("g.yaml", "a: !!int seven\n").unwrap_err();
        assert!(tag.message.contains("not an integer"), "{tag}");
    }

    #[test]
    fn multi_document_stream_skips_empty_documents() {
        let docs = parse_multi("m.yaml", "a: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].get("b").unwrap().pos.line, 4);
    }

    #[test]
    fn to_json_keeps_order_and_types() {
        let n = parse("a.yaml", "z: 1\na: [true, 1.5, s]\n").unwrap();
        assert_eq!(n.to_json().to_string(), r#"{"z":1,"a":[true,1.5,"s"]}"#);
    }
}
