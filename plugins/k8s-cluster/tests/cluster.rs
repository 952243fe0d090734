//! The k8s-cluster hooks against three (and, for scale-out, four) SSH "VMs"
//! (`scripts/test-env/sshd.sh`), with a test install script that has the real one's interface:
//! it records the host and arguments of every step and prints the access-info lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vnfm_plugin_k8s_cluster::K8sCluster;
use vnfm_plugin_sdk::HookOutput;
use vnfm_plugin_sdk::protocol::ErrorKind;
use vnfm_plugin_sdk::testing::HookHarness;
use vnfm_ssh::testing::TestHosts;

const SCRIPT: &str = "Scripts/install_k8s_cluster.sh";

struct Fixture {
    hosts: TestHosts,
    _dir: tempfile::TempDir,
    log: PathBuf,
    script: String,
    remote_dir: String,
}

impl Fixture {
    fn new(hosts: TestHosts) -> Fixture {
        let dir = tempfile::tempdir_in(&hosts.dir).unwrap();
        let log = dir.path().join("steps.log");
        std::fs::write(&log, "").unwrap();
        let script = include_str!("fake_install.sh").replace("@LOG@", log.to_str().unwrap());
        let remote_dir = dir.path().join("remote").to_str().unwrap().to_string();
        Fixture {
            hosts,
            _dir: dir,
            log,
            script,
            remote_dir,
        }
    }

    fn addr(&self, i: usize) -> &str {
        &self.hosts.hosts[i].address
    }

    /// `(host, args)` of every step so far; clears the log.
    fn steps(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(&self.log).unwrap();
        std::fs::write(&self.log, "").unwrap();
        text.lines()
            .map(|l| {
                let (h, a) = l.split_once(' ').unwrap();
                (h.to_string(), a.to_string())
            })
            .collect()
    }

    fn params(&self) -> Value {
        let key = self.hosts.client_key.to_str().unwrap();
        json!({
            "script_path": SCRIPT,
            "vim_name": "cluster-a",
            "master_node": {
                "aspect_id": "master_instance",
                "ssh_cp_name": "masterNode_CP1",
                "username": self.hosts.user,
                "ssh_private_key_file": key,
                "pod_cidr": "10.244.0.0/16",
                "cluster_cidr": "10.96.0.0/12"
            },
            "worker_node": {
                "aspect_id": "worker_instance",
                "ssh_cp_name": "workerNode_CP2",
                "username": self.hosts.user,
                "ssh_private_key_file": key
            },
            "proxy": {"http_proxy": "http://u:proxy-pass@proxy:3128", "no_proxy": "10.0.0.0/8"},
            "ssh_port": self.hosts.hosts[0].port,
            "remote_dir": self.remote_dir,
            "ssh_retry_seconds": 5
        })
    }

    fn harness(&self, request: Value, instance: Value) -> HookHarness<K8sCluster> {
        HookHarness::new(K8sCluster)
            .request(request)
            .instance(instance)
            .vnfd(vnfd())
            .flavour("simple")
            .file(SCRIPT, self.script.clone())
    }
}

fn vnfd() -> Value {
    json!({"flavours": [{"id": "simple", "scalingAspects": [{
        "id": "worker_instance", "maxScaleLevel": 2, "stepDeltas": ["delta_1"],
        "vduDeltas": {"workerNode": {"delta_1": 1}}
    }]}]})
}

fn vnfc(id: &str, vdu: &str, cpd: &str, addr: &str) -> Value {
    json!({
        "id": id, "vduId": vdu, "computeResource": {"resourceId": format!("server-{id}")},
        "vnfcCpInfo": [{"id": format!("cp-{id}"), "cpdId": cpd, "cpProtocolInfo": [{
            "layerProtocol": "IP_OVER_ETHERNET",
            "ipOverEthernet": {"ipAddresses": [{"type": "IPV4", "addresses": [addr]}]}
        }]}]
    })
}

/// An instance with one master (`vnfc-m1`) and the given workers `(id, address)`.
fn instance(master: &str, workers: &[(&str, &str)], level: u32, metadata: Option<&Value>) -> Value {
    let mut vnfcs = vec![vnfc("vnfc-m1", "masterNode", "masterNode_CP1", master)];
    vnfcs.extend(
        workers
            .iter()
            .map(|(id, a)| vnfc(id, "workerNode", "workerNode_CP2", a)),
    );
    let infos: Vec<Value> = vnfcs
        .iter()
        .map(|v| {
            json!({
                "id": format!("{}-{}", v["vduId"].as_str().unwrap(), v["id"].as_str().unwrap()),
                "vduId": v["vduId"], "vnfcResourceInfoId": v["id"], "vnfcState": "STARTED"
            })
        })
        .collect();
    let mut i = json!({
        "id": "vnf-a", "vnfdId": "vnfd-a", "vnfProvider": "Acme", "vnfProductName": "K8s",
        "vnfSoftwareVersion": "1.33", "vnfdVersion": "1.0", "instantiationState": "INSTANTIATED",
        "_links": {"self": {"href": "/vnflcm/v2/vnf_instances/vnf-a"}},
        "instantiatedVnfInfo": {
            "flavourId": "simple", "vnfState": "STARTED", "extCpInfo": [],
            "scaleStatus": [{"aspectId": "worker_instance", "scaleLevel": level}],
            "vnfcResourceInfo": vnfcs, "vnfcInfo": infos
        }
    });
    if let Some(m) = metadata {
        i["metadata"] = json!({"k8sCluster": m});
    }
    i
}

