//! Attribute-based filtering (ETSI GS NFV-SOL 013 clause 5.2): parsing the `filter` query
//! parameter, printing it back in canonical form, and evaluating it on JSON documents.
//!
//! Grammar (SOL013 Table 5.2.2-1):
//!
//! ```text
//! filterExpr            := simpleFilterExpr (";" simpleFilterExpr)*
//! simpleFilterExpr      := "(" opOne "," attrPath "," value ")"
//!                        | "(" opMulti "," attrPath "," value ("," value)* ")"
//! opOne                 := "eq" | "neq" | "gt" | "gte" | "lt" | "lte"
//! opMulti               := "in" | "nin" | "cont" | "ncont"
//! attrPath              := attrName ("/" attrName)*
//! ```
//!
//! A value containing `,`, `)` or `'` is enclosed in single quotes, and a `'` inside a quoted
//! value is written `''`. In attribute names `~0`, `~1`, `~a` and `~b` stand for `~`, `/`, `,`
//! and `@`; the name `@key` stands for the keys of a map.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;
use vnfm_types::time::parse_rfc3339;

use crate::error::{Sol013Error, echo, found_at};
use crate::schema::{self, Kinds};

mod required;
pub use required::RequiredStrings;

/// Longest accepted filter expression, in bytes (after percent-decoding).
pub const MAX_FILTER_LEN: usize = 8192;
/// Most simple filter expressions (terms) in one filter.
pub const MAX_TERMS: usize = 32;
/// Most segments in one attribute path.
pub const MAX_PATH_DEPTH: usize = 16;
/// Most values in one term.
pub const MAX_VALUES: usize = 256;
/// Deepest nesting of arrays followed while evaluating one path on a document.
const MAX_ARRAY_NESTING: usize = 32;

/// A comparison operator of SOL013 Table 5.2.2-2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Attribute equal to the value.
    Eq,
    /// Attribute not equal to the value.
    Neq,
    /// Attribute greater than the value.
    Gt,
    /// Attribute greater than or equal to the value.
    Gte,
    /// Attribute less than the value.
    Lt,
    /// Attribute less than or equal to the value.
    Lte,
    /// String attribute contains (at least) one of the values.
    Cont,
    /// String attribute contains none of the values.
    Ncont,
    /// Attribute equal to one of the values.
    In,
    /// Attribute equal to none of the values.
    Nin,
}

impl Op {
    /// All operators, in the order of SOL013 Table 5.2.2-1.
    pub const ALL: [Op; 10] = [
        Op::Eq,
        Op::Neq,
        Op::Gt,
        Op::Lt,
        Op::Gte,
        Op::Lte,
        Op::In,
        Op::Nin,
        Op::Cont,
        Op::Ncont,
    ];

    /// The operator's name in a filter expression.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Neq => "neq",
            Op::Gt => "gt",
            Op::Gte => "gte",
            Op::Lt => "lt",
            Op::Lte => "lte",
            Op::Cont => "cont",
            Op::Ncont => "ncont",
            Op::In => "in",
            Op::Nin => "nin",
        }
    }

    /// The operator with this name (exact, lower case), if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == name)
    }

    /// `true` for the operators that take a list of values (`in`, `nin`, `cont`, `ncont`);
    /// the others take exactly one.
    pub fn takes_many(self) -> bool {
        matches!(self, Op::In | Op::Nin | Op::Cont | Op::Ncont)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step of an attribute path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An attribute (or map key) name, unescaped.
    Name(String),
    /// `@key`: the keys of a map (SOL013 clause 5.2.2). Only as the last segment.
    Key,
}

impl Segment {
    /// The name, or `None` for [`Segment::Key`].
    pub fn name(&self) -> Option<&str> {
        match self {
            Segment::Name(n) => Some(n),
            Segment::Key => None,
        }
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Key => f.write_str("@key"),
            Segment::Name(n) => write_escaped_name(f, n),
        }
    }
}

/// Writes an attribute name with SOL013's escapes: `~` `/` `,` and a leading `@`.
pub(crate) fn write_escaped_name(f: &mut impl fmt::Write, name: &str) -> fmt::Result {
    for (i, c) in name.chars().enumerate() {
        match c {
            '~' => f.write_str("~0")?,
            '/' => f.write_str("~1")?,
            ',' => f.write_str("~a")?,
            '@' if i == 0 => f.write_str("~b")?,
            c => f.write_char(c)?,
        }
    }
    Ok(())
}

