//! OAuth-protected integrations: the authorization server discovery found for one, the
//! service's client there, and a grant (the tokens a connection holds) with its refresh state.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::UserId;

/// An OAuth authorization server, as discovery found it for a protected MCP server (RFC 9728,
/// then RFC 8414 or OpenID discovery): the resource the tokens are for, where the browser and
/// the token requests go, and what the server offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthServer {
    /// The protected resource's canonical URL, sent as `resource` (RFC 8707): the server's URL,
    /// as its metadata names it.
    pub resource: String,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    /// Dynamic Client Registration (RFC 7591), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Token revocation (RFC 7009), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// The scopes asked for at every connect: the 401's, else the resource's, else the
    /// authorization server's.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Whether the server says it sends `iss` back with the code (RFC 9207): then a callback
    /// without one is refused.
    #[serde(default)]
    pub iss_parameter_supported: bool,
    /// Whether the server takes a Client ID Metadata Document's URL as a client id. It decides
    /// how the service gets its client when the integration is added; stored only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_id_metadata_document_supported: bool,
}

impl OAuthServer {
    /// The server, reached as `client`.
    pub fn with_client(self, client: OAuthClient) -> OAuthAccess {
        OAuthAccess {
            server: self,
            client,
        }
    }
}

/// Where and as whom the service is authorized for an OAuth integration: the authorization
/// server and the service's client there. Stored on the integration as one object (the
/// server's fields beside `client`); the client's secret only sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthAccess {
    #[serde(flatten)]
    pub server: OAuthServer,
    pub client: OAuthClient,
}

/// The service's identity at an authorization server, one per organisation and integration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthClient {
    pub client_id: String,
    /// The client's secret sealed for [`crate::seal::oauth_client_context`]; `None` for a
    /// public client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_sealed: Option<String>,
    pub registration: ClientRegistration,
}

/// How the service came by its client id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientRegistration {
    /// An admin entered it: registered by hand at the authorization server.
    PreRegistered,
    /// The id is the URL of the service's Client ID Metadata Document for the integration.
    MetadataDocument,
    /// Dynamic Client Registration (RFC 7591), once, reused by every connect.
    Dynamic,
}

/// Whose a grant is: one member's, acting as them, or the organisation's, used by every
/// member's turns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GrantOwner {
    Member(UserId),
    Organisation,
}

impl GrantOwner {
    /// The owner's name in the sealing context and in keys: the user id, or `org`.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Member(user) => user.as_str(),
            Self::Organisation => "org",
        }
    }
}

/// The tokens of one connection, with what the vault needs to refresh them once however many
/// callers need them at the same moment. Stored sealed as JSON: the store sees an opaque value
/// that changes with every write (the seal's nonce), and swaps it only from the value it was
/// read at.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Grows by one with every refresh: a caller that waited on another's refresh knows the
    /// refresh happened when it moved.
    pub generation: u64,
    /// A refresh in flight, claimed by some process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    pub status: GrantStatus,
    pub connected_by: UserId,
    pub connected_at: Timestamp,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("generation", &self.generation)
            .field("lease", &self.lease)
            .field("status", &self.status)
            .field("connected_by", &self.connected_by)
            .field("connected_at", &self.connected_at)
            .finish_non_exhaustive()
    }
}

/// A claim on the one refresh of a grant's generation: until `until`, other callers wait for
/// the generation to move rather than refresh themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub until: Timestamp,
    pub generation: u64,
}

/// Whether a grant can be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum GrantStatus {
    Active,
    /// The member (or an admin, for the organisation's) must connect again; the tools are not
    /// offered until then.
    NeedsReconnect(ReconnectReason),
}

/// Why a grant needs reconnecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReconnectReason {
    /// The authorization server refused the refresh token (`invalid_grant`): revoked, expired,
    /// or reused.
    RefreshRefused,
    /// A refresh was sent and its result never stored (its process died): the refresh token
    /// may have been rotated, and is never sent twice.
    RefreshInterrupted,
    /// The access token expired and there is no refresh token.
    Expired,
    /// The server refused a freshly refreshed access token.
    TokenRejected,
}

impl ReconnectReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RefreshRefused => "refresh_refused",
            Self::RefreshInterrupted => "refresh_interrupted",
            Self::Expired => "expired",
            Self::TokenRejected => "token_rejected",
        }
    }
}

impl Grant {
    /// Whether the access token is to be refreshed at `now`: it expires within `margin_ms`.
    pub fn due(&self, now: Timestamp, margin_ms: i64) -> bool {
        self.expires_at
            .is_some_and(|at| at.millis() <= now.millis() + margin_ms)
    }

    pub fn is_active(&self) -> bool {
        self.status == GrantStatus::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integration's OAuth settings keep the form they were stored in before the server and
    /// the client were two types: one object, the server's fields beside `client`.
    #[test]
    fn an_integrations_access_is_stored_as_one_object_with_the_client_beside_the_server() {
        let access = OAuthServer {
            resource: "https://wiki.example/mcp".into(),
            issuer: "https://auth.example".into(),
            authorization_endpoint: "https://auth.example/authorize".into(),
            token_endpoint: "https://auth.example/token".into(),
            registration_endpoint: None,
            revocation_endpoint: Some("https://auth.example/revoke".into()),
            scopes: vec!["read".into()],
            iss_parameter_supported: true,
            client_id_metadata_document_supported: false,
        }
        .with_client(OAuthClient {
            client_id: "knowledge".into(),
            secret_sealed: None,
            registration: ClientRegistration::Dynamic,
        });
        let stored = serde_json::to_string(&access).unwrap();
        assert_eq!(
            stored,
            r#"{"resource":"https://wiki.example/mcp","issuer":"https://auth.example","authorizationEndpoint":"https://auth.example/authorize","tokenEndpoint":"https://auth.example/token","revocationEndpoint":"https://auth.example/revoke","scopes":["read"],"issParameterSupported":true,"client":{"clientId":"knowledge","registration":"dynamic"}}"#
        );
        assert_eq!(
            serde_json::from_str::<OAuthAccess>(&stored).unwrap(),
            access
        );
    }
}
