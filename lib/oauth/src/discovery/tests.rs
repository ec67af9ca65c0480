//! Reading challenges and building the well-known URLs, without a network.

use super::*;

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn a_bearer_challenge_gives_its_resource_metadata_scope_and_error() {
    let c = Challenge::parse(
        r#"Bearer error="invalid_token", error_description="Missing \"Authorization\" header", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp", scope="mcp:tools files:read""#,
    )
    .unwrap();
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(c.scope.as_deref(), Some("mcp:tools files:read"));
    assert_eq!(c.error.as_deref(), Some("invalid_token"));
}

#[test]
fn the_bearer_challenge_is_found_after_another_scheme_and_in_any_case() {
    let c = Challenge::parse(r#"Basic realm="x", bearer error=insufficient_scope, scope=write"#)
        .unwrap();
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("write"));
    assert_eq!(c.resource_metadata, None);
}

#[test]
fn a_header_without_a_bearer_challenge_gives_none() {
    assert_eq!(Challenge::parse(r#"Basic realm="Bearer""#), None);
    assert_eq!(Challenge::parse("Bearerish realm=x"), None);
    assert_eq!(Challenge::parse(""), None);
    assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
}

#[test]
fn the_resource_metadata_is_looked_for_path_aware_then_at_the_root() {
    let urls = resource_metadata_urls(&url("https://mcp.example.com/v1/mcp?x=1"));
    let urls: Vec<String> = urls.iter().map(Url::to_string).collect();
    assert_eq!(
        urls,
        [
            "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
        ]
    );
    let root = resource_metadata_urls(&url("https://mcp.example.com/"));
    assert_eq!(
        root.iter().map(Url::to_string).collect::<Vec<_>>(),
        ["https://mcp.example.com/.well-known/oauth-protected-resource"]
    );
}

#[test]
fn an_issuer_with_a_path_is_looked_up_three_ways_and_one_without_two() {
    let urls = server_metadata_urls(&url("https://auth.example.com/tenant1"));
    assert_eq!(
        urls.iter().map(Url::to_string).collect::<Vec<_>>(),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
    let urls = server_metadata_urls(&url("http://localhost:3001/"));
    assert_eq!(
        urls.iter().map(Url::to_string).collect::<Vec<_>>(),
        [
            "http://localhost:3001/.well-known/oauth-authorization-server",
            "http://localhost:3001/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn urls_are_the_same_but_for_a_trailing_slash_and_never_across_hosts_ports_or_paths() {
    let server = url("http://localhost:3000/mcp");
    assert!(same_resource("http://localhost:3000/mcp/", &server));
    assert!(same_resource("http://localhost:3000/mcp#top", &server));
    assert!(!same_resource("http://localhost:3000/mcp/other", &server));
    assert!(!same_resource("http://localhost:3000/", &server));
    assert!(!same_resource("http://localhost:3001/mcp", &server));
    assert!(!same_resource("https://localhost:3000/mcp", &server));
    assert!(!same_resource("not a url", &server));
    let tenant = url("https://auth.example.com/tenant1");
    assert!(same_issuer("https://auth.example.com/tenant1/", &tenant));
    assert!(!same_issuer("https://auth.example.com/tenant2", &tenant));
    assert!(!same_resource("http://someone@localhost:3000/mcp", &server));
    assert!(!same_issuer(
        "http://evil.example/",
        &url("http://localhost:3001")
    ));
}

#[test]
fn an_authorization_server_must_be_https_but_on_loopback() {
    assert!(secure_url("https://auth.example.com/token", "server").is_ok());
    assert!(secure_url("http://127.0.0.1:3001/token", "server").is_ok());
    assert!(secure_url("http://localhost:3001/token", "server").is_ok());
    assert!(secure_url("http://[::1]:3001/token", "server").is_ok());
    assert!(secure_url("http://auth.example.com/token", "server").is_err());
    assert!(secure_url("http://10.0.0.1/token", "server").is_err());
    assert!(secure_url("ftp://auth.example.com/token", "server").is_err());
}
