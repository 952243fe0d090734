//! The filter terms pushed down to the store narrow the documents read, never the answer:
//! for generated instances and filters, the documents the store returns for the pushed-down
//! query and the evaluator accepts are exactly those the evaluator accepts among all
//! instances; and when the query expresses the whole filter and the request selects nothing,
//! the store's default views are exactly the documents the evaluator accepts, shown as a
//! list shows them by default. Run on SQLite, and on PostgreSQL when `VNFM_TEST_POSTGRES_URL`
//! is set (each run in a project of its own, as the server is shared).

use std::sync::{Arc, OnceLock};

use axum::http::Uri;
use proptest::prelude::*;
use serde_json::{Value, json};
use vnfm_store::{InstanceQuery, ProjectScope, Store};
use vnfm_store_sql::SqliteStore;
use vnfm_types::VnfInstance;

use crate::lcm_views::{
    instance_document_strings, instance_query, instance_query_is_exact, instance_schema,
};
use crate::listing::ListRequest;

const NAMES: [&str; 6] = ["ab", "abc", "ba", "cab", "AB", "a-b"];
const VNFDS: [&str; 3] = ["vnfd-a", "vnfd-b", "vnfd-c"];

/// What sets this run's instances apart from others in a shared database: their ids start
/// with it, and their project is it.
fn run_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        format!("p{}n{nanos}", std::process::id())
    })
}

/// The id of instance `i`.
fn id(i: usize) -> String {
    format!("{}-{i:03}", run_tag())
}

/// Instance `i`, its attributes drawn from small sets so that filters match some.
fn instance(i: usize) -> VnfInstance {
    let provider = ["P1", "P2"][i % 2];
    let product = ["x", "y", "xy", "z"][i % 4];
    let mut doc = json!({
        "id": id(i),
        "vnfdId": VNFDS[i % 3],
        "vnfProvider": provider,
        "vnfProductName": product,
        "vnfSoftwareVersion": (["1.0", "1.1", "2.0"][i % 3]),
        "vnfdVersion": "1.0",
        "instantiationState": if i.is_multiple_of(5) { "INSTANTIATED" } else { "NOT_INSTANTIATED" },
        "_links": {"self": {"href": format!("/vnflcm/v2/vnf_instances/{}", id(i))}},
    });
    if !i.is_multiple_of(7) {
        doc["vnfInstanceName"] = json!(NAMES[(i * 5 + i / 3) % NAMES.len()]);
    }
    if i.is_multiple_of(5) {
        doc["instantiatedVnfInfo"] = json!({"flavourId": "simple", "vnfState": "STARTED"});
    }
    if i.is_multiple_of(3) {
        doc["metadata"] = json!({"owner": format!("team-{}", i % 4), "n": i % 4, "t\"q": "a\\b"});
        doc["extensions"] = json!({"tier": (["gold", "1.0", "team-1"][(i / 3) % 3])});
    }
    serde_json::from_value(doc).expect("instance")
}

/// One filter term, on pushed-down and on evaluated-only attributes.
fn term() -> impl Strategy<Value = String> {
    let value = prop::sample::select(vec!["ab", "b", "a-b", "AB", "c", "x", "zz"]);
    prop_oneof![
        prop::sample::select(VNFDS.to_vec()).prop_map(|v| format!("(eq,vnfdId,{v})")),
        prop::sample::select(vec!["P1", "P2", "P3"]).prop_map(|v| format!("(eq,vnfProvider,{v})")),
        prop::sample::select(vec!["x", "xy", "q"]).prop_map(|v| format!("(eq,vnfProductName,{v})")),
        prop::sample::select(vec!["INSTANTIATED", "NOT_INSTANTIATED"])
            .prop_map(|v| format!("(eq,instantiationState,{v})")),
        value
            .clone()
            .prop_map(|v| format!("(eq,vnfInstanceName,{v})")),
        value
            .clone()
            .prop_map(|v| format!("(cont,vnfInstanceName,{v})")),
        value
            .clone()
            .prop_map(|v| format!("(neq,vnfInstanceName,{v})")),
        (value.clone(), value.clone()).prop_map(|(a, b)| format!("(cont,vnfInstanceName,{a},{b})")),
        prop::collection::vec(0usize..40, 1..4).prop_map(|ids| format!(
            "(in,id,{})",
            ids.iter().map(|i| id(*i)).collect::<Vec<_>>().join(",")
        )),
        prop::sample::select(vec!["x", "y"]).prop_map(|v| format!("(cont,vnfProductName,{v})")),
        document_term(),
    ]
}

