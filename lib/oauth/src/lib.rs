//! OAuth 2 for the service's clients of other servers: the bounded HTTP client every request to
//! an authorization server, an identity provider or their metadata goes through
//! ([`http::BoundedHttp`], under the outbound guard), the discovery of how an OAuth-protected
//! MCP server is authorized ([`discovery`]), and the requests of the authorization code flow to
//! the server discovery found ([`client`]).

pub mod client;
pub mod discovery;
pub mod endpoint;
pub mod http;

pub use client::{
    Authorization, ClientIdentity, OAuthError, Tokens, authorization, exchange_code, refresh,
    register, revoke,
};
pub use discovery::{Challenge, DiscoveryError, discover, discover_with};
pub use endpoint::{HttpAuthorizationServers, identity, issued};
pub use http::{BODY_LIMIT, BoundedHttp, HttpError};