/// Writes a path as `a/b/c` with escapes.
pub(crate) fn write_path(f: &mut impl fmt::Write, path: &[Segment]) -> fmt::Result {
    for (i, s) in path.iter().enumerate() {
        if i > 0 {
            f.write_char('/')?;
        }
        match s {
            Segment::Key => f.write_str("@key")?,
            Segment::Name(n) => write_escaped_name(f, n)?,
        }
    }
    Ok(())
}

fn path_string(path: &[Segment]) -> String {
    let mut s = String::new();
    let _ = write_path(&mut s, path);
    s
}

/// One simple filter expression: `(op,path,values...)`.
///
/// Pushing a term down to a database: on a column holding a top-level string attribute
/// that never holds a date-time (ids, states, names), `eq`/`in` are plain string equality
/// and `neq`/`nin` are `<>`/`NOT IN` with `NULL` rows excluded, exactly as evaluated here.
/// Date-time strings compare as instants here, numbers numerically.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Term {
    /// The operator.
    pub op: Op,
    /// The attribute path, from the resource's top level.
    pub path: Vec<Segment>,
    /// The values, unquoted. One for single-value operators, one or more for the others.
    pub values: Vec<String>,
}

impl Term {
    /// The path in filter syntax (`a/b/c`, escaped), e.g. to map it to a database column.
    pub fn path_string(&self) -> String {
        path_string(&self.path)
    }

    /// `true` when the path is a plain chain of names (no `@key`) equal to `names`.
    pub fn path_is(&self, names: &[&str]) -> bool {
        self.path.len() == names.len()
            && self
                .path
                .iter()
                .zip(names)
                .all(|(s, n)| s.name() == Some(*n))
    }

    /// Whether `doc` satisfies this term (see the crate documentation for the semantics).
    pub fn matches(&self, doc: &Value) -> bool {
        any_leaf(doc, &self.path, 0, &mut |leaf| self.leaf_matches(leaf))
    }

    fn leaf_matches(&self, leaf: Leaf<'_>) -> bool {
        let first = || self.values.first().map(String::as_str).unwrap_or("");
        match self.op {
            Op::Eq => leaf.equals(first()),
            Op::Neq => leaf.comparable() && !leaf.equals(first()),
            Op::In => self.values.iter().any(|v| leaf.equals(v)),
            Op::Nin => leaf.comparable() && !self.values.iter().any(|v| leaf.equals(v)),
            Op::Gt => leaf.order(first()) == Some(Ordering::Greater),
            Op::Gte => matches!(
                leaf.order(first()),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Lt => leaf.order(first()) == Some(Ordering::Less),
            Op::Lte => matches!(leaf.order(first()), Some(Ordering::Less | Ordering::Equal)),
            Op::Cont => match leaf {
                Leaf::Str(s) => self.values.iter().any(|v| s.contains(v.as_str())),
                _ => false,
            },
            Op::Ncont => match leaf {
                Leaf::Str(s) => !self.values.iter().any(|v| s.contains(v.as_str())),
                _ => false,
            },
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},", self.op)?;
        write_path(f, &self.path)?;
        for v in &self.values {
            f.write_str(",")?;
            write_value(f, v)?;
        }
        f.write_str(")")
    }
}

fn write_value(f: &mut fmt::Formatter<'_>, v: &str) -> fmt::Result {
    if v.is_empty() || v.contains([',', ')', '\'']) {
        f.write_str("'")?;
        f.write_str(&v.replace('\'', "''"))?;
        f.write_str("'")
    } else {
        f.write_str(v)
    }
}

/// A scalar reached by a path in a document.
#[derive(Clone, Copy)]
enum Leaf<'a> {
    Str(&'a str),
    Num(&'a serde_json::Number),
    Bool(bool),
    /// An object, or `null`: nothing compares with it.
    Other,
}

impl Leaf<'_> {
    fn comparable(self) -> bool {
        !matches!(self, Leaf::Other)
    }

    fn equals(self, v: &str) -> bool {
        match self {
            Leaf::Str(s) => {
                s == v
                    || matches!((parse_rfc3339(s), parse_rfc3339(v)), (Some(a), Some(b)) if a == b)
            }
            Leaf::Num(n) => parse_number(v)
                .is_some_and(|x| cmp_numbers(json_number(n), x) == Some(Ordering::Equal)),
            Leaf::Bool(b) => (v == "true" && b) || (v == "false" && !b),
            Leaf::Other => false,
        }
    }

    fn order(self, v: &str) -> Option<Ordering> {
        match self {
            Leaf::Str(s) => match (parse_rfc3339(s), parse_rfc3339(v)) {
                (Some(a), Some(b)) => Some(a.cmp(&b)),
                _ => Some(s.cmp(v)),
            },
            Leaf::Num(n) => cmp_numbers(json_number(n), parse_number(v)?),
            Leaf::Bool(_) | Leaf::Other => None,
        }
    }
}

#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn json_number(n: &serde_json::Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// A filter value read as a JSON-style number (no `inf`/`NaN`, no surrounding spaces).
fn parse_number(v: &str) -> Option<Num> {
    let b = v.as_bytes();
    let body = b.strip_prefix(b"-").unwrap_or(b);
    if body.first().is_none_or(|c| !c.is_ascii_digit()) {
        return None;
    }
    if let Ok(i) = v.parse::<i128>() {
        return Some(Num::Int(i));
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    v.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Num::Float)
}

#[allow(clippy::cast_precision_loss)] // comparing an integer with a float is approximate anyway
fn cmp_numbers(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Int(x), Num::Float(y)) => (x as f64).partial_cmp(&y),
        (Num::Float(x), Num::Int(y)) => x.partial_cmp(&(y as f64)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
    }
}

