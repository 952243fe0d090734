//! Helpers shared by the handlers: request bodies, responses, fallbacks.

use axum::body::Bytes;
use axum::extract::{OriginalUri, Request};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vnfm_schemas::SchemaId;

use crate::error::ApiError;

/// 405 with a ProblemDetails body; [`complete_method_not_allowed`] adds the methods the router
/// found on the resource.
pub(crate) async fn method_not_allowed(method: Method, uri: OriginalUri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: cut(uri.0.path(), 200),
        allowed: String::new(),
    }
}

/// Middleware around the whole router: a 405 names the methods the resource allows, in its
/// `Allow` header and its detail, from the `Allow` axum set after routing (`HEAD`, which every
/// `GET` resource answers, is not listed).
pub(crate) async fn complete_method_not_allowed(request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let path = cut(request.uri().path(), 200);
    let problem_accepted = crate::error::accepts_problem_json(request.headers());
    let response = next.run(request).await;
    if response.status() != StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    let Some(allow) = response
        .headers()
        .get(header::ALLOW)
        .and_then(|v| v.to_str().ok())
    else {
        return response;
    };
    let mut methods: Vec<&str> = allow
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "HEAD")
        .collect();
    methods.sort_unstable();
    methods.dedup();
    let mut completed = ApiError::MethodNotAllowed {
        method,
        path,
        allowed: methods.join(", "),
    }
    .into_response();
    for (name, value) in response.headers() {
        if !completed.headers().contains_key(name) && name != header::CONTENT_LENGTH {
            completed.headers_mut().insert(name.clone(), value.clone());
        }
    }
    crate::error::negotiate(&mut completed, problem_accepted);
    completed
}

/// 404 with a ProblemDetails body.
pub(crate) async fn not_found(uri: OriginalUri) -> ApiError {
    ApiError::NotFound(format!(
        "no resource at {}; see /openapi.json for the API",
        crate::util::cut(uri.0.path(), 200)
    ))
}

/// `s` cut to `max` characters (request values repeated in errors).
pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Refuses a body whose `Content-Type` is not one of `accepted`.
pub(crate) fn require_content_type(headers: &HeaderMap, accepted: &[&str]) -> Result<(), ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else {
        return Err(ApiError::UnsupportedMediaType(format!(
            "Content-Type is missing; send {}",
            accepted.join(" or ")
        )));
    };
    let media = ct
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if accepted.iter().any(|a| *a == media) {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "Content-Type {} is not accepted here; send {}",
            cut(&media, 80),
            accepted.join(" or ")
        )))
    }
}

/// Refuses a request whose `Accept` header excludes `offered`.
pub(crate) fn require_accept(headers: &HeaderMap, offered: &[&str]) -> Result<(), ApiError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(());
    };
    if accepts(accept, offered) {
        Ok(())
    } else {
        Err(ApiError::NotAcceptable(format!(
            "this resource is available as {}; the Accept header {} excludes it",
            offered.join(", "),
            cut(accept, 80)
        )))
    }
}

/// Whether the `Accept` value `accept` has a media range matching one of `offered`.
pub(crate) fn accepts(accept: &str, offered: &[&str]) -> bool {
    accept.split(',').any(|range| {
        let media = range
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        media == "*/*"
            || offered.iter().any(|o| {
                *o == media
                    || media
                        .strip_suffix("/*")
                        .is_some_and(|major| o.split('/').next() == Some(major))
            })
    })
}

/// Parses a JSON body: valid JSON, then (when given) the request schema (errors carry the
/// JSON pointer of the offending value), then the Rust type.
pub(crate) fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: &Bytes,
    schema: Option<SchemaId>,
) -> Result<T, ApiError> {
    require_content_type(headers, &["application/json"])?;
    json_value_as(body, schema)
}

/// The media types a merge-patch body may be sent as: SOL013's `application/merge-patch+json`,
/// and `application/json`, which Tacker accepts too and its clients send (its functional
/// tests' PATCH requests, the package deletion at their tear-down).
const MERGE_PATCH_TYPES: &[&str] = &["application/merge-patch+json", "application/json"];

