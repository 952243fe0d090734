//! The headline scenario, end to end, composed only of packages, drivers and plugins:
//!
//! VNF-A (`vnfd-samples/vnf-a-k8s-cluster`) gets its VMs from real Heat, Nova (fake virt
//! driver) and Neutron: its ports are on a network of the test whose subnet allocates loopback
//! addresses, where the test sshd answers. Its `instantiate_end` hook, the k8s-cluster plugin
//! loaded from the package as a dynamic library and run in the isolated runner, installs
//! Kubernetes on the VMs Nova created over SSH (a test install script with the real one's
//! interface, reporting the real control plane of `scripts/test-env/kubernetes.sh` as the
//! cluster) and returns the cluster as a VIM, which the VNFM registers with its secrets
//! encrypted. VNF-B (`vnfd-samples/vnf-b-cnf`) is then deployed on that VIM by the Kubernetes
//! driver (its pods become Ready after KWOK's delay), checked by its own plugin. Then: VNF-A's
//! terminate is refused while VNF-B uses its cluster; a worker of VNF-A is healed (drained
//! before, re-joined after); VNF-B terminates (its objects and namespace gone from the
//! cluster); VNF-A terminates (VIM deregistered, stack, servers and ports gone). Every
//! occurrence ends COMPLETED, the subscriber gets every notification, and what Nova, Neutron
//! and the cluster hold is checked after each step.
//!
//! The same flow runs once through the embedding API and once through `vnfm serve` over HTTP;
//! a third test breaks a worker's install: FAILED_TEMP naming the host and its stderr, retry
//! after the repair, and a rollback that leaves no stack and no VIM.

use crate::e2e_support;

use std::collections::BTreeSet;
use std::sync::Arc;

use e2e_support::{KUBERNETES, World};
use serde_json::{Value, json};
use vnfm::lcm::LcmError;
use vnfm::lcm::types::{LcmOperationStateType, VimId, VnfInstanceId};

mod checks;
mod embedded;
mod rest;

use checks::{
    assert_vms_gone, assert_vms_gone_of, assert_vnf_b_gone, assert_vnf_b_runs, cluster_vim_id,
    on_nova, onboard, vnfc_info_id,
};
use embedded::Vnfm;
use rest::{Rest, serve};

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vnf_a_builds_a_cluster_and_vnf_b_runs_on_it() {
    World::run(vnf_a_builds_a_cluster_and_vnf_b_runs_on_it_in).await;
}

