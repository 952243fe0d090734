//! Issue 53: a request with an `Idempotency-Key` whose server dies by `kill -9` after the
//! commit and before the answer is answered, when retried after a restart, with what it
//! created: the same instance (201, its `Location` and the body it was created with, made
//! again from the instance and kept with the key for later retries), the same occurrence
//! (202 and its `Location`), the same PM job (201, its `Location` and its body), and nothing
//! created twice. The window is held open by the fault hook `VNFM_TEST_STALL_AFTER_COMMIT` of
//! the test-VIM layers (honoured only with `--enable-test-vim`): the request with that key
//! stops after its commit, before its answer is kept, and the test kills the process.

use super::*;

/// `vnfm serve` on `data`, stalling requests with `stall_key` after their commit.
fn start_stalling(data: &Path, stall_key: Option<&str>) -> Server {
    let mut command = support::serve_command(data);
    command
        .args([
            "--enable-test-vim",
            "--log-level",
            "warn",
            "--no-callback-check",
        ])
        // PM jobs need a Prometheus; nothing listens there: the collector only logs.
        .args(["--prometheus-url", "http://127.0.0.1:9"])
        .stderr(Stdio::inherit());
    if let Some(key) = stall_key {
        command.env(vnfm_api::STALL_AFTER_COMMIT_ENV, key);
    }
    Server::spawn(command, 3).0
}

/// `kill -9` of the server, and its end.
fn kill_9(mut server: Server) {
    let pid = server.child.id().to_string();
    let killed = Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert!(!status.success(), "{status}");
}

/// Polls `path` (a list) until it has an item: the stalled request has committed.
async fn until_listed(api: &Api, path: &str) -> Value {
    for _ in 0..500 {
        let (status, _, list) = api.json(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{list}");
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("nothing was committed at {path}");
}

/// The request, with `key`, sent in the background: the server never answers it.
fn send_unanswered(api: &Api, path: &str, key: &str, body: Value) -> tokio::task::JoinHandle<()> {
    let request = api
        .req(reqwest::Method::POST, path)
        .header("Idempotency-Key", format!("\"{key}\""))
        .json(&body);
    tokio::spawn(async move {
        let answer = request.send().await;
        assert!(
            answer.is_err(),
            "the stalled request was answered: {answer:?}"
        );
    })
}

#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_killed_between_commit_and_answer_gets_its_answer_on_retry() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    // 1. Creating the instance: committed, then the server is killed.
    let server = start_stalling(&data, Some("crash-create"));
    let api = Api::connect(&server.base, &data).await;
    let vnfd_id = api.onboard_corpus_package().await;
    let create = json!({"vnfdId": vnfd_id, "vnfInstanceName": "crashed"});
    let lost = send_unanswered(
        &api,
        "/vnflcm/v2/vnf_instances",
        "crash-create",
        create.clone(),
    );
    let committed = until_listed(
        &api,
        "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,crashed)",
    )
    .await;
    let vnf = committed["id"].as_str().unwrap().to_owned();
    kill_9(server);
    lost.await.unwrap();

    // 2. Retried after a restart (the next request stalls on its task): the same instance.
    let server = start_stalling(&data, Some("crash-task"));
    let api = Api::connect(&server.base, &data).await;
    let retried = api
        .req(reqwest::Method::POST, "/vnflcm/v2/vnf_instances")
        .header("Idempotency-Key", "\"crash-create\"")
        .json(&create)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 201);
    let location = retried.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.ends_with(&format!("/vnflcm/v2/vnf_instances/{vnf}")),
        "{location}"
    );
    let created_base = server.base.clone();
    let created_bytes = retried.bytes().await.unwrap();
    let body: Value = serde_json::from_slice(&created_bytes).unwrap();
    assert_eq!(body["id"], vnf.as_str());
    assert_eq!(body["instantiationState"], "NOT_INSTANTIATED", "{body}");
    let (_, _, all) = api
        .json(
            reqwest::Method::GET,
            "/vnflcm/v2/vnf_instances?filter=(eq,vnfInstanceName,crashed)",
            None,
        )
        .await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");

    // 3. A task: its occurrence committed, then the server is killed.
    let task = format!("/vnflcm/v2/vnf_instances/{vnf}/instantiate");
    let instantiate =
        json!({"flavourId": "simple", "vimConnectionInfo": {"vim1": {"vimType": "TEST.NOOP.V_1"}}});
    let lost = send_unanswered(&api, &task, "crash-task", instantiate.clone());
    let occ = until_listed(
        &api,
        &format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{vnf})"),
    )
    .await;
    let occ_id = occ["id"].as_str().unwrap().to_owned();
    kill_9(server);
    lost.await.unwrap();

    // 4. Retried after a restart: 202 with the same occurrence's Location, one occurrence.
    let server = start_stalling(&data, None);
    let api = Api::connect(&server.base, &data).await;
    let retried = api
        .req(reqwest::Method::POST, &task)
        .header("Idempotency-Key", "\"crash-task\"")
        .json(&instantiate)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 202, "{:?}", retried.text().await);
    let location = retried.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.ends_with(&format!("/vnflcm/v2/vnf_lcm_op_occs/{occ_id}")),
        "{location}"
    );
    let (_, _, occs) = api
        .json(
            reqwest::Method::GET,
            &format!("/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,{vnf})"),
            None,
        )
        .await;
    assert_eq!(occs.as_array().unwrap().len(), 1, "{occs}");
    // Answered now: the next retry gets the same answer from the kept response.
    let again = api
        .req(reqwest::Method::POST, &task)
        .header("Idempotency-Key", "\"crash-task\"")
        .json(&instantiate)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["location"].to_str().unwrap(), location);

    // 5. The instance has been instantiated since: the creation's retry still answers the
    // first answer, byte for byte, the one the first retry made and kept with the key.
    let mut now = Value::Null;
    for _ in 0..500 {
        (_, _, now) = api
            .json(
                reqwest::Method::GET,
                &format!("/vnflcm/v2/vnf_instances/{vnf}"),
                None,
            )
            .await;
        if now["instantiationState"] == "INSTANTIATED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(now["instantiationState"], "INSTANTIATED", "{now}");
    let replayed = api
        .req(reqwest::Method::POST, "/vnflcm/v2/vnf_instances")
        .header("Idempotency-Key", "\"crash-create\"")
        .json(&create)
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.status(), 201);
    // Byte for byte but the origin of its `_links`, made absolute with the address this
    // server (on another port) was reached at.
    let replayed_bytes = replayed.bytes().await.unwrap();
    let [mut replayed, mut created] =
        [&replayed_bytes, &created_bytes].map(|b| String::from_utf8(b.to_vec()).unwrap());
    for (text, base) in [(&mut replayed, &server.base), (&mut created, &created_base)] {
        *text = text.replace(base.as_str(), "");
    }
    assert_eq!(replayed, created);
    server.stop();
}

