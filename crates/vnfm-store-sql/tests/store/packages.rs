//! VNF packages: records, streamed content and the notifications of their changes.

use super::*;

store_tests!(
    packages_round_trip_with_unique_vnfd_and_content,
    package_content_is_streamed_in_and_out_in_pieces,
    package_changes_enqueue_their_notifications_atomically,
);

/// Package content larger than one piece goes in from a reader and out to a writer, byte for
/// byte; a replacement drops every old piece; an empty content still reads back as uploaded.
async fn package_content_is_streamed_in_and_out_in_pieces(db: &TestDb) {
    let store = &db.store;
    store
        .create_package(&PackageRecord {
            id: "pkg-big".into(),
            vnfd_id: None,
            info: serde_json::json!({"id": "pkg-big"}),
            project: None,
        })
        .await
        .unwrap();
    let mut out = Vec::new();
    assert!(
        !store
            .copy_package_content_to("pkg-big", &mut out)
            .await
            .unwrap()
    );
    let missing = store
        .put_package_content_from("nope", &mut &b"x"[..])
        .await
        .unwrap_err();
    assert!(
        matches!(missing, StoreError::NotFound { .. }),
        "{missing:?}"
    );

    let chunk = vnfm_store::CONTENT_CHUNK_BYTES;
    let big: Vec<u8> = (0..2 * chunk + 12_345)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let stored = store
        .put_package_content_from("pkg-big", &mut big.as_slice())
        .await
        .unwrap();
    assert_eq!(stored, big.len() as u64);
    assert!(
        store
            .copy_package_content_to("pkg-big", &mut out)
            .await
            .unwrap()
    );
    assert!(out == big, "streamed content differs");
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(big.as_slice())
    );

    // Exactly one piece, then nothing: no stale piece of the bigger content remains.
    let exact = &big[..chunk];
    store
        .put_package_content_from("pkg-big", &mut &exact[..])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(exact)
    );
    store
        .put_package_content_from("pkg-big", &mut &b""[..])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_package_content("pkg-big")
            .await
            .unwrap()
            .as_deref(),
        Some(&b""[..])
    );
    // Deleting the package deletes its pieces.
    store
        .put_package_content_from("pkg-big", &mut big.as_slice())
        .await
        .unwrap();
    store
        .delete_package("pkg-big", Version::FIRST)
        .await
        .unwrap();
    assert_eq!(store.get_package_content("pkg-big").await.unwrap(), None);
}

async fn packages_round_trip_with_unique_vnfd_and_content(db: &TestDb) {
    let store = &db.store;
    let mut a = PackageRecord {
        id: "pkg-a".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-a", "onboardingState": "CREATED"}),
        project: None,
    };
    assert_eq!(store.create_package(&a).await.unwrap(), Version::FIRST);
    let again = store.create_package(&a).await.unwrap_err();
    assert!(
        matches!(&again, StoreError::Conflict(Conflict::AlreadyExists { kind: "VNF package", id }) if id == "pkg-a"),
        "{again:?}"
    );
    assert_eq!(store.get_package_content("pkg-a").await.unwrap(), None);
    let missing = store.put_package_content("nope", b"x").await.unwrap_err();
    assert!(
        matches!(missing, StoreError::NotFound { .. }),
        "{missing:?}"
    );

    // Content is stored byte for byte and replaced on a second upload.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    store.put_package_content("pkg-a", &bytes).await.unwrap();
    store
        .put_package_content("pkg-a", &bytes[..1000])
        .await
        .unwrap();
    assert_eq!(
        store.get_package_content("pkg-a").await.unwrap().as_deref(),
        Some(&bytes[..1000])
    );

    a.vnfd_id = Some("vnfd-1".into());
    a.info["onboardingState"] = "ONBOARDED".into();
    let v2 = store.update_package(&a, Version::FIRST).await.unwrap();
    assert_eq!(v2, Version(2));
    let stale = store.update_package(&a, Version::FIRST).await.unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    let (found, version) = store.package_by_vnfd("vnfd-1").await.unwrap().unwrap();
    assert_eq!((found.id.as_str(), version), ("pkg-a", v2));
    assert_eq!(found.info["onboardingState"], "ONBOARDED");

    // A second package with the same vnfdId is refused, naming the vnfdId.
    let mut b = PackageRecord {
        id: "pkg-b".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-b"}),
        project: None,
    };
    store.create_package(&b).await.unwrap();
    b.vnfd_id = Some("vnfd-1".into());
    let dup = store.update_package(&b, Version::FIRST).await.unwrap_err();
    assert!(
        matches!(&dup, StoreError::Conflict(Conflict::AlreadyExists { kind: "VNF package for vnfdId", id }) if id == "vnfd-1"),
        "{dup:?}"
    );

    let page = store
        .list_packages(&ProjectScope::All, None, 1)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, "pkg-a");
    let rest = store
        .list_packages(&ProjectScope::All, page.next.as_deref(), 1)
        .await
        .unwrap();
    assert_eq!(rest.items[0].id, "pkg-b");
    assert_eq!(rest.next, None);

    let stale = store
        .delete_package("pkg-a", Version::FIRST)
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    store.delete_package("pkg-a", v2).await.unwrap();
    assert_eq!(store.get_package("pkg-a").await.unwrap(), None);
    assert_eq!(store.get_package_content("pkg-a").await.unwrap(), None);
}

async fn package_changes_enqueue_their_notifications_atomically(db: &TestDb) {
    let s = db.store.as_ref();
    let mut p = PackageRecord {
        id: "pkg-n".into(),
        vnfd_id: None,
        info: serde_json::json!({"id": "pkg-n", "onboardingState": "CREATED"}),
        project: None,
    };
    s.create_package(&p).await.unwrap();
    let row = |n: i64| NewOutboxRow {
        ordering_key: "pkg-n".into(),
        ..note("sub-p", n, Timestamp(0))
    };
    p.vnfd_id = Some("vnfd-n".into());
    let v2 = s
        .update_package_and_notify(&p, Version::FIRST, &[row(1)])
        .await
        .unwrap();
    // A refused update enqueues nothing.
    let stale = s
        .update_package_and_notify(&p, Version::FIRST, &[row(99)])
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    let stale = s
        .delete_package_and_notify("pkg-n", Version::FIRST, &[row(98)])
        .await
        .unwrap_err();
    assert!(
        matches!(stale, StoreError::VersionMismatch { .. }),
        "{stale:?}"
    );
    s.delete_package_and_notify("pkg-n", v2, &[row(2)])
        .await
        .unwrap();
    assert_eq!(s.get_package("pkg-n").await.unwrap(), None);
    assert_eq!(numbers(&outbox_all(s).await), vec![1, 2]);
    // One queue: the package's notifications go out one at a time, in order.
    let first = s
        .outbox_due(T0, 10, "d", Timestamp(T0.0 + 1000))
        .await
        .unwrap();
    assert_eq!(numbers(&first), vec![1]);
}

// ----- Backend-specific -----
