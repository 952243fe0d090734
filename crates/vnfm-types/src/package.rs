//! The VNF package management resources (SOL003 v3.3.1 clause 10 / SOL005 clause 9):
//! `VnfPkgInfo` and its parts, and the requests that create and modify a package resource.
//!
//! The v2.6.1 (`/vnfpkgm/v1`) shape is the same minus the attributes added later
//! (`compatibleSpecificationVersions`, `packageSecurityOption`, `signingCertificate`,
//! `vnfmInfo`, `onboardingFailureDetails`); [`VnfPkgInfo::to_v1`] drops them, but for the
//! `onboardingFailureDetails` of a package in `ERROR` (itself a later state), so that a v1
//! client (`openstack vnf package show`) sees why its package was refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{KeyValuePairs, Link, ProblemDetails};

/// `PackageOnboardingStateType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PackageOnboardingState {
    /// The package resource exists; no content was uploaded yet.
    Created,
    /// Content is being uploaded.
    Uploading,
    /// Content is being validated and onboarded.
    Processing,
    /// The package is onboarded: its VNFD can be used.
    Onboarded,
    /// Onboarding failed (see `onboardingFailureDetails`).
    Error,
}

/// `PackageOperationalStateType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PackageOperationalState {
    /// New VNF instances may be created from the package.
    Enabled,
    /// No new VNF instances may be created from the package.
    Disabled,
}

/// `PackageUsageStateType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PackageUsageState {
    /// VNF instances created from the package exist.
    InUse,
    /// No VNF instance uses the package.
    NotInUse,
}

/// `Checksum`: algorithm (as SOL004 names it, `SHA-256`) and hexadecimal hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checksum {
    /// `SHA-256`, `SHA-384` or `SHA-512`.
    pub algorithm: String,
    /// Lower-case hexadecimal digest.
    pub hash: String,
}

/// `VnfPackageSoftwareImageInfo`: a software image artifact of the package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPackageSoftwareImageInfo {
    /// Identifier of the image in the VNFD (the node template name).
    pub id: String,
    /// Image name.
    pub name: String,
    /// Provider.
    pub provider: String,
    /// Image version.
    pub version: String,
    /// Checksum declared in the VNFD.
    pub checksum: Checksum,
    /// `isEncrypted` (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_encrypted: Option<bool>,
    /// Container format (`BARE`, `OVF`, `DOCKER`, ...).
    pub container_format: String,
    /// Disk format (`QCOW2`, `RAW`, ...).
    pub disk_format: String,
    /// When the image information was created.
    pub created_at: String,
    /// Minimal disk size in bytes.
    pub min_disk: u64,
    /// Minimal RAM in bytes.
    pub min_ram: u64,
    /// Image size in bytes.
    pub size: u64,
    /// Path of the image file in the package (or its URI).
    pub image_path: String,
    /// URI of an external image (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_uri: Option<String>,
    /// User-defined data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_metadata: Option<KeyValuePairs>,
}

/// `VnfPackageArtifactInfo`: an artifact of the package that is not a software image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPackageArtifactInfo {
    /// Path of the artifact in the package (also the `artifacts/{artifactPath}` URI part).
    pub artifact_path: String,
    /// URI of an external artifact, when it is not in the package (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_uri: Option<String>,
    /// Checksum from the manifest.
    pub checksum: Checksum,
    /// `isEncrypted` (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_encrypted: Option<bool>,
    /// Non-MANO artifact set the artifact belongs to, and other metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<KeyValuePairs>,
}

/// Links of a `VnfPkgInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPkgLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
    /// The VNFD of the package (once onboarded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd: Option<Link>,
    /// The package content.
    pub package_content: Link,
}

/// `VnfPkgInfo`: a VNF package resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnfPkgInfo {
    /// Package identifier.
    pub id: String,
    /// `vnfdId` of the VNFD (once onboarded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_id: Option<String>,
    /// VNF provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_provider: Option<String>,
    /// VNF product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_product_name: Option<String>,
    /// VNF software version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_software_version: Option<String>,
    /// VNFD version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_version: Option<String>,
    /// SOL specification versions the VNFD conforms to (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatible_specification_versions: Option<Vec<String>>,
    /// Checksum of the package content as uploaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// `OPTION_1` (signed manifest) or `OPTION_2` (signed package) (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_security_option: Option<String>,
    /// Signing certificate in PEM, when the package carries one (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_certificate: Option<String>,
    /// Software images of the package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software_images: Option<Vec<VnfPackageSoftwareImageInfo>>,
    /// Other artifacts of the package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_artifacts: Option<Vec<VnfPackageArtifactInfo>>,
    /// Onboarding state.
    pub onboarding_state: PackageOnboardingState,
    /// Operational state.
    pub operational_state: PackageOperationalState,
    /// Usage state.
    pub usage_state: PackageUsageState,
    /// VNFM products the VNFD supports (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfm_info: Option<Vec<String>>,
    /// User-defined data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_defined_data: Option<KeyValuePairs>,
    /// Why onboarding failed (when `onboardingState` is `ERROR`) (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onboarding_failure_details: Option<ProblemDetails>,
    /// The warnings of the onboarding validation (each `file:line:column: warning[code]:
    /// message`, with its help), when the package onboarded with some. An extension of this
    /// VNFM, not a SOL003/SOL005 attribute: `/vnfpkgm/v2` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onboarding_warnings: Option<Vec<String>>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: VnfPkgLinks,
}

