//! Values: primitive types, scalar units, versions, constraints, TOSCA functions, and checking a
//! value against its (primitive or data) type.
//!
//! A value is checked against a [`Schema`] (a type name plus entry/key schemas and
//! constraints). Primitive types are built in: `string`, `integer`, `float`, `boolean`,
//! `timestamp`, `null`, `version`, `range`, `list`, `map` and the scalar units
//! `scalar-unit.size` / `.time` / `.frequency` / `.bitrate` (units are case-insensitive, sizes are
//! normalized to bytes). Data types are checked property by property, with inherited
//! definitions, required properties and nested schemas. Constraints (`equal`, `greater_than`,
//! `greater_or_equal`, `less_than`, `less_or_equal`, `in_range`, `valid_values`, `length`,
//! `min_length`, `max_length`, `pattern`) compare values in the value's type (sizes in bytes,
//! versions by component). A value that is a TOSCA function call (`get_input`,
//! `get_property`, `get_attribute`, `get_operation_output`, `get_artifact`, `concat`, `join`,
//! `token`) is accepted wherever a value is expected; its arguments are checked for shape only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

use crate::hierarchy::{DataRef, FlatProp, Types};
use crate::problem::Sink;
use crate::quirks::Quirk;
use crate::types::{Constraint, ConstraintOp, Schema};
use crate::yaml::{Node, Pos, Value};

mod primitives;

pub(crate) use primitives::{Prim, size_bytes};
use primitives::{Version, is_timestamp, parse_scalar, parse_version};

/// The TOSCA intrinsic functions accepted as values.
pub(crate) const FUNCTIONS: &[&str] = &[
    "get_input",
    "get_property",
    "get_attribute",
    "get_operation_output",
    "get_artifact",
    "concat",
    "join",
    "token",
];

/// The function name and argument when `node` is a function call (a single-entry map whose key
/// is a TOSCA function).
pub(crate) fn function_call(node: &Node) -> Option<(&str, &Node, Pos)> {
    match node.as_map()? {
        [(k, arg)] if FUNCTIONS.contains(&k.name.as_str()) => Some((&k.name, arg, k.pos)),
        _ => None,
    }
}

/// Why a function call's arguments are malformed, if they are.
fn function_shape_problem(name: &str, arg: &Node) -> Option<&'static str> {
    let seq_len = arg.as_seq().map(<[Node]>::len);
    match name {
        "get_input" => match (&arg.value, seq_len) {
            (Value::Str(_), _) => None,
            (_, Some(n)) if n >= 1 && arg.as_seq().is_some_and(|s| s[0].as_str().is_some()) => None,
            _ => Some("an input name, or a list starting with an input name"),
        },
        "get_property" | "get_attribute" => match seq_len {
            Some(n) if n >= 2 => None,
            _ => Some("a list [ entity, (capability or requirement,) property, ... ]"),
        },
        "get_operation_output" => match seq_len {
            Some(4) => None,
            _ => Some("a list [ entity, interface, operation, output ]"),
        },
        "get_artifact" => match seq_len {
            Some(n) if (2..=4).contains(&n) => None,
            _ => Some("a list [ entity, artifact (, location, remove) ]"),
        },
        "concat" => match seq_len {
            Some(n) if n >= 1 => None,
            _ => Some("a non-empty list"),
        },
        "join" => match arg.as_seq() {
            Some([list, ..]) if list.as_seq().is_some() && seq_len <= Some(2) => None,
            _ => Some("a list [ [ values ], delimiter ]"),
        },
        "token" => match seq_len {
            Some(3) => None,
            _ => Some("a list [ string, separators, index ]"),
        },
        _ => None,
    }
}

/// Checks values against schemas, reporting into a sink.
pub(crate) struct Checker<'a, 'g> {
    pub types: &'a Types<'g>,
    pub sink: &'a mut Sink,
    /// Properties of a VNF node (or its substitution mapping) are being checked: `valid_values`
    /// and `equal` violations are tolerated as quirks (see `Quirk::UndeclaredFlavourId` and
    /// `Quirk::VnfPropertyNotInValidValues`).
    pub vnf_mode: bool,
    relax: Option<Quirk>,
}

