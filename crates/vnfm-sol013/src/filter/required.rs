//! The strings a document must hold for a term to match it: a condition a store can check on
//! a document's JSON text without parsing it, so that a filter on an attribute with no column
//! of its own reads only the documents that can match (the filter is still evaluated on them).

use serde_json::Value;
use vnfm_types::time::parse_rfc3339;

use super::{Op, Term, parse_number};
use crate::schema;

/// Strings one of which a document must hold for a [`Term`] to match it
/// ([`Term::required_strings`]).
///
/// A string is "held" when it is a string value or a member name anywhere in the document
/// (`whole`), or a part of one (`!whole`). Checked on the document's JSON text, that is: the
/// text contains the JSON string literal of one of `any_of` (`whole`), or one of them encoded
/// as inside a JSON string, quotes left out (`!whole`); JSON encoders escape character by
/// character, so a string containing `s` encodes to a text containing the encoding of `s`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequiredStrings {
    /// The strings, one of which is needed.
    pub any_of: Vec<String>,
    /// Whole strings (`eq`, `in`) or parts of strings (`cont`).
    pub whole: bool,
}

impl RequiredStrings {
    /// The texts one of which the JSON text of a matching document contains, as
    /// `serde_json` encodes strings (the encoding the documents were written with).
    pub fn json_fragments(&self) -> Vec<String> {
        self.any_of
            .iter()
            .map(|s| {
                let literal = Value::String(s.clone()).to_string();
                if self.whole {
                    literal
                } else {
                    literal[1..literal.len() - 1].to_owned()
                }
            })
            .collect()
    }
}

impl Term {
    /// The strings a document must hold for this term to match it, when there are such:
    /// `eq` and `in` need one of their values as a whole string (or member name), `cont` one
    /// of its values inside a string. `None` for the other operators (negations and orderings
    /// match documents without any particular string), for a `cont` value that is empty, and
    /// for an `eq`/`in` value that could equal a leaf of another spelling: a date-time equals
    /// any spelling of its instant, and a number or `true`/`false` equals a number or boolean
    /// leaf, unless `schema` (the resource's JSON Schema) says the attribute holds strings only.
    pub fn required_strings(&self, schema: &Value) -> Option<RequiredStrings> {
        match self.op {
            Op::Eq | Op::In => {
                let strings_only = || {
                    schema::lookup(schema, &self.path, "filter", String::new)
                        .is_ok_and(|k| k.string && !k.any && !k.number && !k.boolean)
                };
                let typed = |v: &str| parse_number(v).is_some() || v == "true" || v == "false";
                let spelled_once = self.values.iter().all(|v| parse_rfc3339(v).is_none());
                let untyped = !self.values.iter().any(|v| typed(v)) || strings_only();
                (spelled_once && untyped).then(|| RequiredStrings {
                    any_of: self.values.clone(),
                    whole: true,
                })
            }
            Op::Cont if self.values.iter().all(|v| !v.is_empty()) => Some(RequiredStrings {
                any_of: self.values.clone(),
                whole: false,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::RequiredStrings;
    use crate::Filter;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "version": {"type": "string"},
                "count": {"type": "integer"},
                "when": {"type": "string", "format": "date-time"},
                "meta": {"type": "object", "additionalProperties": true},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"tag": {"type": "string"}, "n": {"type": "number"}}
                }}
            }
        })
    }

    fn required(filter: &str) -> Option<RequiredStrings> {
        Filter::parse(filter).expect("filter").terms()[0].required_strings(&schema())
    }

    #[test]
    fn equality_on_strings_needs_the_value_whole() {
        let r = required("(in,name,a\"b,c)").expect("required");
        assert!(r.whole);
        assert_eq!(r.json_fragments(), ["\"a\\\"b\"", "\"c\""]);
        // A string-only attribute compares numbers as text.
        assert!(required("(eq,version,1.0)").is_some());
    }

    #[test]
    fn values_of_other_spellings_need_nothing() {
        // An untyped member may hold the number 1.0, whose text is not "1.0".
        assert_eq!(required("(eq,meta/x,1.0)"), None);
        assert_eq!(required("(eq,meta/x,true)"), None);
        assert_eq!(required("(eq,count,3)"), None);
        // Another spelling of the same instant matches.
        assert_eq!(required("(eq,when,2026-01-01T00:00:00Z)"), None);
        assert_eq!(required("(neq,name,a)"), None);
        assert_eq!(required("(gt,name,a)"), None);
        assert_eq!(required("(ncont,name,a)"), None);
        assert_eq!(required("(cont,name,'')"), None);
    }

    #[test]
    fn contains_needs_a_part_without_quotes() {
        let r = required("(cont,items/tag,x\\y,\u{1}z)").expect("required");
        assert!(!r.whole);
        assert_eq!(r.json_fragments(), ["x\\\\y", "\\u0001z"]);
    }

    fn string() -> impl Strategy<Value = Value> {
        prop::sample::select(vec![
            "a",
            "ab",
            "a\"b",
            "b\\",
            "é",
            "\n",
            "1.0",
            "true",
            "2026-01-01T00:00:00Z",
            "2026-01-01T01:00:00+01:00",
        ])
        .prop_map(Value::from)
    }

    /// Any scalar: what an attribute of no declared type may hold.
    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            string(),
            prop::sample::select(vec![1.0, 1.5, 3.0]).prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
        ]
    }

    /// A document of [`schema`]: string attributes hold strings, the others anything.
    fn document() -> impl Strategy<Value = Value> {
        let item = (string(), leaf()).prop_map(|(tag, n)| json!({"tag": tag, "n": n}));
        (
            string(),
            string(),
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "x", "1.0"]).prop_map(str::to_owned),
                leaf(),
                0..3,
            ),
            prop::collection::vec(item, 0..3),
        )
            .prop_map(|(name, version, meta, items)| {
                json!({"name": name, "version": version, "meta": meta, "items": items})
            })
    }

    fn term() -> impl Strategy<Value = String> {
        let path = prop::sample::select(vec![
            "name",
            "version",
            "meta/a",
            "meta/x",
            "meta/@key",
            "items/tag",
            "items/n",
            "when",
        ]);
        let value = prop::sample::select(vec![
            "a",
            "ab",
            "a\"b",
            "b\\",
            "é",
            "1.0",
            "1",
            "true",
            "2026-01-01T00:00:00Z",
        ]);
        let op = prop::sample::select(vec!["eq", "in", "cont", "neq"]);
        (op, path, prop::collection::vec(value, 1..3)).prop_map(|(op, path, values)| {
            let values = if op == "eq" || op == "neq" {
                &values[..1]
            } else {
                &values[..]
            };
            let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
            format!("({op},{path},{})", quoted.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]
        /// A term that matches a document finds one of its required strings in the
        /// document's JSON text.
        #[test]
        fn a_matching_document_holds_a_required_string(doc in document(), t in term()) {
            let filter = Filter::parse(&t).expect("term");
            let term = &filter.terms()[0];
            if let Some(required) = term.required_strings(&schema())
                && term.matches(&doc)
            {
                let text = doc.to_string();
                prop_assert!(
                    required.json_fragments().iter().any(|f| text.contains(f.as_str())),
                    "{t} matches {text} but none of {:?} is in it",
                    required.json_fragments()
                );
            }
        }
    }
}
