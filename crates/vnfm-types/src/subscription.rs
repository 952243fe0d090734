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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VnfProductVersion {
    /// The software version.
    pub vnf_software_version: String,
    /// VNFD versions; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnfd_versions: Option<Vec<String>>,
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
