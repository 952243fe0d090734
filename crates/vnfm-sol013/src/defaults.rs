//! Per-resource attribute sets for [`Selector::apply_with`](crate::Selector::apply_with):
//! the *default exclude set* each resource clause defines for `exclude_default` (and for a
//! request with no selector at all), and the complex attributes with lower cardinality 1
//! that `fields`/`exclude_fields` must never remove.
//!
//! Paths are `/`-separated from the top level of the resource; arrays on the way are looked
//! through.

/// SOL003 v3.3.1, VNF lifecycle management interface `/vnflcm/v2`.
pub mod v2 {
    /// `GET /vnf_instances`, `exclude_default`: ETSI GS NFV-SOL 003 v3.3.1 clause 5.4.2.3.2,
    /// Table 5.4.2.3.2-1 (`VnfInstance`).
    pub const VNF_INSTANCE_EXCLUDED: &[&str] = &[
        "vnfConfigurableProperties",
        "vimConnectionInfo",
        "instantiatedVnfInfo",
        "metadata",
        "extensions",
    ];

    /// Complex attributes of `VnfInstance` with lower cardinality 1 (SOL003 v3.3.1 clauses
    /// 5.5.2.2 and 5.5.3.x: `_links`, `InstantiatedVnfInfo.extCpInfo` 1..N, and the resource
    /// handles of the VNFC, virtual link and storage resource information, each 1).
    pub const VNF_INSTANCE_MANDATORY: &[&str] = &[
        "_links",
        "instantiatedVnfInfo/extCpInfo",
        "instantiatedVnfInfo/vnfcResourceInfo/computeResource",
        "instantiatedVnfInfo/vnfVirtualLinkResourceInfo/networkResource",
        "instantiatedVnfInfo/virtualStorageResourceInfo/storageResource",
        "instantiatedVnfInfo/extVirtualLinkInfo/resourceHandle",
    ];

    /// `GET /vnf_lcm_op_occs`, `exclude_default`: ETSI GS NFV-SOL 003 v3.3.1 clause
    /// 5.4.12.3.2, Table 5.4.12.3.2-1 (`VnfLcmOpOcc`).
    pub const VNF_LCM_OP_OCC_EXCLUDED: &[&str] = &[
        "operationParams",
        "error",
        "resourceChanges",
        "changedInfo",
        "changedExtConnectivity",
    ];

    /// Complex attributes of `VnfLcmOpOcc` with lower cardinality 1 (SOL003 v3.3.1 clause
    /// 5.5.2.13).
    pub const VNF_LCM_OP_OCC_MANDATORY: &[&str] = &["_links"];
}

/// SOL003 v2.6.1, VNF lifecycle management interface `/vnflcm/v1`.
pub mod v1 {
    /// `GET /vnf_instances`, `exclude_default`: ETSI GS NFV-SOL 003 v2.6.1 clause 5.4.2.3.2,
    /// Table 5.4.2.3.2-1 (`VnfInstance`); the ETSI conformance suite for v2.6.1 (test
    /// 7.3.1.1.6) checks this resource.
    pub const VNF_INSTANCE_EXCLUDED: &[&str] = super::v2::VNF_INSTANCE_EXCLUDED;

    /// Complex attributes of the v2.6.1 `VnfInstance` with lower cardinality 1 (clause
    /// 5.5.2.2; `vimConnectionInfo` is an array there, and optional).
    pub const VNF_INSTANCE_MANDATORY: &[&str] = super::v2::VNF_INSTANCE_MANDATORY;

    /// `GET /vnf_lcm_op_occs`, `exclude_default`: ETSI GS NFV-SOL 003 v2.6.1 clause
    /// 5.4.12.3.2, Table 5.4.12.3.2-1 (`VnfLcmOpOcc`); conformance test 7.3.1.11.6.
    pub const VNF_LCM_OP_OCC_EXCLUDED: &[&str] = super::v2::VNF_LCM_OP_OCC_EXCLUDED;

    /// Complex attributes of the v2.6.1 `VnfLcmOpOcc` with lower cardinality 1 (clause
    /// 5.5.2.13). The conformance suite's schema also requires `operationParams`, which the
    /// default exclude set removes; the specification's exclude set wins here.
    pub const VNF_LCM_OP_OCC_MANDATORY: &[&str] = &["_links"];
}

/// VNF package information (`VnfPkgInfo`) of the VNF package management interface.
pub mod vnfpkgm {
    /// `GET /vnfpkgm/v1/vnf_packages`, SOL005 style: ETSI GS NFV-SOL 005 v2.x clause
    /// 9.4.2.3.2, Table 9.4.2.3.2-1. `checksum` has lower cardinality 1 but is listed by the
    /// specification all the same, so it is excluded by default and removable.
    pub const V1_VNF_PKG_INFO_EXCLUDED: &[&str] = &[
        "softwareImages",
        "additionalArtifacts",
        "userDefinedData",
        "checksum",
    ];

    /// `GET /vnfpkgm/v2/vnf_packages`, SOL005 v3.x clause 9.4.2.3.2: the v1 set plus
    /// `onboardingFailureDetails` (as for `NsdInfo` in the same version).
    pub const V2_VNF_PKG_INFO_EXCLUDED: &[&str] = &[
        "softwareImages",
        "additionalArtifacts",
        "userDefinedData",
        "checksum",
        "onboardingFailureDetails",
    ];

    /// The SOL003 (Or-Vnfm) variant: ETSI GS NFV-SOL 003 v2.4.1/v2.6.1 clause 10.4.2.3.2
    /// lists only these three (also checked by the conformance suite's exclude_default test
    /// for `/vnfpkgm/v1/vnf_packages`).
    pub const SOL003_VNF_PKG_INFO_EXCLUDED: &[&str] =
        &["softwareImages", "additionalArtifacts", "userDefinedData"];

    /// Complex attributes of `VnfPkgInfo` (v1) with lower cardinality 1 that no selector
    /// removes.
    pub const V1_VNF_PKG_INFO_MANDATORY: &[&str] = &["_links"];

    /// As [`V1_VNF_PKG_INFO_MANDATORY`], plus `vnfmInfo` (1..N) of the v3.x data type.
    pub const V2_VNF_PKG_INFO_MANDATORY: &[&str] = &["_links", "vnfmInfo"];
}
