//! Lifecycle change notification subscriptions (SOL003 v3.3.1 clauses 5.5.2.15-16, 5.5.3.12).
//!
//! The request ([`LccnSubscriptionRequest`]) may carry credentials for the callback
//! (`authentication`); the resource the VNFM returns ([`LccnSubscription`]) has no such
//! attribute at all, so a response built from this model cannot leak them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Link, SecretString};
use crate::ids::{SubscriptionId, VnfInstanceId, VnfdId};
use crate::op_occ::{LcmOperationStateType, LcmOperationType};

/// Kind of a lifecycle change notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NotificationType {
    /// Start and result of an LCM operation occurrence.
    VnfLcmOperationOccurrenceNotification,
    /// A VNF instance resource was created.
    VnfIdentifierCreationNotification,
    /// A VNF instance resource was deleted.
    VnfIdentifierDeletionNotification,
}

/// How much an LCM operation occurrence notification carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LcmOpOccNotificationVerbosityType {
    /// All attributes.
    Full,
    /// Only the mandatory attributes (changes are read from the occurrence).
    Short,
}

/// `LccnSubscriptionRequest`: body of `POST /subscriptions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LccnSubscriptionRequest {
    /// Which notifications to send; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<LifecycleChangeNotificationsFilter>,
    /// Where to send them.
    #[schemars(length(min = 1), url)]
    pub callback_uri: String,
    /// Credentials the VNFM uses towards the callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<SubscriptionAuthentication>,
    /// Verbosity of LCM operation occurrence notifications; `FULL` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<LcmOpOccNotificationVerbosityType>,
}

/// `LccnSubscription`: a subscription resource as returned by the VNFM (never carries the
/// `authentication` of the request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LccnSubscription {
    /// Identifier of the subscription.
    pub id: SubscriptionId,
    /// The filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<LifecycleChangeNotificationsFilter>,
    /// Where notifications are sent.
    pub callback_uri: String,
    /// Verbosity of LCM operation occurrence notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<LcmOpOccNotificationVerbosityType>,
    /// Links.
    #[serde(rename = "_links")]
    pub links: LccnSubscriptionLinks,
}

impl LccnSubscription {
    /// The resource for a stored request: everything but the credentials.
    pub fn from_request(
        id: SubscriptionId,
        request: &LccnSubscriptionRequest,
        self_href: impl Into<String>,
    ) -> Self {
        Self {
            id,
            filter: request.filter.clone(),
            callback_uri: request.callback_uri.clone(),
            verbosity: request.verbosity,
            links: LccnSubscriptionLinks {
                self_: Link::new(self_href),
            },
        }
    }
}

/// `_links` of an `LccnSubscription`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LccnSubscriptionLinks {
    /// This resource.
    #[serde(rename = "self")]
    pub self_: Link,
}

/// `LifecycleChangeNotificationsFilter`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LifecycleChangeNotificationsFilter {
    /// Which VNF instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_subscription_filter: Option<VnfInstanceSubscriptionFilter>,
    /// Which notification types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_types: Option<Vec<NotificationType>>,
    /// Which operations (operation occurrence notifications only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_types: Option<Vec<LcmOperationType>>,
    /// Which operation states (operation occurrence notifications only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_states: Option<Vec<LcmOperationStateType>>,
}

/// `VnfInstanceSubscriptionFilter` (SOL013): the VNF instances a subscription is about.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfInstanceSubscriptionFilter {
    /// Instances of these VNFDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_ids: Option<Vec<VnfdId>>,
    /// Instances of these products.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_products_from_providers: Option<Vec<VnfProductsFromProvider>>,
    /// These instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_ids: Option<Vec<VnfInstanceId>>,
    /// Instances with these names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_instance_names: Option<Vec<String>>,
}

/// Products of one provider, in a [`VnfInstanceSubscriptionFilter`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfProductsFromProvider {
    /// The provider.
    pub vnf_provider: String,
    /// Its products; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnf_products: Option<Vec<VnfProduct>>,
}

/// A product in a [`VnfProductsFromProvider`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfProduct {
    /// The product name.
    pub vnf_product_name: String,
    /// Its versions; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<VnfProductVersion>>,
}

/// A software version in a [`VnfProduct`].
///
/// SOL003 makes both versions strings; Tacker also accepts JSON numbers (its functional tests
/// send `"vnfSoftwareVersion": 1.0, "vnfdVersions": [1.0, 2.0]`), so a number is read as its
/// JSON text (`"1.0"`, as Tacker stores it) and always written back as a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfProductVersion {
    /// The software version.
    #[serde(deserialize_with = "version_text::one")]
    #[schemars(schema_with = "version_text::one_schema")]
    pub vnf_software_version: String,
    /// VNFD versions; all when absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "version_text::some_list"
    )]
    #[schemars(schema_with = "version_text::list_schema")]
    pub vnfd_versions: Option<Vec<String>>,
}

