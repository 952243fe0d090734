//! Tacker's `StandardUserData` built by the driver (`vnfm_infra_openstack::userdata`) on the
//! corpus packages that use it: the top template with one resource per VNFC and the `nfv`
//! parameter (snapshots), at instantiation and after a scale out and in.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use vnfm_infra_openstack::hot::{self, NfvInputs};
use vnfm_infra_openstack::userdata::{self, UserData};
use vnfm_infra_openstack::{DriverConfig, OpenStackError};

use crate::corpus_nfv::{Dir, instantiate_target, load_vnfd, request, tacker};

/// The template (top-level resources with their `get_param`s) and `nfv` for `package` with
/// `vnfcs` indexes per VDU; `current` is the `nfv` in force for a scale.
fn build(package: &str, vnfcs: &BTreeMap<String, BTreeSet<u32>>, current: Option<&Value>) -> Value {
    let root = tacker(package);
    let vnfd = load_vnfd(&root);
    let mut req = request(&vnfd, "simple");
    req.additional_params
        .get_or_insert_with(Default::default)
        .extend(
            json!({"lcm-operation-user-data": "./UserData/userdata_standard.py",
                   "lcm-operation-user-data-class": "StandardUserData"})
            .as_object()
            .unwrap()
            .clone(),
        );
    assert_eq!(
        UserData::from_params(req.additional_params.as_ref()).unwrap(),
        Some(UserData::Standard)
    );
    let fl = vnfd.flavour("simple").unwrap();
    let vdus: Vec<String> = fl.vdus.iter().map(|v| v.id.clone()).collect();
    let mut h = hot::load_base_hot(&Dir(root), &vnfd, "simple", &DriverConfig::default())
        .unwrap()
        .unwrap();
    userdata::expand(&mut h.template, &vdus, vnfcs);
    assert_eq!(&userdata::indexes_in(&h.template, &vdus), vnfcs);
    let paths = hot::nfv_paths([&h.template]);
    let counts: BTreeMap<String, u32> = vnfcs
        .iter()
        .map(|(k, v)| (k.clone(), v.len() as u32))
        .collect();
    let inputs = NfvInputs {
        flavour: fl,
        capacity: Some(&counts),
        ext_virtual_links: req.ext_virtual_links.as_deref().unwrap_or_default(),
        additional: req.additional_params.as_ref().and_then(|p| p.get("nfv")),
        grant: None,
        images: None,
    };
    let nfv = match current {
        None => userdata::nfv(&paths, &inputs),
        Some(c) => userdata::scaled_nfv(
            &paths,
            &NfvInputs {
                additional: None,
                ..inputs
            },
            c,
        ),
    };
    json!({"resources": h.template["resources"], "nfv": nfv})
}

/// The default instantiation level of `package`, as VNFC indexes.
fn instantiated(package: &str) -> BTreeMap<String, BTreeSet<u32>> {
    let root = tacker(package);
    let vnfd = load_vnfd(&root);
    let target = instantiate_target(&vnfd, &request(&vnfd, "simple"));
    userdata::next_indexes(&BTreeMap::new(), &target.vdu_instances)
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_userdata_standard_instantiate() {
    let vnfcs = instantiated("v2-vm-userdata-standard");
    assert_eq!(vnfcs["VDU1"], BTreeSet::from([0]));
    insta::assert_json_snapshot!(build("v2-vm-userdata-standard", &vnfcs, None));
}

#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_individual_vnfc_max_instantiate() {
    let vnfcs = instantiated("v2-vm-individual-vnfc-max");
    insta::assert_json_snapshot!(build("v2-vm-individual-vnfc-max", &vnfcs, None));
}

