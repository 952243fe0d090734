//! YAML loading with source positions.
//!
//! Every TOSCA file is loaded into a [`Node`] tree where each value and each mapping key carries
//! the 1-based line and column it came from, so that later phases can point at the exact spot of
//! a problem. Loading goes through `serde-saphyr` with YAML 1.2 strict booleans (`yes`/`on` stay
//! strings, as TOSCA requires), duplicate keys rejected, and its budgets on: alias bombs, deep
//! nesting and oversized documents are refused with a diagnostic instead of exhausting memory or
//! the stack.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use vnfm_descriptor::Diagnostic;

/// Largest YAML file accepted, in bytes. Descriptors are small; anything bigger is refused
/// before parsing.
pub const MAX_YAML_BYTES: usize = 16 * 1024 * 1024;

/// Deepest nesting of collections accepted (the budget's limit).
pub const MAX_DEPTH: usize = 64;

/// Stack the parser runs on: the recursive descent of the deserializer needs more than a test
/// thread's 2 MiB at [`MAX_DEPTH`] in unoptimized builds (about 0.5 MiB when optimized).
const PARSER_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Stack left on the calling thread below which the parser gets a stack of its own: 8 times
/// what it needs when optimized (so a program's main thread parses in place, without faulting
/// in fresh stack pages for every file), and about half the parser stack otherwise.
const PARSER_RED_ZONE_BYTES: usize = if cfg!(debug_assertions) {
    32 * 1024 * 1024
} else {
    4 * 1024 * 1024
};

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
    match on_parser_stack(|| parse_document(text)) {
        Some(result) => result.map_err(|e| to_diagnostic(file, &e)),
        None => Err(parser_failed(file)),
    }
}

/// Parses a stream of YAML documents (`---` separated), such as a Kubernetes manifest file.
/// Empty documents are skipped.
pub fn parse_multi(file: &str, text: &str) -> Result<Vec<Node>, Diagnostic> {
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
    let parsed = on_parser_stack(|| {
        serde_saphyr::from_str_multiple_with_options::<Option<At<Node>>, Vec<_>>(text, options())
    });
    match parsed {
        Some(result) => result
            .map(|docs| {
                docs.into_iter()
                    .flatten()
                    .map(unspan)
                    .filter(|n| !n.is_null())
                    .collect()
            })
            .map_err(|e| to_diagnostic(file, &e)),
        None => Err(parser_failed(file)),
    }
}

/// Runs `f` (the parser) where its recursion has room: on the current stack when plenty is
/// left, else on a fresh stack of [`PARSER_STACK_BYTES`] (no thread is started, so nothing
/// waits for the scheduler). `None` when the parser panicked.
fn on_parser_stack<T>(f: impl FnOnce() -> T) -> Option<T> {
    stacker::maybe_grow(PARSER_RED_ZONE_BYTES, PARSER_STACK_BYTES, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
    })
}

fn parser_failed(file: &str) -> Diagnostic {
    Diagnostic::error(
        "yaml.parser-failed",
        "the YAML parser failed unexpectedly on this file",
    )
    .at(vnfm_descriptor::Location::file(file))
}

fn options() -> serde_saphyr::options::Options {
    let mut opts = serde_saphyr::options::Options::default();
    opts.strict_booleans = true;
    opts.with_snippet = false;
    // Comments are still scanned and checked as YAML, but not captured into events: nothing
    // reads them, and carrying them through the deserializer was about a tenth of the parse.
    opts.emit_comments = false;
    let mut budget = opts.budget.clone().unwrap_or_default();
    budget.max_depth = MAX_DEPTH;
    opts.budget = Some(budget);
    opts
}

fn parse_document(text: &str) -> Result<Node, serde_saphyr::Error> {
    let doc: Option<At<Node>> = serde_saphyr::from_str_with_options(text, options())?;
    Ok(doc
        .map(unspan)
        .unwrap_or_else(|| Node::synthetic(Value::Null)))
}

fn to_diagnostic(file: &str, e: &serde_saphyr::Error) -> Diagnostic {
    let rendered = e.to_string();
    let first = rendered.lines().next().unwrap_or("invalid YAML").trim();
    // The rendered message starts with "error: line L column C: "; the position goes into the
    // location instead.
    let message = first
        .strip_prefix("error: ")
        .map(|rest| match rest.split_once(": ") {
            Some((pos, msg)) if pos.starts_with("line ") => msg,
            _ => rest,
        })
        .unwrap_or(first)
        .to_string();
    let code = if message.contains("budget breached") || message.contains("recursion limit") {
        "yaml.budget-exceeded"
    } else if message.contains("duplicate") {
        "yaml.duplicate-key"
    } else {
        "yaml.syntax"
    };
    let (line, column) = e
        .location()
        .map(|l| (clamp(l.line()), clamp(l.column())))
        .unwrap_or((0, 0));
    let mut d = Diagnostic::error(code, message).at_pos(file, line, column);
    if code == "yaml.budget-exceeded" {
        d = d.with_help(format!(
            "descriptors may nest at most {MAX_DEPTH} levels and may not expand aliases into huge documents"
        ));
    }
    d
}

