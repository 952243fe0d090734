//! Data types shared by several SOL003 resources: links, resource handles, VIM connection
//! information, connection-point protocol data, `ProblemDetails`, and free-form key/value maps.

use std::fmt;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::VimId;

/// SOL013 `KeyValuePairs`: a JSON object whose members are not defined by the API
/// (`additionalParams`, `metadata`, `extensions`, `vnfConfigurableProperties`, ...).
pub type KeyValuePairs = serde_json::Map<String, serde_json::Value>;

/// A hyperlink (`Link`): `{"href": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// URI of the referenced resource.
    pub href: String,
}

impl Link {
    /// A link to `href`.
    pub fn new(href: impl Into<String>) -> Self {
        Self { href: href.into() }
    }
}

/// A string that holds a secret (a password, a client secret). It serializes as the plain
/// value (it has to reach storage and the NFVO), but its `Debug` output is redacted so it does
/// not end up in logs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SecretString(pub String);

impl SecretString {
    /// Wraps a secret value.
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The secret value. Call sites that read it are the ones to audit.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(***)")
    }
}

/// `ResourceHandle`: where a resource lives on a VIM / resource provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceHandle {
    /// Key of the `vimConnectionInfo` entry of the VIM managing the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_connection_id: Option<String>,
    /// Identifier of the entity responsible for the resource (when no VIM manages it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_provider_id: Option<String>,
    /// Identifier of the resource in the scope of the VIM or resource provider.
    #[schemars(length(min = 1))]
    pub resource_id: String,
    /// Type of the resource in the scope of the VIM (e.g. `OS::Nova::Server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_level_resource_type: Option<String>,
    /// Additional resource information specific to the VIM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_level_additional_resource_info: Option<KeyValuePairs>,
    /// Kubernetes namespace of a container-based resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_namespace: Option<String>,
}

impl ResourceHandle {
    /// A handle naming only `resourceId`.
    pub fn new(resource_id: impl Into<String>) -> Self {
        Self {
            vim_connection_id: None,
            resource_provider_id: None,
            resource_id: resource_id.into(),
            vim_level_resource_type: None,
            vim_level_additional_resource_info: None,
            container_namespace: None,
        }
    }
}

/// `VimConnectionInfo` (v3.3.1): how to reach a VIM. In v3.3.1 these are values of a map
/// keyed by the VIM connection id; v2.6.1 carried the id inside (see [`crate::v1`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VimConnectionInfo {
    /// Identifier of the VIM, as known to the NFVO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vim_id: Option<VimId>,
    /// Type of the VIM, e.g. `ETSINFV.OPENSTACK_KEYSTONE.V_3` or `kubernetes`.
    #[schemars(length(min = 1))]
    pub vim_type: String,
    /// Information about the VIM's interface (e.g. `endpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<KeyValuePairs>,
    /// Authentication credentials (may hold secrets: never log it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<KeyValuePairs>,
    /// VIM-type specific additional information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<KeyValuePairs>,
}

/// `vimConnectionInfo` of v3.3.1: a map from VIM connection id to [`VimConnectionInfo`],
/// in document order.
pub type VimConnectionInfoMap = IndexMap<String, VimConnectionInfo>;

/// Layer protocol of connection-point protocol data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LayerProtocol {
    /// IP over Ethernet.
    IpOverEthernet,
    /// IP address of a virtual CP (v3.3.1).
    IpForVirtualCp,
}

/// IP address version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IpAddressType {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// Segmentation type of an IP-over-Ethernet connection (v3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SegmentationType {
    /// A VLAN segment.
    Vlan,
    /// Inherit the segmentation of the parent port.
    Inherit,
}

/// A range of IP addresses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddressRange {
    /// Lowest address in the range.
    pub min_address: String,
    /// Highest address in the range.
    pub max_address: String,
}

/// `CpProtocolData`: protocol data of a connection point to be configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpProtocolData {
    /// The protocol.
    pub layer_protocol: LayerProtocol,
    /// Addresses for `IP_OVER_ETHERNET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_over_ethernet: Option<IpOverEthernetAddressData>,
    /// Address for `IP_FOR_VIRTUAL_CP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_cp_address: Option<VirtualCpAddressData>,
}

/// `IpOverEthernetAddressData`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpOverEthernetAddressData {
    /// MAC address to assign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Segmentation type (v3.3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segmentation_type: Option<SegmentationType>,
    /// Segmentation id, e.g. the VLAN id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segmentation_id: Option<String>,
    /// IP addresses to assign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_addresses: Option<Vec<IpAddressData>>,
}

/// One entry of `IpOverEthernetAddressData.ipAddresses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpAddressData {
    /// IP version.
    #[serde(rename = "type")]
    pub ip_type: IpAddressType,
    /// Fixed addresses to assign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_addresses: Option<Vec<String>>,
    /// Number of addresses to assign dynamically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_dynamic_addresses: Option<u32>,
    /// Range to pick addresses from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_range: Option<AddressRange>,
    /// Subnet to take the addresses from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
}

