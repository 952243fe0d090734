//! SOL013 list queries over the store: attribute filters (pushed down to indexed columns when
//! they can be, evaluated on every document in any case), attribute selectors with the
//! default exclusions of each resource, and paging with `nextpage_opaque_marker` and a
//! `Link: <...>; rel="next"` header.
//!
//! A page holds at most [`PAGE_SIZE`] items. When a filter matches few documents, one request
//! reads at most [`SCAN_LIMIT`] documents and then answers with what it found and a marker
//! to continue: a page may be shorter than [`PAGE_SIZE`] and still have a next page, which
//! SOL013 allows.

use std::future::Future;

use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;
use vnfm_sol013::{Filter, ListParams, Marker, Op, Selector};
use vnfm_store::Page;

use crate::error::{ApiError, ApiResult};
use axum::response::IntoResponse;

use crate::cache::{CachedPage, Flight, PageCache};

/// Items per page.
pub const PAGE_SIZE: u32 = 100;
/// Documents read per request at most, matching or not.
pub const SCAN_LIMIT: usize = 10_000;

/// A parsed list request.
#[derive(Debug)]
pub struct ListRequest {
    /// The filter, if any.
    pub filter: Option<Filter>,
    selector: Selector,
    /// Continue after this id.
    pub after: Option<String>,
    fingerprint: String,
    path: String,
    query: String,
}

impl ListRequest {
    /// Parses the query of `uri`; `schema` is the JSON schema of the listed resource (filters
    /// on attributes it does not have are refused).
    pub fn parse(uri: &Uri, schema: &Value) -> ApiResult<ListRequest> {
        let query = uri.query().unwrap_or("");
        let params = ListParams::from_query(query).map_err(sol013_error)?;
        if let Some((name, _)) = params.other.first() {
            return Err(ApiError::invalid(
                name.clone(),
                format!(
                    "unsupported query parameter {}: this resource takes filter, all_fields, fields, exclude_fields, exclude_default and nextpage_opaque_marker",
                    crate::util::cut(name, 60)
                ),
            ));
        }
        params.check_attributes(schema).map_err(sol013_error)?;
        let fingerprint = params.fingerprint();
        let after = match params.marker.as_deref() {
            Some(m) => Some(Marker::decode(m, &fingerprint).map_err(sol013_error)?),
            None => None,
        };
        Ok(ListRequest {
            filter: params.filter,
            selector: params.selector,
            after,
            fingerprint,
            path: uri.path().to_owned(),
            query: query.to_owned(),
        })
    }

    /// Runs the query: `fetch(after)` returns one store page (as JSON documents with an
    /// `id`), called until a page is full, the scan limit is reached or the store has no
    /// more. `default_excluded` lists the attributes the resource excludes by default.
    pub async fn run<F, Fut>(
        &self,
        cache: &PageCache,
        mut fetch: F,
        default_excluded: &[&str],
    ) -> ApiResult<Response>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = ApiResult<Page<Value>>>,
    {
        let key = page_key(&self.path, &self.query);
        if let Some(page) = cache.get(&key) {
            return Ok(page_response(page));
        }
        let epoch = cache.epoch();
        let flight = match cache.flight(&key, epoch) {
            Flight::Follow(mut computing) => {
                // When the page only aged, give the aged one rather than wait.
                if let Some(page) = cache.get_expired(&key) {
                    return Ok(page_response(page));
                }
                if let Ok(published) = computing.wait_for(Option::is_some).await
                    && let Some(page) = published.clone()
                {
                    return Ok(page_response(page));
                }
                // The computing request failed or went away: compute it here.
                None
            }
            Flight::Lead(guard) => Some(guard),
        };
        let mut items = Vec::new();
        let mut after = self.after.clone();
        let mut scanned = 0usize;
        let mut next: Option<String> = None;
        'pages: loop {
            let page = fetch(after.clone()).await?;
            let store_next = page.next.clone();
            let count = page.items.len();
            for (i, mut doc) in page.items.into_iter().enumerate() {
                scanned += 1;
                let id = doc
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                if self.filter.as_ref().is_none_or(|f| f.matches(&doc)) {
                    self.selector.apply(&mut doc, default_excluded);
                    items.push(doc);
                }
                let last_of_store = i + 1 == count && store_next.is_none();
                if (items.len() as u32 >= PAGE_SIZE || scanned >= SCAN_LIMIT) && !last_of_store {
                    next = Some(id);
                    break 'pages;
                }
            }
            match store_next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let link = next.map(|last| {
            let marker = Marker::encode(&last, &self.fingerprint);
            vnfm_sol013::next_link(&self.path, &self.query, &marker)
        });
        let body = serde_json::to_vec(&items)
            .map_err(|e| ApiError::Internal(format!("page does not serialize: {e}")))?;
        let page = CachedPage {
            body: body.into(),
            link,
        };
        cache.put(key, epoch, page.clone());
        if let Some(flight) = flight {
            flight.finish(page.clone());
        }
        Ok(page_response(page))
    }