/// A term on an attribute no column holds: the store looks for its values in the documents.
fn document_term() -> impl Strategy<Value = String> {
    let path = prop::sample::select(vec![
        "vnfSoftwareVersion",
        "metadata/owner",
        "metadata/n",
        "metadata/@key",
        "metadata/t\"q",
        "extensions/tier",
        "_links/self/href",
    ]);
    let value = prop::sample::select(vec![
        "1.0", "1", "2.0", "team-1", "team", "owner", "t\"q", "a\\b", "gold", "STARTED", "i-0",
    ]);
    let op = prop::sample::select(vec!["eq", "in", "cont", "neq"]);
    let state = (
        prop::sample::select(vec!["eq", "in", "neq"]),
        prop::sample::select(vec!["STARTED", "STOPPED"]),
    )
        .prop_map(|(op, v)| format!("({op},instantiatedVnfInfo/vnfState,{v})"));
    let any = (op, path, prop::collection::vec(value, 1..3)).prop_map(|(op, path, values)| {
        let values = if matches!(op, "eq" | "neq") {
            &values[..1]
        } else {
            &values[..]
        };
        let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
        format!("({op},{path},{})", quoted.join(","))
    });
    prop_oneof![any, state]
}

/// The store query of `list` as the v2 list makes it, in this run's project.
fn pushed_query(list: &ListRequest) -> InstanceQuery {
    let mut q = instance_query(list);
    q.document_strings = instance_document_strings(list);
    // Searches of 9 rows: pages end early, paging goes on.
    q.scan_limit = Some(9);
    q.scope = ProjectScope::Project(run_tag().to_owned());
    q
}

async fn answer(
    store: &dyn Store,
    list: &ListRequest,
    everything: &[Value],
) -> (Vec<String>, Vec<String>) {
    let filter = list.filter.as_ref().expect("filter");
    let mut q = pushed_query(list);
    q.limit = Some(7);
    let mut pushed = Vec::new();
    loop {
        let page = store.list_instance_documents(&q).await.expect("page");
        pushed.extend(
            page.items
                .iter()
                .filter(|d| filter.matches(d))
                .map(|d| d["id"].as_str().unwrap_or("").to_owned()),
        );
        match page.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
    }
    let evaluated = everything
        .iter()
        .filter(|d| filter.matches(d))
        .map(|d| d["id"].as_str().unwrap_or("").to_owned())
        .collect();
    (pushed, evaluated)
}

/// Every default view the store gives for the query of `list` (pages of 7), parsed, and the
/// documents of `everything` the filter accepts, with the default selection applied.
async fn default_views(
    store: &dyn Store,
    list: &ListRequest,
    everything: &[Value],
) -> (Vec<Value>, Vec<Value>) {
    let mut q = pushed_query(list);
    q.limit = Some(7);
    let mut stored = Vec::new();
    loop {
        let page = store.list_instance_default_views(&q).await.expect("page");
        for text in &page.items {
            stored.push(serde_json::from_str::<Value>(text).expect("a view is JSON"));
        }
        match page.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
    }
    let evaluated = everything
        .iter()
        .filter(|d| list.filter.as_ref().is_none_or(|f| f.matches(d)))
        .map(|d| {
            let mut d = d.clone();
            vnfm_sol013::Selector::Default
                .apply(&mut d, vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED);
            d
        })
        .collect();
    (stored, evaluated)
}