/// Calls `f` on every scalar `path` reaches from `v`, stopping at the first `true`. Arrays
/// are looked through at every step, the leaf included.
fn any_leaf(
    v: &Value,
    path: &[Segment],
    arrays: usize,
    f: &mut impl FnMut(Leaf<'_>) -> bool,
) -> bool {
    if let Value::Array(items) = v {
        if arrays >= MAX_ARRAY_NESTING {
            return false;
        }
        return items.iter().any(|item| any_leaf(item, path, arrays + 1, f));
    }
    match path.split_first() {
        None => f(match v {
            Value::String(s) => Leaf::Str(s),
            Value::Number(n) => Leaf::Num(n),
            Value::Bool(b) => Leaf::Bool(*b),
            _ => Leaf::Other,
        }),
        Some((Segment::Name(name), rest)) => match v {
            Value::Object(map) => map
                .get(name)
                .is_some_and(|child| any_leaf(child, rest, arrays, f)),
            _ => false,
        },
        Some((Segment::Key, _)) => match v {
            Value::Object(map) => map.keys().any(|k| f(Leaf::Str(k))),
            _ => false,
        },
    }
}

/// A parsed `filter` expression: terms joined by logical AND.
///
/// ```
/// use vnfm_sol013::Filter;
/// use serde_json::json;
///
/// let f = Filter::parse("(eq,instantiationState,INSTANTIATED);(cont,vnfInstanceName,'web, eu')")?;
/// assert!(f.matches(&json!({"instantiationState": "INSTANTIATED", "vnfInstanceName": "web, eu-1"})));
/// assert!(!f.matches(&json!({"instantiationState": "NOT_INSTANTIATED", "vnfInstanceName": "web, eu-1"})));
/// // Display gives the canonical expression back.
/// assert_eq!(f.to_string(), "(eq,instantiationState,INSTANTIATED);(cont,vnfInstanceName,'web, eu')");
/// # Ok::<(), vnfm_sol013::Sol013Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Filter {
    terms: Vec<Term>,
}

