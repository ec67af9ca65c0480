//! Discovery of how an OAuth-protected MCP server is authorized (the MCP authorization
//! specification, revision 2025-06-18 and later): the protected resource's metadata (RFC 9728),
//! named by the `WWW-Authenticate` of the server's 401 or found at its well-known URLs, then its
//! authorization server's (RFC 8414, falling back to OpenID discovery). Everything is fetched
//! through [`BoundedHttp`] (the outbound guard, no redirects, bounded answers), and what a
//! hostile server could use to redirect a connection elsewhere is refused: resource metadata
//! that names another resource (RFC 9728 §3.3), authorization-server metadata that names
//! another issuer (RFC 8414 §3.3), an authorization server or endpoints that are not `https`
//! (plain `http` only on loopback, for a server on the same machine), or a server that offers
//! no authorization code with PKCE S256. No endpoint is ever guessed.

use knowledge_core::domain::OAuthServer;
use knowledge_core::ports::DestinationRefused;
use reqwest::Url;
use serde::Deserialize;

use crate::http::{BoundedHttp, HttpError};

/// Where the protected resource's metadata lives, relative to the origin (RFC 9728 §3).
const RESOURCE_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414's well-known path of an authorization server's metadata.
const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
/// OpenID Connect Discovery's.
const OPENID_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// What the server's 401 said in its `WWW-Authenticate: Bearer` (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the protected resource's metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the server asks for, space-separated.
    pub scope: Option<String>,
    /// The error code, such as `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge of a `WWW-Authenticate` value, if it has one. Parameters are
    /// `name=value` or `name="quoted value"` (with `\` escapes), separated by commas; unknown
    /// ones are skipped, as are other schemes' challenges before it.
    pub fn parse(header: &str) -> Option<Self> {
        let start = find_scheme(header, "bearer")?;
        let mut rest = header[start + "bearer".len()..].trim_start();
        let mut challenge = Self::default();
        while let Some((name, value, after)) = auth_param(rest) {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
            rest = after;
        }
        Some(challenge)
    }
}

/// Where the scheme `scheme` (lower case) starts in `header`, as a whole word.
fn find_scheme(header: &str, scheme: &str) -> Option<usize> {
    let lower = header.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find(scheme).map(|i| i + from) {
        let before = lower[..at].trim_end();
        let after = lower[at + scheme.len()..].chars().next();
        let starts = before.is_empty() || before.ends_with(',');
        if starts && after.is_none_or(|c| c == ' ') {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

/// The next `name=value` of `input`, and what follows it; `None` at the end or at the next
/// challenge (a token with no `=`).
fn auth_param(input: &str) -> Option<(String, String, &str)> {
    let input = input.trim_start_matches([' ', ',']);
    let eq = input.find('=')?;
    let name = input[..eq].trim();
    if name.is_empty() || name.contains([' ', ',', '"']) {
        return None;
    }
    let rest = input[eq + 1..].trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                '"' => return Some((name.to_owned(), value, &quoted[i + 1..])),
                c => value.push(c),
            }
        }
        None
    } else {
        let end = rest.find(',').unwrap_or(rest.len());
        Some((name.to_owned(), rest[..end].trim().to_owned(), &rest[end..]))
    }
}

