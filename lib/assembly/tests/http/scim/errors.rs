//! Bad input: a clear SCIM error, and nothing changed.

use reqwest::Method;
use serde_json::{Value, json};

use super::{PATCH_OP, Scim, assert_scim_error};

/// `n` distinct work addresses.
fn many_emails(n: usize) -> Value {
    (0..n)
        .map(|i| json!({ "value": format!("user{i:05}@example.org"), "type": "work" }))
        .collect()
}

#[tokio::test]
async fn bad_input_gets_a_clear_scim_error_and_changes_nothing() {
    let s = Scim::start().await;
    let id = s.provision("ann@x.org").await;
    let before = s.snapshot().await;
    let url = |path: &str| format!("{}/api/scim/v2{path}", s.api.base);
    let send = |method: Method, path: &str, content_type: &str, body: Vec<u8>| {
        s.api
            .http
            .request(method, url(path))
            .bearer_auth(&s.token)
            .header("content-type", content_type)
            .body(body)
    };
    let json_type = "application/json";
    let cases: Vec<(reqwest::RequestBuilder, u16, Option<&str>)> = vec![
        (send(Method::POST, "/Users", json_type, b"{\"userName\": ".to_vec()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, vec![0xff, 0xfe]), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, b"[]".to_vec()), 400, Some("invalidSyntax")),
        (
            send(Method::POST, "/Users", json_type, format!("{{\"userName\": \"{}\"}}", "a".repeat(2 << 20)).into_bytes()),
            413,
            None,
        ),
        (send(Method::POST, "/Users", "text/plain", b"{\"userName\": \"x\"}".to_vec()), 415, None),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x", "shoeSize": 44 }).to_string().into_bytes()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x", "name": { "nick": "y" } }).to_string().into_bytes()), 400, Some("invalidSyntax")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "x\r\nSet-Cookie: a=b" }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": 42 }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "name": { "givenName": "x" } }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "ann@x.org" }).to_string().into_bytes()), 409, Some("uniqueness")),
        (send(Method::POST, "/Users", json_type, json!({ "userName": "new@x.org", "active": false }).to_string().into_bytes()), 400, Some("invalidValue")),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "replace", "path": "shoeSize", "value": 1 }] }).to_string().into_bytes()),
            400,
            Some("invalidPath"),
        ),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "replace", "path": "active", "value": "nope" }] }).to_string().into_bytes()),
            400,
            Some("invalidValue"),
        ),
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "remove" }] }).to_string().into_bytes()),
            400,
            Some("noTarget"),
        ),
        (send(Method::PUT, &format!("/Users/{id}"), json_type, json!({ "userName": "" }).to_string().into_bytes()), 400, Some("invalidValue")),
        // Sixteen thousand addresses (661 KiB, under the body limit) once stalled every tenant.
        (
            send(Method::PATCH, &format!("/Users/{id}"), json_type, json!({ "schemas": [PATCH_OP], "Operations": [{ "op": "add", "path": "emails", "value": many_emails(16_000) }] }).to_string().into_bytes()),
            400,
            Some("invalidValue"),
        ),
        (send(Method::PUT, &format!("/Users/{id}"), json_type, json!({ "userName": "ann@x.org", "emails": many_emails(101) }).to_string().into_bytes()), 400, Some("invalidValue")),
        (send(Method::GET, "/Users/usr_x%0D%0ASet-Cookie:%20a=b", json_type, vec![]), 404, None),
        (send(Method::DELETE, "/Users/%0D%0A", json_type, vec![]), 404, None),
        (send(Method::GET, "/Users?filter=userName%20eq%20%22a%22%22%0D%0A", json_type, vec![]), 400, Some("invalidFilter")),
        (send(Method::GET, "/Users?startIndex=one", json_type, vec![]), 400, Some("invalidValue")),
        (send(Method::GET, "/Nope%0D%0A", json_type, vec![]), 404, None),
    ];
    for (req, status, scim_type) in cases {
        let r = s.api.send(req).await;
        assert_scim_error(&r, status, scim_type);
        for (name, value) in &r.headers {
            let value = value.to_str().unwrap_or("");
            assert!(
                !value.contains("Set-Cookie") && !value.contains("a=b") && name != "set-cookie",
                "{name}: {value}"
            );
        }
    }
    assert_eq!(s.snapshot().await, before);
}
