//! The VIM registry over a real SQLite file: secrets never reach the disk or the logs in
//! clear, `show` is redacted, `resolve` decrypts, updates re-encrypt, deletes respect users.

use crate::log_capture::logs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use vnfm_driver_api::VimRegistration;
use vnfm_infra_kubernetes::{HELM_VIM_TYPE as HELM, KUBERNETES_VIM_TYPE as KUBERNETES};
use vnfm_infra_openstack::OPENSTACK_VIM_TYPE as OPENSTACK;
use vnfm_lcm::ports::VimDirectory;
use vnfm_lcm::vim::REDACTED;
use vnfm_lcm::{Keyring, LcmError, VimRegistry, VimUpdate};
use vnfm_store::{ProjectScope, Store, Version};
use vnfm_store_sql::SqliteStore;
use vnfm_types::{VimConnectionInfo, VimId, VnfInstance, VnfInstanceId};

const OS_PASSWORD: &str = "os-Pa55word-4f1c";
const APP_SECRET: &str = "app-cred-Secret-77aa";
const K8S_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.k8s-bearer-token-b0b0";
const HELM_PASSWORD: &str = "helm-basic-Pa55-9e9e";
const SECRETS: [&str; 4] = [OS_PASSWORD, APP_SECRET, K8S_TOKEN, HELM_PASSWORD];
const CA: &str = vnfm_test_env::CA_PEM;

struct Db {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: Arc<dyn Store>,
}

async fn sqlite() -> Db {
    logs();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vnfm.db");
    let store = SqliteStore::open(&path).await.unwrap();
    Db {
        _dir: dir,
        path,
        store: Arc::new(store),
    }
}

fn ring(keys: &[&str]) -> Arc<Keyring> {
    Arc::new(Keyring::from_keys(keys).unwrap())
}

fn info(v: Value) -> VimConnectionInfo {
    serde_json::from_value(v).unwrap()
}

fn openstack() -> VimConnectionInfo {
    info(json!({
        "vimType": OPENSTACK,
        "interfaceInfo": {"endpoint": "http://keystone.example:5000/v3"},
        "accessInfo": {"username": "nfv_user", "password": OS_PASSWORD, "project": "nfv",
                       "projectDomain": "Default", "userDomain": "Default", "region": "RegionOne"}
    }))
}

fn openstack_app_cred() -> VimConnectionInfo {
    info(json!({
        "vimType": OPENSTACK,
        "interfaceInfo": {"endpoint": "https://keystone.example/v3", "caCert": CA},
        "accessInfo": {"applicationCredentialId": "ac-1", "applicationCredentialSecret": APP_SECRET}
    }))
}

fn kubernetes() -> VimConnectionInfo {
    info(json!({
        "vimType": KUBERNETES,
        "interfaceInfo": {"endpoint": "https://10.0.0.1:6443", "ssl_ca_cert": CA},
        "accessInfo": {"bearer_token": K8S_TOKEN, "namespace": "vnf-ns"}
    }))
}

fn helm() -> VimConnectionInfo {
    info(json!({
        "vimType": HELM,
        "interfaceInfo": {"endpoint": "https://10.0.0.2:6443"},
        "accessInfo": {"username": "admin", "password": HELM_PASSWORD},
        "extra": {"helmVersion": "3"}
    }))
}

/// Every byte of the database files (main file, WAL, shared memory).
fn db_bytes(path: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        if let Ok(b) = std::fs::read(PathBuf::from(p)) {
            all.extend(b);
        }
    }
    all
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn instance(id: &str, vims: Value) -> VnfInstance {
    serde_json::from_value(json!({
        "id": id, "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
        "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
        "instantiationState": "NOT_INSTANTIATED", "_links": {"self": {"href": format!("/i/{id}")}},
        "vimConnectionInfo": vims
    }))
    .unwrap()
}

