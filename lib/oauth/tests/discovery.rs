//! Discovery against servers on loopback that behave, and that lie: another resource, another
//! issuer, no PKCE, a redirect, an answer too large, an address the deployment refuses.

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use knowledge_egress::Egress;
use knowledge_oauth::{BoundedHttp, Challenge, DiscoveryError, HttpError, discover, discover_with};
use reqwest::Url;
use serde_json::{Value, json};

/// Serves `app` on a free loopback port; returns its origin.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    origin
}

fn json_answer(body: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The authorization server's metadata for `issuer`.
fn server_metadata(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "revocation_endpoint": format!("{issuer}/revoke"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["server:scope"],
        "authorization_response_iss_parameter_supported": true,
    })
}

/// An authorization server at its own origin, serving `metadata` (of its issuer) at RFC 8414's
/// root URL.
async fn authorization_server(metadata: impl Fn(&str) -> Value + Send + 'static) -> String {
    let (listener, origin) = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        (listener, origin)
    };
    let document = metadata(&origin);
    let app = Router::new().route(
        "/.well-known/oauth-authorization-server",
        get(move || {
            let document = document.clone();
            async move { json_answer(document) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    origin
}

/// An MCP server at `/mcp` that answers 401 with `challenge` (when given) and serves `resource`
/// (of its own URL, the authorization server's) at `path`.
async fn mcp_server(
    challenge: Option<&'static str>, path: &'static str,
    resource: impl Fn(&str) -> Value + Send + 'static,
) -> Url {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let document = resource(&format!("{origin}/mcp"));
    let challenge = challenge.map(|c| c.replace("{origin}", &origin));
    let app = Router::new()
        .route(
            "/mcp",
            post(move || {
                let challenge = challenge.clone();
                async move {
                    let mut headers = HeaderMap::new();
                    if let Some(c) = challenge {
                        headers.insert(header::WWW_AUTHENTICATE, c.parse().unwrap());
                    }
                    (StatusCode::UNAUTHORIZED, headers).into_response()
                }
            }),
        )
        .route(
            path,
            get(move || {
                let document = document.clone();
                async move { json_answer(document) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Url::parse(&format!("{origin}/mcp")).unwrap()
}

fn http() -> BoundedHttp {
    BoundedHttp::new(Egress::ANYWHERE).unwrap()
}

#[tokio::test]
async fn a_server_is_discovered_through_its_challenge_and_both_metadata_documents() {
    let issuer = authorization_server(server_metadata).await;
    let server = mcp_server(
        Some(r#"Bearer resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp", scope="read write""#),
        "/.well-known/oauth-protected-resource/mcp",
        move |resource| json!({ "resource": resource, "authorization_servers": [issuer.clone()], "scopes_supported": ["resource:scope"] }),
    )
    .await;
    let found = discover(&http(), &server).await.unwrap();
    assert_eq!(found.resource, server.as_str());
    assert!(found.token_endpoint.ends_with("/token"), "{found:?}");
    assert!(found.authorization_endpoint.ends_with("/authorize"));
    assert!(found.registration_endpoint.unwrap().ends_with("/register"));
    assert!(found.revocation_endpoint.unwrap().ends_with("/revoke"));
    assert_eq!(
        found.scopes,
        ["read", "write"],
        "the challenge's scopes come first"
    );
    assert!(found.iss_parameter_supported);
    assert!(!found.client_id_metadata_document_supported);
}

#[tokio::test]
async fn without_a_challenge_the_root_metadata_is_found_and_its_scopes_are_asked_for() {
    let issuer = authorization_server(server_metadata).await;
    // No header on the 401, no path-aware document: the root one.
    let server = mcp_server(None, "/.well-known/oauth-protected-resource", move |resource| {
        json!({ "resource": resource, "authorization_servers": [issuer.clone()], "scopes_supported": ["resource:scope"] })
    })
    .await;
    let found = discover(&http(), &server).await.unwrap();
    assert_eq!(found.scopes, ["resource:scope"]);
}

#[tokio::test]
async fn resource_metadata_naming_another_resource_is_refused() {
    let issuer = authorization_server(server_metadata).await;
    let server = mcp_server(None, "/.well-known/oauth-protected-resource/mcp", move |_| {
        json!({ "resource": "https://victim.example.com/mcp", "authorization_servers": [issuer.clone()] })
    })
    .await;
    match discover(&http(), &server).await {
        Err(DiscoveryError::ResourceMismatch { found, .. }) => {
            assert_eq!(found, "https://victim.example.com/mcp")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn authorization_server_metadata_naming_another_issuer_is_refused() {
    let issuer = authorization_server(|_| server_metadata("https://evil.example.com")).await;
    let server = mcp_server(
        None,
        "/.well-known/oauth-protected-resource/mcp",
        move |resource| json!({ "resource": resource, "authorization_servers": [issuer.clone()] }),
    )
    .await;
    match discover(&http(), &server).await {
        Err(DiscoveryError::IssuerMismatch { found, .. }) => {
            assert_eq!(found, "https://evil.example.com")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_server_without_pkce_s256_or_the_code_flow_is_refused() {
    for (field, value, missing) in [
        (
            "code_challenge_methods_supported",
            json!(["plain"]),
            "PKCE with S256",
        ),
        // Absent: the server offers no PKCE.
        (
            "code_challenge_methods_supported",
            Value::Null,
            "PKCE with S256",
        ),
        (
            "response_types_supported",
            json!(["token"]),
            "the authorization code",
        ),
    ] {
        let issuer = authorization_server(move |issuer| {
            let mut metadata = server_metadata(issuer);
            match &value {
                Value::Null => drop(metadata.as_object_mut().unwrap().remove(field)),
                value => metadata[field] = value.clone(),
            }
            metadata
        })
        .await;
        let server = mcp_server(None, "/.well-known/oauth-protected-resource/mcp", move |resource| {
            json!({ "resource": resource, "authorization_servers": [issuer.clone()] })
        })
        .await;
        match discover(&http(), &server).await {
            Err(DiscoveryError::Unsupported(what)) => assert_eq!(what, missing),
            other => panic!("{field}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn endpoints_that_are_not_http_urls_are_refused() {
    let issuer = authorization_server(|issuer| {
        let mut metadata = server_metadata(issuer);
        metadata["token_endpoint"] = json!("file:///etc/passwd");
        metadata
    })
    .await;
    let server = mcp_server(
        None,
        "/.well-known/oauth-protected-resource/mcp",
        move |resource| json!({ "resource": resource, "authorization_servers": [issuer.clone()] }),
    )
    .await;
    let e = discover(&http(), &server).await.unwrap_err();
    assert!(matches!(e, DiscoveryError::Malformed { .. }), "{e:?}");
}

#[tokio::test]
async fn a_server_that_answers_without_a_token_is_not_protected() {
    let origin = serve(Router::new().route("/mcp", post(|| async { "{}" }))).await;
    let server = Url::parse(&format!("{origin}/mcp")).unwrap();
    let e = discover(&http(), &server).await.unwrap_err();
    assert!(matches!(e, DiscoveryError::NotProtected), "{e:?}");
}

#[tokio::test]
async fn a_server_that_answers_with_an_endless_stream_without_a_token_is_not_protected_at_once() {
    let stream = || async {
        let chunks = futures_util::stream::repeat_with(|| {
            Ok::<_, std::convert::Infallible>(axum::body::Bytes::from_static(b"data: {}\n\n"))
        })
        .then(|chunk| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            chunk
        });
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            axum::body::Body::from_stream(chunks),
        )
    };
    let origin = serve(Router::new().route("/mcp", post(stream))).await;
    let server = Url::parse(&format!("{origin}/mcp")).unwrap();
    let started = std::time::Instant::now();
    let e = discover(&http(), &server).await.unwrap_err();
    assert!(matches!(e, DiscoveryError::NotProtected), "{e:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let origin = serve(Router::new().route(
        "/.well-known/oauth-protected-resource/mcp",
        get(|| async {
            (
                StatusCode::FOUND,
                [(header::LOCATION, "http://169.254.169.254/latest/meta-data")],
            )
        }),
    ))
    .await;
    let server = Url::parse(&format!("{origin}/mcp")).unwrap();
    let e = discover_with(&http(), &server, None).await.unwrap_err();
    match e {
        DiscoveryError::Malformed { reason, .. } => assert!(reason.contains("302"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_metadata_document_over_a_mebibyte_is_refused_unread() {
    let origin = serve(Router::new().route(
        "/.well-known/oauth-protected-resource/mcp",
        get(|| async { "x".repeat(2 * knowledge_oauth::BODY_LIMIT) }),
    ))
    .await;
    let server = Url::parse(&format!("{origin}/mcp")).unwrap();
    match discover_with(&http(), &server, None).await {
        Err(DiscoveryError::Unreachable {
            source: HttpError::TooLarge,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_challenge_naming_a_private_address_is_refused_under_the_guard() {
    let challenge = Challenge {
        resource_metadata: Some("http://169.254.169.254/latest/meta-data".into()),
        ..Challenge::default()
    };
    let http = BoundedHttp::new(Egress::PUBLIC_ONLY).unwrap();
    let server = Url::parse("https://mcp.example.com/mcp").unwrap();
    match discover_with(&http, &server, Some(&challenge)).await {
        Err(DiscoveryError::Refused { url, .. }) => assert!(url.contains("169.254.169.254")),
        other => panic!("{other:?}"),
    }
}