/// Why discovery failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// A URL on the way is one the deployment never connects to.
    #[error("the address of {url} is refused")]
    Refused {
        url: String,
        #[source]
        source: HttpError,
    },
    /// A server on the way did not answer, or answered 5xx.
    #[error("{url} could not be reached")]
    Unreachable {
        url: String,
        #[source]
        source: HttpError,
    },
    /// The server answered without asking for authorization: it needs none.
    #[error("the server answers without authorization")]
    NotProtected,
    /// No metadata was found where it must be.
    #[error("no {0} metadata was found")]
    NoMetadata(&'static str),
    /// A metadata document is not what its specification says.
    #[error("{url} is not valid {what} metadata: {reason}")]
    Malformed {
        url: String,
        what: &'static str,
        reason: String,
    },
    /// The resource metadata is another resource's (RFC 9728 §3.3).
    #[error("the resource metadata names {found}, not {expected}")]
    ResourceMismatch { expected: String, found: String },
    /// The authorization-server metadata is another issuer's (RFC 8414 §3.3).
    #[error("the authorization server's metadata names issuer {found}, not {expected}")]
    IssuerMismatch { expected: String, found: String },
    /// The authorization server offers no authorization code with PKCE S256.
    #[error("the authorization server does not offer {0}")]
    Unsupported(&'static str),
}

impl DiscoveryError {
    /// A failed fetch of `url`: `Refused` when the guard refused its address, before the
    /// request or when the resolver dropped every address, `Unreachable` otherwise.
    fn fetch(url: &Url, source: HttpError) -> Self {
        let url = url.to_string();
        match DestinationRefused::find(&source) {
            Some(_) => Self::Refused { url, source },
            None => Self::Unreachable { url, source },
        }
    }
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    revocation_endpoint: Option<String>,
    #[serde(default)]
    response_types_supported: Vec<String>,
    #[serde(default)]
    code_challenge_methods_supported: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    #[serde(default)]
    client_id_metadata_document_supported: bool,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

/// Discovers how `server` (an MCP endpoint) is authorized: asks it without a token for its
/// challenge, reads the resource metadata the challenge names (else at the path-aware, then the
/// root well-known URL), then the metadata of the first authorization server it lists.
/// Errors: [`DiscoveryError`]; `NotProtected` when the server answers without a token.
pub async fn discover(http: &BoundedHttp, server: &Url) -> Result<OAuthServer, DiscoveryError> {
    let challenge = probe(http, server).await?;
    discover_with(http, server, challenge.as_ref()).await
}

/// The same, with the challenge of a 401 the caller already has (from a call with a token that
/// stopped working), so no probe is sent.
pub async fn discover_with(
    http: &BoundedHttp, server: &Url, challenge: Option<&Challenge>,
) -> Result<OAuthServer, DiscoveryError> {
    let named = challenge.and_then(|c| c.resource_metadata.as_deref());
    let candidates = match named {
        Some(url) => vec![parse_url(url, "resource")?],
        None => resource_metadata_urls(server),
    };
    let (url, resource) = first_found::<ResourceMetadata>(http, &candidates, "resource")
        .await?
        .ok_or(DiscoveryError::NoMetadata("protected resource"))?;
    if !same_resource(&resource.resource, server) {
        return Err(DiscoveryError::ResourceMismatch {
            expected: server.to_string(),
            found: resource.resource,
        });
    }
    let Some(issuer) = resource.authorization_servers.first() else {
        return Err(DiscoveryError::Malformed {
            url: url.to_string(),
            what: "resource",
            reason: "it names no authorization server".into(),
        });
    };
    let issuer_url = secure_url(issuer, "resource")?;
    let (url, server_metadata) =
        first_found::<ServerMetadata>(http, &server_metadata_urls(&issuer_url), "server")
            .await?
            .ok_or(DiscoveryError::NoMetadata("authorization server"))?;
    if !same_issuer(&server_metadata.issuer, &issuer_url) {
        return Err(DiscoveryError::IssuerMismatch {
            expected: issuer.clone(),
            found: server_metadata.issuer,
        });
    }
    let ServerMetadata {
        issuer,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        revocation_endpoint,
        response_types_supported,
        code_challenge_methods_supported,
        scopes_supported,
        client_id_metadata_document_supported,
        authorization_response_iss_parameter_supported,
    } = server_metadata;
    if !response_types_supported.iter().any(|t| t == "code") {
        return Err(DiscoveryError::Unsupported("the authorization code"));
    }
    // The MCP specification: without the field the server offers no PKCE, and a client must
    // not go on.
    if !code_challenge_methods_supported.iter().any(|m| m == "S256") {
        return Err(DiscoveryError::Unsupported("PKCE with S256"));
    }
    for endpoint in [Some(&authorization_endpoint), Some(&token_endpoint)]
        .into_iter()
        .chain([registration_endpoint.as_ref(), revocation_endpoint.as_ref()])
        .flatten()
    {
        secure_url(endpoint, "server").map_err(|_| DiscoveryError::Malformed {
            url: url.to_string(),
            what: "server",
            reason: format!("{endpoint} is not an https URL"),
        })?;
    }
    let from_challenge = challenge
        .and_then(|c| c.scope.as_deref())
        .map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>());
    let scopes = from_challenge
        .filter(|s| !s.is_empty())
        .or_else(|| Some(resource.scopes_supported).filter(|s| !s.is_empty()))
        .unwrap_or(scopes_supported);
    // The server's own URL, which the metadata was checked to name: the canonical resource
    // RFC 8707 and strict servers expect, never a variant the metadata spelled.
    let mut canonical = server.clone();
    canonical.set_fragment(None);
    Ok(OAuthServer {
        resource: canonical.to_string(),
        issuer,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        revocation_endpoint,
        scopes,
        client_id_metadata_document_supported,
        iss_parameter_supported: authorization_response_iss_parameter_supported,
    })
}

/// Sends `server` an MCP `initialize` without a token. Its 401's Bearer challenge when it has
/// one; `None` for a 401 without one or another refusal (discovery then looks at the
/// well-known URLs). Errors: the server answers 2xx (`NotProtected`), or cannot be reached.
async fn probe(http: &BoundedHttp, server: &Url) -> Result<Option<Challenge>, DiscoveryError> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "knowledge", "version": env!("CARGO_PKG_VERSION") },
        },
    });
    let request = oauth2::http::Request::post(server.as_str())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string().into_bytes())
        .expect("a request to a parsed URL builds");
    // Only the head: a server that needs no token may answer with a stream that never ends.
    let (status, headers) =
        (http.head_of(request).await).map_err(|e| DiscoveryError::fetch(server, e))?;
    if status.is_success() {
        return Err(DiscoveryError::NotProtected);
    }
    if status.is_server_error() {
        let source = HttpError::ServerError(status);
        return Err(DiscoveryError::fetch(server, source));
    }
    let challenges = headers.get_all("www-authenticate");
    Ok(challenges
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(Challenge::parse))
}