#[tokio::test]
async fn registered_secrets_are_never_in_the_file_or_the_logs() {
    logs();
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let mut ids = Vec::new();
    for (name, vim) in [
        ("os", openstack()),
        ("os-app", openstack_app_cred()),
        ("k8s", kubernetes()),
        ("helm", helm()),
    ] {
        let view = reg.create(name, &vim, None).await.unwrap();
        assert_eq!(view.vim_type, vim.vim_type);
        assert_eq!(view.version, 1);
        ids.push(view.id);
    }

    // show / list: secrets as "***", public members intact.
    let os = reg.show(&ids[0]).await.unwrap();
    let access = os.access_info.as_ref().unwrap();
    assert_eq!(access["password"], json!(REDACTED));
    assert_eq!(access["username"], json!("nfv_user"));
    assert_eq!(access["region"], json!("RegionOne"));
    let app = reg.show(&ids[1]).await.unwrap();
    assert_eq!(
        app.access_info.as_ref().unwrap()["applicationCredentialSecret"],
        json!(REDACTED)
    );
    // The alias caCert was normalized to ssl_ca_cert (a CA certificate is not secret).
    assert_eq!(
        app.interface_info.as_ref().unwrap()["ssl_ca_cert"],
        json!(CA)
    );
    assert!(!app.interface_info.as_ref().unwrap().contains_key("caCert"));
    let k8s = reg.show(&ids[2]).await.unwrap();
    assert_eq!(
        k8s.access_info.as_ref().unwrap()["bearer_token"],
        json!(REDACTED)
    );
    assert_eq!(
        k8s.access_info.as_ref().unwrap()["namespace"],
        json!("vnf-ns")
    );
    let listed = reg.list().await.unwrap();
    assert_eq!(listed.len(), 4);
    let shown = serde_json::to_string(&listed).unwrap();

    // resolve: the decrypted secrets are back.
    for (id, key, secret) in [
        (&ids[0], "password", OS_PASSWORD),
        (&ids[1], "applicationCredentialSecret", APP_SECRET),
        (&ids[2], "bearer_token", K8S_TOKEN),
        (&ids[3], "password", HELM_PASSWORD),
    ] {
        let entry = info(json!({"vimId": id.as_str(), "vimType": ""}));
        let resolved = reg.resolve("vim1", &entry, &no_project()).await.unwrap();
        assert_eq!(resolved.access_str(key), Some(secret));
        assert_eq!(resolved.vim_id(), Some(id.as_str()));
        tracing::debug!(?resolved, "resolved for the test");
    }

    let file = db_bytes(&db.path);
    let log_text = logs();
    assert!(
        log_text.contains("VIM registered"),
        "the capture works: {log_text}"
    );
    for secret in SECRETS {
        assert!(!contains(&file, secret), "{secret} is in the database file");
        assert!(!log_text.contains(secret), "{secret} is in the logs");
        assert!(!shown.contains(secret), "{secret} is in the listing");
    }
    // The public members are stored (so the grep above would have found plain text).
    assert!(contains(&file, "keystone.example"));
}

