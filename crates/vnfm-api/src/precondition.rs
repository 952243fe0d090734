//! `If-Match` (RFC 9110 clause 13.1.1, SOL013 clause 4.5.9): the version a conditional write
//! may apply to. The handlers pass that version down to the core, which compares it in the
//! store transaction that makes the change (compare-and-swap): reading the version here and
//! writing without it would let concurrent requests made against one version all succeed.

use std::future::Future;

use axum::http::{HeaderMap, header};
use axum::response::Response;
use vnfm_store::Version;

use crate::error::{ApiError, ApiResult};

/// The entity tags `If-Match` lists: `None` without the header or with `*` (any current
/// representation); 412 when a listed tag is not one of this server's, naming `what` to GET.
fn listed_tags(headers: &HeaderMap, what: &str) -> ApiResult<Option<Vec<Version>>> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    if text == "*" {
        return Ok(None);
    }
    text.split(',')
        .map(|tag| Version::from_etag(tag.trim()))
        .collect::<Option<Vec<Version>>>()
        .filter(|tags| !tags.is_empty())
        .map(Some)
        .ok_or_else(|| {
            ApiError::PreconditionFailed(format!(
                "If-Match is not an entity tag of this server (nor *); GET the {what} for its ETag"
            ))
        })
}

/// The version `If-Match` asks a write of `what` to apply to: `None` without the header or
/// with `*`, the tag when it lists one, and when it lists several the current version
/// (`current`) if it is among them (412 otherwise). The write must still compare the version
/// it is given with the stored one in its own transaction.
pub(crate) async fn expected_version<F, Fut>(
    headers: &HeaderMap,
    what: &str,
    current: F,
) -> ApiResult<Option<Version>>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ApiResult<Version>>,
{
    let Some(tags) = listed_tags(headers, what)? else {
        return Ok(None);
    };
    if let [only] = tags.as_slice() {
        return Ok(Some(*only));
    }
    let current = current().await?;
    if tags.contains(&current) {
        Ok(Some(current))
    } else {
        Err(ApiError::PreconditionFailed(format!(
            "the {what} changed: its entity tag is now {}; GET it again and retry with that If-Match",
            current.etag()
        )))
    }
}

/// [`expected_version`] for a resource whose writes take one entity tag (several are
/// refused with 412, naming `what` to GET).
pub(crate) fn single_expected_version(
    headers: &HeaderMap,
    what: &str,
) -> ApiResult<Option<Version>> {
    match listed_tags(headers, what)? {
        None => Ok(None),
        Some(tags) => match tags.as_slice() {
            [only] => Ok(Some(*only)),
            _ => Err(ApiError::PreconditionFailed(format!(
                "If-Match lists several entity tags; send the one of the {what} you read"
            ))),
        },
    }
}

/// `response` with the `ETag` of `version`.
pub(crate) fn with_etag(mut response: Response, version: Version) -> Response {
    if let Ok(v) = header::HeaderValue::from_str(&version.etag()) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_if_match(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::IF_MATCH, HeaderValue::from_str(value).unwrap());
        h
    }

    async fn expected(headers: &HeaderMap, current: i64) -> ApiResult<Option<Version>> {
        expected_version(headers, "thing", || async move { Ok(Version(current)) }).await
    }

    #[tokio::test]
    async fn absent_and_star_ask_nothing() {
        assert_eq!(expected(&HeaderMap::new(), 3).await.unwrap(), None);
        assert_eq!(expected(&with_if_match(" * "), 3).await.unwrap(), None);
    }

    #[tokio::test]
    async fn one_tag_is_passed_on_without_reading_the_current_version() {
        let tag = Version(2).etag();
        let got = expected_version(&with_if_match(&tag), "thing", || async {
            panic!("one tag needs no read")
        })
        .await
        .unwrap();
        assert_eq!(got, Some(Version(2)));
    }

    #[tokio::test]
    async fn several_tags_take_the_current_one_or_fail() {
        let list = format!("{}, {}", Version(1).etag(), Version(4).etag());
        assert_eq!(
            expected(&with_if_match(&list), 4).await.unwrap(),
            Some(Version(4))
        );
        let err = expected(&with_if_match(&list), 5).await.unwrap_err();
        assert!(
            matches!(err, ApiError::PreconditionFailed(ref m) if m.contains(&Version(5).etag()))
        );
    }

    #[tokio::test]
    async fn a_foreign_tag_is_412() {
        let err = expected(&with_if_match("\"abc\""), 1).await.unwrap_err();
        assert!(matches!(err, ApiError::PreconditionFailed(ref m) if m.contains("GET the thing")));
        let err = single_expected_version(&with_if_match(""), "alarm").unwrap_err();
        assert!(matches!(err, ApiError::PreconditionFailed(_)));
    }

    #[test]
    fn single_refuses_lists() {
        let list = format!("{}, {}", Version(1).etag(), Version(4).etag());
        assert!(single_expected_version(&with_if_match(&list), "alarm").is_err());
        assert_eq!(
            single_expected_version(&with_if_match(&Version(7).etag()), "alarm").unwrap(),
            Some(Version(7))
        );
    }
}