    /// Applies the selector to one document (for single-resource reads, which ignore
    /// default exclusions).
    pub fn select(&self, doc: &mut Value) {
        self.selector.apply(doc, &[]);
    }

    /// The value of a top-level `eq` term with one value on `attribute`, for pushing it down
    /// to an indexed column.
    pub fn eq_value(&self, attribute: &str) -> Option<&str> {
        let filter = self.filter.as_ref()?;
        filter.terms().iter().find_map(|t| {
            (t.op == Op::Eq && t.path_is(&[attribute]) && t.values.len() == 1)
                .then(|| t.values[0].as_str())
        })
    }

    /// The values of a top-level `in` (or single-valued `eq`) term on `attribute`.
    pub fn in_values(&self, attribute: &str) -> Option<Vec<String>> {
        let filter = self.filter.as_ref()?;
        filter.terms().iter().find_map(|t| {
            let one_of = t.op == Op::In || (t.op == Op::Eq && t.values.len() == 1);
            (one_of && t.path_is(&[attribute])).then(|| t.values.clone())
        })
    }
}

/// The page for `uri` when a request with the same path and query was answered recently and
/// nothing changed since. List handlers ask before parsing the query: a page is only cached
/// after its query parsed and ran, and the same query parses the same way, so a hit skips
/// the parse and the filter's schema checks (on a hot listing, most of a request's work).
pub fn cached_page(cache: &PageCache, uri: &Uri) -> Option<Response> {
    cache
        .get(&page_key(uri.path(), uri.query().unwrap_or("")))
        .map(page_response)
}

fn page_key(path: &str, query: &str) -> String {
    format!("{path}?{query}")
}

fn page_response(page: CachedPage) -> Response {
    let mut response = (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        page.body,
    )
        .into_response();
    if let Some(link) = page.link
        && let Ok(v) = HeaderValue::from_str(&link)
    {
        response.headers_mut().insert(header::LINK, v);
    }
    response
}

fn sol013_error(e: vnfm_sol013::Sol013Error) -> ApiError {
    ApiError::bad_request(e.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    /// Lists VNF instances through `cache` on a task of its own, reading a page from the store
    /// with `fetch` (called with the fetch count so far, once per store read), and gives the
    /// response body.
    fn list_on_task<Fut>(
        cache: Arc<PageCache>,
        fetches: Arc<AtomicUsize>,
        fetch: fn(usize) -> Fut,
    ) -> tokio::task::JoinHandle<axum::body::Bytes>
    where
        Fut: Future<Output = ApiResult<Page<Value>>> + Send + 'static,
    {
        tokio::spawn(async move {
            let uri = Uri::from_static("/vnflcm/v2/vnf_instances");
            let list = ListRequest::parse(&uri, &json!({"type": "object"})).unwrap();
            let response = list
                .run(
                    &cache,
                    |_after| fetch(fetches.fetch_add(1, Ordering::SeqCst)),
                    &[],
                )
                .await
                .unwrap();
            axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap()
        })
    }

    /// Concurrent requests for a page that is not cached read the store once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_misses_compute_the_page_once() {
        let epoch = Arc::new(AtomicU64::new(0));
        let cache = Arc::new(PageCache::new(epoch.clone()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let request = |cache: Arc<PageCache>, fetches: Arc<AtomicUsize>| {
            list_on_task(cache, fetches, |_| async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(Page {
                    items: vec![json!({"id": "a"})],
                    next: None,
                })
            })
        };
        let requests: Vec<_> = (0..10)
            .map(|_| request(cache.clone(), fetches.clone()))
            .collect();
        for r in requests {
            assert_eq!(&r.await.unwrap()[..], br#"[{"id":"a"}]"#);
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);

        // After a write, the next request reads the store again.
        epoch.fetch_add(1, Ordering::Release);
        request(cache.clone(), fetches.clone()).await.unwrap();
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }

    /// While one request recomputes an aged page, the others are given the aged one at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_aged_page_is_served_while_one_request_recomputes_it() {
        let cache = Arc::new(PageCache::new(Arc::new(AtomicU64::new(0))));
        let fetches = Arc::new(AtomicUsize::new(0));
        let run = |cache: Arc<PageCache>, fetches: Arc<AtomicUsize>| {
            list_on_task(cache, fetches, |n| async move {
                if n > 0 {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                Ok(Page {
                    items: vec![json!({"id": n.to_string()})],
                    next: None,
                })
            })
        };
        assert_eq!(
            &run(cache.clone(), fetches.clone()).await.unwrap()[..],
            br#"[{"id":"0"}]"#
        );
        tokio::time::sleep(crate::cache::PAGE_TTL + Duration::from_millis(50)).await;
        let leader = run(cache.clone(), fetches.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Had it waited for the recomputation, it would have the new page.
        let follower = run(cache.clone(), fetches.clone()).await.unwrap();
        assert_eq!(&follower[..], br#"[{"id":"0"}]"#);
        assert_eq!(&leader.await.unwrap()[..], br#"[{"id":"1"}]"#);
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }
}