fn record(out: &HookOutput) -> Value {
    out.metadata.as_ref().unwrap()["k8sCluster"].clone()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|n| n["nodeName"].as_str().unwrap().to_string())
        .collect()
}

fn has_arg(args: &str, flag: &str, value: &str) -> bool {
    args.contains(&format!("{flag} {value}"))
}

#[vnfm_test_env::needs(sshd)]
#[test]
fn builds_scales_heals_and_terminates_a_cluster() {
    let hosts = TestHosts::from_env();
    assert!(
        hosts.hosts.len() >= 4,
        "sshd.sh must start at least 4 hosts"
    );
    let f = Fixture::new(hosts);
    let (m, w1, w2, w3) = (f.addr(1), f.addr(2), f.addr(3), f.addr(0));

    // instantiate_end: master first, then both workers.
    let req = json!({"flavourId": "simple", "additionalParams": {"k8s_cluster_installation_param": f.params()}});
    let h = f.harness(
        req,
        instance(m, &[("vnfc-w1", w1), ("vnfc-w2", w2)], 0, None),
    );
    let out = h.run("instantiate_end").unwrap();
    let steps = f.steps();
    assert_eq!(steps.len(), 3, "{steps:?}");
    let (host0, init) = &steps[0];
    assert_eq!(host0, m);
    assert!(init.starts_with("init-master "), "{init}");
    assert!(has_arg(init, "--node-name", "master-vnfc-m1"), "{init}");
    assert!(has_arg(init, "--node-ip", m), "{init}");
    assert!(
        has_arg(init, "--control-plane-endpoint", &format!("{m}:6443")),
        "{init}"
    );
    assert!(has_arg(init, "--pod-cidr", "10.244.0.0/16"), "{init}");
    assert!(has_arg(init, "--service-cidr", "10.96.0.0/12"), "{init}");
    assert!(
        has_arg(init, "--http-proxy", "http://u:proxy-pass@proxy:3128"),
        "{init}"
    );
    assert!(has_arg(init, "--no-proxy", "10.0.0.0/8"), "{init}");
    let mut joined: Vec<&str> = steps[1..].iter().map(|(h, _)| h.as_str()).collect();
    joined.sort();
    let mut expected = vec![w1, w2];
    expected.sort();
    assert_eq!(joined, expected);
    for (host, args) in &steps[1..] {
        assert!(args.starts_with("join-worker "), "{args}");
        assert!(
            has_arg(args, "--token", "abcdef.0123456789abcdef"),
            "{args}"
        );
        assert!(
            has_arg(args, "--ca-cert-hash", &format!("sha256:{:064}", 7)),
            "{args}"
        );
        assert!(has_arg(args, "--node-ip", host), "{args}");
        assert!(
            has_arg(args, "--control-plane-endpoint", &format!("{m}:6443")),
            "{args}"
        );
    }

    // The VIM to register, and the record.
    assert_eq!(out.vims_to_register.len(), 1);
    let vim = &out.vims_to_register[0];
    assert_eq!(vim.name, "cluster-a");
    assert_eq!(vim.connection_id.as_deref(), Some("k8s_cluster"));
    assert_eq!(vim.info.vim_type, "ETSINFV.KUBERNETES.V_1");
    let iface = vim.info.interface_info.as_ref().unwrap();
    assert_eq!(iface["endpoint"], format!("https://{m}:6443"));
    assert_eq!(iface["ssl_ca_cert"], vnfm_test_env::CA_PEM);
    assert_eq!(
        vim.info.access_info.as_ref().unwrap()["bearer_token"],
        "fake-bearer-token-123"
    );
    let rec = record(&out);
    assert_eq!(names(&rec["masters"]), ["master-vnfc-m1"]);
    assert_eq!(names(&rec["workers"]), ["worker-vnfc-w1", "worker-vnfc-w2"]);
    let fps: BTreeMap<&str, &str> = f
        .hosts
        .hosts
        .iter()
        .map(|h| (h.address.as_str(), h.fingerprint.as_str()))
        .collect();
    for a in [m, w1, w2] {
        assert_eq!(rec["hostKeys"][a], fps[a], "host key of {a} recorded");
    }
    // No credentials in the record (it is visible in the instance).
    let text = rec.to_string();
    assert!(
        !text.contains("proxy-pass") && !text.contains("fake-bearer-token"),
        "{text}"
    );
    assert!(
        h.logs()
            .iter()
            .any(|l| l.message.contains("2 worker(s) joined"))
    );

    assert_eq!(rec["controlPlaneEndpoint"], format!("{m}:6443"));

    // scale_end after a scale-out: only the new worker joins, with a fresh token, and reaches
    // the API server on the endpoint the cluster was installed with, even where the VNFM's
    // own URL for it differs (here: as if through a floating IP).
    let req = json!({"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 1});
    let three = [("vnfc-w1", w1), ("vnfc-w2", w2), ("vnfc-w3", w3)];
    let mut rec_behind_nat = rec.clone();
    rec_behind_nat["server"] = json!("https://203.0.113.7:6443");
    let h = f.harness(req, instance(m, &three, 1, Some(&rec_behind_nat)));
    let out = h.run("scale_end").unwrap();
    let steps = f.steps();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0], (m.to_string(), "join-info".to_string()));
    assert_eq!(steps[1].0, w3);
    assert!(
        has_arg(&steps[1].1, "--token", "ghijkl.0123456789abcdef"),
        "{}",
        steps[1].1
    );
    assert!(has_arg(&steps[1].1, "--node-name", "worker-vnfc-w3"));
    assert!(
        has_arg(
            &steps[1].1,
            "--control-plane-endpoint",
            &format!("{m}:6443")
        ),
        "{}",
        steps[1].1
    );
    let rec = record(&out);
    assert_eq!(
        names(&rec["workers"]),
        ["worker-vnfc-w1", "worker-vnfc-w2", "worker-vnfc-w3"]
    );
    assert_eq!(rec["hostKeys"][w3], fps[w3]);

    // scale_start of a scale-in: the newest worker is drained on the master, then reset.
    let req = json!({"type": "SCALE_IN", "aspectId": "worker_instance", "numberOfSteps": 1});
    let h = f.harness(req, instance(m, &three, 1, Some(&rec)));
    let out = h.run("scale_start").unwrap();
    let steps = f.steps();
    assert_eq!(
        steps,
        [
            (
                m.to_string(),
                "remove-node --node-name worker-vnfc-w3".to_string()
            ),
            (w3.to_string(), "reset".to_string())
        ]
    );
    let rec = record(&out);
    assert_eq!(names(&rec["workers"]), ["worker-vnfc-w1", "worker-vnfc-w2"]);
    assert!(rec["hostKeys"].get(w3).is_none());

    // heal of a worker: removed in heal_start, joined again in heal_end.
    let two = [("vnfc-w1", w1), ("vnfc-w2", w2)];
    let req = json!({"vnfcInstanceId": ["workerNode-vnfc-w2"], "cause": "disk failure"});
    let h = f.harness(req.clone(), instance(m, &two, 0, Some(&rec)));
    let out = h.run("heal_start").unwrap();
    assert_eq!(
        f.steps(),
        [(
            m.to_string(),
            "remove-node --node-name worker-vnfc-w2".to_string()
        )]
    );
    let rec = record(&out);
    assert_eq!(names(&rec["workers"]), ["worker-vnfc-w1"]);
    let h = f.harness(req, instance(m, &two, 0, Some(&rec)));
    let out = h.run("heal_end").unwrap();
    let steps = f.steps();
    assert_eq!(steps[0], (m.to_string(), "join-info".to_string()));
    assert_eq!(steps[1].0, w2);
    assert!(
        steps[1]
            .1
            .starts_with("join-worker --node-name worker-vnfc-w2"),
        "{}",
        steps[1].1
    );
    let rec = record(&out);
    assert_eq!(names(&rec["workers"]), ["worker-vnfc-w1", "worker-vnfc-w2"]);

    // A heal that gives the rebuilt server a new VNFC id: heal_end joins the replacement,
    // which the request (naming the old id) does not name.
    let req = json!({"vnfcInstanceId": ["workerNode-vnfc-w2"]});
    let out = f
        .harness(req.clone(), instance(m, &two, 0, Some(&rec)))
        .run("heal_start")
        .unwrap();
    f.steps();
    let after = [("vnfc-w1", w1), ("vnfc-w2b", w2)];
    let out = f
        .harness(req, instance(m, &after, 0, Some(&record(&out))))
        .run("heal_end")
        .unwrap();
    let steps = f.steps();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(
        steps[1]
            .1
            .starts_with("join-worker --node-name worker-vnfc-w2b"),
        "{}",
        steps[1].1
    );
    let rec = record(&out);
    assert_eq!(
        names(&rec["workers"]),
        ["worker-vnfc-w1", "worker-vnfc-w2b"]
    );
    let two = after;

    // Healing the control plane is refused before anything runs.
    let req = json!({"vnfcInstanceId": ["masterNode-vnfc-m1"]});
    let err = f
        .harness(req, instance(m, &two, 0, Some(&rec)))
        .run("heal_start")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(
        err.message.contains("control-plane node master-vnfc-m1"),
        "{}",
        err.message
    );
    assert!(f.steps().is_empty());

    // terminate_start drops the reference and hands the VIM id to terminate_end, which
    // deregisters it and drops the record.
    let mut inst = instance(m, &two, 0, Some(&rec));
    inst["vimConnectionInfo"] = json!({
        "k8s_cluster": {"vimId": "vim-123", "vimType": "ETSINFV.KUBERNETES.V_1"},
        "vim1": {"vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}
    });
    let out = f
        .harness(json!({}), inst.clone())
        .run("terminate_start")
        .unwrap();
    assert_eq!(out.vim_connection_info_remove, ["k8s_cluster"]);
    assert!(out.vims_to_deregister.is_empty());
    let handed = out.error_handling_data.unwrap();
    assert_eq!(handed, json!({"clusterVimId": "vim-123"}));
    let mut after = inst.clone();
    after["vimConnectionInfo"]
        .as_object_mut()
        .unwrap()
        .remove("k8s_cluster");
    let out = f
        .harness(json!({}), after)
        .error_handling_data(handed)
        .run("terminate_end")
        .unwrap();
    assert_eq!(out.vims_to_deregister, ["vim-123"]);
    assert_eq!(out.metadata.unwrap()["k8sCluster"], Value::Null);
    // Without terminate_start, terminate_end only drops the reference.
    let out = f.harness(json!({}), inst).run("terminate_end").unwrap();
    assert_eq!(out.vim_connection_info_remove, ["k8s_cluster"]);
    assert!(out.vims_to_deregister.is_empty());
    assert!(f.steps().is_empty());
}

#[vnfm_test_env::needs(sshd)]
#[test]
fn a_failing_node_fails_the_hook_without_leaking_secrets() {
    let hosts = TestHosts::from_env();
    let f = Fixture::new(hosts);
    let (m, w1, w2) = (f.addr(1), f.addr(2), f.addr(3));
    std::fs::write(format!("{}.fail-{w2}", f.log.display()), "").unwrap();
    let req = json!({"additionalParams": {"k8s_cluster_installation_param": f.params()}});
    let err = f
        .harness(
            req,
            instance(m, &[("vnfc-w1", w1), ("vnfc-w2", w2)], 0, None),
        )
        .run("instantiate_end")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Permanent, "{}", err.message);
    assert!(
        err.message.contains(w2) && err.message.contains("join-worker"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("exited with status 1"),
        "{}",
        err.message
    );
    for secret in ["proxy-pass", "abcdef.0123456789abcdef"] {
        assert!(
            !err.message.contains(secret),
            "{secret} leaked: {}",
            err.message
        );
    }

    // Missing parameters and credentials are reported before any connection.
    let bad =
        json!({"additionalParams": {"k8s_cluster_installation_param": {"script_path": SCRIPT}}});
    let err = f
        .harness(bad, instance(m, &[], 0, None))
        .run("instantiate_end")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.contains("master_node"), "{}", err.message);
    let mut p = f.params();
    p["master_node"]
        .as_object_mut()
        .unwrap()
        .remove("ssh_private_key_file");
    let req = json!({"additionalParams": {"k8s_cluster_installation_param": p}});
    let err = f
        .harness(req, instance(m, &[], 0, None))
        .run("instantiate_end")
        .unwrap_err();
    assert!(
        err.message.contains("master_node needs password"),
        "{}",
        err.message
    );
}

#[vnfm_test_env::needs(sshd)]
#[test]
fn unknown_hosts_and_unreachable_nodes_are_transient() {
    let hosts = TestHosts::from_env();
    let f = Fixture::new(hosts);
    let req = json!({"additionalParams": {"k8s_cluster_installation_param": f.params()}});
    // A master address where nothing listens: the VM never came up.
    let err = f
        .harness(req, instance("127.0.1.252", &[], 0, None))
        .budget(std::time::Duration::from_secs(30))
        .run("instantiate_end")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Transient, "{}", err.message);
    assert!(err.message.contains("cannot connect to"), "{}", err.message);
    let _ = Path::new(&f.remote_dir);
}