/// What the answer to a `PATCH` may be sent as, for [`require_accept`]: JSON, and also when
/// the client asks for `application/merge-patch+json` (Tacker's HTTP client sends an `Accept`
/// equal to its `Content-Type`), to which the JSON answer is given.
pub(crate) const PATCH_ANSWER_TYPES: &[&str] =
    &["application/json", "application/merge-patch+json"];

/// [`json_body`] for merge-patch bodies (sent as one of [`MERGE_PATCH_TYPES`]).
pub(crate) fn merge_patch_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: &Bytes,
    schema: Option<SchemaId>,
) -> Result<T, ApiError> {
    require_content_type(headers, MERGE_PATCH_TYPES)?;
    json_value_as(body, schema)
}

fn json_value_as<T: DeserializeOwned>(
    body: &Bytes,
    schema: Option<SchemaId>,
) -> Result<T, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not valid JSON: {} at line {} column {}",
            e,
            e.line(),
            e.column()
        ))
    })?;
    if let Some(pointer) = nul_at(&value, &mut String::new()) {
        return Err(ApiError::invalid(
            pointer.clone(),
            format!(
                "{pointer} contains a NUL character (\\u0000), which cannot be stored; remove it"
            ),
        ));
    }
    if let Some(id) = schema
        && let Err(violations) = vnfm_schemas::validate(id, &value)
    {
        let first = &violations[0];
        let pointer = if first.pointer.is_empty() {
            "/".to_owned()
        } else {
            first.pointer.clone()
        };
        let more = if violations.len() > 1 {
            format!(" (and {} more problems)", violations.len() - 1)
        } else {
            String::new()
        };
        let what = if touches_secret(&value, &pointer) {
            secret_withheld(&pointer)
        } else {
            first.to_string()
        };
        return Err(ApiError::invalid(
            pointer.clone(),
            format!("{what}{more}; see the {} schema", id.file_name()),
        ));
    }
    value_as(value)
}

/// The JSON pointer of the first string (member name or value) in `value` that holds a NUL
/// character: PostgreSQL cannot store one in text, so every backend refuses them alike.
fn nul_at(value: &Value, at: &mut String) -> Option<String> {
    let escape = |key: &str| key.replace('~', "~0").replace('/', "~1");
    match value {
        Value::String(s) if s.contains('\0') => Some(if at.is_empty() {
            "/".to_owned()
        } else {
            at.clone()
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            let len = at.len();
            at.push_str(&format!("/{i}"));
            let found = nul_at(v, at);
            at.truncate(len);
            found
        }),
        Value::Object(members) => members.iter().find_map(|(k, v)| {
            let len = at.len();
            at.push('/');
            at.push_str(&escape(k));
            let found = if k.contains('\0') {
                Some(at.clone())
            } else {
                nul_at(v, at)
            };
            at.truncate(len);
            found
        }),
        _ => None,
    }
}

/// Deserializes `value`, reporting the JSON pointer of the first offending member.
pub(crate) fn value_as<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    // Kept only when it has secrets: the error must then not quote the value it names.
    let secrets = has_secret(&value).then(|| value.clone());
    serde_path_to_error::deserialize(value).map_err(|e| {
        let pointer = pointer_of(e.path());
        let what = match &secrets {
            Some(v) if touches_secret(v, &pointer) => secret_withheld(&pointer),
            _ => format!("{pointer}: {}", e.inner()),
        };
        ApiError::invalid(pointer.clone(), what)
    })
}

/// The message for a value that is or holds a secret: what is wrong is not said, because
/// the validators' words quote the value.
fn secret_withheld(pointer: &str) -> String {
    format!(
        "{pointer}: the value does not have the required form (its content is not repeated because it is or holds a secret)"
    )
}

/// Whether a member of `value`, at any depth, holds a secret by its name (passwords, client
/// secrets, tokens, keys; see [`vnfm_lcm::vim::is_secret_member`]).
fn has_secret(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(has_secret),
        Value::Object(members) => members
            .iter()
            .any(|(k, v)| vnfm_lcm::vim::is_secret_member(k) || has_secret(v)),
        _ => false,
    }
}