#[tokio::test]
async fn resolve_reference_inline_unknown_and_mismatch() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let mut k = kubernetes();
    k.vim_id = Some(VimId::new("cluster-1"));
    let view = reg.create("c1", &k, None).await.unwrap();
    assert_eq!(view.id.as_str(), "cluster-1");

    // A reference may refine extra and interfaceInfo.
    let entry = info(json!({"vimId": "cluster-1", "vimType": KUBERNETES,
                            "extra": {"dryRun": true}}));
    let r = reg.resolve("k", &entry, &no_project()).await.unwrap();
    assert_eq!(r.connection_id, "k");
    assert_eq!(r.access_str("bearer_token"), Some(K8S_TOKEN));
    assert_eq!(r.interface_str("endpoint"), Some("https://10.0.0.1:6443"));
    assert_eq!(r.extra().unwrap()["dryRun"], json!(true));
    assert!(!format!("{r:?}").contains(K8S_TOKEN));

    // An empty accessInfo is a reference too.
    let empty = info(json!({"vimId": "cluster-1", "vimType": KUBERNETES, "accessInfo": {}}));
    let r = reg.resolve("k", &empty, &no_project()).await.unwrap();
    assert_eq!(r.access_str("bearer_token"), Some(K8S_TOKEN));

    // Inline access info is used as given, even with a vimId.
    let inline = info(json!({"vimId": "cluster-1", "vimType": "custom.TYPE",
                             "accessInfo": {"anything": "goes"}}));
    let r = reg.resolve("x", &inline, &no_project()).await.unwrap();
    assert_eq!(r.connection_info(), &inline);

    let unknown = info(json!({"vimId": "nope", "vimType": KUBERNETES}));
    let e = reg
        .resolve("vim9", &unknown, &no_project())
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 422);
    assert_eq!(
        e.to_string(),
        "/vimConnectionInfo/vim9: no VIM `nope` is registered; register it first or give its accessInfo inline"
    );

    let mismatch = info(json!({"vimId": "cluster-1", "vimType": OPENSTACK}));
    let e = reg
        .resolve("k", &mismatch, &no_project())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, LcmError::InvalidRequest { pointer, .. } if pointer == "/vimConnectionInfo/k/vimType"),
        "{e:?}"
    );

    // A duplicate vimId is a conflict, an invalid one names the field.
    let e = reg.create("again", &k, None).await.unwrap_err();
    assert_eq!(e.kind().status(), 409, "{e}");
    let mut bad = openstack();
    bad.access_info.as_mut().unwrap().remove("password");
    let e = reg.create("bad", &bad, None).await.unwrap_err();
    assert!(
        e.to_string().starts_with("/accessInfo/password: missing"),
        "{e}"
    );
    assert_eq!(e.kind().status(), 400);
    let mut blank = kubernetes();
    blank.vim_id = Some(VimId::new(" "));
    let e = reg.create("blank", &blank, None).await.unwrap_err();
    assert!(
        e.to_string().starts_with("/vimId: must not be empty"),
        "{e}"
    );
    assert_eq!(reg.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_wrong_key_gives_a_clear_error() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let id = reg.create("os", &openstack(), None).await.unwrap().id;

    // The key file was replaced: the VIM is still listed, but its secrets do not open.
    let dir = tempfile::tempdir().unwrap();
    let other = Arc::new(Keyring::generate_key_file(dir.path().join("keys")).unwrap());
    let reg2 = VimRegistry::new(db.store.clone(), other, all_vim_kinds());
    assert_eq!(reg2.show(&id).await.unwrap().name, "os");
    let entry = info(json!({"vimId": id.as_str(), "vimType": OPENSTACK}));
    let e = reg2
        .resolve("vim1", &entry, &no_project())
        .await
        .unwrap_err();
    assert_eq!(e.kind().status(), 500);
    let msg = e.to_string();
    assert_eq!(
        msg,
        format!(
            "cannot decrypt the secrets of VIM {id}: none of the 1 configured encryption key(s) opens it; \
             the key file is not the one it was encrypted with, or the stored value is corrupt"
        )
    );
    let upd = VimUpdate {
        name: Some("renamed".into()),
        ..Default::default()
    };
    assert!(matches!(
        reg2.update(&id, &upd, None).await.unwrap_err(),
        LcmError::Decrypt { .. }
    ));
}

#[tokio::test]
async fn update_reencrypts_with_the_newest_key_and_validates() {
    let db = sqlite().await;
    let k1 = Keyring::generate_key();
    let k2 = Keyring::generate_key();
    let reg1 = VimRegistry::new(db.store.clone(), ring(&[&k1]), all_vim_kinds());
    let id = reg1.create("os", &openstack(), None).await.unwrap().id;
    let (before, _) = db.store.get_vim(&id).await.unwrap().unwrap();

    // Rotation: k2 is now the newest key.
    let rotated = ring(&[&k2, &k1]);
    let reg = VimRegistry::new(db.store.clone(), rotated.clone(), all_vim_kinds());
    let patch: VimUpdate = serde_json::from_value(json!({
        "name": "os-renamed",
        "accessInfo": {"password": "new-Pa55", "region": null}
    }))
    .unwrap();
    assert!(!format!("{patch:?}").contains("new-Pa55"));
    let view = reg.update(&id, &patch, Some(Version(1))).await.unwrap();
    assert_eq!(view.name, "os-renamed");
    assert_eq!(view.version, 2);
    assert_eq!(
        view.access_info.as_ref().unwrap()["password"],
        json!(REDACTED)
    );
    assert!(!view.access_info.as_ref().unwrap().contains_key("region"));

    let (after, _) = db.store.get_vim(&id).await.unwrap().unwrap();
    assert_ne!(before.secret, after.secret);
    assert!(rotated.is_current(&after.secret));
    assert!(
        Keyring::from_key_list(&k1)
            .unwrap()
            .decrypt(&after.secret, "t")
            .is_err()
    );
    assert!(!contains(&db_bytes(&db.path), "new-Pa55"));
    let entry = info(json!({"vimId": id.as_str(), "vimType": OPENSTACK}));
    let r = reg.resolve("v", &entry, &no_project()).await.unwrap();
    assert_eq!(r.access_str("password"), Some("new-Pa55"));
    assert_eq!(r.access_str("region"), None);

    // Sending back what show returned ("***") keeps the password.
    let echo_back: VimUpdate = serde_json::from_value(json!({
        "accessInfo": view.access_info.clone().unwrap()
    }))
    .unwrap();
    reg.update(&id, &echo_back, None).await.unwrap();
    let r = reg.resolve("v", &entry, &no_project()).await.unwrap();
    assert_eq!(r.access_str("password"), Some("new-Pa55"));

    // A stale version and an invalid result are refused; nothing changes.
    let e = reg.update(&id, &patch, Some(Version(1))).await.unwrap_err();
    assert_eq!(e.kind().status(), 409);
    let invalid: VimUpdate =
        serde_json::from_value(json!({"accessInfo": {"userDomain": null}})).unwrap();
    let e = reg.update(&id, &invalid, None).await.unwrap_err();
    assert!(e.to_string().starts_with("/accessInfo/userDomain"), "{e}");
    assert_eq!(reg.show(&id).await.unwrap().version, 3);

    // rotate_secrets moves the remaining old-key blobs.
    let other = reg1.create("k8s", &kubernetes(), None).await.unwrap().id;
    assert_eq!(reg.rotate_secrets().await.unwrap(), 1);
    let (k8s, _) = db.store.get_vim(&other).await.unwrap().unwrap();
    assert!(rotated.is_current(&k8s.secret));
    assert_eq!(reg.rotate_secrets().await.unwrap(), 0);
}