impl Filter {
    /// Parses the (already percent-decoded) value of the `filter` query parameter.
    ///
    /// # Errors
    /// [`Sol013Error::FilterSyntax`] (with the byte offset and what was expected),
    /// [`Sol013Error::UnknownOperator`], [`Sol013Error::TooManyValuesForOperator`] or
    /// [`Sol013Error::FilterTooLarge`].
    pub fn parse(expr: &str) -> Result<Filter, Sol013Error> {
        if expr.len() > MAX_FILTER_LEN {
            return Err(Sol013Error::FilterTooLarge {
                what: "the expression length in bytes",
                limit: MAX_FILTER_LEN,
            });
        }
        let mut p = Parser {
            s: expr,
            b: expr.as_bytes(),
            pos: 0,
        };
        let mut terms = Vec::new();
        loop {
            if terms.len() == MAX_TERMS {
                return Err(Sol013Error::FilterTooLarge {
                    what: "the number of terms",
                    limit: MAX_TERMS,
                });
            }
            terms.push(p.term()?);
            match p.peek() {
                None => break,
                Some(b';') => p.pos += 1,
                Some(_) => return Err(p.syntax("';' and another term, or the end of the filter")),
            }
        }
        Ok(Filter { terms })
    }

    /// Builds a filter from terms, e.g. the part of a parsed filter left after pushing some
    /// terms down to a database.
    ///
    /// # Errors
    /// [`Sol013Error::FilterTooLarge`] beyond [`MAX_TERMS`], [`MAX_PATH_DEPTH`] or
    /// [`MAX_VALUES`]; [`Sol013Error::TooManyValuesForOperator`] for a single-value operator
    /// with several values; [`Sol013Error::FilterSyntax`] for an empty term list, path or
    /// value list, or a `@key` that is not last.
    pub fn from_terms(terms: Vec<Term>) -> Result<Filter, Sol013Error> {
        let bad = |expected| Sol013Error::FilterSyntax {
            offset: 0,
            expected,
            found: "a term built in code".into(),
        };
        if terms.is_empty() {
            return Err(bad("at least one term"));
        }
        if terms.len() > MAX_TERMS {
            return Err(Sol013Error::FilterTooLarge {
                what: "the number of terms",
                limit: MAX_TERMS,
            });
        }
        for t in &terms {
            if t.path.is_empty() {
                return Err(bad("an attribute path"));
            }
            if t.path.len() > MAX_PATH_DEPTH {
                return Err(Sol013Error::FilterTooLarge {
                    what: "the attribute path depth",
                    limit: MAX_PATH_DEPTH,
                });
            }
            if t.path[..t.path.len() - 1].contains(&Segment::Key) {
                return Err(bad("@key as the last segment of the path only"));
            }
            if t.values.is_empty() {
                return Err(bad("at least one value"));
            }
            if t.values.len() > MAX_VALUES {
                return Err(Sol013Error::FilterTooLarge {
                    what: "the number of values in a term",
                    limit: MAX_VALUES,
                });
            }
            if !t.op.takes_many() && t.values.len() > 1 {
                return Err(Sol013Error::TooManyValuesForOperator {
                    offset: 0,
                    op: t.op.as_str(),
                    count: t.values.len(),
                });
            }
        }
        Ok(Filter { terms })
    }

    /// The terms, in the order given.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// Consumes the filter, returning its terms.
    pub fn into_terms(self) -> Vec<Term> {
        self.terms
    }

    /// Whether `doc` (one resource representation) satisfies every term.
    ///
    /// Evaluation does not allocate.
    pub fn matches(&self, doc: &Value) -> bool {
        self.terms.iter().all(|t| t.matches(doc))
    }

    /// Checks every attribute path against the JSON Schema of the resource (as produced by
    /// schemars: `properties`, `items`, `$ref` into `$defs`/`definitions`, `allOf`/`anyOf`/
    /// `oneOf`, `additionalProperties`), and that operators and values fit the attribute's type.
    ///
    /// An object schema with `properties` and no `additionalProperties` is closed (it is how
    /// schemars describes a Rust struct); one with `additionalProperties` (a map such as
    /// `KeyValuePairs`) accepts any key and, for `true`, any sub-path.
    ///
    /// # Errors
    /// [`Sol013Error::UnknownAttribute`] naming the path, [`Sol013Error::OperatorNotApplicable`]
    /// (e.g. `cont` on a number, any operator on a structured attribute),
    /// [`Sol013Error::InvalidValue`] (a non-number for a number, a value outside an enum).
    pub fn check_attributes(&self, schema: &Value) -> Result<(), Sol013Error> {
        for t in &self.terms {
            let kinds = schema::lookup(schema, &t.path, "filter", || t.path_string())?;
            check_term_types(t, &kinds)?;
        }
        Ok(())
    }
}

