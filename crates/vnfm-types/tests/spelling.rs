//! Enum values and attribute names are spelled as SOL003 spells them, and malformed requests
//! fail with serde errors that name the problem.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use vnfm_types::*;

/// Every variant serializes to `spelled` and reads back from it.
fn pin<T>(cases: &[(T, &str)])
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + Copy,
{
    for (value, spelled) in cases {
        assert_eq!(serde_json::to_value(value).unwrap(), json!(spelled));
        assert_eq!(serde_json::from_value::<T>(json!(spelled)).unwrap(), *value);
    }
}

#[test]
fn lcm_operation_types() {
    use LcmOperationType::*;
    pin(&[
        (Instantiate, "INSTANTIATE"),
        (Scale, "SCALE"),
        (ScaleToLevel, "SCALE_TO_LEVEL"),
        (ChangeFlavour, "CHANGE_FLAVOUR"),
        (Terminate, "TERMINATE"),
        (Heal, "HEAL"),
        (Operate, "OPERATE"),
        (ChangeExtConn, "CHANGE_EXT_CONN"),
        (ModifyInfo, "MODIFY_INFO"),
        (CreateSnapshot, "CREATE_SNAPSHOT"),
        (RevertToSnapshot, "REVERT_TO_SNAPSHOT"),
        (ChangeVnfpkg, "CHANGE_VNFPKG"),
    ]);
}

#[test]
fn lcm_operation_states() {
    use LcmOperationStateType::*;
    pin(&[
        (Starting, "STARTING"),
        (Processing, "PROCESSING"),
        (Completed, "COMPLETED"),
        (FailedTemp, "FAILED_TEMP"),
        (Failed, "FAILED"),
        (RollingBack, "ROLLING_BACK"),
        (RolledBack, "ROLLED_BACK"),
    ]);
    assert!(Completed.is_final() && Failed.is_final() && RolledBack.is_final());
    assert!(!FailedTemp.is_final() && !Processing.is_final());
}

#[test]
fn other_enums() {
    pin(&[
        (InstantiationState::NotInstantiated, "NOT_INSTANTIATED"),
        (InstantiationState::Instantiated, "INSTANTIATED"),
    ]);
    pin(&[
        (CancelModeType::Graceful, "GRACEFUL"),
        (CancelModeType::Forceful, "FORCEFUL"),
    ]);
    pin(&[
        (TerminationType::Graceful, "GRACEFUL"),
        (TerminationType::Forceful, "FORCEFUL"),
    ]);
    pin(&[
        (ScaleType::ScaleOut, "SCALE_OUT"),
        (ScaleType::ScaleIn, "SCALE_IN"),
    ]);
    pin(&[
        (VnfOperationalState::Started, "STARTED"),
        (VnfOperationalState::Stopped, "STOPPED"),
    ]);
    pin(&[
        (StopType::Graceful, "GRACEFUL"),
        (StopType::Forceful, "FORCEFUL"),
    ]);
    pin(&[
        (LayerProtocol::IpOverEthernet, "IP_OVER_ETHERNET"),
        (LayerProtocol::IpForVirtualCp, "IP_FOR_VIRTUAL_CP"),
    ]);
    pin(&[(IpAddressType::Ipv4, "IPV4"), (IpAddressType::Ipv6, "IPV6")]);
    pin(&[
        (ChangeType::Added, "ADDED"),
        (ChangeType::Removed, "REMOVED"),
        (ChangeType::Modified, "MODIFIED"),
        (ChangeType::Temporary, "TEMPORARY"),
        (ChangeType::LinkPortAdded, "LINK_PORT_ADDED"),
        (ChangeType::LinkPortRemoved, "LINK_PORT_REMOVED"),
    ]);
    pin(&[
        (CpInstanceType::VnfcCp, "VNFC_CP"),
        (CpInstanceType::ExtCp, "EXT_CP"),
    ]);
    pin(&[
        (AuthType::Basic, "BASIC"),
        (
            AuthType::Oauth2ClientCredentials,
            "OAUTH2_CLIENT_CREDENTIALS",
        ),
        (AuthType::TlsCert, "TLS_CERT"),
    ]);
    pin(&[
        (
            NotificationType::VnfLcmOperationOccurrenceNotification,
            "VnfLcmOperationOccurrenceNotification",
        ),
        (
            NotificationType::VnfIdentifierCreationNotification,
            "VnfIdentifierCreationNotification",
        ),
        (
            NotificationType::VnfIdentifierDeletionNotification,
            "VnfIdentifierDeletionNotification",
        ),
    ]);
    pin(&[
        (LcmOpOccNotificationStatus::Start, "START"),
        (LcmOpOccNotificationStatus::Result, "RESULT"),
    ]);
    pin(&[
        (LcmOpOccNotificationVerbosityType::Full, "FULL"),
        (LcmOpOccNotificationVerbosityType::Short, "SHORT"),
    ]);
}