/// GETs each of `urls` in turn; the first that answers 200 with a document of type `T`, with
/// its URL. A 4xx moves on to the next; a malformed document, a refused address or a server
/// that cannot be reached ends the search with that error. `Ok(None)` when none is found.
async fn first_found<T: for<'de> Deserialize<'de>>(
    http: &BoundedHttp, urls: &[Url], what: &'static str,
) -> Result<Option<(Url, T)>, DiscoveryError> {
    for url in urls {
        let request = oauth2::http::Request::get(url.as_str())
            .header("accept", "application/json")
            .body(Vec::new())
            .expect("a request to a parsed URL builds");
        let answer = (http.send(request).await).map_err(|e| DiscoveryError::fetch(url, e))?;
        if answer.status().is_client_error() {
            continue;
        }
        if answer.status() != 200 {
            return Err(DiscoveryError::Malformed {
                url: url.to_string(),
                what,
                reason: format!("it answered {}", answer.status()),
            });
        }
        let document =
            serde_json::from_slice(answer.body()).map_err(|e| DiscoveryError::Malformed {
                url: url.to_string(),
                what,
                reason: e.to_string(),
            })?;
        return Ok(Some((url.clone(), document)));
    }
    Ok(None)
}

/// `text` as an `http` or `https` URL. Errors: `Malformed`, naming the document it came from.
fn parse_url(text: &str, what: &'static str) -> Result<Url, DiscoveryError> {
    match Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err(DiscoveryError::Malformed {
            url: text.to_owned(),
            what,
            reason: "not an http(s) URL".into(),
        }),
    }
}

/// `text` as an `https` URL, or `http` on loopback (a server on the same machine): what an
/// authorization server and its endpoints must be, since codes, verifiers, client secrets and
/// tokens go there. Errors: `Malformed`, naming the document it came from.
fn secure_url(text: &str, what: &'static str) -> Result<Url, DiscoveryError> {
    let url = parse_url(text, what)?;
    let loopback = match url.host() {
        Some(oauth2::url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(oauth2::url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(oauth2::url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() == "https" || loopback {
        true => Ok(url),
        false => Err(DiscoveryError::Malformed {
            url: text.to_owned(),
            what,
            reason: "not an https URL".into(),
        }),
    }
}

/// The path of `url` without a trailing `/` (so the root is empty).
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// RFC 9728 §3.1: the well-known path inserted before the resource's path, then at the root.
fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let path = trimmed_path(server);
    let mut urls = vec![];
    if !path.is_empty() {
        urls.extend(well_known(server, RESOURCE_WELL_KNOWN, path));
    }
    urls.extend(well_known(server, RESOURCE_WELL_KNOWN, ""));
    urls
}

/// RFC 8414 §3.1 with its path inserted, then OpenID discovery inserted and appended (as the
/// MCP specification lists them); for an issuer without a path, the two at the root.
fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = trimmed_path(issuer);
    let mut urls = vec![];
    urls.extend(well_known(issuer, OAUTH_WELL_KNOWN, path));
    urls.extend(well_known(issuer, OPENID_WELL_KNOWN, path));
    if !path.is_empty() {
        urls.extend(well_known(
            issuer,
            &format!("{path}{OPENID_WELL_KNOWN}"),
            "",
        ));
    }
    urls
}

/// `base`'s origin with the path `prefix` followed by `path`, without query or fragment.
fn well_known(base: &Url, prefix: &str, path: &str) -> Option<Url> {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&format!("{prefix}{path}"));
    Some(url)
}

/// Whether `named` (the resource metadata's `resource`) is `server`: the same URL, but for a
/// trailing `/` and a fragment.
fn same_resource(named: &str, server: &Url) -> bool {
    Url::parse(named).is_ok_and(|named| same_url(&named, server))
}

/// Whether `named` (the metadata's `issuer`) is the issuer it was fetched for, but for a
/// trailing `/`.
fn same_issuer(named: &str, issuer: &Url) -> bool {
    Url::parse(named).is_ok_and(|named| same_url(&named, issuer))
}

fn same_url(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.username() == b.username()
        && a.password() == b.password()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
        && trimmed_path(a) == trimmed_path(b)
        && a.query() == b.query()
}

#[cfg(test)]
mod tests;
