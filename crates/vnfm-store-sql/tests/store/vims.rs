//! VIMs and the index of the instances using each.

use super::*;

store_tests!(
    vims_and_the_index_of_instances_using_them,
    vim_index_follows_references_and_resources,
    a_stale_instance_update_leaves_the_vim_index_alone,
);

async fn vims_and_the_index_of_instances_using_them(db: &TestDb) {
    let s = db.store.as_ref();
    let vim = |id: &str, by: Option<&str>| VimRecord {
        id: VimId::new(id),
        name: format!("{id}-name"),
        vim_type: "ETSINFV.OPENSTACK_KEYSTONE.V_3".into(),
        public: json!({"endpoint": "http://keystone/v3", "project": "demo"}),
        secret: vec![1, 2, 3, 0, 255],
        created_by_instance: by.map(VnfInstanceId::new),
        project: Some("demo".into()),
        shared: false,
    };
    assert_eq!(s.create_vim(&vim("vim-a", None)).await.unwrap(), Version(1));
    s.create_vim(&vim("vim-b", Some("i-v1"))).await.unwrap();
    assert!(matches!(
        s.create_vim(&vim("vim-a", None)).await.unwrap_err(),
        StoreError::Conflict(Conflict::AlreadyExists { .. })
    ));
    let (got, v) = s.get_vim(&VimId::new("vim-a")).await.unwrap().unwrap();
    assert_eq!((got, v), (vim("vim-a", None), Version(1)));

    let mut changed = vim("vim-a", None);
    changed.secret = vec![9];
    assert_eq!(
        s.update_vim(&changed, Version(1)).await.unwrap(),
        Version(2)
    );
    assert!(matches!(
        s.update_vim(&changed, Version(1)).await.unwrap_err(),
        StoreError::VersionMismatch { .. }
    ));
    let (stored, _) = s.get_vim(&VimId::new("vim-a")).await.unwrap().unwrap();
    assert_eq!(stored.secret, vec![9]);
    // The project is the one the VIM was registered in, whatever an update carries.
    assert_eq!(stored.project.as_deref(), Some("demo"));
    let mut moved = stored.clone();
    moved.project = Some("other".into());
    s.update_vim(&moved, Version(2)).await.unwrap();
    let (stored, _) = s.get_vim(&VimId::new("vim-a")).await.unwrap().unwrap();
    assert_eq!(stored.project.as_deref(), Some("demo"));
    // Sharing is stored on create and replaced by an update, on every read path.
    assert!(!stored.shared);
    let mut shared = stored.clone();
    shared.shared = true;
    s.update_vim(&shared, Version(3)).await.unwrap();
    let (stored, _) = s.get_vim(&VimId::new("vim-a")).await.unwrap().unwrap();
    assert!(stored.shared);
    assert!(
        s.list_vims()
            .await
            .unwrap()
            .iter()
            .any(|(v, _)| v.id.as_str() == "vim-a" && v.shared)
    );
    let mut born_shared = vim("vim-s", None);
    born_shared.shared = true;
    s.create_vim(&born_shared).await.unwrap();
    assert_eq!(
        s.get_vim(&VimId::new("vim-s")).await.unwrap().unwrap().0,
        born_shared
    );
    s.delete_vim(&VimId::new("vim-s"), Version(1))
        .await
        .unwrap();
    assert_eq!(
        s.list_vims()
            .await
            .unwrap()
            .iter()
            .map(|(v, _)| v.id.0.as_str())
            .collect::<Vec<_>>(),
        vec!["vim-a", "vim-b"]
    );
    let by = s
        .vims_created_by(&VnfInstanceId::new("i-v1"))
        .await
        .unwrap();
    assert_eq!(by.len(), 1);
    assert_eq!(by[0].0.id.as_str(), "vim-b");
    // Every column (the secret is a blob) reads back as stored, on every read path.
    assert_eq!(
        by[0],
        s.get_vim(&VimId::new("vim-b")).await.unwrap().unwrap()
    );
    assert_eq!(by[0].0, vim("vim-b", Some("i-v1")));

    // The index follows create, update (also through record_step) and delete of instances.
    let i1 = instance("i-v1", "vnfd", None, &["vim-a", "vim-b", "vim-a"]);
    let i2 = instance("i-v2", "vnfd", None, &["vim-a"]);
    s.create_instance(&i1, &[]).await.unwrap();
    s.create_instance(&i2, &[]).await.unwrap();
    let using = |id: &'static str| async move {
        s.instances_using_vim(&VimId::new(id))
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(using("vim-a").await, vec!["i-v1", "i-v2"]);
    assert_eq!(using("vim-b").await, vec!["i-v1"]);
    match s
        .delete_vim(&VimId::new("vim-a"), Version(4))
        .await
        .unwrap_err()
    {
        StoreError::Conflict(Conflict::InUse { by, .. }) => assert_eq!(by, vec!["i-v1", "i-v2"]),
        other => panic!("{other:?}"),
    }

    let i1b = instance("i-v1", "vnfd", None, &["vim-b"]);
    s.update_instance(&i1b, Version(1)).await.unwrap();
    assert_eq!(using("vim-a").await, vec!["i-v2"]);

    let occ = op_occ("o-v2", "i-v2", S::Starting);
    s.start_operation(&occ, &lease("r", T0)).await.unwrap();
    s.record_step(&StepRecord {
        instance: Some((instance("i-v2", "vnfd", None, &[]), Version(1))),
        ..transition(&occ, S::Starting, S::Completed, Version(1), "r")
    })
    .await
    .unwrap();
    assert!(using("vim-a").await.is_empty());
    s.delete_instance(&VnfInstanceId::new("i-v1"), Version(2), &[])
        .await
        .unwrap();
    assert!(using("vim-b").await.is_empty());

    s.delete_vim(&VimId::new("vim-a"), Version(4))
        .await
        .unwrap();
    assert!(s.get_vim(&VimId::new("vim-a")).await.unwrap().is_none());
    assert!(matches!(
        s.delete_vim(&VimId::new("vim-a"), Version(4))
            .await
            .unwrap_err(),
        StoreError::NotFound { .. }
    ));
}

