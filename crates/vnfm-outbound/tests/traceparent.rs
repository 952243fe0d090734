//! Every request to the NFVO and to a subscriber carries the `traceparent` of the span it is
//! sent in (a grant; a notification delivery, whose span the sender makes).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::any;
use tracing::Instrument;
use vnfm_driver_api::{CallbackMethod, CallbackRequest, CallbackSender, Nfvo, NfvoAuth};
use vnfm_outbound::{HttpCallbackSender, NfvoTimings, Sol003Nfvo};
use vnfm_trace::testing::{CapturedTraceId, attribute, capture, trace_id, traceparent_of};

/// A local server answering 204 to everything, keeping each request's `traceparent`.
async fn recording_server() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    vnfm_outbound::install_crypto_provider();
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let kept = seen.clone();
    let app = Router::new().fallback(any(move |headers: HeaderMap| {
        let kept = kept.clone();
        async move {
            let header = headers
                .get("traceparent")
                .map(|v| v.to_str().unwrap().to_owned());
            kept.lock().unwrap().push(header);
            axum::http::StatusCode::NO_CONTENT
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn a_notification_carries_the_traceparent_of_its_delivery_span() {
    let captured = capture();
    let (base, seen) = recording_server().await;
    let sender = HttpCallbackSender::new(Duration::from_secs(5)).unwrap();
    let root = tracing::info_span!("test.root");
    let trace = trace_id(&root);
    let body = serde_json::json!({
        "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "sub-1",
    });
    let answer = sender
        .send(CallbackRequest {
            method: CallbackMethod::Post,
            uri: &format!("{base}/callback"),
            body: Some(&body),
            authentication: None,
            timeout: Duration::from_secs(5),
            traceparent: None,
        })
        .instrument(root.clone())
        .await
        .expect("the subscriber answers");
    assert_eq!(answer.status, 204);
    drop(root);
    let spans = captured.named(trace, "notification.delivery");
    assert_eq!(
        spans.len(),
        1,
        "one delivery span in {:?}",
        captured.spans_of(trace)
    );
    for (key, want) in [
        ("subscription_id", "sub-1"),
        ("notification_type", "VnfLcmOperationOccurrenceNotification"),
        ("http.response.status_code", "204"),
    ] {
        assert_eq!(
            attribute(&spans[0], key).as_deref(),
            Some(want),
            "attribute {key}"
        );
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [Some(traceparent_of(&spans[0]))],
        "the subscriber received the delivery span's traceparent"
    );
}

/// A notification sent later from the outbox, with the trace context it was made in: its
/// delivery span continues that trace (a child of the span named, and linked to it), not the
/// trace of whatever span the sender runs in, and the subscriber receives the delivery span's
/// `traceparent`.
#[tokio::test]
async fn a_notification_made_in_a_trace_is_delivered_in_that_trace() {
    let captured = capture();
    let (base, seen) = recording_server().await;
    let sender = HttpCallbackSender::new(Duration::from_secs(5)).unwrap();
    let (made_trace, made_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let made_in = format!("00-{made_trace}-{made_span}-01");
    let unrelated = tracing::info_span!("test.unrelated");
    let unrelated_trace = trace_id(&unrelated);
    let body = serde_json::json!({
        "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "sub-2",
    });
    let answer = sender
        .send(CallbackRequest {
            method: CallbackMethod::Post,
            uri: &format!("{base}/callback"),
            body: Some(&body),
            authentication: None,
            timeout: Duration::from_secs(5),
            traceparent: Some(&made_in),
        })
        .instrument(unrelated.clone())
        .await
        .expect("the subscriber answers");
    assert_eq!(answer.status, 204);
    drop(unrelated);
    assert!(
        captured
            .named(unrelated_trace, "notification.delivery")
            .is_empty(),
        "the delivery is not in the trace of the span it was sent from"
    );
    let trace = CapturedTraceId::from_hex(made_trace).unwrap();
    let spans = captured.named(trace, "notification.delivery");
    assert_eq!(
        spans.len(),
        1,
        "one delivery span in the notification's trace"
    );
    let delivery = &spans[0];
    assert_eq!(delivery.parent_span_id.to_string(), made_span);
    let links: Vec<String> = delivery
        .links
        .iter()
        .map(|l| format!("{}-{}", l.span_context.trace_id(), l.span_context.span_id()))
        .collect();
    assert_eq!(links, [format!("{made_trace}-{made_span}")]);
    assert_eq!(*seen.lock().unwrap(), [Some(traceparent_of(delivery))]);
}

#[tokio::test]
async fn a_request_to_the_nfvo_carries_the_traceparent_of_its_span() {
    let captured = capture();
    let (base, seen) = recording_server().await;
    let nfvo = Sol003Nfvo::new(base, NfvoAuth::None, None, NfvoTimings::default()).unwrap();
    let span = tracing::info_span!("lcm.grant");
    let trace = trace_id(&span);
    // 204 is neither the VNFD nor 404: the answer is an error, the request is what counts.
    let _ = nfvo.fetch_vnfd("vnfd-1").instrument(span.clone()).await;
    drop(span);
    let spans = captured.named(trace, "lcm.grant");
    assert_eq!(*seen.lock().unwrap(), [Some(traceparent_of(&spans[0]))]);
}
