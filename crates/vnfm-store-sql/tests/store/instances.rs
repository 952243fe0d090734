//! VNF instances: documents, compare-and-swap updates, filtered pages and the lazy stream.

use super::*;

store_tests!(
    instance_crud_round_trips_exact_json,
    instance_updates_are_compare_and_swap,
    list_instances_filters_and_pages,
    stream_instances_fetches_lazily,
);

async fn instance_crud_round_trips_exact_json(db: &TestDb) {
    let s = db.store.as_ref();
    let inst = instance("i-1", "vnfd-a", Some("first"), &["vim-1"]);
    let original_json = serde_json::to_string(&inst).unwrap();
    assert_eq!(s.create_instance(&inst, &[]).await.unwrap(), Version(1));

    let (got, version) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(version, Version(1));
    assert_eq!(got, inst);
    // Member order of free-form maps (metadata) and non-ASCII text survive byte for byte.
    assert_eq!(serde_json::to_string(&got).unwrap(), original_json);

    let dup = s.create_instance(&inst, &[]).await.unwrap_err();
    assert!(
        matches!(dup, StoreError::Conflict(Conflict::AlreadyExists { .. })),
        "{dup:?}"
    );
    assert!(
        s.get_instance(&VnfInstanceId::new("nope"))
            .await
            .unwrap()
            .is_none()
    );

    // Creation notifications are enqueued with the instance.
    let other = instance("i-2", "vnfd-a", None, &[]);
    s.create_instance(&other, &[note("sub-1", 1, T0)])
        .await
        .unwrap();
    let rows = outbox_all(s).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].payload["n"], json!(1));

    // Deletion: stale version refused, current accepted, notification enqueued.
    let err = s
        .delete_instance(&inst.id, Version(7), &[])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::VersionMismatch {
                found: Version(1),
                ..
            }
        ),
        "{err:?}"
    );
    s.delete_instance(&inst.id, Version(1), &[note("sub-1", 2, T0)])
        .await
        .unwrap();
    assert!(s.get_instance(&inst.id).await.unwrap().is_none());
    let err = s
        .delete_instance(&inst.id, Version(1), &[])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    assert!(
        outbox_all(s)
            .await
            .iter()
            .any(|r| r.payload["n"] == json!(2))
    );
}