fn check_term_types(t: &Term, k: &Kinds<'_>) -> Result<(), Sol013Error> {
    if k.any {
        return Ok(());
    }
    let not_applicable = |reason: &str| Sol013Error::OperatorNotApplicable {
        op: t.op.as_str(),
        path: echo(&t.path_string()),
        reason: reason.to_owned(),
    };
    if !(k.string || k.number || k.boolean) {
        return Err(not_applicable(
            "it is a structured attribute; filter on one of its sub-attributes (attr/sub)",
        ));
    }
    match t.op {
        Op::Gt | Op::Gte | Op::Lt | Op::Lte if !(k.string || k.number) => {
            return Err(not_applicable(
                "ordering applies to numbers, strings and date-times only",
            ));
        }
        Op::Cont | Op::Ncont if !k.string => {
            return Err(not_applicable("cont/ncont apply to string attributes only"));
        }
        _ => {}
    }
    for v in &t.values {
        let invalid = |reason: String| Sol013Error::InvalidValue {
            path: echo(&t.path_string()),
            value: echo(v),
            reason,
        };
        if k.number && !k.string && !k.boolean && parse_number(v).is_none() {
            return Err(invalid("expected a number".into()));
        }
        if k.boolean && !k.string && !k.number && v != "true" && v != "false" {
            return Err(invalid("expected true or false".into()));
        }
        if let Some(allowed) = &k.enum_values
            && matches!(t.op, Op::Eq | Op::Neq | Op::In | Op::Nin)
            && !allowed
                .iter()
                .any(|a| a.as_str() == Some(v.as_str()) || a.to_string() == *v)
        {
            let mut list = allowed
                .iter()
                .take(12)
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            if allowed.len() > 12 {
                list.push_str(", ...");
            }
            return Err(invalid(format!("expected one of {list}")));
        }
    }
    Ok(())
}