/// An instance that belongs to no project (none is stored under this id).
fn no_project() -> VnfInstanceId {
    VnfInstanceId::new("inst-of-no-project")
}

#[tokio::test]
async fn an_instance_resolves_only_the_vims_of_its_project() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let demo_vim = reg
        .create_in("demo", &openstack(), Some("demo"), false)
        .await
        .unwrap()
        .id;
    let other_vim = reg
        .create_in("other", &openstack(), Some("other"), false)
        .await
        .unwrap()
        .id;
    let shared_vim = reg
        .create_in("old", &openstack(), None, false)
        .await
        .unwrap()
        .id;
    for (id, project) in [("inst-demo", Some("demo")), ("inst-admin", None)] {
        db.store
            .create_instance_in(&instance(id, json!({})), project, &[])
            .await
            .unwrap();
    }
    let entry = |id: &VimId| info(json!({"vimId": id.as_str(), "vimType": OPENSTACK}));
    let demo = VnfInstanceId::new("inst-demo");
    let r = reg.resolve("vim1", &entry(&demo_vim), &demo).await.unwrap();
    assert_eq!(r.access_str("password"), Some(OS_PASSWORD));
    // Another project's VIM, and one of no project, answer exactly as an unregistered one.
    let unknown = |id: &VimId| {
        format!(
            "/vimConnectionInfo/vim1: no VIM `{id}` is registered; register it first or give its accessInfo inline"
        )
    };
    for id in [&other_vim, &shared_vim] {
        let e = reg.resolve("vim1", &entry(id), &demo).await.unwrap_err();
        assert!(matches!(e, LcmError::UnknownVim { .. }), "{e:?}");
        assert_eq!(e.kind().status(), 422);
        assert_eq!(e.to_string(), unknown(id));
    }
    // An instance of no project (reached only by callers that see every project) uses any.
    let admin = VnfInstanceId::new("inst-admin");
    for id in [&demo_vim, &other_vim, &shared_vim] {
        reg.resolve("vim1", &entry(id), &admin).await.unwrap();
    }
}

#[tokio::test]
async fn delete_is_refused_while_instances_use_the_vim() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let id = reg.create("os", &openstack(), None).await.unwrap().id;
    for i in ["inst-a", "inst-b"] {
        let inst = instance(
            i,
            json!({"vim1": {"vimId": id.as_str(), "vimType": OPENSTACK}}),
        );
        db.store.create_instance(&inst, &[]).await.unwrap();
    }
    let e = reg.delete(&id).await.unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert_eq!(
        e.to_string(),
        format!(
            "VIM {id} is still used by VNF instance(s) inst-a, inst-b; terminate them or change their vimConnectionInfo first"
        )
    );
    for i in ["inst-a", "inst-b"] {
        let iid = VnfInstanceId::new(i);
        let (_, v) = db.store.get_instance(&iid).await.unwrap().unwrap();
        db.store.delete_instance(&iid, v, &[]).await.unwrap();
    }
    reg.delete(&id).await.unwrap();
    let e = reg.show(&id).await.unwrap_err();
    assert_eq!(e.kind().status(), 404);
    assert_eq!(e.to_string(), format!("VIM {id} not found"));
}