impl<'a, 'g> Checker<'a, 'g> {
    pub fn new(types: &'a Types<'g>, sink: &'a mut Sink) -> Self {
        Checker {
            types,
            sink,
            vnf_mode: false,
            relax: None,
        }
    }

    /// Checks one VNF property; see [`Checker::vnf_mode`].
    pub fn check_vnf_property(
        &mut self,
        name: &str,
        value: &Node,
        schema: &Schema,
        schema_file: usize,
        at: At<'_>,
    ) {
        let saved = self.relax;
        self.relax = Some(if name == "flavour_id" {
            Quirk::UndeclaredFlavourId
        } else {
            Quirk::VnfPropertyNotInValidValues
        });
        self.check(value, schema, schema_file, at);
        self.relax = saved;
    }
}

/// Where the value being checked is and what it is called.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'s> {
    /// Display path of the file holding the value.
    pub file: &'s str,
    /// Human description, e.g. "property `vdu_profile` of node template `VDU1`".
    pub what: &'s str,
}

impl Checker<'_, '_> {
    /// Checks `value` against `schema`, whose type names are resolved from file `schema_file`.
    pub fn check(&mut self, value: &Node, schema: &Schema, schema_file: usize, at: At<'_>) {
        if self.check_function(value, at) {
            return;
        }
        let Some(dref) = self.types.data_ref(&schema.ty.name, schema_file) else {
            // Unknown types were reported where they are defined.
            return;
        };
        let prim = match dref {
            DataRef::Prim(p) => {
                self.check_prim(
                    value,
                    p,
                    schema.entry.as_deref(),
                    schema.key.as_deref(),
                    schema_file,
                    at,
                );
                Some(p)
            }
            DataRef::Type(id) => {
                let flat = self.types.flat(id);
                match flat.base {
                    Some(base) => {
                        let entry = schema
                            .entry
                            .as_deref()
                            .map(|s| (s, schema_file))
                            .or_else(|| flat.entry_schema.as_ref().map(|(s, f)| (s, *f)));
                        let key = schema
                            .key
                            .as_deref()
                            .map(|s| (s, schema_file))
                            .or_else(|| flat.key_schema.as_ref().map(|(s, f)| (s, *f)));
                        match (entry, key) {
                            (Some((e, ef)), _) => {
                                self.check_prim(value, base, Some(e), key.map(|k| k.0), ef, at)
                            }
                            (None, Some((k, kf))) => {
                                self.check_prim(value, base, None, Some(k), kf, at)
                            }
                            (None, None) => {
                                self.check_prim(value, base, None, None, schema_file, at)
                            }
                        }
                        for (c, f) in &flat.constraints {
                            self.check_constraint(value, base, c, *f, at);
                        }
                        Some(base)
                    }
                    None => {
                        self.check_complex(value, &flat.properties, &schema.ty.name, at);
                        None
                    }
                }
            }
        };
        for c in &schema.constraints {
            match prim {
                Some(p) => self.check_constraint(value, p, c, schema_file, at),
                None => self.check_constraint(value, Prim::Map, c, schema_file, at),
            }
        }
    }

    /// Reports malformed function calls; true when `value` is a function call.
    pub fn check_function(&mut self, value: &Node, at: At<'_>) -> bool {
        let Some((name, arg, pos)) = function_call(value) else {
            return false;
        };
        if let Some(expected) = function_shape_problem(name, arg) {
            self.sink.error(
                at.file,
                pos,
                "tosca.invalid-function",
                format!("`{name}` in {} needs {expected}", at.what),
            );
        }
        true
    }

    fn wrong_type(
        &mut self,
        value: &Node,
        expected: &str,
        example: &str,
        at: At<'_>,
        detail: Option<String>,
    ) {
        let shown = value
            .scalar_text()
            .map(|s| format!("`{s}`"))
            .unwrap_or_else(|| value.value.kind().to_string());
        let article = if expected.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        let mut msg = format!("{} must be {article} {expected}, but is {shown}", at.what);
        if let Some(d) = detail {
            msg.push_str(": ");
            msg.push_str(&d);
        }
        self.sink
            .error(at.file, value.pos, "tosca.wrong-type", msg)
            .help = Some(format!("write {article} {expected}, e.g. {example}"));
    }