/// `VirtualCpAddressData` (v3.3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VirtualCpAddressData {
    /// IP version.
    #[serde(rename = "type")]
    pub ip_type: IpAddressType,
    /// Fixed address of the load balancer, when requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
}

/// `CpProtocolInfo`: protocol information of an instantiated connection point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CpProtocolInfo {
    /// The protocol.
    pub layer_protocol: LayerProtocol,
    /// Addresses for `IP_OVER_ETHERNET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_over_ethernet: Option<IpOverEthernetAddressInfo>,
    /// Address for `IP_FOR_VIRTUAL_CP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_cp_address: Option<VirtualCpAddressInfo>,
}

/// `IpOverEthernetAddressInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IpOverEthernetAddressInfo {
    /// Assigned MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Segmentation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segmentation_id: Option<String>,
    /// Assigned IP addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_addresses: Option<Vec<IpAddressInfo>>,
}

/// One entry of `IpOverEthernetAddressInfo.ipAddresses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IpAddressInfo {
    /// IP version.
    #[serde(rename = "type")]
    pub ip_type: IpAddressType,
    /// Assigned addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    /// Whether the addresses were assigned dynamically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_dynamic: Option<bool>,
    /// Range the addresses were taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_range: Option<AddressRange>,
    /// Subnet the addresses belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
}

/// `VirtualCpAddressInfo` (v3.3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualCpAddressInfo {
    /// IP version.
    #[serde(rename = "type")]
    pub ip_type: IpAddressType,
    /// Address of the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
}

/// What kind of failure an error is, whatever reports it. The lifecycle core classifies its
/// errors by kind; a `ProblemDetails` (an error response, the `error` of an operation
/// occurrence) carries the kind's [`ErrorKind::status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The request is malformed: a member is missing, has the wrong type or an invalid value.
    Invalid,
    /// The request is well formed but names what the descriptor, the instance or the VNFM
    /// cannot resolve or do (an unknown flavour, a VIM type no driver serves).
    Unprocessable,
    /// A record the request names does not exist.
    NotFound,
    /// The request conflicts with the state of a resource (an instance busy or in the wrong
    /// state, a concurrent change, a VIM still in use).
    Conflict,
    /// Something the VNFM depends on (the NFVO, a VIM) is unavailable; retrying may help.
    Unavailable,
    /// Waiting ended before what was waited for happened.
    Timeout,
    /// A fault inside the VNFM (an inconsistent record, a failing store, unreadable keys).
    Internal,
}

impl ErrorKind {
    /// The status a SOL013 `ProblemDetails` (and the HTTP response that carries one) gives
    /// errors of this kind: 400, 422, 404, 409, 503, 504 or 500.
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::Invalid => 400,
            ErrorKind::Unprocessable => 422,
            ErrorKind::NotFound => 404,
            ErrorKind::Conflict => 409,
            ErrorKind::Unavailable => 503,
            ErrorKind::Timeout => 504,
            ErrorKind::Internal => 500,
        }
    }
}

/// `ProblemDetails` (RFC 7807 as profiled by SOL013): the body of every error response and the
/// `error` of a failed operation occurrence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProblemDetails {
    /// URI reference identifying the problem type.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub problem_type: Option<String>,
    /// Short, human-readable summary of the problem type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// HTTP status code.
    pub status: u16,
    /// Human-readable explanation of this occurrence of the problem.
    pub detail: String,
    /// URI reference identifying this occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Extension members, kept verbatim.
    #[serde(flatten)]
    pub extra: KeyValuePairs,
}

impl ProblemDetails {
    /// A problem with `status` and `detail` only.
    pub fn new(status: u16, detail: impl Into<String>) -> Self {
        Self {
            problem_type: None,
            title: None,
            status,
            detail: detail.into(),
            instance: None,
            extra: KeyValuePairs::new(),
        }
    }

    /// A problem of `kind` (its status is the kind's, [`ErrorKind::status`]) titled `title`,
    /// with `detail`: how code that knows what went wrong, not how HTTP reports it, writes a
    /// `ProblemDetails` (e.g. the `error` of an operation occurrence).
    pub fn of_kind(kind: ErrorKind, title: impl Into<String>, detail: impl Into<String>) -> Self {
        let mut p = Self::new(kind.status(), detail);
        p.title = Some(title.into());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted_but_serializes() {
        let s = SecretString::new("hunter2");
        assert_eq!(format!("{s:?}"), "SecretString(***)");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"hunter2\"");
    }

    #[test]
    fn problem_details_keeps_extension_members() {
        let v = serde_json::json!({"status": 409, "detail": "busy", "retryAfter": 5});
        let p: ProblemDetails = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(p.extra.get("retryAfter"), Some(&serde_json::json!(5)));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
    }
}