/// Versions sent as a string or, by Tacker's clients, as a JSON number (see
/// [`VnfProductVersion`]).
mod version_text {
    use std::fmt;

    use schemars::{Schema, SchemaGenerator, json_schema};
    use serde::Deserialize;
    use serde::de::{self, Deserializer, Visitor};

    /// A version as a string, or a JSON number read as its JSON text.
    struct Text(String);

    impl<'de> Deserialize<'de> for Text {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Text;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a version string")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                    Ok(Text(v.to_owned()))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
                    Ok(Text(v))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                    Ok(Text(v.to_string()))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                    // serde_json's text of the number: 1.0 stays "1.0".
                    serde_json::Number::from_f64(v)
                        .map(|n| Text(n.to_string()))
                        .ok_or_else(|| E::custom("a version number must be finite"))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// `vnfSoftwareVersion`.
    pub(super) fn one<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Text::deserialize(d).map(|t| t.0)
    }

    /// `vnfdVersions` (`null` is absent, as for the other optional attributes).
    pub(super) fn some_list<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<String>>, D::Error> {
        Option::<Vec<Text>>::deserialize(d)
            .map(|list| list.map(|list| list.into_iter().map(|t| t.0).collect()))
    }

    /// The schema of `vnfSoftwareVersion`.
    pub(super) fn one_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The software version (a JSON number, as Tacker's clients send it, is read as its text).",
            "type": ["string", "number"]
        })
    }

    /// The schema of `vnfdVersions`.
    pub(super) fn list_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "VNFD versions; all when absent (JSON numbers, as Tacker's clients send them, are read as their text).",
            "type": ["array", "null"],
            "items": {"type": ["string", "number"]}
        })
    }
}

/// Authentication scheme towards a notification endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthType {
    /// HTTP Basic authentication.
    Basic,
    /// OAuth 2.0 client credentials grant.
    Oauth2ClientCredentials,
    /// Mutual TLS with client certificates.
    TlsCert,
}

/// `SubscriptionAuthentication` (SOL013): credentials for the callback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscriptionAuthentication {
    /// Schemes to use (at least one).
    #[schemars(length(min = 1))]
    pub auth_type: Vec<AuthType>,
    /// Parameters for `BASIC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_basic: Option<ParamsBasic>,
    /// Parameters for `OAUTH2_CLIENT_CREDENTIALS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_oauth2_client_credentials: Option<ParamsOauth2ClientCredentials>,
}

/// `paramsBasic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamsBasic {
    /// User name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
    /// Password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretString>,
}

/// `paramsOauth2ClientCredentials`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParamsOauth2ClientCredentials {
    /// Client id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Client secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_password: Option<SecretString>,
    /// Token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tackers_number_versions_are_read_as_their_text() {
        let v: VnfProductVersion = serde_json::from_value(serde_json::json!({
            "vnfSoftwareVersion": 1.0, "vnfdVersions": [1.0, 2.1, 3, "4.0-rc1"]
        }))
        .unwrap();
        assert_eq!(v.vnf_software_version, "1.0");
        assert_eq!(
            v.vnfd_versions.as_deref(),
            Some(&["1.0".to_owned(), "2.1".into(), "3".into(), "4.0-rc1".into()][..])
        );
        // Written back as strings, as SOL003 has them.
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            serde_json::json!({"vnfSoftwareVersion": "1.0", "vnfdVersions": ["1.0", "2.1", "3", "4.0-rc1"]})
        );
        let absent: VnfProductVersion = serde_json::from_value(
            serde_json::json!({"vnfSoftwareVersion": "1", "vnfdVersions": null}),
        )
        .unwrap();
        assert_eq!(absent.vnfd_versions, None);
        // Nothing else is loosened: other types, and numbers elsewhere, are still refused.
        for refused in [
            serde_json::json!({"vnfSoftwareVersion": true}),
            serde_json::json!({"vnfSoftwareVersion": ["1.0"]}),
            serde_json::json!({"vnfSoftwareVersion": "1", "vnfdVersions": [null]}),
            serde_json::json!({"vnfSoftwareVersion": "1", "vnfdVersions": 1.0}),
        ] {
            assert!(
                serde_json::from_value::<VnfProductVersion>(refused.clone()).is_err(),
                "{refused}"
            );
        }
        assert!(
            serde_json::from_value::<VnfProduct>(serde_json::json!({"vnfProductName": 1.0}))
                .is_err()
        );
    }
}
