//! SOL013 list queries over the store: attribute filters (pushed down to indexed columns when
//! they can be, evaluated on every document in any case), attribute selectors with the
//! default exclusions of each resource, and paging with `nextpage_opaque_marker` and a
//! `Link: <...>; rel="next"` header.
//!
//! A page holds at most its list's page size of items ([`PageSizes`]: [`PAGE_SIZE`] unless the
//! operator sets another, for every list or for one). When a filter matches few documents, one
//! request reads at most [`SCAN_LIMIT`] documents and then answers with what it found and a
//! marker to continue: a page may be shorter than its size and still have a next page, which
//! SOL013 allows.

use std::future::Future;

use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;
use vnfm_sol013::{Filter, ListParams, Marker, Op, RequiredStrings, Selector};
use vnfm_store::Page;

use crate::error::{ApiError, ApiResult};
use axum::response::IntoResponse;

/// Items per page unless the operator sets another ([`PageSizes`]).
pub const PAGE_SIZE: u32 = 100;

/// The lists whose page size an operator may set apart from the others, as OpenStack
/// Tacker's `[v2_vnfm]` options `vnf_instance_page_size`, `lcm_op_occ_page_size`,
/// `subscription_page_size`, `vnffm_alarm_page_size`, `vnfpm_pmjob_page_size` and
/// `vnfpm_pmthreshold_page_size` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Listed {
    /// `GET .../vnf_instances`.
    VnfInstances,
    /// `GET .../vnf_lcm_op_occs`.
    LcmOpOccs,
    /// `GET .../subscriptions`, of every interface.
    Subscriptions,
    /// `GET /vnffm/v1/alarms`.
    Alarms,
    /// `GET /vnfpm/.../pm_jobs`.
    PmJobs,
    /// `GET /vnfpm/.../thresholds`.
    PmThresholds,
    /// `GET /vnfpkgm/.../vnf_packages` (and the onboarded packages of v1).
    VnfPackages,
    /// `GET /vnfind/v1/indicators` and an instance's indicators.
    Indicators,
}

impl Listed {
    /// The list and size an operator gives as `NAME=SIZE` (`vnf_instances=1`).
    pub fn parse_size(setting: &str) -> Result<(Listed, u32), String> {
        let (name, size) = setting
            .split_once('=')
            .ok_or_else(|| format!("{setting:?} is not NAME=SIZE, e.g. vnf_instances=1"))?;
        let list = Listed::ALL
            .into_iter()
            .find(|l| l.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Listed::ALL.iter().map(|l| l.name()).collect();
                format!(
                    "no list is named {name:?}: the lists are {}",
                    names.join(", ")
                )
            })?;
        let size = size
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("the page size of {name} is not a whole number: {size:?}"))?;
        Ok((list, checked_size(size)?))
    }

    /// Every list, in the order of their names.
    pub const ALL: [Listed; 8] = [
        Listed::VnfInstances,
        Listed::LcmOpOccs,
        Listed::Subscriptions,
        Listed::Alarms,
        Listed::PmJobs,
        Listed::PmThresholds,
        Listed::VnfPackages,
        Listed::Indicators,
    ];

    /// The name an operator gives the list (`vnf_instances`), its collection's path segment.
    pub fn name(self) -> &'static str {
        match self {
            Listed::VnfInstances => "vnf_instances",
            Listed::LcmOpOccs => "vnf_lcm_op_occs",
            Listed::Subscriptions => "subscriptions",
            Listed::Alarms => "alarms",
            Listed::PmJobs => "pm_jobs",
            Listed::PmThresholds => "thresholds",
            Listed::VnfPackages => "vnf_packages",
            Listed::Indicators => "indicators",
        }
    }
}

/// Items per page of each list: one size for every list, and sizes of single lists that
/// replace it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageSizes {
    every: u32,
    single: std::collections::BTreeMap<Listed, u32>,
}

impl Default for PageSizes {
    fn default() -> Self {
        PageSizes {
            every: PAGE_SIZE,
            single: Default::default(),
        }
    }
}

impl PageSizes {
    /// `size` items per page of every list (1 to [`vnfm_store::MAX_PAGE_SIZE`]).
    pub fn every(size: u32) -> Result<PageSizes, String> {
        Ok(PageSizes {
            every: checked_size(size)?,
            single: Default::default(),
        })
    }

    /// The same, with `size` items per page of `list`.
    pub fn with(mut self, list: Listed, size: u32) -> Result<PageSizes, String> {
        self.single.insert(list, checked_size(size)?);
        Ok(self)
    }

    /// Items per page of `list`.
    pub fn of(&self, list: Listed) -> u32 {
        self.single.get(&list).copied().unwrap_or(self.every)
    }
}

