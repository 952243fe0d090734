//! `/vnfm/v1/vnf_lcm_op_occs/{id}/timeline`: each run of each step, from the step journal.

use super::*;

/// The (name, outcome) of each step run of a timeline document.
fn runs(timeline: &Value) -> Vec<(String, String)> {
    timeline["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_retried_step_appears_once_per_run_in_order_with_its_times() {
    let h = Harness::new().await;
    let (_, occ) = failed_temp_instantiate(&h).await;
    let occ_id = occ["id"].as_str().unwrap().to_owned();
    let path = format!("/vnfm/v1/vnf_lcm_op_occs/{occ_id}/timeline");
    let failed = h.call(Method::GET, &path, None).await.json();
    assert_eq!(failed["operation"], "INSTANTIATE", "{failed:#}");
    assert_eq!(failed["operationState"], "FAILED_TEMP", "{failed:#}");
    let last = runs(&failed).pop().unwrap();
    assert_eq!(
        last,
        ("infra:instantiate".into(), "FAILED".into()),
        "{failed:#}"
    );
    let failed_step = failed["steps"].as_array().unwrap().last().unwrap().clone();
    assert!(
        failed_step["error"]
            .as_str()
            .unwrap()
            .contains("VIM unreachable"),
        "{failed:#}"
    );

    let r = h
        .call(
            Method::POST,
            &format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}/retry"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    h.wait_op(r.header("location").unwrap()).await;
    let done = h.call(Method::GET, &path, None).await.json();
    let runs_after = runs(&done);
    let before = runs(&failed);
    // The failed run stays; the retry runs the step again and the rest of the plan.
    assert_eq!(runs_after[..before.len()], before[..], "{done:#}");
    assert_eq!(
        runs_after[before.len()],
        ("infra:instantiate".to_owned(), "COMPLETED".to_owned()),
        "{done:#}"
    );
    assert!(
        runs_after
            .iter()
            .skip(before.len())
            .all(|(_, o)| o == "COMPLETED"),
        "{done:#}"
    );
    // Runs are in order: each starts no earlier than the one before ends, and lasts
    // end - start.
    let steps = done["steps"].as_array().unwrap();
    let ms = |s: &Value, k: &str| {
        s[k].as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond()
    };
    for pair in steps.windows(2) {
        assert!(ms(&pair[1], "start") >= ms(&pair[0], "end"), "{done:#}");
    }
    for s in steps {
        assert_eq!(
            ms(s, "end") - ms(s, "start"),
            s["durationMs"].as_i64().unwrap()
        );
    }
    h.call(
        Method::GET,
        "/vnfm/v1/vnf_lcm_op_occs/no-such-occurrence/timeline",
        None,
    )
    .await
    .problem(404);
}
