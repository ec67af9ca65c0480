//! OAuth 2 for the service's clients of other servers: the bounded HTTP client every request to
//! an authorization server, an identity provider or their metadata goes through
//! ([`http::BoundedHttp`], under the outbound guard), and the discovery of how an
//! OAuth-protected MCP server is authorized ([`discovery`]).

pub mod discovery;
pub mod http;

pub use discovery::{Challenge, Discovered, DiscoveryError, discover, discover_with};
pub use http::{BODY_LIMIT, BoundedHttp, HttpError};