fn checked_size(size: u32) -> Result<u32, String> {
    if (1..=vnfm_store::MAX_PAGE_SIZE).contains(&size) {
        Ok(size)
    } else {
        Err(format!(
            "a page size is 1 to {}, not {size} (a list always has pages: ask for the next with its Link)",
            vnfm_store::MAX_PAGE_SIZE
        ))
    }
}
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
    /// Complex attributes a selector never removes (lower cardinality 1).
    mandatory: &'static [&'static str],
    /// Whether a response holds what one store page gives
    /// ([`ListRequest::bound_document_search`]).
    one_store_page: bool,
    /// Items per page.
    page_size: u32,
}

impl ListRequest {
    /// Parses the query of `uri`; `schema` is the JSON schema of the listed resource (filters
    /// on attributes it does not have are refused). Its pages have [`PAGE_SIZE`] items unless
    /// [`ListRequest::paged`] says otherwise.
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
            mandatory: vnfm_sol013::ALWAYS_MANDATORY,
            one_store_page: false,
            page_size: PAGE_SIZE,
        })
    }

    /// The same request, answered in pages of `size` items.
    pub fn paged(mut self, size: u32) -> Self {
        self.page_size = size;
        self
    }

    /// Items per page: the store page size to ask for.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The same request, never removing the complex attributes `mandatory` (which must name
    /// `_links` too): those a listed resource cannot do without.
    pub fn with_mandatory(mut self, mandatory: &'static [&'static str]) -> Self {
        self.mandatory = mandatory;
        self
    }

    /// The row bound for a store query that searches the documents' text for `strings`:
    /// [`SCAN_LIMIT`], as many rows as a response may read. The store's work per statement is
    /// then bounded, so each response holds what one store page gives (the items of that page
    /// the filter keeps) and continues after it. `None`, and no change, when there is no
    /// search.
    pub fn bound_document_search(&mut self, strings: &[RequiredStrings]) -> Option<u32> {
        if strings.is_empty() {
            return None;
        }
        self.one_store_page = true;
        Some(u32::try_from(SCAN_LIMIT).unwrap_or(u32::MAX))
    }

    /// Runs the query: `fetch(after)` returns one store page (as JSON documents with an
    /// `id`), called until a page is full, the scan limit is reached or the store has no
    /// more. `default_excluded` lists the attributes the resource excludes by default.
    pub async fn run<F, Fut>(&self, mut fetch: F, default_excluded: &[&str]) -> ApiResult<Response>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = ApiResult<Page<Value>>>,
    {
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
                    self.selector
                        .apply_with(&mut doc, default_excluded, self.mandatory);
                    items.push(doc);
                }
                let last_of_store = i + 1 == count && store_next.is_none();
                if (items.len() as u32 >= self.page_size || scanned >= SCAN_LIMIT) && !last_of_store
                {
                    next = Some(id);
                    break 'pages;
                }
            }
            match store_next {
                Some(n) if self.one_store_page => {
                    next = Some(n);
                    break;
                }
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let body = serde_json::to_vec(&items)
            .map_err(|e| ApiError::Internal(format!("page does not serialize: {e}")))?;
        Ok(page_response(body, self.next_link(next)))
    }

    /// `true` when the request selects nothing (no `fields`, `exclude_fields`, `all_fields`
    /// or `exclude_default`): each item is shown as its resource's default view.
    pub fn selects_default(&self) -> bool {
        self.selector.is_default()
    }

    /// The page of `items`, each already the JSON text of one shown item (the store's
    /// default views, when the store answered the filter alone), joined into the array
    /// without parsing them; `next` is the id of the last item when more follow.
    pub fn texts_page(&self, items: &[String], next: Option<String>) -> Response {
        let mut body = Vec::with_capacity(items.iter().map(|t| t.len() + 1).sum::<usize>() + 2);
        body.push(b'[');
        for (i, text) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(text.as_bytes());
        }
        body.push(b']');
        page_response(body, self.next_link(next))
    }

    /// The `Link` header value of the page after the item `last`.
    fn next_link(&self, last: Option<String>) -> Option<String> {
        last.map(|last| {
            let marker = Marker::encode(&last, &self.fingerprint);
            vnfm_sol013::next_link(&self.path, &self.query, &marker)
        })
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

    /// The value of a top-level `neq` term with one value on `attribute`, for pushing it
    /// down to an indexed column.
    pub fn neq_value(&self, attribute: &str) -> Option<&str> {
        let filter = self.filter.as_ref()?;
        filter.terms().iter().find_map(|t| {
            (t.op == Op::Neq && t.path_is(&[attribute]) && t.values.len() == 1)
                .then(|| t.values[0].as_str())
        })
    }

    /// The value of a top-level `cont` term with one value on `attribute`, for pushing it
    /// down as a substring condition.
    pub fn cont_value(&self, attribute: &str) -> Option<&str> {
        let filter = self.filter.as_ref()?;
        filter.terms().iter().find_map(|t| {
            (t.op == Op::Cont && t.path_is(&[attribute]) && t.values.len() == 1)
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

fn page_response(body: Vec<u8>, link: Option<String>) -> Response {
    let mut response = (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if let Some(link) = link
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
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    /// A store of 30 documents `d-00`..`d-29`, paged 4 at a time, recording each `after`.
    async fn answer(
        list: &ListRequest,
        calls: &Mutex<Vec<Option<String>>>,
    ) -> (Vec<String>, Option<String>) {
        let response = list
            .run(
                |after: Option<String>| {
                    calls.lock().unwrap().push(after.clone());
                    let start = after.map_or(0, |a| a[2..].parse::<usize>().unwrap() + 1);
                    let items: Vec<Value> = (start..30.min(start + 4))
                        .map(|i| json!({"id": format!("d-{i:02}"), "n": i}))
                        .collect();
                    let next = (start + 4 < 30).then(|| format!("d-{:02}", start + 3));
                    async move { Ok(Page { items, next }) }
                },
                &[],
            )
            .await
            .expect("page");
        let link = response
            .headers()
            .get(header::LINK)
            .map(|l| l.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let items: Vec<Value> = serde_json::from_slice(&body).unwrap();
        let ids = items
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect();
        (ids, link)
    }

    #[test]
    fn a_list_size_is_named_as_its_collection_and_kept_in_range() {
        assert_eq!(
            Listed::parse_size("vnf_lcm_op_occs=1"),
            Ok((Listed::LcmOpOccs, 1))
        );
        let sizes = PageSizes::every(7)
            .and_then(|s| s.with(Listed::Alarms, 3))
            .unwrap();
        assert_eq!(sizes.of(Listed::Alarms), 3);
        assert_eq!(sizes.of(Listed::VnfInstances), 7);
        assert_eq!(PageSizes::default().of(Listed::PmJobs), PAGE_SIZE);
        let unknown = Listed::parse_size("vnf_instance_page_size=1").unwrap_err();
        assert!(
            unknown.contains("vnf_instances, vnf_lcm_op_occs"),
            "names the lists: {unknown}"
        );
        assert!(
            Listed::parse_size("alarms=0")
                .unwrap_err()
                .contains("1 to 1000")
        );
        assert!(
            Listed::parse_size("alarms")
                .unwrap_err()
                .contains("NAME=SIZE")
        );
        assert!(PageSizes::every(1001).is_err());
    }

    #[tokio::test]
    async fn a_response_reads_store_pages_until_full_or_one_when_the_store_bounds_its_search() {
        let uri: Uri = "/things?filter=(in,n,1,2,9,13)".parse().unwrap();
        let schema = json!({"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}});
        let list = ListRequest::parse(&uri, &schema).unwrap();
        let calls = Mutex::new(Vec::new());
        let (ids, link) = answer(&list, &calls).await;
        assert_eq!(ids, ["d-01", "d-02", "d-09", "d-13"]);
        assert_eq!(link, None);
        assert_eq!(calls.lock().unwrap().len(), 8, "every store page was read");

        let mut list = ListRequest::parse(&uri, &schema).unwrap();
        let search = RequiredStrings {
            any_of: vec!["1".to_owned()],
            whole: false,
        };
        assert!(list.bound_document_search(&[search]).is_some());
        let calls = Mutex::new(Vec::new());
        let (ids, link) = answer(&list, &calls).await;
        assert_eq!(ids, ["d-01", "d-02"]);
        assert_eq!(*calls.lock().unwrap(), [None]);
        let link = link.expect("a next page");
        let marker = link
            .split("nextpage_opaque_marker=")
            .nth(1)
            .and_then(|m| m.split('>').next())
            .expect("marker");
        assert_eq!(
            Marker::decode(marker, &list.fingerprint).unwrap(),
            "d-03",
            "the next page starts after the store's page"
        );
    }

    #[tokio::test]
    async fn a_document_search_is_bounded_and_answered_one_store_page_at_a_time() {
        let uri: Uri = "/things?filter=(in,n,1,2,9,13)".parse().unwrap();
        let schema = json!({"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}});
        let mut list = ListRequest::parse(&uri, &schema).unwrap();
        assert_eq!(list.bound_document_search(&[]), None, "no search, no bound");
        let calls = Mutex::new(Vec::new());
        let (ids, _) = answer(&list, &calls).await;
        assert_eq!(ids.len(), 4, "without a search, pages are read until full");

        let search = RequiredStrings {
            any_of: vec!["\"1\"".to_owned()],
            whole: true,
        };
        let bound = list.bound_document_search(&[search]);
        assert_eq!(bound, Some(SCAN_LIMIT as u32));
        let calls = Mutex::new(Vec::new());
        let (ids, link) = answer(&list, &calls).await;
        assert_eq!(ids, ["d-01", "d-02"], "one store page per response");
        assert!(link.is_some());
    }
}
