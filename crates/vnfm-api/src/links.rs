//! Absolute `_links` URIs: SOL013 clause 4.3 (`Link.href` is a URI) and the `Location`
//! header agree.
//!
//! Resources are stored, cached and listed with `href`s relative to the server
//! (`/vnflcm/v2/vnf_instances/{id}`), because the server's address is whatever a client used
//! to reach it. [`absolute_links`] turns them into absolute URIs on the way out, with the
//! same origin as `Location` ([`crate::util::origin`]: the scheme and the request's `Host`).
//! Only the `href` members inside the `_links` member of a resource are rewritten, that is of
//! the top-level object of a JSON body or of each object of a top-level array (a list page);
//! free-form members such as `metadata` or `extensions` are left alone even when they hold a
//! `_links` member of their own. The body is scanned, not parsed, so a cached list page costs
//! one pass over its bytes.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Largest JSON response body rewritten (larger ones are passed on unchanged).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Bytes of a string looked at one by one before [`string_end`] hands the rest to `memchr`.
const SHORT_STRING: usize = 24;

/// Middleware: makes the relative `href`s of the `_links` of a JSON response absolute.
pub(crate) async fn absolute_links(
    State(state): State<Arc<crate::state::AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let origin = state.origin(req.headers());
    let response = next.run(req).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return ApiError::Internal(format!("reading the response body failed: {e}"))
                .into_response();
        }
    };
    let at = relative_hrefs(&bytes);
    if at.is_empty() {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let mut out = Vec::with_capacity(bytes.len() + at.len() * origin.len());
    let mut copied = 0;
    for i in at {
        out.extend_from_slice(&bytes[copied..i]);
        out.extend_from_slice(origin.as_bytes());
        copied = i;
    }
    out.extend_from_slice(&bytes[copied..]);
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

/// Byte offsets of the leading `/` of every `href` string value inside the `_links` member
/// of the top-level object, or of an object that is an element of the top-level array. The
/// body is JSON as this server writes it; anything it does not understand ends the scan.
fn relative_hrefs(body: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    // Open containers, `{` or `[`.
    let mut stack: Vec<u8> = Vec::new();
    // The depth (stack length) of the `_links` object being read, if any.
    let mut links: Option<usize> = None;
    // The last string read, and whether it was followed by `:` (a member name).
    let mut key: &[u8] = b"";
    let mut after_colon = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i + 1;
                let Some(j) = string_end(body, start) else {
                    return found;
                };
                if after_colon {
                    if links.is_some_and(|d| stack.len() > d)
                        && key == b"href"
                        && body.get(start) == Some(&b'/')
                        // `//host/path` is a network-path reference: not ours to complete.
                        && body.get(start + 1) != Some(&b'/')
                    {
                        found.push(start);
                    }
                    after_colon = false;
                } else {
                    key = &body[start..j];
                }
                i = j + 1;
                continue;
            }
            b':' => after_colon = true,
            b',' => after_colon = false,
            b'{' => {
                let resource_level = matches!(stack.as_slice(), [b'{'] | [b'[', b'{']);
                if after_colon && links.is_none() && resource_level && key == b"_links" {
                    links = Some(stack.len());
                }
                stack.push(b'{');
                after_colon = false;
            }
            b'[' => {
                stack.push(b'[');
                after_colon = false;
            }
            b'}' | b']' => {
                stack.pop();
                if links.is_some_and(|d| stack.len() <= d) {
                    links = None;
                }
                after_colon = false;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The offset of the `"` that closes the string whose content starts at `start`, if the body
/// holds it. Most of a body's bytes are inside strings: they are skipped with `memchr`, which
/// compares many bytes at a time, instead of one by one. Most strings are short (member
/// names, states, ids), and for those setting up `memchr` costs more than looking at their
/// bytes: the first [`SHORT_STRING`] bytes are looked at one by one.
fn string_end(body: &[u8], start: usize) -> Option<usize> {
    let mut at = start;
    let short = body.get(start..)?.iter().take(SHORT_STRING);
    for (i, &b) in short.enumerate() {
        match b {
            b'"' => return Some(start + i),
            // An escape: the general loop below handles it.
            b'\\' => break,
            _ => at = start + i + 1,
        }
    }
    loop {
        at += memchr::memchr2(b'"', b'\\', body.get(at..)?)?;
        if body[at] == b'"' {
            return Some(at);
        }
        // A backslash escapes the byte after it (`\"`, `\\`, ...).
        at += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn absolute(body: &str) -> String {
        let at = relative_hrefs(body.as_bytes());
        let mut out = String::new();
        let mut copied = 0;
        for i in at {
            out.push_str(&body[copied..i]);
            out.push_str("http://h:1");
            copied = i;
        }
        out.push_str(&body[copied..]);
        out
    }

    #[test]
    fn hrefs_of_a_resource_and_of_list_elements_become_absolute() {
        assert_eq!(
            absolute(r#"{"id":"a","_links":{"self":{"href":"/x/a"},"vnfd":{"href":"/x/a/vnfd"}}}"#),
            r#"{"id":"a","_links":{"self":{"href":"http://h:1/x/a"},"vnfd":{"href":"http://h:1/x/a/vnfd"}}}"#
        );
        assert_eq!(
            absolute(
                r#"[{"_links":{"self":{"href":"/a"}}},{"k":[1,{"x":"}"}],"_links":{"self":{"href":"/b"}}}]"#
            ),
            r#"[{"_links":{"self":{"href":"http://h:1/a"}}},{"k":[1,{"x":"}"}],"_links":{"self":{"href":"http://h:1/b"}}}]"#
        );
    }

    #[test]
    fn strings_end_at_their_closing_quote_at_any_length() {
        for len in [0, 1, 23, 24, 25, 100] {
            let text = "a".repeat(len);
            for s in [
                text.clone(),
                format!("{text}\\\""),
                format!("\\\"{text}"),
                format!("{text}\\\\"),
            ] {
                let body = format!("\"{s}\",");
                assert_eq!(string_end(body.as_bytes(), 1), Some(s.len() + 1), "{body}");
                assert_eq!(string_end(&body.as_bytes()[..s.len() + 1], 1), None);
            }
        }
    }

    #[test]
    fn free_form_members_and_absolute_hrefs_are_left_alone() {
        for body in [
            r#"{"metadata":{"_links":{"self":{"href":"/mine"}}},"_links":{"self":{"href":"http://o/x"}}}"#,
            r#"{"href":"/top","x":"\"_links\":{\"href\":\"/s\"}","_links":{"self":{"href":"//cdn/x"}}}"#,
            r#"{"type":"about:blank","status":404,"detail":"no /x"}"#,
        ] {
            assert_eq!(absolute(body), body);
        }
        // A truncated body: what was read before the cut is still rewritten.
        assert_eq!(
            absolute(r#"{"_links":{"self":{"href":"/a"},"x":{"href":"/b"#),
            r#"{"_links":{"self":{"href":"http://h:1/a"},"x":{"href":"/b"#
        );
    }

    /// The members named `href` holding a relative path, anywhere inside `value`.
    fn complete_hrefs(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(members) => {
                for (name, member) in members.iter_mut() {
                    match member {
                        serde_json::Value::String(s)
                            if name == "href" && s.starts_with('/') && !s.starts_with("//") =>
                        {
                            s.insert_str(0, "http://h:1");
                        }
                        other => complete_hrefs(other),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(complete_hrefs),
            _ => {}
        }
    }

    /// What the rewrite means, on the parsed document: the hrefs inside the `_links` object
    /// of the resource (the top-level object, or each object of a top-level array).
    fn reference(mut doc: serde_json::Value) -> serde_json::Value {
        let resources: Vec<&mut serde_json::Value> = match &mut doc {
            serde_json::Value::Array(items) => items.iter_mut().collect(),
            top => vec![top],
        };
        for resource in resources {
            if let Some(links @ serde_json::Value::Object(_)) = resource.get_mut("_links") {
                complete_hrefs(links);
            }
        }
        doc
    }

    /// JSON as resources and list pages look, with `_links` objects holding hrefs among
    /// members whose names and strings have quotes, backslashes and brackets.
    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let text = prop_oneof![
            prop::sample::select(vec![
                "href",
                "_links",
                "self",
                "/a/b",
                "//cdn/x",
                "/",
                "x\\",
                "\"_links\":{",
                "}]",
                "/q\"\\",
                "http://o/x",
                "\"",
                "\\",
            ])
            .prop_map(str::to_owned),
            "[a-z/\"\\\\{}\\[\\]:,é]{0,8}",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        let any_value = leaf.prop_recursive(3, 24, 4, {
            let text = text.clone();
            move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec((text.clone(), inner), 0..4)
                        .prop_map(|members| Value::Object(members.into_iter().collect())),
                ]
            }
        });
        let link = prop_oneof![
            text.clone()
                .prop_map(|href| serde_json::json!({ "href": href })),
            any_value.clone(),
        ];
        let links = prop::collection::vec((text.clone(), link), 0..4)
            .prop_map(|members| Value::Object(members.into_iter().collect()));
        let resource = (
            prop::collection::vec((text, any_value.clone()), 0..4),
            proptest::option::of(links),
            prop::collection::vec(any_value.clone(), 0..2),
        )
            .prop_map(|(members, links, after)| {
                let mut resource: serde_json::Map<String, Value> = members.into_iter().collect();
                if let Some(links) = links {
                    resource.insert("_links".to_owned(), links);
                }
                for (i, value) in after.into_iter().enumerate() {
                    resource.insert(format!("after{i}"), value);
                }
                Value::Object(resource)
            });
        prop_oneof![
            resource.clone(),
            prop::collection::vec(prop_oneof![resource, any_value.clone()], 0..4)
                .prop_map(Value::Array),
            any_value,
        ]
    }

    proptest::proptest! {
        /// For any JSON the server could write, the scan finds exactly the hrefs the parsed
        /// document says are relative `_links` hrefs of a resource.
        #[test]
        fn the_scan_agrees_with_the_parsed_document(doc in json_value()) {
            let written = serde_json::to_string(&doc).expect("serialized");
            let rewritten: serde_json::Value =
                serde_json::from_str(&absolute(&written)).expect("still JSON");
            proptest::prop_assert_eq!(rewritten, reference(doc));
        }
    }
}
