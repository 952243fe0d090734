//! The test package: the VNFD, its BaseHOT templates and variants of them, the instantiate
//! request, and a minimal image for Glance.

use serde_json::{Value, json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::memory::MemArtifacts;

use super::Cloud;

/// The test VNFD: VDU1 (2 to 4 VNFCs, scaling aspect `VDU1_scale`, one volume, one external
/// and one internal CP) and VDU2 (one VNFC, one external CP), internal VL `internalVL1`.
pub fn vnfd(id: &str) -> Vnfd {
    serde_json::from_value(json!({
        "descriptorId": id, "descriptorVersion": "1.0", "provider": "Acme",
        "productName": "HeatTest", "softwareVersion": "1.0",
        "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.HeatTest",
        "entryDefinitions": "Definitions/heat_test_top.vnfd.yaml",
        "flavours": [{
            "id": "simple", "file": "Definitions/heat_test_df_simple.yaml",
            "vdus": [
                {"id": "VDU1", "name": "VDU1", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 4, "initialDelta": 2,
                 "virtualCompute": {"additionalCapabilityNames": ["m1.tiny"]},
                 "swImage": {"name": "cirros-0.6"},
                 "virtualStorages": ["VDU1-VirtualStorage"]},
                {"id": "VDU2", "name": "VDU2", "kind": "compute", "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                 "minInstances": 1, "maxInstances": 1, "initialDelta": 1,
                 "virtualCompute": {"additionalCapabilityNames": ["m1.small"]},
                 "swImage": {"name": "cirros-0.6"}}
            ],
            "virtualStorages": [{"id": "VDU1-VirtualStorage", "kind": "block", "sizeBytes": 1073741824}],
            "vduCps": [
                {"id": "VDU1_CP1", "vdu": "VDU1", "order": 0},
                {"id": "VDU1_CP2", "vdu": "VDU1", "virtualLink": "internalVL1", "order": 1},
                {"id": "VDU2_CP1", "vdu": "VDU2", "order": 0}
            ],
            "virtualLinks": [{"id": "internalVL1"}],
            "scalingAspects": [{"id": "VDU1_scale", "maxScaleLevel": 2, "stepDeltas": ["delta_1"],
                                "vduDeltas": {"VDU1": {"delta_1": 1}}}],
            "instantiationLevels": [{"id": "instantiation_level_1", "scaleLevels": {"VDU1_scale": 0},
                                     "vduInstances": {"VDU1": 2, "VDU2": 1}}],
            "defaultInstantiationLevel": "instantiation_level_1"
        }]
    }))
    .expect("test VNFD")
}

/// The test VNFD for a generated template: without VDU1's volume and without the internal
/// network and VDU1's CP on it. The test changes the package to the BaseHOT, whose VDU1 is
/// another server: Heat builds it before deleting the old one, and Cinder refuses to attach
/// the volume the old server still holds (`status must be available or downloading to
/// reserve`). A package change from a generated template to a BaseHOT with another internal
/// subnet is tested on its own (`real_heat::generated_to_base_hot`).
pub fn vnfd_for_generated(id: &str) -> Vnfd {
    let mut v = serde_json::to_value(vnfd(id)).unwrap();
    let flavour = &mut v["flavours"][0];
    flavour["vdus"][0]
        .as_object_mut()
        .unwrap()
        .remove("virtualStorages");
    flavour["virtualStorages"] = json!([]);
    flavour["virtualLinks"] = json!([]);
    flavour["vduCps"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["id"] != "VDU1_CP2");
    serde_json::from_value(v).expect("test VNFD for a generated template")
}

/// The BaseHOT of the test package, in Tacker's layout and `nfv` convention.
pub const TOP_HOT: &str = r#"heat_template_version: 2013-05-23
description: Test VNF
parameters:
  nfv:
    type: json
resources:
  VDU1_scale_group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 4
      desired_capacity: { get_param: [ nfv, VDU, VDU1, desired_capacity ] }
      resource:
        type: VDU1_nested.yaml
        properties:
          flavor: { get_param: [ nfv, VDU, VDU1, computeFlavourId ] }
          image: { get_param: [ nfv, VDU, VDU1, vcImageId ] }
          net1: { get_param: [ nfv, CP, VDU1_CP1, network ] }
          subnet1: { get_param: [ nfv, CP, VDU1_CP1, fixed_ips, 0, subnet ] }
          net2: { get_resource: internalVL1 }
  VDU2:
    type: OS::Nova::Server
    properties:
      flavor: { get_param: [ nfv, VDU, VDU2, computeFlavourId ] }
      image: { get_param: [ nfv, VDU, VDU2, vcImageId ] }
      networks:
      - port: { get_resource: VDU2_CP1 }
  VDU2_CP1:
    type: OS::Neutron::Port
    properties:
      network: { get_param: [ nfv, CP, VDU2_CP1, network ] }
      fixed_ips:
      - ip_address: { get_param: [ nfv, CP, VDU2_CP1, fixed_ips, 0, ip_address ] }
  internalVL1:
    type: OS::Neutron::Net
  internalVL1_subnet:
    type: OS::Neutron::Subnet
    properties:
      network: { get_resource: internalVL1 }
      cidr: 192.168.3.0/24
      ip_version: 4
"#;

/// VDU1's nested template.
pub const VDU1_HOT: &str = r#"heat_template_version: 2013-05-23
description: VDU1
parameters:
  flavor: { type: string }
  image: { type: string }
  net1: { type: string }
  subnet1: { type: string, default: "" }
  net2: { type: string }
resources:
  VDU1:
    type: OS::Nova::Server
    properties:
      flavor: { get_param: flavor }
      image: { get_param: image }
      networks:
      - port: { get_resource: VDU1_CP1 }
      - port: { get_resource: VDU1_CP2 }
      block_device_mapping_v2:
      - volume_id: { get_resource: VDU1-VirtualStorage }
        boot_index: -1
  VDU1-VirtualStorage:
    type: OS::Cinder::Volume
    properties:
      size: 1
  VDU1_CP1:
    type: OS::Neutron::Port
    properties:
      network: { get_param: net1 }
      fixed_ips:
      - subnet: { get_param: subnet1 }
  VDU1_CP2:
    type: OS::Neutron::Port
    properties:
      network: { get_param: net2 }
"#;

/// The package files: BaseHOT top (with `extra` appended to its resources, e.g. a failing
/// resource) and nested template.
pub fn package(extra: &str) -> MemArtifacts {
    MemArtifacts::new()
        .with("BaseHOT/simple/heat_test.yaml", format!("{TOP_HOT}{extra}"))
        .with("BaseHOT/simple/nested/VDU1_nested.yaml", VDU1_HOT)
}

/// A resource that makes the stack fail.
pub const FAILING: &str = r#"  VNF_config:
    type: OS::Heat::TestResource
    properties:
      fail: true
      value: provisioning script exited with 3
"#;

/// An instantiate request connecting the external CPs, VDU2_CP1 at `address` (on
/// `subnet-ext-1`, 10.10.0.0/24; Neutron gives an address to one port at a time, so tests
/// that run side by side use their own).
pub fn instantiate_request_at(cloud: &Cloud, address: &str) -> Value {
    json!({
        "flavourId": "simple",
        "vimConnectionInfo": {"vim1": cloud.vim_connection()},
        "extVirtualLinks": [
            {"id": "ext-1", "resourceId": "net-ext-1", "extCps": [
                {"cpdId": "VDU1_CP1", "cpConfig": {"VDU1_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "numDynamicAddresses": 1, "subnetId": "subnet-ext-1"}]}}]}}},
                {"cpdId": "VDU2_CP1", "cpConfig": {"VDU2_CP1_1": {"cpProtocolData": [
                    {"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": {"ipAddresses": [
                        {"type": "IPV4", "fixedAddresses": [address]}]}}]}}}
            ]}
        ]
    })
}

/// The package files from a top template and VDU1's nested template.
pub fn package_from(top: String, vdu1: String) -> MemArtifacts {
    MemArtifacts::new()
        .with("BaseHOT/simple/heat_test.yaml", top)
        .with("BaseHOT/simple/nested/VDU1_nested.yaml", vdu1)
}

/// VDU1's nested template with a readiness check: each member waits for a signal on its
/// `ready_handle` (what a VM's boot script sends when the VNFC is up); a `FAILURE` signal
/// fails the member, as a VM that does not come up does. Heat needs its stack user domain for
/// the handle (`scripts/test-env/openstack.sh` sets it up).
pub fn vdu1_with_readiness_check() -> String {
    format!(
        r#"{VDU1_HOT}  ready_handle:
    type: OS::Heat::WaitConditionHandle
  ready:
    type: OS::Heat::WaitCondition
    depends_on: VDU1
    properties:
      handle: {{ get_resource: ready_handle }}
      timeout: 600
"#
    )
}

/// The top template with a check of VDU2_CP1's network that fails for `net-unreachable` (as
/// Neutron refuses a port on a network it does not have).
pub fn top_with_network_check() -> String {
    format!(
        r#"{}  VDU2_CP1_check:
    type: OS::Heat::TestResource
    properties:
      value: {{ get_param: [ nfv, CP, VDU2_CP1, network ] }}
      fail: {{ yaql: {{ expression: "$.data.net = 'net-unreachable'", data: {{ net: {{ get_param: [ nfv, CP, VDU2_CP1, network ] }} }} }} }}
"#,
        // yaql needs a newer template version than the base's.
        TOP_HOT.replace("2013-05-23", "2016-10-14")
    )
}

/// A top template with no server: only the internal network (a VNF whose VDUs the template
/// does not deploy, e.g. all scaled to zero elsewhere).
pub const SERVERLESS_HOT: &str = r#"heat_template_version: 2013-05-23
description: Test VNF without servers
parameters:
  nfv:
    type: json
resources:
  internalVL1:
    type: OS::Neutron::Net
  internalVL1_subnet:
    type: OS::Neutron::Subnet
    properties:
      network: { get_resource: internalVL1 }
      cidr: 192.168.3.0/24
      ip_version: 4
"#;

/// A minimal valid qcow2 image (version 2, 1 MiB virtual size, no data): 512-byte clusters
/// holding the header, the refcount table, one refcount block and the L1 table. Glance
/// inspects uploads and refuses data that does not match the image's `disk_format`; Cinder
/// opens an image it makes a volume from with `qemu-img`, which refuses a bare header; Nova's
/// fake virt driver boots anything.
pub fn qcow2_image() -> Vec<u8> {
    const CLUSTER: usize = 512;
    let mut data = vec![0u8; 4 * CLUSTER];
    let mut put = |at: usize, bytes: &[u8]| data[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, b"QFI\xfb");
    put(4, &2u32.to_be_bytes()); // version
    put(20, &9u32.to_be_bytes()); // cluster_bits: 512-byte clusters
    put(24, &(1u64 << 20).to_be_bytes()); // virtual size
    // One L1 entry per L2 table, each mapping 64 clusters of 512 bytes: 32 for 1 MiB.
    put(36, &32u32.to_be_bytes()); // l1_size
    put(40, &(3 * CLUSTER as u64).to_be_bytes()); // l1_table_offset
    put(48, &(CLUSTER as u64).to_be_bytes()); // refcount_table_offset
    put(56, &1u32.to_be_bytes()); // refcount_table_clusters
    // The refcount table points at the refcount block, which counts the four clusters once.
    put(CLUSTER, &(2 * CLUSTER as u64).to_be_bytes());
    for c in 0..4 {
        put(2 * CLUSTER + 2 * c, &1u16.to_be_bytes());
    }
    data
}
