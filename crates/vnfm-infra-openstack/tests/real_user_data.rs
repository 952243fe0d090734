//! A package's own user data class (Tacker's `lcm-operation-user-data` naming a class of the
//! package), run by the script management driver's `python3` for the driver, against the real
//! Keystone and Heat of the test cloud. The class builds what Tacker's `DefaultUserData`
//! builds for the test package (the BaseHOT as it is, `nfv` from the grant request, the grant,
//! the VNFD's flavours and image and the request's external links), without importing Tacker:
//! the stack it makes holds the servers the instantiation level asks for, with that `nfv`; a
//! scale that names no class then runs none (Tacker reads the class from the request alone)
//! and scales the stack the class made. Ignored, with the reason, when the test cloud was not
//! there at build time (`#[vnfm_test_env::needs(openstack)]`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::Cloud;
use vnfm_infra_openstack::{DriverState, OpenStackDriver};
use vnfm_lcm::MemoryCatalog;
use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver};
use vnfm_types::{LcmOperationStateType, VnfInstance};

const WAIT: Duration = Duration::from_secs(600);

/// What `DefaultUserData.instantiate` computes for the test package's BaseHOT, written out
/// for it (the template and nested file as the package has them, as text).
pub(crate) const CLASS: &str = r#"
import os


def _cp(req, grant, cpd_id):
    for vl in grant.get('extVirtualLinks', []) + req.get('extVirtualLinks', []):
        for cp in vl['extCps']:
            if cp['cpdId'] != cpd_id:
                continue
            ips = []
            for conf in cp['cpConfig'].values():
                for proto in conf.get('cpProtocolData', []):
                    for ip in proto.get('ipOverEthernet', {}).get('ipAddresses', []):
                        if 'fixedAddresses' in ip:
                            ips.append({'ip_address': ip['fixedAddresses'][0]})
                        else:
                            ips.append({'subnet': ip.get('subnetId')})
            return {'network': vl['resourceId'], 'fixed_ips': ips}
    return {}


def _image(grant, vdu):
    for image in grant.get('vimAssets', {}).get('softwareImages', []):
        if image['vnfdSoftwareImageId'] == vdu:
            return image['vimSoftwareImageId']
    return 'cirros-0.6'


class UserData:
    @staticmethod
    def instantiate(req, inst, grant_req, grant, tmp_csar_dir):
        base = os.path.join(tmp_csar_dir, 'BaseHOT', 'simple')
        with open(os.path.join(base, 'heat_test.yaml')) as f:
            template = f.read()
        with open(os.path.join(base, 'nested', 'VDU1_nested.yaml')) as f:
            nested = f.read()
        count = sum(1 for r in grant_req.get('addResources', [])
                    if r['type'] == 'COMPUTE' and r['resourceTemplateId'] == 'VDU1')
        nfv = {
            'VDU': {
                'VDU1': {'computeFlavourId': 'm1.tiny', 'vcImageId': _image(grant, 'VDU1'),
                         'desired_capacity': count},
                'VDU2': {'computeFlavourId': 'm1.small', 'vcImageId': _image(grant, 'VDU2')},
            },
            'CP': {'VDU1_CP1': _cp(req, grant, 'VDU1_CP1'),
                   'VDU2_CP1': _cp(req, grant, 'VDU2_CP1')},
        }
        return {'template': template, 'files': {'VDU1_nested.yaml': nested},
                'parameters': {'nfv': nfv}}

    @staticmethod
    def heal(req, inst, grant_req, grant, tmp_csar_dir):
        # As Tacker's StandardUserData.heal: the healed servers' image from the grant.
        return {'parameters': {'nfv': {'VDU': {'VDU1': {'vcImageId': _image(grant, 'VDU1')}}}}}
"#;

fn vnfcs_of(i: &VnfInstance, vdu: &str) -> usize {
    i.instantiated_vnf_info
        .as_ref()
        .and_then(|v| v.vnfc_resource_info.as_ref())
        .map_or(0, |v| v.iter().filter(|c| c.vdu_id == vdu).count())
}

#[vnfm_test_env::needs(openstack)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_user_data_class_of_the_package_builds_the_stack_on_real_heat() {
    let cloud = Cloud::from_env();
    let dir = tempfile::tempdir().unwrap();
    let catalog = MemoryCatalog::new();
    let files = support::package("").with("UserData/userdata.py", CLASS);
    let vnfd_id = catalog.insert(support::vnfd("vnfd-heat-userdata"), Arc::new(files));
    let scripts = Arc::new(ScriptMgmtDriver::new(ScriptConfig::default()));
    let driver =
        Arc::new(OpenStackDriver::new(support::driver_config()).with_user_data_scripts(scripts));
    let guard = support::StackGuard::new(cloud.clone(), driver.clone());
    let lcm = support::lcm(dir.path(), catalog, driver.clone()).await;
    let vnf = lcm
        .create_vnf_identifier(serde_json::from_value(json!({"vnfdId": vnfd_id})).unwrap())
        .await
        .unwrap();
    guard.watch(&vnf.id);

    let mut request = support::instantiate_request_at(&cloud, "10.10.0.91");
    request["additionalParams"] = json!({
        "lcm-operation-user-data": "./UserData/userdata.py",
        "lcm-operation-user-data-class": "UserData"
    });
    let op = lcm
        .instantiate(&vnf.id, serde_json::from_value(request).unwrap())
        .await
        .unwrap();
    let op = lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        op.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        op.error
    );
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    assert_eq!((vnfcs_of(&inst, "VDU1"), vnfcs_of(&inst, "VDU2")), (2, 1));
    let recorded = inst
        .instantiated_vnf_info
        .as_ref()
        .unwrap()
        .metadata
        .as_ref()
        .unwrap();
    let state: DriverState = serde_json::from_value(recorded["driverState"].clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&state.user_data).unwrap(),
        json!({"script": {"file": "./UserData/userdata.py", "class": "UserData"}})
    );
    assert_eq!(
        state.nfv,
        json!({
            "VDU": {"VDU1": {"computeFlavourId": "m1.tiny", "vcImageId": "cirros-0.6",
                             "desired_capacity": 2},
                    "VDU2": {"computeFlavourId": "m1.small", "vcImageId": "cirros-0.6"}},
            "CP": {"VDU1_CP1": {"network": "net-ext-1", "fixed_ips": [{"subnet": "subnet-ext-1"}]},
                   "VDU2_CP1": {"network": "net-ext-1",
                                "fixed_ips": [{"ip_address": "10.10.0.91"}]}}
        })
    );

    // A scale that names no class: the driver's own DefaultUserData on the class's stack.
    let op = lcm
        .scale(
            &vnf.id,
            serde_json::from_value(json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale"})).unwrap(),
        )
        .await
        .unwrap();
    let op = lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        op.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        op.error
    );
    let inst = lcm.get_instance(&vnf.id).await.unwrap();
    assert_eq!(vnfcs_of(&inst, "VDU1"), 3);

    let op = lcm
        .terminate(
            &vnf.id,
            serde_json::from_value(json!({"terminationType": "FORCEFUL"})).unwrap(),
        )
        .await
        .unwrap();
    let op = lcm.wait(&op.id, WAIT).await.unwrap();
    assert_eq!(
        op.operation_state,
        LcmOperationStateType::Completed,
        "{:?}",
        op.error
    );
}