    fn check_prim(
        &mut self,
        value: &Node,
        p: Prim,
        entry: Option<&Schema>,
        key: Option<&Schema>,
        schema_file: usize,
        at: At<'_>,
    ) {
        match (p, &value.value) {
            (Prim::String, Value::Str(_))
            | (Prim::Integer, Value::Int(_))
            | (Prim::Float, Value::Int(_) | Value::Float(_))
            | (Prim::Boolean, Value::Bool(_))
            | (Prim::Null, Value::Null) => {}
            (Prim::Version, Value::Str(_) | Value::Float(_) | Value::Int(_)) => {
                let text = value.scalar_text().unwrap_or_default();
                if parse_version(&text).is_none() {
                    self.wrong_type(
                        value,
                        "version",
                        p.example(),
                        at,
                        Some("a version is major.minor[.fix[.qualifier[-build]]]".into()),
                    );
                }
            }
            (Prim::Timestamp, Value::Str(s)) => {
                if !is_timestamp(s) {
                    self.wrong_type(value, "timestamp", p.example(), at, None);
                }
            }
            (Prim::Size | Prim::Time | Prim::Frequency | Prim::Bitrate, Value::Str(s)) => {
                if let Err(why) = parse_scalar(s, p) {
                    self.wrong_type(value, p.name(), p.example(), at, Some(why.to_string()));
                }
            }
            (Prim::Range, Value::Seq(items)) => self.check_range(value, items, at),
            (Prim::List, Value::Seq(items)) => {
                if let Some(e) = entry {
                    for (i, item) in items.iter().enumerate() {
                        if item.is_null() {
                            continue;
                        }
                        let what = format!("entry {i} of {}", at.what);
                        self.check(
                            item,
                            e,
                            schema_file,
                            At {
                                file: at.file,
                                what: &what,
                            },
                        );
                    }
                }
            }
            (Prim::Map, Value::Map(entries)) => {
                for (k, v) in entries {
                    if let Some(ks) = key {
                        let key_node = Node {
                            value: Value::Str(k.name.clone()),
                            pos: k.pos,
                        };
                        let what = format!("key `{}` of {}", k.name, at.what);
                        self.check(
                            &key_node,
                            ks,
                            schema_file,
                            At {
                                file: at.file,
                                what: &what,
                            },
                        );
                    }
                    if let Some(e) = entry {
                        if v.is_null() {
                            continue;
                        }
                        let what = format!("`{}` of {}", k.name, at.what);
                        self.check(
                            v,
                            e,
                            schema_file,
                            At {
                                file: at.file,
                                what: &what,
                            },
                        );
                    }
                }
            }
            _ => self.wrong_type(value, p.name(), p.example(), at, None),
        }
    }

    fn check_range(&mut self, value: &Node, items: &[Node], at: At<'_>) {
        let bound = |n: &Node| match &n.value {
            Value::Int(i) => Some(Some(*i)),
            Value::Str(s) if s == "UNBOUNDED" => Some(None),
            _ => None,
        };
        let ok = match items {
            [lo, hi] => match (bound(lo), bound(hi)) {
                (Some(Some(l)), Some(Some(h))) => l <= h,
                (Some(Some(_)), Some(None)) => true,
                _ => false,
            },
            _ => false,
        };
        if !ok {
            self.wrong_type(value, "range", Prim::Range.example(), at, Some("a range is [ lower, upper ] with integers (upper may be UNBOUNDED) and lower <= upper".into()));
        }
    }

    /// Checks a value of a complex data type (or any property map) against property definitions.
    pub fn check_complex(
        &mut self,
        value: &Node,
        props: &indexmap::IndexMap<String, FlatProp>,
        type_name: &str,
        at: At<'_>,
    ) {
        let Some(entries) = value.as_map() else {
            self.wrong_type(
                value,
                &format!("`{type_name}` (a map)"),
                "{ property: value }",
                at,
                None,
            );
            return;
        };
        self.check_properties(
            entries,
            props,
            value.pos,
            &format!("{} (of type `{type_name}`)", at.what),
            at.file,
        );
    }

