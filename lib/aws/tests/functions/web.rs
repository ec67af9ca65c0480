//! The web function: the app's page and script, under a policy that lets the page send
//! documents' originals to the bucket and nowhere else.

use knowledge_aws::{Parts, functions};
use serde_json::json;
use tower::ServiceExt;

use crate::admin::promote_the_sample_user;
use crate::support::{Deployment, endpoint};

/// An environment without a bucket (the template's) or a region (Lambda's).
fn no_settings(_: &str) -> Option<String> {
    None
}

/// The sources of `directive` in the page's policy.
fn sources(response: &axum::response::Response, directive: &str) -> Vec<String> {
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    let found = policy.split(';').map(str::trim).find_map(|d| {
        let mut words = d.split_whitespace();
        (words.next() == Some(directive)).then(|| words.map(str::to_owned).collect())
    });
    found.unwrap_or_else(|| panic!("no {directive} in {policy}"))
}

/// The scheme, host and port of `url`.
fn origin(url: &str) -> String {
    let url = reqwest::Url::parse(url).unwrap();
    url.origin().ascii_serialization()
}

#[tokio::test]
async fn web_event_gets_the_apps_page_under_its_policy_without_reading_anything() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    // As the function's main serves it: the built-in files, without a cold start.
    let files = Parts::of(functions::WEB).files.unwrap();
    let response = files(&no_settings)
        .oneshot(d.event(functions::WEB))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains(r#"<div id="app">"#));
    assert!(d.counter.take().is_empty());
}

#[tokio::test]
async fn web_function_sends_the_script_in_brotli_or_gzip_as_the_browser_accepts() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let files = Parts::of(functions::WEB).files.unwrap();
    let script = knowledge_web::embedded_assets()
        .find(|name| name.ends_with(".js"))
        .unwrap();
    let fetch = |accept: &'static str| {
        let mut request = d.event(functions::WEB);
        *request.uri_mut() = format!("/assets/{script}").parse().unwrap();
        request
            .headers_mut()
            .insert("accept-encoding", accept.parse().unwrap());
        files(&no_settings).oneshot(request)
    };
    let plain = fetch("identity").await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let raw = axum::body::to_bytes(plain.into_body(), 1 << 22)
        .await
        .unwrap();
    for (accept, coding) in [("gzip, deflate, br, zstd", "br"), ("gzip", "gzip")] {
        let response = fetch(accept).await.unwrap();
        assert_eq!(response.headers()["content-encoding"], coding, "{accept}");
        assert_eq!(response.headers()["vary"], "accept-encoding");
        let sent = axum::body::to_bytes(response.into_body(), 1 << 22)
            .await
            .unwrap();
        assert!(
            sent.len() * 2 < raw.len(),
            "{coding}: {} of {}",
            sent.len(),
            raw.len()
        );
    }
}

#[tokio::test]
async fn web_page_lets_the_browser_send_an_original_to_the_url_the_admin_function_signs() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    promote_the_sample_user(&d).await;
    let (status, created, _) = d
        .send(
            functions::ADMIN,
            "POST",
            "/api/admin/collections",
            json!({"name": "Guides", "access": {"kind": "everyone"}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let path = format!(
        "/api/admin/collections/{}/documents",
        created["id"].as_str().unwrap()
    );
    let body = json!({"name": "travel.md", "bytes": 12});
    let (status, started, _) = d.send(functions::ADMIN, "POST", &path, body).await;
    assert_eq!(status, 201, "{started}");
    let upload = origin(started["upload"]["url"].as_str().unwrap());

    let bucket = d.env.documents_bucket.clone().unwrap();
    let settings = move |name: &str| match name {
        "DOCUMENTS_BUCKET" => Some(bucket.clone()),
        "AWS_REGION" => Some("us-east-1".to_owned()),
        "AWS_ENDPOINT_URL" => Some(endpoint()),
        _ => None,
    };
    let files = Parts::of(functions::WEB).files.unwrap();
    let page = files(&settings)
        .oneshot(d.event(functions::WEB))
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert_eq!(sources(&page, "connect-src"), ["'self'".to_owned(), upload]);
    // Nothing else opens: scripts and forms stay this origin's.
    assert_eq!(sources(&page, "script-src"), ["'self'"]);
    assert_eq!(sources(&page, "form-action"), ["'self'"]);

    // Without a bucket (no documents), the page connects to its own origin alone.
    let bare = files(&no_settings)
        .oneshot(d.event(functions::WEB))
        .await
        .unwrap();
    assert_eq!(sources(&bare, "connect-src"), ["'self'"]);
}

#[tokio::test]
async fn on_aws_the_page_names_the_virtual_hosted_bucket_of_the_region() {
    let settings = |name: &str| match name {
        "DOCUMENTS_BUCKET" => Some("knowledge-docs-acme".to_owned()),
        "AWS_REGION" => Some("eu-west-1".to_owned()),
        _ => None,
    };
    let files = Parts::of(functions::WEB).files.unwrap();
    let request = axum::http::Request::get("/")
        .body(axum::body::Body::empty())
        .unwrap();
    let page = files(&settings).oneshot(request).await.unwrap();
    assert_eq!(
        sources(&page, "connect-src"),
        [
            "'self'",
            "https://knowledge-docs-acme.s3.eu-west-1.amazonaws.com"
        ]
    );
}