fn clamp(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// A value and the position serde-saphyr reports for it (its use site: for an alias, where the
/// alias is written).
///
/// This reads serde-saphyr's span protocol (the `__yaml_spanned` newtype, which the deserializer
/// answers with a `{marker, value, referenced, defined}` struct view) directly instead of going
/// through [`serde_saphyr::Spanned`]: only the value and the line and column of `referenced`
/// are taken, without allocating the marker key or walking both locations' nested span
/// structs, which made that wrapper cost more per node than scanning and parsing the YAML.
struct At<T> {
    value: T,
    pos: Pos,
}

/// The name serde-saphyr's deserializer recognises to report a node's location.
const SPAN_PROTOCOL: &str = "__yaml_spanned";
/// The fields of its struct view, in the order it yields them.
const SPAN_FIELDS: &[&str] = &[
    "__serde_saphyr_private_spanned",
    "value",
    "referenced",
    "defined",
];
/// The fields of a location's struct view.
const LOCATION_FIELDS: &[&str] = &["line", "column", "span", "source_id"];

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(SPAN_PROTOCOL, AtVisitor(std::marker::PhantomData))
    }
}

struct AtVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for AtVisitor<T> {
    type Value = At<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML node with its location")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<At<T>, D::Error> {
        d.deserialize_struct("Spanned", SPAN_FIELDS, self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<At<T>, A::Error> {
        let mut value = None;
        while let Some(field) = map.next_key::<SpanField>()? {
            match field {
                SpanField::Marker => {
                    map.next_value::<de::IgnoredAny>()?;
                }
                SpanField::Value => value = Some(map.next_value::<T>()?),
                SpanField::Referenced => {
                    let pos = map.next_value::<LocationPos>()?.0;
                    // `defined` follows; it is not needed, and the view checks nothing after.
                    return match value {
                        Some(value) => Ok(At { value, pos }),
                        None => Err(de::Error::missing_field("value")),
                    };
                }
                SpanField::Other => return Err(de::Error::custom("unexpected YAML span layout")),
            }
        }
        Err(de::Error::missing_field("referenced"))
    }
}

/// A field name of the span view, read without allocating.
enum SpanField {
    Marker,
    Value,
    Referenced,
    Other,
}

impl<'de> Deserialize<'de> for SpanField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = SpanField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a span field name")
            }
            fn visit_str<E>(self, v: &str) -> Result<SpanField, E> {
                Ok(match v {
                    "__serde_saphyr_private_spanned" => SpanField::Marker,
                    "value" => SpanField::Value,
                    "referenced" => SpanField::Referenced,
                    _ => SpanField::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

/// The line and column of a location's struct view (its other fields are left unread).
struct LocationPos(Pos);

impl<'de> Deserialize<'de> for LocationPos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LocationVisitor;
        impl<'de> Visitor<'de> for LocationVisitor {
            type Value = LocationPos;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a YAML location")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LocationPos, A::Error> {
                let mut pos = Pos::default();
                while let Some(field) = map.next_key::<LocationField>()? {
                    match field {
                        LocationField::Line => pos.line = clamp(map.next_value::<u64>()?),
                        LocationField::Column => {
                            pos.column = clamp(map.next_value::<u64>()?);
                            return Ok(LocationPos(pos));
                        }
                        LocationField::Other => break,
                    }
                }
                Ok(LocationPos(pos))
            }
        }
        d.deserialize_struct("Location", LOCATION_FIELDS, LocationVisitor)
    }
}

enum LocationField {
    Line,
    Column,
    Other,
}

impl<'de> Deserialize<'de> for LocationField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = LocationField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a location field name")
            }
            fn visit_str<E>(self, v: &str) -> Result<LocationField, E> {
                Ok(match v {
                    "line" => LocationField::Line,
                    "column" => LocationField::Column,
                    _ => LocationField::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

fn unspan(s: At<Node>) -> Node {
    Node {
        pos: s.pos,
        ..s.value
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        match i64::try_from(v) {
            Ok(i) => Ok(Node::synthetic(Value::Int(i))),
            Err(_) => Ok(Node::synthetic(Value::Float(v as f64))),
        }
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        match i64::try_from(v) {
            Ok(i) => Ok(Node::synthetic(Value::Int(i))),
            Err(_) => Ok(Node::synthetic(Value::Float(v as f64))),
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        match i64::try_from(v) {
            Ok(i) => Ok(Node::synthetic(Value::Int(i))),
            Err(_) => Ok(Node::synthetic(Value::Float(v as f64))),
        }
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Str(v.into())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Str(v)))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Node, E> {
        Ok(Node::synthetic(Value::Str(
            String::from_utf8_lossy(v).into_owned(),
        )))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element::<At<Node>>()? {
            items.push(unspan(item));
        }
        Ok(Node::synthetic(Value::Seq(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1024));
        while let Some(key) = map.next_key::<At<KeyText>>()? {
            let pos = key.pos;
            let value = map.next_value::<At<Node>>()?;
            entries.push((
                Key {
                    name: key.value.0,
                    pos,
                },
                unspan(value),
            ));
        }
        Ok(Node::synthetic(Value::Map(entries)))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// A mapping key: any scalar, kept as text. Collections as keys are refused.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyText, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = KeyText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyText, E> {
                Ok(KeyText(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<KeyText, E> {
                Ok(KeyText(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<KeyText, E> {
                Ok(KeyText(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<KeyText, E> {
                Ok(KeyText(format_float(v)))
            }
            fn visit_unit<E>(self) -> Result<KeyText, E> {
                Ok(KeyText("null".into()))
            }
        }
        d.deserialize_any(KeyVisitor)
    }
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
    fn deepest_accepted_nesting_parses_in_place_and_on_a_fresh_stack() {
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
        // A thread with more than the red zone left parses in place; a test thread's 2 MiB
        // does not, so the parser moves to a stack of its own.
        std::thread::Builder::new()
            .stack_size(PARSER_RED_ZONE_BYTES + PARSER_STACK_BYTES)
            .spawn(check.clone())
            .unwrap()
            .join()
            .unwrap();
        check();
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
