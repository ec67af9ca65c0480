//! The web function: the app's page and script.

use knowledge_aws::{Parts, functions};
use tower::ServiceExt;

use crate::support::Deployment;

#[tokio::test]
async fn web_event_gets_the_apps_page_under_its_policy_without_reading_anything() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    // As the function's main serves it: the built-in files, without a cold start.
    let files = Parts::of(functions::WEB).files.unwrap();
    let response = files().oneshot(d.event(functions::WEB)).await.unwrap();
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
        files().oneshot(request)
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