/// Scale out by two: `VDU1-1` and `VDU1-2` appear with VDU1's values; `VDU1-0` keeps the entry
/// in force, also a value a request set for it alone. Scale in by two removes them again.
#[vnfm_test_env::needs(corpus)]
#[test]
fn v2_userdata_standard_scale_out_keeps_the_vnfcs_in_force_and_scale_in_removes_the_newest() {
    let package = "v2-vm-userdata-standard";
    let start = instantiated(package);
    let mut current = build(package, &start, None)["nfv"].clone();
    current["VDU"]["VDU1-0"]["name"] = json!("set-for-vnfc-0");
    let want = BTreeMap::from([("VDU1".to_string(), 3), ("VDU2".to_string(), 1)]);
    let out = userdata::next_indexes(&start, &want);
    assert_eq!(out["VDU1"], BTreeSet::from([0, 1, 2]));
    let scaled = build(package, &out, Some(&current));
    insta::assert_json_snapshot!(scaled);
    assert_eq!(scaled["nfv"]["VDU"]["VDU1-0"], current["VDU"]["VDU1-0"]);
    assert_eq!(scaled["nfv"]["VDU"]["VDU1-2"]["name"], Value::Null);
    assert_eq!(
        scaled["nfv"]["CP"]["VDU1_CP1-2"], current["CP"]["VDU1_CP1-0"],
        "a new VNFC's CP is on the external network in force"
    );
    let back = userdata::next_indexes(
        &out,
        &BTreeMap::from([("VDU1".to_string(), 1), ("VDU2".to_string(), 1)]),
    );
    assert_eq!(back, start);
    let resources: Vec<String> = build(package, &back, Some(&current))["resources"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert!(resources.contains(&"VDU1-0".to_string()), "{resources:?}");
    assert!(
        !resources
            .iter()
            .any(|r| r == "VDU1-1" || r == "VDU1-2" || r == "VDU1")
    );
}

/// A class other than Tacker's two, without a runner for it, is refused, naming it; the
/// error is an input error (422).
#[test]
fn another_user_data_class_is_refused_by_name() {
    let params = json!({"lcm-operation-user-data": "./UserData/lcm_user_data.py",
                        "lcm-operation-user-data-class": "SampleUserData"});
    let named = UserData::from_params(params.as_object()).unwrap().unwrap();
    let e = named.runnable(false).unwrap_err();
    assert!(matches!(e, OpenStackError::Input(_)), "{e:?}");
    let d: vnfm_driver_api::DriverError = e.into();
    assert_eq!(d.status(), 422, "{d}");
    assert!(d.to_string().contains("`SampleUserData`"), "{d}");
}

/// A request naming a user data class the driver has no runner for is refused at once with 422
/// (the driver's check before the occurrence starts), naming the class: no occurrence is
/// stored and the VIM is never asked (its endpoint here answers nothing).
#[vnfm_test_env::needs(corpus)]
#[tokio::test]
async fn another_user_data_class_is_refused_before_any_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = vnfm_lcm::MemoryCatalog::new();
    // A package whose LCM hooks bind no script (no management driver is needed).
    let root = tacker("v2-vm-change-vnfpkg-new-image");
    let vnfd_id = catalog.insert(load_vnfd(&root), std::sync::Arc::new(Dir(root)));
    let driver = std::sync::Arc::new(vnfm_infra_openstack::OpenStackDriver::default());
    let lcm = crate::support::lcm(dir.path(), catalog, driver).await;
    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": vnfd_id})).unwrap())
        .await
        .unwrap();
    let request = |file: &str, class: &str| {
        serde_json::from_value(json!({
            "flavourId": "simple",
            "vimConnectionInfo": {"vim1": {
                "vimId": "nowhere", "vimType": vnfm_infra_openstack::OPENSTACK_VIM_TYPE,
                "interfaceInfo": {"endpoint": "http://127.0.0.1:9/v3"},
                "accessInfo": {"username": "u", "password": "p", "project": "p",
                               "projectDomain": "Default", "userDomain": "Default"}}},
            "additionalParams": {"lcm-operation-user-data": file,
                                 "lcm-operation-user-data-class": class}
        }))
        .unwrap()
    };
    let refused = lcm
        .instantiate(
            &vnf.id,
            request("./UserData/lcm_user_data.py", "SampleUserData"),
        )
        .await
        .expect_err("the driver refuses the class");
    assert_eq!(
        refused.kind(),
        vnfm_types::ErrorKind::Unprocessable,
        "{refused}"
    );
    let text = refused.to_string();
    assert!(
        text.contains("`SampleUserData`") && text.contains("StandardUserData"),
        "{text}"
    );
    assert!(
        matches!(&refused, vnfm_lcm::LcmError::RefusedByDriver { driver, .. } if driver == "openstack"),
        "{refused:?}"
    );
    // Only one of the two keys Tacker needs: refused as well.
    let mut half = request("./UserData/userdata_standard.py", "StandardUserData");
    half.additional_params
        .as_mut()
        .unwrap()
        .remove("lcm-operation-user-data-class");
    let refused = lcm.instantiate(&vnf.id, half).await.expect_err("refused");
    assert_eq!(
        refused.kind(),
        vnfm_types::ErrorKind::Unprocessable,
        "{refused}"
    );
    // Nothing was stored: no occurrence, the instance not instantiated.
    let occs = lcm.list_op_occs(&Default::default()).await.unwrap();
    assert!(occs.items.is_empty(), "{:?}", occs.items);
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    assert_eq!(
        inst.instantiation_state,
        vnfm_types::InstantiationState::NotInstantiated
    );
}