    /// Checks assigned properties against definitions: unknown names, types, constraints and
    /// missing required properties (reported at `owner_pos`).
    pub fn check_properties(
        &mut self,
        entries: &[(crate::yaml::Key, Node)],
        props: &indexmap::IndexMap<String, FlatProp>,
        owner_pos: Pos,
        owner: &str,
        file: &str,
    ) {
        for (k, v) in entries {
            match props.get(k.name.as_str()) {
                None => {
                    let mut known: Vec<&str> = props.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    self.sink
                        .error(
                            file,
                            k.pos,
                            "tosca.unknown-property",
                            format!("`{}` is not a property of {owner}", k.name),
                        )
                        .help = Some(if known.is_empty() {
                        "this type has no properties".to_string()
                    } else {
                        format!("known properties: {}", known.join(", "))
                    });
                }
                Some(fp) => {
                    if v.is_null() {
                        continue;
                    }
                    if let Some(schema) = &fp.def.schema {
                        let what = format!("property `{}` of {owner}", k.name);
                        if self.vnf_mode {
                            self.check_vnf_property(
                                &k.name,
                                v,
                                schema,
                                fp.file,
                                At { file, what: &what },
                            );
                        } else {
                            self.check(v, schema, fp.file, At { file, what: &what });
                        }
                    }
                }
            }
        }
        for (name, fp) in props {
            let given = entries.iter().any(|(k, v)| k.name == *name && !v.is_null());
            if !given && fp.def.is_required() && fp.def.default.is_none() && fp.def.value.is_none()
            {
                self.sink.error(
                    file,
                    owner_pos,
                    "tosca.missing-required-property",
                    format!("required property `{name}` of {owner} is not given"),
                );
            }
        }
    }

    /// Checks one constraint clause; `prim` is the value's (base) type.
    pub fn check_constraint(
        &mut self,
        value: &Node,
        prim: Prim,
        c: &Constraint,
        c_file: usize,
        at: At<'_>,
    ) {
        if function_call(value).is_some() || value.is_null() {
            return;
        }
        let ok = match c.op {
            ConstraintOp::Equal => Some(equal(value, &c.arg, prim)),
            ConstraintOp::ValidValues => Some(
                c.arg
                    .as_seq()
                    .is_some_and(|vs| vs.iter().any(|v| equal(value, v, prim))),
            ),
            ConstraintOp::GreaterThan => compare(value, &c.arg, prim).map(|o| o.is_gt()),
            ConstraintOp::GreaterOrEqual => compare(value, &c.arg, prim).map(|o| o.is_ge()),
            ConstraintOp::LessThan => compare(value, &c.arg, prim).map(|o| o.is_lt()),
            ConstraintOp::LessOrEqual => compare(value, &c.arg, prim).map(|o| o.is_le()),
            ConstraintOp::InRange => match c.arg.as_seq() {
                Some([lo, hi]) => {
                    let above = compare(value, lo, prim).map(|o| o.is_ge());
                    let below = if hi.as_str() == Some("UNBOUNDED") {
                        Some(true)
                    } else {
                        compare(value, hi, prim).map(|o| o.is_le())
                    };
                    above.zip(below).map(|(a, b)| a && b)
                }
                _ => None,
            },
            ConstraintOp::Length | ConstraintOp::MinLength | ConstraintOp::MaxLength => {
                let n = match &c.arg.value {
                    Value::Int(n) => usize::try_from(*n).ok(),
                    _ => None,
                };
                length_of(value).zip(n).map(|(len, n)| match c.op {
                    ConstraintOp::Length => len == n,
                    ConstraintOp::MinLength => len >= n,
                    _ => len <= n,
                })
            }
            ConstraintOp::Pattern => match (value.as_str(), c.arg.as_str()) {
                (Some(s), Some(p)) => match compiled(p) {
                    Some(re) => Some(re.is_match(s)),
                    None => {
                        self.sink.error(
                            self.types.file_name(c_file),
                            c.arg.pos,
                            "tosca.invalid-pattern",
                            format!("`{p}` is not a valid regular expression"),
                        );
                        return;
                    }
                },
                _ => None,
            },
        };
        match ok {
            Some(true) => {}
            Some(false) => {
                let shown = value
                    .scalar_text()
                    .map(|s| format!("`{s}`"))
                    .unwrap_or_else(|| value.value.kind().to_string());
                let arg = serde_json::to_string(&c.arg.to_json()).unwrap_or_default();
                if let (Some(q), ConstraintOp::ValidValues | ConstraintOp::Equal) =
                    (self.relax, c.op)
                {
                    self.sink.quirk(
                        q,
                        at.file,
                        value.pos,
                        format!("{} is {shown}, which is not allowed by `{}: {arg}` of the VNF node type", at.what, c.op.keyword()),
                    );
                    return;
                }
                self.sink
                    .error(
                        at.file,
                        value.pos,
                        "tosca.constraint-violated",
                        format!(
                            "{} is {shown}, which violates `{}: {arg}`",
                            at.what,
                            c.op.keyword()
                        ),
                    )
                    .help = Some(format!(
                    "the constraint is declared at {}:{}",
                    self.types.file_name(c_file),
                    c.pos.line
                ));
            }
            None => {
                // The value or the argument could not be compared in this type: the value's own
                // type error (if any) is reported elsewhere; a bad argument is reported here.
                if comparable(&c.arg, prim).is_none()
                    && matches!(
                        c.op,
                        ConstraintOp::GreaterThan
                            | ConstraintOp::GreaterOrEqual
                            | ConstraintOp::LessThan
                            | ConstraintOp::LessOrEqual
                    )
                {
                    self.sink.error(
                        self.types.file_name(c_file),
                        c.arg.pos,
                        "tosca.invalid-constraint",
                        format!(
                            "the argument of `{}` is not a {}",
                            c.op.keyword(),
                            prim.name()
                        ),
                    );
                }
            }
        }
    }
}