#[test]
fn wrong_enum_spelling_is_rejected_with_the_accepted_values() {
    let err = serde_json::from_value::<LcmOperationStateType>(json!("FailedTemp"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown variant `FailedTemp`") && err.contains("FAILED_TEMP"),
        "{err}"
    );
}

#[test]
fn missing_required_attributes_are_named() {
    type Reader = fn(serde_json::Value) -> String;
    let cases: [(serde_json::Value, Reader, &str); 6] = [
        (
            json!({}),
            |v| err::<InstantiateVnfRequest>(v),
            "missing field `flavourId`",
        ),
        (
            json!({"type": "SCALE_IN"}),
            |v| err::<ScaleVnfRequest>(v),
            "missing field `aspectId`",
        ),
        (
            json!({}),
            |v| err::<TerminateVnfRequest>(v),
            "missing field `terminationType`",
        ),
        (
            json!({}),
            |v| err::<CreateVnfRequest>(v),
            "missing field `vnfdId`",
        ),
        (
            json!({"filter": {}}),
            |v| err::<LccnSubscriptionRequest>(v),
            "missing field `callbackUri`",
        ),
        (
            json!({"flavourId": "f", "extVirtualLinks": [{"id": "vl", "extCps": []}]}),
            |v| err::<InstantiateVnfRequest>(v),
            "missing field `resourceId`",
        ),
    ];
    for (value, read, expected) in cases {
        let msg = read(value);
        assert!(msg.contains(expected), "expected {expected:?} in {msg:?}");
    }
}

fn err<T: DeserializeOwned + std::fmt::Debug>(v: serde_json::Value) -> String {
    serde_json::from_value::<T>(v).unwrap_err().to_string()
}

#[test]
fn unknown_request_attributes_are_rejected() {
    let msg =
        err::<ScaleVnfRequest>(json!({"type": "SCALE_OUT", "aspectId": "a", "numberOfStep": 2}));
    assert!(msg.contains("unknown field `numberOfStep`"), "{msg}");
}

#[test]
fn subscription_response_never_carries_credentials() {
    let req: LccnSubscriptionRequest = serde_json::from_value(json!({
        "callbackUri": "https://nfvo.example/cb",
        "authentication": {
            "authType": ["BASIC", "OAUTH2_CLIENT_CREDENTIALS"],
            "paramsBasic": {"userName": "u", "password": "s3cret-basic"},
            "paramsOauth2ClientCredentials": {"clientId": "c", "clientPassword": "s3cret-oauth",
                "tokenEndpoint": "https://nfvo.example/token"}
        },
        "verbosity": "SHORT"
    }))
    .unwrap();
    // The request keeps them (they must be stored), but never prints them in Debug.
    let dbg = format!("{req:?}");
    assert!(!dbg.contains("s3cret"), "{dbg}");
    let sub = LccnSubscription::from_request(
        SubscriptionId::new("s1"),
        &req,
        "https://vnfm/subscriptions/s1",
    );
    let body = serde_json::to_string(&sub).unwrap();
    assert!(
        !body.contains("s3cret") && !body.contains("authentication"),
        "{body}"
    );
    assert!(body.contains("\"verbosity\":\"SHORT\""), "{body}");
    // A response that does carry `authentication` is tolerated on read but dropped.
    let mut v = serde_json::to_value(&sub).unwrap();
    v["authentication"] = json!({"authType": ["BASIC"], "paramsBasic": {"password": "x"}});
    let reread: LccnSubscription = serde_json::from_value(v).unwrap();
    assert!(
        !serde_json::to_string(&reread)
            .unwrap()
            .contains("authentication")
    );
}

#[test]
fn notifications_dispatch_on_notification_type() {
    let links = json!({"vnfInstance": {"href": "i"}, "subscription": {"href": "s"}});
    let created = json!({
        "id": "n1", "notificationType": "VnfIdentifierCreationNotification",
        "subscriptionId": "s1", "timeStamp": "2021-09-06T07:07:15Z",
        "vnfInstanceId": "i1", "_links": links
    });
    let n = LccnNotification::from_value(created.clone()).unwrap();
    assert_eq!(
        n.notification_type(),
        NotificationType::VnfIdentifierCreationNotification
    );
    assert_eq!(serde_json::to_value(&n).unwrap(), created);

    let occ = json!({
        "id": "n2", "notificationType": "VnfLcmOperationOccurrenceNotification",
        "subscriptionId": "s1", "timeStamp": "2021-09-06T07:07:15Z",
        "notificationStatus": "RESULT", "operationState": "FAILED_TEMP",
        "vnfInstanceId": "i1", "operation": "SCALE", "isAutomaticInvocation": true,
        "vnfLcmOpOccId": "o1",
        "error": {"status": 500, "detail": "heat stack failed"},
        "_links": {"vnfInstance": {"href": "i"}, "subscription": {"href": "s"},
                   "vnfLcmOpOcc": {"href": "o"}}
    });
    let n = LccnNotification::from_value(occ.clone()).unwrap();
    let LccnNotification::OperationOccurrence(inner) = &n else {
        panic!("{n:?}")
    };
    assert_eq!(inner.operation_state, LcmOperationStateType::FailedTemp);
    assert_eq!(serde_json::to_value(&n).unwrap(), occ);

    assert!(matches!(
        LccnNotification::from_value(json!({"id": "x"})),
        Err(Error::MissingNotificationType)
    ));
    let mut wrong = occ;
    wrong["notificationType"] = json!("VnfIdentifierDeletionNotification");
    wrong.as_object_mut().unwrap().remove("vnfInstanceId");
    assert!(LccnNotification::from_value(wrong).is_err());
}

#[test]
fn typed_operation_params_report_the_bad_attribute() {
    let occ: VnfLcmOpOcc = serde_json::from_value(json!({
        "id": "o", "operationState": "STARTING", "stateEnteredTime": "2021-09-06T07:07:15Z",
        "startTime": "2021-09-06T07:07:15Z", "vnfInstanceId": "i", "operation": "SCALE",
        "isAutomaticInvocation": false, "isCancelPending": false,
        "operationParams": {"type": "SCALE_UP", "aspectId": "a"},
        "_links": {"self": {"href": "s"}, "vnfInstance": {"href": "i"}}
    }))
    .unwrap();
    let msg = occ.typed_operation_params().unwrap_err().to_string();
    assert!(msg.contains("Scale") && msg.contains("SCALE_UP"), "{msg}");
}