/// A shared VIM used by instances of its own project and of others: its project sees only
/// its own instances among the users (show, list, a change's answer) and a refused deletion
/// counts the others without naming them; a caller seeing every project sees them all.
#[tokio::test]
async fn a_project_sees_only_its_own_instances_among_a_shared_vims_users() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let id = reg
        .create_in("lab", &openstack(), Some("demo"), true)
        .await
        .unwrap()
        .id;
    let uses = json!({"vim1": {"vimId": id.as_str(), "vimType": OPENSTACK}});
    for (i, project) in [
        ("inst-demo", Some("demo")),
        ("inst-other-1", Some("other")),
        ("inst-other-2", Some("other")),
        ("inst-admin", None),
    ] {
        db.store
            .create_instance_in(&instance(i, uses.clone()), project, &[])
            .await
            .unwrap();
    }
    let demo = ProjectScope::Project("demo".into());
    let ids = |v: &[VnfInstanceId]| v.iter().map(|i| i.to_string()).collect::<Vec<_>>();
    assert_eq!(
        ids(&reg.show_in(&id, &demo).await.unwrap().used_by_instances),
        ["inst-demo"]
    );
    let listed = reg.list_in(&demo).await.unwrap();
    assert_eq!(ids(&listed[0].used_by_instances), ["inst-demo"]);
    let changed = reg
        .update_in(
            &id,
            &VimUpdate {
                name: Some("lab-2".into()),
                ..Default::default()
            },
            None,
            &demo,
        )
        .await
        .unwrap();
    assert_eq!(ids(&changed.used_by_instances), ["inst-demo"]);
    let e = reg.delete_in(&id, &demo).await.unwrap_err();
    assert_eq!(e.kind().status(), 409);
    assert_eq!(
        e.to_string(),
        format!(
            "VIM {id} is still used by VNF instance(s) inst-demo, 3 of other projects; terminate them or change their vimConnectionInfo first"
        )
    );
    // Seen from another project, the shared VIM shows no users at all.
    let other = ProjectScope::Project("other".into());
    assert!(
        reg.show_in(&id, &other)
            .await
            .unwrap()
            .used_by_instances
            .is_empty()
    );
    // A caller seeing every project sees them all.
    assert_eq!(
        ids(&reg
            .show_in(&id, &ProjectScope::All)
            .await
            .unwrap()
            .used_by_instances),
        ["inst-admin", "inst-demo", "inst-other-1", "inst-other-2"]
    );
}

#[tokio::test]
async fn hooks_register_and_deregister_vims_marked_with_their_creator() {
    let db = sqlite().await;
    let reg = VimRegistry::new(
        db.store.clone(),
        ring(&[&Keyring::generate_key()]),
        all_vim_kinds(),
    );
    let creator = VnfInstanceId::new("inst-1");
    let registration = VimRegistration {
        name: "cluster-on-vms".into(),
        connection_id: Some("k8s".into()),
        info: kubernetes(),
    };
    let entry = reg.register(&registration, &creator).await.unwrap();
    assert!(
        entry.access_info.is_none(),
        "the reference carries no secrets"
    );
    assert_eq!(entry.vim_type, KUBERNETES);
    let created = reg.created_by(&creator).await.unwrap();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].created_by_instance, Some(creator.clone()));
    assert_eq!(Some(&created[0].id), entry.vim_id.as_ref());

    let r = reg.resolve("k8s", &entry, &no_project()).await.unwrap();
    assert_eq!(r.access_str("bearer_token"), Some(K8S_TOKEN));

    let vim_id = entry.vim_id.clone().unwrap();
    reg.deregister(&vim_id).await.unwrap();
    assert!(reg.created_by(&creator).await.unwrap().is_empty());
    assert_eq!(
        reg.deregister(&vim_id).await.unwrap_err().kind().status(),
        404
    );
}

/// The VIM kinds of the OpenStack and Kubernetes drivers.
fn all_vim_kinds() -> vnfm_driver_api::VimKinds {
    vnfm_driver_api::VimKinds::new()
        .with(std::sync::Arc::new(vnfm_infra_openstack::OpenStackVimKind))
        .with(std::sync::Arc::new(
            vnfm_infra_kubernetes::KubernetesVimKind,
        ))
}