/// `Api::req` of another API version (PM speaks its own).
fn versioned(
    api: &Api,
    method: reqwest::Method,
    path: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    api.http
        .request(method, format!("{}{path}", api.base))
        .bearer_auth(&api.token)
        .header("Version", version)
}

/// A route other than instances and tasks: a PM job committed, then the server killed; the
/// retry after a restart answers that job, made again from it.
#[vnfm_test_env::needs(corpus)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pm_job_killed_between_commit_and_answer_is_created_once() {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = "/vnfpm/v2/pm_jobs";
    const PM: &str = "2.1.0";

    let server = start_stalling(&data, Some("crash-pm-job"));
    let api = Api::connect(&server.base, &data).await;
    let vnfd_id = api.onboard_corpus_package().await;
    let vnf = api.create_vnf(&vnfd_id).await;
    api.instantiate(&vnf).await;
    let job = json!({"objectType": "Vnf", "objectInstanceIds": [vnf],
                     "criteria": {"performanceMetric": ["VCpuUsageMeanVnf"],
                                  "collectionPeriod": 60, "reportingPeriod": 300},
                     "callbackUri": "http://127.0.0.1:9/job"});
    let keyed = |api: &Api, key: &str, body: &Value| {
        versioned(api, reqwest::Method::POST, path, PM)
            .header("Idempotency-Key", format!("\"{key}\""))
            .json(body)
    };
    let lost = {
        let request = keyed(&api, "crash-pm-job", &job);
        tokio::spawn(async move {
            if let Ok(answer) = request.send().await {
                panic!(
                    "the stalled request was answered: {:?}",
                    answer.text().await
                );
            }
        })
    };
    let jobs = async |api: &Api| -> Vec<Value> {
        let r = versioned(api, reqwest::Method::GET, path, PM)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap().as_array().unwrap().clone()
    };
    let mut committed = Vec::new();
    for _ in 0..500 {
        committed = jobs(&api).await;
        if !committed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(committed.len(), 1, "the stalled PM job was committed");
    let id = committed[0]["id"].as_str().unwrap().to_owned();
    kill_9(server);
    lost.await.unwrap();

    let server = start_stalling(&data, None);
    let api = Api::connect(&server.base, &data).await;
    let retried = keyed(&api, "crash-pm-job", &job).send().await.unwrap();
    assert_eq!(retried.status(), 201);
    let location = retried.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.ends_with(&format!("{path}/{id}")), "{location}");
    let body: Value = retried.json().await.unwrap();
    assert_eq!(body["id"], id.as_str());
    assert_eq!(body["objectInstanceIds"], json!([vnf]));
    assert_eq!(jobs(&api).await.len(), 1, "one PM job");
    // Another body with the key is refused; the same again is the same job.
    let mut other = job.clone();
    other["callbackUri"] = json!("http://127.0.0.1:9/other");
    let refused = keyed(&api, "crash-pm-job", &other).send().await.unwrap();
    assert_eq!(refused.status(), 422);
    let again = keyed(&api, "crash-pm-job", &job).send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["location"].to_str().unwrap(), location);
    server.stop();
}
