//! The OpenAPI document as the service serves it, and the routes it lists as the service
//! answers them.

use reqwest::Method;
use serde_json::Value;

use crate::support::Api;

#[tokio::test]
async fn the_service_serves_the_committed_document() {
    let api = Api::start().await;
    let resp = api
        .execute(api.http.get(format!("{}/api/openapi.json", api.base)))
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let served = resp.text().await.unwrap();
    let committed = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json"),
    )
    .unwrap();
    assert_eq!(served, committed);
}

/// `path` with each `{parameter}` replaced by a value of the right form.
fn filled(path: &str) -> String {
    path.replace("{id}", "usr_0123456789abcdef0123456789abcdef")
        .replace("{org}", "org_default")
        .replace("{name}", "wiki")
        .replace("{file}", "wiki.json")
}

#[tokio::test]
async fn every_documented_operation_is_routed_to_its_handler_not_to_the_unknown_route() {
    let api = Api::start().await;
    let doc: Value = api.get("/api/openapi.json").await.body;
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 10, "{}", paths.len());
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // Without credentials: a routed request meets its guard (401) or, for the
            // document, single sign-on and the OAuth callback (which ask for their query),
            // and the client metadata (of no such integration, 404), its handler; an unrouted
            // one would be 404 or 405.
            let reply = api
                .send(
                    api.http
                        .request(method.clone(), format!("{}{}", api.base, filled(path))),
                )
                .await;
            let expected = match path.as_str() {
                "/api/openapi.json" => 200,
                "/api/auth/login" | "/api/auth/callback" | "/api/auth/callback/{org}" => 400,
                "/api/oauth/callback/{org}/{name}" => 400,
                "/api/oauth/clients/{org}/{file}" => 404,
                _ => 401,
            };
            assert_eq!(reply.status, expected, "{method} {path}: {}", reply.body);
        }
    }
}

#[test]
fn a_path_matches_its_template_segment_by_segment() {
    use knowledge_test_support::documented::matches;
    assert!(matches(
        "/api/admin/members/{id}",
        "/api/admin/members/usr_1"
    ));
    assert!(!matches("/api/admin/members/{id}", "/api/admin/members/"));
    assert!(!matches(
        "/api/admin/members/{id}",
        "/api/admin/members/usr_1/role"
    ));
    assert!(matches(
        "/api/integrations/{name}/connect",
        "/api/integrations/wiki/connect"
    ));
}

#[test]
fn an_answer_the_document_does_not_list_for_its_operation_fails_the_test_that_meets_it() {
    use knowledge_test_support::documented::check;
    check("POST", "/api/integrations/wiki/connect", 409);
    check("GET", "/no/such/route", 418);
    let unlisted =
        std::panic::catch_unwind(|| check("POST", "/api/integrations/wiki/connect", 418));
    assert!(unlisted.is_err());
}