async fn vnf_a_builds_a_cluster_and_vnf_b_runs_on_it_in(world: Arc<World>) {
    let (catalog, vnfd_a, vnfd_b) = onboard(&world);
    let vnfm = Vnfm::start(&world, catalog).await;

    // The operator registers the OpenStack VIM.
    let os_vim = vnfm.register_cloud(&world).await;

    // VNF-A: VMs from Heat and Nova, Kubernetes installed over SSH by the plugin, cluster
    // registered.
    let a = vnfm.create(&vnfd_a, "vnf-a").await;
    let op = vnfm
        .lcm
        .instantiate(
            &a,
            serde_json::from_value(world.vnf_a_request(os_vim.id.as_str())).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let inst_a = vnfm.instance(&a).await;
    let masters = World::addresses(&inst_a, "masterNode", "masterNode_CP1");
    let workers = World::addresses(&inst_a, "workerNode", "workerNode_CP2");
    assert_eq!((masters.len(), workers.len()), (1, 2), "{inst_a:#}");
    let servers = on_nova(&world, &inst_a).await;
    assert_eq!(servers.len(), 3, "{inst_a:#}");
    let steps = world.steps();
    assert_eq!(World::hosts_of(&steps, "init-master"), masters, "{steps:?}");
    assert_eq!(World::hosts_of(&steps, "join-worker"), workers, "{steps:?}");

    // The cluster is a registered VIM created by VNF-A; its token is sealed in the store.
    let cluster = cluster_vim_id(&inst_a);
    let view = vnfm
        .registry
        .show(&VimId::new(cluster.clone()))
        .await
        .unwrap();
    assert_eq!(view.vim_type, KUBERNETES);
    assert_eq!(
        view.interface_info.as_ref().unwrap()["endpoint"],
        world.kube.server.as_str()
    );
    assert_eq!(view.access_info.as_ref().unwrap()["bearer_token"], "***");
    let token = world.kube.token.clone();
    let db = std::fs::read(&vnfm.db).unwrap();
    assert!(
        !db.windows(token.len()).any(|w| w == token.as_bytes()),
        "the cluster's token is stored encrypted"
    );
    assert!(!serde_json::to_string(&inst_a).unwrap().contains(&token));

    // VNF-B on VNF-A's cluster, through the Kubernetes driver; its plugin checks the Service.
    let b = vnfm.create(&vnfd_b, "vnf-b").await;
    let op = vnfm
        .lcm
        .instantiate(
            &b,
            serde_json::from_value(world.vnf_b_request(&cluster)).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let inst_b = vnfm.instance(&b).await;
    assert_vnf_b_runs(&world, &b).await;
    assert!(
        inst_b["metadata"]["cnfCheck"].is_object(),
        "the CNF check ran: {inst_b:#}"
    );

    // VNF-A cannot go while VNF-B uses its cluster: refused before an occurrence exists.
    let before = vnfm.lcm.list_op_occs(&Default::default()).await.unwrap();
    let refused = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, LcmError::VimDependents { .. }),
        "{refused:?}"
    );
    assert_eq!(refused.kind().status(), 409);
    let detail = refused.to_string();
    assert!(
        detail.contains(b.as_str()) && detail.contains("vnf-b") && detail.contains(&cluster),
        "{detail}"
    );
    let after = vnfm.lcm.list_op_occs(&Default::default()).await.unwrap();
    assert_eq!(before.items.len(), after.items.len());

    // Heal one worker of VNF-A: drained (removed from the cluster) before the VM is rebuilt,
    // joined again after.
    let (vnfc_info, resource) = vnfc_info_id(&inst_a, "workerNode");
    let healed_server = inst_a["instantiatedVnfInfo"]["vnfcResourceInfo"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == resource.as_str())
        .unwrap()["computeResource"]["resourceId"]
        .as_str()
        .unwrap()
        .to_string();
    let healed_addr = World::addresses(
        &json!({"instantiatedVnfInfo": {"vnfcResourceInfo": [
            inst_a["instantiatedVnfInfo"]["vnfcResourceInfo"].as_array().unwrap().iter()
                .find(|v| v["id"] == resource.as_str()).unwrap()
        ]}}),
        "workerNode",
        "workerNode_CP2",
    );
    let op = vnfm
        .lcm
        .heal(
            &a,
            serde_json::from_value(json!({"vnfcInstanceId": [vnfc_info], "cause": "e2e"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    let steps = world.steps();
    let remove = steps
        .iter()
        .position(|s| s.contains("remove-node"))
        .unwrap_or_else(|| panic!("no drain: {steps:?}"));
    let join = steps
        .iter()
        .position(|s| s.contains("join-worker"))
        .unwrap_or_else(|| panic!("no re-join: {steps:?}"));
    assert!(remove < join, "drained before re-joined: {steps:?}");
    assert_eq!(
        World::hosts_of(&steps, "remove-node"),
        masters,
        "the master removes the node"
    );
    let inst_a = vnfm.instance(&a).await;
    let rejoined = World::hosts_of(&steps, "join-worker");
    assert_eq!(rejoined.len(), 1, "{steps:?}");
    assert!(
        World::addresses(&inst_a, "workerNode", "workerNode_CP2").contains(&rejoined[0]),
        "the healed VNFC joined at its current address ({healed_addr:?} before)"
    );
    let after_heal = on_nova(&world, &inst_a).await;
    assert_eq!(after_heal.len(), 3, "{inst_a:#}");
    if !after_heal.contains(&healed_server) {
        assert_vms_gone_of(&world, &healed_server).await;
    }
    // The cluster's workload was not touched by the heal of a VM.
    assert_vnf_b_runs(&world, &b).await;

    // Scale out: the new worker joins; scale in: the leaving worker is drained (removed by
    // the master, reset) before its VM goes.
    let scale = |kind: &str| {
        serde_json::from_value(
            json!({"type": kind, "aspectId": "worker_instance", "numberOfSteps": 1}),
        )
        .unwrap()
    };
    let op = vnfm.lcm.scale(&a, scale("SCALE_OUT")).await.unwrap();
    vnfm.completed(&world, op).await;
    let inst_grown = vnfm.instance(&a).await;
    let grown = World::addresses(&inst_grown, "workerNode", "workerNode_CP2");
    assert_eq!(grown.len(), 3);
    let grown_servers = on_nova(&world, &inst_grown).await;
    assert_eq!(grown_servers.len(), 4, "{inst_grown:#}");
    let steps = world.steps();
    let joined = World::hosts_of(&steps, "join-worker");
    assert_eq!(joined.len(), 1, "{steps:?}");
    assert!(grown.contains(&joined[0]));
    let op = vnfm.lcm.scale(&a, scale("SCALE_IN")).await.unwrap();
    vnfm.completed(&world, op).await;
    let inst_shrunk = vnfm.instance(&a).await;
    let shrunk = World::addresses(&inst_shrunk, "workerNode", "workerNode_CP2");
    assert_eq!(shrunk.len(), 2);
    let shrunk_servers = on_nova(&world, &inst_shrunk).await;
    assert_eq!(shrunk_servers.len(), 3);
    let removed: Vec<&String> = grown_servers.difference(&shrunk_servers).collect();
    assert_eq!(removed.len(), 1, "one server removed: {removed:?}");
    assert_vms_gone_of(&world, removed[0]).await;
    let steps = world.steps();
    let left: Vec<&String> = grown.iter().filter(|w| !shrunk.contains(w)).collect();
    assert_eq!(left.len(), 1);
    assert_eq!(World::hosts_of(&steps, "remove-node"), masters, "{steps:?}");
    assert_eq!(
        World::hosts_of(&steps, "reset"),
        vec![left[0].clone()],
        "the leaving worker is reset: {steps:?}"
    );

    // VNF-B goes first, then VNF-A: its VIM is deregistered and its stack deleted.
    let op = vnfm
        .lcm
        .terminate(
            &b,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert_vnf_b_gone(&world, &b).await;
    let op = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert!(
        vnfm.registry
            .show(&VimId::new(cluster.clone()))
            .await
            .is_err(),
        "the cluster's VIM is deregistered"
    );
    assert!(!world.cloud.stack_exists(a.as_str()).await);
    assert_vms_gone(
        &world,
        &shrunk_servers.union(&after_heal).cloned().collect(),
    )
    .await;
    vnfm.lcm.delete_vnf_identifier(&b).await.unwrap();
    vnfm.lcm.delete_vnf_identifier(&a).await.unwrap();
}

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly() {
    World::run(a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly_in)
        .await;
}

async fn a_failed_worker_install_is_retried_after_the_repair_and_rolled_back_cleanly_in(
    world: Arc<World>,
) {
    let (catalog, vnfd_a, _) = onboard(&world);
    let vnfm = Vnfm::start(&world, catalog).await;
    let os_vim = vnfm.register_cloud(&world).await;
    let request = world.vnf_a_request(os_vim.id.as_str());

    // One worker's install fails: FAILED_TEMP, naming that host and what it printed.
    world.break_a_worker();
    let a = vnfm.create(&vnfd_a, "vnf-a").await;
    let op = vnfm
        .lcm
        .instantiate(&a, serde_json::from_value(request.clone()).unwrap())
        .await
        .unwrap();
    let failed = vnfm.done(op).await;
    assert_eq!(
        failed.operation_state,
        LcmOperationStateType::FailedTemp,
        "{failed:#?}"
    );
    world
        .subscriber
        .wait_for(failed.id.as_str(), "FAILED_TEMP")
        .await;
    let broken = world.broken_host().expect("a worker tried to join");
    let detail = failed.error.as_ref().unwrap().detail.clone();
    assert!(detail.contains(&broken), "{detail}");
    assert!(
        detail.contains("container runtime is not running"),
        "the host's stderr: {detail}"
    );
    let vims = vnfm.registry.list().await.unwrap();
    assert_eq!(vims.len(), 1, "no cluster VIM yet: {vims:?}");

    // The operator repairs the host and retries.
    world.fix_broken_host();
    world.steps();
    let op = vnfm.lcm.retry(&failed.id).await.unwrap();
    vnfm.completed(&world, op).await;
    let steps = world.steps();
    assert!(
        World::hosts_of(&steps, "join-worker").contains(&broken),
        "the repaired worker joined: {steps:?}"
    );
    let inst = vnfm.instance(&a).await;
    let cluster = cluster_vim_id(&inst);
    let servers = on_nova(&world, &inst).await;
    assert_eq!(servers.len(), 3, "{inst:#}");

    // A second cluster fails the same way and is rolled back: no stack, no VIM left.
    world.break_a_worker();
    let a2 = vnfm.create(&vnfd_a, "vnf-a2").await;
    let op = vnfm
        .lcm
        .instantiate(&a2, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    let failed = vnfm.done(op).await;
    assert_eq!(failed.operation_state, LcmOperationStateType::FailedTemp);
    let (_, resources) = world.cloud.stack(a2.as_str()).await.expect("a2's stack");
    let a2_servers: Vec<String> = resources
        .iter()
        .filter(|r| r.resource_type == "OS::Nova::Server")
        .map(|r| r.physical_resource_id.clone())
        .collect();
    assert_eq!(a2_servers.len(), 3, "{resources:#?}");
    for server in world.cloud.servers(&a2_servers).await {
        assert_eq!(server.expect("Nova has a2's server")["status"], "ACTIVE");
    }
    let op = vnfm.lcm.rollback(&failed.id).await.unwrap();
    let rolled = vnfm.done(op).await;
    assert_eq!(
        rolled.operation_state,
        LcmOperationStateType::RolledBack,
        "{rolled:#?}"
    );
    world
        .subscriber
        .wait_for(rolled.id.as_str(), "ROLLED_BACK")
        .await;
    assert!(!world.cloud.stack_exists(a2.as_str()).await);
    for id in &a2_servers {
        assert_vms_gone_of(&world, id).await;
    }
    let vims = vnfm.registry.list().await.unwrap();
    assert_eq!(
        vims.iter()
            .map(|v| v.id.to_string())
            .collect::<Vec<_>>()
            .len(),
        2,
        "the OpenStack VIM and the first cluster only: {vims:?}"
    );
    assert!(vims.iter().any(|v| v.id.as_str() == cluster));
    world.fix_broken_host();

    let op = vnfm
        .lcm
        .terminate(
            &a,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    vnfm.completed(&world, op).await;
    assert_eq!(vnfm.registry.list().await.unwrap().len(), 1);
    assert_vms_gone(&world, &servers).await;
}

#[vnfm_test_env::needs(openstack, sshd, helm, kubernetes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_scenario_through_the_rest_api() {
    World::run(the_same_scenario_through_the_rest_api_in).await;
}

async fn the_same_scenario_through_the_rest_api_in(world: Arc<World>) {
    let server = serve(&world);
    let creds: Value = serde_json::from_str(
        &std::fs::read_to_string(server.data.join("credentials.json")).unwrap(),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let token: Value = http
        .post(format!("{}/oauth2/token", server.base))
        .basic_auth(
            creds["client_id"].as_str().unwrap(),
            creds["client_secret"].as_str(),
        )
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let api = Rest {
        base: server.base.clone(),
        token: token["access_token"].as_str().unwrap().to_string(),
        http,
    };

    let (status, sub, _) = api
        .post(
            "/vnflcm/v2/subscriptions",
            json!({"callbackUri": world.subscriber.url}),
        )
        .await;
    assert_eq!(status, 201, "{sub}");
    let mut vim = world.cloud.vim();
    vim["name"] = json!("test-cloud");
    let (status, os_vim, _) = api.post("/vnfm/v1/vims", vim).await;
    assert_eq!(status, 201, "{os_vim}");
    assert_eq!(os_vim["accessInfo"]["password"], "***");
    let vnfd_a = api.onboard(&world.vnf_a_package()).await;
    let vnfd_b = api.onboard(&world.vnf_b_package()).await;

    let (status, a, _) = api
        .post(
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": vnfd_a, "vnfInstanceName": "vnf-a"}),
        )
        .await;
    assert_eq!(status, 201, "{a}");
    let a = a["id"].as_str().unwrap().to_string();
    world.track(&a);
    api.task(
        &world,
        &a,
        "instantiate",
        world.vnf_a_request(os_vim["vimId"].as_str().or(os_vim["id"].as_str()).unwrap()),
    )
    .await;
    let inst_a = api.get(&format!("/vnflcm/v2/vnf_instances/{a}")).await;
    let workers = World::addresses(&inst_a, "workerNode", "workerNode_CP2");
    assert_eq!(workers.len(), 2, "{inst_a:#}");
    let servers = on_nova(&world, &inst_a).await;
    assert_eq!(servers.len(), 3, "{inst_a:#}");
    let steps = world.steps();
    assert_eq!(World::hosts_of(&steps, "join-worker"), workers);
    let cluster = cluster_vim_id(&inst_a);
    let cluster_view = api.get(&format!("/vnfm/v1/vims/{cluster}")).await;
    assert_eq!(cluster_view["vimType"], KUBERNETES);
    assert_eq!(cluster_view["accessInfo"]["bearer_token"], "***");

    let (status, b, _) = api
        .post(
            "/vnflcm/v2/vnf_instances",
            json!({"vnfdId": vnfd_b, "vnfInstanceName": "vnf-b"}),
        )
        .await;
    assert_eq!(status, 201, "{b}");
    let b = b["id"].as_str().unwrap().to_string();
    api.task(&world, &b, "instantiate", world.vnf_b_request(&cluster))
        .await;
    let b_id = VnfInstanceId::new(b.clone());
    assert_vnf_b_runs(&world, &b_id).await;

    // 409 with the dependents named.
    let (status, problem, _) = api
        .post(
            &format!("/vnflcm/v2/vnf_instances/{a}/terminate"),
            json!({"terminationType": "FORCEFUL"}),
        )
        .await;
    assert_eq!(status, 409, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains(&b),
        "{problem}"
    );
    assert_eq!(
        problem["dependents"][0]["vnfInstanceId"],
        b.as_str(),
        "{problem}"
    );

    // Heal a worker of VNF-A: drain, rebuild, re-join.
    let (vnfc_info, _) = vnfc_info_id(&inst_a, "workerNode");
    api.task(
        &world,
        &a,
        "heal",
        json!({"vnfcInstanceId": [vnfc_info], "cause": "e2e over REST"}),
    )
    .await;
    let steps = world.steps();
    let remove = steps.iter().position(|s| s.contains("remove-node"));
    let join = steps.iter().position(|s| s.contains("join-worker"));
    assert!(
        matches!((remove, join), (Some(r), Some(j)) if r < j),
        "{steps:?}"
    );

    api.task(
        &world,
        &b,
        "terminate",
        json!({"terminationType": "FORCEFUL"}),
    )
    .await;
    assert_vnf_b_gone(&world, &b_id).await;
    let healed = api.get(&format!("/vnflcm/v2/vnf_instances/{a}")).await;
    let servers: BTreeSet<String> = servers
        .union(&on_nova(&world, &healed).await)
        .cloned()
        .collect();
    api.task(
        &world,
        &a,
        "terminate",
        json!({"terminationType": "FORCEFUL"}),
    )
    .await;
    let (status, _, _) = api
        .call(
            reqwest::Method::GET,
            &format!("/vnfm/v1/vims/{cluster}"),
            None,
        )
        .await;
    assert_eq!(status, 404, "the cluster's VIM is deregistered");
    assert!(!world.cloud.stack_exists(a.as_str()).await);
    assert_vms_gone(&world, &servers).await;
    for id in [&b, &a] {
        let (status, body, _) = api
            .call(
                reqwest::Method::DELETE,
                &format!("/vnflcm/v2/vnf_instances/{id}"),
                None,
            )
            .await;
        assert_eq!(status, 204, "{body}");
    }
}