impl VnfPkgInfo {
    /// The v2.6.1 (`/vnfpkgm/v1`) shape: the same document without the attributes v2.6.1
    /// does not define, except the `onboardingFailureDetails` of a package in `ERROR`.
    pub fn to_v1(&self) -> VnfPkgInfo {
        VnfPkgInfo {
            compatible_specification_versions: None,
            package_security_option: None,
            signing_certificate: None,
            vnfm_info: None,
            onboarding_failure_details: self
                .onboarding_failure_details
                .clone()
                .filter(|_| self.onboarding_state == PackageOnboardingState::Error),
            onboarding_warnings: None,
            software_images: self.software_images.as_ref().map(|images| {
                images
                    .iter()
                    .map(|i| VnfPackageSoftwareImageInfo {
                        is_encrypted: None,
                        image_uri: None,
                        ..i.clone()
                    })
                    .collect()
            }),
            additional_artifacts: self.additional_artifacts.as_ref().map(|artifacts| {
                artifacts
                    .iter()
                    .map(|a| VnfPackageArtifactInfo {
                        is_encrypted: None,
                        artifact_uri: None,
                        ..a.clone()
                    })
                    .collect()
            }),
            ..self.clone()
        }
    }
}

/// `CreateVnfPkgInfoRequest`: body of `POST /vnf_packages`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateVnfPkgInfoRequest {
    /// User-defined data to keep with the package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_defined_data: Option<KeyValuePairs>,
}

/// `VnfPkgInfoModifications`: body of `PATCH /vnf_packages/{id}` (merge patch).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfPkgInfoModifications {
    /// New operational state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operational_state: Option<PackageOperationalState>,
    /// User-defined data to merge (a `null` member deletes the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_defined_data: Option<KeyValuePairs>,
}

/// `UploadVnfPackageFromUriRequest`: body of `POST /vnf_packages/{id}/package_content/upload_from_uri`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadVnfPackageFromUriRequest {
    /// Where to fetch the package from.
    pub address_information: String,
    /// `BASIC` or `OAUTH2_CLIENT_CREDENTIALS`, when the source needs authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_type: Option<String>,
    /// User name for Basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    /// Password for Basic authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<crate::SecretString>,
}

impl std::fmt::Debug for UploadVnfPackageFromUriRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadVnfPackageFromUriRequest")
            .field("address_information", &self.address_information)
            .field("auth_type", &self.auth_type)
            .field("user_name", &self.user_name)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_shape_drops_the_v3_attributes() {
        let info: VnfPkgInfo = serde_json::from_value(serde_json::json!({
            "id": "p1",
            "vnfdId": "d1",
            "compatibleSpecificationVersions": ["2.6.1"],
            "packageSecurityOption": "OPTION_1",
            "onboardingState": "ONBOARDED",
            "operationalState": "ENABLED",
            "usageState": "NOT_IN_USE",
            "additionalArtifacts": [{"artifactPath": "a.sh", "artifactURI": null,
                "checksum": {"algorithm": "SHA-256", "hash": "00"}, "isEncrypted": false}],
            "_links": {"self": {"href": "/p1"}, "packageContent": {"href": "/p1/package_content"}}
        }))
        .unwrap();
        let v1 = serde_json::to_value(info.to_v1()).unwrap();
        assert!(v1.get("compatibleSpecificationVersions").is_none());
        assert!(v1.get("packageSecurityOption").is_none());
        assert!(v1["additionalArtifacts"][0].get("isEncrypted").is_none());
        assert_eq!(v1["onboardingState"], "ONBOARDED");
        assert_eq!(
            v1["_links"]["packageContent"]["href"],
            "/p1/package_content"
        );
    }

    #[test]
    fn v1_shape_keeps_why_a_package_was_refused() {
        let info = |state: &str| -> VnfPkgInfo {
            serde_json::from_value(serde_json::json!({
                "id": "p1",
                "onboardingState": state,
                "operationalState": "DISABLED",
                "usageState": "NOT_IN_USE",
                "onboardingFailureDetails": {"status": 422, "detail": "VNFD: no flavour"},
                "_links": {"self": {"href": "/p1"}, "packageContent": {"href": "/p1/c"}}
            }))
            .unwrap()
        };
        let v1 = serde_json::to_value(info("ERROR").to_v1()).unwrap();
        assert_eq!(
            v1["onboardingFailureDetails"]["detail"], "VNFD: no flavour",
            "{v1}"
        );
        let v1 = serde_json::to_value(info("CREATED").to_v1()).unwrap();
        assert!(v1.get("onboardingFailureDetails").is_none(), "{v1}");
    }

    #[test]
    fn modifications_refuse_unknown_attributes() {
        let err = serde_json::from_str::<VnfPkgInfoModifications>(r#"{"operationalState":"GONE"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("unknown variant `GONE`"), "{err}");
        let err = serde_json::from_str::<VnfPkgInfoModifications>(r#"{"usageState":"IN_USE"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("usageState"), "{err}");
    }
}
