//! The guard every outbound request to an address that an organisation admin or a provider
//! names goes through (SSO discovery, keys and tokens; MCP servers; later OAuth metadata,
//! token and revocation endpoints). An [`Egress`] that refuses private destinations builds
//! HTTP clients that resolve each host once, drop every address in a refused range
//! ([`ranges`]) and connect only to the addresses that are left, so DNS rebinding has no window
//! between the check and the connection; they follow no redirects and use no proxy. A URL
//! whose host is an IP address is never resolved, so [`Egress::check_url`] judges it before
//! the request: [`Egress::request`] does both.

pub mod ranges;
mod resolve;

use std::net::IpAddr;
use std::sync::Arc;

use knowledge_core::ports::DestinationRefused;
use reqwest::Url;
use reqwest::redirect::Policy;

pub use crate::ranges::refused_range;

/// The setting that lets a deployment reach private destinations: `true` by default for the
/// local service (people run MCP servers and providers on their own machine), `false` on AWS.
pub const ALLOW_PRIVATE_ENV: &str = "KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS";

/// Where outbound requests may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Egress {
    allow_private: bool,
}

/// Public destinations only: secure unless a deployment says otherwise.
impl Default for Egress {
    fn default() -> Self {
        Self::PUBLIC_ONLY
    }
}

impl Egress {
    /// Any destination, private ones included: the local service's default.
    pub const ANYWHERE: Self = Self {
        allow_private: true,
    };
    /// Public destinations only: the AWS default.
    pub const PUBLIC_ONLY: Self = Self {
        allow_private: false,
    };

    pub const fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }

    pub const fn allows_private(self) -> bool {
        self.allow_private
    }

    /// The setting's value, `true` or `false` (any case); `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Self::ANYWHERE),
            "false" => Some(Self::PUBLIC_ONLY),
            _ => None,
        }
    }

    /// A client builder under this policy: no redirects, no proxy, and where private
    /// destinations are refused, the resolver that drops them. The caller adds its timeouts.
    pub fn client_builder(self) -> reqwest::ClientBuilder {
        let builder = reqwest::Client::builder()
            .redirect(Policy::none())
            .no_proxy();
        match self.allow_private {
            true => builder,
            false => builder.dns_resolver(Arc::new(resolve::Guarded)),
        }
    }

    /// Judges a URL whose host is an IP address, which no resolver sees. A host name is judged
    /// when it is resolved, at connection time. Errors: the refusal, logged here.
    pub fn check_url(self, url: &Url) -> Result<(), DestinationRefused> {
        if self.allow_private {
            return Ok(());
        }
        // The URL parser writes an IP host in its canonical form (`http://0x7f.1/` is
        // 127.0.0.1), and IPv6 in brackets.
        let host = url.host_str().unwrap_or_default();
        let Ok(ip) = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        else {
            return Ok(());
        };
        match refused_range(ip) {
            None => Ok(()),
            Some(rule) => Err(refused(&ip.to_string(), &ip.to_string(), rule)),
        }
    }

    /// Judges `url` as a connection would, host names resolved: for a client whose errors do
    /// not keep their causes (rmcp's), so that a refusal can still be told as one. The
    /// resolver of [`Egress::client_builder`] judges the addresses actually connected to
    /// again: this early answer is for the message, not the guarantee. A name that does not
    /// resolve passes (the connection fails on its own). Errors: the refusal.
    pub async fn check_resolved(self, url: &Url) -> Result<(), DestinationRefused> {
        self.check_url(url)?;
        match (self.allow_private, url.host_str()) {
            (false, Some(host)) if !host.starts_with('[') => resolve::judge(host).await,
            _ => Ok(()),
        }
    }

    /// A request to `url` on `client` (built by [`Egress::client_builder`]), once `url` passes
    /// [`Egress::check_url`]. Errors: the refusal.
    pub fn request(
        self, client: &reqwest::Client, method: reqwest::Method, url: Url,
    ) -> Result<reqwest::RequestBuilder, DestinationRefused> {
        self.check_url(&url)?;
        Ok(client.request(method, url))
    }
}

/// The refusal of `host` at `address`, logged.
pub(crate) fn refused(host: &str, address: &str, rule: &'static str) -> DestinationRefused {
    let refusal = DestinationRefused {
        host: host.to_owned(),
        address: address.to_owned(),
        rule,
    };
    tracing::warn!(%refusal, "outbound request refused");
    refusal
}
