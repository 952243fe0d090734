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
                let mut j = start;
                while j < body.len() && body[j] != b'"' {
                    j += if body[j] == b'\\' { 2 } else { 1 };
                }
                if j >= body.len() {
                    return found;
                }
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
}
