//! Property and attribute definitions: schemas, constraints, occurrences.

use super::*;

pub(super) fn prop_defs(
    node: &Node,
    at: Pos,
    what: &str,
    problems: &mut Vec<Problem>,
) -> Vec<Arc<PropDef>> {
    entries(node, at, what, problems)
        .iter()
        .map(|(k, v)| Arc::new(prop_def(k, v, problems)))
        .collect()
}

const PROP_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "required",
    "default",
    "value",
    "status",
    "constraints",
    "key_schema",
    "entry_schema",
    "external_schema",
    "metadata",
];

/// Reads a property/attribute/parameter definition.
pub(crate) fn prop_def(key: &Key, node: &Node, problems: &mut Vec<Problem>) -> PropDef {
    let mut p = PropDef {
        name: key.name.as_str().to_owned(),
        pos: key.pos,
        schema: None,
        required: None,
        default: None,
        value: None,
    };
    let Some(map) = node.as_map() else {
        if !node.is_null() {
            problems.push(wrong_shape(
                node,
                &format!("the definition of `{}`", key.name),
                "a map",
            ));
        }
        return p;
    };
    let mut ty = None;
    let mut entry = None;
    let mut key_schema = None;
    let mut cons = Vec::new();
    for (k, v) in map {
        match k.name.as_str() {
            "type" => ty = named(v, "type", problems),
            "required" => match v.value {
                Value::Bool(b) => p.required = Some(b),
                _ => problems.push(wrong_shape(v, "`required`", "true or false")),
            },
            "default" => p.default = Some(v.clone()),
            "value" => p.value = Some(v.clone()),
            "constraints" => cons = constraints(v, problems),
            "entry_schema" => entry = schema(v, problems).map(Box::new),
            "key_schema" => key_schema = schema(v, problems).map(Box::new),
            "description" | "status" | "external_schema" | "metadata" => {}
            other => problems.push(
                Problem::error(
                    "tosca.unknown-keyword",
                    k.pos,
                    format!(
                        "`{other}` is not a keyword of the definition of `{}`",
                        key.name
                    ),
                )
                .with_help(format!("allowed here: {}", PROP_KEYWORDS.join(", "))),
            ),
        }
    }
    match ty {
        Some(ty) => {
            p.schema = Some(Schema {
                ty,
                entry,
                key: key_schema,
                constraints: cons,
            })
        }
        None if entry.is_some() || key_schema.is_some() || !cons.is_empty() => {
            // A refinement without `type` keeps the parent's type; the schema parts given here
            // are applied on top of it during inheritance.
            p.schema = Some(Schema {
                ty: Named {
                    name: String::new(),
                    pos: key.pos,
                },
                entry,
                key: key_schema,
                constraints: cons,
            })
        }
        None => {}
    }
    p
}

/// Reads an `entry_schema` / `key_schema`: a type name or a map with `type`.
pub(crate) fn schema(node: &Node, problems: &mut Vec<Problem>) -> Option<Schema> {
    match &node.value {
        Value::Str(s) => Some(Schema {
            ty: Named {
                name: s.as_str().to_owned(),
                pos: node.pos,
            },
            entry: None,
            key: None,
            constraints: Vec::new(),
        }),
        Value::Map(map) => {
            let mut ty = None;
            let mut s_entry = None;
            let mut s_key = None;
            let mut cons = Vec::new();
            for (k, v) in map {
                match k.name.as_str() {
                    "type" => ty = named(v, "type", problems),
                    "entry_schema" => s_entry = schema(v, problems).map(Box::new),
                    "key_schema" => s_key = schema(v, problems).map(Box::new),
                    "constraints" => cons = constraints(v, problems),
                    "description" | "metadata" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{other}` is not a keyword of a schema definition"),
                    )),
                }
            }
            match ty {
                Some(ty) => Some(Schema {
                    ty,
                    entry: s_entry,
                    key: s_key,
                    constraints: cons,
                }),
                None => {
                    problems.push(Problem::error(
                        "tosca.missing-keyword",
                        node.pos,
                        "a schema definition needs a `type`",
                    ));
                    None
                }
            }
        }
        _ => {
            problems.push(wrong_shape(node, "a schema", "a type name or a map"));
            None
        }
    }
}

/// Reads a list of constraint clauses.
pub(crate) fn constraints(node: &Node, problems: &mut Vec<Problem>) -> Vec<Constraint> {
    let items: &[Node] = match &node.value {
        Value::Seq(items) => items,
        Value::Null => return Vec::new(),
        _ => {
            problems.push(wrong_shape(node, "`constraints`", "a list"));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_map() {
            Some([(k, arg)]) => match ConstraintOp::parse(&k.name) {
                Some(op) => {
                    if let Some(p) = constraint_arg_problem(op, arg) {
                        problems.push(p);
                    } else {
                        out.push(Constraint {
                            op,
                            arg: arg.clone(),
                            pos: k.pos,
                        });
                    }
                }
                None => problems.push(Problem::error(
                    "tosca.unknown-constraint",
                    k.pos,
                    format!("`{}` is not a TOSCA constraint operator", k.name),
                ).with_help("use equal, greater_than, greater_or_equal, less_than, less_or_equal, in_range, valid_values, length, min_length, max_length or pattern")),
            },
            _ => problems.push(wrong_shape(item, "a constraint clause", "a map with one operator")),
        }
    }
    out
}

fn constraint_arg_problem(op: ConstraintOp, arg: &Node) -> Option<Problem> {
    let bad = |expected: &str| {
        Some(wrong_shape(
            arg,
            &format!("the argument of `{}`", op.keyword()),
            expected,
        ))
    };
    match op {
        ConstraintOp::InRange => match arg.as_seq() {
            Some(s) if s.len() == 2 => None,
            _ => bad("a list of two values"),
        },
        ConstraintOp::ValidValues => match arg.as_seq() {
            Some(_) => None,
            None => bad("a list"),
        },
        ConstraintOp::Length | ConstraintOp::MinLength | ConstraintOp::MaxLength => {
            match arg.value {
                Value::Int(i) if i >= 0 => None,
                _ => bad("a non-negative integer"),
            }
        }
        ConstraintOp::Pattern => match arg.value {
            Value::Str(_) => None,
            _ => bad("a string"),
        },
        _ => match arg.value {
            Value::Seq(_) | Value::Map(_) | Value::Null => bad("a scalar value"),
            _ => None,
        },
    }
}

/// Reads `occurrences: [min, max]`.
pub(crate) fn occurrences(node: &Node, problems: &mut Vec<Problem>) -> Option<Occurrences> {
    let bound = |n: &Node| match &n.value {
        Value::Int(i) if *i >= 0 => Some(Some(*i as u64)),
        Value::Str(s) if s == "UNBOUNDED" => Some(None),
        _ => None,
    };
    if let Some([lo, hi]) = node.as_seq()
        && let (Some(Some(min)), Some(max)) = (bound(lo), bound(hi))
        && max.is_none_or(|m| m >= min)
    {
        return Some(Occurrences { min, max });
    }
    problems.push(wrong_shape(
        node,
        "`occurrences`",
        "a list [min, max] of non-negative integers with max >= min (or UNBOUNDED)",
    ));
    None
}