/// The instances using `vim`, as strings.
async fn users(s: &dyn Store, vim: &str) -> Vec<String> {
    s.instances_using_vim(&VimId::new(vim))
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.0)
        .collect()
}

async fn vim_index_follows_references_and_resources(db: &TestDb) {
    let s = db.store.as_ref();
    let vim = |id: &str, by: Option<&str>| VimRecord {
        id: VimId::new(id),
        name: id.into(),
        vim_type: "ETSINFV.KUBERNETES.V_1".into(),
        public: json!({}),
        secret: vec![1],
        created_by_instance: by.map(VnfInstanceId::new),
        project: None,
        shared: false,
    };
    for (id, by) in [
        ("k8s-a1", Some("i-a")),
        ("k8s-a2", Some("i-a")),
        ("k8s-c", Some("i-c")),
        ("shared", None),
    ] {
        s.create_vim(&vim(id, by)).await.unwrap();
    }
    // The creator uses its own VIM: that does not make it its own dependent.
    s.create_instance(&instance("i-a", "vnfd", Some("vnf-a"), &["k8s-a1"]), &[])
        .await
        .unwrap();
    s.create_instance(
        &instance("i-b", "vnfd", Some("cnf-b"), &["k8s-a1", "shared"]),
        &[],
    )
    .await
    .unwrap();
    // i-d has no connection entry for its resource's vimConnectionId, which names the VIM.
    let mut d = serde_json::to_value(instance("i-d", "vnfd", None, &["shared"])).unwrap();
    d["instantiationState"] = json!("INSTANTIATED");
    d["instantiatedVnfInfo"] = json!({
        "flavourId": "simple", "vnfState": "STARTED",
        "vnfcResourceInfo": [
            {"id": "c1", "vduId": "VDU1", "computeResource": {"resourceId": "pod-1", "vimConnectionId": "k8s-a2"}},
            {"id": "c2", "vduId": "VDU1", "computeResource": {"resourceId": "pod-2", "vimConnectionId": "vim0"}}
        ]
    });
    let d: vnfm_types::VnfInstance = serde_json::from_value(d).unwrap();
    s.create_instance(&d, &[]).await.unwrap();
    // i-e does not reference it yet, but the request of its STARTING occurrence does.
    s.create_instance(&instance("i-e", "vnfd", Some("cnf-e"), &[]), &[])
        .await
        .unwrap();
    let mut pending = op_occ("o-e", "i-e", S::Starting);
    pending.operation_params = Some(
        json!({"flavourId": "simple",
               "vimConnectionInfo": {"k8s": {"vimId": "k8s-a2", "vimType": "ETSINFV.KUBERNETES.V_1"},
                                     "gone": null}})
        .as_object()
        .unwrap()
        .clone(),
    );
    s.start_operation(&pending, &lease("r", T0)).await.unwrap();
    // A finished occurrence's request, an unregistered VIM and a VIM nobody created count
    // for nothing.
    s.create_instance(&instance("i-g", "vnfd", None, &["ghost"]), &[])
        .await
        .unwrap();
    let mut done = op_occ("o-g", "i-g", S::Starting);
    done.operation_params = Some(
        json!({"vimConnectionInfo": {"k": {"vimId": "k8s-a1", "vimType": "x"}}})
            .as_object()
            .unwrap()
            .clone(),
    );
    s.start_operation(&done, &lease("r", T0)).await.unwrap();
    s.record_step(&transition(
        &done,
        S::Starting,
        S::RolledBack,
        Version(1),
        "r",
    ))
    .await
    .unwrap();

    // References and resources count; a request (i-e's) does not, until its occurrence
    // writes the reference into the instance.
    assert_eq!(users(s, "k8s-a1").await, ["i-a", "i-b"]);
    assert!(users(s, "k8s-c").await.is_empty(), "nobody uses k8s-c");
    assert_eq!(
        s.vim_usage()
            .await
            .unwrap()
            .into_iter()
            .map(|(v, i)| (v.0, i.0))
            .collect::<Vec<_>>(),
        [
            ("k8s-a1", "i-a"),
            ("k8s-a1", "i-b"),
            ("k8s-a2", "i-d"),
            ("shared", "i-b"),
            ("shared", "i-d"),
        ]
        .map(|(v, i)| (v.to_string(), i.to_string()))
    );
    assert_eq!(
        s.instances_using_vim(&VimId::new("k8s-a2")).await.unwrap(),
        [VnfInstanceId::new("i-d")]
    );

    // The occurrence begins and writes the reference into its instance: no longer pending.
    s.record_step(&StepRecord {
        instance: Some((
            instance("i-e", "vnfd", Some("cnf-e"), &["k8s-a2"]),
            Version(1),
        )),
        ..transition(&pending, S::Starting, S::Processing, Version(1), "r")
    })
    .await
    .unwrap();
    // i-b drops its reference; i-d's resource is gone.
    s.update_instance(
        &instance("i-b", "vnfd", Some("cnf-b"), &["shared"]),
        Version(1),
    )
    .await
    .unwrap();
    s.update_instance(&instance("i-d", "vnfd", None, &["shared"]), Version(1))
        .await
        .unwrap();
    assert_eq!(users(s, "k8s-a1").await, ["i-a"]);
    assert_eq!(users(s, "k8s-a2").await, ["i-e"]);
    s.record_step(&StepRecord {
        instance: Some((instance("i-e", "vnfd", Some("cnf-e"), &[]), Version(2))),
        ..transition(
            &in_state(&pending, S::Processing),
            S::Processing,
            S::RolledBack,
            Version(2),
            "r",
        )
    })
    .await
    .unwrap();
    assert!(users(s, "k8s-a2").await.is_empty());
}

/// An update refused as stale changes neither the document nor the index of the VIMs the
/// instance uses; a current one adds and removes entries.
async fn a_stale_instance_update_leaves_the_vim_index_alone(db: &TestDb) {
    let s = db.store.as_ref();
    s.create_instance(&instance("i-stale", "vnfd", None, &["vim-1"]), &[])
        .await
        .unwrap();
    s.update_instance(
        &instance("i-stale", "vnfd", None, &["vim-1", "vim-2"]),
        Version(1),
    )
    .await
    .unwrap();
    assert_eq!(users(s, "vim-2").await, vec!["i-stale"]);

    let stale = instance("i-stale", "vnfd", None, &["vim-3"]);
    let err = s.update_instance(&stale, Version(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::VersionMismatch { .. }), "{err:?}");
    assert_eq!(users(s, "vim-1").await, vec!["i-stale"]);
    assert_eq!(users(s, "vim-2").await, vec!["i-stale"]);
    assert!(users(s, "vim-3").await.is_empty());

    s.update_instance(&stale, Version(2)).await.unwrap();
    assert!(users(s, "vim-1").await.is_empty());
    assert!(users(s, "vim-2").await.is_empty());
    assert_eq!(users(s, "vim-3").await, vec!["i-stale"]);
}