/// Whether an error about the value at `pointer` could quote a secret of `value`: the value
/// there is a secret, lies inside one, or encloses one.
fn touches_secret(value: &Value, pointer: &str) -> bool {
    let mut at = value;
    for token in pointer.split('/').skip(1).filter(|t| !t.is_empty()) {
        let token = token.replace("~1", "/").replace("~0", "~");
        let next = match at {
            Value::Object(members) => {
                if vnfm_lcm::vim::is_secret_member(&token) {
                    return true;
                }
                members.get(&token)
            }
            Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            // A member the value lacks (a missing required one): nothing there to quote.
            None => return false,
        }
    }
    has_secret(at)
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in path.iter() {
        out.push('/');
        match seg {
            serde_path_to_error::Segment::Seq { index } => out.push_str(&index.to_string()),
            serde_path_to_error::Segment::Map { key } => {
                out.push_str(&key.replace('~', "~0").replace('/', "~1"))
            }
            serde_path_to_error::Segment::Enum { variant } => out.push_str(variant),
            serde_path_to_error::Segment::Unknown => out.push('?'),
        }
    }
    if out.is_empty() { "/".into() } else { out }
}

/// A JSON response with `status` and optional extra headers.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::Internal(format!("response does not serialize: {e}")).into_response(),
    }
}

/// A JSON response whose body is `text`, already JSON (a stored document), sent as it is.
pub(crate) fn json_text_response(status: StatusCode, text: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text,
    )
        .into_response()
}

/// Adds a `Location` header.
pub(crate) fn with_location(mut response: Response, location: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

/// The absolute URI prefix of this server as the client addressed it (`http://host:port`),
/// for `Location` headers.
pub(crate) fn origin(headers: &HeaderMap, tls: bool) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()))
        .unwrap_or("localhost");
    format!("{}://{host}", if tls { "https" } else { "http" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_ranges() {
        let mut h = HeaderMap::new();
        assert!(require_accept(&h, &["application/json"]).is_ok());
        h.insert(header::ACCEPT, HeaderValue::from_static("text/plain"));
        assert!(require_accept(&h, &["application/json"]).is_err());
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/*;q=0.5"),
        );
        assert!(require_accept(&h, &["application/json"]).is_ok());
    }

    #[test]
    fn nul_characters_are_found_in_values_and_member_names() {
        let v = serde_json::json!({"a": [1, {"b/c": "x\u{0}y"}]});
        assert_eq!(nul_at(&v, &mut String::new()).as_deref(), Some("/a/1/b~1c"));
        let v = serde_json::json!({"ok": "fine", "k\u{0}": 1});
        assert_eq!(nul_at(&v, &mut String::new()).as_deref(), Some("/k\u{0}"));
        assert_eq!(
            nul_at(&serde_json::json!({"ok": ["fine"]}), &mut String::new()),
            None
        );
    }

    #[test]
    fn errors_at_enclosing_or_inside_secret_members_withhold_the_value() {
        let v = serde_json::json!({
            "callbackUri": "http://x",
            "authentication": {"paramsBasic": {"userName": "u", "password": {"v": 1}}}
        });
        assert!(touches_secret(&v, "/authentication/paramsBasic/password"));
        assert!(touches_secret(&v, "/authentication/paramsBasic/password/v"));
        assert!(touches_secret(&v, "/authentication"));
        assert!(touches_secret(&v, "/"));
        assert!(!touches_secret(&v, "/callbackUri"));
        assert!(!touches_secret(&v, "/authentication/paramsBasic/userName"));
        let e = value_as::<vnfm_types::LccnSubscriptionRequest>(v).unwrap_err();
        assert!(!e.to_string().contains("\"v\""), "{e}");
    }

    #[test]
    fn deserialization_errors_point_at_the_member() {
        let e = value_as::<vnfm_types::ScaleVnfRequest>(serde_json::json!({
            "type": "SCALE_SIDEWAYS", "aspectId": "a"
        }))
        .unwrap_err();
        assert_eq!(e.pointer(), Some("/type"));
    }
}