fn length_of(value: &Node) -> Option<usize> {
    match &value.value {
        Value::Str(s) => Some(s.chars().count()),
        Value::Seq(s) => Some(s.len()),
        Value::Map(m) => Some(m.len()),
        _ => None,
    }
}

/// A value in a form that orders as its type does.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Cmp {
    Num(f64),
    Text(String),
    Version(Version),
}

fn comparable(v: &Node, prim: Prim) -> Option<Cmp> {
    match prim {
        Prim::Integer | Prim::Float => match v.value {
            Value::Int(i) => Some(Cmp::Num(i as f64)),
            Value::Float(f) => Some(Cmp::Num(f)),
            _ => None,
        },
        Prim::Size | Prim::Time | Prim::Frequency | Prim::Bitrate => {
            parse_scalar(v.as_str()?, prim).ok().map(Cmp::Num)
        }
        Prim::Version => parse_version(&v.scalar_text()?).map(Cmp::Version),
        Prim::String | Prim::Timestamp => v.scalar_text().map(Cmp::Text),
        _ => None,
    }
}

fn compare(v: &Node, arg: &Node, prim: Prim) -> Option<std::cmp::Ordering> {
    comparable(v, prim)?.partial_cmp(&comparable(arg, prim)?)
}

fn equal(v: &Node, arg: &Node, prim: Prim) -> bool {
    match (comparable(v, prim), comparable(arg, prim)) {
        (Some(a), Some(b)) => a == b,
        _ => v.to_json() == arg.to_json(),
    }
}

const MAX_CACHED_PATTERNS: usize = 1024;

/// A compiled, fully anchored pattern; `None` when the pattern is invalid. Compiled patterns are
/// cached for the process (the ETSI files use the same few).
fn compiled(pattern: &str) -> Option<Arc<Regex>> {
    static PATTERNS: OnceLock<Mutex<HashMap<String, Option<Arc<Regex>>>>> = OnceLock::new();
    let cache = PATTERNS.get_or_init(Mutex::default);
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return hit.clone();
    }
    let re = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(1 << 20)
        .build()
        .ok()
        .map(Arc::new);
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= MAX_CACHED_PATTERNS {
        c.clear();
    }
    c.insert(pattern.to_string(), re.clone());
    re
}

#[cfg(test)]
mod tests;
