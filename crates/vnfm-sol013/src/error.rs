//! The crate's one error type. Every message names the query parameter, where the problem is
//! and what to do, so the REST layer can put it as is into a ProblemDetails `detail` (status 400).

use std::fmt::Write as _;

/// Longest piece of client input quoted back in an error message, in characters.
pub const MAX_ECHO_CHARS: usize = 100;

/// What went wrong with a SOL013 query parameter.
///
/// All variants are client errors (HTTP 400). Input quoted in a message is cut to
/// [`MAX_ECHO_CHARS`] characters and control characters are escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Sol013Error {
    /// The `filter` expression does not follow the grammar of SOL013 clause 5.2.2.
    #[error(
        "filter: syntax error at byte {offset}: expected {expected}, found {found}; the grammar is \
         (op,attr/path,value[,value]*) with terms joined by ';' (ETSI GS NFV-SOL 013 clause 5.2.2)"
    )]
    FilterSyntax {
        /// Byte offset in the (percent-decoded) filter value.
        offset: usize,
        /// What the parser expected there.
        expected: &'static str,
        /// What it found instead (quoted, shortened).
        found: String,
    },
    /// An operator name that SOL013 does not define.
    #[error(
        "filter: unknown operator {op} at byte {offset}; use one of eq, neq, gt, gte, lt, lte, \
         cont, ncont, in, nin (lower case)"
    )]
    UnknownOperator {
        /// Byte offset of the operator.
        offset: usize,
        /// The operator as given (quoted, shortened).
        op: String,
    },
    /// A single-value operator (`eq`, `neq`, `gt`, `gte`, `lt`, `lte`) given several values.
    #[error(
        "filter: operator {op} at byte {offset} takes exactly one value but {count} were given; \
         use in/nin to compare against several values"
    )]
    TooManyValuesForOperator {
        /// Byte offset of the term.
        offset: usize,
        /// The operator.
        op: &'static str,
        /// How many values were given.
        count: usize,
    },
    /// The filter expression exceeds one of the parser's bounds.
    #[error("filter: {what} exceeds the limit of {limit}; simplify the filter expression")]
    FilterTooLarge {
        /// Which bound (expression length, number of terms, path depth, values per term).
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// An attribute path names an attribute the resource does not have.
    #[error(
        "{parameter}: attribute {path} does not exist in this resource ({reason}); check the \
         attribute names and their nesting in the resource's data type"
    )]
    UnknownAttribute {
        /// `filter`, `fields` or `exclude_fields`.
        parameter: &'static str,
        /// The path as given (quoted, shortened).
        path: String,
        /// Which segment failed, or why.
        reason: String,
    },
    /// An operator used on an attribute whose type it does not apply to.
    #[error("filter: operator {op} cannot be applied to attribute {path}: {reason}")]
    OperatorNotApplicable {
        /// The operator.
        op: &'static str,
        /// The attribute path (quoted, shortened).
        path: String,
        /// Why, and what to use instead.
        reason: String,
    },
    /// A filter value that cannot be compared with the attribute's type.
    #[error("filter: value {value} is not valid for attribute {path}: {reason}")]
    InvalidValue {
        /// The attribute path (quoted, shortened).
        path: String,
        /// The value (quoted, shortened).
        value: String,
        /// What is expected.
        reason: String,
    },
    /// `fields` or `exclude_fields` is not a comma-separated list of attribute paths.
    #[error(
        "{parameter}: syntax error at byte {offset}: expected {expected}, found {found}; give a \
         comma-separated list of attribute names or paths such as a/b (ETSI GS NFV-SOL 013 clause 5.3)"
    )]
    SelectorSyntax {
        /// `fields` or `exclude_fields`.
        parameter: &'static str,
        /// Byte offset in the (percent-decoded) value.
        offset: usize,
        /// What was expected.
        expected: &'static str,
        /// What was found (quoted, shortened).
        found: String,
    },
    /// A list of attribute paths exceeds one of the bounds.
    #[error("{parameter}: {what} exceeds the limit of {limit}")]
    SelectorTooLarge {
        /// `fields` or `exclude_fields`.
        parameter: &'static str,
        /// Which bound.
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// A combination of attribute selector parameters that SOL013 Table 5.3.2-2 does not allow.
    #[error(
        "attribute selectors {given} cannot be combined; allowed are: none, all_fields, fields, \
         exclude_fields, exclude_default, or fields with exclude_default (ETSI GS NFV-SOL 013 \
         Table 5.3.2-2)"
    )]
    SelectorCombination {
        /// The parameters given, joined by " and ".
        given: String,
    },
    /// A query string that is not well-formed.
    #[error("query parameter {parameter}: {reason}")]
    QuerySyntax {
        /// The parameter concerned (quoted, shortened), or `query` for the whole string.
        parameter: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A query parameter name or value whose percent-encoding is malformed (a `%` not
    /// followed by two hex digits).
    #[error(
        "query parameter {parameter}: the {part} has a malformed percent-encoding at byte \
         {offset} (write % as %25, and each escape as % and two hex digits)"
    )]
    MalformedPercentEncoding {
        /// The parameter concerned (quoted, shortened).
        parameter: String,
        /// `parameter name` or `value`.
        part: &'static str,
        /// Byte offset of the `%` in the name or value.
        offset: usize,
    },
    /// A query parameter name or value that is not UTF-8 once percent-decoded.
    #[error(
        "query parameter {parameter}: the {part} is not UTF-8 once percent-decoded (byte {} of \
         the decoded text)",
        source.valid_up_to()
    )]
    NotUtf8 {
        /// The parameter concerned (quoted, shortened).
        parameter: String,
        /// `parameter name` or `value`.
        part: &'static str,
        /// Where decoding stopped.
        #[source]
        source: std::str::Utf8Error,
    },
    /// A SOL013 parameter given more than once.
    #[error("query parameter {parameter} is given more than once; give it once")]
    RepeatedParameter {
        /// The parameter.
        parameter: &'static str,
    },
    /// A paging marker that is not one this server issued for this query.
    #[error(
        "nextpage_opaque_marker: {reason}; use the marker from the Link header of the previous \
         page unchanged, with the same filter and attribute selectors, or repeat the query without it"
    )]
    InvalidMarker {
        /// What is wrong with the marker.
        reason: &'static str,
    },
}

/// Quotes client input for an error message: at most [`MAX_ECHO_CHARS`] characters, control
/// characters escaped, in single quotes, with "..." when cut.
pub(crate) fn echo(input: &str) -> String {
    let mut out = String::with_capacity(input.len().min(MAX_ECHO_CHARS) + 5);
    out.push('\'');
    let mut chars = input.chars();
    for c in chars.by_ref().take(MAX_ECHO_CHARS) {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    if chars.next().is_some() {
        out.push_str("...");
    }
    out
}

/// Describes what the parser found at `offset`: the rest of the input (shortened) or the end.
pub(crate) fn found_at(input: &str, offset: usize) -> String {
    match input.get(offset..) {
        Some("") | None => "the end of the value".to_owned(),
        Some(rest) => echo(rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_cuts_long_input_and_escapes_controls() {
        let long = "x".repeat(500);
        let e = echo(&long);
        assert_eq!(e.chars().filter(|c| *c == 'x').count(), MAX_ECHO_CHARS);
        assert!(e.ends_with("'..."));
        assert_eq!(echo("a\nb"), "'a\\u{a}b'");
        assert_eq!(found_at("abc", 3), "the end of the value");
        assert_eq!(found_at("abc", 1), "'bc'");
    }
}