async fn instance_updates_are_compare_and_swap(db: &TestDb) {
    let s = db.store.as_ref();
    let mut inst = instance("i-cas", "vnfd-a", Some("before"), &[]);
    s.create_instance(&inst, &[]).await.unwrap();

    inst.vnf_instance_name = Some("after".into());
    inst.instantiation_state = InstantiationState::Instantiated;
    assert_eq!(
        s.update_instance(&inst, Version(1)).await.unwrap(),
        Version(2)
    );

    // A writer that read version 1 loses and changes nothing.
    let mut stale = inst.clone();
    stale.vnf_instance_name = Some("stale".into());
    let err = s.update_instance(&stale, Version(1)).await.unwrap_err();
    match &err {
        StoreError::VersionMismatch {
            expected, found, ..
        } => {
            assert_eq!((*expected, *found), (Version(1), Version(2)));
        }
        other => panic!("{other:?}"),
    }
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!(
        (got.vnf_instance_name.as_deref(), v),
        (Some("after"), Version(2))
    );

    // The indexed columns follow the document.
    let page = s
        .list_instances(&InstanceQuery {
            instantiation_state: Some(InstantiationState::Instantiated),
            name: Some(NameFilter::Exact("after".into())),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);

    // Each indexed column follows on its own (the store writes only the changed ones), and an
    // update that changes none of them keeps every entry.
    let found = |q: InstanceQuery| async move {
        s.list_instances(&q)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|i| i.id.0)
            .collect::<Vec<_>>()
    };
    let by_vnfd = |v: &str| InstanceQuery {
        vnfd_id: Some(VnfdId::new(v)),
        ..Default::default()
    };
    let by_provider = |v: &str| InstanceQuery {
        vnf_provider: Some(v.into()),
        ..Default::default()
    };
    let by_product = |v: &str| InstanceQuery {
        vnf_product_name: Some(v.into()),
        ..Default::default()
    };
    let by_name = |v: &str| InstanceQuery {
        name: Some(NameFilter::Exact(v.into())),
        ..Default::default()
    };
    let mut version = Version(2);
    let mut update = |inst: VnfInstance| {
        version = Version(version.0 + 1);
        let expected = Version(version.0 - 1);
        async move {
            assert_eq!(
                s.update_instance(&inst, expected).await.unwrap(),
                Version(expected.0 + 1)
            );
        }
    };
    let id = vec![inst.id.0.clone()];
    inst.vnfd_id = VnfdId::new("vnfd-b");
    update(inst.clone()).await;
    assert_eq!(found(by_vnfd("vnfd-b")).await, id);
    assert!(found(by_vnfd("vnfd-a")).await.is_empty());
    let provider = format!("{}-2", inst.vnf_provider);
    inst.vnf_provider = provider.clone();
    update(inst.clone()).await;
    assert_eq!(found(by_provider(&provider)).await, id);
    let product = format!("{}-2", inst.vnf_product_name);
    inst.vnf_product_name = product.clone();
    update(inst.clone()).await;
    assert_eq!(found(by_product(&product)).await, id);
    inst.vnf_instance_name = None;
    update(inst.clone()).await;
    assert!(found(by_name("after")).await.is_empty());
    inst.vnf_instance_name = Some("again".into());
    inst.vnf_instance_description = Some("only the document changes next".into());
    update(inst.clone()).await;
    inst.vnf_instance_description = Some("the document alone".into());
    update(inst.clone()).await;
    let all = InstanceQuery {
        vnfd_id: Some(VnfdId::new("vnfd-b")),
        vnf_provider: Some(provider.clone()),
        vnf_product_name: Some(product.clone()),
        instantiation_state: Some(InstantiationState::Instantiated),
        name: Some(NameFilter::Exact("again".into())),
        ..Default::default()
    };
    assert_eq!(found(all).await, id);
    let (got, v) = s.get_instance(&inst.id).await.unwrap().unwrap();
    assert_eq!((got, v), (inst.clone(), Version(8)));

    let missing = instance("i-missing", "vnfd-a", None, &[]);
    let err = s.update_instance(&missing, Version(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}

/// A document without the members a list leaves out by default.
fn default_view(mut doc: serde_json::Value) -> serde_json::Value {
    for m in vnfm_sol013::defaults::v2::VNF_INSTANCE_EXCLUDED {
        doc.as_object_mut().unwrap().remove(*m);
    }
    doc
}

async fn list_instances_filters_and_pages(db: &TestDb) {
    let s = db.store.as_ref();
    for i in 0..250 {
        let vnfd = if i % 5 == 0 { "vnfd-x" } else { "vnfd-y" };
        let mut inst = instance(
            &format!("inst-{i:04}"),
            vnfd,
            Some(&format!("name-{}", i % 10)),
            &[],
        );
        if i % 2 == 0 {
            inst.vnf_provider = "Other".into();
        }
        if i % 3 == 0 {
            inst.vnf_product_name = "Product3".into();
        }
        if i % 7 == 0 {
            inst.instantiation_state = InstantiationState::Instantiated;
        }
        // Text that JSON escapes: a quote, a backslash, a line break.
        inst.vnf_instance_description = Some(format!("say \"hi\\{}\"\n", i % 4));
        s.create_instance(&inst, &[]).await.unwrap();
    }

    async fn all(s: &dyn Store, mut q: InstanceQuery) -> Vec<String> {
        let mut ids = Vec::new();
        let mut pages = 0;
        loop {
            let page = s.list_instances(&q).await.unwrap();
            pages += 1;
            assert!(page.items.len() <= q.limit.unwrap_or(100) as usize);
            ids.extend(page.items.iter().map(|i| i.id.0.clone()));
            // The same page as documents: the same items, as JSON, and the same cursor.
            let docs = s.list_instance_documents(&q).await.unwrap();
            assert_eq!(docs.next, page.next);
            let typed: Vec<serde_json::Value> = page
                .items
                .iter()
                .map(|i| serde_json::to_value(i).unwrap())
                .collect();
            assert_eq!(docs.items, typed);
            // The same page as default views: the documents without the default exclusions.
            let views = s.list_instance_default_views(&q).await.unwrap();
            assert_eq!(views.next, page.next);
            let views: Vec<serde_json::Value> = views
                .items
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            assert_eq!(
                views,
                typed.into_iter().map(default_view).collect::<Vec<_>>()
            );
            match page.next {
                Some(next) => q.after = Some(next),
                None => break,
            }
            assert!(pages < 1000, "pagination does not terminate");
        }
        ids
    }
    let expect = |pred: &dyn Fn(usize) -> bool| -> Vec<String> {
        (0..250)
            .filter(|i| pred(*i))
            .map(|i| format!("inst-{i:04}"))
            .collect()
    };
    let q = |f: fn(&mut InstanceQuery)| {
        let mut q = InstanceQuery {
            limit: Some(7),
            ..Default::default()
        };
        f(&mut q);
        q
    };

    assert_eq!(all(s, q(|_| {})).await, expect(&|_| true));
    assert_eq!(
        all(s, q(|q| q.vnfd_id = Some(VnfdId::new("vnfd-x")))).await,
        expect(&|i| i % 5 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.vnf_provider = Some("Other".into()))).await,
        expect(&|i| i % 2 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.vnf_product_name = Some("Product3".into()))).await,
        expect(&|i| i % 3 == 0)
    );
    assert_eq!(
        all(
            s,
            q(|q| q.instantiation_state = Some(InstantiationState::Instantiated))
        )
        .await,
        expect(&|i| i % 7 == 0)
    );
    assert_eq!(
        all(s, q(|q| q.name = Some(NameFilter::Exact("name-3".into())))).await,
        expect(&|i| i % 10 == 3)
    );
    // Contains is case-sensitive and matches inside the name.
    assert_eq!(
        all(s, q(|q| q.name = Some(NameFilter::Contains("e-4".into())))).await,
        expect(&|i| i % 10 == 4)
    );
    assert!(
        all(s, q(|q| q.name = Some(NameFilter::Contains("NAME".into()))))
            .await
            .is_empty()
    );
    // Combined filters all apply.
    assert_eq!(
        all(
            s,
            q(|q| {
                q.vnfd_id = Some(VnfdId::new("vnfd-x"));
                q.vnf_provider = Some("Other".into());
            })
        )
        .await,
        expect(&|i| i % 10 == 0)
    );
    assert_eq!(
        all(
            s,
            q(|q| {
                q.ids = Some(vec![
                    VnfInstanceId::new("inst-0003"),
                    VnfInstanceId::new("inst-0100"),
                    VnfInstanceId::new("absent"),
                ])
            })
        )
        .await,
        vec!["inst-0003".to_string(), "inst-0100".to_string()]
    );
    assert!(all(s, q(|q| q.ids = Some(vec![]))).await.is_empty());
    // Strings the document holds: whole values (escaped as the document is), member names,
    // parts of values; one of each entry's, every entry.
    let strings = |any_of: &[&str], whole: bool| vnfm_sol013::RequiredStrings {
        any_of: any_of.iter().map(|s| (*s).to_owned()).collect(),
        whole,
    };
    let with = |required: Vec<vnfm_sol013::RequiredStrings>| {
        let mut q = q(|_| {});
        q.document_strings = required;
        q
    };
    assert_eq!(
        all(s, with(vec![strings(&["say \"hi\\1\"\n"], true)])).await,
        expect(&|i| i % 4 == 1)
    );
    assert_eq!(
        all(s, with(vec![strings(&["hi\\2", "hi\\3"], false)])).await,
        expect(&|i| i % 4 >= 2)
    );
    // A part is not a whole value; a member name is one.
    assert!(all(s, with(vec![strings(&["hi"], true)])).await.is_empty());
    assert_eq!(
        all(s, with(vec![strings(&["ünïcødé"], true)])).await.len(),
        250
    );
    assert_eq!(
        all(
            s,
            with(vec![
                strings(&["\\3\""], false),
                strings(&["Product3"], true)
            ])
        )
        .await,
        expect(&|i| i % 4 == 3 && i % 3 == 0)
    );
    assert!(all(s, with(vec![strings(&[], true)])).await.is_empty());
    // A bounded search ends its page at the last row it searched (of those the other
    // conditions leave), and paging on from there finds every match.
    let ids = |page: &vnfm_store::Page<VnfInstance>| -> Vec<String> {
        page.items.iter().map(|i| i.id.0.clone()).collect()
    };
    let mut bounded = with(vec![strings(&["say \"hi\\1\"\n"], true)]);
    bounded.scan_limit = Some(10);
    let first = s.list_instances(&bounded).await.unwrap();
    assert_eq!(ids(&first), ["inst-0001", "inst-0005", "inst-0009"]);
    assert_eq!(first.next.as_deref(), Some("inst-0009"));
    assert_eq!(all(s, bounded.clone()).await, expect(&|i| i % 4 == 1));
    bounded.vnfd_id = Some(VnfdId::new("vnfd-x"));
    bounded.scan_limit = Some(3);
    let first = s.list_instances(&bounded).await.unwrap();
    assert_eq!(ids(&first), ["inst-0005"]);
    assert_eq!(first.next.as_deref(), Some("inst-0010"));
    assert_eq!(all(s, bounded).await, expect(&|i| i % 20 == 5));
    // `name_not` leaves out the name and, as SOL013 `neq`, instances without one.
    assert_eq!(
        all(s, q(|q| q.name_not = Some("name-3".into()))).await,
        expect(&|i| i % 10 != 3)
    );

    // Exact page boundary: 250 rows in pages of 125 give two pages and no third.
    let first = s
        .list_instances(&InstanceQuery {
            limit: Some(125),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(first.next.as_deref(), Some("inst-0124"));
    let second = s
        .list_instances(&InstanceQuery {
            limit: Some(125),
            after: first.next,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(second.items.len(), 125);
    assert_eq!(second.next, None);

    // A substring is matched literally: `%`, `_` and `\` are not wildcards or escapes.
    for (id, name) in [("w-1", "50%_off"), ("w-2", "50 off"), ("w-3", "a\\b")] {
        s.create_instance(&instance(id, "vnfd-w", Some(name), &[]), &[])
            .await
            .unwrap();
    }
    let w = |part: &'static str| {
        let mut q = InstanceQuery {
            vnfd_id: Some(VnfdId::new("vnfd-w")),
            ..Default::default()
        };
        q.name = Some(NameFilter::Contains(part.into()));
        q
    };
    assert_eq!(all(s, w("%_")).await, ["w-1"]);
    assert_eq!(all(s, w("0_")).await, Vec::<String>::new());
    assert_eq!(all(s, w("\\")).await, ["w-3"]);
    assert_eq!(all(s, w("50")).await, ["w-1", "w-2"]);

    // An update rewrites the default view with the document.
    let (mut first, v) = s
        .get_instance(&VnfInstanceId::new("inst-0000"))
        .await
        .unwrap()
        .unwrap();
    first.vnf_instance_name = Some("renamed".into());
    first.metadata = Some(serde_json::from_value(serde_json::json!({"k": "v"})).unwrap());
    s.update_instance(&first, v).await.unwrap();
    let views = s
        .list_instance_default_views(&q(|q| q.name = Some(NameFilter::Exact("renamed".into()))))
        .await
        .unwrap();
    let view: serde_json::Value = serde_json::from_str(&views.items[0]).unwrap();
    assert_eq!(view["vnfInstanceName"], "renamed");
    assert!(view.get("metadata").is_none(), "{view}");
    assert_eq!(view, default_view(serde_json::to_value(&first).unwrap()));
}

async fn stream_instances_fetches_lazily(db: &TestDb) {
    let s = db.store.clone();
    let total = 10_000;
    // Batched creation through several tasks keeps the PostgreSQL run short.
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            while i < total {
                s.create_instance(&instance(&format!("s-{i:05}"), "vnfd", None, &[]), &[])
                    .await
                    .unwrap();
                i += 8;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }

    let mut stream = s.stream_instances(&InstanceQuery {
        limit: Some(100),
        ..Default::default()
    });
    let mut seen = Vec::with_capacity(total + 10);
    for _ in 0..150 {
        seen.push(stream.next().await.unwrap().unwrap().id.0);
    }
    // Rows created now after the cursor appear at the end; one sorting before the cursor
    // does not. A stream that had read everything up front would show neither.
    s.create_instance(&instance("s-99999", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    s.create_instance(&instance("s-00000a", "vnfd", None, &[]), &[])
        .await
        .unwrap();
    while let Some(item) = stream.next().await {
        seen.push(item.unwrap().id.0);
    }
    assert_eq!(seen.len(), total + 1);
    assert_eq!(seen.last().map(String::as_str), Some("s-99999"));
    assert!(!seen.iter().any(|id| id == "s-00000a"));
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "stream is not ordered"
    );

    // A filtered stream from a cursor.
    let filtered: Vec<String> = s
        .stream_instances(&InstanceQuery {
            ids: Some(
                (0..10)
                    .map(|i| VnfInstanceId::new(format!("s-0000{i}")))
                    .collect(),
            ),
            after: Some("s-00004".into()),
            limit: Some(2),
            ..Default::default()
        })
        .map(|r| r.unwrap().id.0)
        .collect()
        .await;
    assert_eq!(
        filtered,
        (5..10).map(|i| format!("s-0000{i}")).collect::<Vec<_>>()
    );
}
