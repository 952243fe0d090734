//! The client, the webhook parser, the alarm mapping and the PM catalogue against real
//! Prometheus and Alertmanager (`scripts/test-env/prometheus.sh`; `scripts/test.sh` starts
//! them). Built as ignored tests when the variables `prometheus.sh start` prints were not set
//! at build time (`#[vnfm_test_env::needs(prometheus)]`; under `CI` they run, and fail without
//! the services).

use crate::support;

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use support::{Env, Exporter, WebhookReceiver, eventually, unique};
use vnfm_prometheus::{
    AlarmMapping, AlertStatus, ClientOptions, Error, EventType, InstantResult, PerceivedSeverity,
    PmCatalogue, PmObjectType, PmTarget, PrometheusClient, RangeQuery, Sample, parse_webhook,
};

const WAIT: Duration = Duration::from_secs(90);

fn client(env: &Env) -> PrometheusClient {
    PrometheusClient::new(
        &env.prometheus_url,
        ClientOptions {
            timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        },
    )
    .unwrap()
}

/// The samples of `promql` once there are `n` of them, sorted by their labels.
async fn samples(client: &PrometheusClient, promql: &str, n: usize) -> Vec<Sample> {
    eventually(WAIT, &format!("{n} series of {promql}"), || async {
        match client.query(promql, None).await.unwrap().result {
            InstantResult::Vector(mut v) if v.len() == n => {
                v.sort_by(|a, b| a.labels.cmp(&b.labels));
                Some(v)
            }
            _ => None,
        }
    })
    .await
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test]
async fn exporter_values_reach_instant_and_range_queries() {
    let env = Env::get();
    let prometheus = client(&env);
    let vnf = unique("vnf");
    let exporter = Exporter::start().await;
    let c1 = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", "c1"),
    ];
    let c2 = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", "c2"),
    ];
    exporter.set("vnfc_cpu_usage", &c1, 42.5);
    exporter.set("vnfc_cpu_usage", &c2, f64::NAN);
    exporter.set("vnfc_memory_usage", &c1, f64::INFINITY);
    exporter.set("vnfc_memory_usage", &c2, f64::NEG_INFINITY);
    // Two connection points whose ids differ where a regular expression's `.` matches anything.
    for cp in ["cp.1", "cpx1"] {
        let labels = [
            ("vnf_instance_id", vnf.as_str()),
            ("cp_instance_id", cp),
            ("cp_kind", "int"),
        ];
        exporter.set("vnf_cp_received_bytes_total", &labels, 1000.0);
    }
    let _target = env.scrape(&vnf, exporter.addr);

    let cpu = format!(r#"vnfc_cpu_usage{{vnf_instance_id="{vnf}"}}"#);
    let first = samples(&prometheus, &cpu, 2).await;
    assert_eq!(first[0].labels["vnfc_instance_id"], "c1");
    assert_eq!(first[0].labels["job"], "vnfm-test");
    assert_eq!(first[0].labels["instance"], exporter.addr.to_string());
    assert_eq!(first[0].labels["__name__"], "vnfc_cpu_usage");
    assert_eq!(first[0].value, 42.5);
    assert!(first[1].value.is_nan(), "{:?}", first[1]);
    let memory = samples(
        &prometheus,
        &format!(r#"vnfc_memory_usage{{vnf_instance_id="{vnf}"}}"#),
        2,
    )
    .await;
    assert_eq!(memory[0].value, f64::INFINITY);
    assert_eq!(memory[1].value, f64::NEG_INFINITY);

    // A later value, then the instant query at an earlier time still sees the first one.
    let before_change = Timestamp::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    exporter.set("vnfc_cpu_usage", &c1, 60.0);
    let c1_cpu = format!(r#"vnfc_cpu_usage{{vnf_instance_id="{vnf}",vnfc_instance_id="c1"}}"#);
    eventually(WAIT, "the new value", || async {
        match prometheus.query(&c1_cpu, None).await.unwrap().result {
            InstantResult::Vector(v) if v.len() == 1 && v[0].value == 60.0 => Some(()),
            _ => None,
        }
    })
    .await;
    let InstantResult::Vector(then) = prometheus
        .query(&c1_cpu, Some(before_change))
        .await
        .unwrap()
        .result
    else {
        panic!("not a vector");
    };
    assert_eq!(then.len(), 1);
    assert_eq!(then[0].value, 42.5);
    // Prometheus keeps the query time as float seconds: the answer may differ by a rounding
    // step from the millisecond the query named.
    let skew = then[0].at.duration_since(before_change).abs();
    assert!(
        skew <= jiff::SignedDuration::from_millis(1),
        "{} is not the query time {before_change}",
        then[0].at
    );

    // The range over both values: one series, 42.5 then 60, one point a second.
    let end = Timestamp::now();
    let range = RangeQuery {
        start: end - SignedDuration::from_secs(60),
        end,
        step: Duration::from_secs(1),
    };
    let answer = prometheus.query_range(&c1_cpu, &range).await.unwrap();
    assert_eq!(answer.series.len(), 1, "{answer:?}");
    let values: Vec<f64> = answer.series[0].points.iter().map(|p| p.value).collect();
    assert!(values.len() >= 3, "{values:?}");
    assert_eq!(values.first(), Some(&42.5), "{values:?}");
    assert_eq!(values.last(), Some(&60.0), "{values:?}");
    assert!(
        values.iter().all(|v| *v == 42.5 || *v == 60.0),
        "{values:?}"
    );
    let times: Vec<i64> = answer.series[0]
        .points
        .iter()
        .map(|p| p.at.as_second())
        .collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] == 1), "{times:?}");

    // The catalogue's default PromQL measures what the exporter publishes.
    let catalogue = PmCatalogue::default();
    let subs = ["c1".to_string()];
    let target = PmTarget {
        object_instance_id: &vnf,
        sub_object_instance_ids: &subs,
        collection_period: Duration::from_secs(60),
    };
    let peak = catalogue
        .promql("VCpuUsagePeakVnf", PmObjectType::Vnfc, &target)
        .unwrap();
    let per_vnfc = samples(&prometheus, &peak, 1).await;
    assert_eq!(per_vnfc[0].value, 60.0);
    assert_eq!(
        per_vnfc[0]
            .labels
            .get("vnfc_instance_id")
            .map(String::as_str),
        Some("c1")
    );
    let mean = catalogue
        .promql("VCpuUsageMeanVnf", PmObjectType::Vnfc, &target)
        .unwrap();
    let mean = samples(&prometheus, &mean, 1).await[0].value;
    assert!(mean > 42.5 && mean < 60.0, "{mean}");
    // Sub-object ids select exactly those objects.
    let subs = ["cp.1".to_string()];
    let bytes_in = catalogue
        .promql(
            "ByteIncomingVnfIntCp",
            PmObjectType::VnfIntCp,
            &PmTarget {
                sub_object_instance_ids: &subs,
                ..target
            },
        )
        .unwrap();
    let per_cp = samples(&prometheus, &bytes_in, 1).await;
    assert_eq!(per_cp[0].labels["cp_instance_id"], "cp.1");
    assert_eq!(per_cp[0].value, 0.0, "the counter did not move");
    let all_cps = catalogue
        .promql(
            "ByteIncomingVnfIntCp",
            PmObjectType::VnfIntCp,
            &PmTarget {
                sub_object_instance_ids: &[],
                ..target
            },
        )
        .unwrap();
    assert_eq!(samples(&prometheus, &all_cps, 2).await.len(), 2);
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test]
async fn every_default_template_is_valid_promql() {
    let env = Env::get();
    let prometheus = client(&env);
    let catalogue = PmCatalogue::default();
    // Ids with characters that need escaping in strings and in regular expressions.
    let subs = [r#"cp.1"#.to_string(), r#"a"b\c|(d)"#.to_string()];
    for (metric, object_type, _) in catalogue.entries() {
        for subs in [&subs[..], &[]] {
            let target = PmTarget {
                object_instance_id: r#"vnf "quoted" \ id"#,
                sub_object_instance_ids: subs,
                collection_period: Duration::from_secs(300),
            };
            let promql = catalogue
                .promql(metric.as_str(), object_type, &target)
                .unwrap();
            let answer = prometheus.query(&promql, None).await;
            assert!(
                matches!(&answer, Ok(a) if matches!(&a.result, InstantResult::Vector(v) if v.is_empty())),
                "{metric} on {object_type}: {promql}: {answer:?}"
            );
        }
    }
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test]
async fn promql_errors_carry_prometheus_message() {
    let env = Env::get();
    let prometheus = client(&env);
    let e = prometheus
        .query("sum(rate(up[5m])", None)
        .await
        .unwrap_err();
    match &e {
        Error::Promql {
            error_type,
            message,
        } => {
            assert_eq!(error_type, "bad_data");
            assert!(message.contains("parse error"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("parse error"), "{e}");

    let now = Timestamp::now();
    let backwards = RangeQuery {
        start: now,
        end: now - SignedDuration::from_secs(60),
        step: Duration::from_secs(1),
    };
    match prometheus.query_range("up", &backwards).await.unwrap_err() {
        Error::Promql { message, .. } => assert!(message.contains("end timestamp"), "{message}"),
        other => panic!("{other:?}"),
    }

    // An instant query of a range selector answers a matrix; of a scalar, a scalar.
    let answer = prometheus.query("up[10s]", None).await.unwrap();
    assert!(
        matches!(answer.result, InstantResult::Matrix(_)),
        "{answer:?}"
    );
    match prometheus.query("1 / 0", None).await.unwrap().result {
        InstantResult::Scalar(p) => assert_eq!(p.value, f64::INFINITY),
        other => panic!("{other:?}"),
    }
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test]
async fn alert_fires_and_clears_through_alertmanager() {
    let env = Env::get();
    let prometheus = client(&env);
    let mut receiver = WebhookReceiver::start().await;
    env.set_webhook(&receiver.url).await;

    let vnf = unique("vnf");
    let alert_name = unique("VnfcCpuHigh");
    let exporter = Exporter::start().await;
    let series = [
        ("vnf_instance_id", vnf.as_str()),
        ("vnfc_instance_id", "VDU1-0"),
    ];
    exporter.set("vnfc_cpu_usage", &series, 10.0);
    let _target = env.scrape(&vnf, exporter.addr);
    // The labels of Tacker's Prometheus plugin fault alerts, on top of the series' own.
    let rules = format!(
        r#"groups:
  - name: {alert_name}
    rules:
      - alert: {alert_name}
        expr: vnfc_cpu_usage{{vnf_instance_id="{vnf}"}} > 90
        labels:
          receiver_type: tacker
          function_type: vnffm
          perceived_severity: MAJOR
          event_type: PROCESSING_ERROR_ALARM
        annotations:
          probable_cause: vCPU usage above 90 %
          fault_type: Overload
          fault_details: "vCPU usage is {{{{ $value }}}} %"
"#
    );
    let _rules = env.rules(&alert_name, &rules).await;
    let cpu = format!(r#"vnfc_cpu_usage{{vnf_instance_id="{vnf}"}}"#);
    assert_eq!(samples(&prometheus, &cpu, 1).await[0].value, 10.0);
    // The rule is loaded and evaluated (inactive) before the value crosses the threshold.
    let rules_url = format!("{}/api/v1/rules?type=alert", env.prometheus_url);
    eventually(WAIT, "the rule to be loaded", || async {
        let body = reqwest::get(&rules_url).await.ok()?.text().await.ok()?;
        body.contains(&alert_name).then_some(())
    })
    .await;

    let mapping = AlarmMapping::default();
    let has = |status: AlertStatus| {
        let alert_name = alert_name.clone();
        move |body: &[u8]| {
            parse_webhook(body).is_ok_and(|w| {
                w.alerts
                    .iter()
                    .any(|a| a.name() == Some(alert_name.as_str()) && a.status == status)
            })
        }
    };
    let before = Timestamp::now();
    exporter.set("vnfc_cpu_usage", &series, 95.0);
    let body = receiver.next_matching(WAIT, has(AlertStatus::Firing)).await;
    let webhook = parse_webhook(&body).unwrap();
    assert_eq!(webhook.receiver, "vnfm");
    let alert = webhook
        .alerts
        .iter()
        .find(|a| a.name() == Some(alert_name.as_str()))
        .unwrap();
    let raised = mapping.candidate(alert).unwrap().expect("a fault alert");
    assert_eq!(raised.vnf_instance_id, vnf);
    assert_eq!(raised.vnfc_instance_ids, ["VDU1-0"]);
    assert_eq!(raised.perceived_severity, PerceivedSeverity::Major);
    assert_eq!(raised.effective_severity(), PerceivedSeverity::Major);
    assert_eq!(raised.event_type, EventType::ProcessingErrorAlarm);
    assert_eq!(raised.probable_cause, "vCPU usage above 90 %");
    assert_eq!(raised.fault_type.as_deref(), Some("Overload"));
    assert_eq!(raised.fault_details, ["vCPU usage is 95 %"]);
    assert_eq!(raised.alert_name.as_deref(), Some(alert_name.as_str()));
    assert!(!raised.is_clear());
    assert_eq!(raised.ends_at, None);
    assert!(!raised.fingerprint.is_empty());
    assert!(raised.warnings.is_empty(), "{:?}", raised.warnings);
    assert!(
        raised.starts_at >= before - SignedDuration::from_secs(2)
            && raised.starts_at <= Timestamp::now(),
        "{} not after {before}",
        raised.starts_at
    );
    assert!(
        raised.generator_url.starts_with(&env.prometheus_url),
        "{}",
        raised.generator_url
    );

    exporter.set("vnfc_cpu_usage", &series, 5.0);
    let body = receiver
        .next_matching(WAIT, has(AlertStatus::Resolved))
        .await;
    let webhook = parse_webhook(&body).unwrap();
    let alert = webhook
        .alerts
        .iter()
        .find(|a| a.name() == Some(alert_name.as_str()))
        .unwrap();
    let cleared = mapping.candidate(alert).unwrap().expect("a fault alert");
    assert!(cleared.is_clear());
    assert_eq!(cleared.effective_severity(), PerceivedSeverity::Cleared);
    assert_eq!(cleared.fingerprint, raised.fingerprint, "the same alert");
    assert_eq!(cleared.starts_at, raised.starts_at);
    let ends_at = cleared.ends_at.expect("a resolved alert has ended");
    assert!(
        ends_at > raised.starts_at,
        "{ends_at} not after {}",
        raised.starts_at
    );
}

#[vnfm_test_env::needs(prometheus)]
#[tokio::test]
async fn indicator_promql_is_evaluated_for_the_instance() {
    use vnfm_driver_api::metrics::MetricsSource;

    let env = Env::get();
    let metrics = vnfm_prometheus::PrometheusMetrics::new(client(&env), PmCatalogue::default());
    let vnf = unique("vnf");
    let exporter = Exporter::start().await;
    for (vnfc, value) in [("c1", 10.0), ("c2", 20.5)] {
        exporter.set(
            "vnfc_cpu_usage",
            &[
                ("vnf_instance_id", vnf.as_str()),
                ("vnfc_instance_id", vnfc),
            ],
            value,
        );
    }
    let _target = env.scrape(&vnf, exporter.addr);

    let sum = r#"sum(vnfc_cpu_usage{vnf_instance_id="${vnf_instance_id}"})"#;
    let value = eventually(WAIT, "the indicator's value", || async {
        metrics
            .indicator(sum, &vnf)
            .await
            .unwrap()
            .filter(|v| *v == 30.5)
    })
    .await;
    assert_eq!(value, 30.5);
    // Another instance has no data; a quote in its id cannot break out of the string.
    assert_eq!(
        metrics
            .indicator(sum, "other\"} or vector(1) #")
            .await
            .unwrap(),
        None
    );
    // An expression of two series is refused, saying how to fix it.
    let err = metrics
        .indicator(
            r#"vnfc_cpu_usage{vnf_instance_id="${vnf_instance_id}"}"#,
            &vnf,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("2 series") && err.contains("aggregate"),
        "{err}"
    );
    // A scalar is a value too.
    assert_eq!(
        metrics.indicator("scalar(vector(4))", &vnf).await.unwrap(),
        Some(4.0)
    );
}
