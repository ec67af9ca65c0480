//! Single sign-on and SCIM on the wire: the organisation's configuration, its test and switch,
//! and the SCIM token. The SSO client secret is written, never read back; the SCIM token is
//! shown once, when made.

use knowledge_core::admin::ScimStatus;
use knowledge_core::domain::SsoConfig;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The organisation's single sign-on; the client secret is never shown.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsoView {
    pub configured: bool,
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    /// Whether a client secret is stored (it is write-only).
    pub client_secret_set: bool,
    pub user_name_claim: Option<String>,
    pub email_domains: Vec<String>,
    pub enabled: bool,
    pub just_in_time: bool,
    pub updated_at: Option<String>,
    /// The redirect URI to register at the provider.
    pub callback_url: String,
}

impl SsoView {
    pub fn new(config: Option<&SsoConfig>, callback_url: String) -> Self {
        Self {
            configured: config.is_some(),
            issuer: config.map(|c| c.issuer.clone()),
            client_id: config.map(|c| c.client_id.clone()),
            client_secret_set: config.is_some(),
            user_name_claim: config.map(|c| c.user_name_claim.clone()),
            email_domains: config.map(|c| c.email_domains.clone()).unwrap_or_default(),
            enabled: config.is_some_and(|c| c.enabled),
            just_in_time: config.is_some_and(|c| c.just_in_time),
            updated_at: config.map(|c| c.updated_at.to_iso8601()),
            callback_url,
        }
    }
}

/// `PUT /sso`: the whole configuration. `clientSecret` may be left out to keep the stored one
/// (the issuer and client id unchanged); `enabled` left out keeps the current state.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SsoRequest {
    #[schema(max_length = 2048)]
    pub issuer: String,
    #[schema(max_length = 1024)]
    pub client_id: String,
    #[schema(max_length = 1024)]
    pub client_secret: Option<String>,
    pub user_name_claim: Option<String>,
    #[serde(default)]
    pub email_domains: Vec<String>,
    #[serde(default)]
    pub just_in_time: bool,
    pub enabled: Option<bool>,
}

/// `POST /sso/test`: the issuer to fetch the discovery document of.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SsoTestRequest {
    #[schema(max_length = 2048)]
    pub issuer: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SsoTested {
    pub ok: bool,
    pub issuer: String,
}

/// `PUT /sso/enabled`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SsoEnabledRequest {
    pub enabled: bool,
}

/// Whether a SCIM token exists, since when, and what to give the identity provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimView {
    pub token_exists: bool,
    pub created_at: Option<String>,
    /// The connector base URL the identity provider is given.
    pub base_url: String,
    /// Whether SCIM answers: the Business plan with single sign-on switched on.
    pub available: bool,
}

impl ScimView {
    pub fn new(s: &ScimStatus, base_url: String) -> Self {
        Self {
            token_exists: s.token_exists,
            created_at: s.created_at.map(|t| t.to_iso8601()),
            base_url,
            available: s.available,
        }
    }
}

/// A new SCIM token: shown this once, never readable again.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimToken {
    pub token: String,
    pub created_at: String,
    pub base_url: String,
}