impl fmt::Display for Filter {
    /// The canonical expression: terms joined by `;`, names escaped, values quoted only when
    /// needed. For every filter produced by [`Filter::parse`], parsing the output gives an
    /// equal filter.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Filter {
    type Err = Sol013Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Filter::parse(s)
    }
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn syntax(&self, expected: &'static str) -> Sol013Error {
        self.syntax_at(self.pos, expected)
    }

    fn syntax_at(&self, offset: usize, expected: &'static str) -> Sol013Error {
        Sol013Error::FilterSyntax {
            offset,
            expected,
            found: found_at(self.s, offset),
        }
    }

    fn expect(&mut self, c: u8, expected: &'static str) -> Result<(), Sol013Error> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(expected))
        }
    }

    fn term(&mut self) -> Result<Term, Sol013Error> {
        let start = self.pos;
        self.expect(b'(', "'(' opening a term such as (eq,attr,value)")?;
        let op_start = self.pos;
        while self
            .peek()
            .is_some_and(|c| !matches!(c, b',' | b')' | b'(' | b';'))
        {
            self.pos += 1;
        }
        let name = &self.s[op_start..self.pos];
        if name.is_empty() {
            return Err(
                self.syntax("an operator (eq, neq, gt, gte, lt, lte, cont, ncont, in, nin)")
            );
        }
        let op = Op::from_name(name).ok_or_else(|| Sol013Error::UnknownOperator {
            offset: op_start,
            op: echo(name),
        })?;
        self.expect(b',', "',' after the operator")?;
        let path = self.path()?;
        self.expect(b',', "',' and a value after the attribute path")?;
        let mut values = Vec::new();
        loop {
            if values.len() == MAX_VALUES {
                return Err(Sol013Error::FilterTooLarge {
                    what: "the number of values in a term",
                    limit: MAX_VALUES,
                });
            }
            values.push(self.value()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.syntax("',' and another value, or ')' closing the term")),
            }
        }
        if !op.takes_many() && values.len() > 1 {
            return Err(Sol013Error::TooManyValuesForOperator {
                offset: start,
                op: op.as_str(),
                count: values.len(),
            });
        }
        Ok(Term { op, path, values })
    }

    fn path(&mut self) -> Result<Vec<Segment>, Sol013Error> {
        let mut path = Vec::new();
        loop {
            if path.len() == MAX_PATH_DEPTH {
                return Err(Sol013Error::FilterTooLarge {
                    what: "the attribute path depth",
                    limit: MAX_PATH_DEPTH,
                });
            }
            if path.last() == Some(&Segment::Key) {
                return Err(self.syntax_at(
                    self.pos - 1,
                    "',' after @key (@key must be the last segment)",
                ));
            }
            let (seg, end) = parse_segment(self.s, self.pos, true)
                .map_err(|(at, what)| self.syntax_at(at, what))?;
            self.pos = end;
            path.push(seg);
            if self.peek() == Some(b'/') {
                self.pos += 1;
            } else {
                return Ok(path);
            }
        }
    }

    fn value(&mut self) -> Result<String, Sol013Error> {
        let start = self.pos;
        if self.peek() == Some(b'\'') {
            let mut out = String::new();
            let mut seg_start = start + 1;
            let mut i = start + 1;
            loop {
                match self.b.get(i) {
                    None => {
                        return Err(
                            self.syntax_at(start, "a closing single quote for this quoted value")
                        );
                    }
                    Some(b'\'') if self.b.get(i + 1) == Some(&b'\'') => {
                        out.push_str(&self.s[seg_start..=i]);
                        i += 2;
                        seg_start = i;
                    }
                    Some(b'\'') => {
                        out.push_str(&self.s[seg_start..i]);
                        self.pos = i + 1;
                        if !matches!(self.peek(), Some(b',' | b')')) {
                            return Err(self.syntax(
                                "',' or ')' after the closing quote (write a quote inside a quoted value as '')",
                            ));
                        }
                        return Ok(out);
                    }
                    Some(_) => i += 1,
                }
            }
        }
        while let Some(c) = self.peek() {
            match c {
                b',' | b')' => break,
                b'\'' => {
                    return Err(self.syntax(
                        "no single quote in an unquoted value (enclose a value containing , ) or ' in single quotes and double the quotes inside)",
                    ));
                }
                _ => self.pos += 1,
            }
        }
        if self.pos == start {
            return Err(self.syntax("a value (write an empty string as '')"));
        }
        if self.peek().is_none() {
            return Err(self.syntax("')' closing the term"));
        }
        Ok(self.s[start..self.pos].to_owned())
    }
}

/// Parses one attribute name starting at byte `start`, up to the next `/`, `,`, `)`, `(`,
/// `;`, `'` or the end. Returns the segment and the offset after it, or the offset of the
/// problem and what was expected.
pub(crate) fn parse_segment(
    s: &str,
    start: usize,
    allow_key: bool,
) -> Result<(Segment, usize), (usize, &'static str)> {
    let b = s.as_bytes();
    let mut end = start;
    while let Some(&c) = b.get(end) {
        if matches!(c, b'/' | b',' | b')' | b'(' | b';' | b'\'') {
            break;
        }
        end += 1;
    }
    let raw = &s[start..end];
    if raw.is_empty() {
        return Err((start, "an attribute name"));
    }
    if raw == "@key" {
        return if allow_key {
            Ok((Segment::Key, end))
        } else {
            Err((start, "an attribute name (@key is allowed in filters only)"))
        };
    }
    if raw.starts_with('@') {
        return Err((
            start,
            "@key or an attribute name (write a leading @ of a name as ~b)",
        ));
    }
    if raw.starts_with(char::is_whitespace) || raw.ends_with(char::is_whitespace) {
        return Err((
            start,
            "an attribute name without leading or trailing spaces",
        ));
    }
    let mut name = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        if c.is_control() {
            return Err((start + i, "an attribute name without control characters"));
        }
        if c == '~' {
            match chars.next() {
                Some((_, '0')) => name.push('~'),
                Some((_, '1')) => name.push('/'),
                Some((_, 'a')) => name.push(','),
                Some((_, 'b')) => name.push('@'),
                _ => {
                    return Err((
                        start + i,
                        "an escape ~0, ~1, ~a or ~b (for ~ / , @) in the attribute name",
                    ));
                }
            }
        } else {
            name.push(c);
        }
    }
    Ok((Segment::Name(name), end))
}

#[cfg(test)]
mod tests;
