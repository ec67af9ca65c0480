//! The token, registration and revocation endpoints of an authorization server that misbehaves
//! or refuses, on loopback: what each answer becomes, that `resource` is always sent, and that a
//! rotated refresh token is handed back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use knowledge_core::domain::OAuthServer;
use knowledge_egress::Egress;
use knowledge_oauth::{
    BoundedHttp, ClientIdentity, HttpError, OAuthError, refresh, register, revoke,
};
use serde_json::{Value, json};

const REDIRECT_URI: &str = "https://app.example.com/api/oauth/callback/org_a/wiki";
const RESOURCE: &str = "https://wiki.example.com/mcp";

/// The forms the fake server received, in order.
type Seen = Arc<Mutex<Vec<Vec<(String, String)>>>>;

/// A fake authorization server whose `/token`, `/revoke` and `/register` answer `answer`;
/// returns what discovery would have found of it, and what it receives.
async fn server(answer: fn() -> Response) -> (OAuthServer, Seen) {
    let seen: Seen = Arc::default();
    async fn record(
        State((seen, answer)): State<(Seen, fn() -> Response)>, body: String,
    ) -> Response {
        let form = form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
        seen.lock().unwrap().push(form);
        answer()
    }
    let app = Router::new()
        .route("/token", post(record))
        .route("/revoke", post(record))
        .route("/register", post(record))
        .with_state((seen.clone(), answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let discovered = OAuthServer {
        resource: RESOURCE.into(),
        issuer: origin.clone(),
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        revocation_endpoint: Some(format!("{origin}/revoke")),
        scopes: vec!["read".into()],
        client_id_metadata_document_supported: false,
        iss_parameter_supported: false,
    };
    (discovered, seen)
}

fn client() -> ClientIdentity {
    ClientIdentity {
        client_id: "client-1".into(),
        client_secret: Some("secret-1".into()),
    }
}

fn http() -> BoundedHttp {
    BoundedHttp::with_timeout(Egress::ANYWHERE, Duration::from_secs(1)).unwrap()
}

fn json_answer(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn a_refresh_sends_the_resource_and_the_secret_in_the_body_and_returns_the_rotated_token() {
    let (found, seen) = server(|| {
        json_answer(
            StatusCode::OK,
            json!({
                "access_token": "access-2", "token_type": "Bearer", "expires_in": 300,
                "refresh_token": "refresh-2", "scope": "read",
            }),
        )
    })
    .await;
    let tokens = refresh(&http(), &found, &client(), "refresh-1", &found.scopes)
        .await
        .unwrap();
    assert_eq!(tokens.access_token, "access-2");
    assert_eq!(tokens.refresh_token.as_deref(), Some("refresh-2"));
    assert_eq!(tokens.expires_in, Some(Duration::from_secs(300)));
    let form = seen.lock().unwrap()[0].clone();
    assert_eq!(field(&form, "grant_type"), Some("refresh_token"));
    assert_eq!(field(&form, "refresh_token"), Some("refresh-1"));
    assert_eq!(field(&form, "resource"), Some(RESOURCE));
    assert_eq!(field(&form, "client_id"), Some("client-1"));
    assert_eq!(field(&form, "client_secret"), Some("secret-1"));
    assert_eq!(field(&form, "scope"), Some("read"));
}

#[tokio::test]
async fn a_refresh_without_a_new_refresh_token_returns_none_for_the_caller_to_keep_its_own() {
    let (found, _) = server(|| {
        json_answer(
            StatusCode::OK,
            json!({ "access_token": "a", "token_type": "bearer" }),
        )
    })
    .await;
    let tokens = refresh(&http(), &found, &client(), "r", &[]).await.unwrap();
    assert_eq!((tokens.refresh_token, tokens.expires_in), (None, None));
}

#[tokio::test]
async fn a_refused_refresh_token_is_an_invalid_grant_and_another_refusal_is_not() {
    let (found, _) = server(|| {
        json_answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "invalid_grant", "error_description": "reused" }),
        )
    })
    .await;
    let e = refresh(&http(), &found, &client(), "r", &[])
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::InvalidGrant(_)), "{e:?}");
    let (found, _) = server(|| {
        json_answer(
            StatusCode::UNAUTHORIZED,
            json!({ "error": "invalid_client" }),
        )
    })
    .await;
    let e = refresh(&http(), &found, &client(), "r", &[])
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::Refused(_)), "{e:?}");
}

#[tokio::test]
async fn a_token_endpoint_that_fails_stalls_or_answers_too_much_is_unreachable() {
    let (found, _) = server(|| StatusCode::INTERNAL_SERVER_ERROR.into_response()).await;
    let e = refresh(&http(), &found, &client(), "r", &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Unreachable(HttpError::ServerError(_))),
        "{e:?}"
    );

    let (found, _) = server(|| "x".repeat(2 * knowledge_oauth::BODY_LIMIT).into_response()).await;
    let e = refresh(&http(), &found, &client(), "r", &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Unreachable(HttpError::TooLarge)),
        "{e:?}"
    );

    // A server that accepts the connection and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stalled = format!("http://{}/token", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = vec![];
        loop {
            open.push(listener.accept().await.unwrap());
        }
    });
    let found = OAuthServer {
        token_endpoint: stalled,
        ..found
    };
    let started = std::time::Instant::now();
    let e = refresh(&http(), &found, &client(), "r", &[])
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Unreachable(HttpError::Transport(_))),
        "{e:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the timeout"
    );
    held.abort();
}

#[tokio::test]
async fn a_revocation_names_the_refresh_token_and_a_server_without_one_is_told() {
    let (found, seen) = server(|| StatusCode::OK.into_response()).await;
    revoke(&http(), &found, &client(), "refresh-9")
        .await
        .unwrap();
    let form = seen.lock().unwrap()[0].clone();
    assert_eq!(field(&form, "token"), Some("refresh-9"));
    assert_eq!(field(&form, "token_type_hint"), Some("refresh_token"));
    assert_eq!(field(&form, "client_id"), Some("client-1"));
    assert_eq!(field(&form, "client_secret"), Some("secret-1"));
    let found = OAuthServer {
        revocation_endpoint: None,
        ..found
    };
    let e = revoke(&http(), &found, &client(), "r").await.unwrap_err();
    assert!(matches!(e, OAuthError::NotOffered("revocation")), "{e:?}");
}

#[tokio::test]
async fn a_registration_refused_or_not_offered_says_so() {
    let (found, _) = server(|| {
        json_answer(
            StatusCode::BAD_REQUEST,
            json!({ "error": "invalid_redirect_uri" }),
        )
    })
    .await;
    let e = register(&http(), &found, REDIRECT_URI, "Knowledge")
        .await
        .unwrap_err();
    assert!(
        matches!(e, OAuthError::Refused(ref text) if text.contains("invalid_redirect_uri")),
        "{e:?}"
    );
    let found = OAuthServer {
        registration_endpoint: None,
        ..found
    };
    let e = register(&http(), &found, REDIRECT_URI, "Knowledge")
        .await
        .unwrap_err();
    assert!(matches!(e, OAuthError::NotOffered("registration")), "{e:?}");
}