/// The list request of `filter`, as a client sends it (percent-encoded).
fn list_of(filter: &str) -> ListRequest {
    let encoded: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
    let uri: Uri = format!("/vnflcm/v2/vnf_instances?filter={encoded}")
        .parse()
        .expect("uri");
    ListRequest::parse(&uri, instance_schema()).expect("filter parses")
}

#[test]
fn pushed_down_filters_answer_as_the_evaluator() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store: Arc<dyn Store> = Arc::new(rt.block_on(SqliteStore::memory()).expect("store"));
    check_pushdown(&rt, store.as_ref());
}

#[vnfm_test_env::needs(postgres)]
#[test]
fn pushed_down_filters_answer_as_the_evaluator_on_postgres() {
    let url = vnfm_test_env::var("VNFM_TEST_POSTGRES_URL");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = rt.block_on(vnfm_store_sql::open(&url)).expect("store");
    check_pushdown(&rt, store.as_ref());
}

fn check_pushdown(rt: &tokio::runtime::Runtime, store: &dyn Store) {
    let mut everything = Vec::new();
    for i in 0..40 {
        let inst = instance(i);
        rt.block_on(store.create_instance_in(&inst, Some(run_tag()), &[]))
            .expect("create");
        everything.push(serde_json::to_value(&inst).expect("json"));
    }
    let config = ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    };
    proptest!(config, |(terms in prop::collection::vec(term(), 1..4))| {
        let list = list_of(&terms.join(";"));
        let (pushed, evaluated) = rt.block_on(answer(store, &list, &everything));
        prop_assert_eq!(pushed, evaluated, "filter {}", terms.join(";"));
        if instance_query_is_exact(&list) {
            let (stored, evaluated) = rt.block_on(default_views(store, &list, &everything));
            prop_assert_eq!(stored, evaluated, "default views, filter {}", terms.join(";"));
        }
    });
    // A filter the query expresses whole: the views leave out the default exclusions.
    let list = list_of("(eq,instantiationState,INSTANTIATED);(neq,vnfInstanceName,ab)");
    assert!(instance_query_is_exact(&list));
    let (stored, evaluated) = rt.block_on(default_views(store, &list, &everything));
    assert!(stored.len() > 2, "{stored:?}");
    assert_eq!(stored, evaluated);
    assert!(
        stored
            .iter()
            .all(|v| v.get("instantiatedVnfInfo").is_none())
    );
    // Terms on one attribute twice, outside the indexed set, or on date-times are evaluated.
    for filter in [
        "(eq,vnfdId,vnfd-a);(eq,vnfdId,vnfd-b)",
        "(cont,vnfProductName,x)",
        "(eq,vnfInstanceName,2024-01-01T00:00:00Z)",
        "(neq,vnfInstanceName,ab);(cont,vnfInstanceName,b)",
    ] {
        let list = list_of(filter);
        assert!(!instance_query_is_exact(&list), "{filter}");
    }
    // The generated filters do select something now and then (the test is not vacuous).
    let list = list_of("(cont,vnfInstanceName,ab)");
    assert!(matches!(
        instance_query(&list).name,
        Some(vnfm_store::NameFilter::Contains(_))
    ));
    let (pushed, _) = rt.block_on(answer(store, &list, &everything));
    assert!(pushed.len() > 5, "{pushed:?}");
    // A term on a member without a column narrows what the store reads to the documents
    // holding its value (the owner `team-1`, or the tier `team-1`), of which the evaluator
    // keeps the owners.
    let list = list_of("(eq,metadata/owner,team-1)");
    let mut q = pushed_query(&list);
    assert_eq!(q.document_strings.len(), 1);
    q.limit = Some(100);
    q.scan_limit = None;
    let read = rt
        .block_on(store.list_instance_documents(&q))
        .expect("page");
    let (pushed, evaluated) = rt.block_on(answer(store, &list, &everything));
    assert_eq!(pushed, evaluated);
    assert!(!pushed.is_empty());
    assert!(
        read.items.len() > pushed.len() && read.items.len() < everything.len() / 2,
        "read {} documents for {} matches",
        read.items.len(),
        pushed.len()
    );
}
